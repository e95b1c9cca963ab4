// A clock for handoffctl commands that wait (status --watch, rancher check ccm --wait): it
// forwards to the test's FakeClock, and each sleep advances it and lets the test move the cluster
// on, so a polling command runs through its whole wait without real time passing.
#ifndef HANDOFF_TESTS_CTL_SCRIPTED_CLOCK_H_
#define HANDOFF_TESTS_CTL_SCRIPTED_CLOCK_H_

#include <functional>

#include "absl/time/time.h"
#include "common/system/clock.h"
#include "tests/support/fake_clock.h"

namespace handoff::testing {

class ScriptedClock : public Clock {
 public:
  // Borrows both; `on_sleep` may be empty, and may be set after construction.
  ScriptedClock(FakeClock& clock, std::function<void(absl::Time)>& on_sleep)
      : clock_(clock), on_sleep_(on_sleep) {}
  absl::Time Now() override { return clock_.Now(); }
  void SleepFor(absl::Duration duration) override {
    clock_.Advance(duration);
    if (on_sleep_) on_sleep_(clock_.Now());
  }

 private:
  FakeClock& clock_;
  std::function<void(absl::Time)>& on_sleep_;
};

}  // namespace handoff::testing

#endif  // HANDOFF_TESTS_CTL_SCRIPTED_CLOCK_H_
