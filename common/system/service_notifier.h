// How a daemon tells the service manager that runs it what it is doing (systemd's Type=notify,
// sd_notify(3)): ready, a status line, stopping, and alive (the watchdog). The one seam for it, so
// that tests check what is sent and when (a fake records the messages).
#ifndef HANDOFF_COMMON_SYSTEM_SERVICE_NOTIFIER_H_
#define HANDOFF_COMMON_SYSTEM_SERVICE_NOTIFIER_H_

#include <memory>
#include <string>

#include "absl/time/time.h"

namespace handoff {

// Thread-safe.
class ServiceNotifier {
 public:
  virtual ~ServiceNotifier() = default;
  // One notification: newline-separated assignments in sd_notify(3)'s form, e.g.
  // "READY=1\nSTATUS=serving on port 7450". Best effort: a manager that is gone is not an error.
  virtual void Notify(const std::string& assignments) = 0;
  // How often the service must send WATCHDOG=1: half of its WatchdogSec, so that one late wake-up
  // does not get it killed; absl::InfiniteDuration() when the manager expects none.
  virtual absl::Duration WatchdogInterval() const = 0;
};

// libsystemd's sd_notify: to the datagram socket in $NOTIFY_SOCKET, nothing when it is unset (the
// daemon started by hand, by a test or by the sandbox). The watchdog interval is read once, here,
// from $WATCHDOG_USEC (sd_watchdog_enabled: only when $WATCHDOG_PID is this process). The
// variables are left in the environment, so processes the daemon starts inherit them; systemd
// takes notifications from the main process only (NotifyAccess=main).
std::unique_ptr<ServiceNotifier> NewSystemdNotifier();

// Sends nothing; no watchdog. For daemons no service manager supervises (the sandbox's).
std::unique_ptr<ServiceNotifier> NewNullNotifier();

}  // namespace handoff

#endif  // HANDOFF_COMMON_SYSTEM_SERVICE_NOTIFIER_H_
