// The coordinator's rollout status as the sandbox's operator sees it: a `status --watch` on a
// thread of its own, through the same client and the same reconnecting watch as handoffctl
// (ctl::WatchStatus in coordinator/client/coordinator_client.h), with the sandbox's policy: it
// dials again whenever the stream ends (a coordinator restarted, killed or not yet up), after a
// short backoff (FeedReconnectPolicy), until the feed is destroyed. Waited on, not polled.
#ifndef HANDOFF_REHEARSAL_SANDBOX_STATUS_FEED_H_
#define HANDOFF_REHEARSAL_SANDBOX_STATUS_FEED_H_

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

#include "absl/time/time.h"
#include "common/system/shutdown_signal.h"
#include "coordinator/client/coordinator_client.h"
#include "handoff/v1/handoff.pb.h"

namespace handoff::sandbox {

// The sandbox's reconnect policy: the coordinator it restarts serves again within a few hundred
// milliseconds, so the backoff stays short; and since the sandbox itself brings the coordinator
// up, whatever ends a stream (not up yet, killed, stopped) is dialled again, until the feed ends.
ctl::ReconnectPolicy FeedReconnectPolicy();

class StatusFeed {
 public:
  // `connect` makes a new client for each watch (a new channel, so a restarted coordinator is
  // dialled afresh); it is called on the feed's thread only.
  explicit StatusFeed(std::function<std::unique_ptr<ctl::OperatorClient>()> connect);
  // Ends the watch under way (within the client's stop interval; a wait between tries at once)
  // and joins the thread.
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
  ShutdownSignal stopping_;
  std::thread thread_;  // last: starts once the rest is constructed
};

}  // namespace handoff::sandbox

#endif  // HANDOFF_REHEARSAL_SANDBOX_STATUS_FEED_H_
