// A static pod manifest (a v1 Pod in the kubelet's manifest directory) on yaml-cpp, with the
// edits handoff makes: flags, hostPath volumes and mounts, images. Every field it is not asked to
// change is kept. YAML comments are not: yaml-cpp drops them on load.
#ifndef HANDOFF_AGENT_MANIFEST_STATIC_POD_H_
#define HANDOFF_AGENT_MANIFEST_STATIC_POD_H_

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "yaml-cpp/yaml.h"

namespace handoff {

// A hostPath volume with its mount in one container.
struct HostPathMount {
  std::string name;        // volume name, also the volumeMount's name
  std::string host_path;   // spec.volumes[].hostPath.path
  std::string type;        // hostPath.type ("File", "DirectoryOrCreate", ...); "" = unset
  std::string mount_path;  // volumeMounts[].mountPath
  bool read_only = true;
};

// Value type: copies are deep, moves are cheap and noexcept (so a vector of pods, or of
// ManifestFiles, moves them when it grows instead of copying every tree); a moved-from pod is
// empty. Not thread-safe.
class StaticPod {
 public:
  // `source` names the file in every error message.
  static absl::StatusOr<StaticPod> Parse(std::string_view text, std::string source);

  StaticPod(const StaticPod& other);
  StaticPod& operator=(const StaticPod& other);
  StaticPod(StaticPod&& other) noexcept;
  StaticPod& operator=(StaticPod&& other) noexcept;

  const std::string& source() const { return source_; }
  // metadata.name ("kube-controller-manager"); the kubelet names the pod "<name>-<node>".
  std::string PodName() const;
  // Its kind ("Pod"; "" when not set).
  std::string Kind() const;
  // metadata.namespace, "default" when unset (as the kubelet does for static pods without one).
  std::string Namespace() const;

  // The same bytes for the same pod; the layout of kubeadm's manifests.
  std::string Emit() const;
  // Whether the kubelet would see the same pod (YAML meaning; formatting and key order ignored).
  bool SemanticallyEquals(const StaticPod& other) const;
  // Checks the fields a kubelet needs to run a static pod: apiVersion v1, kind Pod, metadata.name,
  // containers with unique names and an image, unique volume names, mounts that name a volume,
  // absolute hostPath paths and mountPaths, unique mountPaths per container. Every problem is
  // listed in the error, each with its field path.
  absl::Status Validate() const;

  // Index of the container named `container`; NotFound names the file and the names present.
  absl::StatusOr<size_t> FindContainer(std::string_view container) const;
  std::vector<std::string> ContainerNames() const;

  // The container's command followed by its args, as the runtime joins them.
  std::vector<std::string> Argv(size_t container) const;
  // The value of --flag after pflag parsing (last occurrence; bare boolean → "true").
  std::optional<std::string> GetFlag(size_t container, std::string_view flag) const;
  // How often --flag occurs in command+args.
  size_t CountFlag(size_t container, std::string_view flag) const;
  // Sets --flag where it is (command or args, in its form); a new flag goes to args when args
  // holds the flags, else to command. nullopt writes a bare boolean.
  void SetFlag(size_t container, std::string_view flag, const std::optional<std::string>& value);
  // Removes every occurrence from command and args. Returns whether any was there.
  bool RemoveFlag(size_t container, std::string_view flag);

  std::string Image(size_t container) const;
  void SetImage(size_t container, std::string_view image);

  // Adds the volume and the container's mount unless both are already there as given. A volume
  // of the same name with different content, or another mount at the same mountPath, is an
  // error that names the clash; nothing is changed then.
  absl::Status EnsureHostPathMount(size_t container, const HostPathMount& mount);
  // Removes the volume and every container's mount of it. Returns whether anything was removed.
  bool RemoveVolume(std::string_view name);
  // The hostPath volume named `name` with the container's mount of it, if both exist.
  std::optional<HostPathMount> FindHostPathMount(size_t container, std::string_view name) const;
  // Every hostPath volume mounted by the container.
  std::vector<HostPathMount> HostPathMounts(size_t container) const;
  // The hostPath mount whose mountPath is `container_path` or a directory above it (the mount a
  // file path inside the container comes through), if any.
  std::optional<HostPathMount> MountCovering(size_t container,
                                             std::string_view container_path) const;

  // The underlying tree, for fields without a dedicated accessor. Mutations change this pod.
  YAML::Node& node() { return root_; }
  const YAML::Node& node() const { return root_; }

 private:
  StaticPod(YAML::Node root, std::string source)
      : root_(std::move(root)), source_(std::move(source)) {}
  YAML::Node ContainerNode(size_t container) const;
  std::vector<std::string> Items(size_t container, const char* key) const;
  void SetItems(size_t container, const char* key, const std::vector<std::string>& items);

  YAML::Node root_;
  std::string source_;
};

}  // namespace handoff

#endif  // HANDOFF_AGENT_MANIFEST_STATIC_POD_H_
