// What a kubeadm sandbox run changes on the host, written down before each change and undone at
// its end, or at the next run's start when the run died (SIGKILL, a crash, a power cut of the
// sandbox process): the nodes' first processes (with them every process of the node dies), the
// bridge (with it the veths), the helpers it started on the host, the cgroup roots the kubelets
// filled, the sysctls a kubelet changes at start (vm.overcommit_memory, kernel.panic, ... : not
// namespaced), and the run's directory unless kept. Mounts need no undoing: every mount of a node
// lives in the node's own mount namespace, which goes with its last process.
//
// The record is one JSON file per run in kRecordsDir, replaced atomically at each change (write
// ahead: a change is recorded before it is made, so an undo may find a change that never
// happened and skips it).
//
// Runs may overlap (each on a network of its own). The sysctls are the host's, not a run's: a run
// that starts its kubelets while another run's kubelets have set them records the values the
// other run recorded (the host's, before any kubelet), and a run that ends while another live run
// holds them leaves them to that run; the last one puts them back. The records directory's
// flock(2) makes each of those decisions one at a time.
#ifndef HANDOFF_REHEARSAL_SANDBOX_KUBEADM_HOST_CHANGES_H_
#define HANDOFF_REHEARSAL_SANDBOX_KUBEADM_HOST_CHANGES_H_

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace handoff::sandbox::kubeadm {

inline constexpr char kRecordsDir[] = "/run/handoff-sandbox";
inline constexpr char kSysctlRoot[] = "/proc/sys";

// Where the records are kept and the sysctls read and written: the host's places, or a test's.
struct HostPaths {
  std::string records_dir = kRecordsDir;
  std::string sysctl_root = kSysctlRoot;  // "kernel.panic" is <sysctl_root>/kernel/panic
};

// The sysctls the kubelet sets at start (pkg/kubelet/cm/container_manager_linux.go
// setupKernelTunables), none of them per network namespace.
const std::vector<std::string>& KubeletSysctls();

// One process, across pid reuse: its pid and the start time of field 22 of /proc/<pid>/stat.
struct HostProcess {
  int64_t pid = 0;
  uint64_t start_ticks = 0;
};
// The process `pid` as it is now; start_ticks 0 when it does not exist or is a zombie.
HostProcess CurrentProcess(int64_t pid);
// Whether `process` still runs (the same pid and start time).
bool StillRuns(const HostProcess& process);

struct HostChangeRecord {
  HostProcess owner;  // the sandbox process that made the changes
  std::string dir;    // the run's directory
  bool keep = false;  // leave `dir` in place
  // Network interfaces made on the host, in order (the bridge, then each veth's host end). A
  // node's veth usually goes with its network namespace, but a namespace outlives its last
  // process while orphaned TCP sockets of the node time out (a minute or more), and its veth
  // with it: each is deleted by name.
  std::vector<std::string> links;
  std::vector<std::string> cgroup_roots;       // "/hs-1234-1": in every hierarchy
  std::map<std::string, std::string> sysctls;  // name → value before the run
  // What the run started that must not outlive it: the nodes' first processes (the kernel kills
  // each node's other processes with its first), the fake AWS, the coordinator.
  std::vector<HostProcess> processes;
};

std::string FormatHostChangeRecord(const HostChangeRecord& record);
// InvalidArgument naming `source` and the field.
absl::StatusOr<HostChangeRecord> ParseHostChangeRecord(const std::string& text,
                                                       const std::string& source);

// The directories of a cgroup root in each cgroup hierarchy mounted under `cgroup_fs`
// (/sys/fs/cgroup: each v1 controller's directory, and the unified one).
std::vector<std::string> CgroupRootDirs(const std::string& cgroup_fs, const std::string& root);

// Undoes what is the run's own in `record`, step by step, whatever fails (each failure is
// described in the result, which is empty when everything was undone): kills the node processes
// that still run and waits for them, deletes the network interfaces (the last made first),
// removes the cgroup roots (depth first), removes the directory unless kept. `say` gets a line per
// thing undone. The sysctls, which runs share, are RestoreSysctls's.
std::vector<std::string> UndoHostChanges(const HostChangeRecord& record,
                                         const std::function<void(const std::string&)>& say);

// Writes back each of `record`'s sysctls that differs; a line in the result per one that could
// not be written.
std::vector<std::string> RestoreSysctls(const HostChangeRecord& record,
                                        const std::function<void(const std::string&)>& say,
                                        const std::string& sysctl_root = kSysctlRoot);

// The run's record, kept in <records dir>/<owner pid>.json.
class HostChanges {
 public:
  // Starts a record for this process and `dir` in `paths.records_dir`; fails when it cannot be
  // written.
  static absl::StatusOr<HostChanges> Begin(const std::string& dir, bool keep,
                                           const HostPaths& paths = {});

  // Each writes the record (with the change) before the caller makes the change.
  absl::Status WillCreateLink(const std::string& name);
  absl::Status WillFillCgroupRoot(const std::string& root);
  // Records each of KubeletSysctls() as the host had it before the first kubelet: read now, or
  // taken from a live run that recorded them before its kubelets changed them.
  absl::Status WillStartKubelets();
  absl::Status Started(const HostProcess& process);

  // Undoes everything and removes the record; what could not be undone, as for UndoHostChanges.
  // The sysctls are put back unless another live run holds them.
  std::vector<std::string> Undo(const std::function<void(const std::string&)>& say);

  const HostChangeRecord& record() const { return record_; }

 private:
  absl::Status Save();
  HostPaths paths_;
  std::string path_;
  HostChangeRecord record_;
};

// Undoes the changes of every earlier run (a record in `records_dir`) whose owner no longer
// runs, and removes their records (the sysctls as HostChanges::Undo does). Returns a line per run
// cleaned and per thing that could not be undone; a record that does not parse is left alone,
// with a line saying so.
std::vector<std::string> CleanStaleRuns(const std::function<void(const std::string&)>& say,
                                        const HostPaths& paths = {});

}  // namespace handoff::sandbox::kubeadm

#endif  // HANDOFF_REHEARSAL_SANDBOX_KUBEADM_HOST_CHANGES_H_
