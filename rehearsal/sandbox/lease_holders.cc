#include "rehearsal/sandbox/lease_holders.h"

#include <algorithm>
#include <map>
#include <utility>

namespace handoff::sandbox {
namespace {

struct Holder {
  std::string node;
  std::string component;
  int64_t pid = 0;
  bool alive = true;
};

bool SameProcess(const Holder& holder, const RunRecord& record) {
  return holder.node == record.node && holder.component == record.component &&
         holder.pid == record.pid;
}

LeaseHolderChange Change(const RunRecord& record, const std::string& lease,
                         LeaseHolderChange::Kind kind) {
  LeaseHolderChange change;
  change.t_ns = record.t_ns;
  change.lease = lease;
  change.kind = kind;
  change.node = record.node;
  change.component = record.component;
  change.pid = record.pid;
  return change;
}

}  // namespace

const char* LeaseHolderChangeKindName(LeaseHolderChange::Kind kind) {
  switch (kind) {
    case LeaseHolderChange::Kind::kAcquired:
      return "acquired";
    case LeaseHolderChange::Kind::kLost:
      return "lost";
    case LeaseHolderChange::Kind::kHolderExited:
      return "holder exited";
    case LeaseHolderChange::Kind::kReleased:
      return "released";
    case LeaseHolderChange::Kind::kObserved:
      return "observed";
  }
  return "unknown";
}

std::vector<LeaseHolderChange> LeaseHolderChangesFromRecords(std::vector<RunRecord> records) {
  std::stable_sort(records.begin(), records.end(),
                   [](const RunRecord& a, const RunRecord& b) { return a.t_ns < b.t_ns; });
  std::map<std::string, Holder> holders;  // lease -> its holder, while one holds it
  std::vector<LeaseHolderChange> changes;
  for (const RunRecord& record : records) {
    if (record.event == kLeaseAcquired && !record.lease.empty()) {
      holders[record.lease] = Holder{record.node, record.component, record.pid, true};
      changes.push_back(Change(record, record.lease, LeaseHolderChange::Kind::kAcquired));
    } else if (record.event == kLeaseLost) {
      for (auto it = holders.begin(); it != holders.end();) {
        if ((record.lease.empty() || record.lease == it->first) &&
            SameProcess(it->second, record)) {
          changes.push_back(Change(record, it->first, LeaseHolderChange::Kind::kLost));
          it = holders.erase(it);
        } else {
          ++it;
        }
      }
    } else if (record.event == kProcessExit) {
      for (auto& [lease, holder] : holders) {
        if (holder.alive && SameProcess(holder, record)) {
          holder.alive = false;
          changes.push_back(Change(record, lease, LeaseHolderChange::Kind::kHolderExited));
        }
      }
    }
  }
  return changes;
}

std::vector<LeaseHolderChange> WithObservedLeases(std::vector<LeaseHolderChange> from_records,
                                                  const std::vector<LeaseHolderChange>& observed) {
  from_records.insert(from_records.end(), observed.begin(), observed.end());
  std::stable_sort(
      from_records.begin(), from_records.end(),
      [](const LeaseHolderChange& a, const LeaseHolderChange& b) { return a.t_ns < b.t_ns; });
  return from_records;
}

}  // namespace handoff::sandbox
