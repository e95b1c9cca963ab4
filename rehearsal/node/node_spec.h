// A node of the kubeadm sandbox as its own machine, and what the node's first process needs to
// know to become it. Pure: parsing and formatting of `handoff-sandbox-node boot` arguments and
// the node's mounts. The kubelet's command line: kubelet_unit.h.
//
// A node is a set of namespaces (mount, UTS, network, IPC, PID) around a first process, PID 1 of
// its PID namespace (node_init.h). Inside, every component finds its standard paths:
//   /etc                     overlay: the host's /etc below, <dir>/etc above (so the node's
//                            /etc/kubernetes, /etc/leadermigration.conf, /etc/handoff are
//                            <dir>/etc/... on the host)
//   /var/lib, /var/log,      overlays: the host's below, <dir>/.node/upper/<name> above; stray
//   /usr/libexec, /opt       writes (CNI, kubelet plugins) never reach the host
//   /run                     a tmpfs of its own
//   /var/lib/kubelet, /var/lib/etcd, /var/lib/containerd, /var/log/pods, /var/log/containers
//                            bound from <dir>/var/lib/kubelet, ... (containerd's snapshots cannot
//                            live on overlayfs; the pod logs are read from the host)
//   /proc                    a procfs of the node's PID namespace: the node's processes only
// The host's other paths (/usr, /tmp, /sys, /dev) are the host's, read-only or not as on the host.
#ifndef HANDOFF_REHEARSAL_NODE_NODE_SPEC_H_
#define HANDOFF_REHEARSAL_NODE_NODE_SPEC_H_

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace handoff::sandbox::node {

// The host paths the node mounts over with an overlay, in mount order.
inline constexpr std::string_view kOverlaidPaths[] = {"/etc", "/var/lib", "/var/log",
                                                      "/usr/libexec", "/opt"};
// The paths the node binds from its own directory, in mount order (after the overlays).
inline constexpr std::string_view kBoundPaths[] = {"/var/lib/kubelet", "/var/lib/etcd",
                                                   "/var/lib/containerd", "/var/log/pods",
                                                   "/var/log/containers"};

// The node's control socket, inside the node (its /run is the node's own).
inline constexpr char kControlSocket[] = "/run/handoff-sandbox-node/control.sock";
// Inside the node: the kubelet's configuration, which kubeadm's kubelet-start phase writes.
inline constexpr char kKubeletConfig[] = "/var/lib/kubelet/config.yaml";
inline constexpr char kContainerdConfig[] = "/etc/containerd/config.toml";

struct BootSpec {
  std::string name;        // the node's name and hostname
  std::string dir;         // its directory on the host (absolute)
  std::string log_dir;     // containerd-<name>.log and kubelet-<name>.log go here (absolute)
  std::string containerd;  // the containerd binary (absolute)
  std::string kubelet;     // the kubelet binary (absolute)
  // $PATH of the node's services: where containerd finds runc and its shim, the kubelet
  // mount, nsenter and the like.
  std::string path = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
  // After the kubelet exits by itself (or is killed), the next start waits this long: kubeadm's
  // kubelet.service says Restart=always, RestartSec=10.
  absl::Duration kubelet_restart_delay = absl::Seconds(10);
  // False for a node that runs no containerd and no kubelet (the load balancer's): its first
  // process only reaps. Then containerd and kubelet may be empty.
  bool services = true;
};

// One mount the node's first process makes, in order.
struct NodeMount {
  enum class Kind { kOverlay, kBind, kTmpfs };
  Kind kind = Kind::kBind;
  std::string target;              // inside the node
  std::string source;              // kBind: the host directory
  std::string lower, upper, work;  // kOverlay
};

// The mounts of `spec`'s node, in order: the overlays, /run, the binds (see the file comment).
// Every path is absolute. Pure.
std::vector<NodeMount> NodeMounts(const BootSpec& spec);

// The directories under spec.dir that NodeMounts uses as sources, uppers and work dirs, which
// must exist before the mounts are made. Pure.
std::vector<std::string> NodeDirectories(const BootSpec& spec);

// The arguments after "boot" that ParseBootArgs reads back as `spec`:
//   --name N --dir D --log-dir L --containerd PATH --kubelet PATH --path P
//   --kubelet-restart-delay DURATION; or, without services, --name N --dir D --log-dir L
//   --no-services
std::vector<std::string> BootArgs(const BootSpec& spec);
// Errors name the argument that is missing or wrong (a relative path, an unknown flag, a bad
// duration, a name that is not a hostname).
absl::StatusOr<BootSpec> ParseBootArgs(const std::vector<std::string>& args);

}  // namespace handoff::sandbox::node

#endif  // HANDOFF_REHEARSAL_NODE_NODE_SPEC_H_
