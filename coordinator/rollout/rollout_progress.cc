#include "coordinator/rollout/rollout_progress.h"

#include <algorithm>
#include <cstdlib>

#include "common/base/strings.h"

namespace handoff::rollout {
namespace {

bool IsBackwardGoal(NodeState goal) {
  return goal == NodeState::kPrepared || goal == NodeState::kInTree;
}

// A move towards in-tree is a step back (finalized → migrated on the way back too). A move
// forward is one only when it overshoots the goal: a move sent before a rollback and still in
// flight. A move forward to the goal is not (`start --prepare-only` moves in-tree → prepared
// towards goal prepared). Without the node's state before the move, every move of a backward
// goal counts as a step back.
bool IsStepBack(NodeState goal, NodeState to, const std::optional<NodeState>& from) {
  const int before = from ? StepsFromInTree(*from) : -1;
  const int after = StepsFromInTree(to);
  if (before < 0 || after < 0 || before == after) return IsBackwardGoal(goal);
  if (after < before) return true;
  return after > StepsFromInTree(goal) && IsBackwardGoal(goal);
}

// How many moves lie between two consistent states: along the chain, or across the paths'
// middle states (external ⇄ migrated: one; prepared and stopped: two, through in-tree).
int Distance(NodeState a, NodeState b) {
  const int from = StepsFromInTree(a);
  const int to = StepsFromInTree(b);
  if (from != to || a == b) return std::abs(to - from);
  return AreAdjacent(a, b) ? 1 : 2;
}

}  // namespace

Phase PhaseOf(const std::optional<NodeState>& goal, const Control& control,
              const std::optional<NodeState>& moving_to, const Decision& next,
              std::optional<NodeState> moving_from, bool workers_moving) {
  using Kind = Decision::Kind;
  if (!goal) return Phase::kIdle;
  if (next.kind == Kind::kDone && !moving_to && !workers_moving) return Phase::kDone;
  // Halted and paused before the move in flight: it finishes, but the operator must know that
  // nothing follows it.
  if (control.halted) return Phase::kHalted;
  if (control.paused) return Phase::kPaused;
  if (!moving_to && workers_moving) return Phase::kMovingWorkers;
  if (moving_to) {
    if (IsStepBack(*goal, *moving_to, moving_from)) return Phase::kRollingBack;
    if (*moving_to == NodeState::kStopped) return Phase::kStopping;
    if (*moving_to == NodeState::kExternal) return Phase::kSwitching;
    if (*moving_to == NodeState::kPrepared) return Phase::kPreparing;
    if (*moving_to == NodeState::kMigrated) return Phase::kMigrating;
    if (moving_from == NodeState::kExternal) return Phase::kStarting;
    return Phase::kFinalizing;
  }
  return next.kind == Kind::kStuck ? Phase::kStuck : Phase::kWaiting;
}

std::string DescribeNext(const Decision& next, const std::optional<NodeState>& goal) {
  switch (next.kind) {
    case Decision::Kind::kDone:
      return goal ? StrCat("done: every node is ", NodeStateName(*goal)) : "done";
    case Decision::Kind::kMove:
      return StrCat("move ", next.node, " to ", NodeStateName(next.to));
    default:
      return next.reason;
  }
}

std::optional<Steps> StepsOf(NodeState goal_start, NodeState now, NodeState goal) {
  const int start = StepsFromInTree(goal_start);
  const int target = StepsFromInTree(goal);
  if (start < 0 || target < 0) return std::nullopt;
  const int current = StepsFromInTree(now);
  Steps steps;
  steps.total = Distance(goal_start, goal);
  // A node can overshoot the goal's distance (moved by hand, or walked back past its start).
  steps.done = std::min(current >= 0 ? Distance(goal_start, now) : 0, steps.total);
  return steps;
}

}  // namespace handoff::rollout
