// The downtime path's cluster-tag step, as the applier's before_move hook
// (ApplyOptions::before_move, agent/apply/applier.h): before a node moves stopped -> external,
// the instance's kubernetes.io/cluster/<id> tag is checked through the instance metadata
// (instance_tags.h), or handed to the operator when the metadata cannot show it.
#ifndef HANDOFF_AGENT_CLOUD_CLUSTER_TAG_STEP_H_
#define HANDOFF_AGENT_CLOUD_CLUSTER_TAG_STEP_H_

#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "agent/cloud/instance_tags.h"
#include "agent/engine/settings.h"
#include "proto/vocabulary/node_state.h"

namespace handoff {

// The notes for the operator before the move from -> to: none unless from is kStopped and to is
// kExternal. Then one note: with no cluster id, that clusterId should be set and the command
// that checks the tag by hand (not a refusal: the operator may know the tag is there); else
// CheckClusterTag's message (confirmed, or why the metadata cannot show it and the command).
// FailedPrecondition (the tag has a value other than owned or shared) refuses the move;
// InvalidArgument for a malformed cluster id.
absl::StatusOr<std::vector<std::string>> ClusterTagNotes(NodeState from, NodeState to,
                                                         const std::string& cluster_id,
                                                         const InstanceMetadataOptions& options);

using BeforeMoveHook = std::function<absl::StatusOr<std::vector<std::string>>(
    NodeState from, NodeState to, const Settings& settings)>;

// ClusterTagNotes as ApplyOptions::before_move. `node` is the node's own settings: the metadata
// endpoint is always the node's (it is where the agent runs); the cluster id is the move's
// settings' clusterId (the coordinator's, for the daemon), else the node's.
BeforeMoveHook ClusterTagBeforeMove(const Settings& node);

}  // namespace handoff

#endif  // HANDOFF_AGENT_CLOUD_CLUSTER_TAG_STEP_H_
