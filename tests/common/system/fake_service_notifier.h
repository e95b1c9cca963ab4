// A ServiceNotifier that records what a daemon tells systemd, for tests that check when readiness,
// status, stopping and the watchdog are sent; and a log sink to wait on a daemon's log lines.
#ifndef HANDOFF_TESTS_COMMON_SYSTEM_FAKE_SERVICE_NOTIFIER_H_
#define HANDOFF_TESTS_COMMON_SYSTEM_FAKE_SERVICE_NOTIFIER_H_

#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "common/system/service_notifier.h"
#include "spdlog/details/null_mutex.h"
#include "spdlog/sinks/base_sink.h"

namespace handoff::testing {

// Thread-safe, as the interface asks.
class FakeServiceNotifier : public ServiceNotifier {
 public:
  explicit FakeServiceNotifier(absl::Duration watchdog_interval = absl::InfiniteDuration())
      : watchdog_interval_(watchdog_interval) {}

  // Called after each notification is recorded, outside the lock (a test reacts to READY=1 there).
  void set_on_notify(std::function<void(const std::string&)> on_notify) {
    std::lock_guard<std::mutex> lock(mutex_);
    on_notify_ = std::move(on_notify);
  }

  void Notify(const std::string& assignments) override {
    std::function<void(const std::string&)> on_notify;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      sent_.push_back(assignments);
      on_notify = on_notify_;
    }
    changed_.notify_all();
    if (on_notify) on_notify(assignments);
  }
  absl::Duration WatchdogInterval() const override { return watchdog_interval_; }

  std::vector<std::string> sent() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return sent_;
  }
  // Waits until a notification holds `text`; false after `timeout`.
  bool WaitFor(const std::string& text, absl::Duration timeout = absl::Seconds(30)) const {
    std::unique_lock<std::mutex> lock(mutex_);
    return changed_.wait_for(lock, absl::ToChronoNanoseconds(timeout), [&] {
      for (const std::string& sent : sent_) {
        if (sent.find(text) != std::string::npos) return true;
      }
      return false;
    });
  }

 private:
  const absl::Duration watchdog_interval_;
  mutable std::mutex mutex_;
  mutable std::condition_variable changed_;
  std::vector<std::string> sent_;
  std::function<void(const std::string&)> on_notify_;
};

// Keeps every formatted log line; WaitFor blocks until one holds a text.
class RecordingSink : public spdlog::sinks::base_sink<spdlog::details::null_mutex> {
 public:
  std::vector<std::string> lines() const {
    std::lock_guard<std::mutex> lock(lines_mutex_);
    return lines_;
  }
  bool WaitFor(const std::string& text, absl::Duration timeout = absl::Seconds(30)) const {
    std::unique_lock<std::mutex> lock(lines_mutex_);
    return changed_.wait_for(lock, absl::ToChronoNanoseconds(timeout), [&] {
      for (const std::string& line : lines_) {
        if (line.find(text) != std::string::npos) return true;
      }
      return false;
    });
  }

 protected:
  void sink_it_(const spdlog::details::log_msg& message) override {
    {
      std::lock_guard<std::mutex> lock(lines_mutex_);
      lines_.emplace_back(message.payload.data(), message.payload.size());
    }
    changed_.notify_all();
  }
  void flush_() override {}

 private:
  mutable std::mutex lines_mutex_;
  mutable std::condition_variable changed_;
  std::vector<std::string> lines_;
};

}  // namespace handoff::testing

#endif  // HANDOFF_TESTS_COMMON_SYSTEM_FAKE_SERVICE_NOTIFIER_H_
