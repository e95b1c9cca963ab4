// What the sandbox's simulated kubelet tells a stand-in through its environment, and how a path
// seen inside the "container" maps to a file on the host.
//
// Variables (all optional; a stand-in started by hand runs without them):
//   HANDOFF_SANDBOX_NODE     the node name: the hostname part of the leader-election identity
//                            "<node>_<uuid>", and the `node` of every run record. Default: the
//                            machine's hostname.
//   HANDOFF_SANDBOX_RECORDS  the run-records file to append to (<records dir>/<node>.jsonl, see
//                            rehearsal/monitor/run_record.h). Unset: no records.
//   HANDOFF_SANDBOX_MOUNTS   the pod's hostPath volume mounts, one "mountPath=hostPath" per line.
//                            When set, every file a flag names (--kubeconfig,
//                            --leader-migration-config) is read through it: the longest mountPath
//                            that contains the path wins, and a path under no mount does not
//                            exist (as in a real container). Unset: paths are host paths.
//   HANDOFF_SANDBOX_VERSION  the component's Kubernetes version ("v1.27.3"), which selects the
//                            controller names it registers. Default: the component's own
//                            (kube-controller-manager v1.26, cloud-controller-manager v1.27).
// Lease timings are not taken from the environment: the sandbox writes short
// --leader-elect-lease-duration/-renew-deadline/-retry-period values into its manifests.
//
// Pure. Thread-compatible.
#ifndef HANDOFF_REHEARSAL_STANDIN_SANDBOX_ENVIRONMENT_H_
#define HANDOFF_REHEARSAL_STANDIN_SANDBOX_ENVIRONMENT_H_

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "common/base/kube_version.h"

namespace handoff::standin {

inline constexpr char kNodeVariable[] = "HANDOFF_SANDBOX_NODE";
inline constexpr char kRecordsVariable[] = "HANDOFF_SANDBOX_RECORDS";
inline constexpr char kMountsVariable[] = "HANDOFF_SANDBOX_MOUNTS";
inline constexpr char kVersionVariable[] = "HANDOFF_SANDBOX_VERSION";

// One hostPath volume mount: `mount_path` inside the container is `host_path` on the host.
struct Mount {
  std::string mount_path;
  std::string host_path;
};

// Container paths to host paths.
class MountTable {
 public:
  // No table: every path is a host path.
  MountTable() = default;
  explicit MountTable(std::vector<Mount> mounts);

  // "mountPath=hostPath" lines; blank lines are skipped. Both sides must be absolute paths.
  // Errors name the variable and the line.
  static absl::StatusOr<MountTable> Parse(std::string_view text);

  // The host path of container path `path` (absolute): the mount with the longest mount_path
  // that is `path` or one of its parent directories. NotFound, naming the path, when the table
  // is active and no mount covers it.
  absl::StatusOr<std::string> Resolve(std::string_view path) const;

  bool active() const { return active_; }
  const std::vector<Mount>& mounts() const { return mounts_; }

 private:
  bool active_ = false;
  std::vector<Mount> mounts_;
};

struct SandboxEnvironment {
  std::string node;          // never empty after Read
  std::string records_path;  // "" = write no records
  MountTable mounts;
  std::optional<KubeVersion> version;  // nullopt = the component's default
};

// Reads the variables through `lookup` (nullopt = unset); `hostname` is the default node name.
// Errors name the variable.
absl::StatusOr<SandboxEnvironment> ReadSandboxEnvironment(
    const std::function<std::optional<std::string>(const char* name)>& lookup,
    const std::string& hostname);

}  // namespace handoff::standin

#endif  // HANDOFF_REHEARSAL_STANDIN_SANDBOX_ENVIRONMENT_H_
