// The one backoff of handoff's reconnect and retry loops: the agent redialling the coordinator,
// a Status watch (handoffctl, the sandbox's status feed) redialling it, and the Kubernetes client
// retrying a request. Pure: the caller waits, and brings the randomness.
#ifndef HANDOFF_COMMON_SYSTEM_BACKOFF_H_
#define HANDOFF_COMMON_SYSTEM_BACKOFF_H_

#include "absl/time/time.h"

namespace handoff {

// Exponential backoff with jitter: the first wait is drawn from [initial/2, initial], and each
// later one from [step/2, step] where the step doubles up to `max`. Reset() goes back to
// `initial` (after a connection that worked). `initial` is at least 1ms; a `max` below it is
// `initial`. Thread-compatible.
class Backoff {
 public:
  Backoff(absl::Duration initial, absl::Duration max);

  // `unit` in [0, 1] (clamped): where in the jitter range this wait falls. 0 gives the lower end
  // (half the step), 1 the step itself: kNoJitter makes the plain doubling, for a loop that
  // nothing else retries in step with (one operator's watch, one client's request).
  absl::Duration Next(double unit);
  void Reset();

  static constexpr double kNoJitter = 1.0;

 private:
  absl::Duration initial_;
  absl::Duration max_;
  absl::Duration step_;
};

}  // namespace handoff

#endif  // HANDOFF_COMMON_SYSTEM_BACKOFF_H_
