// The kubeadm cluster under the sandbox (cluster.h, `handoffctl sandbox --cluster kubeadm`): a
// highly available control plane that real kubeadm v1.26.13 builds, on nodes that are machines of
// their own as far as every component can tell.
//
//   network   a /24 of the run's own (--network, 172.31.250.0/24 by default): a bridge the run
//             creates (.1 on the host, where the coordinator and the fake AWS's EC2 API listen)
//             and one veth per node; no default route and
//             `nameserver 127.0.0.1` in the nodes, so that nothing they send leaves the run's own
//             namespaces;
//   nodes     `handoff-sandbox-node boot` (node/node_init.h): mount, UTS, network, IPC and PID
//             namespaces, the node's own /etc, /var/lib/kubelet, /var/lib/etcd, /var/log/pods at
//             the standard paths (under <dir>/nodes/<name>/ on the host), containerd and the real
//             kubelet 1.26.13 run as kubeadm's systemd units run them; every image imported from
//             the components' archive (nothing is pulled);
//   endpoint  haproxy in a namespace of its own (.2:6443, controlPlaneEndpoint) in
//             front of every node's kube-apiserver, as kubeadm's HA guide sets it up;
//   AWS       the fake AWS (moto) with each node's instance metadata at 169.254.169.254 inside
//             that node, so every component finds its instance where it would on EC2;
//   kubeadm   `kubeadm init` on the first node (stacked etcd, the in-tree AWS provider for the API
//             server, the controller manager and the kubelet), `kubeadm join --control-plane` on
//             the others; everything in kube-system is kubeadm's and the kubelets';
//   workers   `kubeadm join` without --control-plane, each with its own containerd and real
//             kubelet 1.26.13 (--cloud-provider=aws), a workload static pod of an ECR image, and
//             ecr-credential-provider (cloud-provider-aws 1.27.2) installed where the agent's
//             settings look; api.ecr.us-east-1.amazonaws.com is the fake AWS's HTTPS endpoint on
//             the bridge, in the worker's /etc/hosts, its CA in the worker's trust store;
//   agents    `handoff-agent run` on each node, inside it, on the real paths, restarting the real
//             kubelet through the node's service manager (role: worker on the workers).
// The monitor reads the managers' own pod logs (CRI format) and learns each manager process's
// start and exit from the host's /proc (monitor/process_watcher.h).
//
// What it changes on the host is recorded (host_changes.h) and undone by Stop, or by the next
// run if this one dies.
#ifndef HANDOFF_REHEARSAL_SANDBOX_KUBEADM_KUBEADM_CLUSTER_H_
#define HANDOFF_REHEARSAL_SANDBOX_KUBEADM_KUBEADM_CLUSTER_H_

#include <memory>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "rehearsal/sandbox/cluster.h"
#include "rehearsal/sandbox/node_layout.h"

namespace handoff::sandbox {

// The versions the kubeadm sandbox moves between, as its images and kubeadm binaries are named
// (tests/real/components.sh).
inline constexpr char kKubeadmVersionN[] = "v1.26.13";
inline constexpr char kKubeadmVersionNext[] = "v1.27.16";

// The kubeadm sandbox's network: a /24 in AWS's default VPC range by default. Runs on networks of
// their own can go at once on one host.
inline constexpr char kDefaultKubeadmNetwork[] = "172.31.250.0/24";
struct KubeadmNetwork {
  std::string prefix;  // the first three octets and a dot: "172.31.250."

  std::string Address(int last) const { return prefix + std::to_string(last); }
  std::string Cidr() const { return prefix + "0/24"; }
  std::string BridgeIp() const { return Address(1); }    // the host's side: the coordinator's
  std::string EndpointIp() const { return Address(2); }  // controlPlaneEndpoint (haproxy)
};
// `cidr` as `--network` takes it, "A.B.C.0/24" ("" = kDefaultKubeadmNetwork); InvalidArgument
// naming --network otherwise.
absl::StatusOr<KubeadmNetwork> ParseKubeadmNetwork(std::string_view cidr);

// Node i (1-based) of the kubeadm sandbox: an instance in zone us-east-1a, b or c (in turn), its
// address in that zone's own /28 of `network` (.10+, .74+, .138+), named by its private DNS name
// (ip-172-31-250-10.ec2.internal), as the in-tree AWS provider names Nodes. provider_id is empty
// until the fake AWS has made the instance.
SandboxNode MakeKubeadmNode(const KubeadmNetwork& network, int index);

// Worker i (1-based) of the kubeadm sandbox: zone a, b or c in turn like the nodes, its address
// in that zone's block after the control-plane nodes' and the spares' (.40+, .104+, .168+), named
// by its private DNS name.
SandboxNode MakeKubeadmWorker(const KubeadmNetwork& network, int index);

// The managers' own leader-election defaults (15 s, 10 s, 2 s): kubeadm sets none.
LeaseTiming KubeadmManagerTiming();

// FailedPrecondition naming what is missing (root, a component, containerd, runc, haproxy) and how
// to get it.
absl::StatusOr<std::unique_ptr<SandboxCluster>> NewKubeadmCluster(const ClusterSetup& setup);

}  // namespace handoff::sandbox

#endif  // HANDOFF_REHEARSAL_SANDBOX_KUBEADM_KUBEADM_CLUSTER_H_
