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
  // An environment file of the kubelet's unit that the move rewrote: its text before and the
  // text the move wrote, so that moving back puts the first back while the file still holds the
  // second.
  struct KubeletFile {
    std::string path;
    std::string before;
    std::string after;
  };
  static MigrationRecord Capture(const NodeView& view,
                                 const std::optional<std::vector<std::string>>& kubelet_flags,
                                 const std::optional<File>& leader_migration_config,
                                 std::vector<KubeletFile> kubelet_files = {});
  static absl::StatusOr<MigrationRecord> Parse(std::string_view text, std::string_view source);

  std::string Emit() const;

  // Puts the recorded fields back into `pod` (the component's current manifest). NotFound when
  // the record has no entry for `component`.
  absl::Status Restore(std::string_view component, StaticPod& pod, size_t container) const;
  bool Has(std::string_view component) const;

  const std::optional<std::vector<std::string>>& kubelet_flags() const { return kubelet_flags_; }
  const std::optional<File>& leader_migration_config() const { return leader_migration_config_; }
  // Empty in a record of a node whose kubelet had no unit to read (or written before handoff
  // read it): then kubelet_flags() is what moving back restores.
  const std::vector<KubeletFile>& kubelet_files() const { return kubelet_files_; }
  // Files the move created that were not there before (a worker's credential provider
  // configuration): moving back removes them.
  const std::vector<std::string>& created_files() const { return created_files_; }
  void AddCreatedFile(std::string path) { created_files_.push_back(std::move(path)); }

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
  std::vector<KubeletFile> kubelet_files_;
  std::vector<std::string> created_files_;
};

}  // namespace handoff

#endif  // HANDOFF_AGENT_ENGINE_MIGRATION_RECORD_H_
