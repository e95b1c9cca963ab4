#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "agent/base/strings.h"
#include "agent/fs/file_system.h"
#include "boost/filesystem.hpp"

namespace handoff {
namespace {

absl::Status StatusFromErrno(int err, std::string message) {
  if (err == ENOENT || err == ENOTDIR) return absl::NotFoundError(message);
  if (err == EACCES || err == EPERM) return absl::PermissionDeniedError(message);
  if (err == EEXIST) return absl::AlreadyExistsError(message);
  if (err == ENOTEMPTY) return absl::FailedPreconditionError(message);
  if (err == ENOSPC || err == EDQUOT) return absl::ResourceExhaustedError(message);
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

// Closes `fd` on the way out of an error path; a close error there is secondary to the error
// being returned.
class FdCloser {
 public:
  explicit FdCloser(int fd) : fd_(fd) {}
  FdCloser(const FdCloser&) = delete;
  FdCloser& operator=(const FdCloser&) = delete;
  ~FdCloser() {
    if (fd_ >= 0) ::close(fd_);
  }
  // Gives up ownership so that the caller can close and check the result itself.
  int Release() {
    const int fd = fd_;
    fd_ = -1;
    return fd;
  }

 private:
  int fd_;
};

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

class PosixFileSystem : public FileSystem {
 public:
  explicit PosixFileSystem(std::string root) : root_(std::move(root)) {}

  absl::StatusOr<std::string> ReadFile(const std::string& path) const override {
    // open/read rather than std::ifstream: a stream opens a directory and reads it as an empty
    // file, and takes a read error for the end of the file, so a manifest could come back
    // empty or cut short.
    const int fd = ::open(Resolve(path).c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return ErrnoStatus(path, errno);
    struct stat st {};
    if (::fstat(fd, &st) != 0) {
      const int err = errno;
      ::close(fd);
      return ErrnoStatus(path, err);
    }
    if (S_ISDIR(st.st_mode)) {
      ::close(fd);
      return absl::FailedPreconditionError(StrCat(path, ": is a directory, not a file"));
    }
    std::string content;
    char buffer[64 * 1024];
    while (true) {
      const ssize_t n = ::read(fd, buffer, sizeof(buffer));
      if (n == 0) break;
      if (n < 0) {
        if (errno == EINTR) continue;
        const int err = errno;
        ::close(fd);
        return ErrnoStatus(path, err);
      }
      content.append(buffer, static_cast<size_t>(n));
    }
    ::close(fd);
    return content;
  }

  absl::StatusOr<FileInfo> Stat(const std::string& path) const override {
    struct stat st {};
    if (::stat(Resolve(path).c_str(), &st) != 0) return ErrnoStatus(path, errno);
    FileInfo info;
    info.is_directory = S_ISDIR(st.st_mode);
    info.mode = st.st_mode & 07777;
    info.uid = st.st_uid;
    info.gid = st.st_gid;
    return info;
  }

  absl::StatusOr<std::vector<std::string>> ListDirectory(const std::string& path) const override {
    boost::system::error_code ec;
    boost::filesystem::directory_iterator it(Resolve(path), ec);
    if (ec) return ErrnoStatus(path, ec.value());
    std::vector<std::string> names;
    // A failed increment leaves the iterator at the end, so check `ec` after the loop as well.
    for (; it != boost::filesystem::directory_iterator(); it.increment(ec)) {
      if (ec) break;
      names.push_back(it->path().filename().string());
    }
    if (ec) return ErrnoStatus(path, ec.value());
    std::sort(names.begin(), names.end());
    return names;
  }

  absl::Status WriteFile(const std::string& path, std::string_view data,
                         const FileInfo& attributes) override {
    const mode_t mode = static_cast<mode_t>(attributes.mode & 07777);
    const int fd = ::open(Resolve(path).c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
    if (fd < 0) return CallErrnoStatus("open", path, errno);
    FdCloser closer(fd);
    size_t written = 0;
    while (written < data.size()) {
      const ssize_t n = ::write(fd, data.data() + written, data.size() - written);
      if (n < 0) {
        if (errno == EINTR) continue;
        return CallErrnoStatus("write", path, errno);
      }
      written += static_cast<size_t>(n);
    }
    // The owner before the mode: chown(2) clears the set-user-ID and set-group-ID bits (for
    // root too, since Linux 2.2.13), so the other order would lose them.
    if (::geteuid() == 0 &&
        ::fchown(fd, static_cast<uid_t>(attributes.uid), static_cast<gid_t>(attributes.gid)) != 0) {
      return CallErrnoStatus("fchown", path, errno);
    }
    // open(2) applies the umask to a new file and keeps the mode of an existing one; the mode
    // asked for is the mode the file gets.
    if (::fchmod(fd, mode) != 0) return CallErrnoStatus("fchmod", path, errno);
    // close(2) can report a deferred write error (NFS, quota); it must not be dropped. The
    // descriptor is gone whatever close returns, so it is never retried.
    if (::close(closer.Release()) != 0) return CallErrnoStatus("close", path, errno);
    return absl::OkStatus();
  }

  absl::Status SyncFile(const std::string& path) override {
    // fsync through a new read-only descriptor flushes the inode's dirty pages whoever wrote
    // them. A writeback error that happened before this open is still reported to it (since
    // Linux 4.17, "errseq: Always report a writeback error once"), unless the inode was evicted
    // in between; AtomicReplace calls this right after WriteFile, so that window is tiny.
    const int fd = ::open(Resolve(path).c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return CallErrnoStatus("open", path, errno);
    FdCloser closer(fd);
    if (::fsync(fd) != 0) return CallErrnoStatus("fsync", path, errno);
    return absl::OkStatus();
  }

  absl::Status Rename(const std::string& from, const std::string& to) override {
    if (::rename(Resolve(from).c_str(), Resolve(to).c_str()) != 0) {
      return CallErrnoStatus("rename", StrCat(from, " to ", to), errno);
    }
    return absl::OkStatus();
  }

  absl::Status RemoveFile(const std::string& path) override {
    if (::unlink(Resolve(path).c_str()) != 0) return CallErrnoStatus("unlink", path, errno);
    return absl::OkStatus();
  }

  absl::Status SyncDirectory(const std::string& path) override {
    // A new name (creation, rename) or a removal lives in the directory's own data, which the
    // fsync of the file does not write; only an fsync of the directory makes it durable.
    const int fd = ::open(Resolve(path).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return CallErrnoStatus("open", path, errno);
    FdCloser closer(fd);
    if (::fsync(fd) != 0) return CallErrnoStatus("fsync", path, errno);
    return absl::OkStatus();
  }

  absl::Status CreateDirectory(const std::string& path, unsigned mode) override {
    const std::string real = Resolve(path);
    if (::mkdir(real.c_str(), static_cast<mode_t>(mode & 07777)) != 0) {
      return CallErrnoStatus("mkdir", path, errno);
    }
    // mkdir(2) applies the umask; the directory gets the mode asked for.
    if (::chmod(real.c_str(), static_cast<mode_t>(mode & 07777)) != 0) {
      return CallErrnoStatus("chmod", path, errno);
    }
    return absl::OkStatus();
  }

  absl::Status RemoveDirectory(const std::string& path) override {
    if (::rmdir(Resolve(path).c_str()) != 0) return CallErrnoStatus("rmdir", path, errno);
    return absl::OkStatus();
  }

  absl::StatusOr<std::unique_ptr<Lock>> TryLock(const std::string& path) override {
    const int fd = ::open(Resolve(path).c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0) return CallErrnoStatus("open", path, errno);
    FdCloser closer(fd);
    int result;
    do {
      result = ::flock(fd, LOCK_EX | LOCK_NB);
    } while (result != 0 && errno == EINTR);
    if (result != 0) {
      const int err = errno;
      if (err == EWOULDBLOCK) {
        return absl::UnavailableError(
            StrCat(path, " is locked by another handoff-agent (flock: ", std::strerror(err), ")"));
      }
      return CallErrnoStatus("flock", path, err);
    }
    return std::make_unique<PosixLock>(closer.Release());
  }

 private:
  std::string Resolve(const std::string& path) const {
    if (root_.empty() || root_ == "/") return path;
    // On the host "/.." is "/", so a leading ".." must not climb out of the root either.
    boost::filesystem::path inside;
    for (const boost::filesystem::path& part :
         boost::filesystem::path(path).lexically_normal().relative_path()) {
      if (inside.empty() && part == "..") continue;
      inside /= part;
    }
    return (boost::filesystem::path(root_) / inside).string();
  }

  std::string root_;
};

}  // namespace

bool FileSystem::Exists(const std::string& path) const {
  absl::StatusOr<FileInfo> info = Stat(path);
  return info.ok() || !absl::IsNotFound(info.status());
}

std::unique_ptr<FileSystem> NewPosixFileSystem(std::string root) {
  return std::make_unique<PosixFileSystem>(std::move(root));
}

}  // namespace handoff
