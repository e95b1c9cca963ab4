// Stopping the agent daemon (agent/system/shutdown_signal.h), and the injected way the daemon
// waits between reconnects, so that tests never sleep.
#ifndef HANDOFF_AGENT_DAEMON_SHUTDOWN_H_
#define HANDOFF_AGENT_DAEMON_SHUTDOWN_H_

#include <condition_variable>
#include <memory>
#include <mutex>
#include <vector>

#include "absl/time/time.h"
#include "agent/system/shutdown_signal.h"

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

// Exponential backoff with jitter for reconnecting: the first wait is drawn from
// [initial/2, initial), and each later one from [step/2, step) where the step doubles up to `max`.
// Reset() goes back to `initial` (after the coordinator welcomed the agent). Pure; the caller
// brings the randomness. Thread-compatible.
class ReconnectBackoff {
 public:
  ReconnectBackoff(absl::Duration initial, absl::Duration max);
  // `unit` in [0, 1): where in the jitter range this wait falls.
  absl::Duration Next(double unit);
  void Reset();

 private:
  absl::Duration initial_;
  absl::Duration max_;
  absl::Duration step_;
};

}  // namespace handoff

#endif  // HANDOFF_AGENT_DAEMON_SHUTDOWN_H_
