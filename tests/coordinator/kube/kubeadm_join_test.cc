#include "coordinator/kube/kubeadm_join.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "yaml-cpp/yaml.h"

namespace handoff::kube {
namespace {

using ::testing::HasSubstr;

constexpr char kToken[] = "abcdef.0123456789abcdef";
constexpr char kHash[] =
    "sha256:6d0ed7fd2c8e2b5c9f1c0b7a3d5e4f60718293a4b5c6d7e8f90123456789abcd";

WorkerJoinOptions External() {
  WorkerJoinOptions options;
  options.api_server_endpoint = "10.0.0.10:6443";
  options.token = kToken;
  options.ca_cert_hashes = {kHash};
  options.node_name = "ip-10-0-1-7.ec2.internal";
  options.credential_provider_config = "/etc/kubernetes/image-credential-provider-config.yaml";
  options.credential_provider_bin_dir = "/usr/libexec/kubelet-image-credential-provider-plugins";
  return options;
}

TEST(WorkerJoinTest, AfterTheMoveTheKubeletJoinsExternalWithTheCredentialProvider) {
  absl::StatusOr<std::string> text = RenderWorkerJoinConfiguration(External());
  ASSERT_TRUE(text.ok()) << text.status();
  const YAML::Node doc = YAML::Load(*text);
  EXPECT_EQ(doc["apiVersion"].as<std::string>(), "kubeadm.k8s.io/v1beta3");
  EXPECT_EQ(doc["kind"].as<std::string>(), "JoinConfiguration");
  const YAML::Node token = doc["discovery"]["bootstrapToken"];
  EXPECT_EQ(token["apiServerEndpoint"].as<std::string>(), "10.0.0.10:6443");
  EXPECT_EQ(token["token"].as<std::string>(), kToken);
  ASSERT_EQ(token["caCertHashes"].size(), 1u);
  EXPECT_EQ(token["caCertHashes"][0].as<std::string>(), kHash);
  EXPECT_FALSE(token["unsafeSkipCAVerification"]);
  const YAML::Node registration = doc["nodeRegistration"];
  EXPECT_EQ(registration["name"].as<std::string>(), "ip-10-0-1-7.ec2.internal");
  EXPECT_FALSE(registration["criSocket"]);
  const YAML::Node args = registration["kubeletExtraArgs"];
  EXPECT_EQ(args.size(), 3u);
  EXPECT_EQ(args["cloud-provider"].as<std::string>(), "external");
  EXPECT_EQ(args["image-credential-provider-config"].as<std::string>(),
            "/etc/kubernetes/image-credential-provider-config.yaml");
  EXPECT_EQ(args["image-credential-provider-bin-dir"].as<std::string>(),
            "/usr/libexec/kubelet-image-credential-provider-plugins");
  // No --cloud-config: the external kubelet reads none.
  EXPECT_THAT(*text, ::testing::Not(HasSubstr("cloud-config")));
}

TEST(WorkerJoinTest, DuringTheRollbackTheKubeletJoinsInTree) {
  WorkerJoinOptions options = External();
  options.target = WorkerJoinTarget::kInTree;
  options.node_name.clear();
  options.cri_socket = "unix:///run/containerd/containerd.sock";
  absl::StatusOr<std::string> text = RenderWorkerJoinConfiguration(options);
  ASSERT_TRUE(text.ok()) << text.status();
  const YAML::Node registration = YAML::Load(*text)["nodeRegistration"];
  EXPECT_FALSE(registration["name"]);
  EXPECT_EQ(registration["criSocket"].as<std::string>(), "unix:///run/containerd/containerd.sock");
  ASSERT_EQ(registration["kubeletExtraArgs"].size(), 1u);
  EXPECT_EQ(registration["kubeletExtraArgs"]["cloud-provider"].as<std::string>(), "aws");
}

TEST(WorkerJoinTest, DiscoveryByFileOrWithoutTheCaHash) {
  WorkerJoinOptions file = External();
  file.api_server_endpoint.clear();
  file.token.clear();
  file.ca_cert_hashes.clear();
  file.discovery_file = "/etc/kubernetes/discovery.conf";
  absl::StatusOr<std::string> text = RenderWorkerJoinConfiguration(file);
  ASSERT_TRUE(text.ok()) << text.status();
  const YAML::Node discovery = YAML::Load(*text)["discovery"];
  EXPECT_EQ(discovery["file"]["kubeConfigPath"].as<std::string>(),
            "/etc/kubernetes/discovery.conf");
  EXPECT_FALSE(discovery["bootstrapToken"]);

  WorkerJoinOptions unsafe = External();
  unsafe.ca_cert_hashes.clear();
  unsafe.unsafe_skip_ca_verification = true;
  text = RenderWorkerJoinConfiguration(unsafe);
  ASSERT_TRUE(text.ok()) << text.status();
  const YAML::Node token = YAML::Load(*text)["discovery"]["bootstrapToken"];
  EXPECT_TRUE(token["unsafeSkipCAVerification"].as<bool>());
  // A bool, not the string "true", which kubeadm refuses to decode.
  EXPECT_THAT(*text, HasSubstr("    unsafeSkipCAVerification: true\n"));
  EXPECT_FALSE(token["caCertHashes"]);
}

TEST(WorkerJoinTest, RefusalsNameTheFlag) {
  struct Case {
    const char* what;
    void (*edit)(WorkerJoinOptions&);
    const char* message;
  };
  const Case cases[] = {
      {"no endpoint", [](WorkerJoinOptions& o) { o.api_server_endpoint.clear(); },
       "--api-server-endpoint is missing"},
      {"endpoint without a port", [](WorkerJoinOptions& o) { o.api_server_endpoint = "10.0.0.10"; },
       "--api-server-endpoint 10.0.0.10: not HOST:PORT"},
      {"no token", [](WorkerJoinOptions& o) { o.token.clear(); }, "--token is missing"},
      {"upper-case token", [](WorkerJoinOptions& o) { o.token = "ABCDEF.0123456789abcdef"; },
       "--token ABCDEF.0123456789abcdef: not a bootstrap token"},
      {"no hash", [](WorkerJoinOptions& o) { o.ca_cert_hashes.clear(); },
       "--discovery-token-ca-cert-hash is missing"},
      {"a hash without its format", [](WorkerJoinOptions& o) { o.ca_cert_hashes = {"abc"}; },
       "--discovery-token-ca-cert-hash abc: not sha256:<64 hex digits>"},
      {"both discoveries", [](WorkerJoinOptions& o) { o.discovery_file = "/etc/d.conf"; },
       "give one"},
      {"a relative discovery file",
       [](WorkerJoinOptions& o) {
         o.api_server_endpoint.clear();
         o.token.clear();
         o.ca_cert_hashes.clear();
         o.discovery_file = "d.conf";
       },
       "--discovery-file d.conf: neither an absolute path on the machine nor an https:// URL"},
      {"a relative bin dir", [](WorkerJoinOptions& o) { o.credential_provider_bin_dir = "bin"; },
       "--credential-provider-bin-dir bin: the kubelet needs an absolute path"},
      {"no config path", [](WorkerJoinOptions& o) { o.credential_provider_config.clear(); },
       "--credential-provider-config is empty"},
  };
  for (const Case& c : cases) {
    WorkerJoinOptions options = External();
    c.edit(options);
    absl::StatusOr<std::string> text = RenderWorkerJoinConfiguration(options);
    ASSERT_FALSE(text.ok()) << c.what;
    EXPECT_EQ(text.status().code(), absl::StatusCode::kInvalidArgument) << c.what;
    EXPECT_THAT(text.status().message(), HasSubstr(c.message)) << c.what;
  }
  // In-tree, the credential provider's paths are not read.
  WorkerJoinOptions in_tree = External();
  in_tree.target = WorkerJoinTarget::kInTree;
  in_tree.credential_provider_bin_dir.clear();
  EXPECT_TRUE(RenderWorkerJoinConfiguration(in_tree).ok());
}

}  // namespace
}  // namespace handoff::kube
