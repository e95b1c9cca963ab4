// SIGTERM and SIGINT taken on one thread (signalfd), so that no work happens in a signal handler
// and shutdown is an ordinary call on an ordinary thread (style rule 13).
#ifndef HANDOFF_COMMON_SYSTEM_SIGNAL_WATCHER_H_
#define HANDOFF_COMMON_SYSTEM_SIGNAL_WATCHER_H_

#include <signal.h>

#include <functional>
#include <thread>

#include "absl/status/statusor.h"

namespace handoff {

class SignalWatcher {
 public:
  // Blocks SIGTERM and SIGINT in the calling thread, which every thread it creates afterwards
  // inherits, and starts a thread that calls `on_signal` (with the signal number) for each one
  // that arrives. Create it before any other thread (gRPC's included): a thread that existed
  // before would still take the default action, which ends the process.
  static absl::StatusOr<std::unique_ptr<SignalWatcher>> Start(std::function<void(int)> on_signal);

  // Stops the thread and restores the calling thread's signal mask.
  ~SignalWatcher();

  SignalWatcher(const SignalWatcher&) = delete;
  SignalWatcher& operator=(const SignalWatcher&) = delete;

 private:
  SignalWatcher(int signal_fd, int wake_fd, sigset_t previous, std::function<void(int)> on_signal);
  void Loop();

  int signal_fd_;
  int wake_fd_;  // an eventfd written to stop the thread
  sigset_t previous_;
  std::function<void(int)> on_signal_;
  std::thread thread_;
};

}  // namespace handoff

#endif  // HANDOFF_COMMON_SYSTEM_SIGNAL_WATCHER_H_
