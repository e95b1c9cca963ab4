// `handoffctl sandbox` as the operator runs it: the real binaries, the invariant monitor, and
// its summary. Each run takes seconds to a minute (real lease handovers with 1s leases).
#include <stdlib.h>
#include <sys/wait.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "coordinator/sandbox/process.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace handoff::sandbox {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

struct SandboxRun {
  int exit_code = -1;
  std::string output;
};

SandboxRun Sandbox(const std::vector<std::string>& flags) {
  std::string pattern = std::filesystem::path(::testing::TempDir()) / "sandbox-run-XXXXXX";
  EXPECT_NE(mkdtemp(pattern.data()), nullptr);
  std::vector<std::string> argv = {HANDOFFCTL_BIN, "sandbox", "--dir", pattern + "/sandbox"};
  argv.insert(argv.end(), flags.begin(), flags.end());
  const std::string log = pattern + "/output.log";
  absl::StatusOr<std::unique_ptr<Process>> process = Process::Spawn(argv, log);
  SandboxRun run;
  if (!process.ok()) {
    ADD_FAILURE() << process.status();
    return run;
  }
  int status = 0;
  if (!(*process)->WaitFor(absl::Minutes(4), &status)) {
    ADD_FAILURE() << "handoffctl sandbox did not finish within 4 minutes";
    (*process)->Stop(SIGINT, absl::Seconds(30));
  }
  run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::ifstream in(log);
  std::stringstream text;
  text << in.rdbuf();
  run.output = text.str();
  std::filesystem::remove_all(pattern);
  return run;
}

void ExpectCompletedAndHeld(const SandboxRun& run) {
  EXPECT_EQ(run.exit_code, 0) << run.output;
  EXPECT_THAT(run.output, HasSubstr("rollout to 1.27 and rollback to 1.26 completed"));
  EXPECT_THAT(run.output, HasSubstr("invariant held: no cloud controller ran in two processes"));
  EXPECT_THAT(run.output, Not(HasSubstr("INVARIANT BROKEN")));
}

TEST(SandboxRunTest, ThreeNodesMigrateAndComeBackWithTheInvariantHeld) {
  SandboxRun run = Sandbox({});
  ExpectCompletedAndHeld(run);
  EXPECT_THAT(run.output, HasSubstr("node providerIDs: all 3 control-plane nodes"));
  EXPECT_THAT(run.output, HasSubstr("steps: 12 moves carried out by the agents"));
  EXPECT_THAT(run.output, HasSubstr("DONE:  cp-1 migrated  cp-2 migrated  cp-3 migrated"));
  EXPECT_THAT(run.output, HasSubstr("DONE:  cp-1 in-tree  cp-2 in-tree  cp-3 in-tree"));
  EXPECT_THAT(run.output, HasSubstr("components:\n  model: fake API server, stand-in managers\n"));
}

TEST(SandboxRunTest, FiveNodes) {
  SandboxRun run = Sandbox({"--nodes", "5"});
  ExpectCompletedAndHeld(run);
  EXPECT_THAT(run.output, HasSubstr("steps: 20 moves carried out by the agents"));
}

TEST(SandboxRunTest, AnAgentKilledMidMove) {
  SandboxRun run = Sandbox({"--fault", "agent-kill"});
  ExpectCompletedAndHeld(run);
  EXPECT_THAT(run.output, HasSubstr("fault: kill -9 the agent of cp-2 during move"));
}

TEST(SandboxRunTest, TheCoordinatorKilledMidRollout) {
  SandboxRun run = Sandbox({"--fault", "coordinator-kill"});
  ExpectCompletedAndHeld(run);
  EXPECT_THAT(run.output, HasSubstr("fault: kill -9 the coordinator during move"));
}

TEST(SandboxRunTest, AComponentThatNeverGetsHealthyIsRolledBackAndHaltsTheRollout) {
  SandboxRun run = Sandbox({"--fault", "unhealthy"});
  ExpectCompletedAndHeld(run);
  EXPECT_THAT(run.output, HasSubstr("halted as it must be: cp-2: prepared → migrated rolled back"));
}

TEST(SandboxRunTest, AStrayBackupFileStopsTheRolloutUntilItIsRemoved) {
  SandboxRun run = Sandbox({"--fault", "stray-backup"});
  ExpectCompletedAndHeld(run);
  EXPECT_THAT(run.output, HasSubstr("stuck as it must be"));
  EXPECT_THAT(run.output, HasSubstr("node cp-2 is inconsistent"));
}

// The monitor is proven able to fail: the order the coordinator forbids breaks the invariant.
TEST(SandboxRunTest, TheMonitorCatchesTheUnsafeOrder) {
  SandboxRun run = Sandbox({"--unsafe-order-for-tests"});
  EXPECT_EQ(run.exit_code, 1) << run.output;
  EXPECT_THAT(run.output, HasSubstr("INVARIANT BROKEN"));
  EXPECT_THAT(run.output, HasSubstr("cloud-controller-manager"));
}

TEST(SandboxRunTest, AnUnknownClusterIsRefused) {
  SandboxRun run = Sandbox({"--cluster", "minikube"});
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_THAT(run.output, HasSubstr("--cluster \"minikube\" is not one of model, real"));
}

TEST(SandboxRunTest, AnUnknownFaultIsRefused) {
  SandboxRun run = Sandbox({"--fault", "meteor"});
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_THAT(run.output, HasSubstr("--fault \"meteor\" is not one of"));
}

}  // namespace
}  // namespace handoff::sandbox
