// Resolves host paths inside a root directory the way chroot(2) would, for PosixFileSystem: "..",
// absolute symlinks and relative ones all stay inside the root, so that a copy of a node whose
// manifest directory is a symlink to /etc/kubernetes/manifests is read and written inside the
// copy, never on the host.
//
// Every call opens the root afresh (one open(2)), so a root made or replaced after the resolver
// was built is found; then either openat2(2) with RESOLVE_IN_ROOT (Linux 5.6) resolves the path
// in one call, or, where the kernel lacks it (ENOSYS, or EPERM from an old seccomp profile), a
// walk does the same one component at a time (open(O_PATH|O_NOFOLLOW), readlinkat, ".." popped
// off a stack of directory descriptors and clamped at the root, at most 40 symlinks as the
// kernel's MAXSYMLINKS, then ELOOP). Operations on a name (unlink, rename, mkdir, rmdir) resolve
// the parent directory to a descriptor and act on the last component with the *at() call, so the
// last component is never followed anywhere.
//
// With root "/" or "" nothing is confined: paths go to the plain calls, relative ones from the
// working directory, exactly as without a resolver.
//
// Thread-compatible; holds no descriptor between calls.
#ifndef HANDOFF_COMMON_FS_ROOT_RESOLVER_H_
#define HANDOFF_COMMON_FS_ROOT_RESOLVER_H_

#include <fcntl.h>
#include <unistd.h>

#include <string>
#include <utility>

#include "absl/status/statusor.h"
#include "common/base/unique_fd.h"

namespace handoff {


class RootResolver {
 public:
  enum class Method {
    kAuto,     // openat2 when the kernel has it, else kWalk
    kOpenat2,  // openat2 only (tests: fails with ENOSYS where the kernel lacks it)
    kWalk,     // the component walk only
  };

  RootResolver(std::string root, Method method);

  // Whether paths are confined (root other than "/" and "").
  bool confined() const { return confined_; }
  const std::string& root() const { return root_; }

  // open(2) of `path` inside the root, with O_CLOEXEC added. The last component is followed
  // (inside the root) unless `flags` has O_NOFOLLOW; with O_CREAT a dangling symlink creates its
  // target inside the root, as in a chroot. Returns the descriptor, or -errno.
  int Open(const std::string& path, int flags, mode_t mode = 0) const;

  // The directory holding `path`'s last component, resolved inside the root, into `*dir` (an
  // O_PATH descriptor), and that component (never followed) into `*name`: for unlinkat,
  // renameat, mkdirat. When nothing is confined `*dir` is AT_FDCWD and `*name` the whole path.
  // Returns 0 or an errno; EINVAL when the last component is "", "." or "..".
  int OpenParent(const std::string& path, UniqueFd* dir, std::string* name) const;

  // `path` (absolute) with every symlink resolved inside the root, as a host path; components
  // from the first one missing on are taken lexically. Always by the walk, which knows the name
  // of each directory it passes. -errno as the status' message source on failure.
  absl::StatusOr<std::string> RealPath(const std::string& path) const;

  // Whether openat2(2) with RESOLVE_IN_ROOT works here (kernel and seccomp).
  static bool KernelHasOpenat2();

 private:
  bool UseOpenat2() const {
    return method_ == Method::kOpenat2 || (method_ == Method::kAuto && openat2_);
  }

  std::string root_;
  Method method_;
  bool confined_;
  bool openat2_;  // probed once, at construction
};

}  // namespace handoff

#endif  // HANDOFF_COMMON_FS_ROOT_RESOLVER_H_
