// The preflight checks of what only a node's agent can see (NodeReport.facts, passed on by the
// coordinator in NodeInfo.facts), against the cluster's Nodes: shared by `handoffctl preflight`
// and the coordinator's start, like the cluster's checks (cluster_checks.h).
//
//  node-names   every node's Node has the providerID aws:///<zone>/<instance id> of its instance
//               (from the metadata; the AWS providers find the instance by it: fail); its
//               kubelet, once external, registers under the Node's name (its --hostname-override,
//               else the host name: the in-tree provider named the Node after the instance, and
//               a kubelet going by another name registers a second Node without a providerID
//               when the move restarts it: fail); and its name is the instance's private DNS name
//               (the metadata's local-hostname: warn when not);
//  stray-files  no node's manifest directory holds a file that is no component's manifest;
//  cluster-tag  every node's instance carries kubernetes.io/cluster/<id> = owned or shared, as
//               EC2 shows it to the instance (the cloud-controller-manager exits at start
//               without it, on the Leader Migration path as on the downtime path): <id> is the
//               managers' cloud config's KubernetesClusterID, else the settings' clusterId, else
//               the one cluster tag the instance carries (as the provider takes it). Where EC2
//               could not be asked, a warning with the aws command that shows the tag.
#ifndef HANDOFF_COORDINATOR_PREFLIGHT_NODE_CHECKS_H_
#define HANDOFF_COORDINATOR_PREFLIGHT_NODE_CHECKS_H_

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "coordinator/preflight/check_report.h"
#include "coordinator/preflight/cluster_checks.h"
#include "handoff/v1/handoff.pb.h"

namespace handoff::preflight {

inline constexpr char kCheckNodeNames[] = "node-names";
inline constexpr char kCheckStrayFiles[] = "stray-files";
inline constexpr char kCheckClusterTag[] = "cluster-tag";

// What a node's agent reads there that the API server cannot show.
struct NodeFacts {
  std::string node;
  std::string instance_id;     // from the EC2 instance metadata; "" when not read
  std::string local_hostname;  // the instance's private DNS name
  std::string availability_zone;
  std::string metadata_error;            // why the metadata was not read
  std::vector<std::string> stray_files;  // "<path>: why", in the manifest directory
  // The instance's kubernetes.io/cluster/<id> tags (<id> -> value) when EC2 answered
  // (cluster_tags_known), else why not.
  std::map<std::string, std::string> cluster_tags;
  bool cluster_tags_known = false;
  std::string cluster_tags_error;
  std::string cloud_config_cluster_id;  // KubernetesClusterID of the managers' cloud config
  // The name the kubelet registers under once external (--hostname-override, else the host
  // name); "" when not known.
  std::string kubelet_node_name;
};

// A node's facts as its agent reported them; `reported` null when it has not reported (then
// the metadata error says so).
NodeFacts FromReport(const std::string& node, const v1::NodeFacts* reported);
// Its kubelet's credential-provider flags, when the agent read the kubelet's flags.
std::optional<KubeletFacts> KubeletFromReport(const v1::NodeFacts& reported);

// The checks above, in that order. `settings_cluster_id` is the settings' clusterId ("" when not
// set). `nodes` nullopt: no agent was asked (each warns). Pure.
std::vector<CheckResult> RunNodeChecks(const ClusterView& view,
                                       const std::optional<std::vector<NodeFacts>>& nodes,
                                       const std::string& settings_cluster_id);

}  // namespace handoff::preflight

#endif  // HANDOFF_COORDINATOR_PREFLIGHT_NODE_CHECKS_H_
