// The facts `handoff-agent run` reports of its instance (NodeAgentOptions::read_instance_identity
// and read_cluster_tags, agent/daemon/node_agent.h): its identity from the instance metadata,
// and its cluster tags from EC2 at the endpoint of the managers' cloud config.
#ifndef HANDOFF_AGENT_CLI_INSTANCE_FACTS_H_
#define HANDOFF_AGENT_CLI_INSTANCE_FACTS_H_

#include <string>

#include "absl/status/statusor.h"
#include "agent/cloud/instance_tags.h"
#include "handoff/v1/handoff.pb.h"

namespace handoff {

// instance_id, local_hostname and availability_zone, or metadata_error saying why not.
v1::NodeFacts ReadInstanceFacts(const InstanceMetadataOptions& metadata);

// cluster_tags and cluster_tags_known, or cluster_tags_error saying why not (naming the cloud
// config `path` when it cannot be read or parsed), and cloud_config_cluster_id. EC2 is asked
// (ReadClusterTagsFromEc2) with the identity's instance id and zone.
v1::NodeFacts ReadClusterTagFacts(const v1::NodeFacts& identity, const std::string& path,
                                  const absl::StatusOr<std::string>& cloud_config,
                                  const InstanceMetadataOptions& metadata);

}  // namespace handoff

#endif  // HANDOFF_AGENT_CLI_INSTANCE_FACTS_H_
