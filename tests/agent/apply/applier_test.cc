#include "agent/apply/applier.h"

#include <csignal>
#include <sstream>

#include "agent/engine/classify.h"
#include "common/base/strings.h"
#include "common/fs/atomic_file.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/agent/apply/fake_kubelet.h"
#include "tests/agent/engine/node_fixture.h"
#include "tests/support/fake_clock.h"
#include "tests/support/fault_injection_file_system.h"

namespace handoff {
namespace {

using ::testing::AllOf;
using ::testing::Contains;
using ::testing::ElementsAre;
using testing::FakeKubelet;
using ::testing::HasSubstr;
using testing::LoadNode;

constexpr char kKcm[] = "/etc/kubernetes/manifests/kube-controller-manager.yaml";
constexpr char kCcm[] = "/etc/kubernetes/manifests/cloud-controller-manager.yaml";

using testing::KubeadmSettings;

NodeState StateOf(const FileSystem& fs, const Settings& settings = KubeadmSettings()) {
  absl::StatusOr<NodeSnapshot> snapshot = ReadNodeSnapshot(fs, settings.paths);
  EXPECT_TRUE(snapshot.ok()) << snapshot.status();
  Classification result = Classify(*snapshot);
  EXPECT_THAT(result.problems, ::testing::IsEmpty());
  return result.state;
}

// A node (the kubeadm fixture) with its fake kubelet, a fake clock and the real verifier.
class ApplierTest : public ::testing::Test {
 protected:
  ApplierTest() : fs_(LoadNode("kubeadm")), kubelet_(fs_, KubeadmSettings().paths) {}

  Applier MakeApplier(ApplyOptions options = {}) {
    options.verify_options.timeout = absl::Minutes(1);
    return Applier(Host{fs_, kubelet_, kubelet_, clock_, kubelet_, kubelet_}, KubeadmSettings(),
                   options, log_);
  }

  ApplyReport MustApply(NodeState target) {
    absl::StatusOr<ApplyReport> report = MakeApplier().Apply(target);
    EXPECT_TRUE(report.ok()) << report.status();
    EXPECT_TRUE(report->ok()) << report->failure;
    return *report;
  }

  std::vector<Journal> Journals() {
    absl::StatusOr<std::vector<Journal>> journals = ListTransactions(fs_, "/var/lib/handoff");
    EXPECT_TRUE(journals.ok());
    return *journals;
  }

  FaultInjectionFileSystem fs_;
  FakeKubelet kubelet_;
  FakeClock clock_;
  std::ostringstream log_;
};

TEST_F(ApplierTest, WalksEveryStateBothWaysProvingEachComponent) {
  const std::map<std::string, std::string> original = fs_.Files();
  for (NodeState target : {NodeState::kPrepared, NodeState::kMigrated, NodeState::kFinalized,
                           NodeState::kMigrated, NodeState::kPrepared, NodeState::kInTree}) {
    SCOPED_TRACE(NodeStateName(target));
    ApplyReport report = MustApply(target);
    EXPECT_EQ(StateOf(fs_), target);
    for (const StepReport& step : report.steps) {
      if (!step.component.empty()) {
        EXPECT_FALSE(step.verified.empty()) << step.path;
      }
    }
  }
  // The kubelet was restarted exactly when its flags changed: forward to and back from migrated.
  EXPECT_THAT(kubelet_.commands,
              ElementsAre("systemctl restart kubelet", "systemctl restart kubelet"));
  // Back where it started: every file the same, except handoff's own state.
  for (const auto& [path, content] : original) EXPECT_EQ(fs_.Files().at(path), content) << path;
  for (const auto& [path, content] : fs_.Files()) {
    if (!original.count(path)) {
      EXPECT_THAT(path, ::testing::StartsWith("/var/lib/handoff/")) << path;
    }
  }
  EXPECT_EQ(Journals().size(), 6u);
}

TEST_F(ApplierTest, ApplyingTheCurrentStateWritesNothing) {
  MustApply(NodeState::kPrepared);
  const std::map<std::string, std::string> before = fs_.Files();
  const int calls = fs_.write_calls();
  absl::StatusOr<ApplyReport> report = MakeApplier().Apply(NodeState::kPrepared);
  ASSERT_TRUE(report.ok());
  EXPECT_TRUE(report->no_op);
  EXPECT_EQ(fs_.write_calls(), calls);
  EXPECT_EQ(fs_.Files(), before);
}

TEST_F(ApplierTest, StrayBackupInManifestDirIsRefusedByNameAndNothingWritten) {
  fs_.SetFile("/etc/kubernetes/manifests/kube-controller-manager.yaml.bak", *fs_.ReadFile(kKcm));
  const std::map<std::string, std::string> before = fs_.Files();
  absl::StatusOr<ApplyReport> report = MakeApplier().Apply(NodeState::kPrepared);
  ASSERT_FALSE(report.ok());
  EXPECT_THAT(std::string(report.status().message()),
              HasSubstr("/etc/kubernetes/manifests/kube-controller-manager.yaml.bak"));
  EXPECT_EQ(fs_.Files(), before);
}

TEST_F(ApplierTest, MissingMountSourceIsRefusedAndNothingWritten) {
  // A manifest that mounts a file (type File) that is not on the node.
  std::string kcm = *fs_.ReadFile(kKcm);
  kcm.replace(
      kcm.find("      path: /etc/kubernetes/controller-manager.conf\n      type: FileOrCreate"),
      std::string("      path: /etc/kubernetes/controller-manager.conf\n      type: FileOrCreate")
          .size(),
      "      path: /etc/kubernetes/controller-manager.conf\n      type: File");
  fs_.SetFile(kKcm, kcm);
  const std::map<std::string, std::string> before = fs_.Files();
  absl::StatusOr<ApplyReport> report = MakeApplier().Apply(NodeState::kPrepared);
  ASSERT_FALSE(report.ok());
  EXPECT_THAT(std::string(report.status().message()),
              AllOf(HasSubstr("volume 'kubeconfig' mounts /etc/kubernetes/controller-manager.conf "
                              "(type File), which does not exist"),
                    HasSubstr("nothing was written")));
  EXPECT_EQ(fs_.Files(), before);
}

TEST_F(ApplierTest, SecondApplyWhileOneRunsIsRefused) {
  ASSERT_TRUE(EnsureDirectory(fs_, "/var/lib/handoff").ok());
  absl::StatusOr<std::unique_ptr<FileSystem::Lock>> held = fs_.TryLock("/var/lib/handoff/lock");
  ASSERT_TRUE(held.ok());
  const std::map<std::string, std::string> before = fs_.Files();
  absl::StatusOr<ApplyReport> report = MakeApplier().Apply(NodeState::kPrepared);
  ASSERT_FALSE(report.ok());
  EXPECT_THAT(std::string(report.status().message()),
              HasSubstr("another handoff-agent is changing this node"));
  EXPECT_EQ(fs_.Files(), before);
  held->reset();
  EXPECT_TRUE(MakeApplier().Apply(NodeState::kPrepared).ok());
}

// `recover` under another holder of the lock did nothing: a refusal, as for apply, not a
// recovery that failed and needs an operator.
TEST_F(ApplierTest, RecoverWhileAnotherHoldsTheLockIsARefusal) {
  ASSERT_TRUE(EnsureDirectory(fs_, "/var/lib/handoff").ok());
  absl::StatusOr<std::unique_ptr<FileSystem::Lock>> held = fs_.TryLock("/var/lib/handoff/lock");
  ASSERT_TRUE(held.ok());
  const std::map<std::string, std::string> before = fs_.Files();
  absl::StatusOr<std::vector<std::string>> recovered = MakeApplier().Recover();
  EXPECT_EQ(recovered.status().code(), absl::StatusCode::kFailedPrecondition) << recovered.status();
  EXPECT_THAT(std::string(recovered.status().message()),
              HasSubstr("another handoff-agent is changing this node"));
  EXPECT_EQ(fs_.Files(), before);
}

// A state dir the kubelet reads is refused before its lock file is made: the lock would
// otherwise show up as a broken manifest in every later status.
TEST_F(ApplierTest, StateDirInTheManifestDirIsRefusedBeforeAnythingIsCreated) {
  for (const char* state_dir : {"/etc/kubernetes/manifests", "/etc/kubernetes/manifests/handoff",
                                "/etc/kubernetes/../kubernetes/manifests/", "/var/lib/kubelet"}) {
    SCOPED_TRACE(state_dir);
    Settings settings = KubeadmSettings();
    settings.paths.state_dir = state_dir;
    const int calls = fs_.write_calls();
    const std::map<std::string, std::string> before = fs_.Files();
    Applier applier(Host{fs_, kubelet_, kubelet_, clock_, kubelet_, kubelet_}, settings,
                    ApplyOptions{}, log_);
    for (const absl::Status& status :
         {applier.Apply(NodeState::kPrepared).status(), applier.Recover().status(),
          applier.Rollback().status()}) {
      EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition) << status;
      EXPECT_THAT(std::string(status.message()),
                  AllOf(HasSubstr("paths.stateDir"), HasSubstr("nothing was created")));
    }
    EXPECT_EQ(fs_.write_calls(), calls);
    EXPECT_EQ(fs_.Files(), before);
  }
}

TEST_F(ApplierTest, WrongArgvIsRolledBackAndTheRollbackVerified) {
  MustApply(NodeState::kPrepared);
  const std::map<std::string, std::string> prepared = fs_.Files();
  kubelet_.extra_arg["cloud-controller-manager"] = "--v=9";
  absl::StatusOr<ApplyReport> report = MakeApplier().Apply(NodeState::kMigrated);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_FALSE(report->ok());
  EXPECT_THAT(report->failure, AllOf(HasSubstr(kCcm), HasSubstr("--v=9")));
  EXPECT_EQ(report->rollback_failure, "");
  EXPECT_EQ(StateOf(fs_), NodeState::kPrepared);
  for (const auto& [path, content] : prepared) EXPECT_EQ(fs_.Files().at(path), content) << path;
  EXPECT_EQ(fs_.Files().count(kCcm), 0u);
  EXPECT_EQ(Journals().back().phase, kPhaseRolledBack);
  // The cloud-controller-manager comes before the kubelet's flags, so the kubelet was never
  // touched or restarted.
  EXPECT_TRUE(kubelet_.commands.empty());
}

TEST_F(ApplierTest, ADroppedChangeIsStoppedAsTheKubeletWouldAndTheKubeletRestarted) {
  // The kubelet drops the change (as a real one does before it has read all its pod sources):
  // the old kube-controller-manager runs on and nothing replaces it.
  kubelet_.frozen.insert("kube-controller-manager");
  absl::StatusOr<std::vector<ProcessInfo>> listed = kubelet_.List();
  ASSERT_TRUE(listed.ok());
  int old_pid = 0;
  for (const ProcessInfo& process : *listed) {
    if (process.argv[0] == "kube-controller-manager") old_pid = process.pid;
  }
  ASSERT_NE(old_pid, 0);
  const absl::Time start = clock_.Now();
  const ApplyReport report = MustApply(NodeState::kPrepared);
  EXPECT_EQ(StateOf(fs_), NodeState::kPrepared);
  // Not before the old pod's 30 s grace and the kubelet's 20 s re-list had passed: only SIGTERM
  // (it ended the process), then the kubelet restarted, which started the new pod.
  EXPECT_GE(clock_.Now() - start, absl::Seconds(50));
  EXPECT_THAT(kubelet_.signals, ElementsAre(StrCat(SIGTERM, " ", old_pid)));
  EXPECT_THAT(kubelet_.commands, ElementsAre("systemctl restart kubelet"));
  EXPECT_THAT(report.notes, Contains(AllOf(HasSubstr("kube-controller-manager"),
                                           HasSubstr(StrCat("process ", old_pid)),
                                           HasSubstr("restarted the kubelet"))));
  EXPECT_THAT(log_.str(), HasSubstr("kubernetes/kubernetes#112814"));
}

TEST_F(ApplierTest, AnOldProcessThatCannotBeStoppedFailsTheMoveWhichIsRolledBack) {
  kubelet_.frozen.insert("kube-controller-manager");
  kubelet_.unstoppable.insert("kube-controller-manager");
  absl::StatusOr<ApplyReport> report = MakeApplier().Apply(NodeState::kPrepared);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_FALSE(report->ok());
  EXPECT_THAT(report->failure,
              AllOf(HasSubstr("kube-controller-manager"), HasSubstr("cannot be stopped"),
                    HasSubstr("Operation not permitted")));
  // The kubelet was left alone: restarting it would start the new pod beside the old process.
  EXPECT_TRUE(kubelet_.commands.empty());
  // The kubelet never switched, so after the restore the old process is the right one.
  EXPECT_EQ(report->rollback_failure, "");
  EXPECT_EQ(StateOf(fs_), NodeState::kInTree);
  EXPECT_FALSE(fs_.ReadFile("/etc/leadermigration.conf").ok());
}

TEST_F(ApplierTest, UnhealthyComponentTimesOutAndIsRolledBack) {
  MustApply(NodeState::kPrepared);
  kubelet_.unhealthy_ports.insert(10258);
  const absl::Time start = clock_.Now();
  absl::StatusOr<ApplyReport> report = MakeApplier().Apply(NodeState::kMigrated);
  ASSERT_TRUE(report.ok());
  EXPECT_FALSE(report->ok());
  EXPECT_THAT(report->failure, AllOf(HasSubstr("cloud-controller-manager"), HasSubstr("10258")));
  EXPECT_EQ(report->rollback_failure, "");
  EXPECT_EQ(StateOf(fs_), NodeState::kPrepared);
  // It waited the whole per-component timeout (on the fake clock) before giving up.
  EXPECT_GE(clock_.Now() - start, absl::Minutes(1));
}

TEST_F(ApplierTest, FailedUndoIsReportedAndLeftForRecovery) {
  MustApply(NodeState::kPrepared);
  // The kube-controller-manager (written after the cloud-controller-manager) never gets healthy,
  // and neither does its restored self.
  kubelet_.unhealthy_ports.insert(10257);
  absl::StatusOr<ApplyReport> report = MakeApplier().Apply(NodeState::kMigrated);
  ASSERT_TRUE(report.ok());
  EXPECT_FALSE(report->ok());
  EXPECT_THAT(report->rollback_failure, HasSubstr("kube-controller-manager"));
  EXPECT_EQ(Journals().back().phase, kPhaseStarted);
  // Once the cause is gone, recovery finishes the undo.
  kubelet_.unhealthy_ports.clear();
  absl::StatusOr<std::vector<std::string>> recovered = MakeApplier().Recover();
  ASSERT_TRUE(recovered.ok()) << recovered.status();
  EXPECT_EQ(recovered->size(), 1u);
  EXPECT_EQ(StateOf(fs_), NodeState::kPrepared);
  EXPECT_EQ(Journals().back().phase, kPhaseRolledBack);
}

TEST_F(ApplierTest, KubeletThatFailsToRestartRollsBack) {
  MustApply(NodeState::kPrepared);
  kubelet_.fail_kubelet_restart = true;
  absl::StatusOr<ApplyReport> report = MakeApplier().Apply(NodeState::kMigrated);
  ASSERT_TRUE(report.ok());
  EXPECT_THAT(report->failure, HasSubstr("Job for kubelet.service failed"));
}

TEST_F(ApplierTest, RollbackUndoesTheLastCompletedMove) {
  MustApply(NodeState::kPrepared);
  const std::map<std::string, std::string> prepared = fs_.Files();
  MustApply(NodeState::kMigrated);
  absl::StatusOr<ApplyReport> report = MakeApplier().Rollback();
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_TRUE(report->ok()) << report->failure;
  EXPECT_EQ(report->to, NodeState::kPrepared);
  EXPECT_EQ(StateOf(fs_), NodeState::kPrepared);
  for (const auto& [path, content] : prepared) {
    if (!StartsWith(path, "/var/lib/handoff/")) {
      EXPECT_EQ(fs_.Files().at(path), content) << path;
    }
  }
  EXPECT_EQ(Journals().back().kind, "rollback");
}

TEST_F(ApplierTest, RollbackRefusesWhenTheNodeChangedSince) {
  MustApply(NodeState::kPrepared);
  std::string kcm = *fs_.ReadFile(kKcm);
  kcm.replace(kcm.find("    - --enable-leader-migration\n"), 32, "");
  kcm.replace(kcm.find("    - --leader-migration-config=/etc/leadermigration.conf\n"), 58, "");
  fs_.SetFile(kKcm, kcm);
  ASSERT_EQ(StateOf(fs_), NodeState::kInTree);
  absl::StatusOr<ApplyReport> report = MakeApplier().Rollback();
  ASSERT_FALSE(report.ok());
  EXPECT_THAT(std::string(report.status().message()), HasSubstr("something changed it since"));
}

TEST_F(ApplierTest, RetentionKeepsTheNewestTransactions) {
  ApplyOptions options;
  options.keep_transactions = 2;
  for (NodeState target :
       {NodeState::kPrepared, NodeState::kInTree, NodeState::kPrepared, NodeState::kInTree}) {
    clock_.Advance(absl::Seconds(1));
    absl::StatusOr<ApplyReport> report = MakeApplier(options).Apply(target);
    ASSERT_TRUE(report.ok() && report->ok());
  }
  std::vector<Journal> journals = Journals();
  ASSERT_EQ(journals.size(), 2u);
  EXPECT_THAT(journals[0].id, HasSubstr("-in-tree-to-prepared"));
  EXPECT_THAT(journals[1].id, HasSubstr("-prepared-to-in-tree"));
}

}  // namespace
}  // namespace handoff
