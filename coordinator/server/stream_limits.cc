#include "coordinator/server/stream_limits.h"

#include <utility>

namespace handoff::server {

StreamLimits::StreamLimits(absl::Duration hello_deadline, size_t max_per_identity)
    : hello_deadline_(hello_deadline),
      max_per_identity_(max_per_identity),
      sweeper_([this] { Sweep(); }) {}

StreamLimits::~StreamLimits() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  changed_.notify_all();
  sweeper_.join();
}

bool StreamLimits::Admit(const std::string& identity) {
  std::lock_guard<std::mutex> lock(mu_);
  size_t& open = open_[identity];
  if (open >= max_per_identity_) {
    if (open == 0) open_.erase(identity);  // a limit of 0 admits nothing
    return false;
  }
  ++open;
  return true;
}

void StreamLimits::Release(const std::string& identity) {
  std::lock_guard<std::mutex> lock(mu_);
  auto found = open_.find(identity);
  if (found != open_.end() && --found->second == 0) open_.erase(found);
}

size_t StreamLimits::Open(const std::string& identity) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto found = open_.find(identity);
  return found == open_.end() ? 0 : found->second;
}

void StreamLimits::AwaitHello(std::function<void()> expire) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    waiting_.push_back({std::move(expire), absl::Now() + hello_deadline_});
  }
  changed_.notify_all();
}

void StreamLimits::Sweep() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stopping_) {
    if (waiting_.empty()) {
      changed_.wait(lock);
      continue;
    }
    const absl::Time deadline = waiting_.front().deadline;
    if (absl::Now() < deadline) {
      changed_.wait_until(lock, absl::ToChronoTime(deadline));
      continue;
    }
    std::function<void()> expire = std::move(waiting_.front().expire);
    waiting_.pop_front();
    lock.unlock();  // the stream takes its own locks
    expire();
    lock.lock();
  }
}

}  // namespace handoff::server
