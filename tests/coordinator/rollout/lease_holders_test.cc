// Which node holds each lease (rollout/lease_holders.h): hostnames against node names, and the
// engine's lease facts.
#include "coordinator/rollout/lease_holders.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace handoff::rollout {
namespace {

std::vector<NodeStatus> Nodes() {
  std::vector<NodeStatus> nodes;
  for (const char* name : {"ip-10-0-1-5.ec2.internal", "cp-2", "cp-3"}) {
    NodeStatus node;
    node.name = name;
    node.state = NodeState::kMigrated;
    node.connected = node.healthy = true;
    nodes.push_back(node);
  }
  return nodes;
}

TEST(HostnameMatchesNodeTest, EqualOrOneIsTheOthersFirstLabel) {
  EXPECT_TRUE(HostnameMatchesNode("cp-2", "cp-2"));
  EXPECT_TRUE(HostnameMatchesNode("ip-10-0-1-5", "ip-10-0-1-5.ec2.internal"));
  EXPECT_TRUE(HostnameMatchesNode("cp-2.example.com", "cp-2"));
  EXPECT_FALSE(HostnameMatchesNode("cp-2", "cp-20"));
  EXPECT_FALSE(HostnameMatchesNode("ip-10-0-1", "ip-10-0-1-5.ec2.internal"));
  EXPECT_FALSE(HostnameMatchesNode("", "cp-2"));
}

TEST(FactsFromLeasesTest, EachHolderIsTheNodeItsHostNames) {
  LeaseHosts hosts;
  hosts.migration = "ip-10-0-1-5";
  hosts.kube_controller_manager = "cp-3";
  hosts.cloud_controller_manager = "elsewhere";  // a host outside the rollout is nobody
  const ClusterFacts facts = FactsFromLeases(Nodes(), hosts, /*rbac_ready=*/true);
  EXPECT_TRUE(facts.rbac_ready);
  EXPECT_EQ(facts.holders.migration, "ip-10-0-1-5.ec2.internal");
  EXPECT_EQ(facts.holders.kube_controller_manager, "cp-3");
  EXPECT_EQ(facts.holders.cloud_controller_manager, "");
  EXPECT_TRUE(facts.lease_held_by_healthy_manager);
}

TEST(FactsFromLeasesTest, TheMigrationLeaseCountsOnlyOnAConnectedHealthyNode) {
  LeaseHosts hosts;
  hosts.migration = "cp-2";
  std::vector<NodeStatus> nodes = Nodes();
  nodes[1].healthy = false;
  EXPECT_FALSE(FactsFromLeases(nodes, hosts, true).lease_held_by_healthy_manager);
  nodes[1].healthy = true;
  nodes[1].connected = false;
  EXPECT_FALSE(FactsFromLeases(nodes, hosts, true).lease_held_by_healthy_manager);
  hosts.migration = "elsewhere";
  EXPECT_FALSE(FactsFromLeases(Nodes(), hosts, true).lease_held_by_healthy_manager);
  EXPECT_FALSE(FactsFromLeases(Nodes(), LeaseHosts{}, false).lease_held_by_healthy_manager);
}

}  // namespace
}  // namespace handoff::rollout
