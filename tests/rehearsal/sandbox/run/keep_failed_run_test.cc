// What the whole-system and kubeadm tests keep of a sandbox run that failed (handoffctl_sandbox.h
// KeepFailedRun): the evidence copied out of the directory that goes with the test, and the part
// of it a CI log shows.
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/rehearsal/sandbox/run/handoffctl_sandbox.h"

namespace handoff::sandbox::testing {
namespace {

namespace fs = std::filesystem;
using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;

void Write(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path) << text;
}

std::string Lines(int from, int to) {
  std::string text;
  for (int i = from; i <= to; ++i) text += "line " + std::to_string(i) + "\n";
  return text;
}

TEST(KeepFailedRunTest, KeepsTheEvidenceAndShowsTheStatusAndTheLogsTails) {
  const fs::path root = fs::path(::testing::TempDir()) / "keep-failed-run-test";
  fs::remove_all(root);
  const fs::path run = root / "runs" / "sandbox-run-abc123";
  Write(run / "sandbox/logs/handoffctl-status.txt", "phase:      STUCK\nnext:       M3: ...\n");
  Write(run / "sandbox/logs/coordinator.log", Lines(1, 100));
  Write(run / "sandbox/logs/agent-cp-2.log", Lines(1, 30));
  Write(run / "sandbox/logs/agent-cp-1.log", "joined\n");
  Write(run / "sandbox/timeline.svg", "<svg/>");
  Write(run / "sandbox/records/sandbox.jsonl", "{}\n");
  Write(run / "sandbox/nodes/cp-1/var/lib/kubelet/pods/x/containers/kcm/0.log", "started\n");
  Write(run / "sandbox/coordinator/coordinator.db", "SQLite format 3");
  Write(run / "sandbox/pki/operator.key", "secret");

  std::ostringstream out;
  const fs::path kept = KeepFailedRun(run.string(), (root / "kept").string(), 1, out);
  EXPECT_EQ(kept, root / "kept" / "sandbox-run-abc123");
  for (const char* file : {"sandbox/logs/handoffctl-status.txt", "sandbox/logs/coordinator.log",
                           "sandbox/logs/agent-cp-1.log", "sandbox/timeline.svg",
                           "sandbox/records/sandbox.jsonl",
                           "sandbox/nodes/cp-1/var/lib/kubelet/pods/x/containers/kcm/0.log"}) {
    EXPECT_TRUE(fs::is_regular_file(kept / file)) << file;
  }
  EXPECT_FALSE(fs::exists(kept / "sandbox/coordinator/coordinator.db"));
  EXPECT_FALSE(fs::exists(kept / "sandbox/pki/operator.key"));

  const std::string shown = out.str();
  EXPECT_THAT(shown, HasSubstr("handoffctl sandbox exited 1; what it left is kept in " +
                               kept.string()));
  EXPECT_THAT(shown, HasSubstr("== the coordinator's last status (handoffctl status) ==\n"
                               "phase:      STUCK\n"));
  // The coordinator's last 60 lines, each agent's last 25, in name order.
  EXPECT_THAT(shown, AllOf(HasSubstr("== the last 60 lines of " +
                                     (kept / "sandbox/logs/coordinator.log").string() +
                                     " ==\nline 41\n"),
                           HasSubstr("line 100\n"), Not(HasSubstr("line 40\n"))));
  const size_t cp1 = shown.find("agent-cp-1.log ==\njoined\n");
  const size_t cp2 = shown.find("== the last 25 lines of " +
                                (kept / "sandbox/logs/agent-cp-2.log").string() + " ==\nline 6\n");
  EXPECT_NE(cp1, std::string::npos) << shown;
  EXPECT_NE(cp2, std::string::npos) << shown;
  EXPECT_LT(cp1, cp2);
  EXPECT_THAT(shown, HasSubstr("timeline: " + (kept / "sandbox/timeline.svg").string() + "\n"));
  fs::remove_all(root);
}

TEST(KeepFailedRunTest, ARunThatNeverStartedItsCoordinatorSaysSo) {
  const fs::path root = fs::path(::testing::TempDir()) / "keep-failed-run-test-empty";
  fs::remove_all(root);
  fs::create_directories(root / "runs" / "sandbox-run-x" / "sandbox");
  std::ostringstream out;
  KeepFailedRun((root / "runs" / "sandbox-run-x").string(), (root / "kept").string(), 2, out);
  EXPECT_THAT(out.str(), AllOf(HasSubstr("exited 2"),
                               HasSubstr("(none: the coordinator was not running)"),
                               HasSubstr("== the last 0 lines of ")));
  fs::remove_all(root);
}

}  // namespace
}  // namespace handoff::sandbox::testing
