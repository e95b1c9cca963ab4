#include "rehearsal/node/node_spec.h"

#include <map>

#include "common/base/strings.h"

namespace handoff::sandbox::node {
namespace {

// "/var/lib" → "var-lib": a directory name for an overlaid path's upper and work dirs.
std::string Key(std::string_view path) {
  std::string key(StripPrefix(path, "/"));
  for (char& c : key) {
    if (c == '/') c = '-';
  }
  return key;
}

// Letters, digits, '-' and '.', 1 to 64 characters: what sethostname(2) and a Node name take.
bool IsHostname(std::string_view name) {
  if (name.empty() || name.size() > 64 || name.front() == '-' || name.front() == '.') return false;
  for (char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.';
    if (!ok) return false;
  }
  return true;
}

}  // namespace

std::vector<NodeMount> NodeMounts(const BootSpec& spec) {
  std::vector<NodeMount> mounts;
  for (std::string_view path : kOverlaidPaths) {
    NodeMount overlay;
    overlay.kind = NodeMount::Kind::kOverlay;
    overlay.target = std::string(path);
    overlay.lower = std::string(path);
    // /etc's upper is the node's own etc/, so that its /etc/kubernetes and
    // /etc/leadermigration.conf are where an observer on the host looks for them.
    overlay.upper =
        path == "/etc" ? StrCat(spec.dir, "/etc") : StrCat(spec.dir, "/.node/upper/", Key(path));
    overlay.work = StrCat(spec.dir, "/.node/work/", Key(path));
    mounts.push_back(std::move(overlay));
  }
  NodeMount run;
  run.kind = NodeMount::Kind::kTmpfs;
  run.target = "/run";
  mounts.push_back(std::move(run));
  for (std::string_view path : kBoundPaths) {
    NodeMount bind;
    bind.kind = NodeMount::Kind::kBind;
    bind.target = std::string(path);
    bind.source = StrCat(spec.dir, path);
    mounts.push_back(std::move(bind));
  }
  return mounts;
}

std::vector<std::string> NodeDirectories(const BootSpec& spec) {
  std::vector<std::string> dirs;
  for (const NodeMount& mount : NodeMounts(spec)) {
    switch (mount.kind) {
      case NodeMount::Kind::kOverlay:
        dirs.push_back(mount.upper);
        dirs.push_back(mount.work);
        break;
      case NodeMount::Kind::kBind:
        dirs.push_back(mount.source);
        break;
      case NodeMount::Kind::kTmpfs:
        break;
    }
  }
  return dirs;
}

std::vector<std::string> BootArgs(const BootSpec& spec) {
  if (!spec.services) {
    return {"--name", spec.name, "--dir", spec.dir, "--log-dir", spec.log_dir, "--no-services"};
  }
  return {"--name",
          spec.name,
          "--dir",
          spec.dir,
          "--log-dir",
          spec.log_dir,
          "--containerd",
          spec.containerd,
          "--kubelet",
          spec.kubelet,
          "--path",
          spec.path,
          "--kubelet-restart-delay",
          absl::FormatDuration(spec.kubelet_restart_delay)};
}

absl::StatusOr<BootSpec> ParseBootArgs(const std::vector<std::string>& args) {
  BootSpec spec;
  std::map<std::string, std::string*> paths = {{"--dir", &spec.dir},
                                               {"--log-dir", &spec.log_dir},
                                               {"--containerd", &spec.containerd},
                                               {"--kubelet", &spec.kubelet}};
  bool have_path = false;
  for (size_t i = 0; i < args.size(); i += 2) {
    const std::string& flag = args[i];
    if (flag == "--no-services") {
      spec.services = false;
      --i;
      continue;
    }
    if (i + 1 >= args.size()) return absl::InvalidArgumentError(StrCat(flag, " needs a value"));
    const std::string& value = args[i + 1];
    if (flag == "--name") {
      if (!IsHostname(value)) {
        return absl::InvalidArgumentError(StrCat(
            "--name \"", value, "\" is not a hostname (lower-case letters, digits, '-', '.')"));
      }
      spec.name = value;
    } else if (flag == "--path") {
      spec.path = value;
      have_path = true;
    } else if (flag == "--kubelet-restart-delay") {
      if (!absl::ParseDuration(value, &spec.kubelet_restart_delay) ||
          spec.kubelet_restart_delay < absl::ZeroDuration()) {
        return absl::InvalidArgumentError(
            StrCat("--kubelet-restart-delay \"", value, "\" is not a duration such as 10s"));
      }
    } else if (auto found = paths.find(flag); found != paths.end()) {
      if (!StartsWith(value, "/")) {
        return absl::InvalidArgumentError(StrCat(flag, " \"", value, "\" is not absolute"));
      }
      *found->second = value;
    } else {
      return absl::InvalidArgumentError(StrCat("unknown argument ", flag));
    }
  }
  if (spec.name.empty()) return absl::InvalidArgumentError("--name is required");
  for (const auto& [flag, value] : paths) {
    const bool needed = spec.services || (flag != "--containerd" && flag != "--kubelet");
    if (needed && value->empty()) return absl::InvalidArgumentError(StrCat(flag, " is required"));
  }
  if (have_path && spec.path.empty()) return absl::InvalidArgumentError("--path is empty");
  return spec;
}

}  // namespace handoff::sandbox::node
