#include "proto/rpc/node_state.h"

namespace handoff::rpc {

v1::NodeState ToProto(NodeState state) {
  switch (state) {
    case NodeState::kInTree:
      return v1::NODE_STATE_IN_TREE;
    case NodeState::kPrepared:
      return v1::NODE_STATE_PREPARED;
    case NodeState::kMigrated:
      return v1::NODE_STATE_MIGRATED;
    case NodeState::kFinalized:
      return v1::NODE_STATE_FINALIZED;
    case NodeState::kInconsistent:
      return v1::NODE_STATE_INCONSISTENT;
    case NodeState::kStopped:
      return v1::NODE_STATE_STOPPED;
    case NodeState::kExternal:
      return v1::NODE_STATE_EXTERNAL;
  }
  return v1::NODE_STATE_UNSPECIFIED;
}

std::optional<NodeState> FromProto(v1::NodeState state) {
  switch (state) {
    case v1::NODE_STATE_IN_TREE:
      return NodeState::kInTree;
    case v1::NODE_STATE_PREPARED:
      return NodeState::kPrepared;
    case v1::NODE_STATE_MIGRATED:
      return NodeState::kMigrated;
    case v1::NODE_STATE_FINALIZED:
      return NodeState::kFinalized;
    case v1::NODE_STATE_INCONSISTENT:
      return NodeState::kInconsistent;
    case v1::NODE_STATE_STOPPED:
      return NodeState::kStopped;
    case v1::NODE_STATE_EXTERNAL:
      return NodeState::kExternal;
    default:
      return std::nullopt;
  }
}

}  // namespace handoff::rpc
