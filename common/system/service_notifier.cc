#include "common/system/service_notifier.h"

#include <systemd/sd-daemon.h>

#include <cstdint>

namespace handoff {
namespace {

class SystemdNotifier : public ServiceNotifier {
 public:
  SystemdNotifier() {
    uint64_t usec = 0;
    if (sd_watchdog_enabled(/*unset_environment=*/0, &usec) > 0 && usec > 0) {
      watchdog_interval_ = absl::Microseconds(static_cast<int64_t>(usec)) / 2;
    }
  }

  void Notify(const std::string& assignments) override {
    // A negative result (the socket gone, the manager restarting) changes nothing for the daemon:
    // the worst outcome, a missed WATCHDOG=1, is what the watchdog is there to judge.
    (void)sd_notify(/*unset_environment=*/0, assignments.c_str());
  }

  absl::Duration WatchdogInterval() const override { return watchdog_interval_; }

 private:
  absl::Duration watchdog_interval_ = absl::InfiniteDuration();
};

class NullNotifier : public ServiceNotifier {
 public:
  void Notify(const std::string&) override {}
  absl::Duration WatchdogInterval() const override { return absl::InfiniteDuration(); }
};

}  // namespace

std::unique_ptr<ServiceNotifier> NewSystemdNotifier() {
  return std::make_unique<SystemdNotifier>();
}

std::unique_ptr<ServiceNotifier> NewNullNotifier() { return std::make_unique<NullNotifier>(); }

}  // namespace handoff
