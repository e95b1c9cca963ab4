#include "rehearsal/standin/sandbox_environment.h"

#include "common/base/strings.h"

namespace handoff::standin {
namespace {

// "/a/b/" → "/a/b"; "/" stays.
std::string WithoutTrailingSlash(std::string_view path) {
  while (path.size() > 1 && path.back() == '/') path.remove_suffix(1);
  return std::string(path);
}

// Whether `path` is `dir` or lies under it, comparing whole path components.
bool Covers(std::string_view dir, std::string_view path) {
  if (dir == "/") return true;
  if (!StartsWith(path, dir)) return false;
  return path.size() == dir.size() || path[dir.size()] == '/';
}

}  // namespace

MountTable::MountTable(std::vector<Mount> mounts) : active_(true), mounts_(std::move(mounts)) {}

absl::StatusOr<MountTable> MountTable::Parse(std::string_view text) {
  std::vector<Mount> mounts;
  int line_number = 0;
  for (std::string_view raw : StrSplit(text, "\n")) {
    ++line_number;
    const std::string_view line = StripWhitespace(raw);
    if (line.empty()) continue;
    const size_t equals = line.find('=');
    const std::string_view mount_path =
        equals == std::string_view::npos ? line : line.substr(0, equals);
    const std::string_view host_path =
        equals == std::string_view::npos ? std::string_view() : line.substr(equals + 1);
    if (equals == std::string_view::npos || !StartsWith(mount_path, "/") ||
        !StartsWith(host_path, "/")) {
      return absl::InvalidArgumentError(
          StrCat(kMountsVariable, " line ", line_number, ": '", line,
                 "' is not mountPath=hostPath with two absolute paths"));
    }
    mounts.push_back({WithoutTrailingSlash(mount_path), WithoutTrailingSlash(host_path)});
  }
  return MountTable(std::move(mounts));
}

absl::StatusOr<std::string> MountTable::Resolve(std::string_view path) const {
  if (!active_) return std::string(path);
  const Mount* best = nullptr;
  for (const Mount& mount : mounts_) {
    if (!Covers(mount.mount_path, path)) continue;
    if (best == nullptr || mount.mount_path.size() > best->mount_path.size()) best = &mount;
  }
  if (best == nullptr) {
    return absl::NotFoundError(
        StrCat(path,
               " is not under any volume mount of the pod, so it does not exist in the "
               "container; mount its host directory or file"));
  }
  const std::string_view rest = path.substr(best->mount_path == "/" ? 0 : best->mount_path.size());
  if (rest.empty()) return best->host_path;
  return best->host_path == "/" ? std::string(rest) : StrCat(best->host_path, rest);
}

absl::StatusOr<SandboxEnvironment> ReadSandboxEnvironment(
    const std::function<std::optional<std::string>(const char* name)>& lookup,
    const std::string& hostname) {
  SandboxEnvironment env;
  env.node = lookup(kNodeVariable).value_or("");
  if (env.node.empty()) env.node = hostname;
  if (env.node.empty()) {
    return absl::InvalidArgumentError(
        StrCat("the machine has no hostname; set ", kNodeVariable, " to the node name"));
  }
  env.records_path = lookup(kRecordsVariable).value_or("");
  if (std::optional<std::string> mounts = lookup(kMountsVariable)) {
    absl::StatusOr<MountTable> table = MountTable::Parse(*mounts);
    if (!table.ok()) return table.status();
    env.mounts = *std::move(table);
  }
  if (std::optional<std::string> version = lookup(kVersionVariable); version && !version->empty()) {
    absl::StatusOr<KubeVersion> parsed = KubeVersion::Parse(*version);
    if (!parsed.ok()) {
      return absl::InvalidArgumentError(StrCat(kVersionVariable, ": ", parsed.status().message()));
    }
    env.version = *parsed;
  }
  return env;
}

}  // namespace handoff::standin
