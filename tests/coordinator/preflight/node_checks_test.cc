// The checks of the agents' node facts (coordinator/preflight/node_checks.h) against the Nodes of
// the healthy kubeadm control plane (tests/testdata/cluster/preflight.yaml): the healthy facts
// pass, each fault fails or warns exactly its check, naming the node and the object.
#include "coordinator/preflight/node_checks.h"

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/base/strings.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/coordinator/fake_cluster.h"

namespace handoff::preflight {
namespace {

using ::handoff::testing::FakeCluster;
using ::handoff::testing::ReadTestdata;
using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

class NodeChecksTest : public ::testing::Test {
 protected:
  NodeChecksTest() : cluster_(/*seed=*/false) {
    absl::Status seeded =
        cluster_.store().Seed(ReadTestdata("cluster/preflight.yaml"), "cluster/preflight.yaml");
    EXPECT_TRUE(seeded.ok()) << seeded;
    client_ = cluster_.Client(cluster_.Credentials());
    view_ = ReadClusterView(*client_, ClusterCheckOptions{});
  }

  // The seed's three control-plane nodes as their agents report them: named after their
  // instances, providerIDs matching, each instance tagged for the cluster "prod" (the managers'
  // cloud config names it).
  static std::vector<NodeFacts> Healthy() {
    std::vector<NodeFacts> nodes;
    for (int i = 0; i < 3; ++i) {
      NodeFacts facts;
      facts.node = StrCat("ip-10-0-1-1", i, ".ec2.internal");
      facts.local_hostname = facts.node;
      facts.instance_id = StrCat("i-0a1b2c3d4e5f6071", i);
      facts.availability_zone = StrCat("us-east-1", std::string(1, static_cast<char>('a' + i)));
      facts.cluster_tags = {{"prod", "owned"}};
      facts.cluster_tags_known = true;
      facts.cloud_config_cluster_id = "prod";
      nodes.push_back(facts);
    }
    return nodes;
  }

  std::map<std::string, CheckResult> run(const std::optional<std::vector<NodeFacts>>& facts,
                                         const std::string& settings_cluster_id = "") {
    std::map<std::string, CheckResult> results;
    for (CheckResult& result : RunNodeChecks(view_, facts, settings_cluster_id)) {
      results[result.name] = result;
    }
    return results;
  }

  FakeCluster cluster_;
  std::unique_ptr<kube::KubeClient> client_;
  ClusterView view_;
};

TEST_F(NodeChecksTest, TheHealthyNodesPassEveryCheck) {
  const std::map<std::string, CheckResult> results = run(Healthy());
  ASSERT_EQ(results.size(), 3u);
  for (const auto& [name, result] : results) {
    EXPECT_EQ(result.verdict, Verdict::kOk) << name << ": " << result.evidence.front();
  }
  EXPECT_THAT(results.at("cluster-tag").evidence,
              ElementsAre("3 nodes tagged: ip-10-0-1-10.ec2.internal "
                          "(kubernetes.io/cluster/prod=owned), ip-10-0-1-11.ec2.internal "
                          "(kubernetes.io/cluster/prod=owned), ip-10-0-1-12.ec2.internal "
                          "(kubernetes.io/cluster/prod=owned)"));
}

TEST_F(NodeChecksTest, NodeNamesAndStrayFilesFromTheAgentsFacts) {
  std::vector<NodeFacts> nodes = Healthy();
  std::map<std::string, CheckResult> results = run(nodes);
  EXPECT_EQ(results.at("node-names").verdict, Verdict::kOk);
  EXPECT_EQ(results.at("stray-files").verdict, Verdict::kOk);

  std::vector<NodeFacts> renamed = nodes;
  renamed[1].local_hostname = "ip-10-0-1-99.ec2.internal";
  results = run(renamed);
  // Found through the providerID still: a warning.
  EXPECT_EQ(results.at("node-names").verdict, Verdict::kWarn);
  EXPECT_THAT(results.at("node-names").evidence,
              Contains("Node ip-10-0-1-11.ec2.internal: its instance i-0a1b2c3d4e5f60711 is "
                       "named ip-10-0-1-99.ec2.internal (local-hostname)"));
  EXPECT_EQ(results.at("stray-files").verdict, Verdict::kOk);

  std::vector<NodeFacts> other_instance = nodes;
  other_instance[2].instance_id = "i-0fffffffffffffff0";
  results = run(other_instance);
  EXPECT_EQ(results.at("node-names").verdict, Verdict::kFail);
  EXPECT_THAT(results.at("node-names").evidence,
              Contains("Node ip-10-0-1-12.ec2.internal: providerID "
                       "\"aws:///us-east-1c/i-0a1b2c3d4e5f60712\", its instance is "
                       "aws:///us-east-1c/i-0fffffffffffffff0"));

  std::vector<NodeFacts> unread = nodes;
  unread[0].local_hostname.clear();
  unread[0].metadata_error = "the instance metadata did not answer";
  EXPECT_EQ(run(unread).at("node-names").verdict, Verdict::kWarn);

  std::vector<NodeFacts> stray = nodes;
  stray[2].stray_files.push_back(
      "/etc/kubernetes/manifests/etcd.yaml.orig: pod kube-system/etcd again");
  results = run(stray);
  EXPECT_EQ(results.at("stray-files").verdict, Verdict::kFail);
  EXPECT_THAT(results.at("stray-files").evidence,
              Contains("ip-10-0-1-12.ec2.internal: /etc/kubernetes/manifests/etcd.yaml.orig: pod "
                       "kube-system/etcd again"));
  EXPECT_EQ(results.at("node-names").verdict, Verdict::kOk);

  results = run(std::nullopt);
  EXPECT_EQ(results.at("node-names").verdict, Verdict::kWarn);
  EXPECT_EQ(results.at("stray-files").verdict, Verdict::kWarn);
  EXPECT_EQ(results.at("cluster-tag").verdict, Verdict::kWarn);
}

TEST_F(NodeChecksTest, AKubeletThatWouldRegisterUnderAnotherNameFails) {
  // The host renamed: once external, the kubelet registers by the host's name.
  std::vector<NodeFacts> nodes = Healthy();
  for (NodeFacts& facts : nodes) facts.kubelet_node_name = facts.node;
  EXPECT_EQ(run(nodes).at("node-names").verdict, Verdict::kOk);
  nodes[1].kubelet_node_name = "ip-10-0-1-11";
  const std::map<std::string, CheckResult> results = run(nodes);
  EXPECT_EQ(results.at("node-names").verdict, Verdict::kFail);
  EXPECT_THAT(results.at("node-names").evidence,
              ElementsAre("Node ip-10-0-1-11.ec2.internal: its kubelet goes by ip-10-0-1-11 "
                          "(--hostname-override, else the host name) and registers a new Node of "
                          "that name, without a providerID, once the move restarts it with "
                          "--cloud-provider=external"));
  EXPECT_THAT(results.at("node-names").action, HasSubstr("--hostname-override"));
  EXPECT_EQ(results.at("stray-files").verdict, Verdict::kOk);
  EXPECT_EQ(results.at("cluster-tag").verdict, Verdict::kOk);
}

TEST_F(NodeChecksTest, ATagRemovedFailsNamingTheNodeAndInstanceWithTheCommandThatFixesIt) {
  std::vector<NodeFacts> nodes = Healthy();
  nodes[1].cluster_tags.clear();
  const std::map<std::string, CheckResult> results = run(nodes);
  const CheckResult& tag = results.at("cluster-tag");
  EXPECT_EQ(tag.verdict, Verdict::kFail);
  EXPECT_THAT(tag.evidence, ElementsAre("ip-10-0-1-11.ec2.internal: instance i-0a1b2c3d4e5f60711 "
                                        "has no tag kubernetes.io/cluster/prod"));
  EXPECT_THAT(tag.action, HasSubstr("aws ec2 create-tags --resources i-0a1b2c3d4e5f60711 --tags "
                                    "Key=kubernetes.io/cluster/prod,Value=owned"));
  EXPECT_EQ(results.at("node-names").verdict, Verdict::kOk);
  EXPECT_EQ(results.at("stray-files").verdict, Verdict::kOk);
}

TEST_F(NodeChecksTest, AValueOtherThanOwnedOrSharedFails) {
  std::vector<NodeFacts> nodes = Healthy();
  nodes[0].cluster_tags["prod"] = "borrowed";
  nodes[2].cluster_tags["prod"] = "shared";
  const CheckResult tag = run(nodes).at("cluster-tag");
  EXPECT_EQ(tag.verdict, Verdict::kFail);
  EXPECT_THAT(tag.evidence, ElementsAre("ip-10-0-1-10.ec2.internal: instance i-0a1b2c3d4e5f60710 "
                                        "has kubernetes.io/cluster/prod=borrowed"));
}

TEST_F(NodeChecksTest, TheCloudConfigsIdComesFirstThenTheSettings) {
  // Tagged for another cluster: the id the managers look for decides.
  std::vector<NodeFacts> nodes = Healthy();
  for (NodeFacts& facts : nodes) facts.cloud_config_cluster_id.clear();
  EXPECT_EQ(run(nodes, "prod").at("cluster-tag").verdict, Verdict::kOk);
  EXPECT_EQ(run(nodes, "staging").at("cluster-tag").verdict, Verdict::kFail);
  nodes[0].cloud_config_cluster_id = "prod";
  const CheckResult tag = run(nodes, "staging").at("cluster-tag");
  EXPECT_THAT(tag.evidence, Contains(HasSubstr("ip-10-0-1-11.ec2.internal: instance "
                                               "i-0a1b2c3d4e5f60711 has no tag "
                                               "kubernetes.io/cluster/staging")));
  EXPECT_THAT(tag.evidence, Not(Contains(HasSubstr("ip-10-0-1-10.ec2.internal"))));
}

TEST_F(NodeChecksTest, WithoutAnIdTheOneClusterTagServesAsTheProviderTakesIt) {
  std::vector<NodeFacts> nodes = Healthy();
  for (NodeFacts& facts : nodes) facts.cloud_config_cluster_id.clear();
  EXPECT_EQ(run(nodes).at("cluster-tag").verdict, Verdict::kOk);
  nodes[1].cluster_tags.clear();
  nodes[2].cluster_tags["other"] = "shared";
  const CheckResult tag = run(nodes).at("cluster-tag");
  EXPECT_EQ(tag.verdict, Verdict::kFail);
  EXPECT_THAT(tag.evidence, Contains(HasSubstr("ip-10-0-1-11.ec2.internal: instance "
                                               "i-0a1b2c3d4e5f60711 carries no "
                                               "kubernetes.io/cluster/<id> tag")));
  EXPECT_THAT(tag.evidence, Contains(HasSubstr("ip-10-0-1-12.ec2.internal: instance "
                                               "i-0a1b2c3d4e5f60712 carries several cluster tags "
                                               "(kubernetes.io/cluster/other, "
                                               "kubernetes.io/cluster/prod)")));
}

TEST_F(NodeChecksTest, ATagEc2CouldNotShowWarnsWithTheCommandThatShowsIt) {
  std::vector<NodeFacts> nodes = Healthy();
  nodes[2].cluster_tags.clear();
  nodes[2].cluster_tags_known = false;
  nodes[2].cluster_tags_error =
      "EC2 refused DescribeInstances for i-0a1b2c3d4e5f60712: UnauthorizedOperation: no";
  const CheckResult tag = run(nodes).at("cluster-tag");
  EXPECT_EQ(tag.verdict, Verdict::kWarn);
  EXPECT_THAT(
      tag.evidence,
      ElementsAre("ip-10-0-1-12.ec2.internal: EC2 refused DescribeInstances for "
                  "i-0a1b2c3d4e5f60712: UnauthorizedOperation: no; check it yourself: `aws "
                  "ec2 describe-tags --filters Name=resource-id,Values=i-0a1b2c3d4e5f60712 "
                  "Name=key,Values=kubernetes.io/cluster/prod` must show the value owned or "
                  "shared"));
  EXPECT_THAT(tag.action, HasSubstr("ec2:DescribeInstances"));
}

TEST(NodeFactsFromReportTest, CarriesEveryFactAndSaysWhenTheAgentHasNotReported) {
  v1::NodeFacts reported;
  reported.set_instance_id("i-1");
  reported.set_local_hostname("ip-10-0-1-10.ec2.internal");
  reported.set_availability_zone("us-east-1a");
  reported.add_stray_files("x.bak: not a pod");
  (*reported.mutable_cluster_tags())["prod"] = "owned";
  reported.set_cluster_tags_known(true);
  reported.set_cloud_config_cluster_id("prod");
  reported.set_kubelet_flags_known(true);
  reported.set_image_credential_provider_config("/etc/kubernetes/ecr.yaml");
  const NodeFacts facts = FromReport("cp-1", &reported);
  EXPECT_EQ(facts.node, "cp-1");
  EXPECT_EQ(facts.instance_id, "i-1");
  EXPECT_EQ(facts.local_hostname, "ip-10-0-1-10.ec2.internal");
  EXPECT_EQ(facts.availability_zone, "us-east-1a");
  EXPECT_THAT(facts.stray_files, ElementsAre("x.bak: not a pod"));
  EXPECT_EQ(facts.cluster_tags.at("prod"), "owned");
  EXPECT_TRUE(facts.cluster_tags_known);
  EXPECT_EQ(facts.cloud_config_cluster_id, "prod");
  const std::optional<KubeletFacts> kubelet = KubeletFromReport(reported);
  ASSERT_TRUE(kubelet.has_value());
  EXPECT_TRUE(kubelet->credential_provider_config);
  EXPECT_FALSE(kubelet->credential_provider_bin_dir);
  reported.set_kubelet_flags_known(false);
  EXPECT_FALSE(KubeletFromReport(reported).has_value());

  const NodeFacts unreported = FromReport("cp-2", nullptr);
  EXPECT_EQ(unreported.metadata_error, "its agent has not reported the node");
  EXPECT_FALSE(unreported.cluster_tags_known);
}

}  // namespace
}  // namespace handoff::preflight
