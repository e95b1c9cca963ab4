#include "coordinator/rollout/lease_holders.h"

#include "common/base/strings.h"

namespace handoff::rollout {

bool HostnameMatchesNode(const std::string& hostname, const std::string& node) {
  if (hostname.empty()) return false;
  if (hostname == node) return true;
  return StartsWith(node, StrCat(hostname, ".")) || StartsWith(hostname, StrCat(node, "."));
}

std::string NodeOfHost(const std::vector<NodeStatus>& nodes, const std::string& hostname) {
  for (const NodeStatus& node : nodes) {
    if (HostnameMatchesNode(hostname, node.name)) return node.name;
  }
  return "";
}

ClusterFacts FactsFromLeases(const std::vector<NodeStatus>& nodes, const LeaseHosts& hosts,
                             bool rbac_ready) {
  ClusterFacts facts;
  facts.rbac_ready = rbac_ready;
  facts.holders.migration = NodeOfHost(nodes, hosts.migration);
  facts.holders.kube_controller_manager = NodeOfHost(nodes, hosts.kube_controller_manager);
  facts.holders.cloud_controller_manager = NodeOfHost(nodes, hosts.cloud_controller_manager);
  for (const NodeStatus& node : nodes) {
    if (!facts.holders.migration.empty() && node.name == facts.holders.migration) {
      facts.lease_held_by_healthy_manager = node.healthy && node.connected;
    }
  }
  return facts;
}

}  // namespace handoff::rollout
