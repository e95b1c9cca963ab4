// Which node of the rollout holds each lease: the leases name their holders by hostname
// (client-go writes "<hostname>_<uuid>"), the engine (rollout_engine.h) and the preflight by node.
// Pure: the coordinator reads the leases and passes the hosts in.
#ifndef HANDOFF_COORDINATOR_ROLLOUT_LEASE_HOLDERS_H_
#define HANDOFF_COORDINATOR_ROLLOUT_LEASE_HOLDERS_H_

#include <string>
#include <vector>

#include "coordinator/rollout/rollout_engine.h"

namespace handoff::rollout {

// Whether a lease holder's hostname names `node`: equal, or one is the other's first DNS label
// (client-go writes os.Hostname(), which on EC2 may be "ip-10-0-1-5" for the node
// "ip-10-0-1-5.ec2.internal", or the reverse with a custom hostname).
bool HostnameMatchesNode(const std::string& hostname, const std::string& node);

// The first of `nodes` that `hostname` names, or "" (nobody, or a host outside the rollout).
std::string NodeOfHost(const std::vector<NodeStatus>& nodes, const std::string& hostname);

// The hosts of the managers validly holding the leases now ("" for nobody).
struct LeaseHosts {
  std::string migration;
  std::string kube_controller_manager;
  std::string cloud_controller_manager;
};

// The engine's facts from the leases read in the cluster: each holder's node, and whether the
// migration lease's holder runs on a node that is connected and verified healthy (R4).
ClusterFacts FactsFromLeases(const std::vector<NodeStatus>& nodes, const LeaseHosts& hosts,
                             bool rbac_ready);

}  // namespace handoff::rollout

#endif  // HANDOFF_COORDINATOR_ROLLOUT_LEASE_HOLDERS_H_
