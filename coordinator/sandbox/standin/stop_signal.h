// Stopping a stand-in, and the injected way it waits between lease attempts (osquery's
// requestShutdown / waitTimeoutOrShutdown): the real waiter sleeps on a condition variable that
// a stop request wakes; the test waiter advances a FakeClock instead, so tests never sleep.
#ifndef HANDOFF_COORDINATOR_SANDBOX_STANDIN_STOP_SIGNAL_H_
#define HANDOFF_COORDINATOR_SANDBOX_STANDIN_STOP_SIGNAL_H_

#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>

#include "absl/time/time.h"
#include "common/system/clock.h"
#include "common/system/shutdown_signal.h"

namespace handoff::standin {

// The stand-in's stop request: the shared shutdown signal.
using StopSignal = ::handoff::ShutdownSignal;

// How the stand-in waits.
class Sleeper {
 public:
  virtual ~Sleeper() = default;
  // Waits `duration` (nothing when it is not positive), or less when `stop` is requested
  // meanwhile. False when stopped (before or during the wait), true when the time passed.
  virtual bool SleepOrStop(absl::Duration duration, const StopSignal& stop) = 0;
};

// Real time, on the signal's condition variable.
std::unique_ptr<Sleeper> NewRealSleeper();

// For tests: advances `clock` by the duration at once, then calls `on_wake` (if set) with the new
// time, where a test makes things happen at a given moment (another candidate writes the lease,
// a stop request). Thread-compatible: one thread, the one that runs the code under test.
class FakeClockSleeper : public Sleeper {
 public:
  explicit FakeClockSleeper(FakeClock& clock, std::function<void(absl::Time now)> on_wake = nullptr)
      : clock_(clock), on_wake_(std::move(on_wake)) {}
  bool SleepOrStop(absl::Duration duration, const StopSignal& stop) override;
  void set_on_wake(std::function<void(absl::Time now)> on_wake) { on_wake_ = std::move(on_wake); }
  int sleeps() const { return sleeps_; }

 private:
  FakeClock& clock_;
  std::function<void(absl::Time now)> on_wake_;
  int sleeps_ = 0;
};

}  // namespace handoff::standin

#endif  // HANDOFF_COORDINATOR_SANDBOX_STANDIN_STOP_SIGNAL_H_
