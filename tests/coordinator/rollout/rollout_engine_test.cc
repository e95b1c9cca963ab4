// Unit tests of the rollout engine: each rule of rollout_engine.h (R1–R5) and each goal's path,
// on three nodes, with exact decisions and the reasons' wording.
#include "coordinator/rollout/rollout_engine.h"

#include <string>
#include <vector>

#include "common/base/strings.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/coordinator/rollout/engine_nodes.h"

namespace handoff::rollout {
namespace {

using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;
using ::testing::StartsWith;

using Kind = Decision::Kind;
using testing::GoodFacts;
using testing::kFinalized;
using testing::kInconsistent;
using testing::kInTree;
using testing::kMigrated;
using testing::kPrepared;
using testing::Nodes;

ClusterFacts NoLease() {
  ClusterFacts facts = GoodFacts();
  facts.lease_held_by_healthy_manager = false;
  return facts;
}

std::string Message(const absl::Status& status) { return std::string(status.message()); }

std::vector<std::string> Drive(std::vector<NodeStatus> nodes, NodeState goal,
                               const ClusterFacts& facts = GoodFacts()) {
  return testing::Drive(std::move(nodes), Goal{goal}, facts);
}

// --- CheckMove: arguments and adjacency ---

TEST(CheckMoveTest, AllowsInTreeToPreparedWithoutAnyClusterFact) {
  EXPECT_TRUE(
      CheckMove(Nodes({kInTree, kInTree, kInTree}), "a", kPrepared, ClusterFacts{}, Control{})
          .ok());
}

TEST(CheckMoveTest, RefusesAMoveThatIsNotOneStep) {
  absl::Status skip =
      CheckMove(Nodes({kInTree, kInTree, kInTree}), "a", kMigrated, GoodFacts(), {});
  EXPECT_EQ(skip.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(Message(skip), AllOf(StartsWith("not one step: node a is in-tree and migrated"),
                                   HasSubstr("in-tree ⇄ prepared ⇄ migrated ⇄ finalized")));
  absl::Status stay =
      CheckMove(Nodes({kPrepared, kPrepared, kPrepared}), "b", kPrepared, GoodFacts(), {});
  EXPECT_THAT(Message(stay), StartsWith("not one step: node b is prepared"));
}

TEST(CheckMoveTest, RejectsUnknownNodesBadTargetsAndDuplicateNames) {
  std::vector<NodeStatus> nodes = Nodes({kInTree, kInTree, kInTree});
  absl::Status unknown = CheckMove(nodes, "z", kPrepared, GoodFacts(), {});
  EXPECT_EQ(unknown.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(Message(unknown), HasSubstr("no node named z"));
  absl::Status target = CheckMove(nodes, "a", kInconsistent, GoodFacts(), {});
  EXPECT_EQ(target.code(), absl::StatusCode::kInvalidArgument);
  nodes[2].name = "a";
  absl::Status twice = CheckMove(nodes, "b", kPrepared, GoodFacts(), {});
  EXPECT_EQ(twice.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(Message(twice), HasSubstr("node a is listed twice"));
}

TEST(CheckMoveTest, RefusesToMoveAnInconsistentNodeOrAnyNodeBesideOne) {
  std::vector<NodeStatus> nodes = Nodes({kInTree, kInconsistent, kInTree});
  absl::Status beside = CheckMove(nodes, "a", kPrepared, GoodFacts(), {});
  EXPECT_EQ(beside.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(Message(beside), StartsWith("inconsistent: node b is inconsistent"));
  EXPECT_THAT(Message(CheckMove(nodes, "b", kPrepared, GoodFacts(), {})),
              StartsWith("inconsistent: node b"));
}

// --- R5 and pause ---

TEST(CheckMoveTest, R5HaltedRefusesEveryMoveWithTheReason) {
  Control control;
  control.halted = true;
  control.halt_reason = "node b failed verification of migrated";
  absl::Status status =
      CheckMove(Nodes({kInTree, kInTree, kInTree}), "a", kPrepared, GoodFacts(), control);
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(Message(status), AllOf(StartsWith("R5: the rollout is halted"),
                                     HasSubstr("node b failed verification of migrated"),
                                     HasSubstr("only the operator can resume it")));
}

TEST(CheckMoveTest, PausedRefusesEveryMove) {
  Control control;
  control.paused = true;
  EXPECT_THAT(Message(CheckMove(Nodes({kInTree}), "a", kPrepared, GoodFacts(), control)),
              StartsWith("paused:"));
}

// --- R4 ---

TEST(CheckMoveTest, R4RefusesWhileAnotherNodeIsInTransition) {
  std::vector<NodeStatus> nodes = Nodes({kInTree, kPrepared, kInTree});
  nodes[1].in_transition = true;
  EXPECT_THAT(Message(CheckMove(nodes, "c", kPrepared, GoodFacts(), {})),
              StartsWith("R4: node b is in transition"));
}

TEST(CheckMoveTest, R4NamesEveryNodeInTransition) {
  // Never produced by the engine, but the coordinator's records might say so after a crash.
  std::vector<NodeStatus> nodes = Nodes({kPrepared, kPrepared, kInTree});
  nodes[0].in_transition = true;
  nodes[1].in_transition = true;
  EXPECT_THAT(Message(CheckMove(nodes, "c", kPrepared, GoodFacts(), {})),
              StartsWith("R4: nodes a, b are in transition"));
}

TEST(CheckMoveTest, R4RefusesWhileAnyNodeIsNotVerifiedHealthy) {
  std::vector<NodeStatus> nodes = Nodes({kPrepared, kPrepared, kPrepared});
  nodes[1].healthy = false;
  nodes[2].healthy = false;
  EXPECT_THAT(Message(CheckMove(nodes, "a", kMigrated, GoodFacts(), {})),
              StartsWith("R4: nodes b, c are not verified healthy"));
}

TEST(CheckMoveTest, R4TheMigrationLeaseMustBeHeldOnceAnotherNodeIsMigrated) {
  // The first cloud-controller-manager starts without a lease holder to ask for.
  EXPECT_TRUE(
      CheckMove(Nodes({kPrepared, kPrepared, kPrepared}), "a", kMigrated, NoLease(), {}).ok());
  absl::Status second =
      CheckMove(Nodes({kMigrated, kPrepared, kPrepared}), "b", kMigrated, NoLease(), {});
  EXPECT_THAT(Message(second), StartsWith("R4: the migration lease is not held by a healthy "
                                          "manager while node a is migrated"));
  EXPECT_TRUE(
      CheckMove(Nodes({kMigrated, kPrepared, kPrepared}), "b", kMigrated, GoodFacts(), {}).ok());
  // Finalizing while others still take part in Leader Migration also needs a holder...
  EXPECT_THAT(
      Message(CheckMove(Nodes({kMigrated, kMigrated, kFinalized}), "a", kFinalized, NoLease(), {})),
      StartsWith("R4: the migration lease"));
  // ...but not for the last one: finalized nodes do not compete for the lease.
  EXPECT_TRUE(
      CheckMove(Nodes({kMigrated, kFinalized, kFinalized}), "a", kFinalized, NoLease(), {}).ok());
  // Nor to re-enable Leader Migration on the first node of an all-finalized cluster.
  EXPECT_TRUE(
      CheckMove(Nodes({kFinalized, kFinalized, kFinalized}), "c", kMigrated, NoLease(), {}).ok());
}

TEST(CheckMoveTest, R4MigratedBackToPreparedNeedsTheLeaseOnlyWhileAnotherNodeIsMigrated) {
  EXPECT_TRUE(
      CheckMove(Nodes({kMigrated, kMigrated, kMigrated}), "c", kPrepared, GoodFacts(), {}).ok());
  EXPECT_THAT(
      Message(CheckMove(Nodes({kMigrated, kMigrated, kMigrated}), "c", kPrepared, NoLease(), {})),
      StartsWith("R4: the migration lease is not held by a healthy manager while nodes a, b are "
                 "migrated"));
  EXPECT_TRUE(
      CheckMove(Nodes({kPrepared, kPrepared, kMigrated}), "c", kPrepared, NoLease(), {}).ok());
}

TEST(CheckMoveTest, TheMovingNodeMustBeConnected) {
  std::vector<NodeStatus> nodes = Nodes({kInTree, kInTree, kInTree});
  nodes[0].connected = false;
  EXPECT_THAT(Message(CheckMove(nodes, "a", kPrepared, GoodFacts(), {})),
              StartsWith("disconnected: node a's agent is not connected"));
  // Another node's agent being away does not matter outside R1.
  EXPECT_TRUE(CheckMove(nodes, "b", kPrepared, GoodFacts(), {}).ok());
}

// --- R1 ---

TEST(CheckMoveTest, R1EveryOtherNodeNotMigratedMustBePrepared) {
  absl::Status status =
      CheckMove(Nodes({kPrepared, kInTree, kPrepared}), "a", kMigrated, GoodFacts(), {});
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(Message(status), AllOf(StartsWith("R1: b (in-tree) not prepared"),
                                     HasSubstr("before a cloud-controller-manager starts on a")));
}

TEST(CheckMoveTest, R1EveryOtherPreparedNodeMustBeConnected) {
  std::vector<NodeStatus> nodes = Nodes({kMigrated, kPrepared, kPrepared});
  nodes[2].connected = false;
  EXPECT_THAT(Message(CheckMove(nodes, "b", kMigrated, GoodFacts(), {})),
              StartsWith("R1: prepared node c is not connected"));
  // A migrated node's agent may be away: its state cannot change without a move.
  nodes = Nodes({kMigrated, kPrepared, kPrepared});
  nodes[0].connected = false;
  EXPECT_TRUE(CheckMove(nodes, "b", kMigrated, GoodFacts(), {}).ok());
}

TEST(CheckMoveTest, R1NeedsTheMigrationLeaseRbacIncludingToReenableMigration) {
  ClusterFacts no_rbac = GoodFacts();
  no_rbac.rbac_ready = false;
  EXPECT_THAT(
      Message(CheckMove(Nodes({kPrepared, kPrepared, kPrepared}), "a", kMigrated, no_rbac, {})),
      AllOf(StartsWith("R1: the migration-lease RBAC is not in place"),
            HasSubstr("handoffctl rbac apply")));
  EXPECT_THAT(
      Message(CheckMove(Nodes({kMigrated, kFinalized, kFinalized}), "c", kMigrated, no_rbac, {})),
      StartsWith("R1: the migration-lease RBAC"));
  // Moves that start no Leader Migration participant do not need it.
  EXPECT_TRUE(
      CheckMove(Nodes({kMigrated, kMigrated, kMigrated}), "a", kFinalized, no_rbac, {}).ok());
}

// --- R2 ---

TEST(CheckMoveTest, R2NoNodeFinalizedWhileAnInTreeManagerIsLeft) {
  EXPECT_THAT(Message(CheckMove(Nodes({kMigrated, kMigrated, kPrepared}), "a", kFinalized,
                                GoodFacts(), {})),
              AllOf(StartsWith("R2: c (prepared) still running an in-tree kube-controller-manager"),
                    HasSubstr("finalized only when none is left")));
  EXPECT_TRUE(
      CheckMove(Nodes({kMigrated, kMigrated, kFinalized}), "a", kFinalized, GoodFacts(), {}).ok());
}

TEST(CheckMoveTest, R2NoNodeBackToPreparedWhileAnyNodeIsFinalized) {
  EXPECT_THAT(Message(CheckMove(Nodes({kFinalized, kMigrated, kMigrated}), "c", kPrepared,
                                GoodFacts(), {})),
              AllOf(StartsWith("R2: node a is finalized"),
                    HasSubstr("move it back to migrated before node c runs")));
}

TEST(CheckMoveTest, FinalizedBackToMigratedIsAllowed) {
  EXPECT_TRUE(
      CheckMove(Nodes({kFinalized, kFinalized, kMigrated}), "b", kMigrated, GoodFacts(), {}).ok());
}

// --- R3 ---

TEST(CheckMoveTest, R3NoNodeBackToInTreeWhileACloudControllerManagerRuns) {
  EXPECT_THAT(
      Message(CheckMove(Nodes({kPrepared, kPrepared, kMigrated}), "a", kInTree, GoodFacts(), {})),
      AllOf(StartsWith("R3: c (migrated) still running a cloud-controller-manager"),
            HasSubstr("node a returns to in-tree only when none is left")));
  EXPECT_TRUE(
      CheckMove(Nodes({kPrepared, kInTree, kPrepared}), "a", kInTree, GoodFacts(), {}).ok());
}

// --- NextStep: each goal's path ---

TEST(NextStepTest, MigratedPreparesEveryNodeThenMigratesThemInNodeOrder) {
  EXPECT_THAT(Drive(Nodes({kInTree, kInTree, kInTree}), kMigrated),
              ElementsAre("a:prepared", "b:prepared", "c:prepared", "a:migrated", "b:migrated",
                          "c:migrated", "done"));
}

TEST(NextStepTest, FinalizedGoesThroughAllMigratedFirst) {
  EXPECT_THAT(Drive(Nodes({kPrepared, kInTree, kPrepared}), kFinalized),
              ElementsAre("b:prepared", "a:migrated", "b:migrated", "c:migrated", "a:finalized",
                          "b:finalized", "c:finalized", "done"));
}

TEST(NextStepTest, MigratedWalksFinalizedNodesBackInReverseOrder) {
  EXPECT_THAT(Drive(Nodes({kFinalized, kMigrated, kFinalized}), kMigrated),
              ElementsAre("c:migrated", "a:migrated", "done"));
}

TEST(NextStepTest, PreparedReenablesMigrationEverywhereThenWalksBackInReverseOrder) {
  EXPECT_THAT(Drive(Nodes({kFinalized, kFinalized, kFinalized}), kPrepared, NoLease()),
              ElementsAre("c:migrated", StartsWith("wait: to move node b from finalized to "
                                                   "migrated: R4: the migration lease")));
  EXPECT_THAT(Drive(Nodes({kFinalized, kFinalized, kFinalized}), kPrepared),
              ElementsAre("c:migrated", "b:migrated", "a:migrated", "c:prepared", "b:prepared",
                          "a:prepared", "done"));
}

TEST(NextStepTest, PreparedAlsoPreparesInTreeNodes) {
  EXPECT_THAT(Drive(Nodes({kInTree, kPrepared, kInTree}), kPrepared),
              ElementsAre("a:prepared", "c:prepared", "done"));
}

TEST(NextStepTest, InTreeWalksBackToPreparedThenToInTreeInReverseOrder) {
  EXPECT_THAT(Drive(Nodes({kMigrated, kMigrated, kFinalized}), kInTree),
              ElementsAre("c:migrated", "c:prepared", "b:prepared", "a:prepared", "c:in-tree",
                          "b:in-tree", "a:in-tree", "done"));
  // Nodes still in-tree are left alone.
  EXPECT_THAT(Drive(Nodes({kPrepared, kInTree, kPrepared}), kInTree),
              ElementsAre("c:in-tree", "a:in-tree", "done"));
}

TEST(NextStepTest, LeaseHoldersMoveLastInTheirPhase) {
  // Preparing: the in-tree KCM holding its main lease runs the cloud controllers; it goes last.
  ClusterFacts facts = GoodFacts();
  facts.holders.kube_controller_manager = "a";
  EXPECT_THAT(Drive(Nodes({kInTree, kInTree, kInTree}), kPrepared, facts),
              ElementsAre("b:prepared", "c:prepared", "a:prepared", "done"));
  // Back to prepared (reverse node order): a holds nothing, c only the KCM's lease (its KCM runs
  // no cloud controller when migrated), b's CCM the migration lease: a, c, then b.
  facts = GoodFacts();
  facts.holders.migration = "b";
  facts.holders.cloud_controller_manager = "b";
  facts.holders.kube_controller_manager = "c";
  EXPECT_THAT(Drive(Nodes({kMigrated, kMigrated, kMigrated}), kPrepared, facts),
              ElementsAre("a:prepared", "c:prepared", "b:prepared", "done"));
  // Walking back from finalized: the finalized CCM holding its lease runs them; the KCM's lease
  // on a counts less.
  facts = GoodFacts();
  facts.holders.cloud_controller_manager = "c";
  facts.holders.kube_controller_manager = "a";
  EXPECT_THAT(Drive(Nodes({kFinalized, kFinalized, kFinalized}), kMigrated, facts),
              ElementsAre("b:migrated", "a:migrated", "c:migrated", "done"));
  // A holder that is not in the phase changes nothing: node order.
  facts = GoodFacts();
  facts.holders.migration = "a";
  EXPECT_THAT(Drive(Nodes({kMigrated, kPrepared, kPrepared}), kMigrated, facts),
              ElementsAre("b:migrated", "c:migrated", "done"));
  // The node whose turn it is is waited for when blocked, never skipped.
  std::vector<NodeStatus> nodes = Nodes({kInTree, kInTree, kInTree});
  nodes[1].connected = false;
  facts = GoodFacts();
  facts.holders.kube_controller_manager = "a";
  Decision decision = NextStep(nodes, Goal{kPrepared}, facts, Control{});
  EXPECT_EQ(decision.kind, Kind::kWait);
  EXPECT_THAT(decision.reason, HasSubstr("node b's agent is not connected"));
}

TEST(NextStepTest, DoneAtTheGoalEvenWhenHaltedButNotWhileANodeIsInTransition) {
  Control halted;
  halted.halted = true;
  std::vector<NodeStatus> nodes = Nodes({kMigrated, kMigrated, kMigrated});
  Decision done = NextStep(nodes, Goal{kMigrated}, ClusterFacts{}, halted);
  EXPECT_EQ(done.kind, Kind::kDone);
  EXPECT_EQ(done.reason, "every node is migrated");
  nodes[1].in_transition = true;
  EXPECT_EQ(NextStep(nodes, Goal{kMigrated}, GoodFacts(), Control{}).kind, Kind::kWait);
}

TEST(NextStepTest, EveryMoveItReturnsPassesCheckMove) {
  // Every three-node state (inconsistent too) × goal × facts × control flags.
  const NodeState states[] = {kInTree, kPrepared, kMigrated, kFinalized, kInconsistent};
  int cases = 0, moves = 0;
  for (NodeState s0 : states) {
    for (NodeState s1 : states) {
      for (NodeState s2 : states) {
        const std::vector<NodeStatus> nodes = Nodes({s0, s1, s2});
        for (NodeState goal : {kInTree, kPrepared, kMigrated, kFinalized}) {
          for (int bits = 0; bits < 16; ++bits) {
            ClusterFacts facts;
            facts.rbac_ready = (bits & 1) != 0;
            facts.lease_held_by_healthy_manager = (bits & 2) != 0;
            Control control;
            control.paused = (bits & 4) != 0;
            control.halted = (bits & 8) != 0;
            ++cases;
            Decision decision = NextStep(nodes, Goal{goal}, facts, control);
            EXPECT_FALSE(decision.reason.empty());
            if (decision.kind != Kind::kMove) {
              EXPECT_THAT(decision.node, IsEmpty());
              continue;
            }
            ++moves;
            absl::Status check = CheckMove(nodes, decision.node, decision.to, facts, control);
            EXPECT_TRUE(check.ok()) << check << " for " << decision.reason;
          }
        }
      }
    }
  }
  EXPECT_EQ(cases, 125 * 4 * 16);
  EXPECT_GT(moves, 0);
  RecordProperty("cases", cases);
  RecordProperty("moves", moves);
}

// --- NextStep: waiting and stuck ---

TEST(NextStepTest, WaitsWhilePaused) {
  Control paused;
  paused.paused = true;
  Decision decision =
      NextStep(Nodes({kInTree, kInTree, kInTree}), Goal{kMigrated}, GoodFacts(), paused);
  EXPECT_EQ(decision.kind, Kind::kWait);
  EXPECT_THAT(decision.reason, StartsWith("paused"));
  EXPECT_THAT(decision.node, IsEmpty());
}

// A long gap of the cloud controllers passes by itself: a wait, after a halt or a pause.
TEST(NextStepTest, WaitsWhileNoManagerRunsTheCloudControllers) {
  Control control;
  control.no_runner = "service since 01:10:31 UTC";
  const std::vector<NodeStatus> nodes = Nodes({kPrepared, kPrepared, kPrepared});
  Decision decision = NextStep(nodes, Goal{kMigrated}, GoodFacts(), control);
  EXPECT_EQ(decision.kind, Kind::kWait);
  EXPECT_THAT(decision.reason,
              StartsWith("no-runner: no manager has run service since 01:10:31 UTC"));
  EXPECT_FALSE(CheckMove(nodes, "a", kMigrated, GoodFacts(), control).ok());
  control.paused = true;
  EXPECT_THAT(NextStep(nodes, Goal{kMigrated}, GoodFacts(), control).reason, StartsWith("paused"));
  control.halted = true;
  EXPECT_EQ(NextStep(nodes, Goal{kMigrated}, GoodFacts(), control).kind, Kind::kStuck);
}

TEST(NextStepTest, WaitsForTheNodeInTransitionNamingIt) {
  std::vector<NodeStatus> nodes = Nodes({kMigrated, kPrepared, kPrepared});
  nodes[1].in_transition = true;
  nodes[1].connected = false;
  Decision decision = NextStep(nodes, Goal{kMigrated}, GoodFacts(), Control{});
  EXPECT_EQ(decision.kind, Kind::kWait);
  EXPECT_EQ(decision.reason,
            "R4: node b is in transition; the next move waits for its verified "
            "result");
}

TEST(NextStepTest, WaitsForTheNextNodeToReconnect) {
  std::vector<NodeStatus> nodes = Nodes({kPrepared, kInTree, kInTree});
  nodes[1].connected = false;
  Decision decision = NextStep(nodes, Goal{kMigrated}, GoodFacts(), Control{});
  EXPECT_EQ(decision.kind, Kind::kWait);
  EXPECT_EQ(decision.reason,
            "to move node b from in-tree to prepared: disconnected: node b's "
            "agent is not connected");
}

TEST(NextStepTest, WaitsForAPreparedNodeToReconnectBeforeMigratingAnother) {
  std::vector<NodeStatus> nodes = Nodes({kPrepared, kPrepared, kPrepared});
  nodes[2].connected = false;
  Decision decision = NextStep(nodes, Goal{kMigrated}, GoodFacts(), Control{});
  EXPECT_EQ(decision.kind, Kind::kWait);
  EXPECT_THAT(decision.reason, AllOf(StartsWith("to move node a from prepared to migrated"),
                                     HasSubstr("R1: prepared node c is not connected")));
}

TEST(NextStepTest, WaitsForTheMigrationLease) {
  Decision decision =
      NextStep(Nodes({kMigrated, kPrepared, kPrepared}), Goal{kMigrated}, NoLease(), Control{});
  EXPECT_EQ(decision.kind, Kind::kWait);
  EXPECT_THAT(decision.reason, HasSubstr("R4: the migration lease is not held"));
}

TEST(NextStepTest, StuckWhenHaltedWithTheReason) {
  Control halted;
  halted.halted = true;
  halted.halt_reason = "operator abort";
  Decision decision =
      NextStep(Nodes({kInTree, kInTree, kInTree}), Goal{kMigrated}, GoodFacts(), halted);
  EXPECT_EQ(decision.kind, Kind::kStuck);
  EXPECT_THAT(decision.reason, StartsWith("R5: the rollout is halted (operator abort)"));
}

TEST(NextStepTest, StuckOnAnInconsistentOrUnhealthyNodeNamingIt) {
  std::vector<NodeStatus> nodes = Nodes({kPrepared, kInconsistent, kPrepared});
  Decision inconsistent = NextStep(nodes, Goal{kMigrated}, GoodFacts(), Control{});
  EXPECT_EQ(inconsistent.kind, Kind::kStuck);
  EXPECT_THAT(inconsistent.reason, StartsWith("inconsistent: node b is inconsistent"));
  nodes = Nodes({kPrepared, kPrepared, kPrepared});
  nodes[2].healthy = false;
  Decision unhealthy = NextStep(nodes, Goal{kMigrated}, GoodFacts(), Control{});
  EXPECT_EQ(unhealthy.kind, Kind::kStuck);
  EXPECT_THAT(unhealthy.reason, StartsWith("R4: node c is not verified healthy"));
}

TEST(NextStepTest, StuckWithoutRbacAndSaysSoBeforeWaitingForAReconnect) {
  ClusterFacts no_rbac = GoodFacts();
  no_rbac.rbac_ready = false;
  std::vector<NodeStatus> nodes = Nodes({kPrepared, kPrepared, kPrepared});
  nodes[0].connected = false;
  Decision decision = NextStep(nodes, Goal{kMigrated}, no_rbac, Control{});
  EXPECT_EQ(decision.kind, Kind::kStuck);
  EXPECT_THAT(decision.reason, AllOf(HasSubstr("R1: the migration-lease RBAC is not in place"),
                                     Not(HasSubstr("disconnected"))));
}

TEST(NextStepTest, StuckOnInvalidInput) {
  EXPECT_EQ(NextStep({}, Goal{kMigrated}, GoodFacts(), Control{}).kind, Kind::kStuck);
  std::vector<NodeStatus> nodes = Nodes({kInTree, kInTree});
  nodes[1].name = "a";
  Decision twice = NextStep(nodes, Goal{kMigrated}, GoodFacts(), Control{});
  EXPECT_EQ(twice.kind, Kind::kStuck);
  EXPECT_THAT(twice.reason, HasSubstr("listed twice"));
  EXPECT_EQ(NextStep(Nodes({kInTree}), Goal{kInconsistent}, GoodFacts(), Control{}).kind,
            Kind::kStuck);
}

TEST(NextStepTest, AMoveNamesTheNodeTheTargetAndTheGoal) {
  Decision decision =
      NextStep(Nodes({kMigrated, kPrepared, kPrepared}), Goal{kFinalized}, GoodFacts(), Control{});
  ASSERT_EQ(decision.kind, Kind::kMove);
  EXPECT_EQ(decision.node, "b");
  EXPECT_EQ(decision.to, kMigrated);
  EXPECT_EQ(decision.reason, "node b: prepared → migrated towards finalized");
}

// --- awaiting an agent's hello (after a coordinator restart) ---

TEST(NextStepTest, NothingMovesWhileAnAgentHasNotSaidHelloNamingThoseNodes) {
  std::vector<NodeStatus> nodes = Nodes({kInTree, kInTree, kInTree});
  nodes[1].awaiting_hello = true;
  nodes[2].awaiting_hello = true;
  Decision decision = NextStep(nodes, Goal{kMigrated}, GoodFacts(), Control{});
  EXPECT_EQ(decision.kind, Kind::kWait);
  EXPECT_EQ(decision.reason,
            "waiting for the agents of b, c to report their nodes' state before anything moves");
  nodes[1].awaiting_hello = nodes[2].awaiting_hello = false;
  EXPECT_EQ(NextStep(nodes, Goal{kMigrated}, GoodFacts(), Control{}).kind, Kind::kMove);
}

TEST(NextStepTest, AwaitingAHelloComesBeforeDoneAndBeforeTheHalt) {
  // The stored states may be stale: neither "done" nor any rule can be judged on them.
  std::vector<NodeStatus> nodes = Nodes({kMigrated, kMigrated, kMigrated});
  nodes[0].awaiting_hello = true;
  EXPECT_EQ(NextStep(nodes, Goal{kMigrated}, GoodFacts(), Control{}).kind, Kind::kWait);
  Control halted;
  halted.halted = true;
  Decision decision = NextStep(nodes, Goal{kPrepared}, GoodFacts(), halted);
  EXPECT_EQ(decision.kind, Kind::kWait);
  EXPECT_THAT(decision.reason, StartsWith("waiting for the agents of a "));
}

TEST(CheckMoveTest, DoesNotReadAwaitingHello) {
  // A move recorded before a restart is settled on its own node's hello, whoever else is away.
  std::vector<NodeStatus> nodes = Nodes({kInTree, kInTree, kInTree});
  nodes[1].awaiting_hello = true;
  EXPECT_TRUE(CheckMove(nodes, "a", kPrepared, GoodFacts(), Control{}).ok());
}

}  // namespace
}  // namespace handoff::rollout
