#include "agent/cli/host_scope.h"

#include <filesystem>
#include <system_error>

#include "common/base/strings.h"

namespace handoff {

absl::StatusOr<HostScope> ScopeToRoot(const FileSystem& host, const FileSystem& node,
                                      const std::string& root, const std::string& proc_root,
                                      const std::string& kubelet_restart) {
  std::string absolute = root;
  if (absolute.empty() || absolute.front() != '/') {
    std::error_code error;
    absolute = std::filesystem::absolute(root.empty() ? "." : root, error).string();
    if (error) {
      return absl::InvalidArgumentError(StrCat("--root ", root, ": ", error.message()));
    }
  }
  // However it is written ("//", "/tmp/..", a symlink to "/"), a root that is the host's own
  // "/" is the node itself.
  absl::StatusOr<std::string> real = host.RealPath(absolute);
  if (!real.ok()) {
    return absl::InvalidArgumentError(StrCat("--root ", root, ": ", real.status().message()));
  }
  HostScope scope;
  scope.on_node = *real == "/";
  if (!proc_root.empty()) {
    scope.proc_root = proc_root;
  } else if (scope.on_node) {
    scope.proc_root = "/proc";
  } else {
    // A /proc in the copy that is a symlink leads where it would in a chroot: inside the root.
    absl::StatusOr<std::string> inside = node.RealPath("/proc");
    if (!inside.ok()) {
      return absl::InvalidArgumentError(
          StrCat("--root ", root, ": cannot resolve /proc: ", inside.status().message()));
    }
    scope.proc_root = StrCat(*real, *inside);
  }
  if (!kubelet_restart.empty()) {
    scope.kubelet_restart = ToStrings(StrSplit(kubelet_restart, " ", true));
  } else if (scope.on_node) {
    scope.kubelet_restart = {"systemctl", "restart", "kubelet"};
  }
  return scope;
}

}  // namespace handoff
