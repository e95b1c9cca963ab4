// The checks before `start` (rollout/preflight.h): each refusal alone, with its wording, and a
// cluster that passes them all.
#include "coordinator/rollout/preflight.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace handoff::rollout {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

// Three in-tree nodes on 1.26 with their agents, the leases held on cp-1, RBAC in place, a 1.27
// cloud-controller-manager image: every check passes.
PreflightInput Ready() {
  PreflightInput input;
  for (const char* name : {"cp-1", "cp-2", "cp-3"}) {
    NodeStatus node;
    node.name = name;
    node.state = NodeState::kInTree;
    node.connected = node.healthy = true;
    node.kube_controller_manager_version = "v1.26.9";
    input.nodes.push_back(node);
  }
  input.cluster_checked = true;
  input.rbac_ready = true;
  input.kube_controller_manager = {"cp-1.ec2.internal", "cp-1"};
  input.settings.ccm.image = "registry.k8s.io/provider-aws/cloud-controller-manager:v1.27.1";
  return input;
}

// "check: message" per problem.
std::vector<std::string> Problems(const PreflightInput& input) {
  std::vector<std::string> out;
  for (const PreflightProblem& problem : Preflight(input)) {
    out.push_back(problem.check + ": " + problem.message);
  }
  return out;
}

TEST(PreflightTest, AReadyClusterPasses) { EXPECT_THAT(Problems(Ready()), IsEmpty()); }

TEST(PreflightTest, EveryNodeNeedsAConnectedAgentThatReportedAConsistentNode) {
  PreflightInput input = Ready();
  input.nodes[0].connected = false;
  input.nodes[1].awaiting_hello = true;
  input.nodes[2].state = NodeState::kInconsistent;
  EXPECT_THAT(Problems(input),
              ElementsAre("agents: cp-1: no agent is connected; start handoff-agent on the node "
                          "(systemctl start handoff-agent)",
                          "agents: cp-2: its agent has not reported the node yet",
                          "agents: cp-3: inconsistent; `handoff-agent status` on the node lists "
                          "what to repair",
                          // cp-1 holds the lease and is not connected.
                          "leases: the kube-controller-manager's lease "
                          "(kube-system/kube-controller-manager) is held by a manager on cp-1, "
                          "which is not connected; the holder's node must be seen healthy before "
                          "anything moves"));
}

TEST(PreflightTest, AnUnfinishedTransactionMustBeRecoveredFirst) {
  PreflightInput input = Ready();
  input.nodes[1].unfinished_transactions = {"20261124T040000Z-in-tree-prepared-1a2b"};
  EXPECT_THAT(Problems(input),
              ElementsAre("transactions: cp-2: unfinished transaction "
                          "20261124T040000Z-in-tree-prepared-1a2b; run `handoff-agent recover` on "
                          "the node to settle it"));
}

TEST(PreflightTest, TheLeasesMustBeHeldByAHealthyManagerOnANodeOfTheRollout) {
  PreflightInput input = Ready();
  input.kube_controller_manager = {"", ""};
  EXPECT_THAT(Problems(input),
              ElementsAre("leases: the kube-controller-manager's lease "
                          "(kube-system/kube-controller-manager) is not held by any manager; wait "
                          "until one leads (a manager that just restarted takes it within a lease "
                          "duration)"));
  input.kube_controller_manager = {"ip-10-0-9-9", ""};
  EXPECT_THAT(Problems(input),
              ElementsAre("leases: the kube-controller-manager's lease "
                          "(kube-system/kube-controller-manager) is held by a manager on "
                          "ip-10-0-9-9, which is not a node of this rollout; list every "
                          "control-plane node in --nodes (or stop the manager there)"));
  input.kube_controller_manager = {"cp-1", "cp-1"};
  input.nodes[0].healthy = false;
  EXPECT_THAT(Problems(input),
              ElementsAre("leases: the kube-controller-manager's lease "
                          "(kube-system/kube-controller-manager) is held by a manager on cp-1, "
                          "which is not healthy; the holder's node must be seen healthy before "
                          "anything moves"));
}

TEST(PreflightTest, TheMigrationAndCloudControllerManagerLeasesOnceTheyAreInUse) {
  PreflightInput input = Ready();
  // Prepared nodes run Leader Migration: the migration lease must be held.
  for (NodeStatus& node : input.nodes) node.state = NodeState::kPrepared;
  EXPECT_THAT(Problems(input),
              ElementsAre("leases: the migration lease "
                          "(kube-system/cloud-provider-extraction-migration) is not held by any "
                          "manager; wait until one leads (a manager that just restarted takes it "
                          "within a lease duration)"));
  input.migration = {"cp-1", "cp-1"};
  EXPECT_THAT(Problems(input), IsEmpty());
  // A migrated node runs a cloud-controller-manager: its lease too.
  input.nodes[2].state = NodeState::kMigrated;
  input.nodes[2].kube_controller_manager_version = "v1.27.4";
  EXPECT_THAT(Problems(input),
              ElementsAre("leases: the cloud-controller-manager's lease "
                          "(kube-system/cloud-controller-manager) is not held by any manager; wait "
                          "until one leads (a manager that just restarted takes it within a lease "
                          "duration)"));
  input.cloud_controller_manager = {"cp-3", "cp-3"};
  EXPECT_THAT(Problems(input), IsEmpty());
}

TEST(PreflightTest, LeasesAndRbacAreNotCheckedWithoutACluster) {
  PreflightInput input = Ready();
  input.cluster_checked = false;
  input.rbac_ready = false;
  input.kube_controller_manager = {"", ""};
  EXPECT_THAT(Problems(input), IsEmpty());
  input.cluster_checked = true;
  EXPECT_THAT(Problems(input).back(),
              "rbac: the migration-lease RBAC is not in place: run `handoffctl rbac apply` (both "
              "managers must be allowed to use the migration lease)");
}

TEST(PreflightTest, TheCloudControllerManagerIsOneMinorVersionAfterTheKubeControllerManager) {
  PreflightInput input = Ready();
  input.settings.ccm.image = "registry.k8s.io/provider-aws/cloud-controller-manager:v1.28.2";
  EXPECT_THAT(Problems(input),
              ElementsAre("image: the cloud-controller-manager is v1.28.2 "
                          "(registry.k8s.io/provider-aws/cloud-controller-manager:v1.28.2) but the "
                          "kube-controller-manager on cp-1, cp-2, cp-3 is v1.26.9: Leader "
                          "Migration moves the controllers to the next minor version only; use a "
                          "cloud-controller-manager v1.27.x image"));
  // Untagged: the settings' kubernetesVersion stands for it.
  input.settings.ccm.image = "registry.example/ccm@sha256:0123";
  input.settings.k8s_version = *KubeVersion::Parse("v1.27.4");
  EXPECT_THAT(Problems(input), IsEmpty());
  input.settings.k8s_version.reset();
  EXPECT_THAT(Problems(input),
              ElementsAre("image: the cloud-controller-manager image "
                          "registry.example/ccm@sha256:0123 names no version and the settings no "
                          "kubernetesVersion; set one"));
  input.settings.ccm.image.clear();
  EXPECT_THAT(Problems(input),
              ElementsAre("image: the settings name no cloud-controller-manager image "
                          "(cloudControllerManager.image); set it before starting"));
  // A kube-controller-manager whose image names no version.
  input = Ready();
  input.nodes[1].kube_controller_manager_version.clear();
  EXPECT_THAT(Problems(input),
              ElementsAre("image: cp-2: its kube-controller-manager's image names no Kubernetes "
                          "version (tag it vX.Y.Z): the cloud-controller-manager's version and "
                          "the Leader Migration file depend on it"));
}

TEST(PreflightTest, TheLeaderMigrationFilesLintCleanForTheManagerAndVersionReadingThem) {
  PreflightInput input = Ready();
  EXPECT_THAT(Problems(input), IsEmpty());
  // A lease name no Lease can have: both files name it.
  input.settings.leader_name = "Not_A_Lease";
  const std::vector<std::string> problems = Problems(input);
  ASSERT_EQ(problems.size(), 2u);
  EXPECT_THAT(problems[0], ::testing::StartsWith(
                               "leader-migration: /etc/leadermigration.conf for the "
                               "kube-controller-manager v1.26.9 (prepared nodes)"));
  EXPECT_THAT(problems[1], ::testing::StartsWith(
                               "leader-migration: /etc/leadermigration.conf for the "
                               "cloud-controller-manager v1.27.1 (migrated nodes)"));
}

TEST(PreflightTest, TheDowntimeStrategyNeedsNeitherTheMigrationLeaseRbacNorTheLeaderMigrationFiles) {
  PreflightInput input = Ready();
  input.rbac_ready = false;
  input.settings.leader_name = "Not_A_Lease";
  ASSERT_EQ(Problems(input).size(), 3u);  // rbac and both Leader Migration files
  input.downtime = true;
  EXPECT_THAT(Problems(input), IsEmpty());
  // The rest still holds: the image, the agents.
  input.settings.ccm.image = "registry.k8s.io/provider-aws/cloud-controller-manager:v1.28.0";
  input.nodes[1].connected = false;
  const std::vector<std::string> problems = Problems(input);
  ASSERT_EQ(problems.size(), 2u);
  EXPECT_THAT(problems[0], ::testing::StartsWith("agents: cp-2: no agent is connected"));
  EXPECT_THAT(problems[1], ::testing::StartsWith("image: "));
}

TEST(PreflightTest, TheDescriptionListsEveryProblemWithItsCheck) {
  EXPECT_EQ(DescribePreflight({{"agents", "cp-1: no agent"}, {"rbac", "not in place"}}),
            "the preflight checks refuse to start the rollout (nothing was moved):\n"
            "  [agents] cp-1: no agent\n"
            "  [rbac] not in place");
}

TEST(PreflightTest, SettingsThatDoNotParseComeFirstAndTheChecksReadingThemAreLeftOut) {
  PreflightInput input = Ready();
  input.settings.ccm.image = "";  // would be an image problem, if the settings were read
  input.nodes[1].unfinished_transactions = {"tx-7"};
  const std::vector<PreflightProblem> problems = Preflight(input, "{ not: [yaml", "--settings");
  ASSERT_EQ(problems.size(), 2u);
  EXPECT_EQ(problems[0].check, "settings");
  EXPECT_THAT(problems[0].message, ::testing::HasSubstr("--settings"));
  EXPECT_EQ(problems[1].check, "transactions");
}

TEST(PreflightTest, OnlyTheChecksSettingsAndAllMayBeIgnored) {
  EXPECT_TRUE(CheckIgnorable({}).ok());
  EXPECT_TRUE(CheckIgnorable({"agents", "transactions", "leases", "rbac", "image",
                              "leader-migration", "settings", "all"})
                  .ok());
  // Those of handoffctl preflight the coordinator also makes.
  EXPECT_TRUE(CheckIgnorable({"node-names", "stray-files", "ebs-csi", "ecr-credentials",
                              "cloud-routes", "leader-elect", "control-plane", "cluster-tag"})
                  .ok());
  // The coordinator's own check of the workers.
  EXPECT_TRUE(CheckIgnorable({"worker-agents"}).ok());
  absl::Status unknown = CheckIgnorable({"rbac", "lease"});
  EXPECT_EQ(unknown.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(unknown.message(),
            "no preflight check is called \"lease\"; the checks are agents, cloud-routes, "
            "cluster-tag, control-plane, ebs-csi, ecr-credentials, image, leader-elect, "
            "leader-migration, "
            "leases, node-names, rbac, settings, stray-files, transactions, worker-agents (or "
            "all)");
}

TEST(PreflightTest, TheIgnoredChecksDoNotRefuseAndAllIgnoresEveryOne) {
  const std::vector<PreflightProblem> problems = {
      {"agents", "cp-1 away"}, {"rbac", "not in place"}, {"rbac", "again"}};
  PreflightVerdict verdict = Judge(problems, {"rbac"});
  ASSERT_EQ(verdict.refusing.size(), 1u);
  EXPECT_EQ(verdict.refusing[0].message, "cp-1 away");
  ASSERT_EQ(verdict.ignored.size(), 2u);
  EXPECT_EQ(verdict.ignored[1].message, "again");
  verdict = Judge(problems, {"all"});
  EXPECT_THAT(verdict.refusing, IsEmpty());
  EXPECT_EQ(verdict.ignored.size(), 3u);
}

}  // namespace
}  // namespace handoff::rollout
