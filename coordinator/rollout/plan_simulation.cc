#include "coordinator/rollout/plan_simulation.h"

#include <cstddef>
#include <utility>

namespace handoff::rollout {

std::vector<NodeState> SimulatedRollout::ChainOf(const std::string& name) const {
  std::vector<NodeState> chain;
  for (const Move& move : moves) {
    if (move.node == name) chain.push_back(move.to);
  }
  return chain;
}

SimulatedRollout SimulateRollout(std::vector<NodeStatus> nodes, NodeState goal,
                                 const LeaseHolders& holders, const std::optional<Move>& in_flight,
                                 Strategy strategy) {
  // Only what the nodes' states and the rules make of them is left to stop the moves.
  for (NodeStatus& node : nodes) {
    node.connected = true;
    node.healthy = true;
    node.in_transition = false;
    node.awaiting_hello = false;
    if (in_flight && node.name == in_flight->node) node.state = in_flight->to;
  }
  ClusterFacts facts;
  facts.rbac_ready = true;
  facts.lease_held_by_healthy_manager = true;
  facts.holders = holders;

  SimulatedRollout simulated;
  // Each node walks the chain (three steps) at most once towards a goal, after at most one step
  // back (finalized → migrated): the bound only guards against an engine that never ends.
  const std::size_t max_moves = 4 * nodes.size() + 4;
  for (std::size_t step = 0; step < max_moves; ++step) {
    const Decision decision = NextStep(nodes, Goal{goal, strategy}, facts, Control{});
    if (decision.kind == Decision::Kind::kDone) break;
    if (decision.kind != Decision::Kind::kMove) {
      simulated.blocked_reason = decision.reason;
      break;
    }
    for (NodeStatus& node : nodes) {
      if (node.name != decision.node) continue;
      simulated.moves.push_back(Move{node.name, node.state, decision.to});
      node.state = decision.to;
    }
  }
  return simulated;
}

}  // namespace handoff::rollout
