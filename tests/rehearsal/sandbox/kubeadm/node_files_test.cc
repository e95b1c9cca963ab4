#include "rehearsal/sandbox/kubeadm/node_files.h"

#include "common/systemd/environment_file.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "yaml-cpp/yaml.h"

namespace handoff::sandbox::kubeadm {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

ClusterPlan Plan() {
  ClusterPlan plan;
  plan.kubernetes_version = "v1.26.13";
  plan.endpoint_ip = "172.31.250.2";
  plan.pause_image = "registry.k8s.io/pause:3.9";
  plan.etcd_image_tag = "3.5.10-0";
  plan.bootstrap_token = "abcdef.0123456789abcdef";
  plan.certificate_key = std::string(64, 'a');
  plan.nodes = {
      {"ip-172-31-250-10.ec2.internal", "172.31.250.10", "us-east-1a", "/hs-1-1", "10.244.1.0/24"},
      {"ip-172-31-250-74.ec2.internal", "172.31.250.74", "us-east-1b", "/hs-1-2", "10.244.2.0/24"}};
  return plan;
}

// Every YAML document of `text`.
std::vector<YAML::Node> Documents(const std::string& text) { return YAML::LoadAll(text); }

TEST(NodeFilesTest, InitConfigurationIsKubeadmsWithTheInTreeProviderEverywhere) {
  const std::vector<YAML::Node> docs = Documents(InitConfiguration(Plan()));
  ASSERT_EQ(docs.size(), 3u);
  EXPECT_EQ(docs[0]["kind"].as<std::string>(), "InitConfiguration");
  EXPECT_EQ(docs[0]["bootstrapTokens"][0]["token"].as<std::string>(), "abcdef.0123456789abcdef");
  EXPECT_EQ(docs[0]["certificateKey"].as<std::string>(), std::string(64, 'a'));
  EXPECT_EQ(docs[0]["localAPIEndpoint"]["advertiseAddress"].as<std::string>(), "172.31.250.10");
  const YAML::Node registration = docs[0]["nodeRegistration"];
  EXPECT_EQ(registration["name"].as<std::string>(), "ip-172-31-250-10.ec2.internal");
  EXPECT_EQ(registration["criSocket"].as<std::string>(), "unix:///run/containerd/containerd.sock");
  EXPECT_EQ(registration["kubeletExtraArgs"]["cloud-provider"].as<std::string>(), "aws");
  EXPECT_EQ(registration["kubeletExtraArgs"]["cloud-config"].as<std::string>(),
            "/etc/kubernetes/cloud.conf");
  EXPECT_EQ(registration["kubeletExtraArgs"]["cgroup-root"].as<std::string>(), "/hs-1-1");
  EXPECT_EQ(registration["kubeletExtraArgs"]["node-ip"].as<std::string>(), "172.31.250.10");
  EXPECT_EQ(registration["ignorePreflightErrors"].size(), IgnoredPreflightErrors().size());
  EXPECT_EQ(docs[0]["skipPhases"][0].as<std::string>(), "addon/coredns");

  EXPECT_EQ(docs[1]["kind"].as<std::string>(), "ClusterConfiguration");
  EXPECT_EQ(docs[1]["kubernetesVersion"].as<std::string>(), "v1.26.13");
  EXPECT_EQ(docs[1]["controlPlaneEndpoint"].as<std::string>(), "172.31.250.2:6443");
  for (const char* component : {"apiServer", "controllerManager"}) {
    EXPECT_EQ(docs[1][component]["extraArgs"]["cloud-provider"].as<std::string>(), "aws");
    EXPECT_EQ(docs[1][component]["extraVolumes"][0]["hostPath"].as<std::string>(),
              "/etc/kubernetes/cloud.conf");
  }
  EXPECT_EQ(docs[1]["controllerManager"]["extraArgs"]["configure-cloud-routes"].as<std::string>(),
            "false");
  EXPECT_EQ(docs[1]["etcd"]["local"]["imageTag"].as<std::string>(), "3.5.10-0");
  EXPECT_EQ(docs[2]["kind"].as<std::string>(), "KubeletConfiguration");
  EXPECT_EQ(docs[2]["cgroupDriver"].as<std::string>(), "cgroupfs");
  // The host's disk fill evicts nothing and collects no imported image.
  for (const char* signal : {"nodefs.available", "nodefs.inodesFree", "imagefs.available"}) {
    EXPECT_EQ(docs[2]["evictionHard"][signal].as<std::string>(), "0%") << signal;
  }
  EXPECT_EQ(docs[2]["imageGCHighThresholdPercent"].as<int>(), 100);
}

TEST(NodeFilesTest, JoinConfigurationJoinsTheControlPlaneThroughTheEndpoint) {
  const std::vector<YAML::Node> docs =
      Documents(JoinConfiguration(Plan(), 1, "sha256:" + std::string(64, 'b')));
  ASSERT_EQ(docs.size(), 1u);
  EXPECT_EQ(docs[0]["kind"].as<std::string>(), "JoinConfiguration");
  const YAML::Node discovery = docs[0]["discovery"]["bootstrapToken"];
  EXPECT_EQ(discovery["apiServerEndpoint"].as<std::string>(), "172.31.250.2:6443");
  EXPECT_EQ(discovery["caCertHashes"][0].as<std::string>(), "sha256:" + std::string(64, 'b'));
  EXPECT_EQ(docs[0]["nodeRegistration"]["name"].as<std::string>(), "ip-172-31-250-74.ec2.internal");
  EXPECT_EQ(docs[0]["nodeRegistration"]["kubeletExtraArgs"]["cgroup-root"].as<std::string>(),
            "/hs-1-2");
  EXPECT_EQ(docs[0]["controlPlane"]["localAPIEndpoint"]["advertiseAddress"].as<std::string>(),
            "172.31.250.74");
  EXPECT_EQ(docs[0]["controlPlane"]["certificateKey"].as<std::string>(), std::string(64, 'a'));
  EXPECT_EQ(docs[0]["nodeRegistration"]["kubeletExtraArgs"]["cloud-provider"].as<std::string>(),
            "aws");
  EXPECT_EQ(docs[0]["nodeRegistration"]["kubeletExtraArgs"]["cloud-config"].as<std::string>(),
            "/etc/kubernetes/cloud.conf");
}

TEST(NodeFilesTest, AJoinAfterTheMoveGivesTheKubeletTheExternalProvider) {
  const YAML::Node args = Documents(
      JoinConfiguration(Plan(), 1, "sha256:" + std::string(64, 'b'),
                        KubeletCloud::kExternal))[0]["nodeRegistration"]["kubeletExtraArgs"];
  EXPECT_EQ(args["cloud-provider"].as<std::string>(), "external");
  EXPECT_FALSE(args["cloud-config"]) << "the external provider reads no cloud config";
  EXPECT_EQ(args["cgroup-root"].as<std::string>(), "/hs-1-2");
  EXPECT_EQ(args["node-ip"].as<std::string>(), "172.31.250.74");
}

// The operator's other place for the flag: kubeadm's kubeletExtraArgs names neither flag, and
// /etc/default/kubelet gives both as the kubelet's unit reads it.
TEST(NodeFilesTest, AJoinWithTheFlagInEtcDefaultKubeletLeavesItOutOfKubeletExtraArgs) {
  const YAML::Node args = Documents(
      JoinConfiguration(Plan(), 1, "sha256:" + std::string(64, 'b'),
                        KubeletCloud::kInTreeExtraArgs))[0]["nodeRegistration"]["kubeletExtraArgs"];
  EXPECT_FALSE(args["cloud-provider"]);
  EXPECT_FALSE(args["cloud-config"]);
  EXPECT_EQ(args["node-ip"].as<std::string>(), "172.31.250.74");
  absl::StatusOr<systemd::EnvironmentFile> defaults =
      systemd::ParseEnvironmentFile(KubeletDefaults(), kKubeletDefaultsPath);
  ASSERT_TRUE(defaults.ok()) << defaults.status();
  ASSERT_EQ(defaults->assignments.size(), 1u);
  EXPECT_EQ(defaults->assignments[0].key, "KUBELET_EXTRA_ARGS");
  EXPECT_EQ(defaults->assignments[0].value,
            "--cloud-provider=aws --cloud-config=/etc/kubernetes/cloud.conf");
}

TEST(NodeFilesTest, ContainerdRunsPodsWithRuncOnCgroupfsAndThePauseImage) {
  const std::string config = ContainerdConfig(Plan());
  EXPECT_THAT(config, HasSubstr("sandbox_image = \"registry.k8s.io/pause:3.9\""));
  EXPECT_THAT(config, HasSubstr("restrict_oom_score_adj = true"));
  EXPECT_THAT(config, HasSubstr("SystemdCgroup = false"));
  EXPECT_THAT(config, HasSubstr("address = \"/run/containerd/containerd.sock\""));
  EXPECT_THAT(config, HasSubstr("[plugins.\"io.containerd.grpc.v1.cri\".cni]\n"
                                "    bin_dir = \"/usr/lib/cni\"\n"
                                "    conf_dir = \"/etc/cni/net.d\"\n"));
}

TEST(NodeFilesTest, EachNodesPodNetworkIsABridgeOnItsOwnRange) {
  // JSON is YAML: the conflist as the CNI library reads it.
  const YAML::Node conflist = YAML::Load(CniConfig(Plan().nodes[1]));
  EXPECT_EQ(conflist["cniVersion"].as<std::string>(), "0.4.0");
  EXPECT_EQ(conflist["name"].as<std::string>(), "handoff-sandbox");
  ASSERT_EQ(conflist["plugins"].size(), 1u);
  const YAML::Node bridge = conflist["plugins"][0];
  EXPECT_EQ(bridge["type"].as<std::string>(), "bridge");
  EXPECT_FALSE(bridge["ipMasq"].as<bool>()) << "nothing leaves the run's namespaces";
  EXPECT_EQ(bridge["ipam"]["type"].as<std::string>(), "host-local");
  EXPECT_EQ(bridge["ipam"]["ranges"][0][0]["subnet"].as<std::string>(), "10.244.2.0/24");
}

TEST(NodeFilesTest, CloudConfigPointsEc2AndElbAtTheFakeAws) {
  const std::string config =
      CloudConfig("handoff-sandbox", "us-east-1", "http://172.31.250.1:8700");
  EXPECT_THAT(config, HasSubstr("KubernetesClusterID = handoff-sandbox"));
  EXPECT_THAT(config, HasSubstr("[ServiceOverride \"1\"]\nService = ec2\nRegion = us-east-1\n"
                                "URL = http://172.31.250.1:8700\nSigningRegion = us-east-1\n"));
  EXPECT_THAT(config, HasSubstr("Service = elasticloadbalancing"));
}

TEST(NodeFilesTest, HostsAndHaproxyNameEveryNode) {
  EXPECT_THAT(HostsFile(Plan()), HasSubstr("172.31.250.74 ip-172-31-250-74.ec2.internal\n"));
  const std::string haproxy = HaproxyConfig(Plan());
  EXPECT_THAT(haproxy, HasSubstr("bind 172.31.250.2:6443"));
  EXPECT_THAT(haproxy, HasSubstr("http-check send meth GET uri /healthz"));
  EXPECT_THAT(haproxy, HasSubstr("server ip-172-31-250-10.ec2.internal 172.31.250.10:6443 check"));
  EXPECT_THAT(haproxy, HasSubstr("server ip-172-31-250-74.ec2.internal 172.31.250.74:6443 check"));
}

ClusterPlan PlanWithAWorker() {
  ClusterPlan plan = Plan();
  PlannedNode worker{"ip-172-31-250-40.ec2.internal", "172.31.250.40", "us-east-1a", "/hs-1-3",
                     "10.244.3.0/24"};
  worker.worker = true;
  plan.nodes.push_back(worker);
  plan.aws_https_ip = "172.31.250.1";
  plan.aws_region = "us-east-1";
  return plan;
}

TEST(NodeFilesTest, AWorkerIsNamedInHostsButIsNoBackendOfTheLoadBalancer) {
  const ClusterPlan plan = PlanWithAWorker();
  EXPECT_THAT(HostsFile(plan), HasSubstr("172.31.250.40 ip-172-31-250-40.ec2.internal\n"));
  // ecr-credential-provider's endpoint is the fake AWS's HTTPS one.
  EXPECT_THAT(HostsFile(plan), HasSubstr("172.31.250.1 api.ecr.us-east-1.amazonaws.com\n"));
  EXPECT_THAT(HostsFile(Plan()), Not(HasSubstr("amazonaws.com")));
  const std::string haproxy = HaproxyConfig(plan);
  EXPECT_THAT(haproxy, HasSubstr("server ip-172-31-250-74.ec2.internal"));
  EXPECT_THAT(haproxy, Not(HasSubstr("172.31.250.40")));
}

TEST(NodeFilesTest, AWorkerJoinsWithoutTheControlPlaneSection) {
  const std::vector<YAML::Node> docs = Documents(WorkerJoinConfiguration(
      PlanWithAWorker(), 2, "sha256:" + std::string(64, 'b'), KubeletCloud::kInTree));
  ASSERT_EQ(docs.size(), 1u);
  EXPECT_EQ(docs[0]["kind"].as<std::string>(), "JoinConfiguration");
  EXPECT_FALSE(docs[0]["controlPlane"]);
  EXPECT_EQ(docs[0]["discovery"]["bootstrapToken"]["apiServerEndpoint"].as<std::string>(),
            "172.31.250.2:6443");
  const YAML::Node registration = docs[0]["nodeRegistration"];
  EXPECT_EQ(registration["name"].as<std::string>(), "ip-172-31-250-40.ec2.internal");
  EXPECT_EQ(registration["kubeletExtraArgs"]["cloud-provider"].as<std::string>(), "aws");
  EXPECT_EQ(registration["kubeletExtraArgs"]["cgroup-root"].as<std::string>(), "/hs-1-3");
}

TEST(NodeFilesTest, TheWorkloadIsAStaticPodOfTheEcrImageNeverPulled) {
  const YAML::Node pod = YAML::Load(
      WorkloadManifest("123456789012.dkr.ecr.us-east-1.amazonaws.com/handoff-sandbox/workload:v1"));
  EXPECT_EQ(pod["kind"].as<std::string>(), "Pod");
  EXPECT_EQ(pod["metadata"]["name"].as<std::string>(), kWorkloadName);
  const YAML::Node container = pod["spec"]["containers"][0];
  EXPECT_EQ(container["name"].as<std::string>(), kWorkloadName);
  EXPECT_EQ(container["image"].as<std::string>(),
            "123456789012.dkr.ecr.us-east-1.amazonaws.com/handoff-sandbox/workload:v1");
  EXPECT_EQ(container["imagePullPolicy"].as<std::string>(), "IfNotPresent");
}

}  // namespace
}  // namespace handoff::sandbox::kubeadm
