// Where a rollout stands, as the operator sees it (`handoffctl status`): its phase, what it does
// next, and each node's steps towards the goal. Pure: derived from the rollout's goal, control,
// the move in flight and the engine's decision (rollout_engine.h); the coordinator maps it onto
// the wire (RolloutStatus).
#ifndef HANDOFF_COORDINATOR_ROLLOUT_ROLLOUT_PROGRESS_H_
#define HANDOFF_COORDINATOR_ROLLOUT_ROLLOUT_PROGRESS_H_

#include <optional>
#include <string>

#include "coordinator/rollout/rollout_engine.h"
#include "proto/vocabulary/node_state.h"
#include "proto/vocabulary/phase.h"

namespace handoff::rollout {

// The phases (proto/vocabulary/phase.h).
using ::handoff::Phase;

// The phase: idle without a goal; done once the decision is kDone and no move is in flight (even
// when halted or paused, as the engine's kDone); else halted, then paused; else the kind of the
// move in flight (`moving_to`: its target), by the goal's direction; else stuck or waiting by the
// decision. The phase is the kind of move the rollout makes, so a move the engine has decided
// but not yet sent (it is sent within the same event) is no phase of its own.
// `moving_from` (the move's from) tells external → finalized (starting) from migrated →
// finalized (finalizing). `workers_moving`: workers' moves are in flight (and no control-plane
// move is): moving-workers, after halted and paused.
Phase PhaseOf(const std::optional<NodeState>& goal, const Control& control,
              const std::optional<NodeState>& moving_to, const Decision& next,
              std::optional<NodeState> moving_from = std::nullopt, bool workers_moving = false);

// What the rollout does next, in one line: "move cp-1 to migrated", "done: every node is
// migrated" ("done" without a goal), or the decision's reason.
std::string DescribeNext(const Decision& next, const std::optional<NodeState>& goal);

// A node's progress towards the goal, counted along the chain from where it stood when the goal
// was set (`goal_start`): `done` never exceeds `total`, and a node that is inconsistent now has
// done none.
struct Steps {
  int done = 0;
  int total = 0;
};
// nullopt when `goal_start` or `goal` is not on the chain (kInconsistent).
std::optional<Steps> StepsOf(NodeState goal_start, NodeState now, NodeState goal);

}  // namespace handoff::rollout

#endif  // HANDOFF_COORDINATOR_ROLLOUT_ROLLOUT_PROGRESS_H_
