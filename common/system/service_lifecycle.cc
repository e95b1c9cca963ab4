#include "common/system/service_lifecycle.h"

#include <signal.h>

#include <algorithm>
#include <chrono>
#include <utility>

#include "common/base/strings.h"

namespace handoff {
namespace {

std::string SignalName(int signal) {
  switch (signal) {
    case SIGTERM:
      return "SIGTERM";
    case SIGINT:
      return "SIGINT";
    default:
      return StrCat("signal ", signal);
  }
}

// sd_notify's assignments are newline-separated: a status is one line.
std::string OneLine(std::string_view text) {
  std::string line(text);
  std::replace(line.begin(), line.end(), '\n', ' ');
  return line;
}

}  // namespace

absl::StatusOr<std::unique_ptr<ServiceLifecycle>> ServiceLifecycle::Start(
    ServiceLifecycleOptions options, ServiceNotifier& notifier) {
  std::unique_ptr<ServiceLifecycle> lifecycle(new ServiceLifecycle(std::move(options), notifier));
  ServiceLifecycle* self = lifecycle.get();
  absl::StatusOr<std::unique_ptr<SignalWatcher>> watcher =
      SignalWatcher::Start([self](int signal) { self->OnSignal(SignalName(signal)); });
  if (!watcher.ok()) return watcher.status();
  lifecycle->watcher_ = *std::move(watcher);
  return lifecycle;
}

ServiceLifecycle::ServiceLifecycle(ServiceLifecycleOptions options, ServiceNotifier& notifier)
    : options_(std::move(options)),
      notifier_(notifier),
      watchdog_interval_(notifier.WatchdogInterval()) {}

ServiceLifecycle::~ServiceLifecycle() { watcher_.reset(); }

void ServiceLifecycle::RequestShutdown(std::string_view reason) { OnSignal(reason); }

void ServiceLifecycle::OnSignal(std::string_view name) {
  std::lock_guard<std::mutex> lock(stop_mutex_);
  if (stopping_) {
    options_.logger->info("{}: already stopping; {}", name, options_.stop_means);
    return;
  }
  stopping_ = true;
  options_.logger->info("{}: stopping; {}", name, options_.stop_means);
  // Told before the work of stopping begins, so that systemd applies TimeoutStopSec from here
  // rather than taking the exit that follows for a crash.
  notifier_.Notify(
      StrCat("STOPPING=1\nSTATUS=", OneLine(StrCat("stopping; ", options_.stop_means))));
  shutdown_.Request();
  if (on_stop_) on_stop_();
}

void ServiceLifecycle::SetOnStop(std::function<void()> on_stop) {
  std::lock_guard<std::mutex> lock(stop_mutex_);
  on_stop_ = std::move(on_stop);
  if (stopping_ && on_stop_) on_stop_();
}

void ServiceLifecycle::Ready(std::string_view status) {
  std::lock_guard<std::mutex> lock(ready_mutex_);
  if (ready_) {
    notifier_.Notify(StrCat("STATUS=", OneLine(status)));
    return;
  }
  ready_ = true;
  notifier_.Notify(StrCat("READY=1\nSTATUS=", OneLine(status)));
}

void ServiceLifecycle::Status(std::string_view status) {
  notifier_.Notify(StrCat("STATUS=", OneLine(status)));
}

void ServiceLifecycle::Alive() {
  if (watchdog_interval_ == absl::InfiniteDuration()) return;
  notifier_.Notify("WATCHDOG=1");
}

bool ServiceLifecycle::WaitTimeoutOrShutdown(absl::Duration timeout) {
  if (watchdog_interval_ == absl::InfiniteDuration()) {
    return shutdown_.WaitTimeoutOrShutdown(timeout);
  }
  // Steady time, so that a clock step neither starves the watchdog nor ends the wait early.
  const auto start = std::chrono::steady_clock::now();
  const absl::Duration capped = std::min(timeout, absl::Hours(24 * 365));
  while (true) {
    const absl::Duration waited = absl::FromChrono(std::chrono::steady_clock::now() - start);
    if (waited >= capped) return shutdown_.Requested();
    if (shutdown_.WaitTimeoutOrShutdown(std::min(capped - waited, watchdog_interval_))) {
      return true;
    }
    Alive();
  }
}

}  // namespace handoff
