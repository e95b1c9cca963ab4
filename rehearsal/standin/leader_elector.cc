#include "rehearsal/standin/leader_elector.h"

#include <algorithm>

#include "common/base/strings.h"
#include "coordinator/kube/lease.h"
#include "common/kube/resource.h"

namespace handoff::standin {
namespace {

using kube::Json;

// Lease times are metav1.MicroTime: microseconds, written with all six digits.
absl::Time ToMicros(absl::Time time) { return absl::FromUnixMicros(absl::ToUnixMicros(time)); }

std::string FormatMicroTime(absl::Time time) {
  return absl::FormatTime("%Y-%m-%dT%H:%M:%E6SZ", time, absl::UTCTimeZone());
}

int64_t DurationSeconds(absl::Duration duration) {
  return std::max<int64_t>(1, absl::ToInt64Seconds(duration));
}

// LeaderElectionRecordToLeaseSpec (resourcelock/leaselock.go): the lock writes a whole spec.
Json SpecOf(const LeaseRecord& record) {
  Json spec = Json::object();
  spec["holderIdentity"] = record.holder_identity;
  spec["leaseDurationSeconds"] = record.lease_duration_seconds;
  if (record.acquire_time) spec["acquireTime"] = FormatMicroTime(*record.acquire_time);
  if (record.renew_time) spec["renewTime"] = FormatMicroTime(*record.renew_time);
  spec["leaseTransitions"] = record.lease_transitions;
  return spec;
}

LeaseRecord RecordOf(const kube::LeaseInfo& lease) {
  LeaseRecord record;
  record.holder_identity = lease.holder_identity;
  record.lease_duration_seconds = lease.lease_duration_seconds.value_or(0);
  record.acquire_time = lease.acquire_time;
  record.renew_time = lease.renew_time;
  record.lease_transitions = lease.lease_transitions;
  return record;
}

}  // namespace

bool LeaseRecord::operator==(const LeaseRecord& other) const {
  return holder_identity == other.holder_identity &&
         lease_duration_seconds == other.lease_duration_seconds &&
         acquire_time == other.acquire_time && renew_time == other.renew_time &&
         lease_transitions == other.lease_transitions;
}

std::string LeaseKey(const ElectionConfig& config) { return StrCat(config.ns, "/", config.name); }

LeaderElector::LeaderElector(kube::KubeClient& client, Clock& clock, ElectionConfig config,
                             std::function<double()> random_unit)
    : client_(client),
      clock_(clock),
      config_(std::move(config)),
      random_unit_(std::move(random_unit)) {}

void LeaderElector::SetObserved(const LeaseRecord& record) {
  observed_ = record;
  observed_time_ = clock_.Now();
}

bool LeaderElector::TryAcquireOrRenew() {
  const absl::Time exact_now = clock_.Now();
  const absl::Time now = ToMicros(exact_now);
  LeaseRecord desired;
  desired.holder_identity = config_.identity;
  desired.lease_duration_seconds = DurationSeconds(config_.lease_duration);
  desired.acquire_time = now;
  desired.renew_time = now;

  const kube::ObjectRef ref{&kube::kLeases, config_.ns, config_.name};
  absl::StatusOr<Json> current = client_.Get(ref);
  if (!current.ok()) {
    if (current.status().code() != absl::StatusCode::kNotFound) {
      last_error_ =
          StrCat("cannot read lease ", LeaseKey(config_), ": ", current.status().message());
      return false;
    }
    Json lease = {{"apiVersion", kube::kLeases.ApiVersion()},
                  {"kind", std::string(kube::kLeases.kind)},
                  {"metadata", {{"name", config_.name}, {"namespace", config_.ns}}},
                  {"spec", SpecOf(desired)}};
    absl::StatusOr<Json> created = client_.Create(kube::kLeases, config_.ns, lease);
    if (!created.ok()) {
      last_error_ =
          StrCat("cannot create lease ", LeaseKey(config_), ": ", created.status().message());
      return false;
    }
    SetObserved(desired);
    last_error_.clear();
    return true;
  }

  absl::StatusOr<kube::LeaseInfo> parsed = kube::ParseLease(*current);
  if (!parsed.ok()) {
    last_error_ = std::string(parsed.status().message());
    return false;
  }
  const LeaseRecord old = RecordOf(*parsed);
  if (!(old == observed_)) SetObserved(old);
  if (!old.holder_identity.empty() && observed_time_ + config_.lease_duration > exact_now &&
      !IsLeader()) {
    last_error_ = StrCat("lease ", LeaseKey(config_), " is held by ", old.holder_identity,
                         " and has not yet expired");
    return false;
  }
  if (IsLeader()) {
    desired.acquire_time = old.acquire_time;
    desired.lease_transitions = old.lease_transitions;
  } else {
    desired.lease_transitions = old.lease_transitions + 1;
  }
  Json lease = *std::move(current);
  lease["spec"] = SpecOf(desired);
  absl::StatusOr<Json> updated = client_.Update(ref, lease);
  if (!updated.ok()) {
    last_error_ =
        StrCat("cannot update lease ", LeaseKey(config_), ": ", updated.status().message());
    return false;
  }
  SetObserved(desired);
  last_error_.clear();
  return true;
}

void LeaderElector::Start() {
  if (state_ != State::kIdle) return;
  state_ = State::kCandidate;
  next_due_ = clock_.Now();
}

absl::Time LeaderElector::next_due() const {
  if (state_ == State::kIdle || state_ == State::kLost) return absl::InfiniteFuture();
  return next_due_;
}

std::optional<absl::Time> LeaderElector::LossDeadline() const {
  if (state_ != State::kLeader) return std::nullopt;
  if (window_deadline_) return window_deadline_;
  return next_due_ + config_.renew_deadline;
}

LeaderElector::Event LeaderElector::Tick() {
  const absl::Time start = clock_.Now();
  if ((state_ != State::kCandidate && state_ != State::kLeader) || start < next_due_) {
    return Event::kNone;
  }
  if (state_ == State::kCandidate) {
    if (TryAcquireOrRenew()) {
      state_ = State::kLeader;
      window_deadline_.reset();
      // wait.Until: the first renewal window opens a retry period after acquiring.
      next_due_ = clock_.Now() + config_.retry_period;
      return Event::kAcquired;
    }
    const double unit = random_unit_ ? std::clamp(random_unit_(), 0.0, 1.0) : 0.0;
    next_due_ = clock_.Now() + config_.retry_period * (1.0 + config_.jitter_factor * unit);
    return Event::kNone;
  }

  // Leader: a renewal window is a wait.PollImmediateUntil bounded by the renew deadline.
  if (!window_deadline_) window_deadline_ = start + config_.renew_deadline;
  if (start >= *window_deadline_) {
    state_ = State::kLost;
    last_error_ = StrCat("failed to renew lease ", LeaseKey(config_), " within ",
                         absl::FormatDuration(config_.renew_deadline),
                         last_error_.empty() ? "" : ": ", last_error_);
    return Event::kLost;
  }
  const bool renewed = TryAcquireOrRenew();
  const absl::Time end = clock_.Now();
  if (renewed && end < *window_deadline_) {
    window_deadline_.reset();
    next_due_ = end + config_.retry_period;
    return Event::kNone;
  }
  if (renewed) last_error_ = "the renewal finished after the renew deadline";
  // The poll ticks every retry period from the window's start; the deadline ends it.
  next_due_ = std::min(std::max(start + config_.retry_period, end), *window_deadline_);
  if (end >= *window_deadline_) return Tick();
  return Event::kNone;
}

absl::StatusOr<kube::HttpResponse> RequestDeadlineTransport::Send(
    const kube::HttpRequest& request) {
  if (!deadline_) return inner_->Send(request);
  const absl::Duration left = *deadline_ - clock_.Now();
  if (left <= absl::ZeroDuration()) {
    return absl::DeadlineExceededError(
        StrCat(request.method, " ", request.path, ": not sent, the renew deadline has passed"));
  }
  kube::HttpRequest capped = request;
  capped.timeout = std::min(request.timeout, left);
  return inner_->Send(capped);
}

}  // namespace handoff::standin
