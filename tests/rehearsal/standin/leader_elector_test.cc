#include "rehearsal/standin/leader_elector.h"

#include <memory>
#include <string>

#include "coordinator/kube/lease.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/coordinator/fake_cluster.h"
#include "tests/rehearsal/standin/standin_test_util.h"
#include "tests/support/fake_clock.h"

namespace handoff::standin {
namespace {

using handoff::testing::FakeCluster;
using ::testing::HasSubstr;

constexpr char kLease[] = "kube-controller-manager";

ElectionConfig Election(const std::string& identity) {
  ElectionConfig config;
  config.ns = "kube-system";
  config.name = kLease;
  config.identity = identity;
  config.jitter_factor = 0;
  return config;
}

kube::LeaseInfo Stored(FakeCluster& cluster) {
  std::optional<kube::LeaseInfo> lease = testing::StoredLease(cluster, kLease);
  EXPECT_TRUE(lease.has_value());
  return lease.value_or(kube::LeaseInfo{});
}

class LeaderElectorTest : public ::testing::Test {
 protected:
  LeaderElectorTest()
      : cluster_(/*seed=*/false),
        client_a_(testing::ElectionClient(cluster_)),
        client_b_(testing::ElectionClient(cluster_)),
        a_(*client_a_, cluster_.clock(), Election("cp-1_aaaa")),
        b_(*client_b_, cluster_.clock(), Election("cp-2_bbbb")),
        t0_(cluster_.clock().Now()) {}

  // Advances the fake clock to t0 + `offset`.
  void At(absl::Duration offset) {
    cluster_.clock().Advance(t0_ + offset - cluster_.clock().Now());
  }

  FakeCluster cluster_;
  std::unique_ptr<kube::KubeClient> client_a_;
  std::unique_ptr<kube::KubeClient> client_b_;
  LeaderElector a_;
  LeaderElector b_;
  absl::Time t0_;
};

TEST_F(LeaderElectorTest, AcquiresAFreeLeaseByCreatingIt) {
  ASSERT_TRUE(a_.TryAcquireOrRenew()) << a_.last_error();
  const kube::LeaseInfo lease = Stored(cluster_);
  EXPECT_EQ(lease.holder_identity, "cp-1_aaaa");
  EXPECT_EQ(lease.lease_duration_seconds, 15);
  EXPECT_EQ(lease.acquire_time, t0_);
  EXPECT_EQ(lease.renew_time, t0_);
  EXPECT_EQ(lease.lease_transitions, 0);
}

TEST_F(LeaderElectorTest, RenewingKeepsAcquireTimeAndTransitions) {
  ASSERT_TRUE(a_.TryAcquireOrRenew());
  At(absl::Milliseconds(2500));
  ASSERT_TRUE(a_.TryAcquireOrRenew()) << a_.last_error();
  const kube::LeaseInfo lease = Stored(cluster_);
  EXPECT_EQ(lease.acquire_time, t0_);
  EXPECT_EQ(lease.renew_time, t0_ + absl::Milliseconds(2500));
  EXPECT_EQ(lease.lease_transitions, 0);
}

TEST_F(LeaderElectorTest, WaitsAFullLeaseDurationAfterTheLastChangeItSaw) {
  ASSERT_TRUE(a_.TryAcquireOrRenew());
  EXPECT_FALSE(b_.TryAcquireOrRenew());
  EXPECT_THAT(b_.last_error(), HasSubstr("is held by cp-1_aaaa"));
  At(absl::Seconds(5));
  ASSERT_TRUE(a_.TryAcquireOrRenew());  // renewTime t0+5s; the holder then stops renewing
  At(absl::Seconds(6));
  EXPECT_FALSE(b_.TryAcquireOrRenew());  // sees the renewal at t0+6s
  EXPECT_EQ(b_.observed_time(), t0_ + absl::Seconds(6));
  // By renewTime + leaseDurationSeconds the lease expired at t0+20s, but client-go counts from
  // the observation.
  At(absl::Seconds(20));
  EXPECT_FALSE(b_.TryAcquireOrRenew());
  At(absl::Seconds(21) - absl::Microseconds(1));
  EXPECT_FALSE(b_.TryAcquireOrRenew());
  At(absl::Seconds(21));
  ASSERT_TRUE(b_.TryAcquireOrRenew()) << b_.last_error();
  const kube::LeaseInfo lease = Stored(cluster_);
  EXPECT_EQ(lease.holder_identity, "cp-2_bbbb");
  EXPECT_EQ(lease.acquire_time, t0_ + absl::Seconds(21));
  EXPECT_EQ(lease.renew_time, t0_ + absl::Seconds(21));
  EXPECT_EQ(lease.lease_transitions, 1);
  // The old holder now respects the new one.
  At(absl::Seconds(22));
  EXPECT_FALSE(a_.TryAcquireOrRenew());
  EXPECT_EQ(a_.observed_holder(), "cp-2_bbbb");
}

TEST_F(LeaderElectorTest, ACandidateThatStartsLateStillWaitsAFullLeaseDuration) {
  // The seeded lease (renewTime 22:13:15.4, 15s) is valid at the fake clock's start, 22:13:20.
  FakeCluster seeded;
  std::unique_ptr<kube::KubeClient> client = testing::ElectionClient(seeded);
  LeaderElector candidate(*client, seeded.clock(), Election("cp-2_bbbb"));
  const absl::Time start = seeded.clock().Now();
  EXPECT_FALSE(candidate.TryAcquireOrRenew());
  seeded.clock().Advance(absl::Seconds(15) - absl::Milliseconds(1));
  EXPECT_FALSE(candidate.TryAcquireOrRenew());
  seeded.clock().Advance(absl::Milliseconds(1));
  ASSERT_TRUE(candidate.TryAcquireOrRenew()) << candidate.last_error();
  const kube::LeaseInfo lease = Stored(seeded);
  EXPECT_EQ(lease.holder_identity, "cp-2_bbbb");
  EXPECT_EQ(lease.acquire_time, start + absl::Seconds(15));
  EXPECT_EQ(lease.lease_transitions, 4);  // 3 in the seed, + 1
}

TEST_F(LeaderElectorTest, TickRenewsEveryRetryPeriodWhileTheOtherWaits) {
  a_.Start();
  b_.Start();
  EXPECT_EQ(a_.Tick(), LeaderElector::Event::kAcquired);
  EXPECT_EQ(b_.Tick(), LeaderElector::Event::kNone);
  EXPECT_EQ(a_.next_due(), t0_ + absl::Seconds(2));
  EXPECT_EQ(b_.next_due(), t0_ + absl::Seconds(2));  // no jitter in this test
  for (int second = 1; second <= 60; ++second) {
    At(absl::Seconds(second));
    EXPECT_EQ(a_.Tick(), LeaderElector::Event::kNone) << second;
    EXPECT_EQ(b_.Tick(), LeaderElector::Event::kNone) << second;
  }
  EXPECT_EQ(a_.state(), LeaderElector::State::kLeader);
  EXPECT_EQ(b_.state(), LeaderElector::State::kCandidate);
  EXPECT_EQ(Stored(cluster_).renew_time, t0_ + absl::Seconds(60));
}

TEST_F(LeaderElectorTest, AcquireRetriesAreJittered) {
  ElectionConfig config = Election("cp-2_bbbb");
  config.jitter_factor = kClientGoJitterFactor;
  LeaderElector jittered(*client_b_, cluster_.clock(), config, [] { return 0.5; });
  ASSERT_TRUE(a_.TryAcquireOrRenew());
  jittered.Start();
  EXPECT_EQ(jittered.Tick(), LeaderElector::Event::kNone);
  EXPECT_EQ(jittered.next_due(), t0_ + absl::Seconds(2) * 1.6);
}

TEST_F(LeaderElectorTest, AStaleResourceVersionMakesTheRenewalRetry) {
  a_.Start();
  ASSERT_EQ(a_.Tick(), LeaderElector::Event::kAcquired);
  cluster_.store().InjectConflicts(kube::kLeases, "kube-system", kLease, 1);
  cluster_.store().ClearRequests();
  At(absl::Seconds(2));
  EXPECT_EQ(a_.Tick(), LeaderElector::Event::kNone);
  EXPECT_THAT(a_.last_error(), HasSubstr("cannot update lease kube-system/" + std::string(kLease)));
  EXPECT_EQ(a_.state(), LeaderElector::State::kLeader);
  EXPECT_EQ(Stored(cluster_).renew_time, t0_);
  EXPECT_EQ(a_.next_due(), t0_ + absl::Seconds(4));
  At(absl::Seconds(4));
  EXPECT_EQ(a_.Tick(), LeaderElector::Event::kNone);
  EXPECT_EQ(a_.last_error(), "");
  EXPECT_EQ(Stored(cluster_).renew_time, t0_ + absl::Seconds(4));
  std::vector<int> puts;
  for (const fakeapi::RequestRecord& request : cluster_.store().requests()) {
    if (request.method == "PUT") puts.push_back(request.status);
  }
  EXPECT_EQ(puts, (std::vector<int>{409, 200}));
}

TEST_F(LeaderElectorTest, LosesTheLeaseAtTheRenewDeadline) {
  a_.Start();
  ASSERT_EQ(a_.Tick(), LeaderElector::Event::kAcquired);
  // Someone else writes the lease at t0+1s (as after a split brain or a manual edit).
  At(absl::Seconds(1));
  testing::WriteLease(cluster_, kLease, "cp-3_cccc", cluster_.clock().Now());

  std::vector<absl::Time> attempts;
  LeaderElector::Event event = LeaderElector::Event::kNone;
  while (a_.state() == LeaderElector::State::kLeader) {
    cluster_.clock().Advance(a_.next_due() - cluster_.clock().Now());
    attempts.push_back(cluster_.clock().Now());
    EXPECT_EQ(*a_.LossDeadline(), t0_ + absl::Seconds(12));
    event = a_.Tick();
  }
  EXPECT_EQ(event, LeaderElector::Event::kLost);
  EXPECT_EQ(cluster_.clock().Now(), t0_ + absl::Seconds(12));  // window from t0+2s, 10s deadline
  // Attempts at 2, 4, 6, 8, 10, and the deadline at 12.
  ASSERT_EQ(attempts.size(), 6u);
  EXPECT_EQ(attempts.front(), t0_ + absl::Seconds(2));
  EXPECT_THAT(a_.last_error(),
              HasSubstr("failed to renew lease kube-system/" + std::string(kLease)));
  EXPECT_THAT(a_.last_error(), HasSubstr("held by cp-3_cccc"));
  EXPECT_EQ(a_.Tick(), LeaderElector::Event::kNone);  // lost once
  EXPECT_EQ(a_.next_due(), absl::InfiniteFuture());
}

TEST_F(LeaderElectorTest, LosesTheLeaseWhenTheServerIsGone) {
  a_.Start();
  ASSERT_EQ(a_.Tick(), LeaderElector::Event::kAcquired);
  cluster_.server().Stop();
  while (a_.state() == LeaderElector::State::kLeader) {
    cluster_.clock().Advance(a_.next_due() - cluster_.clock().Now());
    a_.Tick();
  }
  EXPECT_EQ(cluster_.clock().Now(), t0_ + absl::Seconds(12));
  EXPECT_THAT(a_.last_error(), HasSubstr("cannot read lease"));
}

TEST(RequestDeadlineTransport, CutsRequestsAtTheDeadline) {
  class Recording : public kube::HttpTransport {
   public:
    explicit Recording(absl::Duration* seen) : seen_(seen) {}
    absl::StatusOr<kube::HttpResponse> Send(const kube::HttpRequest& request) override {
      *seen_ = request.timeout;
      return kube::HttpResponse{200, "{}", {}};
    }

   private:
    absl::Duration* seen_;
  };
  FakeClock clock;
  absl::Duration seen;
  RequestDeadlineTransport transport(std::make_unique<Recording>(&seen), clock);
  kube::HttpRequest request;
  request.timeout = absl::Seconds(5);
  ASSERT_TRUE(transport.Send(request).ok());
  EXPECT_EQ(seen, absl::Seconds(5));
  transport.set_deadline(clock.Now() + absl::Milliseconds(300));
  ASSERT_TRUE(transport.Send(request).ok());
  EXPECT_EQ(seen, absl::Milliseconds(300));
  clock.Advance(absl::Milliseconds(300));
  absl::StatusOr<kube::HttpResponse> late = transport.Send(request);
  ASSERT_FALSE(late.ok());
  EXPECT_EQ(late.status().code(), absl::StatusCode::kDeadlineExceeded);
}

}  // namespace
}  // namespace handoff::standin
