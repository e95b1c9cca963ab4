// WatchStatus, the status watch that outlives its coordinator (handoffctl status --watch and the
// sandbox's feed), against scripted streams and a fake clock: which ends it redials, after which
// waits, when it gives up, and how a stop ends it. Nothing here sleeps.
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "coordinator/client/coordinator_client.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/ctl/watch_only_operator_client.h"

namespace handoff::ctl {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

v1::RolloutStatus Revision(int64_t revision) {
  v1::RolloutStatus status;
  status.set_revision(revision);
  return status;
}

// One stream: the statuses it sends, then how it ends. With `hold`, it stays open after the
// statuses until its `stop` says so, then ends OK (the client's contract).
struct Stream {
  std::vector<v1::RolloutStatus> statuses;
  absl::Status end = absl::UnavailableError("Socket closed");
  bool hold = false;
};

class ScriptedClient : public testing::WatchOnlyOperatorClient {
 public:
  explicit ScriptedClient(Stream stream) : stream_(std::move(stream)) {}

  absl::Status Status(const v1::StatusRequest& request,
                      const std::function<void(const v1::RolloutStatus&)>& on_status,
                      const std::function<bool()>& stop) override {
    if (!request.watch()) return absl::InternalError("fake: the watch was not asked for");
    for (const v1::RolloutStatus& status : stream_.statuses) {
      on_status(status);
      // A stream stops between two statuses once told to.
      if (stop()) return absl::OkStatus();
    }
    if (!stream_.hold) return stream_.end;
    if (!stop()) return absl::InternalError("fake: the held stream was not stopped");
    return absl::OkStatus();
  }

 private:
  Stream stream_;
};

// A fake clock that records each wait.
class RecordingClock : public Clock {
 public:
  absl::Time Now() override { return now_; }
  void SleepFor(absl::Duration duration) override {
    sleeps.push_back(duration);
    now_ += duration;
  }
  absl::Duration Elapsed() const { return now_ - kStart; }

  std::vector<absl::Duration> sleeps;

 private:
  static constexpr absl::Time kStart = absl::FromUnixSeconds(1'700'000'000);
  absl::Time now_ = kStart;
};

class StatusWatchTest : public ::testing::Test {
 protected:
  // Runs the watch over `streams`, one per connection; past the script, every connection is
  // refused.
  WatchOutcome Watch(std::deque<Stream> streams, const ReconnectPolicy& policy,
                     std::function<bool()> stop = [] { return false; }) {
    streams_ = std::move(streams);
    WatchEvents events;
    events.lost = [this](const absl::Status& ended) {
      log_.push_back("lost: " + std::string(ended.message()));
    };
    events.reconnected = [this](absl::Duration outage) {
      log_.push_back("reconnected after " + absl::FormatDuration(outage));
    };
    return WatchStatus(
        [this](absl::Duration watch_left) -> std::unique_ptr<OperatorClient> {
          connects_.push_back(clock_.Elapsed());
          watch_left_.push_back(watch_left);
          if (streams_.empty()) {
            return std::make_unique<ScriptedClient>(
                Stream{{}, absl::UnavailableError("Connection refused")});
          }
          Stream next = streams_.front();
          streams_.pop_front();
          return std::make_unique<ScriptedClient>(next);
        },
        [this](const v1::RolloutStatus& status) {
          log_.push_back("status " + std::to_string(status.revision()));
          return absl::OkStatus();
        },
        policy, stop, clock_, events);
  }

  RecordingClock clock_;
  std::deque<Stream> streams_;
  std::vector<absl::Duration> connects_;    // when each connection was made
  std::vector<absl::Duration> watch_left_;  // what each was told is left of the watch
  std::vector<std::string> log_;
};

TEST_F(StatusWatchTest, BackoffDoublesUpToItsLongestAndStartsOverAfterAStatus) {
  ReconnectPolicy policy;
  policy.first_backoff = absl::Milliseconds(250);
  policy.max_backoff = absl::Seconds(1);
  policy.stop_poll_interval = absl::Seconds(10);  // one sleep per wait, to read them off
  policy.watch_timeout = absl::Hours(1);
  WatchOutcome outcome = Watch(
      {
          Stream{{Revision(1)}},
          Stream{}, Stream{}, Stream{}, Stream{},  // after 250ms, 500ms, 1s and 1s: broken
          Stream{{Revision(2)}},                   // 1s more: back, then lost again
          Stream{},                                // 250ms: the backoff started over
          Stream{{Revision(3)}, absl::OkStatus()}, // 500ms; then the coordinator ends the watch
      },
      policy);
  EXPECT_EQ(outcome.end, WatchOutcome::End::kEnded);
  EXPECT_EQ(outcome.statuses, 3);
  EXPECT_THAT(clock_.sleeps,
              ElementsAre(absl::Milliseconds(250), absl::Milliseconds(500), absl::Seconds(1),
                          absl::Seconds(1), absl::Seconds(1), absl::Milliseconds(250),
                          absl::Milliseconds(500)));
  EXPECT_THAT(log_, ElementsAre("status 1", "lost: Socket closed", "reconnected after 3.75s",
                                "status 2", "lost: Socket closed", "reconnected after 750ms",
                                "status 3"));
  // Each new connection is told what is left of the hour.
  ASSERT_EQ(watch_left_.size(), 8u);
  EXPECT_EQ(watch_left_[0], absl::Hours(1));
  EXPECT_EQ(watch_left_[1], absl::Hours(1) - absl::Milliseconds(250));
  EXPECT_EQ(watch_left_[7], absl::Hours(1) - clock_.Elapsed());
}

TEST_F(StatusWatchTest, GivesUpWhenTheOutageOutlastsItsWindow) {
  ReconnectPolicy policy;
  policy.give_up_after = absl::Seconds(10);
  WatchOutcome outcome = Watch({Stream{{Revision(1)}}}, policy);
  EXPECT_EQ(outcome.end, WatchOutcome::End::kGaveUp);
  EXPECT_EQ(outcome.error, absl::UnavailableError("Connection refused"));
  EXPECT_EQ(outcome.outage, absl::Seconds(10));
  EXPECT_EQ(outcome.statuses, 1);
  // Tries after 0.25, 0.75, 1.75, 3.75, 7.75 and (the last wait cut short) 10 seconds.
  EXPECT_THAT(connects_, ElementsAre(absl::ZeroDuration(), absl::Milliseconds(250),
                                     absl::Milliseconds(750), absl::Milliseconds(1750),
                                     absl::Milliseconds(3750), absl::Milliseconds(7750),
                                     absl::Seconds(10)));
  // No single wait is longer than the stop poll interval.
  for (absl::Duration sleep : clock_.sleeps) EXPECT_LE(sleep, policy.stop_poll_interval);
}

TEST_F(StatusWatchTest, ZeroWindowMeansABrokenStreamIsNotDialledAgain) {
  ReconnectPolicy policy;
  policy.give_up_after = absl::ZeroDuration();
  WatchOutcome outcome = Watch({Stream{{Revision(1)}}}, policy);
  EXPECT_EQ(outcome.end, WatchOutcome::End::kFailed);
  EXPECT_EQ(outcome.error, absl::UnavailableError("Socket closed"));
  EXPECT_EQ(connects_.size(), 1u);
  EXPECT_THAT(log_, ElementsAre("status 1"));
}

TEST_F(StatusWatchTest, BeforeTheFirstStatusItRetriesOnlyWhenThePolicySays) {
  ReconnectPolicy policy;
  WatchOutcome refused = Watch({}, policy);
  EXPECT_EQ(refused.end, WatchOutcome::End::kFailed);
  EXPECT_EQ(refused.error, absl::UnavailableError("Connection refused"));
  EXPECT_EQ(connects_.size(), 1u);
  EXPECT_THAT(clock_.sleeps, IsEmpty());
  EXPECT_THAT(log_, IsEmpty());

  connects_.clear();
  policy.retry_before_first_status = true;
  WatchOutcome waited =
      Watch({Stream{}, Stream{}, Stream{{Revision(4)}, absl::OkStatus()}}, policy);
  EXPECT_EQ(waited.end, WatchOutcome::End::kEnded);
  EXPECT_EQ(connects_.size(), 3u);
  EXPECT_THAT(log_, ElementsAre("lost: Socket closed", "reconnected after 750ms", "status 4"));
}

TEST_F(StatusWatchTest, OnlyAnOutageIsRetriedUnlessEveryEndIs) {
  ReconnectPolicy policy;
  const absl::Status refused = absl::PermissionDeniedError("not an operator certificate");
  WatchOutcome failed = Watch({Stream{{Revision(1)}, refused}}, policy);
  EXPECT_EQ(failed.end, WatchOutcome::End::kFailed);
  EXPECT_EQ(failed.error, refused);
  EXPECT_EQ(connects_.size(), 1u);

  // The sandbox's stance: whatever ended the stream, dial again; it ends only when stopped.
  connects_.clear();
  log_.clear();
  policy.retry_every_end = true;
  WatchOutcome stopped = Watch(
      {Stream{{Revision(1)}, refused}, Stream{{Revision(2)}, absl::OkStatus()},
       Stream{{Revision(3)}, absl::InternalError("boom")}, Stream{{Revision(4)}, {}, true}},
      policy, [this] {
        return !log_.empty() && log_.back() == "status 4";
      });
  EXPECT_EQ(stopped.end, WatchOutcome::End::kStopped);
  EXPECT_EQ(stopped.statuses, 4);
  EXPECT_EQ(connects_.size(), 4u);
  EXPECT_THAT(log_, ElementsAre("status 1", "lost: not an operator certificate",
                                "reconnected after 250ms", "status 2", "lost: ",
                                "reconnected after 250ms", "status 3", "lost: boom",
                                "reconnected after 250ms", "status 4"));
}

TEST_F(StatusWatchTest, TheWatchTimeoutEndsTheWatchAndCutsAnOutageShort) {
  ReconnectPolicy policy;
  policy.watch_timeout = absl::Minutes(90);
  // gRPC's deadline ended a stream that was delivering statuses: the watch is over.
  WatchOutcome over = Watch(
      {Stream{{Revision(1)}, absl::DeadlineExceededError("Deadline Exceeded")}}, policy);
  EXPECT_EQ(over.end, WatchOutcome::End::kWatchTimeout);
  EXPECT_EQ(connects_.size(), 1u);

  // An outage near the end of the watch gives up at the end, not after the whole window.
  connects_.clear();
  RecordingClock fresh;
  clock_ = fresh;
  policy.watch_timeout = absl::Seconds(1);
  WatchOutcome cut = Watch({Stream{{Revision(1)}}}, policy);
  EXPECT_EQ(cut.end, WatchOutcome::End::kWatchTimeout);
  EXPECT_EQ(clock_.Elapsed(), absl::Seconds(1));

  // A new stream that brings nothing before its deadline is still an outage.
  connects_.clear();
  clock_ = fresh;
  policy.watch_timeout = absl::Hours(1);
  WatchOutcome silent = Watch(
      {Stream{{Revision(1)}}, Stream{{}, absl::DeadlineExceededError("no status came")},
       Stream{{Revision(2)}, absl::OkStatus()}},
      policy);
  EXPECT_EQ(silent.end, WatchOutcome::End::kEnded);
  EXPECT_EQ(connects_.size(), 3u);
}

TEST_F(StatusWatchTest, AStopWhileWaitingEndsTheWatchWithinOnePollInterval) {
  ReconnectPolicy policy;
  policy.first_backoff = absl::Seconds(5);
  policy.stop_poll_interval = absl::Milliseconds(100);
  WatchOutcome outcome = Watch({Stream{{Revision(1)}}}, policy,
                               [this] { return clock_.Elapsed() >= absl::Milliseconds(300); });
  EXPECT_EQ(outcome.end, WatchOutcome::End::kStopped);
  EXPECT_EQ(clock_.Elapsed(), absl::Milliseconds(300));
  EXPECT_EQ(connects_.size(), 1u);
}

// A waiter that a stop wakes returns before its time; the watch must then see the stop rather
// than dial again or wait on.
class WokenClock : public Clock {
 public:
  explicit WokenClock(bool& stop) : stop_(stop) {}
  absl::Time Now() override { return absl::UnixEpoch(); }
  void SleepFor(absl::Duration) override { stop_ = true; }

 private:
  bool& stop_;
};

TEST_F(StatusWatchTest, AWaitCutShortByAStopEndsTheWatch) {
  bool stop = false;
  WokenClock clock(stop);
  int connects = 0;
  WatchOutcome outcome = WatchStatus(
      [&connects](absl::Duration) -> std::unique_ptr<OperatorClient> {
        ++connects;
        return std::make_unique<ScriptedClient>(Stream{{Revision(1)}});
      },
      [](const v1::RolloutStatus&) { return absl::OkStatus(); }, ReconnectPolicy(),
      [&stop] { return stop; }, clock);
  EXPECT_EQ(outcome.end, WatchOutcome::End::kStopped);
  EXPECT_EQ(connects, 1);
}

TEST_F(StatusWatchTest, AStatusTheCallerRejectsStopsTheStream) {
  int handed = 0;
  WatchOutcome outcome = WatchStatus(
      [](absl::Duration) -> std::unique_ptr<OperatorClient> {
        return std::make_unique<ScriptedClient>(
            Stream{{Revision(1), Revision(2), Revision(3)}, {}, /*hold=*/true});
      },
      [&handed](const v1::RolloutStatus& status) {
        ++handed;
        if (status.revision() == 2) return absl::InternalError("cannot print revision 2");
        return absl::OkStatus();
      },
      ReconnectPolicy(), [] { return false; }, clock_);
  EXPECT_EQ(outcome.end, WatchOutcome::End::kRejected);
  EXPECT_EQ(outcome.error, absl::InternalError("cannot print revision 2"));
  EXPECT_EQ(outcome.statuses, 1);
  EXPECT_EQ(handed, 2);
}

}  // namespace
}  // namespace handoff::ctl
