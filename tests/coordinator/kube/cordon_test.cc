#include "coordinator/kube/cordon.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/coordinator/fake_cluster.h"

namespace handoff::kube {
namespace {

using ::handoff::testing::FakeCluster;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

// A Node as RKE2 (control-plane=true) or RKE (controlplane=true) labels it, or a worker.
Json Node(const std::string& name, const std::string& role_label, bool unschedulable = false) {
  Json node = Json::object();
  node["apiVersion"] = "v1";
  node["kind"] = "Node";
  node["metadata"] = {{"name", name}, {"labels", {{"kubernetes.io/hostname", name}}}};
  if (!role_label.empty()) node["metadata"]["labels"][role_label] = "true";
  node["spec"] = {{"providerID", "aws:///us-east-1a/i-0123456789abcdef0"}};
  if (unschedulable) node["spec"]["unschedulable"] = true;
  return node;
}

constexpr char kRke2Role[] = "node-role.kubernetes.io/control-plane";
constexpr char kRkeRole[] = "node-role.kubernetes.io/controlplane";

// The object without what the server changes on every write, keys compared in any order (the
// server puts apiVersion and kind first in what it returns).
nlohmann::json WithoutVersion(Json node) {
  node["metadata"].erase("resourceVersion");
  return nlohmann::json::parse(node.dump());
}

TEST(RancherDistributionTest, SelectsTheControlPlaneLabel) {
  absl::StatusOr<RancherDistribution> rke2 = ParseRancherDistribution("rke2");
  ASSERT_TRUE(rke2.ok());
  EXPECT_EQ(ControlPlaneSelector(*rke2), "node-role.kubernetes.io/control-plane=true");
  absl::StatusOr<RancherDistribution> rke = ParseRancherDistribution("rke");
  ASSERT_TRUE(rke.ok());
  EXPECT_EQ(ControlPlaneSelector(*rke), "node-role.kubernetes.io/controlplane=true");
  absl::StatusOr<RancherDistribution> bad = ParseRancherDistribution("k3s");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(),
            "--distribution: \"k3s\" is not a Rancher distribution; expected rke2 or rke");
}

TEST(CordonDecisionTest, CordonRecordsAndUncordonRestores) {
  const Json before = Node("cp-1", kRke2Role);
  Json node = before;
  EXPECT_FALSE(IsCordoned(node));
  EXPECT_TRUE(CordonAndRecord(node));
  EXPECT_TRUE(IsCordoned(node));
  EXPECT_TRUE(CordonedByHandoff(node));
  EXPECT_EQ(node["metadata"]["annotations"]["handoff.io/cordoned-by"], "handoffctl");
  EXPECT_FALSE(CordonAndRecord(node));  // twice changes nothing
  EXPECT_TRUE(UncordonRecorded(node));
  EXPECT_EQ(node, before);
  EXPECT_FALSE(UncordonRecorded(node));
}

TEST(CordonDecisionTest, KeepsOtherAnnotations) {
  Json node = Node("cp-1", kRke2Role);
  node["metadata"]["annotations"] = {{"rke2.io/hostname", "cp-1"}};
  const Json before = node;
  ASSERT_TRUE(CordonAndRecord(node));
  ASSERT_TRUE(UncordonRecorded(node));
  EXPECT_EQ(node, before);
}

TEST(CordonDecisionTest, LeavesSomeoneElsesCordonAlone) {
  Json node = Node("cp-1", kRke2Role, /*unschedulable=*/true);
  const Json before = node;
  EXPECT_FALSE(CordonAndRecord(node));
  EXPECT_FALSE(CordonedByHandoff(node));
  EXPECT_FALSE(UncordonRecorded(node));
  EXPECT_EQ(node, before);
}

TEST(CordonDecisionTest, ListsTheNodesNotCordoned) {
  EXPECT_THAT(UncordonedNodes({Node("b", kRke2Role), Node("c", kRke2Role, true),
                               Node("a", kRke2Role)}),
              ElementsAre("a", "b"));
}

class CordonApiTest : public ::testing::Test {
 protected:
  CordonApiTest() : cluster_(/*seed=*/false), client_(cluster_.Client()) {
    Put(Node("cp-1", kRke2Role));
    Put(Node("cp-2", kRke2Role));
    Put(Node("cp-3", kRke2Role));
    Put(Node("worker-1", ""));
    Put(Node("rke-cp-1", kRkeRole));
  }
  void Put(const Json& node) { ASSERT_TRUE(cluster_.store().Put(node).ok()); }
  Json Stored(const std::string& name) {
    std::optional<Json> node = cluster_.store().Get(kNodes, "", name);
    EXPECT_TRUE(node.has_value()) << name;
    return node.value_or(Json::object());
  }

  FakeCluster cluster_;
  std::unique_ptr<KubeClient> client_;
};

TEST_F(CordonApiTest, UncordonAfterCordonRestoresEveryNodeExactly) {
  std::map<std::string, nlohmann::json> before;
  for (const char* name : {"cp-1", "cp-2", "cp-3", "worker-1", "rke-cp-1"}) {
    before[name] = WithoutVersion(Stored(name));
  }
  absl::StatusOr<CordonReport> cordoned = CordonControlPlane(*client_, RancherDistribution::kRke2);
  ASSERT_TRUE(cordoned.ok()) << cordoned.status();
  EXPECT_THAT(cordoned->cordoned, ElementsAre("cp-1", "cp-2", "cp-3"));
  EXPECT_THAT(cordoned->already_by_others, IsEmpty());
  for (const char* name : {"cp-1", "cp-2", "cp-3"}) {
    EXPECT_TRUE(IsCordoned(Stored(name))) << name;
    EXPECT_TRUE(CordonedByHandoff(Stored(name))) << name;
  }
  // Neither a worker nor a node labelled the RKE way is an RKE2 control-plane node.
  EXPECT_FALSE(IsCordoned(Stored("worker-1")));
  EXPECT_FALSE(IsCordoned(Stored("rke-cp-1")));

  absl::StatusOr<CordonReport> again = CordonControlPlane(*client_, RancherDistribution::kRke2);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_THAT(again->cordoned, IsEmpty());
  EXPECT_THAT(again->already_by_handoff, ElementsAre("cp-1", "cp-2", "cp-3"));

  absl::StatusOr<UncordonReport> uncordoned =
      UncordonControlPlane(*client_, RancherDistribution::kRke2);
  ASSERT_TRUE(uncordoned.ok()) << uncordoned.status();
  EXPECT_THAT(uncordoned->uncordoned, ElementsAre("cp-1", "cp-2", "cp-3"));
  for (const auto& [name, node] : before) EXPECT_EQ(WithoutVersion(Stored(name)), node) << name;
}

TEST_F(CordonApiTest, NodeSomeoneElseCordonedStaysCordonedAndIsNamed) {
  Put(Node("cp-2", kRke2Role, /*unschedulable=*/true));
  const Json cp2 = Stored("cp-2");
  absl::StatusOr<CordonReport> cordoned = CordonControlPlane(*client_, RancherDistribution::kRke2);
  ASSERT_TRUE(cordoned.ok()) << cordoned.status();
  EXPECT_THAT(cordoned->cordoned, ElementsAre("cp-1", "cp-3"));
  EXPECT_THAT(cordoned->already_by_others, ElementsAre("cp-2"));
  EXPECT_EQ(Stored("cp-2"), cp2);  // not written: no record added

  absl::StatusOr<UncordonReport> uncordoned =
      UncordonControlPlane(*client_, RancherDistribution::kRke2);
  ASSERT_TRUE(uncordoned.ok()) << uncordoned.status();
  EXPECT_THAT(uncordoned->uncordoned, ElementsAre("cp-1", "cp-3"));
  EXPECT_THAT(uncordoned->left_cordoned, ElementsAre("cp-2"));
  EXPECT_TRUE(IsCordoned(Stored("cp-2")));
  EXPECT_FALSE(IsCordoned(Stored("cp-1")));
}

TEST_F(CordonApiTest, RkeSelectsItsOwnLabel) {
  absl::StatusOr<CordonReport> cordoned = CordonControlPlane(*client_, RancherDistribution::kRke);
  ASSERT_TRUE(cordoned.ok()) << cordoned.status();
  EXPECT_THAT(cordoned->cordoned, ElementsAre("rke-cp-1"));
  EXPECT_FALSE(IsCordoned(Stored("cp-1")));
}

TEST_F(CordonApiTest, ConflictIsReReadAndJudgedAgain) {
  // Between handoff's read and its write someone labels cp-1 (the write is retried and keeps the
  // label) and someone cordons cp-2 (the retry sees a cordon that is not handoff's).
  cluster_.store().InjectConflicts(kNodes, "", "cp-1", 1, [](Json& node) {
    node["metadata"]["labels"]["team"] = "platform";
  });
  cluster_.store().InjectConflicts(kNodes, "", "cp-2", 1, [](Json& node) {
    node["spec"]["unschedulable"] = true;
  });
  absl::StatusOr<CordonReport> cordoned = CordonControlPlane(*client_, RancherDistribution::kRke2);
  ASSERT_TRUE(cordoned.ok()) << cordoned.status();
  EXPECT_EQ(cordoned->conflicts, 2);
  EXPECT_THAT(cordoned->cordoned, ElementsAre("cp-1", "cp-3"));
  EXPECT_THAT(cordoned->already_by_others, ElementsAre("cp-2"));
  EXPECT_EQ(Stored("cp-1")["metadata"]["labels"]["team"], "platform");
  EXPECT_TRUE(CordonedByHandoff(Stored("cp-1")));
  EXPECT_FALSE(CordonedByHandoff(Stored("cp-2")));
}

TEST_F(CordonApiTest, WriteRefusedIsReported) {
  cluster_.store().Forbid("*", "update", "nodes");
  absl::StatusOr<CordonReport> cordoned = CordonControlPlane(*client_, RancherDistribution::kRke2);
  ASSERT_FALSE(cordoned.ok());
  EXPECT_EQ(cordoned.status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(cordoned.status().message(), HasSubstr("nodes"));
}

}  // namespace
}  // namespace handoff::kube
