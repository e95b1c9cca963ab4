#include <fcntl.h>
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

absl::Status ErrnoStatus(const std::string& path, int err) {
  std::string message = StrCat(path, ": ", std::strerror(err));
  if (err == ENOENT || err == ENOTDIR) return absl::NotFoundError(message);
  if (err == EACCES || err == EPERM) return absl::PermissionDeniedError(message);
  return absl::InternalError(message);
}

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
