// Stopping the agent daemon (common/system/shutdown_signal.h), and the injected way the daemon
// waits between reconnects, so that tests never sleep.
#ifndef HANDOFF_AGENT_DAEMON_SHUTDOWN_H_
#define HANDOFF_AGENT_DAEMON_SHUTDOWN_H_

#include <condition_variable>
#include <memory>
#include <mutex>
#include <vector>

#include "absl/time/time.h"
#include "common/system/shutdown_signal.h"

namespace handoff {

// How the daemon waits between connection attempts.
class Sleeper {
 public:
  virtual ~Sleeper() = default;
  // Waits `duration`, or less when `shutdown` is requested meanwhile. False when shutdown was
  // requested (before or during the wait), true when the whole duration passed.
  virtual bool SleepOrShutdown(absl::Duration duration, const ShutdownSignal& shutdown) = 0;
};

// Waits in real time on the signal's condition variable.
std::unique_ptr<Sleeper> NewRealSleeper();

// For tests: returns at once, recording each duration it was asked to wait. Thread-safe.
class FakeSleeper : public Sleeper {
 public:
  bool SleepOrShutdown(absl::Duration duration, const ShutdownSignal& shutdown) override;
  std::vector<absl::Duration> sleeps() const;

 private:
  mutable std::mutex mutex_;
  std::vector<absl::Duration> sleeps_;
};

}  // namespace handoff

#endif  // HANDOFF_AGENT_DAEMON_SHUTDOWN_H_
