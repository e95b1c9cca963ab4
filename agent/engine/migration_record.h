// What a node looked like before its managers went external, written when it moves forward from
// prepared to migrated (or, on the downtime path, from stopped to external, with the parked
// kube-controller-manager as its manifest), so that moving back restores exactly those images,
// flags and mounts instead of guessing them.
#ifndef HANDOFF_AGENT_ENGINE_MIGRATION_RECORD_H_
#define HANDOFF_AGENT_ENGINE_MIGRATION_RECORD_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "agent/engine/classify.h"
#include "yaml-cpp/yaml.h"

namespace handoff {

class MigrationRecord {
 public:
  // Captures kube-apiserver, kube-controller-manager and kube-scheduler (those present): image,
  // command, args, volumeMounts of the component's container and the pod's volumes; the kubelet's
  // flags; the Leader Migration file the kube-controller-manager reads.
  // `leader_migration_config` is the host path and content of the file the
  // kube-controller-manager reads (absent when it uses the default configuration).
  struct File {
    std::string path;
    std::string content;
  };
  static MigrationRecord Capture(const NodeView& view,
                                 const std::optional<std::vector<std::string>>& kubelet_flags,
                                 const std::optional<File>& leader_migration_config);
  static absl::StatusOr<MigrationRecord> Parse(std::string_view text, std::string_view source);

  std::string Emit() const;

  // Puts the recorded fields back into `pod` (the component's current manifest). NotFound when
  // the record has no entry for `component`.
  absl::Status Restore(std::string_view component, StaticPod& pod, size_t container) const;
  bool Has(std::string_view component) const;

  const std::optional<std::vector<std::string>>& kubelet_flags() const { return kubelet_flags_; }
  const std::optional<File>& leader_migration_config() const { return leader_migration_config_; }

 private:
  struct Entry {
    std::string component;
    std::string manifest;
    YAML::Node container;  // image, command, args, volumeMounts (those present)
    YAML::Node volumes;    // spec.volumes, or undefined
  };
  std::vector<Entry> entries_;
  std::optional<std::vector<std::string>> kubelet_flags_;
  std::optional<File> leader_migration_config_;
};

}  // namespace handoff

#endif  // HANDOFF_AGENT_ENGINE_MIGRATION_RECORD_H_
