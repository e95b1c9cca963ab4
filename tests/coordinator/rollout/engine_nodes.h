// Test helper for the rollout engine's tests: short names for the node states, and nodes a, b,
// c, ... in given states.
#ifndef HANDOFF_TESTS_COORDINATOR_ROLLOUT_ENGINE_NODES_H_
#define HANDOFF_TESTS_COORDINATOR_ROLLOUT_ENGINE_NODES_H_

#include <cstddef>
#include <string>
#include <vector>

#include "coordinator/rollout/rollout_engine.h"

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

}  // namespace handoff::rollout::testing

#endif  // HANDOFF_TESTS_COORDINATOR_ROLLOUT_ENGINE_NODES_H_
