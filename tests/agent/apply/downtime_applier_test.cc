// The downtime path carried out by the applier on the kubeadm fixture, with the fake kubelet
// running whatever the manifest directory holds: the kube-controller-manager parked (and proven
// gone), everything external, the cloud-controller-manager started, and back; and the
// before_move hook that can refuse a move before anything is written.
#include <sstream>

#include "agent/apply/applier.h"
#include "agent/engine/classify.h"
#include "common/base/strings.h"
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
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using testing::FakeKubelet;
using testing::KubeadmSettings;
using testing::LoadNode;

constexpr char kKcm[] = "/etc/kubernetes/manifests/kube-controller-manager.yaml";
constexpr char kCcm[] = "/etc/kubernetes/manifests/cloud-controller-manager.yaml";
constexpr char kParked[] = "/var/lib/handoff/parked/kube-controller-manager.yaml";

class DowntimeApplierTest : public ::testing::Test {
 protected:
  DowntimeApplierTest() : fs_(LoadNode("kubeadm")), kubelet_(fs_, KubeadmSettings().paths) {}

  Applier MakeApplier(ApplyOptions options = {}) {
    options.verify_options.timeout = absl::Minutes(1);
    return Applier(Host{fs_, kubelet_, kubelet_, clock_, kubelet_, kubelet_}, KubeadmSettings(),
                   options, log_);
  }

  NodeState State() {
    absl::StatusOr<NodeSnapshot> snapshot = ReadNodeSnapshot(fs_, KubeadmSettings().paths);
    EXPECT_TRUE(snapshot.ok()) << snapshot.status();
    Classification result = Classify(*snapshot);
    EXPECT_THAT(result.problems, IsEmpty());
    return result.state;
  }

  // The processes of `component` the fake kubelet runs now.
  std::vector<ProcessInfo> Running(const std::string& component) {
    std::vector<ProcessInfo> found;
    absl::StatusOr<std::vector<ProcessInfo>> all = kubelet_.List();
    EXPECT_TRUE(all.ok());
    for (const ProcessInfo& process : *all) {
      if (!process.argv.empty() && EndsWith(process.argv[0], component)) found.push_back(process);
    }
    return found;
  }

  FaultInjectionFileSystem fs_;
  FakeKubelet kubelet_;
  FakeClock clock_;
  std::ostringstream log_;
};

TEST_F(DowntimeApplierTest, StoppingProvesTheControllerManagerGone) {
  ASSERT_EQ(Running("kube-controller-manager").size(), 1u);
  const std::string kcm = *fs_.ReadFile(kKcm);
  std::vector<std::string> gone;
  ApplyOptions options;
  options.on_processes_gone = [&](const ProcessesGone& processes) {
    gone.push_back(processes.component);
  };
  absl::StatusOr<ApplyReport> report = MakeApplier(options).Apply(NodeState::kStopped);
  ASSERT_TRUE(report.ok()) << report.status();
  ASSERT_TRUE(report->ok()) << report->failure;
  ASSERT_EQ(report->steps.size(), 2u);
  // The parked copy (in a directory the move created) first, then the manifest removed and
  // its process proven gone.
  EXPECT_EQ(report->steps[0].path, kParked);
  EXPECT_EQ(report->steps[0].action, "create");
  EXPECT_EQ(report->steps[1].path, kKcm);
  EXPECT_EQ(report->steps[1].action, "remove");
  EXPECT_EQ(report->steps[1].verified, "stopped");
  EXPECT_THAT(gone, ElementsAre("kube-controller-manager"));
  EXPECT_THAT(Running("kube-controller-manager"), IsEmpty());
  EXPECT_EQ(*fs_.ReadFile(kParked), kcm);
  EXPECT_FALSE(fs_.ReadFile(kKcm).ok());
  EXPECT_EQ(State(), NodeState::kStopped);
}

TEST_F(DowntimeApplierTest, WalksTheDowntimePathBothWaysBackToTheSameFiles) {
  const std::map<std::string, std::string> original = fs_.Files();
  for (NodeState target : {NodeState::kStopped, NodeState::kExternal, NodeState::kFinalized,
                           NodeState::kExternal, NodeState::kStopped, NodeState::kInTree}) {
    SCOPED_TRACE(NodeStateName(target));
    absl::StatusOr<ApplyReport> report = MakeApplier().Apply(target);
    ASSERT_TRUE(report.ok()) << report.status();
    ASSERT_TRUE(report->ok()) << report->failure;
    EXPECT_EQ(State(), target);
    for (const StepReport& step : report->steps) {
      if (!step.component.empty()) {
        EXPECT_FALSE(step.verified.empty()) << step.path;
      }
    }
    EXPECT_EQ(Running("kube-controller-manager").size(), target == NodeState::kStopped ? 0u : 1u);
    EXPECT_EQ(Running("cloud-controller-manager").size(),
              target == NodeState::kFinalized ? 1u : 0u);
  }
  // The kubelet restarted when its flags changed: to external and back to stopped.
  EXPECT_THAT(kubelet_.commands,
              ElementsAre("systemctl restart kubelet", "systemctl restart kubelet"));
  for (const auto& [path, content] : original) EXPECT_EQ(fs_.Files().at(path), content) << path;
  for (const auto& [path, content] : fs_.Files()) {
    // Only the journal, its backups and the lock: nothing parked, no migration record.
    if (!original.count(path) && path != "/var/lib/handoff/lock") {
      EXPECT_THAT(path, ::testing::StartsWith("/var/lib/handoff/transactions/")) << path;
    }
  }
}

TEST_F(DowntimeApplierTest, AStopTheKubeletDroppedIsCarriedOutByTheAgent) {
  // The kubelet drops the removal of the kube-controller-manager's manifest (a kubelet that has
  // not read all its pod sources does): the agent stops the process and restarts the kubelet.
  kubelet_.frozen.insert("kube-controller-manager");
  absl::StatusOr<ApplyReport> report = MakeApplier().Apply(NodeState::kStopped);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_TRUE(report->ok()) << report->failure;
  EXPECT_EQ(State(), NodeState::kStopped);
  EXPECT_EQ(kubelet_.signals.size(), 1u);
  EXPECT_THAT(kubelet_.commands, ElementsAre("systemctl restart kubelet"));
  EXPECT_THAT(Running("kube-controller-manager"), IsEmpty());
}

TEST_F(DowntimeApplierTest, FailedStopIsUndoneAndTheParkedCopyRemoved) {
  // The old kube-controller-manager never exits, and cannot be stopped: the move is undone, the
  // manifest back in the manifest directory and nothing left parked.
  kubelet_.frozen.insert("kube-controller-manager");
  kubelet_.unstoppable.insert("kube-controller-manager");
  const std::map<std::string, std::string> original = fs_.Files();
  ApplyOptions options;
  options.verify_options.poll_interval = absl::Seconds(5);
  absl::StatusOr<ApplyReport> report = MakeApplier(options).Apply(NodeState::kStopped);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_FALSE(report->ok());
  EXPECT_THAT(report->failure, HasSubstr(kKcm));
  EXPECT_EQ(report->rollback_failure, "");
  EXPECT_FALSE(fs_.ReadFile(kParked).ok());
  for (const auto& [path, content] : original) EXPECT_EQ(fs_.Files().at(path), content) << path;
  EXPECT_EQ(State(), NodeState::kInTree);
}

TEST_F(DowntimeApplierTest, BeforeMoveRefusingWritesNothing) {
  const std::map<std::string, std::string> before = fs_.Files();
  const int calls = fs_.write_calls();
  std::vector<std::pair<NodeState, NodeState>> asked;
  ApplyOptions options;
  options.before_move = [&](NodeState from, NodeState to,
                            const Settings&) -> absl::StatusOr<std::vector<std::string>> {
    asked.emplace_back(from, to);
    return absl::FailedPreconditionError(
        "the instance has no tag kubernetes.io/cluster/test (tags/instance)");
  };
  absl::StatusOr<ApplyReport> report = MakeApplier(options).Apply(NodeState::kStopped);
  ASSERT_FALSE(report.ok());
  EXPECT_EQ(report.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(report.status().message(),
            "the instance has no tag kubernetes.io/cluster/test (tags/instance)");
  EXPECT_THAT(asked, ElementsAre(std::make_pair(NodeState::kInTree, NodeState::kStopped)));
  EXPECT_EQ(fs_.write_calls(), calls);
  EXPECT_EQ(fs_.Files(), before);
  EXPECT_EQ(Running("kube-controller-manager").size(), 1u);
}

TEST_F(DowntimeApplierTest, BeforeMoveLinesBecomeNotesAndANoOpAsksNothing) {
  int asked = 0;
  ApplyOptions options;
  options.before_move = [&](NodeState from, NodeState to,
                            const Settings& settings) -> absl::StatusOr<std::vector<std::string>> {
    ++asked;
    EXPECT_EQ(settings.ccm.image, KubeadmSettings().ccm.image);
    return std::vector<std::string>{StrCat("checked ", NodeStateName(from), " -> ",
                                           NodeStateName(to))};
  };
  absl::StatusOr<ApplyReport> report = MakeApplier(options).Apply(NodeState::kStopped);
  ASSERT_TRUE(report.ok()) << report.status();
  ASSERT_TRUE(report->ok()) << report->failure;
  EXPECT_THAT(report->notes, ElementsAre("checked in-tree -> stopped"));
  EXPECT_EQ(asked, 1);

  report = MakeApplier(options).Apply(NodeState::kStopped);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_TRUE(report->no_op);
  EXPECT_THAT(report->notes, IsEmpty());
  EXPECT_EQ(asked, 1);

  // Rolling back is a move too: asked, and its lines kept.
  report = MakeApplier(options).Rollback();
  ASSERT_TRUE(report.ok()) << report.status();
  ASSERT_TRUE(report->ok()) << report->failure;
  EXPECT_THAT(report->notes, ElementsAre("checked stopped -> in-tree"));
  EXPECT_EQ(asked, 2);
  EXPECT_EQ(State(), NodeState::kInTree);
  EXPECT_THAT(fs_.ReadFile(kCcm).status().code(), absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace handoff
