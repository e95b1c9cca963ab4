#include "coordinator/sandbox/standin/stop_signal.h"

#include <algorithm>
#include <chrono>

namespace handoff::standin {
namespace {

class RealSleeper : public Sleeper {
 public:
  bool SleepOrStop(absl::Duration duration, const StopSignal& stop) override {
    return !stop.WaitTimeoutOrShutdown(duration);
  }
};

}  // namespace

std::unique_ptr<Sleeper> NewRealSleeper() { return std::make_unique<RealSleeper>(); }

bool FakeClockSleeper::SleepOrStop(absl::Duration duration, const StopSignal& stop) {
  if (stop.Requested()) return false;
  ++sleeps_;
  if (duration > absl::ZeroDuration()) clock_.Advance(duration);
  if (on_wake_) on_wake_(clock_.Now());
  return !stop.Requested();
}

}  // namespace handoff::standin
