// Running a static pod's container the way a container runtime runs it, for the real upstream
// binaries (pod_binaries.h): the hidden command `handoff-sandbox-kubelet pod-exec ...`, which the
// kubelet spawns in the pod's place, sets up the pod's namespaces and then execve(2)s the
// binary, so that the pid the kubelet tracks is the manager's own and /proc/<pid>/cmdline is the
// container's argv exactly.
//
// What the process finds (like runc with a distroless image and hostNetwork: true):
// - a private mount namespace and a UTS namespace of its own, hostname = the node's name;
//   the host's mounts, hostname and network are untouched (the network is shared);
// - as "/", a fresh tmpfs holding: the binary bound read-only at ContainerBinaryPath(argv[0]),
//   /proc (a new procfs), /dev (the host's, bound), /sys (bound read-only), /tmp (tmpfs 1777),
//   /etc with hostname plus the host's hosts and resolv.conf bound read-only, and every hostPath
//   volume bound at its mountPath (read-only when the mount says so), shallowest first;
// - the working directory "/", the environment it was started with (the kubelet gives it the
//   container's), and the open descriptors it was started with (the pod's log).
// Nothing is written outside the tmpfs but the directories and empty files that bind mounts
// need as their mountpoints inside it, the scratch directory, and a missing hostPath source,
// made a directory as runc does for a hostPath without a type.
#ifndef HANDOFF_REHEARSAL_KUBELET_POD_EXEC_H_
#define HANDOFF_REHEARSAL_KUBELET_POD_EXEC_H_

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace handoff::sandbox {

inline constexpr char kPodExecCommand[] = "pod-exec";

struct PodExecMount {
  std::string host_path;       // absolute, on the host (the node's root already prefixed)
  std::string container_path;  // the volumeMount's mountPath
  bool read_only = true;
  bool operator==(const PodExecMount& other) const {
    return host_path == other.host_path && container_path == other.container_path &&
           read_only == other.read_only;
  }
};

struct PodExecSpec {
  std::string hostname;     // the node's name
  std::string binary;       // host path of the program
  std::string scratch_dir;  // host directory the pod's root tmpfs is mounted on (made if missing)
  std::vector<PodExecMount> mounts;
  std::vector<std::string> argv;  // the container's command + args; argv[0] as the manifest says
};

// The arguments after "pod-exec" that ParsePodExecArgs reads back as `spec`:
//   --hostname NAME --binary PATH --scratch DIR [--mount ro|rw HOST CONTAINER]... -- ARGV...
std::vector<std::string> PodExecArgs(const PodExecSpec& spec);
// Errors name the argument that is missing or wrong.
absl::StatusOr<PodExecSpec> ParsePodExecArgs(const std::vector<std::string>& args);

// Where the binary is inside the pod: argv[0] when it names a path ("/bin/aws-cloud-controller-
// manager"), else /usr/local/bin/<argv[0]> (where the Kubernetes images keep their binaries,
// found through PATH as the runtime finds command[0]).
std::string ContainerBinaryPath(std::string_view argv0);

// Sets the pod up as described above and execve(2)s the binary with `env`. Returns only on
// failure, with an error naming the step; the caller then exits (it is the pod's process).
// Needs CAP_SYS_ADMIN (the sandbox runs as root). Call it single-threaded.
absl::Status ExecInPod(const PodExecSpec& spec, char* const* env);

}  // namespace handoff::sandbox

#endif  // HANDOFF_REHEARSAL_KUBELET_POD_EXEC_H_
