#include "agent/cloud/cluster_tag_step.h"

#include "common/base/strings.h"

namespace handoff {

absl::StatusOr<std::vector<std::string>> ClusterTagNotes(NodeState from, NodeState to,
                                                         const std::string& cluster_id,
                                                         const InstanceMetadataOptions& options) {
  // Only this step needs the tag: the cloud-controller-manager, started after external, finds
  // its nodes' instances by it (AWS's "When Downtime is Acceptable"), and the node's in-tree
  // provider stops at external, so nothing else would notice an untagged instance in time.
  if (from != NodeState::kStopped || to != NodeState::kExternal) return std::vector<std::string>{};
  if (cluster_id.empty()) {
    return std::vector<std::string>{
        StrCat("set clusterId in the settings so handoff can check this instance's "
               "kubernetes.io/cluster/<id> tag (owned or shared), which the "
               "cloud-controller-manager needs; check the tag yourself: `",
               DescribeTagsCommand("", "<id>"), "`")};
  }
  absl::StatusOr<ClusterTagCheck> check = CheckClusterTag(cluster_id, options);
  if (!check.ok()) return check.status();
  return std::vector<std::string>{check->message};
}

BeforeMoveHook ClusterTagBeforeMove(const Settings& node) {
  InstanceMetadataOptions options;
  options.endpoint = node.instance_metadata_endpoint;
  return [options, node_cluster_id = node.cluster_id](NodeState from, NodeState to,
                                                      const Settings& settings) {
    const std::string& cluster_id =
        settings.cluster_id.empty() ? node_cluster_id : settings.cluster_id;
    return ClusterTagNotes(from, to, cluster_id, options);
  };
}

}  // namespace handoff
