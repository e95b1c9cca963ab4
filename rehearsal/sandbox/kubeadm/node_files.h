// The files the kubeadm sandbox writes before kubeadm does the rest: each node's kubeadm
// configuration (init on the first node, join --control-plane on the others), containerd's
// configuration, the in-tree AWS provider's cloud config, /etc/hosts, the load balancer's haproxy
// configuration. Pure text, from the cluster's plan.
//
// The cluster is what kubeadm's "Creating Highly Available Clusters" guide builds, on AWS with the
// in-tree provider: stacked etcd, a TCP load balancer in front of every kube-apiserver named by
// controlPlaneEndpoint, `cloud-provider: aws` (with the cloud config mounted) for the API server,
// the controller manager and the kubelet, --configure-cloud-routes=false, kube-proxy and CoreDNS
// skipped. Each node's pod network is the reference CNI plugins' bridge on a range of its own
// (Debian's containernetworking-plugins), as a VPC CNI gives each node its addresses: the
// container runtime reports its network ready, so the Nodes are Ready and the node lifecycle
// controller leaves their pods Ready, as on a production cluster.
#ifndef HANDOFF_REHEARSAL_SANDBOX_KUBEADM_NODE_FILES_H_
#define HANDOFF_REHEARSAL_SANDBOX_KUBEADM_NODE_FILES_H_

#include <string>
#include <vector>

namespace handoff::sandbox::kubeadm {

// Inside every node.
inline constexpr char kKubeadmConfigPath[] = "/etc/kubeadm/kubeadm.yaml";
inline constexpr char kCloudConfigPath[] = "/etc/kubernetes/cloud.conf";
inline constexpr char kCriSocket[] = "unix:///run/containerd/containerd.sock";
inline constexpr int kApiServerPort = 6443;
// The reference CNI plugins as Debian installs them (containernetworking-plugins), and the
// configuration directory containerd reads (its default, inside the node).
inline constexpr char kCniBinDir[] = "/usr/lib/cni";
inline constexpr char kCniConfigPath[] = "/etc/cni/net.d/10-handoff-sandbox.conflist";

struct PlannedNode {
  std::string name;  // the instance's private DNS name: the Node's name and the hostname
  std::string ip;    // on the sandbox's bridge
  std::string zone;
  // The kubelet's --cgroup-root: each node's kubelet owns the pods and cgroups under it and
  // removes what it does not know there, so no two nodes share one.
  std::string cgroup_root;
  // The node's pod addresses ("10.244.1.0/24"): no two nodes share one.
  std::string pod_cidr;
  // A worker: joined without --control-plane, never a backend of the load balancer.
  bool worker = false;
};

struct ClusterPlan {
  std::string cluster_name = "handoff-sandbox";
  std::string kubernetes_version;  // "v1.26.13"
  std::string endpoint_ip;         // the load balancer's address (controlPlaneEndpoint)
  std::string pause_image;         // "registry.k8s.io/pause:3.9"
  // etcd.local.imageTag ("3.5.10-0"): pinned, as operators pin it, so that a later kubeadm (whose
  // own default is newer) keeps the etcd the nodes have instead of pulling another.
  std::string etcd_image_tag;
  std::string bootstrap_token;     // "abcdef.0123456789abcdef"
  std::string certificate_key;     // 64 hex digits: kubeadm init --upload-certs
  // Where the nodes reach AWS's own HTTPS endpoints (the fake AWS on the bridge), named in their
  // /etc/hosts for `aws_region` ("" = no such names): ecr-credential-provider speaks to
  // api.ecr.<region>.amazonaws.com only.
  std::string aws_https_ip;
  std::string aws_region;
  std::vector<PlannedNode> nodes;
};

// kubeadm's preflight checks this sandbox fails for reasons of its own, each with why in
// node_files.cc: a Go 1.26 build of kubeadm 1.26 cannot parse its own proxy check's URL; conntrack
// and iptables serve kube-proxy, which is skipped.
const std::vector<std::string>& IgnoredPreflightErrors();

// InitConfiguration + ClusterConfiguration + KubeletConfiguration for `kubeadm init --config`
// on plan.nodes[0].
std::string InitConfiguration(const ClusterPlan& plan);
// How a joining node's kubelet finds its instance: the in-tree AWS provider with the cloud config
// (before the move), or `cloud-provider: external` (after it: the kubelet's flag is not in the
// ClusterConfiguration, so the JoinConfiguration carries it, README "Joining a control-plane node
// with kubeadm during and after the move").
// kInTreeExtraArgs: the in-tree provider given as an operator gives it beside kubeadm, in
// KUBELET_EXTRA_ARGS of /etc/default/kubelet (KubeletDefaults), which the kubelet's unit reads
// after kubeadm-flags.env; kubeletExtraArgs then names neither flag.
enum class KubeletCloud { kInTree, kExternal, kInTreeExtraArgs };

// /etc/default/kubelet for a node joined with KubeletCloud::kInTreeExtraArgs.
inline constexpr char kKubeletDefaultsPath[] = "/etc/default/kubelet";
std::string KubeletDefaults();

// JoinConfiguration for `kubeadm join --config` on plan.nodes[index] as a control-plane node;
// `ca_cert_hash` is "sha256:<hex>" of the cluster CA's public key.
std::string JoinConfiguration(const ClusterPlan& plan, size_t index,
                              const std::string& ca_cert_hash,
                              KubeletCloud cloud = KubeletCloud::kInTree);

// JoinConfiguration for `kubeadm join --config` on plan.nodes[index] as a worker (no
// controlPlane section).
std::string WorkerJoinConfiguration(const ClusterPlan& plan, size_t index,
                                    const std::string& ca_cert_hash, KubeletCloud cloud);

// Inside a worker: its workload, a static pod of `image` (an ECR image the node imported, never
// pulled) on the pod network.
inline constexpr char kWorkloadManifestPath[] = "/etc/kubernetes/manifests/workload.yaml";
inline constexpr char kWorkloadName[] = "workload";
std::string WorkloadManifest(const std::string& image);

// The AWS HTTPS endpoint names the nodes resolve to plan.aws_https_ip (HostsFile).
std::vector<std::string> AwsHttpsNames(const ClusterPlan& plan);

// containerd 1.6's configuration for a node: its default paths (the node's own), the CRI
// plugin with runc and cgroupfs, the pause image, restrict_oom_score_adj (root here lacks
// CAP_SYS_RESOURCE: without it every pod sandbox fails to start), the CNI plugins in kCniBinDir.
std::string ContainerdConfig(const ClusterPlan& plan);

// The node's CNI network (kCniConfigPath): loopback is containerd's own; a bridge on the node's
// pod_cidr (host-local addresses), no masquerade (nothing leaves the run's namespaces).
std::string CniConfig(const PlannedNode& node);

// The in-tree provider's cloud config (the cloud-controller-manager reads the same file): the
// cluster id and the EC2 and ELB endpoints pointed at `ec2_url`, as an operator points them at
// VPC endpoints. Zone and region come from each instance's metadata.
std::string CloudConfig(const std::string& cluster_id, const std::string& region,
                        const std::string& ec2_url);

// /etc/hosts of every node: localhost, every node's name and AwsHttpsNames.
std::string HostsFile(const ClusterPlan& plan);

// haproxy's configuration: TCP on endpoint_ip:6443 to every control-plane node's kube-apiserver
// (the workers have none), each checked
// on /healthz over TLS every second (kubeadm's HA guide, "haproxy configuration").
std::string HaproxyConfig(const ClusterPlan& plan);

}  // namespace handoff::sandbox::kubeadm

#endif  // HANDOFF_REHEARSAL_SANDBOX_KUBEADM_NODE_FILES_H_
