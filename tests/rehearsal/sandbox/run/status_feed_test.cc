// The sandbox's status feed over the operator client and ctl::WatchStatus: every status reaches
// the waiter, and a watch that ends, however, is dialled again on a new client.
#include "rehearsal/sandbox/status_feed.h"

#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/ctl/watch_only_operator_client.h"

namespace handoff::sandbox {
namespace {

v1::RolloutStatus Phase(v1::RolloutStatus::Phase phase) {
  v1::RolloutStatus status;
  status.set_phase(phase);
  return status;
}

// One watch: the statuses it sends, then either the error it ends with or, when `hold`, an open
// stream until the watcher stops it.
struct Session {
  std::vector<v1::RolloutStatus> statuses;
  absl::Status end = absl::UnavailableError("the coordinator went away");
  bool hold = false;
};

class ScriptedClient : public ctl::testing::WatchOnlyOperatorClient {
 public:
  ScriptedClient(Session session, std::atomic<int>& stopped)
      : session_(std::move(session)), stopped_(stopped) {}

  absl::Status Status(const v1::StatusRequest& request,
                      const std::function<void(const v1::RolloutStatus&)>& on_status,
                      const std::function<bool()>& stop) override {
    EXPECT_TRUE(request.watch());
    for (const v1::RolloutStatus& status : session_.statuses) on_status(status);
    if (!session_.hold) return session_.end;
    // OperatorClient's contract: `stop` is polled while the stream is open.
    while (!stop()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    ++stopped_;
    return absl::OkStatus();
  }

 private:
  Session session_;
  std::atomic<int>& stopped_;
};

class StatusFeedTest : public ::testing::Test {
 protected:
  std::unique_ptr<StatusFeed> Feed(std::vector<Session> sessions) {
    sessions_ = std::move(sessions);
    return std::make_unique<StatusFeed>([this]() -> std::unique_ptr<ctl::OperatorClient> {
      std::lock_guard<std::mutex> lock(mu_);
      const size_t next = connects_++;
      // Past the script: a coordinator that never answers.
      Session session = next < sessions_.size() ? sessions_[next] : Session{{}, {}, true};
      return std::make_unique<ScriptedClient>(session, stopped_);
    });
  }
  int connects() {
    std::lock_guard<std::mutex> lock(mu_);
    return static_cast<int>(connects_);
  }

  std::mutex mu_;
  std::vector<Session> sessions_;
  size_t connects_ = 0;
  std::atomic<int> stopped_{0};
};

TEST_F(StatusFeedTest, AWatchThatBreaksIsDialledAgainAndTheWaiterSeesBothCoordinators) {
  std::unique_ptr<StatusFeed> feed =
      Feed({Session{{Phase(v1::RolloutStatus::MIGRATING)}, absl::UnavailableError("killed")},
            Session{{Phase(v1::RolloutStatus::DONE)}, {}, /*hold=*/true}});
  std::vector<v1::RolloutStatus::Phase> seen;
  std::optional<v1::RolloutStatus> done = feed->WaitFor(
      [](const v1::RolloutStatus& s) { return s.phase() == v1::RolloutStatus::DONE; },
      absl::Now() + absl::Seconds(30), [] { return false; },
      [&seen](const v1::RolloutStatus& s) { seen.push_back(s.phase()); });
  ASSERT_TRUE(done.has_value());
  EXPECT_EQ(done->phase(), v1::RolloutStatus::DONE);
  EXPECT_EQ(seen.back(), v1::RolloutStatus::DONE);
  EXPECT_EQ(connects(), 2);
  feed.reset();
  EXPECT_EQ(stopped_.load(), 1) << "the feed's end stops the open watch";
}

TEST_F(StatusFeedTest, EveryEndIsDialledAgainEvenBeforeTheFirstStatus) {
  // Unlike handoffctl's watch, the feed does not give up on a coordinator that refused it before
  // any status, nor stop when the coordinator ends the watch: the sandbox brings it up itself.
  std::unique_ptr<StatusFeed> feed =
      Feed({Session{{}, absl::PermissionDeniedError("not yet")},
            Session{{Phase(v1::RolloutStatus::MIGRATING)}, absl::OkStatus()},
            Session{{Phase(v1::RolloutStatus::DONE)}, {}, /*hold=*/true}});
  std::optional<v1::RolloutStatus> done = feed->WaitFor(
      [](const v1::RolloutStatus& s) { return s.phase() == v1::RolloutStatus::DONE; },
      absl::Now() + absl::Seconds(30), [] { return false; }, nullptr);
  ASSERT_TRUE(done.has_value());
  EXPECT_EQ(done->phase(), v1::RolloutStatus::DONE);
  EXPECT_EQ(connects(), 3);
}

TEST(FeedReconnectPolicyTest, ShortBackoffRetriedUntilStopped) {
  const ctl::ReconnectPolicy policy = FeedReconnectPolicy();
  EXPECT_LE(policy.max_backoff, absl::Seconds(1));
  EXPECT_EQ(policy.give_up_after, absl::InfiniteDuration());
  EXPECT_EQ(policy.watch_timeout, absl::InfiniteDuration());
  EXPECT_TRUE(policy.retry_before_first_status);
  EXPECT_TRUE(policy.retry_every_end);
}

TEST_F(StatusFeedTest, WithNoStatusTheWaitEndsAtItsDeadlineOrWhenInterrupted) {
  std::unique_ptr<StatusFeed> feed = Feed({});
  EXPECT_FALSE(feed->WaitFor([](const v1::RolloutStatus&) { return true; },
                             absl::Now() + absl::Milliseconds(50), [] { return false; }, nullptr)
                   .has_value());
  EXPECT_FALSE(feed->WaitFor([](const v1::RolloutStatus&) { return true; }, absl::InfiniteFuture(),
                             [] { return true; }, nullptr)
                   .has_value());
}

TEST_F(StatusFeedTest, AStatusThatIsNotTheOneAwaitedIsReturnedAtTheDeadline) {
  std::unique_ptr<StatusFeed> feed =
      Feed({Session{{Phase(v1::RolloutStatus::HALTED)}, {}, /*hold=*/true}});
  std::optional<v1::RolloutStatus> last = feed->WaitFor(
      [](const v1::RolloutStatus& s) { return s.phase() == v1::RolloutStatus::DONE; },
      absl::Now() + absl::Milliseconds(300), [] { return false; }, nullptr);
  ASSERT_TRUE(last.has_value());
  EXPECT_EQ(last->phase(), v1::RolloutStatus::HALTED);
}

}  // namespace
}  // namespace handoff::sandbox
