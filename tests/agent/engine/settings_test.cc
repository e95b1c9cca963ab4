#include "agent/engine/settings.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace handoff {
namespace {

using ::testing::HasSubstr;

TEST(SettingsTest, DefaultsAreKubeadms) {
  Settings settings;
  EXPECT_EQ(settings.paths.manifest_dir, "/etc/kubernetes/manifests");
  EXPECT_EQ(settings.paths.kubelet_flags_file, "/var/lib/kubelet/kubeadm-flags.env");
  EXPECT_EQ(settings.paths.leader_migration_config, "/etc/leadermigration.conf");
  EXPECT_EQ(settings.paths.state_dir, "/var/lib/handoff");
  EXPECT_EQ(settings.leader_name, "cloud-provider-extraction-migration");
}

TEST(SettingsTest, ParsesEveryField) {
  absl::StatusOr<Settings> settings = ParseSettings(R"(
paths:
  manifestDir: /var/lib/rancher/rke2/agent/pod-manifests
  kubeletFlagsFile: ""
  leaderMigrationConfig: /etc/kubernetes/lm.yaml
  stateDir: /srv/handoff
kubernetesVersion: v1.27.6
leaderMigration:
  leaderName: my-migration
  wildcard: true
  nodeipam: true
kubeControllerManager:
  externalCloudVolumePlugin: aws
cloudControllerManager:
  image: registry.k8s.io/provider-aws/cloud-controller-manager:v1.27.1
  cloudProvider: aws/v2
  kubeconfig: /etc/kubernetes/ccm.conf
  clusterCIDR: 10.0.0.0/16
  configureCloudRoutes: true
  extraArgs:
    v: "4"
    allow-untagged-cloud:
images:
  kube-apiserver: example.com/kube-apiserver:v1.27.6-custom
)",
                                                    "settings.yaml");
  ASSERT_TRUE(settings.ok()) << settings.status();
  EXPECT_EQ(settings->paths.manifest_dir, "/var/lib/rancher/rke2/agent/pod-manifests");
  EXPECT_EQ(settings->paths.kubelet_flags_file, "");
  EXPECT_EQ(settings->paths.leader_migration_config, "/etc/kubernetes/lm.yaml");
  EXPECT_EQ(settings->paths.state_dir, "/srv/handoff");
  EXPECT_EQ(settings->k8s_version->ToString(), "v1.27.6");
  EXPECT_EQ(settings->leader_name, "my-migration");
  EXPECT_TRUE(settings->wildcard);
  EXPECT_TRUE(settings->migrate_nodeipam);
  EXPECT_EQ(settings->external_cloud_volume_plugin, "aws");
  EXPECT_EQ(settings->ccm.cloud_provider, "aws/v2");
  EXPECT_EQ(settings->ccm.kubeconfig, "/etc/kubernetes/ccm.conf");
  EXPECT_TRUE(settings->ccm.configure_cloud_routes);
  EXPECT_EQ(settings->ccm.extra_args.at("v"), "4");
  EXPECT_EQ(settings->ccm.extra_args.at("allow-untagged-cloud"), "");
  EXPECT_EQ(settings->images.at("kube-apiserver"), "example.com/kube-apiserver:v1.27.6-custom");
}

TEST(SettingsTest, EveryProblemIsNamedWithFileAndPath) {
  absl::StatusOr<Settings> settings = ParseSettings(R"(
paths:
  manifestDirectory: /x
kubernetesVersion: one.two
leaderMigration:
  wildcard: maybe
cloudControllerManager:
  configureCloudRoutes: true
  cloudProvider: gce
images:
  etcd: x
)",
                                                    "s.yaml");
  ASSERT_FALSE(settings.ok());
  const std::string message(settings.status().message());
  EXPECT_THAT(message,
              HasSubstr("s.yaml: paths.manifestDirectory: unknown setting (known here: "
                        "manifestDir, kubeletFlagsFile, leaderMigrationConfig, stateDir)"));
  EXPECT_THAT(message, HasSubstr("s.yaml: leaderMigration.wildcard: must be true or false"));
  EXPECT_THAT(message,
              HasSubstr("s.yaml: kubernetesVersion: 'one.two' is not a Kubernetes version"));
  EXPECT_THAT(message, HasSubstr("s.yaml: images.etcd: only kube-apiserver"));
  EXPECT_THAT(message, HasSubstr("s.yaml: cloudControllerManager.clusterCIDR: must be set when "
                                 "configureCloudRoutes is true"));
  EXPECT_THAT(message,
              HasSubstr("s.yaml: cloudControllerManager.cloudProvider: must be aws or aws/v2"));
}

TEST(SettingsTest, AWorkersRoleAndCredentialProvider) {
  EXPECT_EQ(Settings().role, NodeRole::kControlPlane);
  absl::StatusOr<Settings> settings = ParseSettings(R"(
role: worker
worker:
  credentialProviderConfig: /etc/kubelet/ecr.yaml
  credentialProviderBinDir: /opt/ecr/bin
  nodeName: ip-10-0-1-20.ec2.internal
  kubeconfig: /etc/kubelet/kubeconfig
  ecrRegistry: 123456789012.dkr.ecr.eu-west-1.amazonaws.com
  crictl: [crictl, --runtime-endpoint, unix:///run/k3s/containerd/containerd.sock]
)",
                                                    "agent.yaml");
  ASSERT_TRUE(settings.ok()) << settings.status();
  EXPECT_EQ(settings->role, NodeRole::kWorker);
  EXPECT_EQ(NodeRoleName(settings->role), "worker");
  EXPECT_EQ(settings->worker.credential_provider_config, "/etc/kubelet/ecr.yaml");
  EXPECT_EQ(settings->worker.credential_provider_bin_dir, "/opt/ecr/bin");
  EXPECT_EQ(settings->worker.node_name, "ip-10-0-1-20.ec2.internal");
  EXPECT_EQ(settings->worker.kubeconfig, "/etc/kubelet/kubeconfig");
  EXPECT_EQ(settings->worker.ecr_registry, "123456789012.dkr.ecr.eu-west-1.amazonaws.com");
  EXPECT_THAT(settings->worker.crictl,
              ::testing::ElementsAre("crictl", "--runtime-endpoint",
                                     "unix:///run/k3s/containerd/containerd.sock"));
  EXPECT_EQ(Settings().worker.kubeconfig, "/etc/kubernetes/kubelet.conf");
  EXPECT_THAT(Settings().worker.crictl, ::testing::ElementsAre("crictl"));

  settings = ParseSettings(
      "role: node\nworker:\n  credentialProviderBinDir: bin\n  nodename: x\n  crictl: []\n",
      "agent.yaml");
  ASSERT_FALSE(settings.ok());
  EXPECT_THAT(settings.status().message(),
              HasSubstr("agent.yaml: role: must be control-plane or worker"));
  EXPECT_THAT(settings.status().message(),
              HasSubstr("agent.yaml: worker.credentialProviderBinDir: \"bin\" is not an absolute "
                        "path"));
  EXPECT_THAT(settings.status().message(),
              HasSubstr("agent.yaml: worker.nodename: unknown setting (known here: "
                        "credentialProviderConfig, credentialProviderBinDir, nodeName, kubeconfig, "
                        "ecrRegistry, crictl)"));
  EXPECT_THAT(settings.status().message(),
              HasSubstr("agent.yaml: worker.crictl: must name the crictl command"));
  settings = ParseSettings("worker:\n  crictl: crictl\n", "agent.yaml");
  ASSERT_FALSE(settings.ok());
  EXPECT_THAT(settings.status().message(),
              HasSubstr("agent.yaml: worker.crictl: must be a list of strings"));
}

TEST(SettingsTest, SyntaxErrorsCarryTheLine) {
  absl::StatusOr<Settings> settings = ParseSettings("paths:\n  manifestDir: [\n", "s.yaml");
  ASSERT_FALSE(settings.ok());
  EXPECT_THAT(std::string(settings.status().message()), HasSubstr("s.yaml:3:"));
}

}  // namespace
}  // namespace handoff
