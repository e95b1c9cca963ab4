// What the monitor watches on the clusters whose managers are the real ones (real, kubeadm): the
// managers' own logs, turned into run records as they are written (LogRecordsPump), the leases
// as the API server holds them (LeaseObserver), and the live monitor over both records.
// Thread-compatible.
#ifndef HANDOFF_REHEARSAL_SANDBOX_MANAGER_MONITOR_H_
#define HANDOFF_REHEARSAL_SANDBOX_MANAGER_MONITOR_H_

#include <string>
#include <vector>

#include "absl/time/time.h"
#include "common/fs/file_system.h"
#include "rehearsal/monitor/klog_scanner.h"
#include "rehearsal/monitor/monitor.h"
#include "rehearsal/sandbox/lease_holders.h"
#include "rehearsal/sandbox/lease_observer.h"
#include "rehearsal/sandbox/node_layout.h"

namespace handoff::sandbox {

class ManagerMonitor {
 public:
  // Records go to, and are read from, `records_dir`; handovers are measured against `timing`.
  ManagerMonitor(const FileSystem& fs, const std::string& records_dir, const LeaseTiming& timing);

  // A manager's log to follow from its start (it may not exist yet).
  void FollowLog(ManagerLogSource source) { pump_.AddSource(std::move(source)); }
  // Where the leases are read (SetClient; nullptr once the API server is going away).
  LeaseObserver& leases() { return leases_; }

  // Turns what the logs gained into records, reads the leases (at most every 250 ms) and
  // analyses every record up to `now`. A log or a lease that cannot be read yet is read on the
  // next poll.
  const MonitorReport& Poll(absl::Time now);
  // Handovers before `t` do not count (the cluster's own bring-up).
  void CountGapsFrom(absl::Time t) { monitor_.CountGapsFrom(absl::ToUnixNanos(t)); }
  // Who held each lease: from the managers' records, with the API server's view among them.
  std::vector<LeaseHolderChange> LeaseHolders() const;

 private:
  const FileSystem& fs_;
  const std::string records_dir_;
  LogRecordsPump pump_;
  LiveMonitor monitor_;
  LeaseObserver leases_;
};

}  // namespace handoff::sandbox

#endif  // HANDOFF_REHEARSAL_SANDBOX_MANAGER_MONITOR_H_
