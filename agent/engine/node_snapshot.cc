#include "agent/engine/node_snapshot.h"

#include <algorithm>
#include <map>

#include "agent/engine/migration_record.h"
#include "agent/manifest/kubelet_flags.h"
#include "common/base/strings.h"
#include "common/fs/host_path.h"

namespace handoff {
namespace {

// Reads a file that may be absent: nullopt when absent, an error for anything else.
absl::StatusOr<std::optional<std::string>> ReadOptional(const FileSystem& fs,
                                                        const std::string& path,
                                                        const ReadLimit& limit) {
  absl::StatusOr<std::string> content = fs.ReadFile(path, limit);
  if (content.ok()) return std::optional<std::string>(*std::move(content));
  if (absl::IsNotFound(content.status())) return std::optional<std::string>();
  return content.status();
}

// The kubelet's unit, drop-ins and environment files into `snapshot`. A node without a
// kubelet.service leaves kubelet_unit empty; one whose unit cannot be merged records why in
// kubelet_unit_error. Errors only for a file that cannot be read.
absl::Status ReadKubeletUnit(const FileSystem& fs, NodeSnapshot& snapshot) {
  absl::StatusOr<std::vector<systemd::UnitFileText>> files =
      systemd::FindUnitFiles(fs, "kubelet.service");
  if (absl::IsNotFound(files.status())) return absl::OkStatus();
  if (absl::IsFailedPrecondition(files.status())) {
    snapshot.kubelet_unit_error = std::string(files.status().message());
    return absl::OkStatus();
  }
  if (!files.ok()) return files.status();
  KubeletUnit unit;
  unit.unit_files = *std::move(files);
  unit.specifiers.unit_name = "kubelet.service";
  // %H is the kernel's host name, which systemd sets from /etc/hostname at boot.
  absl::StatusOr<std::optional<std::string>> hostname =
      ReadOptional(fs, "/etc/hostname", kUnitFileRead);
  if (!hostname.ok()) return hostname.status();
  if (*hostname) {
    std::string_view name = **hostname;
    while (!name.empty() && (name.back() == '\n' || name.back() == ' ')) name.remove_suffix(1);
    unit.specifiers.host_name = std::string(name);
  }
  absl::StatusOr<systemd::ServiceCommand> command =
      systemd::MergeServiceCommand(unit.unit_files, unit.specifiers);
  if (!command.ok()) {
    snapshot.kubelet_unit_error = std::string(command.status().message());
  } else {
    absl::StatusOr<std::map<std::string, std::string>> environment =
        systemd::ReadEnvironmentFiles(fs, *command);
    if (!environment.ok()) return environment.status();
    unit.environment = *std::move(environment);
  }
  snapshot.kubelet_unit = std::move(unit);
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<KubeletCommandLine> ExpectedKubeletFlags(const NodeSnapshot& snapshot) {
  if (!snapshot.kubelet_unit_error.empty()) {
    return absl::FailedPreconditionError(snapshot.kubelet_unit_error);
  }
  if (snapshot.kubelet_unit) {
    absl::StatusOr<EffectiveKubelet> kubelet = ReadEffectiveKubelet(*snapshot.kubelet_unit);
    if (!kubelet.ok()) return kubelet.status();
    return std::move(kubelet->flags);
  }
  std::vector<systemd::CommandWord> argv = {systemd::CommandWord{"kubelet", "", {}, -1}};
  if (snapshot.kubelet_flags) {
    absl::StatusOr<KubeletFlagsFile> file =
        KubeletFlagsFile::Parse(*snapshot.kubelet_flags, snapshot.paths.kubelet_flags_file);
    if (!file.ok()) return file.status();
    const systemd::Origin origin{snapshot.paths.kubelet_flags_file, 0};
    for (const std::string& item : file->flags().items()) {
      argv.push_back(systemd::CommandWord{item, std::string(kKubeletArgsVariable), origin, -1});
    }
  }
  return ParseKubeletCommandLine(argv);
}

absl::StatusOr<std::vector<std::string>> ExpectedKubeletArgs(const NodeSnapshot& snapshot) {
  if (!snapshot.kubelet_unit_error.empty()) {
    return absl::FailedPreconditionError(snapshot.kubelet_unit_error);
  }
  if (snapshot.kubelet_unit) {
    absl::StatusOr<EffectiveKubelet> kubelet = ReadEffectiveKubelet(*snapshot.kubelet_unit);
    if (!kubelet.ok()) return kubelet.status();
    return std::vector<std::string>(kubelet->argv.begin() + (kubelet->argv.empty() ? 0 : 1),
                                    kubelet->argv.end());
  }
  if (!snapshot.kubelet_flags) return std::vector<std::string>();
  absl::StatusOr<KubeletFlagsFile> file =
      KubeletFlagsFile::Parse(*snapshot.kubelet_flags, snapshot.paths.kubelet_flags_file);
  if (!file.ok()) return file.status();
  return file->flags().items();
}

std::string MigrationRecordPath(const NodePaths& paths) {
  return JoinPath(paths.state_dir, "migration-record.yaml");
}

std::string ParkedControllerManagerPath(const NodePaths& paths) {
  return JoinPath(paths.state_dir, StrCat("parked/", kKubeControllerManager, ".yaml"));
}

std::optional<std::string> HostPathOf(const StaticPod& pod, size_t container,
                                      std::string_view container_path) {
  std::optional<HostPathMount> mount = pod.MountCovering(container, container_path);
  if (!mount) return std::nullopt;
  std::string_view rest =
      container_path.substr(std::min(container_path.size(), mount->mount_path.size()));
  if (rest.empty()) return mount->host_path;
  return JoinPath(mount->host_path, StripPrefix(rest, "/"));
}

namespace {

struct StrayFile {
  const ManifestFile* file;
  std::string why;
};

std::vector<StrayFile> StrayEntries(const NodeSnapshot& snapshot) {
  std::vector<StrayFile> stray;
  std::map<std::string, std::vector<const ManifestFile*>> by_pod;
  for (const ManifestFile& file : snapshot.manifests) {
    if (!file.pod) {
      const std::string_view error = file.parse_error;
      stray.push_back(
          {&file, StrCat("not a pod manifest (",
                         error.substr(0, std::min(error.size(), error.find('\n'))), ")")});
      continue;
    }
    if (file.pod->Kind() != "Pod" || file.pod->PodName().empty()) {
      // A YAML map the kubelet refuses to decode as a pod (kind missing or not Pod, no name):
      // notes, a kustomization, a half-written copy.
      stray.push_back({&file, StrCat("not a pod manifest (kind \"", file.pod->Kind(),
                                     "\", metadata.name \"", file.pod->PodName(), "\")")});
      continue;
    }
    by_pod[StrCat(file.pod->Namespace(), "/", file.pod->PodName())].push_back(&file);
  }
  for (const auto& [pod, files] : by_pod) {
    if (files.size() < 2) continue;
    const ManifestFile* canonical = nullptr;
    for (const ManifestFile* file : files) {
      if (file->path ==
          JoinPath(snapshot.paths.manifest_dir, StrCat(file->pod->PodName(), ".yaml"))) {
        canonical = file;
      }
    }
    for (const ManifestFile* file : files) {
      if (file == canonical) continue;
      stray.push_back({file, StrCat("pod ", pod, " again",
                                    canonical ? StrCat(" (", canonical->path, " defines it)")
                                              : std::string(" (another file defines it too)"))});
    }
  }
  return stray;
}

}  // namespace

std::vector<std::string> StrayManifestFiles(const NodeSnapshot& snapshot) {
  std::vector<std::string> lines;
  for (const StrayFile& stray : StrayEntries(snapshot)) {
    lines.push_back(StrCat(stray.file->path, ": ", stray.why));
  }
  return lines;
}

NodeSnapshot WithoutStrayFiles(const NodeSnapshot& snapshot) {
  std::vector<std::string> stray_paths;
  for (const StrayFile& stray : StrayEntries(snapshot)) stray_paths.push_back(stray.file->path);
  NodeSnapshot kept = snapshot;
  kept.manifests.erase(std::remove_if(kept.manifests.begin(), kept.manifests.end(),
                                      [&](const ManifestFile& file) {
                                        return std::find(stray_paths.begin(), stray_paths.end(),
                                                         file.path) != stray_paths.end();
                                      }),
                       kept.manifests.end());
  return kept;
}

namespace {

absl::StatusOr<NodeSnapshot> ReadSnapshot(const FileSystem& fs, const NodePaths& paths,
                                          NodeRole role) {
  NodeSnapshot snapshot;
  snapshot.paths = paths;
  snapshot.role = role;
  absl::StatusOr<std::vector<std::string>> names = fs.ListDirectory(paths.manifest_dir);
  if (!names.ok() && role == NodeRole::kWorker && absl::IsNotFound(names.status())) {
    names = std::vector<std::string>();  // a worker's kubelet may have no static pods at all
  }
  if (!names.ok()) {
    return absl::FailedPreconditionError(
        StrCat("cannot list the static pod manifest directory ", paths.manifest_dir, ": ",
               names.status().message(), " (is this a control-plane node? set paths.manifestDir)"));
  }
  for (const std::string& name : *names) {
    if (StartsWith(name, ".")) continue;  // the kubelet skips dotfiles
    const std::string path = JoinPath(paths.manifest_dir, name);
    ManifestFile file;
    file.path = path;
    absl::StatusOr<FileInfo> info = fs.Stat(path);
    if (!info.ok() && absl::IsNotFound(info.status())) {
      // Listed but not there: a symlink to nothing (inside --root, a link to a host path the
      // copy lacks). The kubelet skips it; handoff names it rather than guess what it was.
      file.parse_error =
          StrCat(info.status().message(), "; listed but not there: a symlink to nothing?");
      snapshot.manifests.push_back(std::move(file));
      continue;
    }
    if (!info.ok()) return info.status();
    if (info->is_directory) continue;
    // A FIFO, a device, a socket, or a file too large to be a manifest: ReadFile refuses each
    // without opening it for reading (a FIFO would block, /dev/zero never end). It is a broken
    // entry of the directory, named with the reason, as a file that does not parse is.
    absl::StatusOr<std::string> content = fs.ReadFile(path, kStaticPodManifestRead);
    if (!content.ok() && absl::IsFailedPrecondition(content.status())) {
      file.parse_error = std::string(content.status().message());
      snapshot.manifests.push_back(std::move(file));
      continue;
    }
    if (!content.ok()) return content.status();
    file.content = *std::move(content);
    absl::StatusOr<StaticPod> pod = StaticPod::Parse(file.content, path);
    if (pod.ok()) {
      file.pod = *std::move(pod);
    } else {
      file.parse_error = std::string(pod.status().message());
    }
    snapshot.manifests.push_back(std::move(file));
  }
  if (!paths.kubelet_flags_file.empty()) {
    absl::StatusOr<std::optional<std::string>> flags =
        ReadOptional(fs, paths.kubelet_flags_file, kKubeletFlagsRead);
    if (!flags.ok()) return flags.status();
    snapshot.kubelet_flags = *std::move(flags);
    absl::Status unit = ReadKubeletUnit(fs, snapshot);
    if (!unit.ok()) return unit;
  }
  absl::StatusOr<std::optional<std::string>> config =
      ReadOptional(fs, paths.leader_migration_config, kLeaderMigrationConfigRead);
  if (!config.ok()) return config.status();
  snapshot.leader_migration_config = *std::move(config);
  absl::StatusOr<std::optional<std::string>> record =
      ReadOptional(fs, MigrationRecordPath(paths), kMigrationRecordRead);
  if (!record.ok()) return record.status();
  snapshot.migration_record = *std::move(record);
  absl::StatusOr<std::optional<std::string>> parked =
      ReadOptional(fs, ParkedControllerManagerPath(paths), kStaticPodManifestRead);
  if (!parked.ok()) return parked.status();
  snapshot.parked_controller_manager = *std::move(parked);

  std::vector<std::string> referenced;
  if (snapshot.migration_record) {
    // Moving back restores the kube-controller-manager's own Leader Migration file.
    absl::StatusOr<MigrationRecord> parsed = MigrationRecord::Parse(*snapshot.migration_record, "");
    if (parsed.ok() && parsed->leader_migration_config()) {
      referenced.push_back(parsed->leader_migration_config()->path);
    }
  }
  for (const ManifestFile& file : snapshot.manifests) {
    if (!file.pod) continue;
    for (size_t c = 0; c < file.pod->ContainerNames().size(); ++c) {
      std::optional<std::string> flag = file.pod->GetFlag(c, "leader-migration-config");
      if (!flag) continue;
      if (std::optional<std::string> host = HostPathOf(*file.pod, c, *flag)) {
        referenced.push_back(*host);
      }
    }
  }
  for (const std::string& host : referenced) {
    if (snapshot.referenced_files.count(host)) continue;
    absl::StatusOr<std::optional<std::string>> content =
        ReadOptional(fs, host, kLeaderMigrationConfigRead);
    if (!content.ok()) return content.status();
    snapshot.referenced_files[host] = *std::move(content);
  }
  return snapshot;
}

}  // namespace

absl::StatusOr<NodeSnapshot> ReadNodeSnapshot(const FileSystem& fs, const NodePaths& paths) {
  return ReadSnapshot(fs, paths, NodeRole::kControlPlane);
}

absl::StatusOr<NodeSnapshot> ReadNodeSnapshot(const FileSystem& fs, const Settings& settings) {
  absl::StatusOr<NodeSnapshot> snapshot = ReadSnapshot(fs, settings.paths, settings.role);
  if (!snapshot.ok() || settings.role != NodeRole::kWorker) return snapshot;
  snapshot->worker = settings.worker;
  absl::StatusOr<FileInfo> binary =
      fs.Stat(JoinPath(settings.worker.credential_provider_bin_dir, kEcrCredentialProvider));
  if (binary.ok()) {
    snapshot->credential_provider_binary = *binary;
  } else if (!absl::IsNotFound(binary.status())) {
    return binary.status();
  }
  absl::StatusOr<std::optional<std::string>> config =
      ReadOptional(fs, settings.worker.credential_provider_config, kCredentialProviderConfigRead);
  if (!config.ok()) return config.status();
  snapshot->credential_provider_config = *std::move(config);
  absl::StatusOr<FileInfo> config_dir =
      fs.Stat(ParentPath(settings.worker.credential_provider_config));
  snapshot->credential_provider_config_dir_exists = config_dir.ok() && config_dir->is_directory;
  absl::StatusOr<std::optional<std::string>> hostname =
      ReadOptional(fs, "/etc/hostname", kUnitFileRead);
  if (!hostname.ok()) return hostname.status();
  if (*hostname) {
    std::string_view name = **hostname;
    name = name.substr(0, name.find('\n'));
    while (!name.empty() && (name.back() == ' ' || name.back() == '\r')) name.remove_suffix(1);
    while (!name.empty() && name.front() == ' ') name.remove_prefix(1);
    snapshot->host_name = std::string(name);
  }
  return snapshot;
}

}  // namespace handoff
