// Bounds what agents' streams can cost the coordinator: a deadline for each stream's hello, and
// how many streams one client certificate may hold open at once. Without them, one certificate
// held 20,000 streams that never said hello (30 MB of coordinator memory became 450 MB).
#ifndef HANDOFF_COORDINATOR_SERVER_STREAM_LIMITS_H_
#define HANDOFF_COORDINATOR_SERVER_STREAM_LIMITS_H_

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>

#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace handoff::server {

class StreamLimits {
 public:
  // Starts the thread that runs the hello deadlines.
  StreamLimits(absl::Duration hello_deadline, size_t max_per_identity);
  // Stops it; deadlines not reached yet are dropped.
  ~StreamLimits();
  StreamLimits(const StreamLimits&) = delete;
  StreamLimits& operator=(const StreamLimits&) = delete;

  // A new stream of `identity` (a certificate's CN): false, refuse it, when that identity already
  // has max_per_identity streams open. Each admitted stream is released once.
  bool Admit(const std::string& identity);
  void Release(const std::string& identity);
  // Streams of `identity` open now.
  size_t Open(const std::string& identity) const;

  // Calls `expire` once the hello deadline has passed from now, on the limits' own thread; the
  // stream decides then whether it said hello (a stream that did, or that ended, ignores it).
  void AwaitHello(std::function<void()> expire);

  size_t max_per_identity() const { return max_per_identity_; }

 private:
  struct Waiting {
    std::function<void()> expire;
    absl::Time deadline;
  };
  void Sweep();

  const absl::Duration hello_deadline_;
  const size_t max_per_identity_;
  mutable std::mutex mu_;
  std::condition_variable changed_;
  std::map<std::string, size_t> open_;  // identity → streams open; no entry for none
  // Every stream gets the same deadline, so the queue is in deadline order.
  std::deque<Waiting> waiting_;
  bool stopping_ = false;
  std::thread sweeper_;  // last: started once the members above exist
};

}  // namespace handoff::server

#endif  // HANDOFF_COORDINATOR_SERVER_STREAM_LIMITS_H_
