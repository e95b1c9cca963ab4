#include "agent/engine/migration_record.h"

#include "common/base/strings.h"
#include "common/base/yaml_util.h"

namespace handoff {
namespace {

constexpr char kKind[] = "HandoffMigrationRecord";
constexpr const char* kContainerFields[] = {"image", "command", "args", "volumeMounts"};

}  // namespace

MigrationRecord MigrationRecord::Capture(
    const NodeView& view, const std::optional<std::vector<std::string>>& kubelet_flags,
    const std::optional<File>& leader_migration_config, std::vector<KubeletFile> kubelet_files) {
  MigrationRecord record;
  for (const std::optional<ComponentView>* component :
       {&view.apiserver, &view.controller_manager, &view.scheduler}) {
    if (!*component) continue;
    const ComponentView& c = **component;
    Entry entry;
    entry.component = c.component;
    entry.manifest = c.path;
    const YAML::Node& root = c.pod.node();
    const YAML::Node container = root["spec"]["containers"][c.container];
    entry.container = YAML::Node(YAML::NodeType::Map);
    for (const char* field : kContainerFields) {
      if (container[field].IsDefined()) entry.container[field] = YAML::Clone(container[field]);
    }
    if (root["spec"]["volumes"].IsDefined()) entry.volumes = YAML::Clone(root["spec"]["volumes"]);
    record.entries_.push_back(std::move(entry));
  }
  record.kubelet_flags_ = kubelet_flags;
  record.leader_migration_config_ = leader_migration_config;
  record.kubelet_files_ = std::move(kubelet_files);
  return record;
}

std::string MigrationRecord::Emit() const {
  YAML::Node root;
  root["kind"] = kKind;
  root["description"] =
      "Written by handoff-agent when this node's managers went external (prepared to migrated, "
      "or stopped to external). Moving back restores these images, flags and mounts. Do not "
      "edit.";
  YAML::Node components(YAML::NodeType::Sequence);
  for (const Entry& entry : entries_) {
    YAML::Node item;
    item["component"] = entry.component;
    item["manifest"] = entry.manifest;
    item["container"] = entry.container;
    if (entry.volumes.IsDefined()) item["volumes"] = entry.volumes;
    components.push_back(item);
  }
  root["components"] = components;
  if (kubelet_flags_) {
    YAML::Node flags(YAML::NodeType::Sequence);
    for (const std::string& flag : *kubelet_flags_) flags.push_back(flag);
    root["kubeletFlags"] = flags;
  }
  if (!kubelet_files_.empty()) {
    YAML::Node files(YAML::NodeType::Sequence);
    for (const KubeletFile& file : kubelet_files_) {
      YAML::Node item;
      item["path"] = file.path;
      item["before"] = file.before;
      item["after"] = file.after;
      files.push_back(item);
    }
    root["kubeletFiles"] = files;
  }
  if (!created_files_.empty()) {
    YAML::Node created(YAML::NodeType::Sequence);
    for (const std::string& path : created_files_) created.push_back(path);
    root["createdFiles"] = created;
  }
  if (leader_migration_config_) {
    root["leaderMigrationConfig"]["path"] = leader_migration_config_->path;
    root["leaderMigrationConfig"]["content"] = leader_migration_config_->content;
  }
  return EmitYaml(root);
}

absl::StatusOr<MigrationRecord> MigrationRecord::Parse(std::string_view text,
                                                       std::string_view source) {
  absl::StatusOr<YAML::Node> root = LoadYaml(text, source);
  if (!root.ok()) return root.status();
  auto invalid = [&](std::string_view what) {
    return absl::InvalidArgumentError(
        StrCat(source, ": ", what,
               "; the migration record is damaged, so handoff cannot "
               "know what the node had before it moved (restore it from a backup)"));
  };
  const YAML::Node& doc = *root;
  if (!HasField(doc, "kind", YAML::NodeType::Scalar) || doc["kind"].Scalar() != kKind) {
    return invalid(StrCat("kind is not ", kKind));
  }
  MigrationRecord record;
  if (!HasField(doc, "components", YAML::NodeType::Sequence)) {
    return invalid("components must be a list");
  }
  const YAML::Node components = doc["components"];
  for (size_t i = 0; i < components.size(); ++i) {
    const YAML::Node item = components[i];
    Entry entry;
    if (!HasField(item, "component", YAML::NodeType::Scalar) ||
        !HasField(item, "container", YAML::NodeType::Map)) {
      return invalid(StrCat("components[", i, "] needs component and container"));
    }
    entry.component = item["component"].Scalar();
    entry.manifest =
        HasField(item, "manifest", YAML::NodeType::Scalar) ? item["manifest"].Scalar() : "";
    entry.container = YAML::Clone(item["container"]);
    if (item["volumes"].IsDefined()) entry.volumes = YAML::Clone(item["volumes"]);
    record.entries_.push_back(std::move(entry));
  }
  if (doc["kubeletFlags"].IsDefined()) {
    if (!HasField(doc, "kubeletFlags", YAML::NodeType::Sequence)) {
      return invalid("kubeletFlags must be a list");
    }
    std::vector<std::string> flags;
    const YAML::Node items = doc["kubeletFlags"];
    for (size_t i = 0; i < items.size(); ++i) {
      if (!items[i].IsScalar()) return invalid(StrCat("kubeletFlags[", i, "] must be a string"));
      flags.push_back(items[i].Scalar());
    }
    record.kubelet_flags_ = flags;
  }
  if (doc["kubeletFiles"].IsDefined()) {
    if (!HasField(doc, "kubeletFiles", YAML::NodeType::Sequence)) {
      return invalid("kubeletFiles must be a list");
    }
    const YAML::Node items = doc["kubeletFiles"];
    for (size_t i = 0; i < items.size(); ++i) {
      const YAML::Node item = items[i];
      if (!HasField(item, "path", YAML::NodeType::Scalar) ||
          !HasField(item, "before", YAML::NodeType::Scalar) ||
          !HasField(item, "after", YAML::NodeType::Scalar)) {
        return invalid(StrCat("kubeletFiles[", i, "] needs path, before and after"));
      }
      record.kubelet_files_.push_back(
          KubeletFile{item["path"].Scalar(), item["before"].Scalar(), item["after"].Scalar()});
    }
  }
  if (doc["createdFiles"].IsDefined()) {
    if (!HasField(doc, "createdFiles", YAML::NodeType::Sequence)) {
      return invalid("createdFiles must be a list");
    }
    const YAML::Node items = doc["createdFiles"];
    for (size_t i = 0; i < items.size(); ++i) {
      if (!items[i].IsScalar() || items[i].Scalar().empty() || items[i].Scalar()[0] != '/') {
        return invalid(StrCat("createdFiles[", i, "] must be an absolute path"));
      }
      record.created_files_.push_back(items[i].Scalar());
    }
  }
  if (doc["leaderMigrationConfig"].IsDefined()) {
    const YAML::Node file = doc["leaderMigrationConfig"];
    if (!HasField(file, "path", YAML::NodeType::Scalar) ||
        !HasField(file, "content", YAML::NodeType::Scalar)) {
      return invalid("leaderMigrationConfig needs path and content");
    }
    record.leader_migration_config_ = File{file["path"].Scalar(), file["content"].Scalar()};
  }
  return record;
}

bool MigrationRecord::Has(std::string_view component) const {
  for (const Entry& entry : entries_) {
    if (entry.component == component) return true;
  }
  return false;
}

absl::Status MigrationRecord::Restore(std::string_view component, StaticPod& pod,
                                      size_t container_index) const {
  for (const Entry& entry : entries_) {
    if (entry.component != component) continue;
    YAML::Node spec = pod.node()["spec"];
    YAML::Node container = spec["containers"][container_index];
    for (const char* field : kContainerFields) {
      if (entry.container[field].IsDefined()) {
        container[field] = YAML::Clone(entry.container[field]);
      } else if (container[field].IsDefined()) {
        container.remove(field);
      }
    }
    if (entry.volumes.IsDefined()) {
      spec["volumes"] = YAML::Clone(entry.volumes);
    } else if (spec["volumes"].IsDefined()) {
      spec.remove("volumes");
    }
    return absl::OkStatus();
  }
  return absl::NotFoundError(StrCat("the migration record has no entry for ", component));
}

}  // namespace handoff
