#include "coordinator/kube/kubeadm_config.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/coordinator/fake_cluster.h"

namespace handoff::kube {
namespace {

using ::handoff::testing::FakeCluster;
using ::handoff::testing::Message;
using ::testing::AllOf;
using ::testing::Contains;
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
  EXPECT_THAT(plan->notes, ElementsAre(HasSubstr("kubeadm-flags.env"),
                                       HasSubstr("kubeadm writes no cloud-controller-manager")));
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

// A node joined with kubeadm join --control-plane after the move is built from kubernetesVersion:
// it must be the version the nodes run.
TEST(KubeadmConfigTest, SetsTheVersionTheNodesRun) {
  KubeadmConfigOptions options;
  options.kubernetes_version = "v1.27.16";
  absl::StatusOr<KubeadmConfigPlan> plan = PlanClusterConfiguration(kV1beta3, options);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_THAT(plan->changes, ::testing::Contains("kubernetesVersion: v1.26.9 -> v1.27.16"));
  EXPECT_THAT(plan->after, HasSubstr("\nkubernetesVersion: v1.27.16\n"));
  absl::StatusOr<KubeadmConfigPlan> again = PlanClusterConfiguration(plan->after, options);
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(again->empty());
  // Only the version left to change.
  options.kubernetes_version = "v1.27.17";
  again = PlanClusterConfiguration(plan->after, options);
  ASSERT_TRUE(again.ok());
  EXPECT_THAT(again->changes, ElementsAre("kubernetesVersion: v1.27.16 -> v1.27.17"));
  for (const char* bad : {"1.27", "latest", "v1.27.16 ", "v1.27.x"}) {
    options.kubernetes_version = bad;
    EXPECT_THAT(Message(PlanClusterConfiguration(kV1beta3, options).status()),
                HasSubstr("is not a release version such as v1.27.16"))
        << bad;
  }
}

TEST(KubeadmConfigTest, TheWayBackIsTheSavedConfigurationAtItsVersion) {
  KubeadmConfigOptions forward;
  forward.kubernetes_version = "v1.27.16";
  absl::StatusOr<KubeadmConfigPlan> external = PlanClusterConfiguration(kV1beta3, forward);
  ASSERT_TRUE(external.ok());
  absl::StatusOr<KubeadmConfigPlan> back = PlanInTreeConfiguration(external->after, kV1beta3, {});
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->after, kV1beta3);
  EXPECT_THAT(back->changes, ElementsAre(HasSubstr("back to the in-tree one kept in "
                                                   "kube-system/handoff-kubeadm-config-in-tree")));
  KubeadmConfigOptions to_n;
  to_n.kubernetes_version = "v1.26.13";
  back = PlanInTreeConfiguration(external->after, kV1beta3, to_n);
  ASSERT_TRUE(back.ok());
  EXPECT_THAT(back->after, AllOf(HasSubstr("kubernetesVersion: v1.26.13\n"),
                                 HasSubstr("    cloud-provider: aws\n")));
  EXPECT_THAT(back->changes, ElementsAre(HasSubstr("back to the in-tree one"),
                                         "kubernetesVersion: v1.26.9 -> v1.26.13"));
  absl::StatusOr<KubeadmConfigPlan> there = PlanInTreeConfiguration(kV1beta3, kV1beta3, {});
  ASSERT_TRUE(there.ok());
  EXPECT_TRUE(there->empty());
  EXPECT_THAT(Message(PlanInTreeConfiguration(kV1beta3, "kind: InitConfiguration\n", {}).status()),
              HasSubstr("handoff-kubeadm-config-in-tree data.ClusterConfiguration: kind is "
                        "\"InitConfiguration\""));
}

// What a node of version N joins with in a rollback by replacement: the saved in-tree
// configuration with Leader Migration, so its kube-controller-manager never runs the cloud
// controllers beside a cloud-controller-manager.
TEST(KubeadmConfigTest, PreparedIsTheSavedConfigurationWithLeaderMigration) {
  const std::string in_tree =
      "apiVersion: kubeadm.k8s.io/v1beta3\n"
      "controllerManager:\n"
      "  extraArgs:\n"
      "    cloud-provider: aws\n"
      "kind: ClusterConfiguration\n"
      "kubernetesVersion: v1.26.9\n";
  KubeadmConfigOptions prepared;
  prepared.target = KubeadmConfigTarget::kPrepared;
  prepared.kubernetes_version = "v1.26.13";
  absl::StatusOr<KubeadmConfigPlan> external = PlanClusterConfiguration(in_tree, {});
  ASSERT_TRUE(external.ok());
  absl::StatusOr<KubeadmConfigPlan> plan =
      PlanInTreeConfiguration(external->after, in_tree, prepared);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->after,
            "apiVersion: kubeadm.k8s.io/v1beta3\n"
            "controllerManager:\n"
            "  extraArgs:\n"
            "    cloud-provider: aws\n"
            "    enable-leader-migration: \"true\"\n"
            "    leader-migration-config: /etc/leadermigration.conf\n"
            "  extraVolumes:\n"
            "  - hostPath: /etc/leadermigration.conf\n"
            "    mountPath: /etc/leadermigration.conf\n"
            "    name: leadermigration\n"
            "    pathType: File\n"
            "    readOnly: true\n"
            "kind: ClusterConfiguration\n"
            "kubernetesVersion: v1.26.13\n");
  EXPECT_THAT(plan->changes,
              ElementsAre(HasSubstr("back to the in-tree one kept in "
                                    "kube-system/handoff-kubeadm-config-in-tree before the move, "
                                    "with Leader Migration"),
                          "kubernetesVersion: v1.26.9 -> v1.26.13",
                          "controllerManager.extraArgs: add enable-leader-migration: true",
                          "controllerManager.extraArgs: add leader-migration-config: "
                          "/etc/leadermigration.conf",
                          HasSubstr("controllerManager.extraVolumes: add leadermigration")));
  EXPECT_THAT(plan->notes, Contains(HasSubstr("before kubeadm join")));
  absl::StatusOr<KubeadmConfigPlan> again = PlanInTreeConfiguration(plan->after, in_tree, prepared);
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(again->empty()) << again->Diff();

  // Saved from prepared nodes, it has the file mounted already: nothing is added twice.
  plan = PlanInTreeConfiguration(external->after, kV1beta3, prepared);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->after.find("mountPath: /etc/leadermigration.conf"),
            plan->after.rfind("mountPath: /etc/leadermigration.conf"));
  // v1beta4's list of arguments.
  plan = PlanInTreeConfiguration(external->after, kV1beta4, prepared);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_THAT(plan->after, HasSubstr("  - name: enable-leader-migration\n    value: \"true\"\n"));
  // A saved configuration that is not in-tree cannot be made prepared.
  EXPECT_EQ(PlanInTreeConfiguration(in_tree, external->after, prepared).status().code(),
            absl::StatusCode::kFailedPrecondition);
}

TEST(KubeadmConfigTest, ApplyKeepsTheInTreeConfigurationAndTheWayBackRestoresIt) {
  FakeCluster cluster;
  std::unique_ptr<KubeClient> client = cluster.Client();
  auto stored = [&cluster](std::string_view name) {
    std::optional<Json> config_map = cluster.store().Get(kConfigMaps, "kube-system", name);
    return config_map ? StringAt(*config_map, {"data", "ClusterConfiguration"}) : std::string();
  };
  const std::string original = stored(kKubeadmConfigName);
  ASSERT_FALSE(original.empty());

  KubeadmConfigOptions forward;
  forward.kubernetes_version = "v1.27.16";
  absl::StatusOr<KubeadmConfigApplyResult> applied = ApplyKubeadmConfig(*client, forward);
  ASSERT_TRUE(applied.ok()) << applied.status();
  EXPECT_TRUE(applied->saved_in_tree_copy);
  EXPECT_EQ(stored(kInTreeCopyName), original);
  EXPECT_THAT(stored(kKubeadmConfigName), HasSubstr("kubernetesVersion: v1.27.16"));
  // Again: nothing to change, and the copy is the first one.
  applied = ApplyKubeadmConfig(*client, forward);
  ASSERT_TRUE(applied.ok());
  EXPECT_FALSE(applied->saved_in_tree_copy);
  EXPECT_TRUE(applied->plan.empty());
  EXPECT_EQ(stored(kInTreeCopyName), original);

  KubeadmConfigOptions back;
  back.target = KubeadmConfigTarget::kInTree;
  absl::StatusOr<KubeadmConfigPlan> planned = ReadKubeadmConfigPlan(*client, back);
  ASSERT_TRUE(planned.ok()) << planned.status();
  EXPECT_EQ(planned->after, original);
  applied = ApplyKubeadmConfig(*client, back);
  ASSERT_TRUE(applied.ok()) << applied.status();
  EXPECT_EQ(stored(kKubeadmConfigName), original);
  planned = ReadKubeadmConfigPlan(*client, back);
  ASSERT_TRUE(planned.ok());
  EXPECT_TRUE(planned->empty());

  // Without the copy there is no way back to take, and nothing is written.
  ASSERT_TRUE(cluster.store().Remove(kConfigMaps, "kube-system", kInTreeCopyName));
  ASSERT_TRUE(ApplyKubeadmConfig(*client, forward).ok());
  ASSERT_TRUE(cluster.store().Remove(kConfigMaps, "kube-system", kInTreeCopyName));
  const std::string external = stored(kKubeadmConfigName);
  applied = ApplyKubeadmConfig(*client, back);
  EXPECT_EQ(applied.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(Message(applied.status()), HasSubstr("there is no kube-system/"
                                                   "handoff-kubeadm-config-in-tree"));
  EXPECT_EQ(stored(kKubeadmConfigName), external);
  // An external configuration is not kept as the in-tree one.
  applied = ApplyKubeadmConfig(*client, forward);
  ASSERT_TRUE(applied.ok());
  EXPECT_FALSE(applied->saved_in_tree_copy);
  EXPECT_EQ(stored(kInTreeCopyName), "");
}

TEST(KubeadmConfigTest, NotAKubeadmCluster) {
  FakeCluster cluster(/*seed=*/false);
  absl::StatusOr<KubeadmConfigPlan> plan = ReadKubeadmConfigPlan(*cluster.Client(), {});
  EXPECT_EQ(plan.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(Message(plan.status()), HasSubstr("this cluster was not set up by kubeadm"));
}

}  // namespace
}  // namespace handoff::kube
