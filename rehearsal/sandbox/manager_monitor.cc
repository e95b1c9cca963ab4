#include "rehearsal/sandbox/manager_monitor.h"

#include <utility>

#include "rehearsal/monitor/run_record.h"

namespace handoff::sandbox {
namespace {

MonitorOptions Options(const LeaseTiming& timing) {
  MonitorOptions options;
  options.lease_duration = timing.lease_duration;
  options.retry_period = timing.retry_period;
  // kubeadm on AWS keeps --configure-cloud-routes=false, so route never runs.
  options.controllers = {"service", "cloud-node-lifecycle"};
  return options;
}

}  // namespace

ManagerMonitor::ManagerMonitor(const FileSystem& fs, const std::string& records_dir,
                               const LeaseTiming& timing)
    : fs_(fs),
      records_dir_(records_dir),
      pump_(fs, records_dir),
      monitor_(fs, records_dir, Options(timing)),
      leases_(records_dir) {}

const MonitorReport& ManagerMonitor::Poll(absl::Time now) {
  (void)pump_.Poll(now);
  leases_.Observe(now);
  (void)monitor_.Poll(absl::ToUnixNanos(now));
  return monitor_.report();
}

std::vector<LeaseHolderChange> ManagerMonitor::LeaseHolders() const {
  absl::StatusOr<std::vector<RunRecord>> records = ReadRunRecords(fs_, records_dir_);
  return WithObservedLeases(records.ok() ? LeaseHolderChangesFromRecords(*std::move(records))
                                         : std::vector<LeaseHolderChange>(),
                            leases_.observed());
}

}  // namespace handoff::sandbox
