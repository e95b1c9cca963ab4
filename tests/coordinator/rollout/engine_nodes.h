// Test helper for the rollout engine's tests: short names for the node states, and nodes a, b,
// c, ... in given states.
#ifndef HANDOFF_TESTS_COORDINATOR_ROLLOUT_ENGINE_NODES_H_
#define HANDOFF_TESTS_COORDINATOR_ROLLOUT_ENGINE_NODES_H_

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "common/base/strings.h"
#include "coordinator/rollout/rollout_engine.h"
#include "gtest/gtest.h"

namespace handoff::rollout::testing {

constexpr NodeState kInTree = NodeState::kInTree;
constexpr NodeState kPrepared = NodeState::kPrepared;
constexpr NodeState kMigrated = NodeState::kMigrated;
constexpr NodeState kFinalized = NodeState::kFinalized;
constexpr NodeState kInconsistent = NodeState::kInconsistent;

// Nodes a, b, c, ... in the given states, connected, healthy and idle.
inline std::vector<NodeStatus> Nodes(const std::vector<NodeState>& states) {
  std::vector<NodeStatus> nodes;
  for (std::size_t i = 0; i < states.size(); ++i) {
    NodeStatus node;
    node.name = std::string(1, static_cast<char>('a' + i));
    node.state = states[i];
    node.connected = true;
    node.healthy = true;
    nodes.push_back(node);
  }
  return nodes;
}

// Facts under which only the states decide: the RBAC in place, the lease held by a healthy
// manager.
inline ClusterFacts GoodFacts() {
  ClusterFacts facts;
  facts.rbac_ready = true;
  facts.lease_held_by_healthy_manager = true;
  return facts;
}

// Drives NextStep towards `goal` with every move succeeding: "node:state" per move, then "done"
// or the decision that stopped it ("wait: ..." or "stuck: ..."). Checks every move with
// CheckMove, and calls `after_move` with the nodes after each one (the caller's invariant).
inline std::vector<std::string> Drive(
    std::vector<NodeStatus> nodes, const Goal& goal, const ClusterFacts& facts,
    const std::function<void(const std::vector<NodeStatus>&)>& after_move = nullptr) {
  std::vector<std::string> moves;
  for (int step = 0; step < 40; ++step) {
    Decision decision = NextStep(nodes, goal, facts, Control{});
    if (decision.kind == Decision::Kind::kDone) {
      moves.push_back("done");
      return moves;
    }
    if (decision.kind != Decision::Kind::kMove) {
      moves.push_back(StrCat(decision.kind == Decision::Kind::kWait ? "wait: " : "stuck: ",
                             decision.reason));
      return moves;
    }
    EXPECT_TRUE(CheckMove(nodes, decision.node, decision.to, facts, Control{}).ok());
    moves.push_back(StrCat(decision.node, ":", NodeStateName(decision.to)));
    for (NodeStatus& node : nodes) {
      if (node.name == decision.node) node.state = decision.to;
    }
    if (after_move) after_move(nodes);
  }
  moves.push_back("too many steps");
  return moves;
}

}  // namespace handoff::rollout::testing

#endif  // HANDOFF_TESTS_COORDINATOR_ROLLOUT_ENGINE_NODES_H_
