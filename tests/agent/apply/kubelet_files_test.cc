// A kubelet whose flags are in more than one of its unit's files: the move writes each file where
// the flag is read, restarts the kubelet once after the last of them, and proves the new process
// runs with what the unit now gives it; an undo puts every file back and restarts it once more.
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "agent/apply/applier.h"
#include "agent/engine/classify.h"
#include "common/base/strings.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/agent/apply/fake_kubelet.h"
#include "tests/agent/engine/node_fixture.h"
#include "tests/agent/engine/worker_fixture.h"
#include "tests/support/fake_clock.h"
#include "tests/support/fault_injection_file_system.h"

namespace handoff {
namespace {

using ::testing::AllOf;
using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;
using testing::FakeKubelet;
using testing::KubeadmSettings;
using testing::LoadNode;

constexpr char kDefaults[] = "/etc/default/kubelet";
constexpr char kFlags[] = "/var/lib/kubelet/kubeadm-flags.env";

// The kubeadm fixture with the kubelet's unit as the pkgs.k8s.io deb installs it, and the
// operator's --cloud-provider=aws in /etc/default/kubelet as well as in kubeadm-flags.env.
MemoryFileSystem NodeWithUnit() {
  MemoryFileSystem fs = LoadNode("kubeadm");
  testing::AddDebKubeletUnit(fs);
  fs.SetFile(kDefaults, "KUBELET_EXTRA_ARGS=\"--cloud-provider=aws --v=2\"\n");
  return fs;
}

class KubeletFilesTest : public ::testing::Test {
 protected:
  KubeletFilesTest()
      : fs_(NodeWithUnit()), kubelet_(fs_, KubeadmSettings().paths) {}

  Applier MakeApplier() {
    ApplyOptions options;
    options.verify_options.timeout = absl::Minutes(1);
    return Applier(Host{fs_, kubelet_, kubelet_, clock_, kubelet_, kubelet_}, KubeadmSettings(),
                   options, log_);
  }

  NodeState State() {
    absl::StatusOr<NodeSnapshot> snapshot = ReadNodeSnapshot(fs_, KubeadmSettings().paths);
    EXPECT_TRUE(snapshot.ok()) << snapshot.status();
    return Classify(*snapshot).state;
  }

  FaultInjectionFileSystem fs_;
  FakeKubelet kubelet_;
  FakeClock clock_;
  std::ostringstream log_;
};

TEST_F(KubeletFilesTest, BothFilesAreWrittenThenTheKubeletRestartsOnceWithWhatTheUnitGivesIt) {
  ASSERT_TRUE(MakeApplier().Apply(NodeState::kPrepared).ok());
  ASSERT_EQ(State(), NodeState::kPrepared);
  const std::string defaults = *fs_.ReadFile(kDefaults);
  const std::string flags = *fs_.ReadFile(kFlags);
  // As systemd starts it: kubeadm-flags.env's words, then KUBELET_EXTRA_ARGS's.
  EXPECT_THAT(kubelet_.kubelet().argv, Contains("--cloud-provider=aws"));
  EXPECT_THAT(kubelet_.kubelet().argv, Contains("--v=2"));

  absl::StatusOr<ApplyReport> report = MakeApplier().Apply(NodeState::kMigrated);
  ASSERT_TRUE(report.ok()) << report.status();
  ASSERT_TRUE(report->ok()) << report->failure;
  EXPECT_EQ(State(), NodeState::kMigrated);
  EXPECT_THAT(kubelet_.commands, ElementsAre("systemctl restart kubelet"));
  EXPECT_THAT(kubelet_.kubelet().argv, Not(Contains("--cloud-provider=aws")));
  EXPECT_THAT(kubelet_.kubelet().argv, Contains("--cloud-provider=external"));
  EXPECT_THAT(kubelet_.kubelet().argv, Not(Contains(HasSubstr("--cloud-config"))));
  std::vector<std::string> kubelet_steps;
  for (const StepReport& step : report->steps) {
    if (step.component == kKubelet) kubelet_steps.push_back(step.path + ": " + step.verified);
  }
  EXPECT_THAT(kubelet_steps,
              ElementsAre(StrCat(kDefaults, ": written; the kubelet restarts once its last file is"),
                          StrCat(kFlags, ": restarted with the new flags and healthy")));

  report = MakeApplier().Apply(NodeState::kPrepared);
  ASSERT_TRUE(report.ok()) << report.status();
  ASSERT_TRUE(report->ok()) << report->failure;
  EXPECT_EQ(*fs_.ReadFile(kDefaults), defaults);
  EXPECT_EQ(*fs_.ReadFile(kFlags), flags);
  EXPECT_EQ(kubelet_.commands.size(), 2u);
  EXPECT_THAT(kubelet_.kubelet().argv, Contains("--cloud-provider=aws"));
}

// The second of the kubelet's files cannot be written: the first is put back, and the kubelet,
// never restarted with the half-written pair, is restarted once and proven on the old flags.
TEST_F(KubeletFilesTest, AFailureBetweenItsFilesPutsTheFirstBackAndRestartsTheKubeletOnce) {
  ASSERT_TRUE(MakeApplier().Apply(NodeState::kPrepared).ok());
  const std::map<std::string, std::string> prepared = fs_.Files();
  const ProcessInfo kubelet_before = kubelet_.kubelet();

  // Where the move writes kubeadm-flags.env, learnt on a copy of the node.
  int call = 0;
  {
    FaultInjectionFileSystem copy = fs_;
    FakeKubelet copy_kubelet(copy, KubeadmSettings().paths);
    FakeClock copy_clock;
    std::ostringstream copy_log;
    ApplyOptions options;
    Applier applier(Host{copy, copy_kubelet, copy_kubelet, copy_clock, copy_kubelet, copy_kubelet},
                    KubeadmSettings(), options, copy_log);
    const int start = copy.write_calls();
    ASSERT_TRUE(applier.Apply(NodeState::kMigrated).ok());
    const std::vector<std::string>& calls = copy.call_log();
    for (size_t i = static_cast<size_t>(start); i < calls.size() && call == 0; ++i) {
      if (StrContains(calls[i], "/var/lib/kubelet/") && StrContains(calls[i], "kubeadm-flags")) {
        call = static_cast<int>(i) + 1;
      }
    }
  }
  ASSERT_GT(call, 0);
  fs_.FailAtCall(call, false);

  absl::StatusOr<ApplyReport> report = MakeApplier().Apply(NodeState::kMigrated);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_THAT(report->failure, HasSubstr("injected fault"));
  EXPECT_EQ(report->rollback_failure, "");
  EXPECT_THAT(kubelet_.commands, ElementsAre("systemctl restart kubelet"));
  EXPECT_NE(kubelet_.kubelet().pid, kubelet_before.pid);
  EXPECT_EQ(kubelet_.kubelet().argv, kubelet_before.argv);
  EXPECT_EQ(State(), NodeState::kPrepared);
  for (const auto& [path, content] : prepared) {
    if (StartsWith(path, "/var/lib/handoff/")) continue;
    EXPECT_EQ(fs_.Files().at(path), content) << path;
  }
}

// A worker's move through the applier: the credential provider's configuration, then the
// kubelet's file, one restart, the new kubelet proven on its unit's words; and back, every file
// as it was.
TEST(WorkerApplyTest, AWorkersKubeletGoesExternalWithOneRestartAndComesBack) {
  FaultInjectionFileSystem fs(testing::WorkerNode());
  const Settings settings = testing::WorkerSettingsFor();
  FakeKubelet kubelet(fs, settings.paths);
  FakeClock clock;
  std::ostringstream log;
  ApplyOptions options;
  options.verify_options.timeout = absl::Minutes(1);
  auto apply = [&](NodeState target) {
    Applier applier(Host{fs, kubelet, kubelet, clock, kubelet, kubelet}, settings, options, log);
    return applier.Apply(target);
  };
  const std::map<std::string, std::string> before = fs.Files();
  EXPECT_THAT(kubelet.kubelet().argv, Contains("--cloud-provider=aws"));

  absl::StatusOr<ApplyReport> report = apply(NodeState::kExternal);
  ASSERT_TRUE(report.ok()) << report.status();
  ASSERT_TRUE(report->ok()) << report->failure << "\n" << log.str();
  EXPECT_THAT(kubelet.commands, ElementsAre("systemctl restart kubelet"));
  EXPECT_THAT(kubelet.kubelet().argv, Contains("--cloud-provider=external"));
  EXPECT_THAT(kubelet.kubelet().argv, Not(Contains(HasSubstr("--cloud-config"))));
  EXPECT_THAT(kubelet.kubelet().argv,
              Contains(StrCat("--hostname-override=", testing::kWorkerNodeName)));
  EXPECT_THAT(kubelet.kubelet().argv,
              Contains(StrCat("--image-credential-provider-config=",
                              testing::kWorkerCredentialConfig)));
  EXPECT_TRUE(fs.Files().count(testing::kWorkerCredentialConfig));

  report = apply(NodeState::kInTree);
  ASSERT_TRUE(report.ok()) << report.status();
  ASSERT_TRUE(report->ok()) << report->failure;
  EXPECT_EQ(kubelet.commands.size(), 2u);
  EXPECT_THAT(kubelet.kubelet().argv, Contains("--cloud-provider=aws"));
  for (const auto& [path, content] : fs.Files()) {
    if (StartsWith(path, "/var/lib/handoff/")) continue;
    ASSERT_TRUE(before.count(path)) << path << " was left behind";
    EXPECT_EQ(content, before.at(path)) << path;
  }
  for (const auto& [path, content] : before) EXPECT_TRUE(fs.Files().count(path)) << path;
}

// A proof that fails after the restart (here: the Node was registered anew) undoes the move: the
// kubelet is back on its old flags, and every file as it was.
NodeState StateOf(const FileSystem& fs, const Settings& settings) {
  absl::StatusOr<NodeSnapshot> snapshot = ReadNodeSnapshot(fs, settings);
  return snapshot.ok() ? Classify(*snapshot).state : NodeState::kInconsistent;
}

class ScriptedProof : public KubeletProof {
 public:
  absl::Status Before() override {
    ++befores;
    return before;
  }
  absl::StatusOr<std::string> After() override {
    ++afters;
    return after;
  }
  absl::Status before = absl::OkStatus();
  absl::StatusOr<std::string> after = std::string("proven");
  int befores = 0;
  int afters = 0;
};

TEST(WorkerApplyTest, AKubeletProofThatFailsUndoesTheMove) {
  FaultInjectionFileSystem fs(testing::WorkerNode());
  const Settings settings = testing::WorkerSettingsFor();
  FakeKubelet kubelet(fs, settings.paths);
  FakeClock clock;
  std::ostringstream log;
  ScriptedProof proof;
  ApplyOptions options;
  options.verify_options.timeout = absl::Minutes(1);
  options.kubelet_proof = &proof;

  Applier applier(Host{fs, kubelet, kubelet, clock, kubelet, kubelet}, settings, options, log);
  absl::StatusOr<ApplyReport> report = applier.Apply(NodeState::kExternal);
  ASSERT_TRUE(report.ok()) << report.status();
  ASSERT_TRUE(report->ok()) << report->failure;
  EXPECT_EQ(proof.befores, 1);
  EXPECT_EQ(proof.afters, 1);
  ASSERT_FALSE(report->steps.empty());
  EXPECT_THAT(report->steps.back().verified,
              AllOf(HasSubstr("restarted with the new flags and healthy"), HasSubstr("; proven")));

  proof.after = absl::FailedPreconditionError("Node w is another object now");
  report = applier.Apply(NodeState::kInTree);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_FALSE(report->ok());
  EXPECT_THAT(report->failure, HasSubstr("Node w is another object now"));
  EXPECT_TRUE(report->rollback_failure.empty()) << report->rollback_failure;
  // Undone: the kubelet runs external again, and the proof was not asked on the way back.
  EXPECT_THAT(kubelet.kubelet().argv, Contains("--cloud-provider=external"));
  EXPECT_EQ(proof.afters, 2);
  EXPECT_EQ(StateOf(fs, settings), NodeState::kExternal);

  // A proof that cannot take its "before" refuses the step before the kubelet restarts.
  proof.after = std::string("proven");
  proof.before = absl::FailedPreconditionError("this kubelet's Node w cannot be read");
  const size_t restarts = kubelet.commands.size();
  report = applier.Apply(NodeState::kInTree);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_THAT(report->failure, HasSubstr("cannot be read"));
  EXPECT_EQ(StateOf(fs, settings), NodeState::kExternal);
  EXPECT_EQ(proof.afters, 2);
  // Its files were put back; the kubelet, never restarted with them, is restarted once to be sure.
  EXPECT_EQ(kubelet.commands.size(), restarts + 1);
}

}  // namespace
}  // namespace handoff
