// Time, and every wait of the product, injected through one seam: the daemons, the stand-ins and
// handoffctl wait on a real clock that a stop request wakes; tests on a fake one that never sleeps
// (tests/support/fake_clock.h).
#ifndef HANDOFF_COMMON_SYSTEM_CLOCK_H_
#define HANDOFF_COMMON_SYSTEM_CLOCK_H_

#include <memory>

#include "absl/time/time.h"
#include "common/system/shutdown_signal.h"

namespace handoff {

class Clock {
 public:
  virtual ~Clock() = default;
  virtual absl::Time Now() = 0;
  // Waits `duration` (a fake clock advances instead).
  virtual void SleepFor(absl::Duration duration) = 0;
  // Waits `duration` (nothing when it is not positive), or less when `stop` is requested
  // meanwhile. False when stopped (before or during the wait), true when the time passed. A clock
  // that a stop cannot wake (this default) waits the whole duration and looks afterwards.
  virtual bool SleepOrStop(absl::Duration duration, const ShutdownSignal& stop) {
    if (stop.Requested()) return false;
    if (duration > absl::ZeroDuration()) SleepFor(duration);
    return !stop.Requested();
  }
};

// absl::Now(); SleepOrStop wakes as soon as its stop is requested.
std::unique_ptr<Clock> NewRealClock();

}  // namespace handoff

#endif  // HANDOFF_COMMON_SYSTEM_CLOCK_H_
