// The clock of the tests (common/system/clock.h): time moves only when the code under test sleeps
// or the test advances it, so no test waits; the waits a stop ends are recorded, and a test may
// act at each wake. Thread-safe: the code under test may sleep on its own
// thread while the test reads what it slept.
#ifndef HANDOFF_TESTS_SUPPORT_FAKE_CLOCK_H_
#define HANDOFF_TESTS_SUPPORT_FAKE_CLOCK_H_

#include <functional>
#include <mutex>
#include <utility>
#include <vector>

#include "absl/time/time.h"
#include "common/system/clock.h"

namespace handoff {

class FakeClock : public Clock {
 public:
  explicit FakeClock(absl::Time start = absl::FromUnixSeconds(1'700'000'000)) : now_(start) {}

  absl::Time Now() override {
    std::lock_guard<std::mutex> lock(mu_);
    return now_;
  }
  // Advances by `duration` when it is positive (the kube client's retries, a poll's interval).
  void SleepFor(absl::Duration duration) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (duration > absl::ZeroDuration()) now_ += duration;
  }
  // The waits a stop ends (the daemons' reconnects, the stand-ins' lease attempts): a stop
  // already requested ends it at once, nothing recorded; otherwise time advances by `duration`
  // (when positive), the wait is recorded, and the wake hook (if set) runs with the new time —
  // where a test makes things happen at a given moment, a stop request included.
  bool SleepOrStop(absl::Duration duration, const ShutdownSignal& stop) override {
    if (stop.Requested()) return false;
    absl::Time now;
    std::function<void(absl::Time)> hook;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (duration > absl::ZeroDuration()) now_ += duration;
      sleeps_.push_back(duration);
      now = now_;
      hook = on_wake_;
    }
    if (hook) hook(now);
    return !stop.Requested();
  }

  // Moves time on without a sleep.
  void Advance(absl::Duration duration) {
    std::lock_guard<std::mutex> lock(mu_);
    now_ += duration;
  }
  // Every SleepOrStop so far, in order.
  std::vector<absl::Duration> sleeps() const {
    std::lock_guard<std::mutex> lock(mu_);
    return sleeps_;
  }
  void set_on_wake(std::function<void(absl::Time now)> hook) {
    std::lock_guard<std::mutex> lock(mu_);
    on_wake_ = std::move(hook);
  }

 private:
  mutable std::mutex mu_;
  absl::Time now_;
  std::vector<absl::Duration> sleeps_;
  std::function<void(absl::Time)> on_wake_;
};

}  // namespace handoff

#endif  // HANDOFF_TESTS_SUPPORT_FAKE_CLOCK_H_
