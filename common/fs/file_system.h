// The node's file system as the agent sees it. Every file access of the agent goes through this
// interface so that tests can substitute an in-memory one and inject failures, and so that a
// dry run is the same code with a file system that does not write.
#ifndef HANDOFF_COMMON_FS_FILE_SYSTEM_H_
#define HANDOFF_COMMON_FS_FILE_SYSTEM_H_

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/fs/read_limit.h"

namespace handoff {

// What Stat found at a path (symlinks followed).
enum class FileType {
  kRegular,
  kDirectory,
  kFifo,
  kSocket,
  kCharacterDevice,
  kBlockDevice,
  kOther
};

// "a regular file", "a directory", "a FIFO (named pipe)", "a character device", ...: for messages.
std::string_view FileTypeName(FileType type);

struct FileInfo {
  bool is_directory = false;
  unsigned mode = 0644;  // permission bits
  unsigned uid = 0;
  unsigned gid = 0;
  // Set by Stat (kDirectory exactly when is_directory); ignored by WriteFile, which only makes
  // regular files.
  FileType type = FileType::kRegular;
};

// Paths are absolute host paths ("/etc/kubernetes/manifests/kube-apiserver.yaml"); an
// implementation may place them under a root directory, and then resolves every path inside it
// as chroot(2) would: "..", absolute symlinks and relative ones all stay inside the root, so
// nothing is ever read or written outside it. Implementations are thread-compatible.
class FileSystem {
 public:
  virtual ~FileSystem() = default;

  // The whole file, which must be a regular file of at most `limit.max_bytes`. NotFound when it
  // does not exist; FailedPrecondition, naming the path, for a directory, a FIFO, a device or a
  // socket (never opened for reading, so a FIFO cannot block and a device has no side effect),
  // and for a file over the limit (naming its size, the limit and `limit.kind`).
  virtual absl::StatusOr<std::string> ReadFile(const std::string& path,
                                               const ReadLimit& limit) const = 0;
  // The same with kAnyFileRead, for callers with no kind of file in mind. Implementations add
  // `using FileSystem::ReadFile;` so that it stays visible on them.
  absl::StatusOr<std::string> ReadFile(const std::string& path) const {
    return ReadFile(path, kAnyFileRead);
  }
  // NotFound when nothing exists at `path`.
  virtual absl::StatusOr<FileInfo> Stat(const std::string& path) const = 0;
  // Names (not paths) of the entries of a directory, sorted. NotFound when it does not exist.
  virtual absl::StatusOr<std::vector<std::string>> ListDirectory(const std::string& path) const = 0;

  // True when something exists at `path`; other errors (permission) count as existing, so that a
  // caller never concludes "absent" from a failure to look.
  bool Exists(const std::string& path) const;

  // The absolute host path `path` names once every symlink in it is resolved (inside the root,
  // as for every other call), as realpath -m would: components from the first one that does not
  // exist on are taken lexically. For comparing paths (is the state dir inside the manifest
  // dir?), never for opening one. InvalidArgument for a relative path. The default, for file
  // systems without symlinks, is the lexically normal form.
  virtual absl::StatusOr<std::string> RealPath(const std::string& path) const;

  // The write side. Each call is one step that a crash can interrupt: nothing written is durable
  // before SyncFile (its data) and SyncDirectory (its name in the directory). Use the functions
  // in atomic_file.h rather than these directly.

  // Creates or truncates `path` and writes `data`, with `attributes`' mode and owner (the owner
  // only when running as root). The parent directory must exist.
  virtual absl::Status WriteFile(const std::string& path, std::string_view data,
                                 const FileInfo& attributes) = 0;
  // fsync(2) of the file's data.
  virtual absl::Status SyncFile(const std::string& path) = 0;
  // rename(2): atomically replaces `to`. Both paths in the same directory.
  virtual absl::Status Rename(const std::string& from, const std::string& to) = 0;
  // unlink(2). NotFound when absent.
  virtual absl::Status RemoveFile(const std::string& path) = 0;
  // fsync(2) of a directory: makes creations, renames and removals in it durable.
  virtual absl::Status SyncDirectory(const std::string& path) = 0;
  // mkdir(2) of one directory with `mode` (0700 for handoff's state). AlreadyExists when present.
  virtual absl::Status CreateDirectory(const std::string& path, unsigned mode) = 0;
  // rmdir(2) of one empty directory. NotFound when no directory is there; FailedPrecondition
  // when it is not empty.
  virtual absl::Status RemoveDirectory(const std::string& path) = 0;

  // An exclusive advisory lock on `path` (created if missing), held until the returned object is
  // destroyed. Unavailable, naming the path, when another holder has it; never blocks. A Lock
  // may refer back to the FileSystem that made it: the file system must outlive its locks.
  class Lock {
   public:
    virtual ~Lock() = default;
  };
  virtual absl::StatusOr<std::unique_ptr<Lock>> TryLock(const std::string& path) = 0;
};

// The real file system, with every host path resolved inside `root` ("/" on a node; a copy of
// a node, a temp dir in tests and the sandbox). With "/" (or "", which also takes relative paths
// from the working directory) paths are used as they are, as before any confinement.
std::unique_ptr<FileSystem> NewPosixFileSystem(std::string root);

// How a PosixFileSystem confines paths to a root other than "/".
enum class RootResolution {
  // openat2(2) with RESOLVE_IN_ROOT (Linux 5.6) where the kernel has it, else kWalk.
  kAuto,
  // One component at a time from the root: open(O_PATH|O_NOFOLLOW), readlink, ".." clamped at
  // the root, at most 40 symlinks (ELOOP beyond). For older kernels; tests select it directly.
  kWalk,
};
std::unique_ptr<FileSystem> NewPosixFileSystemWithResolution(std::string root,
                                                            RootResolution resolution);

}  // namespace handoff

#endif  // HANDOFF_COMMON_FS_FILE_SYSTEM_H_
