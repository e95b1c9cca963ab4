// Time, injected: the agent's waits run on a real clock, tests on a fake one that never sleeps.
#ifndef HANDOFF_COMMON_SYSTEM_CLOCK_H_
#define HANDOFF_COMMON_SYSTEM_CLOCK_H_

#include <memory>

#include "absl/time/time.h"

namespace handoff {

class Clock {
 public:
  virtual ~Clock() = default;
  virtual absl::Time Now() = 0;
  // Waits `duration` (a fake clock advances instead).
  virtual void SleepFor(absl::Duration duration) = 0;
};

std::unique_ptr<Clock> NewRealClock();

// Starts at `start`; SleepFor advances Now() at once. Thread-compatible.
class FakeClock : public Clock {
 public:
  explicit FakeClock(absl::Time start = absl::FromUnixSeconds(1'700'000'000)) : now_(start) {}
  absl::Time Now() override { return now_; }
  void SleepFor(absl::Duration duration) override { now_ += duration; }
  void Advance(absl::Duration duration) { now_ += duration; }

 private:
  absl::Time now_;
};

}  // namespace handoff

#endif  // HANDOFF_COMMON_SYSTEM_CLOCK_H_
