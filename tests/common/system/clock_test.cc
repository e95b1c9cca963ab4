#include "common/system/clock.h"

#include "absl/time/clock.h"
#include "gtest/gtest.h"

namespace handoff {
namespace {

TEST(FakeClockTest, SleepForAdvancesAtOnce) {
  FakeClock clock(absl::FromUnixSeconds(100));
  EXPECT_EQ(clock.Now(), absl::FromUnixSeconds(100));
  clock.SleepFor(absl::Minutes(5));
  EXPECT_EQ(clock.Now(), absl::FromUnixSeconds(400));
  clock.Advance(absl::Seconds(1));
  EXPECT_EQ(clock.Now(), absl::FromUnixSeconds(401));
}

TEST(RealClockTest, NowIsWallTimeAndSleepForZeroReturns) {
  std::unique_ptr<Clock> clock = NewRealClock();
  const absl::Time before = absl::Now();
  clock->SleepFor(absl::ZeroDuration());
  const absl::Time now = clock->Now();
  EXPECT_GE(now, before);
  EXPECT_LT(now - before, absl::Minutes(1));
}

}  // namespace
}  // namespace handoff
