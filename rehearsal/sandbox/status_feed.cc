#include "rehearsal/sandbox/status_feed.h"

#include <chrono>
#include <utility>

namespace handoff::sandbox {
namespace {

// How often a waiter looks at `interrupted`; every new status wakes it at once.
constexpr std::chrono::milliseconds kInterruptPollInterval(200);

// Real time whose waits the feed's end cuts short, so that destroying the feed does not wait out
// a backoff.
class FeedClock : public Clock {
 public:
  explicit FeedClock(const ShutdownSignal& stopping) : stopping_(stopping) {}
  absl::Time Now() override { return absl::Now(); }
  void SleepFor(absl::Duration duration) override { stopping_.WaitTimeoutOrShutdown(duration); }

 private:
  const ShutdownSignal& stopping_;
};

}  // namespace

ctl::ReconnectPolicy FeedReconnectPolicy() {
  ctl::ReconnectPolicy policy;
  policy.first_backoff = absl::Milliseconds(100);
  policy.max_backoff = absl::Milliseconds(500);
  policy.give_up_after = absl::InfiniteDuration();
  policy.watch_timeout = absl::InfiniteDuration();
  policy.retry_before_first_status = true;
  policy.retry_every_end = true;
  return policy;
}

StatusFeed::StatusFeed(std::function<std::unique_ptr<ctl::OperatorClient>()> connect)
    : connect_(std::move(connect)), thread_([this] { Loop(); }) {}

StatusFeed::~StatusFeed() {
  stopping_.Request();
  thread_.join();
}

std::optional<v1::RolloutStatus> StatusFeed::WaitFor(
    const std::function<bool(const v1::RolloutStatus&)>& done, absl::Time deadline,
    const std::function<bool()>& interrupted,
    const std::function<void(const v1::RolloutStatus&)>& each) {
  std::unique_lock<std::mutex> lock(mu_);
  int64_t seen = -1;
  while (true) {
    if (latest_ && latest_generation_ != seen) {
      seen = latest_generation_;
      v1::RolloutStatus status = *latest_;
      lock.unlock();
      if (each) each(status);
      const bool finished = done(status);
      lock.lock();
      if (finished) return status;
    }
    if (absl::Now() >= deadline || interrupted()) return latest_;
    cv_.wait_for(lock, kInterruptPollInterval);
  }
}

void StatusFeed::Loop() {
  FeedClock clock(stopping_);
  // Retrying forever, the watch ends only when the feed does.
  (void)ctl::WatchStatus(
      [this](absl::Duration) { return connect_(); },
      [this](const v1::RolloutStatus& status) {
        {
          std::lock_guard<std::mutex> lock(mu_);
          latest_ = status;
          ++latest_generation_;
        }
        cv_.notify_all();
        return absl::OkStatus();
      },
      FeedReconnectPolicy(), [this] { return stopping_.Requested(); }, clock);
}

}  // namespace handoff::sandbox
