#include "agent/daemon/shutdown.h"

#include <future>

#include "gtest/gtest.h"

namespace handoff {
namespace {

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
