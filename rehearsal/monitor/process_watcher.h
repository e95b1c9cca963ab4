// The real managers of the kubeadm sandbox's nodes, watched from the host, for the invariant
// monitor. A real kubelet runs each manager in a container of its own, so nothing in the node
// writes the process-start / process-exit records the simulated kubelet writes: this does.
//
// Every control-plane process on the machine (ControlPlaneComponentOf) whose network namespace is
// one of the nodes' (hostNetwork pods share their node's) is a process of that node; the
// managers' are the monitor's, the others' tell how long each component was down. Its start comes
// from /proc/<pid>/stat (clock ticks after boot: to 10 ms); its exit from a pidfd that a thread of
// the watcher waits on, so that the exit is timed to the millisecond whatever the poll interval: a
// successor that takes a released lease 100 ms after the old manager died must not look like an
// overlap. Each start and exit is appended as a run record (process-start, process-exit with status
// "unknown": the process is not the sandbox's child) to <records dir>/<node>.processes.jsonl, with
// the host pid.
//
// The managers log their container's own pid (1); the records use the host pid, which
// ProcessAt finds for a pod log's first line.
#ifndef HANDOFF_REHEARSAL_MONITOR_PROCESS_WATCHER_H_
#define HANDOFF_REHEARSAL_MONITOR_PROCESS_WATCHER_H_

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "common/base/unique_fd.h"
#include "common/system/process_table.h"

namespace handoff::sandbox {

// The control-plane component a process runs, from its argv[0]: "kube-apiserver",
// "kube-controller-manager", "kube-scheduler", "etcd", "cloud-controller-manager" (for
// aws-cloud-controller-manager), or "" for anything else.
std::string_view ControlPlaneComponentOf(const ProcessInfo& process);
// Whether `component` is a manager, whose processes the run records describe.
bool IsManager(std::string_view component);

// One process of a control-plane component of a node, as watched.
struct WatchedProcess {
  std::string node;
  std::string component;
  int64_t pid = 0;
  int64_t started_ns = 0;
  std::optional<int64_t> exited_ns;  // nullopt while it runs
};

struct WatchedNode {
  std::string name;
  std::string netns;  // readlink of /proc/<pid>/ns/net of any process of the node: "net:[4026…]"
};

// Thread-safe. Starts one thread, stopped by the destructor, which also looks at /proc every
// `poll_interval`, so that a process is seen even when nobody calls Poll (a manager that starts
// and exits while the sandbox is busy with kubeadm).
class ManagerProcessWatcher {
 public:
  // `processes` (owned) lists /proc; `proc_root` is where each process's ns/net link is read.
  ManagerProcessWatcher(std::string records_dir, std::vector<WatchedNode> nodes,
                        std::unique_ptr<ProcessTable> processes, std::string proc_root = "/proc",
                        absl::Duration poll_interval = absl::Milliseconds(100));
  ~ManagerProcessWatcher();
  ManagerProcessWatcher(const ManagerProcessWatcher&) = delete;
  ManagerProcessWatcher& operator=(const ManagerProcessWatcher&) = delete;

  // One pass over /proc: records the start of every manager process of a node not seen before
  // and begins to wait for its exit. An error when /proc cannot be listed or a record cannot be
  // appended (the next poll tries again).
  absl::Status Poll();

  // The host pid of the process of `component` on `node` that ran at `t_ns`: the one that
  // started last at or before t_ns (with 20 ms for the start's rounding) and had not exited
  // before it. nullopt when none is known (yet).
  std::optional<int64_t> ProcessAt(const std::string& node, std::string_view component,
                                   int64_t t_ns) const;

  // Every process watched so far, in order of start.
  std::vector<WatchedProcess> History() const;

 private:
  struct Watched {
    std::string node;
    std::string component;
    int64_t pid = 0;
    uint64_t start_ticks = 0;
    int64_t started_ns = 0;
    std::optional<int64_t> exited_ns;
    UniqueFd pidfd;
  };
  void WaitForExits();
  absl::Status Append(const Watched& watched, bool exit);

  const std::string records_dir_;
  const std::vector<WatchedNode> nodes_;
  const std::unique_ptr<ProcessTable> processes_;
  const std::string proc_root_;
  const absl::Duration poll_interval_;
  UniqueFd epoll_;
  UniqueFd wake_;       // an eventfd: the thread's stop signal
  std::mutex poll_mu_;  // one Poll at a time (the thread's and a caller's)
  mutable std::mutex mu_;
  // By (pid, start ticks): one process even across pid reuse.
  std::map<std::pair<int64_t, uint64_t>, Watched> watched_;
  std::thread thread_;
};

}  // namespace handoff::sandbox

#endif  // HANDOFF_REHEARSAL_MONITOR_PROCESS_WATCHER_H_
