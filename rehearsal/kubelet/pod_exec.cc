#include "rehearsal/kubelet/pod_exec.h"

#include <fcntl.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "common/base/strings.h"
#include "common/fs/host_path.h"

namespace handoff::sandbox {
namespace {

absl::Status Errno(std::string_view what) {
  const int error = errno;
  return absl::Status(absl::ErrnoToStatusCode(error),
                      StrCat("pod-exec: ", what, ": ", std::strerror(error)));
}

// mkdir -p with mode 0755; an existing directory is fine.
absl::Status MakeDirectories(const std::string& path) {
  std::string prefix;
  for (std::string_view part : StrSplit(path, "/", true)) {
    StrAppend(&prefix, "/", part);
    if (::mkdir(prefix.c_str(), 0755) != 0 && errno != EEXIST) {
      return Errno(StrCat("mkdir ", prefix));
    }
  }
  return absl::OkStatus();
}

// An empty file at `path` (its directory made first), for a file to be bound onto.
absl::Status MakeFile(const std::string& path) {
  if (absl::Status dir = MakeDirectories(ParentPath(path)); !dir.ok()) return dir;
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return Errno(StrCat("create ", path));
  ::close(fd);
  return absl::OkStatus();
}

// Binds `source` at `target` (inside the new root), making the mountpoint like the source
// (directory or file). Read-only needs a second mount call: MS_RDONLY is ignored on the first
// bind (mount(2), "Creating a bind mount").
absl::Status Bind(const std::string& source, const std::string& target, bool read_only) {
  struct stat info;
  if (::stat(source.c_str(), &info) != 0) return Errno(StrCat("stat ", source));
  absl::Status point = S_ISDIR(info.st_mode) ? MakeDirectories(target) : MakeFile(target);
  if (!point.ok()) return point;
  if (::mount(source.c_str(), target.c_str(), nullptr, MS_BIND | MS_REC, nullptr) != 0) {
    return Errno(StrCat("bind ", source, " at ", target));
  }
  if (read_only && ::mount(nullptr, target.c_str(), nullptr,
                           MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID, nullptr) != 0) {
    return Errno(StrCat("make ", target, " read-only"));
  }
  return absl::OkStatus();
}

absl::Status WriteSmallFile(const std::string& path, std::string_view content) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return Errno(StrCat("create ", path));
  const ssize_t written = ::write(fd, content.data(), content.size());
  ::close(fd);
  if (written != static_cast<ssize_t>(content.size())) return Errno(StrCat("write ", path));
  return absl::OkStatus();
}

size_t Depth(std::string_view path) { return StrSplit(path, "/", true).size(); }

}  // namespace

std::vector<std::string> PodExecArgs(const PodExecSpec& spec) {
  std::vector<std::string> args = {"--hostname", spec.hostname, "--binary", spec.binary,
                                   "--scratch",  spec.scratch_dir};
  for (const PodExecMount& mount : spec.mounts) {
    args.insert(args.end(),
                {"--mount", mount.read_only ? "ro" : "rw", mount.host_path, mount.container_path});
  }
  args.push_back("--");
  args.insert(args.end(), spec.argv.begin(), spec.argv.end());
  return args;
}

absl::StatusOr<PodExecSpec> ParsePodExecArgs(const std::vector<std::string>& args) {
  PodExecSpec spec;
  size_t i = 0;
  auto value = [&](std::string_view flag, std::string& out) -> absl::Status {
    if (i + 1 >= args.size()) {
      return absl::InvalidArgumentError(StrCat("pod-exec: ", flag, " needs a value"));
    }
    out = args[++i];
    return absl::OkStatus();
  };
  for (; i < args.size(); ++i) {
    const std::string& arg = args[i];
    absl::Status read;
    if (arg == "--") {
      spec.argv.assign(args.begin() + static_cast<std::ptrdiff_t>(i) + 1, args.end());
      break;
    } else if (arg == "--hostname") {
      read = value(arg, spec.hostname);
    } else if (arg == "--binary") {
      read = value(arg, spec.binary);
    } else if (arg == "--scratch") {
      read = value(arg, spec.scratch_dir);
    } else if (arg == "--mount") {
      if (i + 3 >= args.size() || (args[i + 1] != "ro" && args[i + 1] != "rw")) {
        return absl::InvalidArgumentError(
            "pod-exec: --mount needs three values: ro|rw HOST_PATH CONTAINER_PATH");
      }
      spec.mounts.push_back({args[i + 2], args[i + 3], args[i + 1] == "ro"});
      i += 3;
    } else {
      return absl::InvalidArgumentError(StrCat("pod-exec: unknown argument ", arg));
    }
    if (!read.ok()) return read;
  }
  std::vector<std::string> missing;
  if (spec.hostname.empty()) missing.push_back("--hostname");
  if (!StartsWith(spec.binary, "/")) missing.push_back("--binary (an absolute path)");
  if (!StartsWith(spec.scratch_dir, "/")) missing.push_back("--scratch (an absolute path)");
  if (spec.argv.empty() || spec.argv[0].empty()) missing.push_back("the argv after --");
  for (const PodExecMount& mount : spec.mounts) {
    if (!StartsWith(mount.host_path, "/") || !StartsWith(mount.container_path, "/")) {
      missing.push_back(StrCat("absolute paths in --mount ", mount.host_path, " ",
                               mount.container_path));
    }
  }
  if (!missing.empty()) {
    return absl::InvalidArgumentError(StrCat("pod-exec: missing ", StrJoin(missing, ", ")));
  }
  return spec;
}

std::string ContainerBinaryPath(std::string_view argv0) {
  if (StartsWith(argv0, "/")) return std::string(argv0);
  if (StrContains(argv0, "/")) return StrCat("/", argv0);
  return StrCat("/usr/local/bin/", argv0);
}

absl::Status ExecInPod(const PodExecSpec& spec, char* const* env) {
  if (::unshare(CLONE_NEWNS | CLONE_NEWUTS) != 0) return Errno("unshare(CLONE_NEWNS|CLONE_NEWUTS)");
  // Private from "/" down: without it, on a host whose root is a shared mount (systemd makes it
  // one), every mount below would propagate back into the host's namespace.
  if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) {
    return Errno("make / private");
  }
  if (::sethostname(spec.hostname.data(), spec.hostname.size()) != 0) {
    return Errno(StrCat("sethostname ", spec.hostname));
  }
  // Every pod of the node mounts its own tmpfs on the same directory: each in its own
  // namespace, so they do not see each other's.
  const std::string& root = spec.scratch_dir;
  if (absl::Status made = MakeDirectories(root); !made.ok()) return made;
  if (::mount("tmpfs", root.c_str(), "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755") != 0) {
    return Errno(StrCat("mount a tmpfs on ", root));
  }
  const auto in_root = [&](std::string_view path) { return StrCat(root, path); };

  for (const char* dir : {"/proc", "/dev", "/sys", "/tmp", "/etc"}) {
    if (absl::Status made = MakeDirectories(in_root(dir)); !made.ok()) return made;
  }
  if (::mount("proc", in_root("/proc").c_str(), "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC,
              nullptr) != 0) {
    return Errno("mount /proc");
  }
  if (absl::Status bound = Bind("/dev", in_root("/dev"), false); !bound.ok()) return bound;
  if (absl::Status bound = Bind("/sys", in_root("/sys"), true); !bound.ok()) return bound;
  if (::mount("tmpfs", in_root("/tmp").c_str(), "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777") != 0) {
    return Errno("mount /tmp");
  }
  // What a runtime gives a hostNetwork pod: the node's name, the host's resolver files.
  if (absl::Status written = WriteSmallFile(in_root("/etc/hostname"), spec.hostname + "\n");
      !written.ok()) {
    return written;
  }
  for (const char* file : {"/etc/hosts", "/etc/resolv.conf"}) {
    if (::access(file, R_OK) != 0) continue;
    if (absl::Status bound = Bind(file, in_root(file), true); !bound.ok()) return bound;
  }
  const std::string binary = ContainerBinaryPath(spec.argv[0]);
  if (absl::Status bound = Bind(spec.binary, in_root(binary), true); !bound.ok()) return bound;

  // Shallowest first, so that a mount inside another volume's mountPath lands on top of it
  // (runc sorts a container's mounts the same way).
  std::vector<PodExecMount> mounts = spec.mounts;
  std::stable_sort(mounts.begin(), mounts.end(), [](const auto& a, const auto& b) {
    return Depth(a.container_path) < Depth(b.container_path);
  });
  for (const PodExecMount& mount : mounts) {
    // A hostPath without a type whose path is missing: runc makes a directory there.
    if (::access(mount.host_path.c_str(), F_OK) != 0) {
      if (absl::Status made = MakeDirectories(mount.host_path); !made.ok()) return made;
    }
    if (absl::Status bound = Bind(mount.host_path, in_root(mount.container_path), mount.read_only);
        !bound.ok()) {
      return bound;
    }
  }

  // pivot_root(".", ".") stacks the old root on top of the new one; detaching it leaves the pod
  // only its tmpfs (pivot_root(2), NOTES). chroot alone would keep the host's tree mounted and
  // reachable from this namespace.
  if (::chdir(root.c_str()) != 0) return Errno(StrCat("chdir ", root));
  if (::syscall(SYS_pivot_root, ".", ".") != 0) return Errno(StrCat("pivot_root to ", root));
  if (::umount2(".", MNT_DETACH) != 0) return Errno("detach the host's root");
  if (::chdir("/") != 0) return Errno("chdir /");
  std::vector<char*> argv;
  for (const std::string& item : spec.argv) argv.push_back(const_cast<char*>(item.c_str()));
  argv.push_back(nullptr);
  ::execve(binary.c_str(), argv.data(), env);
  return Errno(StrCat("execve ", binary, " (", spec.binary, " on the host)"));
}

}  // namespace handoff::sandbox
