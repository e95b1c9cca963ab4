#include "common/fs/root_resolver.h"

#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include <cerrno>
#include <climits>
#include <cstring>
#include <deque>
#include <vector>

#include "common/base/strings.h"
#include "common/fs/host_path.h"

namespace handoff {
namespace {

// As the kernel's MAXSYMLINKS: the 41st symlink in one resolution is ELOOP.
constexpr int kMaxSymlinks = 40;
// openat2 with RESOLVE_IN_ROOT answers EAGAIN when a rename or mount anywhere raced with the
// lookup (it cannot then prove ".." stayed inside the root); after this many the walk takes over.
constexpr int kOpenat2Attempts = 16;

int Openat2(int dirfd, const char* path, int flags, mode_t mode) {
#ifdef SYS_openat2
  open_how how{};
  how.flags = static_cast<uint64_t>(flags);
  // openat2 refuses a mode without O_CREAT or O_TMPFILE (EINVAL), unlike openat.
  how.mode = (flags & (O_CREAT | O_TMPFILE)) != 0 ? mode : 0;
  // RESOLVE_IN_ROOT already keeps magic links (/proc/self/fd/N) from being followed today; saying
  // so keeps it that way.
  how.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS;
  return static_cast<int>(::syscall(SYS_openat2, dirfd, path, &how, sizeof(how)));
#else
  (void)dirfd, (void)path, (void)flags, (void)mode;
  errno = ENOSYS;
  return -1;
#endif
}

// The state of one walk: the directories passed, as descriptors and names, from the root down.
struct Walk {
  std::vector<UniqueFd> dirs;      // dirs[0] is the root
  std::vector<std::string> names;  // names[i] is the name of dirs[i + 1]
  std::deque<std::string> pending;  // components not resolved yet
  std::string last;                 // set on success: the final component in dirs.back()
};

// The target of the symlink open (O_PATH|O_NOFOLLOW) as `fd`, or an errno.
int ReadLink(int fd, std::string* target) {
  char buffer[PATH_MAX + 1];
  // An empty path with an O_PATH descriptor reads the link itself (Linux 2.6.39).
  const ssize_t n = ::readlinkat(fd, "", buffer, sizeof(buffer));
  if (n < 0) return errno;
  if (static_cast<size_t>(n) >= sizeof(buffer)) return ENAMETOOLONG;
  target->assign(buffer, static_cast<size_t>(n));
  return 0;
}

// Resolves walk->pending from walk->dirs.back() as a chroot at walk->dirs[0] would. On success
// walk->last is the final component: "." when the path ends at a directory already on the stack
// (the root, or after ".."), else a name in dirs.back() that, when `follow_last`, is no symlink
// (or does not exist). On failure returns an errno and leaves the unresolved components,
// the failing one first, in walk->pending.
int Resolve(Walk* walk, bool follow_last) {
  int links = 0;
  while (!walk->pending.empty()) {
    std::string name = std::move(walk->pending.front());
    walk->pending.pop_front();
    const bool last = walk->pending.empty();
    if (name == "." || name == "..") {
      // ".." of the root is the root, as in a chroot.
      if (name == ".." && walk->dirs.size() > 1) {
        walk->dirs.pop_back();
        walk->names.pop_back();
      }
      continue;
    }
    if (last && !follow_last) {
      walk->last = std::move(name);
      return 0;
    }
    UniqueFd fd(::openat(walk->dirs.back().get(), name.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC));
    if (fd.get() < 0) {
      const int err = errno;
      if (err == ENOENT && last) {
        walk->last = std::move(name);
        return 0;
      }
      walk->pending.push_front(std::move(name));
      return err;
    }
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0) return errno;
    if (S_ISLNK(st.st_mode)) {
      if (++links > kMaxSymlinks) return ELOOP;
      std::string target;
      if (const int err = ReadLink(fd.get(), &target); err != 0) return err;
      if (target.empty()) return ENOENT;
      if (target.front() == '/') {
        // An absolute target starts again from the root, not from the host's "/".
        walk->dirs.resize(1);
        walk->names.clear();
      }
      std::vector<std::string> parts = PathComponents(target);
      walk->pending.insert(walk->pending.begin(), parts.begin(), parts.end());
      continue;
    }
    if (last) {
      walk->last = std::move(name);
      return 0;
    }
    if (!S_ISDIR(st.st_mode)) {
      walk->pending.push_front(std::move(name));
      return ENOTDIR;
    }
    walk->dirs.push_back(std::move(fd));
    walk->names.push_back(std::move(name));
  }
  // The path ended at a directory on the stack: "/", a trailing "..", or a symlink to "/".
  walk->last = ".";
  return 0;
}

bool IsUnusableName(const std::string& name) { return name.empty() || name == "." || name == ".."; }

}  // namespace

RootResolver::RootResolver(std::string root, Method method)
    : root_(std::move(root)), method_(method) {
  confined_ = !root_.empty() && LexicallyNormal(root_) != "/";
  openat2_ = confined_ && method_ == Method::kAuto && KernelHasOpenat2();
}

bool RootResolver::KernelHasOpenat2() {
  const int fd = Openat2(AT_FDCWD, "/", O_PATH | O_CLOEXEC, 0);
  if (fd < 0) return false;
  ::close(fd);
  return true;
}

int RootResolver::Open(const std::string& path, int flags, mode_t mode) const {
  flags |= O_CLOEXEC;
  if (!confined_) {
    const int fd = ::open(path.c_str(), flags, mode);
    return fd < 0 ? -errno : fd;
  }
  UniqueFd root(::open(root_.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (root.get() < 0) return -errno;
  if (UseOpenat2()) {
    for (int attempt = 0; attempt < kOpenat2Attempts; ++attempt) {
      const int fd = Openat2(root.get(), path.c_str(), flags, mode);
      if (fd >= 0) return fd;
      if (errno != EAGAIN) return -errno;
    }
  }
  Walk walk;
  walk.dirs.push_back(std::move(root));
  std::vector<std::string> parts = PathComponents(path);
  walk.pending.assign(parts.begin(), parts.end());
  if (const int err = Resolve(&walk, (flags & O_NOFOLLOW) == 0); err != 0) return -err;
  // O_NOFOLLOW: the walk has already followed every link of the last component; one put there
  // since is not followed out of the root.
  const int fd = ::openat(walk.dirs.back().get(), walk.last.c_str(), flags | O_NOFOLLOW, mode);
  return fd < 0 ? -errno : fd;
}

int RootResolver::OpenParent(const std::string& path, UniqueFd* dir, std::string* name) const {
  if (!confined_) {
    *name = path;
    dir->Reset(AT_FDCWD);
    return 0;
  }
  UniqueFd root(::open(root_.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (root.get() < 0) return errno;
  if (UseOpenat2()) {
    *name = BaseName(path);
    if (IsUnusableName(*name)) return EINVAL;
    std::string parent = ParentPath(path);
    if (parent.empty()) parent = ".";
    for (int attempt = 0; attempt < kOpenat2Attempts; ++attempt) {
      const int fd = Openat2(root.get(), parent.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC, 0);
      if (fd >= 0) {
        dir->Reset(fd);
        return 0;
      }
      if (errno != EAGAIN) return errno;
    }
  }
  Walk walk;
  walk.dirs.push_back(std::move(root));
  std::vector<std::string> parts = PathComponents(path);
  walk.pending.assign(parts.begin(), parts.end());
  if (const int err = Resolve(&walk, /*follow_last=*/false); err != 0) return err;
  if (IsUnusableName(walk.last)) return EINVAL;
  *name = std::move(walk.last);
  *dir = std::move(walk.dirs.back());
  return 0;
}

absl::StatusOr<std::string> RootResolver::RealPath(const std::string& path) const {
  if (path.empty() || path.front() != '/') {
    return absl::InvalidArgumentError(StrCat(path, ": not an absolute path"));
  }
  const std::string root = confined_ ? root_ : "/";
  UniqueFd root_fd(::open(root.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (root_fd.get() < 0) {
    const int err = errno;
    return absl::Status(absl::ErrnoToStatusCode(err), StrCat(root, ": ", std::strerror(err)));
  }
  Walk walk;
  walk.dirs.push_back(std::move(root_fd));
  std::vector<std::string> parts = PathComponents(path);
  walk.pending.assign(parts.begin(), parts.end());
  const int err = Resolve(&walk, /*follow_last=*/true);
  std::vector<std::string> names = std::move(walk.names);
  if (err == 0) {
    if (walk.last != ".") names.push_back(walk.last);
  } else if (err == ENOENT || err == ENOTDIR) {
    // From the first missing component on there is nothing to resolve: the rest is lexical.
    for (std::string& part : walk.pending) {
      if (part == "..") {
        if (!names.empty()) names.pop_back();
      } else if (part != ".") {
        names.push_back(std::move(part));
      }
    }
  } else {
    return absl::Status(absl::ErrnoToStatusCode(err), StrCat(path, ": ", std::strerror(err)));
  }
  return StrCat("/", StrJoin(names, "/"));
}

}  // namespace handoff
