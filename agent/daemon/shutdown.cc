#include "agent/daemon/shutdown.h"

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

}  // namespace handoff
