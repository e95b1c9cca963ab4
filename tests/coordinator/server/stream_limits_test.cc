// The bounds on agents' streams: a deadline for the hello, a number open per certificate.
#include "coordinator/server/stream_limits.h"

#include <future>
#include <memory>
#include <string>

#include "gtest/gtest.h"

namespace handoff::server {
namespace {

TEST(StreamLimitsTest, EachIdentityMayHoldTheMostItMayAndNoMore) {
  StreamLimits limits(absl::Seconds(10), 3);
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(limits.Admit("cp-1")) << i;
  EXPECT_FALSE(limits.Admit("cp-1"));
  EXPECT_EQ(limits.Open("cp-1"), 3u);
  // Another certificate is not held back by one that floods.
  EXPECT_TRUE(limits.Admit("cp-2"));
  limits.Release("cp-1");
  EXPECT_TRUE(limits.Admit("cp-1"));
  EXPECT_FALSE(limits.Admit("cp-1"));
  for (int i = 0; i < 3; ++i) limits.Release("cp-1");
  EXPECT_EQ(limits.Open("cp-1"), 0u);
  EXPECT_EQ(limits.Open("cp-2"), 1u);
}

// The probe opened 20,000 streams with one certificate: all but the first few are refused, and
// nothing is kept of a refused one.
TEST(StreamLimitsTest, AFloodOfStreamsIsRefusedBeyondTheLimit) {
  StreamLimits limits(absl::Seconds(10), 4);
  int admitted = 0;
  for (int i = 0; i < 20000; ++i) admitted += limits.Admit("cp-1") ? 1 : 0;
  EXPECT_EQ(admitted, 4);
  EXPECT_EQ(limits.Open("cp-1"), 4u);
}

TEST(StreamLimitsTest, TheHelloDeadlineExpiresEachStreamInTurn) {
  StreamLimits limits(absl::Milliseconds(50), 4);
  std::promise<absl::Time> first;
  std::promise<absl::Time> second;
  const absl::Time start = absl::Now();
  limits.AwaitHello([&] { first.set_value(absl::Now()); });
  limits.AwaitHello([&] { second.set_value(absl::Now()); });
  std::future<absl::Time> first_expired = first.get_future();
  std::future<absl::Time> second_expired = second.get_future();
  const absl::Time at = first_expired.get();
  EXPECT_GE(at - start, absl::Milliseconds(50));
  EXPECT_GE(second_expired.get(), at);
}

// A deadline far off is dropped when the limits go (the server shutting down), not run.
TEST(StreamLimitsTest, PendingDeadlinesDoNotOutliveTheLimits) {
  auto ran = std::make_shared<bool>(false);
  {
    StreamLimits limits(absl::Hours(1), 4);
    limits.AwaitHello([ran] { *ran = true; });
  }
  EXPECT_FALSE(*ran);
}

}  // namespace
}  // namespace handoff::server
