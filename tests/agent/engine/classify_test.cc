#include "agent/engine/classify.h"

#include "common/base/strings.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/agent/engine/node_fixture.h"

namespace handoff {
namespace {

using ::testing::AllOf;
using testing::ApplyPlan;
using testing::ClassifyNode;
using ::testing::Contains;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using testing::LoadNode;
using testing::PlanNode;

constexpr char kKcm[] = "/etc/kubernetes/manifests/kube-controller-manager.yaml";
constexpr char kCcm[] = "/etc/kubernetes/manifests/cloud-controller-manager.yaml";
constexpr char kApiserver[] = "/etc/kubernetes/manifests/kube-apiserver.yaml";
constexpr char kKubeletFlags[] = "/var/lib/kubelet/kubeadm-flags.env";
constexpr char kConfig[] = "/etc/leadermigration.conf";
constexpr char kParked[] = "/var/lib/handoff/parked/kube-controller-manager.yaml";

using testing::KubeadmSettings;

// The kubeadm fixture moved to `state` by the planner.
MemoryFileSystem NodeIn(NodeState state) {
  MemoryFileSystem fs = LoadNode("kubeadm");
  for (NodeState step : {NodeState::kPrepared, NodeState::kMigrated, NodeState::kFinalized}) {
    if (static_cast<int>(step) > static_cast<int>(state)) break;
    absl::StatusOr<Plan> plan = PlanNode(fs, step, KubeadmSettings());
    EXPECT_TRUE(plan.ok()) << plan.status();
    ApplyPlan(*plan, fs);
  }
  return fs;
}

std::string Edit(const MemoryFileSystem& fs, const std::string& path, const std::string& from,
                 const std::string& to) {
  std::string content = *fs.ReadFile(path);
  size_t at = content.find(from);
  EXPECT_NE(at, std::string::npos) << "'" << from << "' not in " << path;
  if (at != std::string::npos) content.replace(at, from.size(), to);
  return content;
}

void EditFile(MemoryFileSystem& fs, const std::string& path, const std::string& from,
              const std::string& to) {
  fs.SetFile(path, Edit(fs, path, from, to));
}

TEST(ClassifyTest, FixtureStatesAreRecognised) {
  for (NodeState state :
       {NodeState::kInTree, NodeState::kPrepared, NodeState::kMigrated, NodeState::kFinalized}) {
    Classification result = ClassifyNode(NodeIn(state), NodePaths{});
    EXPECT_EQ(result.state, state) << StrJoin(result.problems, "\n");
    EXPECT_THAT(result.problems, IsEmpty());
  }
}

TEST(ClassifyTest, ViewFindsComponentsAndVersions) {
  Classification result = ClassifyNode(NodeIn(NodeState::kMigrated), NodePaths{});
  ASSERT_TRUE(result.view.controller_manager && result.view.cloud_controller_manager);
  EXPECT_EQ(result.view.controller_manager->version->ToString(), "v1.27.6");
  EXPECT_EQ(result.view.cloud_controller_manager->version->ToString(), "v1.27.1");
  EXPECT_EQ(result.view.cloud_controller_manager->path, kCcm);
}

TEST(ClassifyTest, ExternalControllerManagerWithLeaderMigrationIsInconsistent) {
  MemoryFileSystem fs = NodeIn(NodeState::kMigrated);
  EditFile(fs, kKcm, "    - --cloud-provider=external\n",
           "    - --cloud-provider=external\n    - --enable-leader-migration\n");
  Classification result = ClassifyNode(fs, NodePaths{});
  EXPECT_EQ(result.state, NodeState::kInconsistent);
  EXPECT_THAT(
      result.problems,
      Contains(AllOf(HasSubstr(kKcm), HasSubstr("MUST NOT take part in Leader Migration"))));
}

TEST(ClassifyTest, LeaderMigrationWithoutLeaderElectionIsInconsistent) {
  MemoryFileSystem fs = NodeIn(NodeState::kPrepared);
  EditFile(fs, kKcm, "--leader-elect=true", "--leader-elect=false");
  Classification result = ClassifyNode(fs, NodePaths{});
  EXPECT_EQ(result.state, NodeState::kInconsistent);
  EXPECT_THAT(result.problems, Contains(AllOf(HasSubstr(kKcm), HasSubstr("--leader-elect=false"),
                                              HasSubstr("silently off"))));
}

TEST(ClassifyTest, ConfigFlagPointingAtMissingFileIsInconsistent) {
  MemoryFileSystem fs = NodeIn(NodeState::kPrepared);
  fs.DeleteFile(kConfig);
  Classification result = ClassifyNode(fs, NodePaths{});
  EXPECT_EQ(result.state, NodeState::kInconsistent);
  EXPECT_THAT(
      result.problems,
      Contains(AllOf(HasSubstr("--leader-migration-config=/etc/leadermigration.conf"),
                     HasSubstr("/etc/leadermigration.conf on the node, which does not exist"))));
}

TEST(ClassifyTest, ConfigFlagThatIsNotMountedIsInconsistent) {
  MemoryFileSystem fs = NodeIn(NodeState::kPrepared);
  EditFile(fs, kKcm,
           "    - mountPath: /etc/leadermigration.conf\n      name: leader-migration-config\n      "
           "readOnly: true\n",
           "");
  EditFile(fs, kKcm,
           "  - hostPath:\n      path: /etc/leadermigration.conf\n      type: File\n    name: "
           "leader-migration-config\n",
           "");
  Classification result = ClassifyNode(fs, NodePaths{});
  EXPECT_EQ(result.state, NodeState::kInconsistent);
  EXPECT_THAT(result.problems, Contains(HasSubstr("is not inside any hostPath volume mounted into "
                                                  "the kube-controller-manager container")));
}

TEST(ClassifyTest, ConfigWithoutEnableFlagIsInconsistent) {
  MemoryFileSystem fs = NodeIn(NodeState::kPrepared);
  EditFile(fs, kKcm, "    - --enable-leader-migration\n", "");
  Classification result = ClassifyNode(fs, NodePaths{});
  EXPECT_EQ(result.state, NodeState::kInconsistent);
  EXPECT_THAT(result.problems, Contains(HasSubstr("silently ignores it")));
}

TEST(ClassifyTest, BackupCopyInManifestDirIsNamed) {
  MemoryFileSystem fs = NodeIn(NodeState::kInTree);
  fs.SetFile("/etc/kubernetes/manifests/kube-controller-manager.yaml.bak", *fs.ReadFile(kKcm));
  Classification result = ClassifyNode(fs, NodePaths{});
  EXPECT_EQ(result.state, NodeState::kInconsistent);
  EXPECT_THAT(
      result.problems,
      Contains(AllOf(HasSubstr("pod kube-system/kube-controller-manager is defined by 2 files"),
                     HasSubstr("/etc/kubernetes/manifests/kube-controller-manager.yaml.bak"),
                     HasSubstr("kubernetes/kubeadm#2823"))));
}

TEST(ClassifyTest, DotfilesInManifestDirAreIgnoredLikeTheKubeletDoes) {
  MemoryFileSystem fs = NodeIn(NodeState::kInTree);
  fs.SetFile("/etc/kubernetes/manifests/.kube-controller-manager.yaml.tmp", *fs.ReadFile(kKcm));
  fs.SetFile("/etc/kubernetes/manifests/.broken", "{{{");
  EXPECT_EQ(ClassifyNode(fs, NodePaths{}).state, NodeState::kInTree);
}

TEST(ClassifyTest, UnparseableManifestIsInconsistent) {
  MemoryFileSystem fs = NodeIn(NodeState::kInTree);
  fs.SetFile("/etc/kubernetes/manifests/notes.txt", "key: [unclosed\n");
  Classification result = ClassifyNode(fs, NodePaths{});
  EXPECT_EQ(result.state, NodeState::kInconsistent);
  EXPECT_THAT(result.problems, Contains(AllOf(HasSubstr("/etc/kubernetes/manifests/notes.txt:"),
                                              HasSubstr("whose name does not start with '.'"))));
}

TEST(ClassifyTest, CloudControllerManagerBesideInTreeControllerManagerIsInconsistent) {
  MemoryFileSystem fs = NodeIn(NodeState::kMigrated);
  std::string ccm = *fs.ReadFile(kCcm);
  MemoryFileSystem prepared = NodeIn(NodeState::kPrepared);
  prepared.SetFile(kCcm, ccm);
  Classification result = ClassifyNode(prepared, NodePaths{});
  EXPECT_EQ(result.state, NodeState::kInconsistent);
  EXPECT_THAT(result.problems, Contains(HasSubstr("still runs the in-tree aws provider")));
}

TEST(ClassifyTest, HalfDoneMoveIsInconsistentWithEveryReason) {
  MemoryFileSystem fs = NodeIn(NodeState::kPrepared);
  EditFile(fs, kApiserver, "--cloud-provider=aws", "--cloud-provider=external");
  EditFile(fs, kKubeletFlags, "--cloud-provider=aws", "--cloud-provider=external");
  Classification result = ClassifyNode(fs, NodePaths{});
  EXPECT_EQ(result.state, NodeState::kInconsistent);
  EXPECT_THAT(result.problems, Contains(HasSubstr("kube-apiserver has --cloud-provider=external")));
  EXPECT_THAT(result.problems, Contains(HasSubstr("the kubelet has --cloud-provider=external")));
}

TEST(ClassifyTest, ExternalControllerManagerWithoutCloudControllerManagerIsExternal) {
  // The downtime path's middle state: found so, with a warning that nothing runs the cloud
  // controllers (a migrated node whose cloud-controller-manager is gone looks the same).
  MemoryFileSystem fs = NodeIn(NodeState::kMigrated);
  fs.DeleteFile(kCcm);
  Classification result = ClassifyNode(fs, NodePaths{});
  EXPECT_EQ(result.state, NodeState::kExternal) << StrJoin(result.problems, "\n");
  EXPECT_THAT(result.warnings,
              Contains(HasSubstr("nothing on this node runs the cloud controllers")));
}

// The kubeadm fixture moved along the downtime path to `state` (in-tree, stopped, external or
// finalized) by the planner.
MemoryFileSystem DowntimeNodeIn(NodeState state) {
  MemoryFileSystem fs = LoadNode("kubeadm");
  if (state == NodeState::kInTree) return fs;
  for (NodeState step : {NodeState::kStopped, NodeState::kExternal, NodeState::kFinalized}) {
    absl::StatusOr<Plan> plan = PlanNode(fs, step, KubeadmSettings());
    EXPECT_TRUE(plan.ok()) << plan.status();
    if (!plan.ok()) break;
    ApplyPlan(*plan, fs);
    if (step == state) break;
  }
  return fs;
}

TEST(ClassifyTest, DowntimeStatesAreRecognised) {
  for (NodeState state : {NodeState::kStopped, NodeState::kExternal, NodeState::kFinalized}) {
    Classification result = ClassifyNode(DowntimeNodeIn(state), NodePaths{});
    EXPECT_EQ(result.state, state) << NodeStateName(state) << ": "
                                   << StrJoin(result.problems, "\n");
    EXPECT_THAT(result.problems, IsEmpty());
  }
  MemoryFileSystem stopped = DowntimeNodeIn(NodeState::kStopped);
  EXPECT_FALSE(stopped.ReadFile(kKcm).ok());
  Classification result = ClassifyNode(stopped, NodePaths{});
  ASSERT_TRUE(result.view.parked_controller_manager);
  EXPECT_EQ(result.view.parked_controller_manager->path, kParked);
  EXPECT_FALSE(result.view.controller_manager);
}

TEST(ClassifyTest, ParkedManifestBesideOneInTheManifestDirIsInconsistent) {
  for (NodeState state : {NodeState::kInTree, NodeState::kExternal, NodeState::kFinalized}) {
    MemoryFileSystem fs = DowntimeNodeIn(state);
    fs.SetFile(kParked, *LoadNode("kubeadm").ReadFile(kKcm));
    Classification result = ClassifyNode(fs, NodePaths{});
    EXPECT_EQ(result.state, NodeState::kInconsistent) << NodeStateName(state);
    EXPECT_THAT(result.problems, Contains(AllOf(HasSubstr(kParked), HasSubstr(kKcm),
                                                HasSubstr("is in the manifest directory"))))
        << NodeStateName(state);
  }
  // Also beside a prepared or migrated node.
  for (NodeState state : {NodeState::kPrepared, NodeState::kMigrated}) {
    MemoryFileSystem fs = NodeIn(state);
    fs.SetFile(kParked, *LoadNode("kubeadm").ReadFile(kKcm));
    Classification result = ClassifyNode(fs, NodePaths{});
    EXPECT_EQ(result.state, NodeState::kInconsistent) << NodeStateName(state);
    EXPECT_THAT(result.problems, Contains(HasSubstr(kParked))) << NodeStateName(state);
  }
}

TEST(ClassifyTest, ParkedManifestMustBeTheInTreeControllerManager) {
  MemoryFileSystem fs = DowntimeNodeIn(NodeState::kStopped);
  EditFile(fs, kParked, "--cloud-provider=aws", "--cloud-provider=external");
  Classification result = ClassifyNode(fs, NodePaths{});
  EXPECT_EQ(result.state, NodeState::kInconsistent);
  EXPECT_THAT(result.problems,
              Contains(AllOf(HasSubstr(kParked), HasSubstr("--cloud-provider=external"),
                             HasSubstr("only the in-tree (aws) kube-controller-manager"))));

  fs = DowntimeNodeIn(NodeState::kStopped);
  EditFile(fs, kParked, "    - --kubeconfig=",
           "    - --enable-leader-migration\n    - --kubeconfig=");
  result = ClassifyNode(fs, NodePaths{});
  EXPECT_EQ(result.state, NodeState::kInconsistent);
  EXPECT_THAT(result.problems,
              Contains(AllOf(HasSubstr(kParked), HasSubstr("--enable-leader-migration"))));

  fs = DowntimeNodeIn(NodeState::kStopped);
  fs.SetFile(kParked, "apiVersion: v1\nkind: Pod\nspec: [");
  result = ClassifyNode(fs, NodePaths{});
  EXPECT_EQ(result.state, NodeState::kInconsistent);
  EXPECT_THAT(result.problems, Contains(HasSubstr(kParked)));

  fs = DowntimeNodeIn(NodeState::kStopped);
  fs.SetFile(kParked, *fs.ReadFile(kApiserver));
  result = ClassifyNode(fs, NodePaths{});
  EXPECT_EQ(result.state, NodeState::kInconsistent);
  EXPECT_THAT(result.problems,
              Contains(AllOf(HasSubstr(kParked), HasSubstr("defines pod kube-apiserver"))));
}

TEST(ClassifyTest, StoppedNeedsEverythingElseInTree) {
  MemoryFileSystem fs = DowntimeNodeIn(NodeState::kStopped);
  EditFile(fs, kApiserver, "--cloud-provider=aws", "--cloud-provider=external");
  EditFile(fs, kKubeletFlags, "--cloud-provider=aws", "--cloud-provider=external");
  fs.SetFile(kCcm, *NodeIn(NodeState::kFinalized).ReadFile(kCcm));
  Classification result = ClassifyNode(fs, NodePaths{});
  EXPECT_EQ(result.state, NodeState::kInconsistent);
  EXPECT_THAT(result.problems,
              AllOf(Contains(AllOf(HasSubstr(kApiserver), HasSubstr(kParked))),
                    Contains(AllOf(HasSubstr(kKubeletFlags), HasSubstr(kParked))),
                    Contains(AllOf(HasSubstr(kCcm), HasSubstr("a cloud-controller-manager is "
                                                              "defined")))));
}

TEST(ClassifyTest, ExternalNeedsExternalApiserverAndKubeletAndNoLeaderMigration) {
  MemoryFileSystem fs = DowntimeNodeIn(NodeState::kExternal);
  EditFile(fs, kApiserver, "--cloud-provider=external", "--cloud-provider=aws");
  EditFile(fs, kKubeletFlags, "--cloud-provider=external", "--cloud-provider=aws");
  Classification result = ClassifyNode(fs, NodePaths{});
  EXPECT_EQ(result.state, NodeState::kInconsistent);
  EXPECT_THAT(result.problems,
              AllOf(Contains(HasSubstr("kube-apiserver must have --cloud-provider=external")),
                    Contains(HasSubstr("the kubelet must have --cloud-provider=external"))));

  fs = DowntimeNodeIn(NodeState::kExternal);
  EditFile(fs, kKcm, "    - --kubeconfig=", "    - --enable-leader-migration\n    - --kubeconfig=");
  result = ClassifyNode(fs, NodePaths{});
  EXPECT_EQ(result.state, NodeState::kInconsistent);
  EXPECT_THAT(result.problems, Contains(HasSubstr("MUST NOT take part in Leader Migration")));
}

TEST(ClassifyTest, MigratedNeedsExternalApiserverAndKubelet) {
  MemoryFileSystem fs = NodeIn(NodeState::kMigrated);
  EditFile(fs, kKubeletFlags, "--cloud-provider=external", "--cloud-provider=aws");
  Classification result = ClassifyNode(fs, NodePaths{});
  EXPECT_EQ(result.state, NodeState::kInconsistent);
  EXPECT_THAT(result.problems,
              Contains(HasSubstr("the kubelet must have --cloud-provider=external")));
}

TEST(ClassifyTest, FeatureGateRemovedIn127IsReported) {
  MemoryFileSystem fs = NodeIn(NodeState::kMigrated);
  EditFile(fs, kCcm, "    - --enable-leader-migration\n",
           "    - --enable-leader-migration\n    - "
           "--feature-gates=ControllerManagerLeaderMigration=true\n");
  Classification result = ClassifyNode(fs, NodePaths{});
  EXPECT_EQ(result.state, NodeState::kInconsistent);
  EXPECT_THAT(result.problems, Contains(HasSubstr("removed in 1.27")));
}

TEST(ClassifyTest, ConfigAssigningControllersToTheOtherManagerIsInconsistent) {
  MemoryFileSystem fs = NodeIn(NodeState::kMigrated);
  std::string config = *fs.ReadFile(kConfig);
  for (size_t at; (at = config.find("cloud-controller-manager")) != std::string::npos;) {
    config.replace(at, std::string("cloud-controller-manager").size(), "kube-controller-manager");
  }
  fs.SetFile(kConfig, config);
  Classification result = ClassifyNode(fs, NodePaths{});
  EXPECT_EQ(result.state, NodeState::kInconsistent);
  EXPECT_THAT(result.problems, Contains(AllOf(HasSubstr("/etc/leadermigration.conf"),
                                              HasSubstr("(read by cloud-controller-manager)"))));
}

TEST(ClassifyTest, DefaultConfigurationCountsAsPrepared) {
  MemoryFileSystem fs = NodeIn(NodeState::kInTree);
  EditFile(fs, kKcm, "    - --kubeconfig=", "    - --enable-leader-migration\n    - --kubeconfig=");
  Classification result = ClassifyNode(fs, NodePaths{});
  EXPECT_EQ(result.state, NodeState::kPrepared) << StrJoin(result.problems, "\n");
}

TEST(ClassifyTest, CloudControllerManagerWithoutLeaderElection) {
  MemoryFileSystem fs = NodeIn(NodeState::kFinalized);
  EditFile(fs, kCcm, "--leader-elect=true", "--leader-elect=false");
  Classification result = ClassifyNode(fs, NodePaths{});
  EXPECT_EQ(result.state, NodeState::kInconsistent);
  EXPECT_THAT(result.problems, Contains(HasSubstr("every replica runs every cloud controller")));
}

TEST(ClassifyTest, MissingControllerManagerIsInconsistent) {
  MemoryFileSystem fs = NodeIn(NodeState::kInTree);
  fs.DeleteFile(kKcm);
  Classification result = ClassifyNode(fs, NodePaths{});
  EXPECT_EQ(result.state, NodeState::kInconsistent);
  EXPECT_THAT(
      result.problems,
      Contains(HasSubstr("no kube-controller-manager manifest in /etc/kubernetes/manifests")));
}

TEST(ClassifyTest, LeftoverConfigIsOnlyAWarning) {
  MemoryFileSystem fs = NodeIn(NodeState::kInTree);
  fs.SetFile(kConfig, "anything");
  Classification result = ClassifyNode(fs, NodePaths{});
  EXPECT_EQ(result.state, NodeState::kInTree);
  EXPECT_THAT(result.warnings, Contains(HasSubstr("exists but no manager uses it")));
}

}  // namespace
}  // namespace handoff
