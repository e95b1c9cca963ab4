// Node states between the wire (handoff.v1.NodeState) and the engine
// (common/vocabulary/node_state.h).
#ifndef HANDOFF_PROTO_RPC_NODE_STATE_H_
#define HANDOFF_PROTO_RPC_NODE_STATE_H_

#include <optional>

#include "common/vocabulary/node_state.h"
#include "handoff/v1/handoff.pb.h"

namespace handoff::rpc {

v1::NodeState ToProto(NodeState state);
// std::nullopt for NODE_STATE_UNSPECIFIED and values this build does not know.
std::optional<NodeState> FromProto(v1::NodeState state);

}  // namespace handoff::rpc

#endif  // HANDOFF_PROTO_RPC_NODE_STATE_H_
