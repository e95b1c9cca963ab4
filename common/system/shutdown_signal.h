// One stop request every thread can wait on (osquery's requestShutdown /
// waitTimeoutOrShutdown): the agent daemon, the coordinator and the sandbox's stand-ins stop
// their loops with it instead of ad-hoc flags.
#ifndef HANDOFF_COMMON_SYSTEM_SHUTDOWN_SIGNAL_H_
#define HANDOFF_COMMON_SYSTEM_SHUTDOWN_SIGNAL_H_

#include <condition_variable>
#include <mutex>

#include "absl/time/time.h"

namespace handoff {

// Set once, never cleared. Thread-safe. Not async-signal-safe: signals reach it through a thread
// that waits for them (sigwait/signalfd), never from a handler.
class ShutdownSignal {
 public:
  // Idempotent; wakes every waiter.
  void Request();
  bool Requested() const;
  // Blocks until Request() or until `timeout` has passed (real time). True when shutdown was
  // requested.
  bool WaitTimeoutOrShutdown(absl::Duration timeout) const;

 private:
  mutable std::mutex mutex_;
  mutable std::condition_variable changed_;
  bool requested_ = false;
};

}  // namespace handoff

#endif  // HANDOFF_COMMON_SYSTEM_SHUTDOWN_SIGNAL_H_
