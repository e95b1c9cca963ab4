#include "agent/daemon/shutdown.h"

#include <future>

#include "gtest/gtest.h"

namespace handoff {
namespace {

TEST(ReconnectBackoffTest, DoublesFromTheStartUpToTheCapWithJitterInTheUpperHalf) {
  ReconnectBackoff backoff(absl::Milliseconds(250), absl::Seconds(30));
  // unit 0 gives the lower end of each range, unit 1 its upper end.
  EXPECT_EQ(backoff.Next(0), absl::Milliseconds(125));
  EXPECT_EQ(backoff.Next(1), absl::Milliseconds(500));
  EXPECT_EQ(backoff.Next(0.5), absl::Milliseconds(750));
  for (int i = 0; i < 20; ++i) backoff.Next(0.5);
  EXPECT_EQ(backoff.Next(0), absl::Seconds(15));
  EXPECT_EQ(backoff.Next(1), absl::Seconds(30));
  backoff.Reset();
  EXPECT_EQ(backoff.Next(1), absl::Milliseconds(250));
}

TEST(ReconnectBackoffTest, ACapBelowTheStartIsTheStart) {
  ReconnectBackoff backoff(absl::Seconds(2), absl::Seconds(1));
  EXPECT_EQ(backoff.Next(1), absl::Seconds(2));
  EXPECT_EQ(backoff.Next(1), absl::Seconds(2));
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

TEST(ShutdownSignalTest, ARealSleeperReturnsFalseOnceShutdownIsRequested) {
  ShutdownSignal shutdown;
  std::unique_ptr<Sleeper> sleeper = NewRealSleeper();
  EXPECT_TRUE(sleeper->SleepOrShutdown(absl::ZeroDuration(), shutdown));
  shutdown.Request();
  EXPECT_FALSE(sleeper->SleepOrShutdown(absl::Hours(1), shutdown));
}

TEST(FakeSleeperTest, RecordsWithoutWaiting) {
  ShutdownSignal shutdown;
  FakeSleeper sleeper;
  EXPECT_TRUE(sleeper.SleepOrShutdown(absl::Hours(1), shutdown));
  shutdown.Request();
  EXPECT_FALSE(sleeper.SleepOrShutdown(absl::Seconds(1), shutdown));
  ASSERT_EQ(sleeper.sleeps().size(), 2u);
  EXPECT_EQ(sleeper.sleeps()[0], absl::Hours(1));
}

}  // namespace
}  // namespace handoff
