// A control-plane node whose kubelet takes its flags from more than kubeadm-flags.env: the
// classification says what the kubelet runs with, and a move that would not take effect is
// refused, naming the file that overrides it.
#include <map>
#include <string>
#include <vector>

#include "agent/engine/classify.h"
#include "agent/engine/planner.h"
#include "common/base/strings.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/agent/engine/node_fixture.h"
#include "tests/common/systemd/kubelet_layouts.h"

namespace handoff {
namespace {

using ::testing::Contains;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using testing::ApplyPlan;
using testing::ClassifyNode;
using testing::KubeadmSettings;
using testing::LoadNode;
using testing::PlanNode;

// The kubeadm fixture with the kubelet's unit as the pkgs.k8s.io deb installs it.
MemoryFileSystem WithUnit(std::string defaults) {
  MemoryFileSystem fs = LoadNode("kubeadm");
  const std::vector<systemd::testing::KubeletLayout> layouts = systemd::testing::KubeletLayouts();
  for (const auto& [path, text] : layouts[1].files) {
    if (StrContains(path, "/systemd/")) fs.SetFile(path, text);
  }
  fs.SetFile("/etc/default/kubelet", std::move(defaults));
  return fs;
}

MemoryFileSystem MovedTo(MemoryFileSystem fs, NodeState target) {
  for (NodeState step : {NodeState::kPrepared, NodeState::kMigrated}) {
    if (static_cast<int>(step) > static_cast<int>(target)) break;
    absl::StatusOr<Plan> plan = PlanNode(fs, step, KubeadmSettings());
    EXPECT_TRUE(plan.ok()) << plan.status();
    if (plan.ok()) ApplyPlan(*plan, fs);
  }
  return fs;
}

TEST(KubeletUnitTest, AUnitWithNoOverrideMovesAsBefore) {
  MemoryFileSystem fs = MovedTo(WithUnit("KUBELET_EXTRA_ARGS=--v=2\n"), NodeState::kMigrated);
  Classification result = ClassifyNode(fs, NodePaths{});
  EXPECT_EQ(result.state, NodeState::kMigrated) << StrJoin(result.problems, "\n");
  EXPECT_THAT(result.problems, IsEmpty());
}

// Before, the node was reported migrated: only kubeadm-flags.env was read, and it said external.
TEST(KubeletUnitTest, AFlagInEtcDefaultKubeletIsWhatTheKubeletRunsWith) {
  MemoryFileSystem fs = MovedTo(WithUnit(""), NodeState::kMigrated);
  fs.SetFile("/etc/default/kubelet", "KUBELET_EXTRA_ARGS=--cloud-provider=aws\n");
  Classification result = ClassifyNode(fs, NodePaths{});
  EXPECT_EQ(result.state, NodeState::kInconsistent);
  EXPECT_THAT(result.problems,
              Contains(HasSubstr("--cloud-provider=aws (KUBELET_EXTRA_ARGS, /etc/default/kubelet "
                                 "line 1): the kubelet must have --cloud-provider=external")));
}

TEST(KubeletUnitTest, AMoveThatWouldNotTakeEffectIsRefusedNamingTheFile) {
  MemoryFileSystem fs =
      MovedTo(WithUnit("KUBELET_EXTRA_ARGS=\"--cloud-provider=aws --v=2\"\n"),
              NodeState::kPrepared);
  absl::StatusOr<Plan> plan = PlanNode(fs, NodeState::kMigrated, KubeadmSettings());
  EXPECT_THAT(plan.status().message(),
              HasSubstr("--cloud-provider=aws (KUBELET_EXTRA_ARGS, /etc/default/kubelet line 1) "
                        "overrides /var/lib/kubelet/kubeadm-flags.env: the kubelet would still "
                        "run --cloud-provider=aws after the move"));
  // A --cloud-config given again there is refused too.
  fs.SetFile("/etc/default/kubelet",
             "KUBELET_EXTRA_ARGS=--cloud-config=/etc/kubernetes/cloud.conf\n");
  plan = PlanNode(fs, NodeState::kMigrated, KubeadmSettings());
  EXPECT_THAT(plan.status().message(),
              HasSubstr("/etc/default/kubelet line 1): an external kubelet takes no "
                        "--cloud-config"));
}

TEST(KubeletUnitTest, AUnitThatCannotBeReadIsAProblem) {
  MemoryFileSystem fs = WithUnit("");
  fs.SetFile("/etc/systemd/system/kubelet.service.d/30-x.conf",
             "[Service]\nExecStart=/usr/bin/kubelet --v=9\n");
  Classification result = ClassifyNode(fs, NodePaths{});
  EXPECT_EQ(result.state, NodeState::kInconsistent);
  EXPECT_THAT(result.problems,
              Contains(HasSubstr("30-x.conf line 2: a second ExecStart=")));
  // A unit that does not read the flags file: the move would change nothing.
  MemoryFileSystem elsewhere = WithUnit("");
  elsewhere.SetFile("/usr/lib/systemd/system/kubelet.service.d/10-kubeadm.conf",
                    "[Service]\nEnvironmentFile=-/etc/default/kubelet\nExecStart=\n"
                    "ExecStart=/usr/bin/kubelet $KUBELET_EXTRA_ARGS\n");
  elsewhere.SetFile("/etc/default/kubelet", "KUBELET_EXTRA_ARGS=--cloud-provider=aws\n");
  MemoryFileSystem prepared = MovedTo(elsewhere, NodeState::kPrepared);
  absl::StatusOr<Plan> plan = PlanNode(prepared, NodeState::kMigrated, KubeadmSettings());
  EXPECT_THAT(plan.status().message(), HasSubstr("overrides /var/lib/kubelet/kubeadm-flags.env"));
}

}  // namespace
}  // namespace handoff
