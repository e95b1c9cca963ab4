// Who held each leader-election lease over a sandbox run, as far as the monitor's records tell:
// the managers' lease-acquired / lease-lost records (the stand-ins write them; for the real
// managers the klog scanner derives them from their logs) and the simulated kubelet's
// process-exit records, which show a holder that died with the lease still naming it. The
// timeline (timeline_svg.h) draws these changes as one lane per lease.
//
// Pure: no clock, no files.
#ifndef HANDOFF_REHEARSAL_SANDBOX_LEASE_HOLDERS_H_
#define HANDOFF_REHEARSAL_SANDBOX_LEASE_HOLDERS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "rehearsal/monitor/run_record.h"

namespace handoff::sandbox {

struct LeaseHolderChange {
  enum class Kind {
    kAcquired,      // the process below took the lease and holds it from t_ns
    kLost,          // the process below lost it (it stops its controllers): no one holds it
    kHolderExited,  // the holder's process exited; the lease names it until it expires or is
                    // released, and no one runs under it meanwhile
    kReleased,      // the coordinator released it on a dead holder's behalf (empty holder)
    kObserved,      // the API server's view at t_ns (identity below): a mark, not a change
  };
  int64_t t_ns = 0;
  std::string lease;  // "<namespace>/<name>": "kube-system/kube-controller-manager"
  Kind kind = Kind::kAcquired;
  // The holder the change is about: the process that acquired, lost or exited; for kReleased,
  // the one whose lease was released (node may be empty); for kObserved, the identity's host.
  std::string node;
  std::string component;  // "kube-controller-manager", "cloud-controller-manager"; "" unknown
  int64_t pid = 0;
  std::string identity;  // kObserved and kReleased: the lease's holder identity ("" = nobody)
};

// "acquired", "lost", "holder exited", "released", "observed".
const char* LeaseHolderChangeKindName(LeaseHolderChange::Kind kind);

// The changes of holder the records show, in time order (records are sorted by t_ns, stably).
// A lease-acquired is a change; a lease-lost or process-exit is one only when it is about the
// process that holds the lease then (a lease-lost without a lease name stands for every lease
// that process holds); other records are ignored.
std::vector<LeaseHolderChange> LeaseHolderChangesFromRecords(std::vector<RunRecord> records);

// `from_records` with the API server's `observed` marks among them, in time order (stably: a
// change and a mark at the same time keep that order).
std::vector<LeaseHolderChange> WithObservedLeases(std::vector<LeaseHolderChange> from_records,
                                                  const std::vector<LeaseHolderChange>& observed);

}  // namespace handoff::sandbox

#endif  // HANDOFF_REHEARSAL_SANDBOX_LEASE_HOLDERS_H_
