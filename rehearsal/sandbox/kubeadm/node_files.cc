#include "rehearsal/sandbox/kubeadm/node_files.h"

#include "common/base/strings.h"

namespace handoff::sandbox::kubeadm {
namespace {

std::string PreflightList() { return StrCat("[", StrJoin(IgnoredPreflightErrors(), ", "), "]"); }

// nodeRegistration, shared by init and join: the kubelet's cloud provider (in-tree AWS with the
// cloud config, or external), the node's own cgroup root and address.
std::string NodeRegistration(const PlannedNode& node, KubeletCloud cloud) {
  return StrCat(
      "nodeRegistration:\n"
      "  name: ",
      node.name,
      "\n"
      "  criSocket: ",
      kCriSocket,
      "\n"
      "  ignorePreflightErrors: ",
      PreflightList(),
      "\n"
      "  kubeletExtraArgs:\n",
      cloud == KubeletCloud::kInTree     ? StrCat("    cloud-provider: aws\n"
                                                  "    cloud-config: ",
                                                  kCloudConfigPath, "\n")
      : cloud == KubeletCloud::kExternal ? std::string("    cloud-provider: external\n")
                                         : std::string(),
      "    cgroup-root: ", node.cgroup_root,
      "\n"
      "    node-ip: ",
      node.ip, "\n");
}

// The cloud config as a read-only hostPath volume of a control-plane component.
std::string CloudConfigVolume() {
  return StrCat(
      "  extraVolumes:\n"
      "  - name: cloud-config\n"
      "    hostPath: ",
      kCloudConfigPath,
      "\n"
      "    mountPath: ",
      kCloudConfigPath,
      "\n"
      "    readOnly: true\n"
      "    pathType: File\n");
}

}  // namespace

std::string KubeletDefaults() {
  return StrCat(
      "# The in-tree AWS provider, given here rather than in kubeadm's kubeletExtraArgs: the\n"
      "# kubelet's unit reads this file last (KUBELET_EXTRA_ARGS).\n"
      "KUBELET_EXTRA_ARGS=\"--cloud-provider=aws --cloud-config=",
      kCloudConfigPath, "\"\n");
}

const std::vector<std::string>& IgnoredPreflightErrors() {
  static const std::vector<std::string> kIgnored = {
      // kubeadm 1.26 built with Go 1.26 fails its own check: parse "https://[10.96.0.1]:1234/":
      // invalid IP-literal (newer Go rejects the brackets around an IPv4 address).
      "HTTPProxyCIDR",
      // conntrack and iptables are kube-proxy's, which this cluster skips.
      "FileExisting-conntrack", "FileExisting-iptables"};
  return kIgnored;
}

std::string InitConfiguration(const ClusterPlan& plan) {
  const PlannedNode& first = plan.nodes.front();
  return StrCat(
      "# kubeadm init --config ", kKubeadmConfigPath,
      " --upload-certs\n"
      "apiVersion: kubeadm.k8s.io/v1beta3\n"
      "kind: InitConfiguration\n"
      "bootstrapTokens:\n"
      "- token: ",
      plan.bootstrap_token,
      "\n"
      "  ttl: 2h\n"
      "certificateKey: ",
      plan.certificate_key,
      "\n"
      "localAPIEndpoint:\n"
      "  advertiseAddress: ",
      first.ip,
      "\n"
      "  bindPort: ",
      kApiServerPort, "\n", NodeRegistration(first, KubeletCloud::kInTree),
      "skipPhases: [addon/coredns, addon/kube-proxy]\n"
      "---\n"
      "apiVersion: kubeadm.k8s.io/v1beta3\n"
      "kind: ClusterConfiguration\n"
      "kubernetesVersion: ",
      plan.kubernetes_version,
      "\n"
      "clusterName: ",
      plan.cluster_name,
      "\n"
      "controlPlaneEndpoint: ",
      plan.endpoint_ip, ":", kApiServerPort,
      "\n"
      "apiServer:\n"
      "  extraArgs:\n"
      "    cloud-provider: aws\n"
      "    cloud-config: ",
      kCloudConfigPath, "\n", CloudConfigVolume(),
      "controllerManager:\n"
      "  extraArgs:\n"
      "    cloud-provider: aws\n"
      "    cloud-config: ",
      kCloudConfigPath,
      "\n"
      // kubeadm on AWS with the VPC CNI: no routes for the cloud to configure.
      "    configure-cloud-routes: \"false\"\n",
      CloudConfigVolume(),
      "etcd:\n"
      "  local:\n"
      "    dataDir: /var/lib/etcd\n"
      "    imageTag: ",
      plan.etcd_image_tag,
      "\n"
      "---\n"
      "apiVersion: kubelet.config.k8s.io/v1beta1\n"
      "kind: KubeletConfiguration\n"
      // No systemd here to delegate cgroups to (kubeadm 1.26 defaults to the systemd driver).
      "cgroupDriver: cgroupfs\n"
      "failSwapOn: false\n"
      // The nodes share the host's disk, whose fill is not theirs to manage: no eviction and no
      // image garbage collection for disk pressure, which would delete the imported images that
      // nothing can pull back (the kubelet's default imagefs threshold is 15% free).
      "evictionHard:\n"
      "  nodefs.available: \"0%\"\n"
      "  nodefs.inodesFree: \"0%\"\n"
      "  imagefs.available: \"0%\"\n"
      "imageGCHighThresholdPercent: 100\n");
}

std::string WorkerJoinConfiguration(const ClusterPlan& plan, size_t index,
                                    const std::string& ca_cert_hash, KubeletCloud cloud) {
  const PlannedNode& node = plan.nodes.at(index);
  return StrCat("# kubeadm join --config ", kKubeadmConfigPath,
                "\n"
                "apiVersion: kubeadm.k8s.io/v1beta3\n"
                "kind: JoinConfiguration\n"
                "discovery:\n"
                "  bootstrapToken:\n"
                "    apiServerEndpoint: ",
                plan.endpoint_ip, ":", kApiServerPort,
                "\n"
                "    token: ",
                plan.bootstrap_token,
                "\n"
                "    caCertHashes: [\"",
                ca_cert_hash, "\"]\n", NodeRegistration(node, cloud));
}

std::string JoinConfiguration(const ClusterPlan& plan, size_t index,
                              const std::string& ca_cert_hash, KubeletCloud cloud) {
  const PlannedNode& node = plan.nodes.at(index);
  return StrCat(WorkerJoinConfiguration(plan, index, ca_cert_hash, cloud),
                "controlPlane:\n"
                "  localAPIEndpoint:\n"
                "    advertiseAddress: ",
                node.ip,
                "\n"
                "    bindPort: ",
                kApiServerPort,
                "\n"
                "  certificateKey: ",
                plan.certificate_key, "\n");
}

std::string ContainerdConfig(const ClusterPlan& plan) {
  return StrCat(
      "# containerd for this node: every path its default, inside the node.\n"
      "version = 2\n"
      "root = \"/var/lib/containerd\"\n"
      "state = \"/run/containerd\"\n"
      "disabled_plugins = [\"io.containerd.snapshotter.v1.btrfs\", "
      "\"io.containerd.snapshotter.v1.zfs\", \"io.containerd.snapshotter.v1.devmapper\", "
      "\"io.containerd.snapshotter.v1.aufs\"]\n"
      "\n"
      "[grpc]\n"
      "  address = \"/run/containerd/containerd.sock\"\n"
      "\n"
      "[plugins.\"io.containerd.grpc.v1.cri\"]\n"
      "  sandbox_image = \"",
      plan.pause_image,
      "\"\n"
      "  # runc sets every container's oom_score_adj; root here may only raise it.\n"
      "  restrict_oom_score_adj = true\n"
      "  [plugins.\"io.containerd.grpc.v1.cri\".containerd]\n"
      "    snapshotter = \"overlayfs\"\n"
      "    default_runtime_name = \"runc\"\n"
      "    [plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.runc]\n"
      "      runtime_type = \"io.containerd.runc.v2\"\n"
      "      [plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.runc.options]\n"
      "        SystemdCgroup = false\n"
      "  [plugins.\"io.containerd.grpc.v1.cri\".cni]\n"
      "    bin_dir = \"",
      kCniBinDir,
      "\"\n"
      "    conf_dir = \"/etc/cni/net.d\"\n");
}

std::string CniConfig(const PlannedNode& node) {
  return StrCat(
      "{\n"
      "  \"cniVersion\": \"0.4.0\",\n"
      "  \"name\": \"handoff-sandbox\",\n"
      "  \"plugins\": [\n"
      "    {\n"
      "      \"type\": \"bridge\",\n"
      "      \"bridge\": \"cni0\",\n"
      "      \"isGateway\": true,\n"
      "      \"ipMasq\": false,\n"
      "      \"ipam\": {\n"
      "        \"type\": \"host-local\",\n"
      "        \"ranges\": [[{\"subnet\": \"",
      node.pod_cidr,
      "\"}]]\n"
      "      }\n"
      "    }\n"
      "  ]\n"
      "}\n");
}

std::string CloudConfig(const std::string& cluster_id, const std::string& region,
                        const std::string& ec2_url) {
  std::string text = StrCat("[Global]\nKubernetesClusterID = ", cluster_id, "\n");
  int index = 1;
  for (const char* service : {"ec2", "elasticloadbalancing"}) {
    StrAppend(&text, "\n[ServiceOverride \"", index++, "\"]\nService = ", service,
              "\nRegion = ", region, "\nURL = ", ec2_url, "\nSigningRegion = ", region, "\n");
  }
  return text;
}

std::vector<std::string> AwsHttpsNames(const ClusterPlan& plan) {
  if (plan.aws_https_ip.empty() || plan.aws_region.empty()) return {};
  // ECR's API, as aws-sdk-go v1 resolves it for the region (ecr-credential-provider).
  return {StrCat("api.ecr.", plan.aws_region, ".amazonaws.com")};
}

std::string HostsFile(const ClusterPlan& plan) {
  std::string text = "127.0.0.1 localhost\n::1 localhost ip6-localhost ip6-loopback\n";
  for (const PlannedNode& node : plan.nodes) StrAppend(&text, node.ip, " ", node.name, "\n");
  for (const std::string& name : AwsHttpsNames(plan)) {
    StrAppend(&text, plan.aws_https_ip, " ", name, "\n");
  }
  return text;
}

std::string WorkloadManifest(const std::string& image) {
  return StrCat(
      "# The worker's workload: a static pod of an image from the node's ECR registry,\n"
      "# imported beforehand (IfNotPresent: never pulled).\n"
      "apiVersion: v1\n"
      "kind: Pod\n"
      "metadata:\n"
      "  name: ",
      kWorkloadName,
      "\n"
      "  namespace: default\n"
      "  labels:\n"
      "    app: handoff-sandbox-workload\n"
      "spec:\n"
      "  containers:\n"
      "  - name: ",
      kWorkloadName,
      "\n"
      "    image: ",
      image,
      "\n"
      "    imagePullPolicy: IfNotPresent\n"
      "  terminationGracePeriodSeconds: 5\n");
}

std::string HaproxyConfig(const ClusterPlan& plan) {
  std::string text = StrCat(
      "# The API endpoint (controlPlaneEndpoint) of the kubeadm sandbox, as kubeadm's HA guide\n"
      "# sets haproxy up: TCP to every kube-apiserver, each checked on /healthz over TLS.\n"
      "global\n"
      "  log stderr format raw local0\n"
      "defaults\n"
      "  mode tcp\n"
      "  log global\n"
      "  option tcplog\n"
      "  timeout connect 5s\n"
      "  timeout client 1h\n"
      "  timeout server 1h\n"
      "  timeout check 5s\n"
      "frontend apiserver\n"
      "  bind ",
      plan.endpoint_ip, ":", kApiServerPort,
      "\n"
      "  default_backend apiserver\n"
      "backend apiserver\n"
      "  option httpchk\n"
      "  http-check connect ssl\n"
      "  http-check send meth GET uri /healthz\n"
      "  http-check expect status 200\n"
      "  balance roundrobin\n"
      // A rewritten kube-apiserver stops answering at once: take it out within two seconds.
      "  default-server inter 1s fall 2 rise 2\n");
  for (const PlannedNode& node : plan.nodes) {
    if (node.worker) continue;
    StrAppend(&text, "  server ", node.name, " ", node.ip, ":", kApiServerPort,
              " check verify none\n");
  }
  return text;
}

}  // namespace handoff::sandbox::kubeadm
