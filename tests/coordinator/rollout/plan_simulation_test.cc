// The moves a goal would take (rollout/plan_simulation.h): each goal's path on three nodes,
// rollback and finalize included; a node whose agent is away is still planned; the move in flight
// counts as done; the lease holders order a phase; an inconsistent node blocks the plan.
#include "coordinator/rollout/plan_simulation.h"

#include <optional>
#include <string>
#include <vector>

#include "common/base/strings.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/coordinator/rollout/engine_nodes.h"

namespace handoff::rollout {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::StartsWith;

using testing::kFinalized;
using testing::kInconsistent;
using testing::kInTree;
using testing::kMigrated;
using testing::kPrepared;
using testing::Nodes;

// "node:from→to" per move.
std::vector<std::string> Moves(const SimulatedRollout& simulated) {
  std::vector<std::string> out;
  for (const Move& move : simulated.moves) {
    out.push_back(StrCat(move.node, ":", NodeStateName(move.from), "→", NodeStateName(move.to)));
  }
  return out;
}

SimulatedRollout Simulate(const std::vector<NodeStatus>& nodes, NodeState goal,
                          const LeaseHolders& holders = {},
                          const std::optional<Move>& in_flight = std::nullopt) {
  return SimulateRollout(nodes, goal, holders, in_flight);
}

TEST(SimulateRolloutTest, TheDowntimeStrategyPlansItsOwnPathWithTheMoveInFlightDone) {
  const Move in_flight{"a", kInTree, NodeState::kStopped};
  SimulatedRollout simulated = SimulateRollout(Nodes({kInTree, kInTree}), kFinalized, {},
                                               in_flight, Strategy::kDowntime);
  EXPECT_THAT(Moves(simulated),
              ElementsAre("b:in-tree→stopped", "a:stopped→external", "b:stopped→external",
                          "a:external→finalized", "b:external→finalized"));
  EXPECT_EQ(simulated.blocked_reason, "");
  EXPECT_THAT(simulated.ChainOf("b"),
              ElementsAre(NodeState::kStopped, NodeState::kExternal, kFinalized));
  // The same nodes by Leader Migration: a stopped node blocks it, named.
  simulated = SimulateRollout(Nodes({NodeState::kStopped, kInTree}), kFinalized, {}, std::nullopt,
                              Strategy::kLeaderMigration);
  EXPECT_THAT(simulated.moves, IsEmpty());
  EXPECT_THAT(simulated.blocked_reason, StartsWith("a (stopped) on the downtime path"));
}

TEST(SimulateRolloutTest, StartPreparesAllThenMigratesOneByOne) {
  SimulatedRollout simulated = Simulate(Nodes({kInTree, kInTree, kInTree}), kMigrated);
  EXPECT_THAT(Moves(simulated),
              ElementsAre("a:in-tree→prepared", "b:in-tree→prepared", "c:in-tree→prepared",
                          "a:prepared→migrated", "b:prepared→migrated", "c:prepared→migrated"));
  EXPECT_EQ(simulated.blocked_reason, "");
  EXPECT_THAT(simulated.ChainOf("b"), ElementsAre(kPrepared, kMigrated));
}

TEST(SimulateRolloutTest, FinalizeFinalizesEveryMigratedNode) {
  SimulatedRollout simulated = Simulate(Nodes({kFinalized, kMigrated, kMigrated}), kFinalized);
  EXPECT_THAT(Moves(simulated), ElementsAre("b:migrated→finalized", "c:migrated→finalized"));
  EXPECT_THAT(simulated.ChainOf("a"), IsEmpty());
}

TEST(SimulateRolloutTest, RollbackWalksBackInReverseNodeOrder) {
  EXPECT_THAT(Moves(Simulate(Nodes({kMigrated, kMigrated, kPrepared}), kInTree)),
              ElementsAre("b:migrated→prepared", "a:migrated→prepared", "c:prepared→in-tree",
                          "b:prepared→in-tree", "a:prepared→in-tree"));
  // From finalized: Leader Migration first comes back on every node, then each goes to prepared.
  EXPECT_THAT(Moves(Simulate(Nodes({kFinalized, kFinalized, kFinalized}), kPrepared)),
              ElementsAre("c:finalized→migrated", "b:finalized→migrated", "a:finalized→migrated",
                          "c:migrated→prepared", "b:migrated→prepared", "a:migrated→prepared"));
}

TEST(SimulateRolloutTest, AGoalAlreadyReachedHasNoMoves) {
  SimulatedRollout simulated = Simulate(Nodes({kMigrated, kMigrated, kMigrated}), kMigrated);
  EXPECT_THAT(simulated.moves, IsEmpty());
  EXPECT_EQ(simulated.blocked_reason, "");
}

TEST(SimulateRolloutTest, ANodeWhoseAgentIsAwayIsPlannedAsIfItStayed) {
  std::vector<NodeStatus> nodes = Nodes({kPrepared, kPrepared, kPrepared});
  nodes[1].connected = false;
  nodes[1].healthy = false;
  nodes[2].awaiting_hello = true;
  EXPECT_THAT(Moves(Simulate(nodes, kMigrated)),
              ElementsAre("a:prepared→migrated", "b:prepared→migrated", "c:prepared→migrated"));
}

TEST(SimulateRolloutTest, TheMoveInFlightCountsAsDone) {
  std::vector<NodeStatus> nodes = Nodes({kInTree, kInTree, kInTree});
  nodes[0].in_transition = true;
  SimulatedRollout simulated = Simulate(nodes, kMigrated, {}, Move{"a", kInTree, kPrepared});
  EXPECT_THAT(Moves(simulated),
              ElementsAre("b:in-tree→prepared", "c:in-tree→prepared", "a:prepared→migrated",
                          "b:prepared→migrated", "c:prepared→migrated"));
  EXPECT_THAT(simulated.ChainOf("a"), ElementsAre(kMigrated));
}

TEST(SimulateRolloutTest, TheLeaseHoldersMoveLastInEachPhase) {
  LeaseHolders holders;
  holders.kube_controller_manager = "a";  // in-tree: it runs the cloud controllers
  EXPECT_THAT(Moves(Simulate(Nodes({kInTree, kInTree, kInTree}), kPrepared, holders)),
              ElementsAre("b:in-tree→prepared", "c:in-tree→prepared", "a:in-tree→prepared"));
}

TEST(SimulateRolloutTest, AnInconsistentNodeBlocksThePlanWithTheEnginesReason) {
  SimulatedRollout simulated = Simulate(Nodes({kInTree, kInconsistent, kInTree}), kMigrated);
  EXPECT_THAT(simulated.moves, IsEmpty());
  EXPECT_THAT(simulated.blocked_reason, StartsWith("inconsistent: node b is inconsistent"));
}

TEST(SimulateRolloutTest, AGoalThatIsNoStateIsBlocked) {
  SimulatedRollout simulated = Simulate(Nodes({kInTree, kInTree}), kInconsistent);
  EXPECT_THAT(simulated.moves, IsEmpty());
  EXPECT_EQ(simulated.blocked_reason, "the goal is not a node state");
}

}  // namespace
}  // namespace handoff::rollout
