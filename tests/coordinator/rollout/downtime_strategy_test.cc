// The rollout engine's downtime strategy (rollout_engine.h): AWS's "when downtime is acceptable"
// path, in-tree → stopped → external → finalized and back, phase by phase across the nodes, with
// the D rules, and a node of the other strategy's path refused with its name.
#include <string>
#include <vector>

#include "common/base/strings.h"
#include "coordinator/rollout/rollout_engine.h"
#include "coordinator/rollout/rollout_progress.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/coordinator/rollout/engine_nodes.h"

namespace handoff::rollout {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::StartsWith;

using Kind = Decision::Kind;
using testing::kFinalized;
using testing::kInTree;
using testing::kMigrated;
using testing::kPrepared;
using testing::Nodes;

constexpr NodeState kStopped = NodeState::kStopped;
constexpr NodeState kExternal = NodeState::kExternal;

ClusterFacts NoFacts() { return ClusterFacts{}; }

// Which managers run the cloud controllers, from the states alone: an in-tree
// kube-controller-manager without Leader Migration, a cloud-controller-manager without it.
bool TwoKindsRunTheCloudControllers(const std::vector<NodeStatus>& nodes) {
  bool in_tree = false;
  bool finalized = false;
  for (const NodeStatus& n : nodes) {
    in_tree = in_tree || n.state == NodeState::kInTree;
    finalized = finalized || n.state == NodeState::kFinalized;
  }
  return in_tree && finalized;
}

// Drives the rollout with every move succeeding (engine_nodes.h), checking after each move that
// an in-tree manager never runs beside a cloud-controller-manager without Leader Migration.
std::vector<std::string> Drive(std::vector<NodeStatus> nodes, NodeState target,
                               Strategy strategy = Strategy::kDowntime,
                               const ClusterFacts& facts = NoFacts()) {
  return testing::Drive(std::move(nodes), Goal{target, strategy}, facts,
                        [](const std::vector<NodeStatus>& now) {
                          EXPECT_FALSE(TwoKindsRunTheCloudControllers(now));
                        });
}

std::string Refusal(const std::vector<NodeStatus>& nodes, const std::string& node,
                    NodeState to) {
  return std::string(CheckMove(nodes, node, to, NoFacts(), Control{}).message());
}

TEST(DowntimeStrategyTest, StopsEveryManagerThenSwitchesEveryNodeThenStartsEveryCcm) {
  // No cluster fact is needed: no lease is shared and no RBAC for the migration lease is used.
  EXPECT_THAT(Drive(Nodes({kInTree, kInTree, kInTree}), kFinalized),
              ElementsAre("a:stopped", "b:stopped", "c:stopped", "a:external", "b:external",
                          "c:external", "a:finalized", "b:finalized", "c:finalized", "done"));
}

TEST(DowntimeStrategyTest, TheKubeControllerManagersLeaseHolderStopsLast) {
  std::vector<NodeStatus> nodes = Nodes({kInTree, kInTree, kInTree});
  ClusterFacts facts;
  facts.holders.kube_controller_manager = "a";
  // (The facts stay as given here: a still counts as holding a lease in the later phases.)
  EXPECT_THAT(Drive(nodes, kFinalized, Strategy::kDowntime, facts),
              ElementsAre("b:stopped", "c:stopped", "a:stopped", "b:external", "c:external",
                          "a:external", "b:finalized", "c:finalized", "a:finalized", "done"));
}

TEST(DowntimeStrategyTest, RollsBackAlongItsOwnPathInReverseOrder) {
  EXPECT_THAT(Drive(Nodes({kFinalized, kFinalized, kFinalized}), kInTree),
              ElementsAre("c:external", "b:external", "a:external", "c:stopped", "b:stopped",
                          "a:stopped", "c:in-tree", "b:in-tree", "a:in-tree", "done"));
}

TEST(DowntimeStrategyTest, ResumesFromAnyMixOfItsOwnStates) {
  EXPECT_THAT(Drive(Nodes({kStopped, kInTree, kExternal}), kFinalized),
              ElementsAre("b:stopped", "a:external", "b:external", "a:finalized", "b:finalized",
                          "c:finalized", "done"));
  EXPECT_THAT(Drive(Nodes({kExternal, kFinalized, kStopped}), kInTree),
              ElementsAre("b:external", "b:stopped", "a:stopped", "c:in-tree", "b:in-tree",
                          "a:in-tree", "done"));
}

TEST(DowntimeStrategyTest, D1NoNodeSwitchesWhileAnyManagerStillRunsInTree) {
  EXPECT_EQ(Refusal(Nodes({kStopped, kInTree, kStopped}), "a", kExternal),
            "D1: b (in-tree) not stopped; every kube-controller-manager is stopped before node a "
            "switches to external");
  EXPECT_THAT(Refusal(Nodes({kStopped, kPrepared, kMigrated}), "a", kExternal),
              StartsWith("D1: b (prepared), c (migrated) not stopped"));
  EXPECT_TRUE(CheckMove(Nodes({kStopped, kStopped, kExternal}), "a", kExternal, NoFacts(),
                        Control{})
                  .ok());
}

TEST(DowntimeStrategyTest, D2NoCloudControllerManagerStartsWhileANodeIsStopped) {
  EXPECT_EQ(Refusal(Nodes({kExternal, kStopped, kExternal}), "a", kFinalized),
            "D2: node b is stopped (its parked kube-controller-manager is in-tree); every node is "
            "external before a cloud-controller-manager starts on a");
  // R2 still holds: an in-tree manager left anywhere.
  EXPECT_THAT(Refusal(Nodes({kExternal, kInTree, kExternal}), "a", kFinalized),
              StartsWith("R2: b (in-tree)"));
}

TEST(DowntimeStrategyTest, D3NoManagerParkedAgainWhileACloudControllerManagerRuns) {
  EXPECT_EQ(Refusal(Nodes({kExternal, kFinalized, kExternal}), "a", kStopped),
            "D3: node b still runs a cloud-controller-manager; every one is removed before node "
            "a goes back to stopped");
}

TEST(DowntimeStrategyTest, D4NoInTreeManagerReturnsWhileANodeIsExternal) {
  EXPECT_EQ(Refusal(Nodes({kStopped, kExternal, kStopped}), "a", kInTree),
            "D4: node b is external; every node is stopped before node a runs its in-tree "
            "manager again");
  EXPECT_THAT(Refusal(Nodes({kStopped, kFinalized, kStopped}), "a", kInTree),
              HasSubstr("R3: b (finalized)"));
}

TEST(DowntimeStrategyTest, StoppedAndExternalAreOnlyOneStepFromTheirNeighbours) {
  EXPECT_THAT(Refusal(Nodes({kInTree, kInTree}), "a", kExternal), StartsWith("not one step"));
  EXPECT_THAT(Refusal(Nodes({kStopped, kStopped}), "a", kPrepared), StartsWith("not one step"));
  EXPECT_THAT(Refusal(Nodes({kStopped, kStopped}), "a", kMigrated), StartsWith("not one step"));
  EXPECT_THAT(Refusal(Nodes({kExternal, kExternal}), "a", kPrepared), StartsWith("not one step"));
  EXPECT_THAT(Refusal(Nodes({kPrepared, kPrepared}), "a", kStopped), StartsWith("not one step"));
  EXPECT_TRUE(AreAdjacent(kFinalized, kExternal));
  EXPECT_TRUE(IsForward(kStopped, kExternal));
  EXPECT_FALSE(IsForward(kExternal, kStopped));
  // The paths' middle states differ only by a cloud-controller-manager with Leader Migration.
  EXPECT_TRUE(AreAdjacent(kExternal, kMigrated));
  EXPECT_TRUE(AreAdjacent(kMigrated, kExternal));
  EXPECT_TRUE(IsForward(kExternal, kMigrated));
  EXPECT_FALSE(IsForward(kMigrated, kExternal));
}

TEST(DowntimeStrategyTest, ANodeOnTheLeaderMigrationPathIsNamedAndNothingMoves) {
  EXPECT_THAT(Drive(Nodes({kInTree, kPrepared, kInTree}), kFinalized),
              ElementsAre("stuck: b (prepared) on the Leader Migration path; the downtime "
                          "strategy moves nodes between in-tree, stopped, external and finalized: "
                          "roll them back to in-tree first, or go on with Leader Migration"));
}

TEST(DowntimeStrategyTest, LeaderMigrationNamesANodeOnTheDowntimePath) {
  EXPECT_THAT(Drive(Nodes({kInTree, kStopped, kInTree}), kMigrated, Strategy::kLeaderMigration),
              ElementsAre(StartsWith("stuck: b (stopped) on the downtime path; only the downtime "
                                     "strategy moves such a node")));
}

TEST(DowntimeStrategyTest, HasNoGoalButFinalizedAndInTree) {
  EXPECT_THAT(Drive(Nodes({kInTree, kInTree}), kMigrated),
              ElementsAre("stuck: the downtime strategy goes to finalized or back to in-tree, not "
                          "to migrated"));
  // Done is a fact about the nodes, whatever the strategy.
  EXPECT_THAT(Drive(Nodes({kFinalized, kFinalized}), kFinalized), ElementsAre("done"));
}

TEST(DowntimeStrategyTest, ThePhasesNameTheDowntimeMoves) {
  const Decision waiting{};
  EXPECT_EQ(PhaseOf(kFinalized, Control{}, kStopped, waiting, kInTree), Phase::kStopping);
  EXPECT_EQ(PhaseOf(kFinalized, Control{}, kExternal, waiting, kStopped), Phase::kSwitching);
  EXPECT_EQ(PhaseOf(kFinalized, Control{}, kFinalized, waiting, kExternal), Phase::kStarting);
  EXPECT_EQ(PhaseOf(kFinalized, Control{}, kFinalized, waiting, kMigrated), Phase::kFinalizing);
  EXPECT_EQ(PhaseOf(kInTree, Control{}, kStopped, waiting, kExternal), Phase::kRollingBack);
  // Progress counts steps along either path.
  std::optional<Steps> steps = StepsOf(kInTree, kExternal, kFinalized);
  ASSERT_TRUE(steps.has_value());
  EXPECT_EQ(steps->done, 2);
  EXPECT_EQ(steps->total, 3);
}

TEST(DowntimeStrategyTest, StrategyNames) {
  EXPECT_EQ(StrategyName(Strategy::kDowntime), "downtime");
  EXPECT_EQ(StrategyName(Strategy::kLeaderMigration), "leader-migration");
}

}  // namespace
}  // namespace handoff::rollout
