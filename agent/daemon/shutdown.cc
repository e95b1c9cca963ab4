#include "agent/daemon/shutdown.h"

#include <algorithm>
#include <chrono>

namespace handoff {
namespace {

class RealSleeper : public Sleeper {
 public:
  bool SleepOrShutdown(absl::Duration duration, const ShutdownSignal& shutdown) override {
    return !shutdown.WaitTimeoutOrShutdown(duration);
  }
};

}  // namespace

std::unique_ptr<Sleeper> NewRealSleeper() { return std::make_unique<RealSleeper>(); }

bool FakeSleeper::SleepOrShutdown(absl::Duration duration, const ShutdownSignal& shutdown) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    sleeps_.push_back(duration);
  }
  return !shutdown.Requested();
}

std::vector<absl::Duration> FakeSleeper::sleeps() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return sleeps_;
}

ReconnectBackoff::ReconnectBackoff(absl::Duration initial, absl::Duration max)
    : initial_(std::max(initial, absl::Milliseconds(1))),
      max_(std::max(max, initial_)),
      step_(initial_) {}

absl::Duration ReconnectBackoff::Next(double unit) {
  unit = std::clamp(unit, 0.0, 1.0);
  // Half the step is fixed and half is random: agents that lost the coordinator together spread
  // out, yet none retries in a tight loop.
  const absl::Duration wait = step_ / 2 + (step_ / 2) * unit;
  step_ = std::min(step_ * 2, max_);
  return wait;
}

void ReconnectBackoff::Reset() { step_ = initial_; }

}  // namespace handoff
