#include "common/system/shutdown_signal.h"

#include <algorithm>
#include <chrono>

namespace handoff {

void ShutdownSignal::Request() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    requested_ = true;
  }
  changed_.notify_all();
}

bool ShutdownSignal::Requested() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return requested_;
}

bool ShutdownSignal::WaitTimeoutOrShutdown(absl::Duration timeout) const {
  std::unique_lock<std::mutex> lock(mutex_);
  if (timeout <= absl::ZeroDuration()) return requested_;
  // Capped so that an infinite duration cannot overflow the steady clock's arithmetic.
  const auto deadline = std::chrono::steady_clock::now() +
                        absl::ToChronoNanoseconds(std::min(timeout, absl::Hours(24 * 365)));
  return changed_.wait_until(lock, deadline, [this] { return requested_; });
}

}  // namespace handoff
