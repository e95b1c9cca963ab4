// The rollout controller's own thread: the gRPC reactions post their work here and return, so
// no reactor thread waits on the controller's mutex or on the store's fsync. Work runs one piece
// at a time, in the order posted: an agent's messages reach the controller in the order it sent
// them, and one slow commit delays the controller's next event, never a stream's transport.
#ifndef HANDOFF_COORDINATOR_SERVER_CONTROLLER_THREAD_H_
#define HANDOFF_COORDINATOR_SERVER_CONTROLLER_THREAD_H_

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

namespace handoff::server {

class ControllerThread {
 public:
  ControllerThread();
  // Runs what is still queued, then stops the thread.
  ~ControllerThread();
  ControllerThread(const ControllerThread&) = delete;
  ControllerThread& operator=(const ControllerThread&) = delete;

  // Queues `work`; never waits for it.
  void Post(std::function<void()> work);

 private:
  void Run();

  std::mutex mu_;
  std::condition_variable posted_;
  std::deque<std::function<void()>> queue_;
  bool stopping_ = false;
  std::thread thread_;  // last: started once the members above exist
};

}  // namespace handoff::server

#endif  // HANDOFF_COORDINATOR_SERVER_CONTROLLER_THREAD_H_
