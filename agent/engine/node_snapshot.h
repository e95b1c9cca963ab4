// Everything handoff reads from one node, read once, so that classification and planning are
// pure functions of it.
#ifndef HANDOFF_AGENT_ENGINE_NODE_SNAPSHOT_H_
#define HANDOFF_AGENT_ENGINE_NODE_SNAPSHOT_H_

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "agent/engine/settings.h"
#include "agent/kubelet/kubelet_command_line.h"
#include "agent/manifest/static_pod.h"
#include "common/fs/file_system.h"

namespace handoff {

inline constexpr std::string_view kKubeApiserver = "kube-apiserver";
inline constexpr std::string_view kKubeControllerManager = "kube-controller-manager";
inline constexpr std::string_view kKubeScheduler = "kube-scheduler";
inline constexpr std::string_view kCloudControllerManager = "cloud-controller-manager";
inline constexpr std::string_view kKubelet = "kubelet";

// One file the kubelet loads from the manifest directory.
struct ManifestFile {
  std::string path;
  std::string content;
  // nullopt when the file does not parse as a pod, or is no file to parse: a FIFO, a device, a
  // socket, one over the manifest size limit (kStaticPodManifestRead), or a symlink to nothing.
  std::optional<StaticPod> pod;
  std::string parse_error;  // why `pod` is nullopt, naming the file
};

struct NodeSnapshot {
  NodePaths paths;
  // What the settings say the node is (ReadNodeSnapshot with the settings): a worker is
  // classified and moved by its kubelet alone.
  NodeRole role = NodeRole::kControlPlane;
  // A worker's: the settings' worker part; ecr-credential-provider in its bin dir (nullopt when
  // absent) and the credential provider configuration at worker.credential_provider_config.
  WorkerSettings worker;
  std::optional<FileInfo> credential_provider_binary;
  std::optional<std::string> credential_provider_config;
  bool credential_provider_config_dir_exists = false;
  // A worker's host name (/etc/hostname, which systemd gives the kernel at boot): what an
  // external kubelet names its Node without --hostname-override. "" when unknown.
  std::string host_name;
  // Every file the kubelet would load: all names in the manifest dir not starting with "." (the
  // kubelet applies no extension filter: pkg/kubelet/config/file.go), sorted by name.
  std::vector<ManifestFile> manifests;
  std::optional<std::string> kubelet_flags;            // when managed and present
  // When managed: the kubelet's unit as systemd starts it (kubelet.service, its drop-ins and the
  // environment files they name), nullopt on a node without a kubelet.service (kubelet_flags is
  // then read as kubeadm's drop-in reads it). What the kubelet runs with: ReadEffectiveKubelet.
  std::optional<KubeletUnit> kubelet_unit;
  // Why the unit cannot be read (masked, a drop-in that does not parse), naming the file; "" when
  // it can or when there is none.
  std::string kubelet_unit_error;
  std::optional<std::string> leader_migration_config;  // paths.leader_migration_config
  std::optional<std::string> migration_record;         // MigrationRecordPath(paths)
  // The in-tree kube-controller-manager's manifest as the downtime path parks it
  // (ParkedControllerManagerPath), out of the kubelet's sight; nullopt when nothing is parked.
  std::optional<std::string> parked_controller_manager;
  // Host files the manifests point at that handoff must check: the host side of every
  // --leader-migration-config, and the file the migration record restores; by host path,
  // nullopt when missing.
  std::map<std::string, std::optional<std::string>> referenced_files;
};

// The files of the manifest directory that are no component's manifest, one line each naming
// the file and why: one that is not a pod manifest, and every copy of a pod another file also
// defines but for the one named "<pod name>.yaml". The kubelet applies no extension filter: a
// kube-controller-manager.yaml.bak copy replaces the running pod by its own when it appears and
// the original comes back when it goes, each time restarting the manager (measured, kubelet
// v1.26.13 on the kubeadm sandbox). Pure.
std::vector<std::string> StrayManifestFiles(const NodeSnapshot& snapshot);
// `snapshot` without the files StrayManifestFiles lists: the node as it would be with them moved
// out. Pure.
NodeSnapshot WithoutStrayFiles(const NodeSnapshot& snapshot);

// Where the record of a node's pre-migration images and flags lives.
std::string MigrationRecordPath(const NodePaths& paths);
// Where the downtime path parks the kube-controller-manager's manifest while the node is
// stopped: <paths.state_dir>/parked/kube-controller-manager.yaml, outside the manifest directory
// so that the kubelet stops the pod (a stray copy in the manifest dir would still run).
std::string ParkedControllerManagerPath(const NodePaths& paths);
// The host path of a file a container sees at `container_path`, through `pod`'s mounts.
std::optional<std::string> HostPathOf(const StaticPod& pod, size_t container,
                                      std::string_view container_path);

// What the kubelet's process must carry once its files are as `snapshot` has them, every word
// after the program: the command line its unit gives it (ReadEffectiveKubelet), or, on a node
// without a kubelet.service, the flags of paths.kubelet_flags_file (none when that is absent).
// Errors name the file that does not parse, or why the unit cannot be read. Pure.
absl::StatusOr<std::vector<std::string>> ExpectedKubeletArgs(const NodeSnapshot& snapshot);
// The same command line read as the kubelet reads it, each flag with the file it is written in.
absl::StatusOr<KubeletCommandLine> ExpectedKubeletFlags(const NodeSnapshot& snapshot);

// Reads the node, each kind of file within its size limit (read_limit.h). Fails only when the
// manifest directory cannot be listed or a present file cannot be read; content problems are
// left to Classify, and so is an entry of the manifest directory that is no file to read (a
// broken entry, named with the reason, never opened for reading).
absl::StatusOr<NodeSnapshot> ReadNodeSnapshot(const FileSystem& fs, const NodePaths& paths);
// The same for the node `settings` describe: its role, and for a worker also the credential
// provider's binary and configuration.
absl::StatusOr<NodeSnapshot> ReadNodeSnapshot(const FileSystem& fs, const Settings& settings);

// The file name of the AWS image credential provider in worker.credential_provider_bin_dir,
// which is also its provider name in the CredentialProviderConfig.
inline constexpr char kEcrCredentialProvider[] = "ecr-credential-provider";

}  // namespace handoff

#endif  // HANDOFF_AGENT_ENGINE_NODE_SNAPSHOT_H_
