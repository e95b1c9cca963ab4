#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "rehearsal/sandbox/kubeadm/kubeadm_cluster.h"

namespace handoff::sandbox {
namespace {

using ::testing::HasSubstr;

TEST(KubeadmNetworkTest, TheDefaultIsAWSsDefaultVpcRange) {
  absl::StatusOr<KubeadmNetwork> network = ParseKubeadmNetwork("");
  ASSERT_TRUE(network.ok()) << network.status();
  EXPECT_EQ(network->Cidr(), "172.31.250.0/24");
  EXPECT_EQ(network->BridgeIp(), "172.31.250.1");
  EXPECT_EQ(network->EndpointIp(), "172.31.250.2");
}

TEST(KubeadmNetworkTest, NodesAreNamedByTheirAddressesInTheirZonesSlice) {
  absl::StatusOr<KubeadmNetwork> network = ParseKubeadmNetwork("10.1.252.0/24");
  ASSERT_TRUE(network.ok()) << network.status();
  const SandboxNode first = MakeKubeadmNode(*network, 1);
  EXPECT_EQ(first.ip, "10.1.252.10");
  EXPECT_EQ(first.name, "ip-10-1-252-10.ec2.internal");
  EXPECT_EQ(first.zone, "us-east-1a");
  EXPECT_EQ(MakeKubeadmNode(*network, 2).name, "ip-10-1-252-74.ec2.internal");
  EXPECT_EQ(MakeKubeadmNode(*network, 3).zone, "us-east-1c");
  EXPECT_EQ(MakeKubeadmNode(*network, 3).ip, "10.1.252.138");
  // The fourth machine is the first zone's second.
  EXPECT_EQ(MakeKubeadmNode(*network, 4).ip, "10.1.252.11");
  EXPECT_EQ(MakeKubeadmNode(*network, 4).zone, "us-east-1a");
}

TEST(KubeadmNetworkTest, AnythingButASlash24IsRefusedNamingTheFlag) {
  for (const char* bad : {"172.31.250.0/16", "172.31.250.1/24", "172.31.0/24", "172.31.256.0/24",
                          "172.31.x.0/24", "172.031.1.0/24", "172.31..0/24", "1.2.3.4.0/24"}) {
    absl::StatusOr<KubeadmNetwork> network = ParseKubeadmNetwork(bad);
    ASSERT_FALSE(network.ok()) << bad;
    EXPECT_THAT(network.status().message(), HasSubstr(std::string("--network ") + bad)) << bad;
    EXPECT_THAT(network.status().message(), HasSubstr("A.B.C.0/24")) << bad;
  }
}

}  // namespace
}  // namespace handoff::sandbox
