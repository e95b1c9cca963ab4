#include "coordinator/kube/lease.h"

#include "common/base/strings.h"

namespace handoff::kube {
namespace {

absl::StatusOr<std::optional<absl::Time>> ParseTimeField(const Json& spec, const char* field,
                                                         std::string_view lease) {
  if (!spec.contains(field) || spec[field].is_null()) return std::optional<absl::Time>();
  if (!spec[field].is_string()) {
    return absl::InvalidArgumentError(
        StrCat("lease ", lease, ": spec.", field, " is not a string"));
  }
  const std::string text = spec[field].get<std::string>();
  absl::Time time;
  std::string error;
  if (!absl::ParseTime(absl::RFC3339_full, text, &time, &error)) {
    return absl::InvalidArgumentError(StrCat("lease ", lease, ": spec.", field, " \"", text,
                                             "\" is not an RFC 3339 time: ", error));
  }
  return std::optional<absl::Time>(time);
}

absl::StatusOr<std::optional<LeaseInfo>> ReadOptional(KubeClient& client, std::string_view ns,
                                                      std::string_view name) {
  absl::StatusOr<LeaseInfo> lease = GetLease(client, ns, name);
  if (lease.ok()) return std::optional<LeaseInfo>(*std::move(lease));
  if (lease.status().code() == absl::StatusCode::kNotFound) return std::optional<LeaseInfo>();
  return lease.status();
}

bool Transient(const absl::Status& status) {
  switch (status.code()) {
    case absl::StatusCode::kUnavailable:
    case absl::StatusCode::kDeadlineExceeded:
    case absl::StatusCode::kInternal:
    case absl::StatusCode::kUnknown:
    case absl::StatusCode::kAborted:
      return true;
    default:
      return false;
  }
}

}  // namespace

std::optional<absl::Time> LeaseInfo::Expiry() const {
  if (!renew_time || !lease_duration_seconds) return std::nullopt;
  return *renew_time + absl::Seconds(*lease_duration_seconds);
}

bool LeaseInfo::HeldAt(absl::Time now) const {
  const std::optional<absl::Time> expiry = Expiry();
  return !holder_identity.empty() && expiry && *expiry > now;
}

absl::StatusOr<LeaseInfo> ParseLease(const Json& lease) {
  LeaseInfo info;
  info.ns = ObjectNamespace(lease);
  info.name = ObjectName(lease);
  info.resource_version = ResourceVersion(lease);
  const std::string what = StrCat(info.ns, "/", info.name);
  if (!lease.contains("spec") || lease["spec"].is_null()) return info;
  const Json& spec = lease["spec"];
  if (!spec.is_object())
    return absl::InvalidArgumentError(StrCat("lease ", what, ": spec is not a map"));
  info.holder_identity = StringAt(spec, {"holderIdentity"});
  absl::StatusOr<std::optional<absl::Time>> acquire = ParseTimeField(spec, "acquireTime", what);
  if (!acquire.ok()) return acquire.status();
  info.acquire_time = *acquire;
  absl::StatusOr<std::optional<absl::Time>> renew = ParseTimeField(spec, "renewTime", what);
  if (!renew.ok()) return renew.status();
  info.renew_time = *renew;
  if (spec.contains("leaseDurationSeconds") && spec["leaseDurationSeconds"].is_number_integer()) {
    info.lease_duration_seconds = spec["leaseDurationSeconds"].get<int64_t>();
  }
  if (spec.contains("leaseTransitions") && spec["leaseTransitions"].is_number_integer()) {
    info.lease_transitions = spec["leaseTransitions"].get<int64_t>();
  }
  return info;
}

absl::StatusOr<LeaseInfo> GetLease(KubeClient& client, std::string_view ns, std::string_view name) {
  absl::StatusOr<Json> object = client.Get(ObjectRef{&kLeases, std::string(ns), std::string(name)});
  if (!object.ok()) return object.status();
  return ParseLease(*object);
}

std::string HostnameOfIdentity(std::string_view identity) {
  const size_t underscore = identity.rfind('_');
  return std::string(underscore == std::string_view::npos ? identity
                                                          : identity.substr(0, underscore));
}

std::string FormatTimestamp(absl::Time time) {
  // Microseconds at most, as Kubernetes' MicroTime.
  const absl::Time micros = absl::FromUnixMicros(absl::ToUnixMicros(time));
  return absl::FormatTime("%Y-%m-%dT%H:%M:%E*SZ", micros, absl::UTCTimeZone());
}

std::string FormatElapsed(absl::Duration duration) {
  const absl::Duration unit =
      absl::AbsDuration(duration) < absl::Minutes(1) ? absl::Milliseconds(1) : absl::Seconds(1);
  return absl::FormatDuration(absl::Trunc(duration, unit));
}

std::string_view HolderName(Holder holder) {
  switch (holder) {
    case Holder::kNobody:
      return "nobody";
    case Holder::kKubeControllerManager:
      return "kube-controller-manager";
    case Holder::kCloudControllerManager:
      return "cloud-controller-manager";
    case Holder::kUnknown:
      return "unknown";
  }
  return "unknown";
}

std::string Ownership::Describe() const {
  switch (holder) {
    case Holder::kNobody:
      return StrCat("nobody (", reason, ")");
    case Holder::kUnknown:
      return StrCat("an unknown manager on ", node, " (", reason, ")");
    default:
      return StrCat(HolderName(holder), " on ", node);
  }
}

Ownership ClassifyMigrationLease(const LeaseSet& leases, absl::Time now) {
  Ownership ownership;
  if (!leases.migration) {
    ownership.reason = "the migration lease does not exist: no manager runs with Leader Migration";
    return ownership;
  }
  const LeaseInfo& migration = *leases.migration;
  ownership.identity = migration.holder_identity;
  ownership.node = HostnameOfIdentity(migration.holder_identity);
  ownership.acquired = migration.acquire_time;
  ownership.expiry = migration.Expiry();
  if (migration.holder_identity.empty()) {
    ownership.reason = "holderIdentity is empty: the last holder released it";
    return ownership;
  }
  if (!migration.HeldAt(now)) {
    ownership.reason = ownership.expiry
                           ? StrCat("expired at ", FormatTimestamp(*ownership.expiry),
                                    ", last held by ", migration.holder_identity)
                           : StrCat("no renewTime or leaseDurationSeconds, last held by ",
                                    migration.holder_identity);
    return ownership;
  }
  if (leases.kube_controller_manager &&
      leases.kube_controller_manager->holder_identity == migration.holder_identity) {
    ownership.holder = Holder::kKubeControllerManager;
  } else if (leases.cloud_controller_manager &&
             leases.cloud_controller_manager->holder_identity == migration.holder_identity) {
    ownership.holder = Holder::kCloudControllerManager;
  } else {
    ownership.holder = Holder::kUnknown;
    ownership.reason = StrCat(migration.holder_identity,
                              " holds neither the kube-controller-manager nor the "
                              "cloud-controller-manager lease");
  }
  return ownership;
}

absl::StatusOr<LeaseSet> ReadLeases(KubeClient& client, const LeaseNames& names) {
  LeaseSet set;
  absl::StatusOr<std::optional<LeaseInfo>> lease = ReadOptional(client, names.ns, names.migration);
  if (!lease.ok()) return lease.status();
  set.migration = *std::move(lease);
  lease = ReadOptional(client, names.ns, names.kube_controller_manager);
  if (!lease.ok()) return lease.status();
  set.kube_controller_manager = *std::move(lease);
  lease = ReadOptional(client, names.ns, names.cloud_controller_manager);
  if (!lease.ok()) return lease.status();
  set.cloud_controller_manager = *std::move(lease);
  return set;
}

LeaseWatcher::LeaseWatcher(KubeClient& client, Clock& clock, LeaseNames names)
    : client_(client), clock_(clock), names_(std::move(names)) {}

absl::StatusOr<std::vector<LeaseEvent>> LeaseWatcher::Poll() {
  const absl::Time now = clock_.Now();
  absl::StatusOr<LeaseSet> leases = ReadLeases(client_, names_);
  if (!leases.ok()) {
    RecordError();
    return leases.status();
  }
  return Observe(*leases, now);
}

std::vector<LeaseEvent> LeaseWatcher::Observe(const LeaseSet& leases, absl::Time now) {
  std::vector<LeaseEvent> events;
  Ownership current = ClassifyMigrationLease(leases, now);
  if (summary_.polls == 0) summary_.start = now;
  ++summary_.polls;
  summary_.end = now;
  if (last_ && last_poll_) {
    // The time since the last poll counts for whoever held the lease then.
    const std::string label =
        last_->holder == Holder::kNobody ? std::string("nobody") : last_->Describe();
    summary_.held_for[label] += now - *last_poll_;
  }

  auto record_gap = [this](absl::Duration gap) {
    summary_.gap_total += gap;
    summary_.longest_gap = std::max(summary_.longest_gap, gap);
  };

  if (current.holder == Holder::kNobody) {
    if (!gap_start_) {
      // The gap began when the last holder's lease ran out, if that is known and already past.
      absl::Time start = now;
      if (last_ && last_->holder != Holder::kNobody && last_->expiry && *last_->expiry <= now) {
        start = *last_->expiry;
      } else if (current.expiry && *current.expiry <= now) {
        start = *current.expiry;
      }
      gap_start_ = start;
      ++summary_.gaps;
      LeaseEvent event;
      event.kind = LeaseEvent::Kind::kGapStarted;
      event.observed = now;
      event.at = start;
      event.ownership = current;
      events.push_back(event);
    }
  } else {
    const bool first = !last_;
    const bool changed = first || last_->holder == Holder::kNobody ||
                         last_->identity != current.identity || last_->holder != current.holder;
    if (changed) {
      LeaseEvent event;
      event.kind = LeaseEvent::Kind::kHeld;
      event.observed = now;
      event.ownership = current;
      event.at = now;
      // The new holder took it at acquireTime, when that falls in the time since the last poll.
      if (current.acquired && *current.acquired <= now &&
          (!last_poll_ || *current.acquired >= *last_poll_ ||
           (gap_start_ && *current.acquired >= *gap_start_))) {
        event.at = *current.acquired;
      }
      if (gap_start_) {
        event.gap_start = *gap_start_;
        event.gap = std::max(event.at - *gap_start_, absl::ZeroDuration());
        record_gap(*event.gap);
        gap_start_.reset();
      } else if (!first && last_->expiry && current.acquired &&
                 *current.acquired > *last_->expiry) {
        // The old holder's lease ran out and the new one took it between two polls.
        event.gap_start = *last_->expiry;
        event.gap = *current.acquired - *last_->expiry;
        ++summary_.gaps;
        record_gap(*event.gap);
      }
      if (!first) ++summary_.holder_changes;
      events.push_back(event);
    }
  }
  summary_.in_gap_at_end = gap_start_.has_value();
  last_ = current;
  last_poll_ = now;
  return events;
}

WatchSummary LeaseWatcher::summary() const {
  WatchSummary summary = summary_;
  if (gap_start_) {
    const absl::Duration open = std::max(summary.end - *gap_start_, absl::ZeroDuration());
    summary.gap_total += open;
    summary.longest_gap = std::max(summary.longest_gap, open);
  }
  return summary;
}

absl::Status RunLeaseWatch(LeaseWatcher& watcher, Clock& clock, const WatchOptions& options,
                           const std::function<void(const LeaseEvent&)>& on_event,
                           const std::function<void(const absl::Status&)>& on_error,
                           const std::function<bool()>& stop) {
  const absl::Time deadline = clock.Now() + options.duration;
  const bool bounded = options.duration > absl::ZeroDuration();
  while (true) {
    absl::StatusOr<std::vector<LeaseEvent>> events = watcher.Poll();
    if (events.ok()) {
      for (const LeaseEvent& event : *events) on_event(event);
    } else if (Transient(events.status())) {
      on_error(events.status());
    } else {
      return events.status();
    }
    if (stop && stop()) return absl::OkStatus();
    if (bounded && clock.Now() + options.interval > deadline) return absl::OkStatus();
    clock.SleepFor(options.interval);
  }
}

}  // namespace handoff::kube
