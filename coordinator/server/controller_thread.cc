#include "coordinator/server/controller_thread.h"

#include <utility>

namespace handoff::server {

ControllerThread::ControllerThread() : thread_([this] { Run(); }) {}

ControllerThread::~ControllerThread() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  posted_.notify_one();
  thread_.join();
}

void ControllerThread::Post(std::function<void()> work) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.push_back(std::move(work));
  }
  posted_.notify_one();
}

void ControllerThread::Run() {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    posted_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopping, and nothing left
    std::function<void()> work = std::move(queue_.front());
    queue_.pop_front();
    lock.unlock();
    work();
    lock.lock();
  }
}

}  // namespace handoff::server
