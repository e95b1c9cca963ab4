#include "rehearsal/sandbox/lease_observer.h"

#include <utility>

#include "common/base/strings.h"
#include "coordinator/kube/lease.h"
#include "rehearsal/monitor/run_record.h"

namespace handoff::sandbox {

void LeaseObserver::Observe(absl::Time now) {
  if (client_ == nullptr || now < next_read_) return;
  next_read_ = now + absl::Milliseconds(250);
  absl::StatusOr<kube::LeaseSet> leases = kube::ReadLeases(*client_, kube::LeaseNames{});
  if (!leases.ok()) return;
  for (const std::optional<kube::LeaseInfo>* lease :
       {&leases->kube_controller_manager, &leases->cloud_controller_manager, &leases->migration}) {
    if (!lease->has_value()) continue;
    const kube::LeaseInfo& info = **lease;
    std::string& seen = holders_[info.name];
    if (info.holder_identity == seen) continue;
    RunRecord note;
    note.t_ns = absl::ToUnixNanos(now);
    note.event = kMonitorNote;
    note.node = kube::HostnameOfIdentity(info.holder_identity);
    note.message = StrCat("API server: lease ", info.ns, "/", info.name, " held by ",
                          info.holder_identity.empty() ? "nobody" : info.holder_identity, " (was ",
                          seen.empty() ? "nobody" : seen, ")");
    if (AppendRunRecord(StrCat(records_dir_, "/leases.jsonl"), note).ok()) {
      seen = info.holder_identity;
      LeaseHolderChange observed;
      observed.t_ns = note.t_ns;
      observed.lease = StrCat(info.ns, "/", info.name);
      observed.kind = LeaseHolderChange::Kind::kObserved;
      observed.node = note.node;
      observed.identity = info.holder_identity;
      observed_.push_back(std::move(observed));
    }
  }
}

}  // namespace handoff::sandbox
