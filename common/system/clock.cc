#include "common/system/clock.h"

#include "absl/time/clock.h"

namespace handoff {
namespace {

class RealClock : public Clock {
 public:
  absl::Time Now() override { return absl::Now(); }
  void SleepFor(absl::Duration duration) override { absl::SleepFor(duration); }
  bool SleepOrStop(absl::Duration duration, const ShutdownSignal& stop) override {
    return !stop.WaitTimeoutOrShutdown(duration);
  }
};

}  // namespace

std::unique_ptr<Clock> NewRealClock() { return std::make_unique<RealClock>(); }

}  // namespace handoff
