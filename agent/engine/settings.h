// What an operator can set for a migration: where a node keeps its files, the target version,
// the cloud-controller-manager to run and the Leader Migration options. One settings file (and
// the same command-line options) serves every step; a step ignores what it does not need.
#ifndef HANDOFF_AGENT_ENGINE_SETTINGS_H_
#define HANDOFF_AGENT_ENGINE_SETTINGS_H_

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/base/kube_version.h"
#include "common/fs/file_system.h"

namespace handoff {

struct NodePaths {
  std::string manifest_dir = "/etc/kubernetes/manifests";
  // Empty: the kubelet's flags are not managed by handoff (e.g. RKE2, where the supervisor
  // writes them); the operator sets the kubelet's --cloud-provider.
  std::string kubelet_flags_file = "/var/lib/kubelet/kubeadm-flags.env";
  // The same path on the host and inside the managers' containers.
  std::string leader_migration_config = "/etc/leadermigration.conf";
  std::string state_dir = "/var/lib/handoff";
};

struct CloudControllerManagerSettings {
  std::string image;                   // required to create the CCM (migrated)
  std::string cloud_provider = "aws";  // its --cloud-provider ("aws" or "aws/v2")
  std::string kubeconfig;              // "" = the kube-controller-manager's --kubeconfig
  std::string cluster_cidr;            // set with configure_cloud_routes
  bool configure_cloud_routes = false;
  std::map<std::string, std::string> extra_args;  // flag name (no dashes) → value; "" = bare
};

// An http or https URL split the way the agent's health checker takes it.
struct HealthUrl {
  std::string scheme = "http";
  std::string host = "127.0.0.1";  // an IPv6 address without its brackets
  int port = 10248;
  std::string path = "/healthz";
};

struct KubeletSettings {
  // Settings key kubelet.healthzUrl: where the kubelet's health endpoint answers (its
  // --healthz-bind-address and --healthz-port, kubelet defaults 127.0.0.1 and 10248), checked
  // after the kubelet is restarted. Another address when the kubelet binds elsewhere, e.g. when
  // several simulated nodes share one machine.
  HealthUrl healthz;
  // Settings key kubelet.settle: after a restart, how long the kubelet must have run healthy
  // before the move goes on. A kubelet v1.26 drops a static pod's manifest change it sees before
  // it has read all its pod sources (the API server's too: "skipping delete because sources
  // aren't ready yet", kubernetes#112814): the old pod runs on and the new one waits for it
  // until the next kubelet restart. Measured on v1.26.13 with the API server reachable, a
  // manifest rewritten 1 s after the restart never restarted its pod, 2 s after it did. What a
  // kubelet drops anyway (one still bootstrapping or cut off) the applier stops itself
  // (Applier::StopLeftRunning). 0s turns the wait off.
  absl::Duration settle = absl::Seconds(5);
};

// Which part of the cluster a node is. A control-plane node's managers are static pods that
// the move rewrites (with the kubelet's flags); a worker runs none, and only its kubelet moves.
enum class NodeRole { kControlPlane, kWorker };
// "control-plane", "worker".
std::string_view NodeRoleName(NodeRole role);

// What a worker's move writes for the kubelet besides --cloud-provider=external: the image
// credential provider that takes over the in-tree provider's ECR credentials, and the Node's
// name that the in-tree provider gave it.
struct WorkerSettings {
  // Settings key worker.credentialProviderConfig: the kubelet's CredentialProviderConfig
  // (kubelet.config.k8s.io/v1) for ecr-credential-provider, written by the move unless the
  // kubelet already names one (--image-credential-provider-config).
  // Its directory must exist: handoff creates the file, not directories outside its own.
  std::string credential_provider_config =
      "/etc/kubernetes/image-credential-provider-config.yaml";
  // Settings key worker.credentialProviderBinDir: the directory where the operator installed
  // ecr-credential-provider (--image-credential-provider-bin-dir). handoff does not install it.
  std::string credential_provider_bin_dir =
      "/usr/libexec/kubelet-image-credential-provider-plugins";
  // Settings key worker.nodeName: the name of this node's Node object. The in-tree provider names
  // it after the instance's private DNS name, which an external kubelet does not know: "" = the
  // agent reads it from the instance metadata (local-hostname).
  std::string node_name;
  // Settings key worker.kubeconfig: how the agent reads this node's Node and its Lease to prove
  // the kubelet kept them: the kubelet's own credentials (the Node authorizer lets a kubelet read
  // its Node and Lease, and nothing of other nodes).
  std::string kubeconfig = "/etc/kubernetes/kubelet.conf";
  // Settings key worker.ecrRegistry: the registry the credential provider must answer for
  // (<account>.dkr.ecr.<region>.amazonaws.com). "" = the instance's own account and region, from
  // the instance metadata's identity document.
  std::string ecr_registry;
  // Settings key worker.crictl: the command, with its flags, that lists this node's containers
  // (the agent adds `ps -o json`) to prove the kubelet's restart left them running: crictl with
  // --runtime-endpoint when /etc/crictl.yaml does not name the runtime's socket.
  std::vector<std::string> crictl = {"crictl"};
};

struct Settings {
  // Settings key role: control-plane (the default) or worker.
  NodeRole role = NodeRole::kControlPlane;
  WorkerSettings worker;
  NodePaths paths;
  std::optional<KubeVersion> k8s_version;  // version N+1 of the control plane
  std::string leader_name = "cloud-provider-extraction-migration";
  bool wildcard = false;          // component "*" in /etc/leadermigration.conf
  bool migrate_nodeipam = false;  // move the Node IPAM controller too
  // --external-cloud-volume-plugin for the external kube-controller-manager ("aws" when volumes
  // are not on CSI migration); "" = not set.
  std::string external_cloud_volume_plugin;
  CloudControllerManagerSettings ccm;
  // Full image per component ("kube-apiserver", "kube-controller-manager", "kube-scheduler"),
  // used instead of re-tagging with k8s_version (for registries whose tags are not vX.Y.Z).
  std::map<std::string, std::string> images;
  KubeletSettings kubelet;
  // Settings key clusterId: the <id> of the kubernetes.io/cluster/<id> tag the downtime path
  // checks on the instance before a node moves stopped -> external; "" = not set (the check is
  // then left to the operator).
  std::string cluster_id;
  // Settings key instanceMetadata.endpoint: the EC2 instance metadata service asked for that
  // tag, scheme://host[:port]; "" = never ask it (the check is left to the operator).
  std::string instance_metadata_endpoint = "http://169.254.169.254";
};

// Parses "http://127.0.0.1:10248/healthz": scheme http or https, a host (a name, an IPv4
// address, or an IPv6 address in brackets), an optional port (1-65535; default 80 or 443) and a
// path starting with "/" ("/" when absent). No user info, query or fragment. The error says what
// is wrong with `url`.
absl::StatusOr<HealthUrl> ParseHealthUrl(std::string_view url);

// OK for "" (not set) and for an id that makes a valid tag key kubernetes.io/cluster/<id>
// handoff can name in an aws command: at most 106 characters (the key at most 128), letters,
// digits and - _ . : = + @. Otherwise InvalidArgument saying what is wrong with `id`.
absl::Status CheckClusterId(std::string_view id);

// Parses a settings file. Unknown keys are errors that name the file and the key path, so a typo
// never silently falls back to a default.
absl::StatusOr<Settings> ParseSettings(std::string_view text, std::string_view source);

// Refuses a state dir (paths.stateDir) where the kubelet would find handoff's files, before
// anything is made in it: one that is, or lies inside, the static pod manifest directory (the
// kubelet loads every file there, so the lock, journal and backups would be taken for broken
// manifests), or the directory of the kubelet's flags file (the kubelet's own directory,
// /var/lib/kubelet on kubeadm). Also a state dir that is not absolute. The paths are compared
// lexically normal and, when `fs` is given, also as fs->RealPath resolves their symlinks (inside
// its root). InvalidArgument naming `source` (the settings file) and paths.stateDir.
absl::Status CheckStateDir(const NodePaths& paths, std::string_view source,
                           const FileSystem* fs = nullptr);

}  // namespace handoff

#endif  // HANDOFF_AGENT_ENGINE_SETTINGS_H_
