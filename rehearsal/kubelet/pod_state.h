// The simulated kubelet's record of the processes it runs, kept in
// <node root>/var/lib/kubelet/sandbox-pods.json so that a restarted kubelet adopts the pods the
// previous one started (as a real kubelet finds its containers again through the runtime).
// Format:
//   {"pods": {"kube-controller-manager": {"pid": 123, "startTime": 4567,
//             "manifestHash": "…", "component": "kube-controller-manager"}}}
// startTime is field 22 of /proc/<pid>/stat: with the pid it names one process across pid reuse.
#ifndef HANDOFF_REHEARSAL_KUBELET_POD_STATE_H_
#define HANDOFF_REHEARSAL_KUBELET_POD_STATE_H_

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "common/fs/file_system.h"

namespace handoff::sandbox {

inline constexpr char kPodStatePath[] = "/var/lib/kubelet/sandbox-pods.json";

struct PodProcess {
  int pid = 0;
  std::uint64_t start_time = 0;
  std::string hash;       // the manifest hash it was started from
  std::string component;  // the `component` of its run records
  bool operator==(const PodProcess& other) const {
    return pid == other.pid && start_time == other.start_time && hash == other.hash &&
           component == other.component;
  }
};

using PodProcesses = std::map<std::string, PodProcess>;  // by pod name

std::string EmitPodState(const PodProcesses& pods);
// Errors name `source` and what is wrong.
absl::StatusOr<PodProcesses> ParsePodState(std::string_view text, std::string_view source);

// Reads kPodStatePath from `fs` (the node's root); no file is no pods.
absl::StatusOr<PodProcesses> LoadPodState(const FileSystem& fs);
// Replaces kPodStatePath atomically (a dotfile temp, fsync, rename, fsync of the directory).
absl::Status SavePodState(FileSystem& fs, const PodProcesses& pods);

}  // namespace handoff::sandbox

#endif  // HANDOFF_REHEARSAL_KUBELET_POD_STATE_H_
