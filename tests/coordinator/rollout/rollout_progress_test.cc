// Where a rollout stands (rollout/rollout_progress.h): each phase from the goal, the control, the
// move in flight and the engine's decision; the line saying what comes next; a node's steps.
#include "coordinator/rollout/rollout_progress.h"

#include <optional>
#include <string>
#include <utility>

#include "gtest/gtest.h"
#include "tests/coordinator/rollout/engine_nodes.h"

namespace handoff::rollout {
namespace {

using Kind = Decision::Kind;
using testing::kFinalized;
using testing::kInconsistent;
using testing::kInTree;
using testing::kMigrated;
using testing::kPrepared;

Decision Next(Kind kind, std::string reason = "because") {
  Decision decision;
  decision.kind = kind;
  decision.reason = std::move(reason);
  return decision;
}

Control Halted() {
  Control control;
  control.halted = true;
  control.halt_reason = "cp-2: migrated failed";
  return control;
}

Control Paused() {
  Control control;
  control.paused = true;
  return control;
}

constexpr std::optional<NodeState> kNothingMoving = std::nullopt;

TEST(PhaseOfTest, IdleWithoutAGoalWhateverTheEngineSays) {
  EXPECT_EQ(PhaseOf(std::nullopt, Control{}, kNothingMoving, Next(Kind::kWait)), Phase::kIdle);
  EXPECT_EQ(PhaseOf(std::nullopt, Halted(), kPrepared, Next(Kind::kDone)), Phase::kIdle);
}

TEST(PhaseOfTest, DoneOnceTheEngineIsDoneAndNothingIsInFlightEvenWhenHaltedOrPaused) {
  EXPECT_EQ(PhaseOf(kMigrated, Control{}, kNothingMoving, Next(Kind::kDone)), Phase::kDone);
  EXPECT_EQ(PhaseOf(kMigrated, Halted(), kNothingMoving, Next(Kind::kDone)), Phase::kDone);
  EXPECT_EQ(PhaseOf(kMigrated, Paused(), kNothingMoving, Next(Kind::kDone)), Phase::kDone);
  // A move still in flight may have left the goal: not done until its result is in.
  EXPECT_EQ(PhaseOf(kMigrated, Control{}, kMigrated, Next(Kind::kDone)), Phase::kMigrating);
}

TEST(PhaseOfTest, HaltedBeforePausedBeforeTheMoveInFlight) {
  EXPECT_EQ(PhaseOf(kMigrated, Halted(), kMigrated, Next(Kind::kStuck)), Phase::kHalted);
  Control both = Halted();
  both.paused = true;
  EXPECT_EQ(PhaseOf(kMigrated, both, kNothingMoving, Next(Kind::kStuck)), Phase::kHalted);
  EXPECT_EQ(PhaseOf(kMigrated, Paused(), kPrepared, Next(Kind::kWait)), Phase::kPaused);
}

TEST(PhaseOfTest, AForwardGoalsPhaseIsTheTargetOfTheMoveInFlight) {
  EXPECT_EQ(PhaseOf(kMigrated, Control{}, kPrepared, Next(Kind::kWait)), Phase::kPreparing);
  EXPECT_EQ(PhaseOf(kMigrated, Control{}, kMigrated, Next(Kind::kWait)), Phase::kMigrating);
  EXPECT_EQ(PhaseOf(kFinalized, Control{}, kPrepared, Next(Kind::kWait)), Phase::kPreparing);
  EXPECT_EQ(PhaseOf(kFinalized, Control{}, kMigrated, Next(Kind::kWait)), Phase::kMigrating);
  EXPECT_EQ(PhaseOf(kFinalized, Control{}, kFinalized, Next(Kind::kWait)), Phase::kFinalizing);
}

TEST(PhaseOfTest, EveryMoveOfABackwardGoalIsRollingBack) {
  // finalized → migrated on the way back is a step back, not "migrating".
  EXPECT_EQ(PhaseOf(kPrepared, Control{}, kMigrated, Next(Kind::kWait)), Phase::kRollingBack);
  EXPECT_EQ(PhaseOf(kPrepared, Control{}, kPrepared, Next(Kind::kWait)), Phase::kRollingBack);
  EXPECT_EQ(PhaseOf(kInTree, Control{}, kInTree, Next(Kind::kWait)), Phase::kRollingBack);
  // Known to come from migrated, the move to prepared goes back.
  EXPECT_EQ(PhaseOf(kPrepared, Control{}, kPrepared, Next(Kind::kWait), kMigrated),
            Phase::kRollingBack);
}

TEST(PhaseOfTest, APrepareOnlyRolloutFromInTreeIsPreparingNotRollingBack) {
  // `start --prepare-only`: the goal is prepared, but every move goes forward to it.
  EXPECT_EQ(PhaseOf(kPrepared, Control{}, kPrepared, Next(Kind::kWait), kInTree),
            Phase::kPreparing);
  // A forward move still in flight when a rollback set a goal behind it is rolling back.
  EXPECT_EQ(PhaseOf(kInTree, Control{}, kPrepared, Next(Kind::kWait), kInTree),
            Phase::kRollingBack);
  EXPECT_EQ(PhaseOf(kPrepared, Control{}, kMigrated, Next(Kind::kWait), kPrepared),
            Phase::kRollingBack);
}

TEST(PhaseOfTest, WithNothingInFlightStuckOrWaitingByTheDecision) {
  EXPECT_EQ(PhaseOf(kMigrated, Control{}, kNothingMoving, Next(Kind::kStuck)), Phase::kStuck);
  EXPECT_EQ(PhaseOf(kMigrated, Control{}, kNothingMoving, Next(Kind::kWait)), Phase::kWaiting);
  // A move decided but not sent (its record failed) is no phase of its own.
  EXPECT_EQ(PhaseOf(kMigrated, Control{}, kNothingMoving, Next(Kind::kMove)), Phase::kWaiting);
}

TEST(DescribeNextTest, SaysTheMoveTheGoalReachedOrTheReason) {
  Decision move = Next(Kind::kMove);
  move.node = "cp-2";
  move.to = kMigrated;
  EXPECT_EQ(DescribeNext(move, kMigrated), "move cp-2 to migrated");
  EXPECT_EQ(DescribeNext(Next(Kind::kDone), kFinalized), "done: every node is finalized");
  EXPECT_EQ(DescribeNext(Next(Kind::kDone), std::nullopt), "done");
  EXPECT_EQ(DescribeNext(Next(Kind::kWait, "R4: node cp-1 is in transition"), kMigrated),
            "R4: node cp-1 is in transition");
  EXPECT_EQ(DescribeNext(Next(Kind::kStuck, "R5: the rollout is halted"), kMigrated),
            "R5: the rollout is halted");
}

void ExpectSteps(std::optional<Steps> steps, int done, int total) {
  ASSERT_TRUE(steps.has_value());
  EXPECT_EQ(steps->done, done);
  EXPECT_EQ(steps->total, total);
}

TEST(StepsOfTest, CountsAlongTheChainFromWhereTheNodeStoodWhenTheGoalWasSet) {
  ExpectSteps(StepsOf(kInTree, kInTree, kMigrated), 0, 2);
  // A node joined external during a Leader Migration rollout: one step, across the paths.
  ExpectSteps(StepsOf(NodeState::kExternal, NodeState::kExternal, kMigrated), 0, 1);
  ExpectSteps(StepsOf(NodeState::kExternal, kMigrated, kMigrated), 1, 1);
  ExpectSteps(StepsOf(NodeState::kExternal, kFinalized, kFinalized), 1, 1);
  ExpectSteps(StepsOf(kInTree, kPrepared, kMigrated), 1, 2);
  ExpectSteps(StepsOf(kInTree, kFinalized, kFinalized), 3, 3);
  ExpectSteps(StepsOf(kFinalized, kMigrated, kInTree), 1, 3);
  ExpectSteps(StepsOf(kPrepared, kPrepared, kPrepared), 0, 0);
}

TEST(StepsOfTest, NeverMoreDoneThanTotalAndNoneWhileInconsistent) {
  ExpectSteps(StepsOf(kInTree, kMigrated, kPrepared), 1, 1);
  ExpectSteps(StepsOf(kInTree, kInconsistent, kMigrated), 0, 2);
}

TEST(StepsOfTest, NoneWhenTheStartOrTheGoalIsOffTheChain) {
  EXPECT_FALSE(StepsOf(kInconsistent, kPrepared, kMigrated).has_value());
  EXPECT_FALSE(StepsOf(kInTree, kPrepared, kInconsistent).has_value());
}

}  // namespace
}  // namespace handoff::rollout
