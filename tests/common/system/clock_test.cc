// The one seam for time and waiting (common/system/clock.h), the shutdown signal a wait ends on,
// and the tests' clock (tests/support/fake_clock.h).
#include "common/system/clock.h"

#include <future>
#include <vector>

#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/fake_clock.h"

namespace handoff {
namespace {

using ::testing::ElementsAre;

TEST(FakeClockTest, SleepForAdvancesAtOnce) {
  FakeClock clock(absl::FromUnixSeconds(100));
  EXPECT_EQ(clock.Now(), absl::FromUnixSeconds(100));
  clock.SleepFor(absl::Minutes(5));
  EXPECT_EQ(clock.Now(), absl::FromUnixSeconds(400));
  clock.Advance(absl::Seconds(1));
  EXPECT_EQ(clock.Now(), absl::FromUnixSeconds(401));
  // A wait whose end has passed already moves nothing back.
  clock.SleepFor(absl::Seconds(-3));
  EXPECT_EQ(clock.Now(), absl::FromUnixSeconds(401));
  EXPECT_TRUE(clock.sleeps().empty());  // only the waits a stop ends are recorded
}

TEST(FakeClockTest, EachWaitIsRecordedAndItsWakeMayStopTheNext) {
  FakeClock clock(absl::FromUnixSeconds(0));
  ShutdownSignal stop;
  std::vector<absl::Time> wakes;
  clock.set_on_wake([&](absl::Time now) {
    wakes.push_back(now);
    if (now >= absl::FromUnixSeconds(20)) stop.Request();
  });
  EXPECT_TRUE(clock.SleepOrStop(absl::Seconds(10), stop));
  EXPECT_FALSE(clock.SleepOrStop(absl::Seconds(10), stop));  // stopped during it
  EXPECT_FALSE(clock.SleepOrStop(absl::Seconds(10), stop));  // stopped before it: no sleep
  EXPECT_THAT(wakes, ElementsAre(absl::FromUnixSeconds(10), absl::FromUnixSeconds(20)));
  EXPECT_THAT(clock.sleeps(), ElementsAre(absl::Seconds(10), absl::Seconds(10)));
}

TEST(RealClockTest, NowIsWallTimeAndSleepForZeroReturns) {
  std::unique_ptr<Clock> clock = NewRealClock();
  const absl::Time before = absl::Now();
  clock->SleepFor(absl::ZeroDuration());
  const absl::Time now = clock->Now();
  EXPECT_GE(now, before);
  EXPECT_LT(now - before, absl::Minutes(1));
}

TEST(RealClockTest, AWaitEndsWhenItsStopIsRequested) {
  std::unique_ptr<Clock> clock = NewRealClock();
  ShutdownSignal stop;
  EXPECT_TRUE(clock->SleepOrStop(absl::ZeroDuration(), stop));
  std::future<bool> waiter =
      std::async(std::launch::async, [&] { return clock->SleepOrStop(absl::Hours(1), stop); });
  stop.Request();
  EXPECT_FALSE(waiter.get());
  EXPECT_FALSE(clock->SleepOrStop(absl::Hours(1), stop));
}

TEST(ShutdownSignalTest, AWaitEndsWhenShutdownIsRequested) {
  ShutdownSignal shutdown;
  EXPECT_FALSE(shutdown.Requested());
  EXPECT_FALSE(shutdown.WaitTimeoutOrShutdown(absl::ZeroDuration()));
  std::future<bool> waiter = std::async(
      std::launch::async, [&] { return shutdown.WaitTimeoutOrShutdown(absl::InfiniteDuration()); });
  shutdown.Request();
  EXPECT_TRUE(waiter.get());
  EXPECT_TRUE(shutdown.Requested());
  EXPECT_TRUE(shutdown.WaitTimeoutOrShutdown(absl::Hours(1)));
}

}  // namespace
}  // namespace handoff
