#include "coordinator/sandbox/status_feed.h"

#include <chrono>
#include <utility>

namespace handoff::sandbox {
namespace {

// How soon a watch is tried again after its stream ended: the coordinator the sandbox restarts
// serves again within a few hundred milliseconds.
constexpr std::chrono::milliseconds kRedialWait(100);
// How often a waiter looks at `interrupted`; every new status wakes it at once.
constexpr std::chrono::milliseconds kInterruptPollInterval(200);

}  // namespace

StatusFeed::StatusFeed(std::function<std::unique_ptr<ctl::OperatorClient>()> connect)
    : connect_(std::move(connect)), thread_([this] { Loop(); }) {}

StatusFeed::~StatusFeed() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
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
  v1::StatusRequest request;
  request.set_watch(true);
  auto stopping = [this] {
    std::lock_guard<std::mutex> lock(mu_);
    return stopping_;
  };
  while (!stopping()) {
    std::unique_ptr<ctl::OperatorClient> client = connect_();
    // Whatever ended the stream (the coordinator went away, never came, or ended the watch),
    // the feed dials again: the sandbox restarts its coordinator and expects the view to follow.
    (void)client->Status(
        request,
        [this](const v1::RolloutStatus& status) {
          {
            std::lock_guard<std::mutex> lock(mu_);
            latest_ = status;
            ++latest_generation_;
          }
          cv_.notify_all();
        },
        stopping);
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_for(lock, kRedialWait, [this] { return stopping_; });
  }
}

}  // namespace handoff::sandbox
