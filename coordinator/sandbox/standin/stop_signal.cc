#include "coordinator/sandbox/standin/stop_signal.h"

#include <algorithm>
#include <chrono>

namespace handoff::standin {
namespace {

class RealSleeper : public Sleeper {
 public:
  bool SleepOrStop(absl::Duration duration, const StopSignal& stop) override {
    return !stop.WaitFor(duration);
  }
};

}  // namespace

void StopSignal::Request() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    requested_ = true;
  }
  changed_.notify_all();
}

bool StopSignal::Requested() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return requested_;
}

bool StopSignal::WaitFor(absl::Duration timeout) const {
  std::unique_lock<std::mutex> lock(mutex_);
  if (timeout <= absl::ZeroDuration()) return requested_;
  // Capped so that an infinite duration cannot overflow the steady clock's arithmetic.
  const auto deadline = std::chrono::steady_clock::now() +
                        absl::ToChronoNanoseconds(std::min(timeout, absl::Hours(24 * 365)));
  return changed_.wait_until(lock, deadline, [this] { return requested_; });
}

std::unique_ptr<Sleeper> NewRealSleeper() { return std::make_unique<RealSleeper>(); }

bool FakeClockSleeper::SleepOrStop(absl::Duration duration, const StopSignal& stop) {
  if (stop.Requested()) return false;
  ++sleeps_;
  if (duration > absl::ZeroDuration()) clock_.Advance(duration);
  if (on_wake_) on_wake_(clock_.Now());
  return !stop.Requested();
}

}  // namespace handoff::standin
