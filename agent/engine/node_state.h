// The states a control-plane node passes through (see README "Node states").
#ifndef HANDOFF_AGENT_ENGINE_NODE_STATE_H_
#define HANDOFF_AGENT_ENGINE_NODE_STATE_H_

#include <string_view>

#include "absl/status/statusor.h"

namespace handoff {

// Ordered: in-tree ⇄ prepared ⇄ migrated ⇄ finalized. kInconsistent is never a target.
enum class NodeState { kInTree, kPrepared, kMigrated, kFinalized, kInconsistent };

// "in-tree", "prepared", "migrated", "finalized", "inconsistent".
std::string_view NodeStateName(NodeState state);
// Accepts the four target names; anything else is an error listing them.
absl::StatusOr<NodeState> ParseTargetState(std::string_view name);
// Whether `to` is one step from `from` along the chain (both consistent).
bool AreAdjacent(NodeState from, NodeState to);
// Whether `to` lies after `from` on the chain (a forward move).
bool IsForward(NodeState from, NodeState to);

}  // namespace handoff

#endif  // HANDOFF_AGENT_ENGINE_NODE_STATE_H_
