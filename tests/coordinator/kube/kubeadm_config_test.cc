#include "coordinator/kube/kubeadm_config.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/coordinator/fake_cluster.h"

namespace handoff::kube {
namespace {

using ::handoff::testing::FakeCluster;
using ::handoff::testing::Message;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

// kubeadm 1.26 on AWS, prepared for Leader Migration through kubeadm's own configuration.
constexpr char kV1beta3[] =
    "apiServer:\n"
    "  extraArgs:\n"
    "    authorization-mode: Node,RBAC\n"
    "    cloud-config: /etc/kubernetes/cloud.conf\n"
    "    cloud-provider: aws\n"
    "  timeoutForControlPlane: 4m0s\n"
    "apiVersion: kubeadm.k8s.io/v1beta3\n"
    "certificatesDir: /etc/kubernetes/pki\n"
    "clusterName: kubernetes\n"
    "controllerManager:\n"
    "  extraArgs:\n"
    "    cloud-config: /etc/kubernetes/cloud.conf\n"
    "    cloud-provider: aws\n"
    "    enable-leader-migration: \"true\"\n"
    "    feature-gates: ControllerManagerLeaderMigration=true,RotateKubeletServerCertificate=true\n"
    "    leader-migration-config: /etc/leadermigration.conf\n"
    "  extraVolumes:\n"
    "  - hostPath: /etc/kubernetes/cloud.conf\n"
    "    mountPath: /etc/kubernetes/cloud.conf\n"
    "    name: cloud-config\n"
    "    pathType: File\n"
    "    readOnly: true\n"
    "  - hostPath: /etc/leadermigration.conf\n"
    "    mountPath: /etc/leadermigration.conf\n"
    "    name: leader-migration\n"
    "    pathType: File\n"
    "    readOnly: true\n"
    "dns: {}\n"
    "etcd:\n"
    "  local:\n"
    "    dataDir: /var/lib/etcd\n"
    "imageRepository: registry.k8s.io\n"
    "kind: ClusterConfiguration\n"
    "kubernetesVersion: v1.26.9\n"
    "networking:\n"
    "  dnsDomain: cluster.local\n"
    "  serviceSubnet: 10.96.0.0/12\n"
    "scheduler: {}\n";

TEST(KubeadmConfigTest, V1beta3) {
  absl::StatusOr<KubeadmConfigPlan> plan = PlanClusterConfiguration(kV1beta3, {});
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->api_version, "kubeadm.k8s.io/v1beta3");
  EXPECT_THAT(plan->changes,
              ElementsAre("apiServer.extraArgs: cloud-provider aws -> external",
                          "apiServer.extraArgs: remove cloud-config (/etc/kubernetes/cloud.conf)",
                          "controllerManager.extraArgs: cloud-provider aws -> external",
                          "controllerManager.extraArgs: remove cloud-config "
                          "(/etc/kubernetes/cloud.conf)",
                          "controllerManager.extraArgs: remove enable-leader-migration (true)",
                          "controllerManager.extraArgs: remove leader-migration-config "
                          "(/etc/leadermigration.conf)",
                          "controllerManager.extraVolumes: remove leader-migration "
                          "(/etc/leadermigration.conf, the Leader Migration file)",
                          "controllerManager.extraArgs: feature-gates "
                          "ControllerManagerLeaderMigration=true,RotateKubeletServerCertificate="
                          "true -> RotateKubeletServerCertificate=true"));
  EXPECT_EQ(plan->Diff(),
            "--- a/kube-system/configmaps/kubeadm-config/ClusterConfiguration\n"
            "+++ b/kube-system/configmaps/kubeadm-config/ClusterConfiguration\n"
            "@@ -1,30 +1,21 @@\n"
            " apiServer:\n"
            "   extraArgs:\n"
            "     authorization-mode: Node,RBAC\n"
            "-    cloud-config: /etc/kubernetes/cloud.conf\n"
            "-    cloud-provider: aws\n"
            "+    cloud-provider: external\n"
            "   timeoutForControlPlane: 4m0s\n"
            " apiVersion: kubeadm.k8s.io/v1beta3\n"
            " certificatesDir: /etc/kubernetes/pki\n"
            " clusterName: kubernetes\n"
            " controllerManager:\n"
            "   extraArgs:\n"
            "-    cloud-config: /etc/kubernetes/cloud.conf\n"
            "-    cloud-provider: aws\n"
            "-    enable-leader-migration: \"true\"\n"
            "-    feature-gates: ControllerManagerLeaderMigration=true,"
            "RotateKubeletServerCertificate=true\n"
            "-    leader-migration-config: /etc/leadermigration.conf\n"
            "+    cloud-provider: external\n"
            "+    feature-gates: RotateKubeletServerCertificate=true\n"
            "   extraVolumes:\n"
            "   - hostPath: /etc/kubernetes/cloud.conf\n"
            "     mountPath: /etc/kubernetes/cloud.conf\n"
            "     name: cloud-config\n"
            "     pathType: File\n"
            "     readOnly: true\n"
            "-  - hostPath: /etc/leadermigration.conf\n"
            "-    mountPath: /etc/leadermigration.conf\n"
            "-    name: leader-migration\n"
            "-    pathType: File\n"
            "-    readOnly: true\n"
            " dns: {}\n"
            " etcd:\n"
            "   local:\n");
  // The notes say what kubeadm-config cannot hold.
  EXPECT_THAT(plan->notes, ElementsAre(HasSubstr("kubeadm-flags.env")));
  // Planning the result again finds nothing to do.
  absl::StatusOr<KubeadmConfigPlan> again = PlanClusterConfiguration(plan->after, {});
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(again->empty());
  EXPECT_EQ(again->Diff(), "");
}

// kubeadm 1.31+: extraArgs as a list of {name, value}, a flag possibly repeated.
constexpr char kV1beta4[] =
    "apiServer:\n"
    "  extraArgs:\n"
    "  - name: authorization-mode\n"
    "    value: Node,RBAC\n"
    "  - name: cloud-provider\n"
    "    value: aws\n"
    "  - name: cloud-config\n"
    "    value: /etc/kubernetes/cloud.conf\n"
    "apiVersion: kubeadm.k8s.io/v1beta4\n"
    "caCertificateValidityPeriod: 87600h0m0s\n"
    "certificatesDir: /etc/kubernetes/pki\n"
    "clusterName: kubernetes\n"
    "controllerManager:\n"
    "  extraArgs:\n"
    "  - name: cloud-provider\n"
    "    value: aws\n"
    "  - name: cloud-provider\n"
    "    value: aws\n"
    "dns: {}\n"
    "kind: ClusterConfiguration\n"
    "kubernetesVersion: v1.31.1\n"
    "scheduler: {}\n";

TEST(KubeadmConfigTest, V1beta4) {
  KubeadmConfigOptions options;
  options.external_cloud_volume_plugin = "aws";
  absl::StatusOr<KubeadmConfigPlan> plan = PlanClusterConfiguration(kV1beta4, options);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->api_version, "kubeadm.k8s.io/v1beta4");
  EXPECT_EQ(plan->Diff(),
            "--- a/kube-system/configmaps/kubeadm-config/ClusterConfiguration\n"
            "+++ b/kube-system/configmaps/kubeadm-config/ClusterConfiguration\n"
            "@@ -3,9 +3,7 @@\n"
            "   - name: authorization-mode\n"
            "     value: Node,RBAC\n"
            "   - name: cloud-provider\n"
            "-    value: aws\n"
            "-  - name: cloud-config\n"
            "-    value: /etc/kubernetes/cloud.conf\n"
            "+    value: external\n"
            " apiVersion: kubeadm.k8s.io/v1beta4\n"
            " caCertificateValidityPeriod: 87600h0m0s\n"
            " certificatesDir: /etc/kubernetes/pki\n"
            "@@ -13,8 +11,8 @@\n"
            " controllerManager:\n"
            "   extraArgs:\n"
            "   - name: cloud-provider\n"
            "-    value: aws\n"
            "-  - name: cloud-provider\n"
            "+    value: external\n"
            "+  - name: external-cloud-volume-plugin\n"
            "     value: aws\n"
            " dns: {}\n"
            " kind: ClusterConfiguration\n");
  absl::StatusOr<KubeadmConfigPlan> again = PlanClusterConfiguration(plan->after, options);
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(again->empty());
}

TEST(KubeadmConfigTest, MissingSectionsAreCreatedWhereKubeadmSortsThem) {
  KubeadmConfigOptions options;
  options.disable_nodeipam = true;
  absl::StatusOr<KubeadmConfigPlan> plan = PlanClusterConfiguration(
      "apiVersion: kubeadm.k8s.io/v1beta3\n"
      "clusterName: kubernetes\n"
      "kind: ClusterConfiguration\n",
      options);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->after,
            "apiServer:\n"
            "  extraArgs:\n"
            "    cloud-provider: external\n"
            "apiVersion: kubeadm.k8s.io/v1beta3\n"
            "clusterName: kubernetes\n"
            "controllerManager:\n"
            "  extraArgs:\n"
            "    cloud-provider: external\n"
            "    controllers: \"*,-nodeipam\"\n"
            "kind: ClusterConfiguration\n");
}

TEST(KubeadmConfigTest, AlreadyExternalIsNoChange) {
  absl::StatusOr<KubeadmConfigPlan> plan = PlanClusterConfiguration(
      "apiServer:\n  extraArgs:\n    cloud-provider: external\n"
      "apiVersion: kubeadm.k8s.io/v1beta3\n"
      "controllerManager:\n  extraArgs:\n    cloud-provider: external\n"
      "kind: ClusterConfiguration\n",
      {});
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_TRUE(plan->empty());
  EXPECT_EQ(plan->after, plan->before);
}

TEST(KubeadmConfigTest, Errors) {
  EXPECT_THAT(Message(PlanClusterConfiguration("apiVersion: kubeadm.k8s.io/v1beta3\n"
                                               "kind: InitConfiguration\n",
                                               {})
                          .status()),
              HasSubstr("kind is \"InitConfiguration\", expected ClusterConfiguration"));
  EXPECT_THAT(Message(PlanClusterConfiguration("apiVersion: kubeadm.k8s.io/v1beta1\n"
                                               "kind: ClusterConfiguration\n",
                                               {})
                          .status()),
              HasSubstr("apiVersion \"kubeadm.k8s.io/v1beta1\" is not one handoff knows"));
  EXPECT_THAT(Message(PlanClusterConfiguration("apiVersion: kubeadm.k8s.io/v1beta4\n"
                                               "kind: ClusterConfiguration\n"
                                               "apiServer:\n  extraArgs: {cloud-provider: aws}\n",
                                               {})
                          .status()),
              HasSubstr("apiServer.extraArgs must be a list of {name, value} (v1beta4)"));
  EXPECT_EQ(PlanKubeadmConfigMap(Json::parse(R"({"data":{}})"), {}).status().code(),
            absl::StatusCode::kFailedPrecondition);
}

TEST(KubeadmConfigTest, ValuesKubeadmWouldNotDecodeAreRefused) {
  EXPECT_EQ(Message(PlanClusterConfiguration("apiVersion: kubeadm.k8s.io/v1beta3\n"
                                             "kind: ClusterConfiguration\n"
                                             "controllerManager:\n  extraArgs: {v: 2}\n",
                                             {})
                        .status()),
            "ClusterConfiguration: controllerManager.extraArgs[\"v\"] must be a string, found a "
            "number; quote it: \"2\"");
  EXPECT_EQ(Message(PlanClusterConfiguration("apiVersion: kubeadm.k8s.io/v1beta4\n"
                                             "kind: ClusterConfiguration\n"
                                             "apiServer:\n  extraArgs:\n  - name: v\n"
                                             "    value: [2]\n",
                                             {})
                        .status()),
            "ClusterConfiguration: apiServer.extraArgs[0].value must be a string, found a list");
  EXPECT_EQ(Message(PlanClusterConfiguration("apiVersion: kubeadm.k8s.io/v1beta4\n"
                                             "kind: ClusterConfiguration\n"
                                             "apiServer:\n  extraArgs:\n  - v=2\n",
                                             {})
                        .status()),
            "ClusterConfiguration: apiServer.extraArgs[0] must be a map with name and value, "
            "found a string");
  EXPECT_THAT(Message(PlanClusterConfiguration("apiVersion: kubeadm.k8s.io/v1beta3\n"
                                               "kind: ClusterConfiguration\n"
                                               "apiServer: &a {}\ncontrollerManager: *a\n",
                                               {})
                          .status()),
              HasSubstr(":3:12: YAML anchors and aliases are not accepted (&a"));
}

TEST(KubeadmConfigTest, ApplyAgainstTheFakeServerWithAConflict) {
  FakeCluster cluster;
  std::unique_ptr<KubeClient> client = cluster.Client();
  cluster.store().InjectConflicts(kConfigMaps, "kube-system", "kubeadm-config", 1, [](Json& cm) {
    cm["metadata"]["labels"]["touched-by"] = "kubeadm";
  });
  absl::StatusOr<KubeadmConfigPlan> planned = ReadKubeadmConfigPlan(*client, {});
  ASSERT_TRUE(planned.ok()) << planned.status();
  absl::StatusOr<KubeadmConfigApplyResult> result = ApplyKubeadmConfig(*client, {});
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->conflicts, 1);
  EXPECT_EQ(result->plan.changes, planned->changes);
  const Json config_map = *cluster.store().Get(kConfigMaps, "kube-system", "kubeadm-config");
  EXPECT_EQ(StringAt(config_map, {"data", "ClusterConfiguration"}), planned->after);
  EXPECT_EQ(StringAt(config_map, {"metadata", "labels", "touched-by"}), "kubeadm");
  absl::StatusOr<KubeadmConfigApplyResult> again = ApplyKubeadmConfig(*client, {});
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(again->plan.empty());
}

TEST(KubeadmConfigTest, NotAKubeadmCluster) {
  FakeCluster cluster(/*seed=*/false);
  absl::StatusOr<KubeadmConfigPlan> plan = ReadKubeadmConfigPlan(*cluster.Client(), {});
  EXPECT_EQ(plan.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(Message(plan.status()), HasSubstr("this cluster was not set up by kubeadm"));
}

}  // namespace
}  // namespace handoff::kube
