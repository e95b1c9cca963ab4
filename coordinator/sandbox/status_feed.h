// The coordinator's rollout status as the sandbox's operator sees it: a `status --watch` on a
// thread of its own, through the same OperatorClient as handoffctl (coordinator/ctl/
// coordinator_client.h), that dials again whenever the stream ends (a coordinator restarted,
// killed or not yet up) until the feed is destroyed. Waited on, not polled.
#ifndef HANDOFF_COORDINATOR_SANDBOX_STATUS_FEED_H_
#define HANDOFF_COORDINATOR_SANDBOX_STATUS_FEED_H_

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

#include "absl/time/time.h"
#include "coordinator/ctl/coordinator_client.h"
#include "handoff/v1/handoff.pb.h"

namespace handoff::sandbox {

class StatusFeed {
 public:
  // `connect` makes a new client for each watch (a new channel, so a restarted coordinator is
  // dialled afresh); it is called on the feed's thread only.
  explicit StatusFeed(std::function<std::unique_ptr<ctl::OperatorClient>()> connect);
  // Ends the watch under way (within the client's stop interval) and joins the thread.
  ~StatusFeed();
  StatusFeed(const StatusFeed&) = delete;
  StatusFeed& operator=(const StatusFeed&) = delete;

  // Waits until `done` holds for a status, `deadline` passes, or `interrupted` returns true;
  // calls `each` (if set) with every new status first, on the calling thread. Returns the last
  // status seen, which satisfies `done` when the wait ended for that reason; std::nullopt when
  // the coordinator never sent one. One waiter at a time.
  std::optional<v1::RolloutStatus> WaitFor(
      const std::function<bool(const v1::RolloutStatus&)>& done, absl::Time deadline,
      const std::function<bool()>& interrupted,
      const std::function<void(const v1::RolloutStatus&)>& each);

 private:
  void Loop();

  std::function<std::unique_ptr<ctl::OperatorClient>()> connect_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::optional<v1::RolloutStatus> latest_;
  int64_t latest_generation_ = 0;
  bool stopping_ = false;
  std::thread thread_;  // last: starts once the rest is constructed
};

}  // namespace handoff::sandbox

#endif  // HANDOFF_COORDINATOR_SANDBOX_STATUS_FEED_H_
