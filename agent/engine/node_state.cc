#include "agent/engine/node_state.h"

#include <cstdlib>

#include "agent/base/strings.h"

namespace handoff {

std::string_view NodeStateName(NodeState state) {
  switch (state) {
    case NodeState::kInTree:
      return "in-tree";
    case NodeState::kPrepared:
      return "prepared";
    case NodeState::kMigrated:
      return "migrated";
    case NodeState::kFinalized:
      return "finalized";
    case NodeState::kInconsistent:
      return "inconsistent";
  }
  return "inconsistent";
}

absl::StatusOr<NodeState> ParseTargetState(std::string_view name) {
  for (NodeState state :
       {NodeState::kInTree, NodeState::kPrepared, NodeState::kMigrated, NodeState::kFinalized}) {
    if (name == NodeStateName(state)) return state;
  }
  return absl::InvalidArgumentError(StrCat(
      "'", name, "' is not a node state; use one of in-tree, prepared, migrated, finalized"));
}

bool AreAdjacent(NodeState from, NodeState to) {
  if (from == NodeState::kInconsistent || to == NodeState::kInconsistent) return false;
  return std::abs(static_cast<int>(from) - static_cast<int>(to)) == 1;
}

bool IsForward(NodeState from, NodeState to) {
  return static_cast<int>(to) > static_cast<int>(from);
}

}  // namespace handoff
