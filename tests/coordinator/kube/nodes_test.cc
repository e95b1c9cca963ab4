#include "coordinator/kube/nodes.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/coordinator/fake_cluster.h"

namespace handoff::kube {
namespace {

using ::handoff::testing::FakeCluster;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Optional;
using ::testing::SizeIs;

Json Node(const std::string& name, const std::string& provider_id, bool uninitialized = false,
          bool control_plane = false) {
  Json node = Json::object();
  node["metadata"] = {{"name", name}};
  if (control_plane) {
    node["metadata"]["labels"] = {{"node-role.kubernetes.io/control-plane", ""}};
  }
  node["spec"] = Json::object();
  if (!provider_id.empty()) node["spec"]["providerID"] = provider_id;
  if (uninitialized) {
    node["spec"]["taints"] =
        Json::array({{{"key", "node.cloudprovider.kubernetes.io/uninitialized"},
                      {"value", "true"},
                      {"effect", "NoSchedule"}}});
  }
  return node;
}

TEST(AwsProviderIdTest, WellFormed) {
  EXPECT_EQ(AwsProviderIdProblem("aws:///us-east-1a/i-0123456789abcdef0"), std::nullopt);
  EXPECT_EQ(AwsProviderIdProblem("aws:///eu-west-3c/i-12345678"), std::nullopt);
  EXPECT_EQ(AwsProviderIdProblem("aws:///us-gov-west-1b/i-0123456789abcdef0"), std::nullopt);
  EXPECT_EQ(AwsProviderIdProblem("aws:///us-west-2-lax-1a/i-0123456789abcdef0"), std::nullopt);
}

TEST(AwsProviderIdTest, Malformed) {
  EXPECT_THAT(AwsProviderIdProblem(""), Optional(std::string("spec.providerID is empty")));
  EXPECT_THAT(AwsProviderIdProblem("aws:///i-123"),
              Optional(std::string(
                  "spec.providerID \"aws:///i-123\" is malformed: no availability zone; expected "
                  "aws:///<zone>/<instance-id>, e.g. aws:///us-east-1a/i-0123456789abcdef0")));
  EXPECT_THAT(AwsProviderIdProblem("aws:///us-east-1a/i-123"),
              Optional(HasSubstr("\"i-123\" is not an EC2 instance id")));
  EXPECT_THAT(AwsProviderIdProblem("aws://us-east-1a/i-0123456789abcdef0"),
              Optional(HasSubstr("does not start with aws:///")));
  EXPECT_THAT(AwsProviderIdProblem("gce://project/zone/name"),
              Optional(HasSubstr("does not start with aws:///")));
  EXPECT_THAT(AwsProviderIdProblem("aws:///US-EAST-1A/i-0123456789abcdef0"),
              Optional(HasSubstr("\"US-EAST-1A\" is not an availability zone")));
  EXPECT_THAT(AwsProviderIdProblem("aws:///us-east-1a/i-0123456789abcdef0/x"),
              Optional(HasSubstr("too many path segments")));
}

TEST(CheckNodesTest, ReportsEachBadNodeByName) {
  std::vector<NodeCheck> checks = CheckNodes({
      Node("worker-good", "aws:///us-east-1a/i-0123456789abcdef0"),
      Node("cp-empty", "", false, true),
      Node("cp-malformed", "aws:///i-123", false, true),
      Node("worker-tainted", "aws:///us-east-1b/i-0123456789abcdef1", true),
  });
  ASSERT_THAT(checks, SizeIs(4));
  // Sorted by name.
  EXPECT_EQ(checks[0].name, "cp-empty");
  EXPECT_TRUE(checks[0].control_plane);
  EXPECT_THAT(checks[0].problems, ElementsAre("spec.providerID is empty"));
  EXPECT_EQ(checks[1].name, "cp-malformed");
  EXPECT_THAT(checks[1].problems, ElementsAre(HasSubstr("is malformed: no availability zone")));
  EXPECT_EQ(checks[2].name, "worker-good");
  EXPECT_TRUE(checks[2].ok());
  EXPECT_FALSE(checks[2].control_plane);
  EXPECT_EQ(checks[3].name, "worker-tainted");
  EXPECT_THAT(checks[3].problems,
              ElementsAre(HasSubstr("has the node.cloudprovider.kubernetes.io/uninitialized "
                                    "taint: no cloud-controller-manager has initialised it yet")));
}

TEST(CheckNodesTest, TwoNodesForOneInstance) {
  std::vector<NodeCheck> checks = CheckNodes({
      Node("ip-10-0-1-10", "aws:///us-east-1a/i-0123456789abcdef0"),
      Node("ip-10-0-1-10-old", "aws:///us-east-1a/i-0123456789abcdef0"),
  });
  EXPECT_THAT(checks[0].problems, ElementsAre(HasSubstr("has the same providerID as "
                                                        "ip-10-0-1-10-old: one of them is a "
                                                        "stale Node object")));
  EXPECT_THAT(checks[1].problems, ElementsAre(HasSubstr("same providerID as ip-10-0-1-10:")));
}

TEST(ListNodesTest, ControlPlaneBySelector) {
  FakeCluster cluster;
  std::unique_ptr<KubeClient> client = cluster.Client();
  absl::StatusOr<std::vector<Json>> all = ListNodes(*client, false);
  ASSERT_TRUE(all.ok()) << all.status();
  EXPECT_THAT(*all, SizeIs(5));
  absl::StatusOr<std::vector<Json>> control_plane = ListNodes(*client, true);
  ASSERT_TRUE(control_plane.ok()) << control_plane.status();
  std::vector<std::string> names;
  for (const Json& node : *control_plane) names.push_back(ObjectName(node));
  EXPECT_THAT(names, ElementsAre("ip-10-0-1-10.ec2.internal", "ip-10-0-1-11.ec2.internal",
                                 "ip-10-0-1-12.ec2.internal"));
  for (const NodeCheck& check : CheckNodes(*all)) EXPECT_TRUE(check.ok()) << check.name;
}

}  // namespace
}  // namespace handoff::kube
