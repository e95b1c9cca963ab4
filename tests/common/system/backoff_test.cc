#include "common/system/backoff.h"

#include "gtest/gtest.h"

namespace handoff {
namespace {

TEST(BackoffTest, DoublesFromTheStartUpToTheCapWithJitterInTheUpperHalf) {
  Backoff backoff(absl::Milliseconds(250), absl::Seconds(30));
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

TEST(BackoffTest, WithoutJitterItIsThePlainDoubling) {
  Backoff backoff(absl::Milliseconds(100), absl::Milliseconds(500));
  EXPECT_EQ(backoff.Next(Backoff::kNoJitter), absl::Milliseconds(100));
  EXPECT_EQ(backoff.Next(Backoff::kNoJitter), absl::Milliseconds(200));
  EXPECT_EQ(backoff.Next(Backoff::kNoJitter), absl::Milliseconds(400));
  EXPECT_EQ(backoff.Next(Backoff::kNoJitter), absl::Milliseconds(500));
  EXPECT_EQ(backoff.Next(Backoff::kNoJitter), absl::Milliseconds(500));
}

TEST(BackoffTest, AUnitOutsideZeroToOneIsClamped) {
  Backoff backoff(absl::Seconds(1), absl::Seconds(8));
  EXPECT_EQ(backoff.Next(-3), absl::Milliseconds(500));
  EXPECT_EQ(backoff.Next(7), absl::Seconds(2));
}

TEST(BackoffTest, ACapBelowTheStartIsTheStart) {
  Backoff backoff(absl::Seconds(2), absl::Seconds(1));
  EXPECT_EQ(backoff.Next(1), absl::Seconds(2));
  EXPECT_EQ(backoff.Next(1), absl::Seconds(2));
}

TEST(BackoffTest, AStartBelowAMillisecondIsAMillisecond) {
  Backoff backoff(absl::ZeroDuration(), absl::Milliseconds(4));
  EXPECT_EQ(backoff.Next(1), absl::Milliseconds(1));
  EXPECT_EQ(backoff.Next(1), absl::Milliseconds(2));
}

}  // namespace
}  // namespace handoff
