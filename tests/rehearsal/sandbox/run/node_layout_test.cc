// The simulated nodes are what handoff-agent expects of a kubeadm 1.26 node on AWS.
#include "rehearsal/sandbox/node_layout.h"

#include "absl/time/clock.h"
#include "agent/engine/classify.h"
#include "agent/engine/node_snapshot.h"
#include "agent/engine/settings.h"
#include "agent/manifest/static_pod.h"
#include "coordinator/kube/nodes.h"
#include "common/kube/resource.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "rehearsal/fakeapi/api_store.h"
#include "tests/support/memory_file_system.h"

namespace handoff::sandbox {
namespace {

LayoutInputs Inputs() {
  absl::StatusOr<pki::KeyPair> ca =
      pki::CreateCertificateAuthority("test", absl::Now(), absl::Hours(1));
  EXPECT_TRUE(ca.ok());
  pki::CertificateRequest request;
  request.common_name = "system:kube-controller-manager";
  request.client = true;
  absl::StatusOr<pki::KeyPair> client = pki::IssueCertificate(*ca, request, absl::Now());
  EXPECT_TRUE(client.ok());
  LayoutInputs inputs;
  inputs.api_server_url = "https://127.0.0.1:6443";
  inputs.kube_ca_pem = ca->certificate_pem;
  inputs.controller_manager_client = *client;
  return inputs;
}

TEST(NodeLayoutTest, ANodeIsAnInTreeKubeadmNodeBoundToItsOwnAddress) {
  MemoryFileSystem fs;
  const SandboxNode node = MakeSandboxNode(2);
  ASSERT_TRUE(WriteNodeLayout(fs, node, Inputs()).ok());

  absl::StatusOr<NodeSnapshot> snapshot = ReadNodeSnapshot(fs, NodePaths());
  ASSERT_TRUE(snapshot.ok()) << snapshot.status();
  Classification classification = Classify(*snapshot);
  EXPECT_EQ(classification.state, NodeState::kInTree)
      << ::testing::PrintToString(classification.problems);

  absl::StatusOr<std::string> text =
      fs.ReadFile("/etc/kubernetes/manifests/kube-controller-manager.yaml");
  ASSERT_TRUE(text.ok());
  absl::StatusOr<StaticPod> kcm = StaticPod::Parse(*text, "kcm");
  ASSERT_TRUE(kcm.ok()) << kcm.status();
  EXPECT_EQ(kcm->GetFlag(0, "bind-address"), "127.0.1.2");
  EXPECT_EQ(kcm->GetFlag(0, "cloud-provider"), "aws");
  EXPECT_EQ(kcm->GetFlag(0, "leader-elect-lease-duration"), "1s");
  EXPECT_EQ(kcm->GetFlag(0, "leader-elect-renew-deadline"), "700ms");
  EXPECT_EQ(kcm->GetFlag(0, "leader-elect-retry-period"), "200ms");
  EXPECT_THAT(*fs.ReadFile("/etc/kubernetes/manifests/kube-apiserver.yaml"),
              ::testing::HasSubstr("--bind-address=127.0.1.2"));
  EXPECT_THAT(*fs.ReadFile("/etc/kubernetes/controller-manager.conf"),
              ::testing::HasSubstr("server: https://127.0.0.1:6443"));
  EXPECT_THAT(*fs.ReadFile("/var/lib/kubelet/kubeadm-flags.env"),
              ::testing::HasSubstr("--cloud-provider=aws"));
}

// The model cluster gives no env: the manifest is kubeadm's, with no env field.
TEST(NodeLayoutTest, TheClusterGivesTheControllerManagerItsEnvAndCloudConfig) {
  MemoryFileSystem plain;
  ASSERT_TRUE(WriteNodeLayout(plain, MakeSandboxNode(1), Inputs()).ok());
  EXPECT_THAT(*plain.ReadFile("/etc/kubernetes/manifests/kube-controller-manager.yaml"),
              ::testing::Not(::testing::HasSubstr("env:")));
  EXPECT_EQ(*plain.ReadFile("/etc/kubernetes/cloud.conf"), "[Global]\nZone = us-east-1a\n");

  MemoryFileSystem fs;
  LayoutInputs inputs = Inputs();
  inputs.cloud_config = "[Global]\nKubernetesClusterID = sandbox\n";
  inputs.controller_manager_env = {
      {"AWS_EC2_METADATA_SERVICE_ENDPOINT", "http://127.0.1.1:1338/"},
      {"QUOTED", "a \"b\" \\c"}};
  ASSERT_TRUE(WriteNodeLayout(fs, MakeSandboxNode(1), inputs).ok());
  EXPECT_EQ(*fs.ReadFile("/etc/kubernetes/cloud.conf"), "[Global]\nKubernetesClusterID = sandbox\n");
  const std::string text = *fs.ReadFile("/etc/kubernetes/manifests/kube-controller-manager.yaml");
  EXPECT_THAT(text, ::testing::HasSubstr(
                        "    image: registry.k8s.io/kube-controller-manager:v1.26.9\n"
                        "    env:\n"
                        "    - name: AWS_EC2_METADATA_SERVICE_ENDPOINT\n"
                        "      value: \"http://127.0.1.1:1338/\"\n"
                        "    - name: QUOTED\n"
                        "      value: \"a \\\"b\\\" \\\\c\"\n"
                        "    imagePullPolicy: IfNotPresent\n"));
  // Still a kubeadm in-tree node to the agent.
  absl::StatusOr<NodeSnapshot> snapshot = ReadNodeSnapshot(fs, NodePaths());
  ASSERT_TRUE(snapshot.ok()) << snapshot.status();
  EXPECT_EQ(Classify(*snapshot).state, NodeState::kInTree);
}

TEST(NodeLayoutTest, TheRolloutSettingsParseWithTheSandboxLeaseTiming) {
  absl::StatusOr<Settings> settings = ParseSettings(RolloutSettingsYaml(LeaseTiming()), "sandbox");
  ASSERT_TRUE(settings.ok()) << settings.status();
  EXPECT_EQ(settings->ccm.extra_args.at("leader-elect-lease-duration"), "1s");
  EXPECT_EQ(settings->ccm.extra_args.at("leader-elect-renew-deadline"), "700ms");
  EXPECT_THAT(settings->ccm.image, ::testing::HasSubstr("cloud-controller-manager:v1.27"));
}

TEST(NodeLayoutTest, TheSeededNodesCarryValidAwsProviderIds) {
  std::vector<SandboxNode> nodes;
  for (int i = 1; i <= 5; ++i) nodes.push_back(MakeSandboxNode(i));
  fakeapi::ApiStore store;
  ASSERT_TRUE(store.Seed(ClusterSeedYaml(nodes), "seed").ok());
  std::vector<kube::Json> listed = store.List(kube::kNodes);
  ASSERT_EQ(listed.size(), 5U);
  for (const kube::NodeCheck& check : kube::CheckNodes(listed)) {
    EXPECT_TRUE(check.ok()) << check.name << ": " << ::testing::PrintToString(check.problems);
  }
  EXPECT_EQ(nodes[4].ip, "127.0.1.5");
}

TEST(NodeLayoutTest, DurationsAreWrittenAsTheManagersReadThem) {
  EXPECT_EQ(GoDuration(absl::Seconds(15)), "15s");
  EXPECT_EQ(GoDuration(absl::Milliseconds(700)), "700ms");
}

}  // namespace
}  // namespace handoff::sandbox
