// The one way handoff's daemons (handoff-agent run, handoff-coordinator, the sandbox's kubelet and
// stand-in) start and stop: SIGTERM and SIGINT are blocked before any thread starts and taken on
// a thread of their own (SignalWatcher, style rule 13); the first one logs
// "<SIGNAL>: stopping; <what stopping does>", tells the service manager STOPPING=1, requests the
// shutdown and calls the daemon's stop hook; any further one logs
// "<SIGNAL>: already stopping; <what stopping does>" and changes nothing (systemd follows a
// stop that takes too long with SIGKILL after TimeoutStopSec, an operator with kill -9).
// Readiness, status lines and the watchdog go to the service manager through a ServiceNotifier.
#ifndef HANDOFF_COMMON_SYSTEM_SERVICE_LIFECYCLE_H_
#define HANDOFF_COMMON_SYSTEM_SERVICE_LIFECYCLE_H_

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/system/service_notifier.h"
#include "common/system/shutdown_signal.h"
#include "common/system/signal_watcher.h"
#include "spdlog/logger.h"

namespace handoff {

struct ServiceLifecycleOptions {
  // Where the signal lines go: the daemon's own logger.
  std::shared_ptr<spdlog::logger> logger;
  // What a stop does, completing "SIGTERM: stopping; <stop_means>", e.g. "the pods keep running".
  std::string stop_means;
};

// Thread-safe, except Start and the destructor.
class ServiceLifecycle {
 public:
  // Blocks SIGTERM and SIGINT in the calling thread, which every thread started afterwards
  // inherits, and takes them on a thread of its own. Call it before any other thread exists
  // (gRPC's, a server's, a logger's): one that exists already would take the default action,
  // which ends the process. Borrows `notifier`, which must outlive it. An error (Internal) when
  // the signals cannot be taken.
  static absl::StatusOr<std::unique_ptr<ServiceLifecycle>> Start(ServiceLifecycleOptions options,
                                                                 ServiceNotifier& notifier);
  // Stops the signal thread and restores the calling thread's signal mask.
  ~ServiceLifecycle();

  ServiceLifecycle(const ServiceLifecycle&) = delete;
  ServiceLifecycle& operator=(const ServiceLifecycle&) = delete;

  // Requested by the first signal or by RequestShutdown; never cleared.
  const ShutdownSignal& shutdown() const { return shutdown_; }

  // What the first signal does, for a stop with another cause: `reason` takes the signal's place
  // in the log line. Idempotent like a signal.
  void RequestShutdown(std::string_view reason);

  // What a stop calls (on the signal thread, once) beyond requesting shutdown(): closing a stream,
  // waking a poll loop. Called at once, on this thread, when shutdown was already requested.
  // nullptr: nothing. Returns after a call in progress has finished, so that clearing it before
  // what it refers to goes away is safe. `on_stop` must not call SetOnStop.
  void SetOnStop(std::function<void()> on_stop);

  // READY=1 with STATUS=`status`: the daemon does its job from now on (systemd starts the units
  // ordered after it, and `systemctl start` returns). Later calls send only the status.
  void Ready(std::string_view status);
  // STATUS=`status`: what the daemon is doing, one line, as `systemctl status` shows it.
  void Status(std::string_view status);

  // WATCHDOG=1 when the service manager expects it: the caller's loop is alive. Loops that wait
  // on something of their own call it at least every watchdog_interval().
  void Alive();
  // Half of the service's WatchdogSec; absl::InfiniteDuration() without a watchdog.
  absl::Duration watchdog_interval() const { return watchdog_interval_; }
  // The main loop of a daemon whose work runs on other threads: waits until shutdown is requested
  // or `timeout` has passed, calling Alive() every watchdog_interval() meanwhile. True when
  // shutdown was requested.
  bool WaitTimeoutOrShutdown(absl::Duration timeout);

 private:
  ServiceLifecycle(ServiceLifecycleOptions options, ServiceNotifier& notifier);
  void OnSignal(std::string_view name);

  ServiceLifecycleOptions options_;
  ServiceNotifier& notifier_;
  const absl::Duration watchdog_interval_;
  ShutdownSignal shutdown_;

  std::mutex stop_mutex_;  // guards the members below; held while on_stop_ runs
  std::function<void()> on_stop_;
  bool stopping_ = false;

  std::mutex ready_mutex_;
  bool ready_ = false;

  // Last: its thread calls OnSignal, so it starts after and stops before everything above.
  std::unique_ptr<SignalWatcher> watcher_;
};

}  // namespace handoff

#endif  // HANDOFF_COMMON_SYSTEM_SERVICE_LIFECYCLE_H_
