// The moves a goal would take: the rollout engine (rollout_engine.h) run on a copy of the nodes,
// as if every move succeeded, every agent stayed connected and healthy, the migration-lease RBAC
// were in place and the lease always held. `handoffctl plan` shows these moves before (or during)
// a rollout, and each agent computes its node's diffs along its chain. Pure: no I/O, no clock.
#ifndef HANDOFF_COORDINATOR_ROLLOUT_PLAN_SIMULATION_H_
#define HANDOFF_COORDINATOR_ROLLOUT_PLAN_SIMULATION_H_

#include <optional>
#include <string>
#include <vector>

#include "coordinator/rollout/rollout_engine.h"
#include "proto/vocabulary/node_state.h"

namespace handoff::rollout {

// One node's move from one state to the next along the chain.
struct Move {
  std::string node;
  NodeState from = NodeState::kInconsistent;
  NodeState to = NodeState::kInconsistent;
};

struct SimulatedRollout {
  std::vector<Move> moves;  // in the order the rollout would make them
  // Why the moves stop short of the goal (the engine's kStuck or kWait reason: an inconsistent
  // node, a goal that is not a state); "" when they reach it.
  std::string blocked_reason;

  // The states node `name` passes through, in order; empty when it does not move.
  std::vector<NodeState> ChainOf(const std::string& name) const;
};

// The moves towards `goal` from `nodes` (in the coordinator's order; connected, healthy,
// in_transition and awaiting_hello are not read: every agent is taken to stay). `in_flight` is
// the move under way, taken as done. `holders` are the leases' holders as they are now: the
// first move of each phase is the one the rollout makes; later ones may change order as the
// leases change hands during the rollout.
// `strategy` chooses the path (rollout_engine.h).
SimulatedRollout SimulateRollout(std::vector<NodeStatus> nodes, NodeState goal,
                                 const LeaseHolders& holders, const std::optional<Move>& in_flight,
                                 Strategy strategy = Strategy::kLeaderMigration);

}  // namespace handoff::rollout

#endif  // HANDOFF_COORDINATOR_ROLLOUT_PLAN_SIMULATION_H_
