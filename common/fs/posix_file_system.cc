#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>

#include "common/base/strings.h"
#include "common/fs/file_system.h"
#include "common/fs/host_path.h"
#include "common/fs/root_resolver.h"

namespace handoff {
namespace {

absl::Status StatusFromErrno(int err, std::string message) {
  if (err == ENOENT || err == ENOTDIR) return absl::NotFoundError(message);
  if (err == EACCES || err == EPERM) return absl::PermissionDeniedError(message);
  if (err == EEXIST) return absl::AlreadyExistsError(message);
  if (err == ENOTEMPTY) return absl::FailedPreconditionError(message);
  if (err == ENOSPC || err == EDQUOT) return absl::ResourceExhaustedError(message);
  // Too many symlinks, or a symlink where O_NOFOLLOW wanted none: the path is the problem.
  if (err == ELOOP) return absl::FailedPreconditionError(message);
  if (err == EINVAL) return absl::InvalidArgumentError(message);
  return absl::InternalError(message);
}

// "<path>: <error>", for the read side.
absl::Status ErrnoStatus(const std::string& path, int err) {
  return StatusFromErrno(err, StrCat(path, ": ", std::strerror(err)));
}

// "<call> <path>: <error>", for the write side, where knowing which step failed matters
// ("fsync /etc/kubernetes/manifests/.x.handoff-tmp: Input/output error").
absl::Status CallErrnoStatus(std::string_view call, const std::string& path, int err) {
  return StatusFromErrno(err, StrCat(call, " ", path, ": ", std::strerror(err)));
}

// Holds an flock(2) lock: it lives on the open file description, so closing the descriptor
// releases it (also when the process dies, so a crashed agent never leaves the node locked).
class PosixLock : public FileSystem::Lock {
 public:
  explicit PosixLock(int fd) : fd_(fd) {}
  PosixLock(const PosixLock&) = delete;
  PosixLock& operator=(const PosixLock&) = delete;
  ~PosixLock() override { ::close(fd_); }

 private:
  int fd_;
};

// What a file that is not a regular file is, for the error that refuses to read it.
FileType TypeOf(mode_t mode) {
  if (S_ISREG(mode)) return FileType::kRegular;
  if (S_ISDIR(mode)) return FileType::kDirectory;
  if (S_ISFIFO(mode)) return FileType::kFifo;
  if (S_ISCHR(mode)) return FileType::kCharacterDevice;
  if (S_ISBLK(mode)) return FileType::kBlockDevice;
  if (S_ISSOCK(mode)) return FileType::kSocket;
  return FileType::kOther;
}

std::string_view FileTypeName(mode_t mode) { return handoff::FileTypeName(TypeOf(mode)); }

absl::Status NotRegularFile(const std::string& path, mode_t mode, const ReadLimit& limit) {
  // The message for a directory stays the one callers have always seen.
  if (S_ISDIR(mode)) {
    return absl::FailedPreconditionError(StrCat(path, ": is a directory, not a file"));
  }
  return absl::FailedPreconditionError(StrCat(path, ": is ", FileTypeName(mode),
                                              ", not a regular file; handoff reads a ", limit.kind,
                                              " only from a regular file"));
}

class PosixFileSystem : public FileSystem {
 public:
  PosixFileSystem(std::string root, RootResolver::Method method)
      : resolver_(std::move(root), method) {}

  using FileSystem::ReadFile;

  absl::StatusOr<std::string> ReadFile(const std::string& path,
                                       const ReadLimit& limit) const override {
    // The type is checked on an O_PATH descriptor, which opens nothing: opening a device can
    // act (a watchdog arms itself, a tape rewinds) and opening a FIFO for reading waits for a
    // writer. Only then is the file opened for reading, with O_NONBLOCK so that a FIFO swapped
    // in between cannot block either, and checked again on that descriptor.
    {
      UniqueFd probe(resolver_.Open(path, O_PATH));
      if (probe.get() < 0) return ErrnoStatus(path, -probe.get());
      struct stat st {};
      if (::fstat(probe.get(), &st) != 0) return ErrnoStatus(path, errno);
      if (!S_ISREG(st.st_mode)) return NotRegularFile(path, st.st_mode, limit);
      if (absl::Status size = CheckReadSize(path, static_cast<uint64_t>(st.st_size), limit);
          !size.ok()) {
        return size;
      }
    }
    // open/read rather than std::ifstream: a stream opens a directory and reads it as an empty
    // file, and takes a read error for the end of the file, so a manifest could come back
    // empty or cut short.
    UniqueFd fd(resolver_.Open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY));
    if (fd.get() < 0) return ErrnoStatus(path, -fd.get());
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0) return ErrnoStatus(path, errno);
    if (!S_ISREG(st.st_mode)) return NotRegularFile(path, st.st_mode, limit);
    if (absl::Status size = CheckReadSize(path, static_cast<uint64_t>(st.st_size), limit);
        !size.ok()) {
      return size;
    }
    std::string content;
    content.reserve(static_cast<size_t>(st.st_size));
    char buffer[64 * 1024];
    // Bounded by the limit, not by st_size: a file that grows while it is read, or one whose
    // size the kernel does not know (/proc), stops one byte past the limit.
    while (content.size() <= limit.max_bytes) {
      const size_t want = static_cast<size_t>(
          std::min<uint64_t>(sizeof(buffer), limit.max_bytes + 1 - content.size()));
      const ssize_t n = ::read(fd.get(), buffer, want);
      if (n == 0) break;
      if (n < 0) {
        if (errno == EINTR) continue;
        return ErrnoStatus(path, errno);
      }
      content.append(buffer, static_cast<size_t>(n));
    }
    if (content.size() > limit.max_bytes) {
      return absl::FailedPreconditionError(StrCat(path, ": more than the ",
                                                  FormatByteSize(limit.max_bytes), " limit for a ",
                                                  limit.kind, " (it grew while being read)"));
    }
    return content;
  }

  absl::StatusOr<FileInfo> Stat(const std::string& path) const override {
    UniqueFd fd(resolver_.Open(path, O_PATH));
    if (fd.get() < 0) return ErrnoStatus(path, -fd.get());
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0) return ErrnoStatus(path, errno);
    FileInfo info;
    info.is_directory = S_ISDIR(st.st_mode);
    info.type = TypeOf(st.st_mode);
    info.mode = st.st_mode & 07777;
    info.uid = st.st_uid;
    info.gid = st.st_gid;
    return info;
  }

  absl::StatusOr<std::vector<std::string>> ListDirectory(const std::string& path) const override {
    UniqueFd fd(resolver_.Open(path, O_RDONLY | O_DIRECTORY));
    if (fd.get() < 0) return ErrnoStatus(path, -fd.get());
    // fdopendir takes the descriptor; closedir closes it.
    std::unique_ptr<DIR, int (*)(DIR*)> dir(::fdopendir(fd.get()), &::closedir);
    if (dir == nullptr) return ErrnoStatus(path, errno);
    fd.Release();
    std::vector<std::string> names;
    while (true) {
      errno = 0;
      const dirent* entry = ::readdir(dir.get());
      if (entry == nullptr) {
        if (errno != 0) return ErrnoStatus(path, errno);
        break;
      }
      const std::string_view name = entry->d_name;
      if (name == "." || name == "..") continue;
      names.emplace_back(name);
    }
    std::sort(names.begin(), names.end());
    return names;
  }

  absl::Status WriteFile(const std::string& path, std::string_view data,
                         const FileInfo& attributes) override {
    const mode_t mode = static_cast<mode_t>(attributes.mode & 07777);
    // O_NONBLOCK: a FIFO put where the file goes fails to open (ENXIO) instead of waiting for a
    // reader; it changes nothing for a regular file.
    UniqueFd fd(resolver_.Open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NONBLOCK | O_NOCTTY, mode));
    if (fd.get() < 0) return CallErrnoStatus("open", path, -fd.get());
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0) return CallErrnoStatus("fstat", path, errno);
    if (!S_ISREG(st.st_mode)) {
      return absl::FailedPreconditionError(
          StrCat("open ", path, ": is ", FileTypeName(st.st_mode), ", not a regular file"));
    }
    size_t written = 0;
    while (written < data.size()) {
      const ssize_t n = ::write(fd.get(), data.data() + written, data.size() - written);
      if (n < 0) {
        if (errno == EINTR) continue;
        return CallErrnoStatus("write", path, errno);
      }
      written += static_cast<size_t>(n);
    }
    // The owner before the mode: chown(2) clears the set-user-ID and set-group-ID bits (for
    // root too, since Linux 2.2.13), so the other order would lose them.
    if (::geteuid() == 0 && ::fchown(fd.get(), static_cast<uid_t>(attributes.uid),
                                     static_cast<gid_t>(attributes.gid)) != 0) {
      return CallErrnoStatus("fchown", path, errno);
    }
    // open(2) applies the umask to a new file and keeps the mode of an existing one; the mode
    // asked for is the mode the file gets.
    if (::fchmod(fd.get(), mode) != 0) return CallErrnoStatus("fchmod", path, errno);
    // close(2) can report a deferred write error (NFS, quota); it must not be dropped. The
    // descriptor is gone whatever close returns, so it is never retried.
    if (::close(fd.Release()) != 0) return CallErrnoStatus("close", path, errno);
    return absl::OkStatus();
  }

  absl::Status SyncFile(const std::string& path) override {
    // fsync through a new read-only descriptor flushes the inode's dirty pages whoever wrote
    // them. A writeback error that happened before this open is still reported to it (since
    // Linux 4.17, "errseq: Always report a writeback error once"), unless the inode was evicted
    // in between; AtomicReplace calls this right after WriteFile, so that window is tiny.
    UniqueFd fd(resolver_.Open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY));
    if (fd.get() < 0) return CallErrnoStatus("open", path, -fd.get());
    if (::fsync(fd.get()) != 0) return CallErrnoStatus("fsync", path, errno);
    return absl::OkStatus();
  }

  absl::Status Rename(const std::string& from, const std::string& to) override {
    std::string from_name, to_name;
    UniqueFd from_dir, to_dir;
    if (const int err = resolver_.OpenParent(from, &from_dir, &from_name); err != 0) {
      return CallErrnoStatus("rename", StrCat(from, " to ", to), err);
    }
    if (const int err = resolver_.OpenParent(to, &to_dir, &to_name); err != 0) {
      return CallErrnoStatus("rename", StrCat(from, " to ", to), err);
    }
    if (::renameat(from_dir.get(), from_name.c_str(), to_dir.get(), to_name.c_str()) != 0) {
      return CallErrnoStatus("rename", StrCat(from, " to ", to), errno);
    }
    return absl::OkStatus();
  }

  absl::Status RemoveFile(const std::string& path) override {
    std::string name;
    UniqueFd dir;
    if (const int err = resolver_.OpenParent(path, &dir, &name); err != 0) {
      return CallErrnoStatus("unlink", path, err);
    }
    if (::unlinkat(dir.get(), name.c_str(), 0) != 0) return CallErrnoStatus("unlink", path, errno);
    return absl::OkStatus();
  }

  absl::Status SyncDirectory(const std::string& path) override {
    // A new name (creation, rename) or a removal lives in the directory's own data, which the
    // fsync of the file does not write; only an fsync of the directory makes it durable.
    UniqueFd fd(resolver_.Open(path, O_RDONLY | O_DIRECTORY));
    if (fd.get() < 0) return CallErrnoStatus("open", path, -fd.get());
    if (::fsync(fd.get()) != 0) return CallErrnoStatus("fsync", path, errno);
    return absl::OkStatus();
  }

  absl::Status CreateDirectory(const std::string& path, unsigned mode) override {
    const mode_t bits = static_cast<mode_t>(mode & 07777);
    std::string name;
    UniqueFd dir;
    if (const int err = resolver_.OpenParent(path, &dir, &name); err != 0) {
      return CallErrnoStatus("mkdir", path, err);
    }
    if (::mkdirat(dir.get(), name.c_str(), bits) != 0) {
      return CallErrnoStatus("mkdir", path, errno);
    }
    // mkdir(2) applies the umask; the directory gets the mode asked for. Through a descriptor
    // opened without following, so that a symlink put in its place is not chmodded through.
    UniqueFd made(
        ::openat(dir.get(), name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (made.get() < 0) return CallErrnoStatus("open", path, errno);
    if (::fchmod(made.get(), bits) != 0) return CallErrnoStatus("chmod", path, errno);
    return absl::OkStatus();
  }

  absl::Status RemoveDirectory(const std::string& path) override {
    std::string name;
    UniqueFd dir;
    if (const int err = resolver_.OpenParent(path, &dir, &name); err != 0) {
      return CallErrnoStatus("rmdir", path, err);
    }
    if (::unlinkat(dir.get(), name.c_str(), AT_REMOVEDIR) != 0) {
      return CallErrnoStatus("rmdir", path, errno);
    }
    return absl::OkStatus();
  }

  absl::StatusOr<std::unique_ptr<Lock>> TryLock(const std::string& path) override {
    UniqueFd fd(resolver_.Open(path, O_RDWR | O_CREAT | O_NONBLOCK | O_NOCTTY, 0600));
    if (fd.get() < 0) return CallErrnoStatus("open", path, -fd.get());
    int result;
    do {
      result = ::flock(fd.get(), LOCK_EX | LOCK_NB);
    } while (result != 0 && errno == EINTR);
    if (result != 0) {
      const int err = errno;
      if (err == EWOULDBLOCK) {
        return absl::UnavailableError(
            StrCat(path, " is locked by another process (flock: ", std::strerror(err), ")"));
      }
      return CallErrnoStatus("flock", path, err);
    }
    return std::make_unique<PosixLock>(fd.Release());
  }

  absl::StatusOr<std::string> RealPath(const std::string& path) const override {
    return resolver_.RealPath(path);
  }

 private:
  RootResolver resolver_;
};

}  // namespace

std::string_view FileTypeName(FileType type) {
  switch (type) {
    case FileType::kRegular:
      return "a regular file";
    case FileType::kDirectory:
      return "a directory";
    case FileType::kFifo:
      return "a FIFO (named pipe)";
    case FileType::kSocket:
      return "a socket";
    case FileType::kCharacterDevice:
      return "a character device";
    case FileType::kBlockDevice:
      return "a block device";
    case FileType::kOther:
      break;
  }
  return "not a regular file";
}

bool FileSystem::Exists(const std::string& path) const {
  absl::StatusOr<FileInfo> info = Stat(path);
  return info.ok() || !absl::IsNotFound(info.status());
}

absl::StatusOr<std::string> FileSystem::RealPath(const std::string& path) const {
  if (path.empty() || path.front() != '/') {
    return absl::InvalidArgumentError(StrCat(path, ": not an absolute path"));
  }
  return LexicallyNormal(path);
}

std::unique_ptr<FileSystem> NewPosixFileSystem(std::string root) {
  return std::make_unique<PosixFileSystem>(std::move(root), RootResolver::Method::kAuto);
}

std::unique_ptr<FileSystem> NewPosixFileSystemWithResolution(std::string root,
                                                            RootResolution resolution) {
  return std::make_unique<PosixFileSystem>(std::move(root), resolution == RootResolution::kWalk
                                                                ? RootResolver::Method::kWalk
                                                                : RootResolver::Method::kAuto);
}

}  // namespace handoff
