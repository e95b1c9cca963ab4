// Leader election on a coordination.k8s.io/v1 Lease with client-go's semantics, as the
// kube-controller-manager 1.26 and cloud-controller-manager 1.27 run it (k8s.io/client-go
// tools/leaderelection/leaderelection.go v0.26/v0.27, resourcelock/leaselock.go):
//
//  - tryAcquireOrRenew: read the lease. Missing: create it with holderIdentity = us,
//    leaseDurationSeconds, acquireTime = renewTime = now, leaseTransitions 0. Present: when its
//    record differs from the one last observed, remember it and the local time of that
//    observation. Another holder's lease is respected until `lease_duration` (this candidate's own
//    setting) has passed since that observation, NOT since the lease's renewTime: a candidate
//    that starts late, or whose clock differs, waits a full lease duration without seeing a
//    change before it takes over. Then write the whole record with the resourceVersion read
//    (optimistic concurrency: a concurrent write makes it fail, 409): our identity, renewTime now,
//    and acquireTime/leaseTransitions kept when we already hold it, else acquireTime now and
//    leaseTransitions + 1.
//  - Acquiring: an attempt at once, then one every retry period stretched by jitter
//    (wait.JitterUntil, factor 1.2) until one succeeds.
//  - Renewing: retry period after each success, a renewal window opens; attempts at once and
//    every retry period; if none succeeds within the renew deadline the lease is lost (an
//    attempt still running at the deadline counts as failed, as its request context is
//    cancelled then). The managers then exit; nothing is released (ReleaseOnCancel is not set
//    in their leaderElectAndRun).
//
// leaseDurationSeconds is the lease duration in whole seconds, as client-go writes it, but at
// least 1: client-go would write 0 for the sub-second durations the sandbox uses, and readers
// that judge a lease by renewTime + leaseDurationSeconds (handoffctl lease watch) would then see
// it free while held.
//
// The elector is a step machine driven by Tick() so that one thread can run several elections
// (the main and the migration lease) and tests can drive it with a FakeClock. Thread-compatible.
#ifndef HANDOFF_REHEARSAL_STANDIN_LEADER_ELECTOR_H_
#define HANDOFF_REHEARSAL_STANDIN_LEADER_ELECTOR_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "absl/time/time.h"
#include "common/system/clock.h"
#include "common/kube/client.h"
#include "common/kube/http_transport.h"

namespace handoff::standin {

// client-go's JitterFactor for acquire retries.
inline constexpr double kClientGoJitterFactor = 1.2;

struct ElectionConfig {
  std::string ns = "kube-system";
  std::string name;      // the Lease
  std::string identity;  // "<node>_<uuid>"
  absl::Duration lease_duration = absl::Seconds(15);
  absl::Duration renew_deadline = absl::Seconds(10);
  absl::Duration retry_period = absl::Seconds(2);
  // Acquire retries wait retry_period × (1 + jitter_factor × u), u from `random_unit` in [0, 1).
  double jitter_factor = kClientGoJitterFactor;
};

// The leader-election record of a Lease's spec.
struct LeaseRecord {
  std::string holder_identity;
  int64_t lease_duration_seconds = 0;
  std::optional<absl::Time> acquire_time;
  std::optional<absl::Time> renew_time;
  int64_t lease_transitions = 0;
  bool operator==(const LeaseRecord& other) const;
};

// "<ns>/<name>".
std::string LeaseKey(const ElectionConfig& config);

class LeaderElector {
 public:
  enum class State { kIdle, kCandidate, kLeader, kLost };
  enum class Event { kNone, kAcquired, kLost };

  // Borrows `client` and `clock`, which must outlive it. `random_unit` returns values in [0, 1)
  // for the acquire jitter; null means no jitter.
  LeaderElector(kube::KubeClient& client, Clock& clock, ElectionConfig config,
                std::function<double()> random_unit = nullptr);

  // One tryAcquireOrRenew at clock.Now(): true when this candidate holds the lease after it.
  // Failures (a conflict, a held lease, an unreachable server) are in last_error().
  bool TryAcquireOrRenew();

  // Starts campaigning: the first attempt is due now. Idle → candidate.
  void Start();
  // Does what is due at clock.Now(): an acquire attempt, a renewal attempt, or declaring the
  // lease lost once the renew deadline has passed. Returns kAcquired on becoming leader and
  // kLost (once; the state stays kLost) on losing the lease.
  Event Tick();
  // When the next Tick has something to do; InfiniteFuture when idle or lost.
  absl::Time next_due() const;
  // While leader: the latest time at which Tick will declare the lease lost if no renewal
  // succeeds before. A request must not run past it (see RequestDeadlineTransport).
  std::optional<absl::Time> LossDeadline() const;

  State state() const { return state_; }
  const ElectionConfig& config() const { return config_; }
  // The holder last observed (or written); "" before the first successful read.
  const std::string& observed_holder() const { return observed_.holder_identity; }
  absl::Time observed_time() const { return observed_time_; }
  const std::string& last_error() const { return last_error_; }

 private:
  bool IsLeader() const { return observed_.holder_identity == config_.identity; }
  void SetObserved(const LeaseRecord& record);

  kube::KubeClient& client_;
  Clock& clock_;
  ElectionConfig config_;
  std::function<double()> random_unit_;

  LeaseRecord observed_;
  absl::Time observed_time_ = absl::InfinitePast();
  std::string last_error_;

  State state_ = State::kIdle;
  absl::Time next_due_ = absl::InfiniteFuture();
  std::optional<absl::Time> window_deadline_;  // set while a renewal window is open
};

// Wraps a transport so that no request outlives a deadline: each request's timeout is cut to
// the time left (and a request is not sent once it has passed: DeadlineExceeded). The stand-in
// runs both of its elections on one thread, so a request for one lease must not keep the other
// from noticing in time that its renew deadline has passed. Thread-compatible.
class RequestDeadlineTransport : public kube::HttpTransport {
 public:
  // Borrows `clock`.
  RequestDeadlineTransport(std::unique_ptr<kube::HttpTransport> inner, Clock& clock)
      : inner_(std::move(inner)), clock_(clock) {}
  void set_deadline(std::optional<absl::Time> deadline) { deadline_ = deadline; }
  absl::StatusOr<kube::HttpResponse> Send(const kube::HttpRequest& request) override;

 private:
  std::unique_ptr<kube::HttpTransport> inner_;
  Clock& clock_;
  std::optional<absl::Time> deadline_;
};

}  // namespace handoff::standin

#endif  // HANDOFF_REHEARSAL_STANDIN_LEADER_ELECTOR_H_
