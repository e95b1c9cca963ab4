// The node's file system as the agent sees it. Every file access of the agent goes through this
// interface so that tests can substitute an in-memory one and inject failures, and so that a
// dry run is the same code with a file system that does not write.
#ifndef HANDOFF_AGENT_FS_FILE_SYSTEM_H_
#define HANDOFF_AGENT_FS_FILE_SYSTEM_H_

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace handoff {

struct FileInfo {
  bool is_directory = false;
  unsigned mode = 0644;  // permission bits
  unsigned uid = 0;
  unsigned gid = 0;
};

// Paths are absolute host paths ("/etc/kubernetes/manifests/kube-apiserver.yaml"); an
// implementation may place them under a root directory. Implementations are thread-compatible.
class FileSystem {
 public:
  virtual ~FileSystem() = default;

  // The whole file. NotFound when it does not exist.
  virtual absl::StatusOr<std::string> ReadFile(const std::string& path) const = 0;
  // NotFound when nothing exists at `path`.
  virtual absl::StatusOr<FileInfo> Stat(const std::string& path) const = 0;
  // Names (not paths) of the entries of a directory, sorted. NotFound when it does not exist.
  virtual absl::StatusOr<std::vector<std::string>> ListDirectory(const std::string& path) const = 0;

  // True when something exists at `path`; other errors (permission) count as existing, so that a
  // caller never concludes "absent" from a failure to look.
  bool Exists(const std::string& path) const;
};

// The real file system, with every host path taken under `root` ("/" on a node; a temp dir in
// tests and the sandbox).
std::unique_ptr<FileSystem> NewPosixFileSystem(std::string root);

}  // namespace handoff

#endif  // HANDOFF_AGENT_FS_FILE_SYSTEM_H_
