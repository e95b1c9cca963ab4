#include "coordinator/kube/lease.h"

#include <functional>
#include <map>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/coordinator/fake_cluster.h"
#include "tests/support/fake_clock.h"

namespace handoff::kube {
namespace {

using ::handoff::testing::FakeCluster;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::SizeIs;

const absl::Time kNow = absl::FromUnixSeconds(1'700'000'000);  // 2023-11-14T22:13:20Z

constexpr char kNodeA[] = "ip-10-0-1-10.ec2.internal";
constexpr char kNodeB[] = "ip-10-0-1-11.ec2.internal";
const std::string kKcmA = std::string(kNodeA) + "_7a4e0f0c-5d4e-4c43-a2a9-3f3f1e0b8c11";
const std::string kCcmB = std::string(kNodeB) + "_0c9d8e7f-1a2b-4c3d-9e8f-7a6b5c4d3e2f";

LeaseInfo Lease(const std::string& name, const std::string& holder, absl::Time renewed,
                int64_t duration = 15, std::optional<absl::Time> acquired = std::nullopt) {
  LeaseInfo lease;
  lease.ns = "kube-system";
  lease.name = name;
  lease.holder_identity = holder;
  lease.renew_time = renewed;
  lease.acquire_time = acquired;
  lease.lease_duration_seconds = duration;
  return lease;
}

TEST(LeaseInfoTest, ParseAndValidity) {
  absl::StatusOr<LeaseInfo> lease = ParseLease(Json::parse(R"({
    "metadata": {"name": "kube-controller-manager", "namespace": "kube-system",
                 "resourceVersion": "42"},
    "spec": {"holderIdentity": "ip-10-0-1-10.ec2.internal_7a4e",
             "leaseDurationSeconds": 15,
             "acquireTime": "2023-11-14T21:02:41.118264Z",
             "renewTime": "2023-11-14T22:13:15.402613Z",
             "leaseTransitions": 3}})"));
  ASSERT_TRUE(lease.ok()) << lease.status();
  EXPECT_EQ(lease->holder_identity, "ip-10-0-1-10.ec2.internal_7a4e");
  EXPECT_EQ(lease->lease_transitions, 3);
  EXPECT_EQ(lease->resource_version, "42");
  EXPECT_EQ(FormatTimestamp(*lease->Expiry()), "2023-11-14T22:13:30.402613Z");
  EXPECT_TRUE(lease->HeldAt(kNow));
  EXPECT_TRUE(lease->HeldAt(*lease->Expiry() - absl::Microseconds(1)));
  EXPECT_FALSE(lease->HeldAt(*lease->Expiry()));
  EXPECT_EQ(FormatTimestamp(*lease->acquire_time), "2023-11-14T21:02:41.118264Z");
}

TEST(LeaseInfoTest, BadTimeNamesTheField) {
  absl::StatusOr<LeaseInfo> lease = ParseLease(Json::parse(
      R"({"metadata":{"name":"x","namespace":"kube-system"},"spec":{"renewTime":"yesterday"}})"));
  EXPECT_THAT(std::string(lease.status().message()),
              HasSubstr("lease kube-system/x: spec.renewTime \"yesterday\" is not an RFC 3339"));
}

TEST(LeaseInfoTest, HostnameOfIdentity) {
  EXPECT_EQ(HostnameOfIdentity("ip-10-0-1-10.ec2.internal_7a4e0f0c"), "ip-10-0-1-10.ec2.internal");
  EXPECT_EQ(HostnameOfIdentity("my_host_name_uuid"), "my_host_name");
  EXPECT_EQ(HostnameOfIdentity("plain"), "plain");
  EXPECT_EQ(FormatTimestamp(kNow), "2023-11-14T22:13:20Z");
  EXPECT_EQ(FormatElapsed(absl::Milliseconds(17612) + absl::Nanoseconds(5)), "17.612s");
  EXPECT_EQ(FormatElapsed(absl::Hours(2) + absl::Milliseconds(1500)), "2h1s");
}

TEST(ClassifyTest, KubeControllerManagerOnNodeAHolds) {
  LeaseSet leases;
  leases.migration = Lease("cloud-provider-extraction-migration", kKcmA, kNow - absl::Seconds(3));
  leases.kube_controller_manager = Lease("kube-controller-manager", kKcmA, kNow - absl::Seconds(1));
  leases.cloud_controller_manager = Lease("cloud-controller-manager", kCcmB, kNow);
  Ownership ownership = ClassifyMigrationLease(leases, kNow);
  EXPECT_EQ(ownership.holder, Holder::kKubeControllerManager);
  EXPECT_EQ(ownership.node, kNodeA);
  EXPECT_EQ(ownership.Describe(), "kube-controller-manager on ip-10-0-1-10.ec2.internal");
}

TEST(ClassifyTest, CloudControllerManagerOnNodeBHolds) {
  LeaseSet leases;
  leases.migration = Lease("cloud-provider-extraction-migration", kCcmB, kNow - absl::Seconds(3));
  leases.kube_controller_manager = Lease("kube-controller-manager", kKcmA, kNow);
  leases.cloud_controller_manager = Lease("cloud-controller-manager", kCcmB, kNow);
  Ownership ownership = ClassifyMigrationLease(leases, kNow);
  EXPECT_EQ(ownership.holder, Holder::kCloudControllerManager);
  EXPECT_EQ(ownership.Describe(), "cloud-controller-manager on ip-10-0-1-11.ec2.internal");
}

TEST(ClassifyTest, ExpiredLeaseIsAGap) {
  LeaseSet leases;
  leases.migration = Lease("cloud-provider-extraction-migration", kKcmA, kNow - absl::Seconds(20));
  leases.kube_controller_manager =
      Lease("kube-controller-manager", kKcmA, kNow - absl::Seconds(20));
  Ownership ownership = ClassifyMigrationLease(leases, kNow);
  EXPECT_EQ(ownership.holder, Holder::kNobody);
  EXPECT_EQ(ownership.identity, kKcmA);
  EXPECT_EQ(ownership.Describe(),
            "nobody (expired at 2023-11-14T22:13:15Z, last held by " + kKcmA + ")");
}

TEST(ClassifyTest, ReleasedAndMissingLeasesAreGaps) {
  LeaseSet leases;
  EXPECT_EQ(ClassifyMigrationLease(leases, kNow).holder, Holder::kNobody);
  EXPECT_THAT(ClassifyMigrationLease(leases, kNow).reason, HasSubstr("does not exist"));
  leases.migration = Lease("cloud-provider-extraction-migration", "", kNow);
  EXPECT_EQ(ClassifyMigrationLease(leases, kNow).holder, Holder::kNobody);
  EXPECT_THAT(ClassifyMigrationLease(leases, kNow).reason, HasSubstr("released"));
}

TEST(ClassifyTest, HolderOfNeitherMainLeaseIsUnknown) {
  LeaseSet leases;
  leases.migration =
      Lease("cloud-provider-extraction-migration", "ip-10-0-1-12.ec2.internal_feed", kNow);
  leases.kube_controller_manager = Lease("kube-controller-manager", kKcmA, kNow);
  leases.cloud_controller_manager = Lease("cloud-controller-manager", kCcmB, kNow);
  Ownership ownership = ClassifyMigrationLease(leases, kNow);
  EXPECT_EQ(ownership.holder, Holder::kUnknown);
  EXPECT_EQ(ownership.node, "ip-10-0-1-12.ec2.internal");
  EXPECT_THAT(ownership.Describe(),
              HasSubstr("an unknown manager on ip-10-0-1-12.ec2.internal (ip-10-0-1-12.ec2."
                        "internal_feed holds neither the kube-controller-manager nor the "
                        "cloud-controller-manager lease)"));
}

// The watcher's pure core, fed observations.
class WatcherObserveTest : public ::testing::Test {
 protected:
  WatcherObserveTest() : client_(nullptr, clock_, ClientOptions()), watcher_(client_, clock_, {}) {}

  LeaseSet KcmHolds(absl::Time renewed) {
    LeaseSet leases;
    leases.migration =
        Lease("cloud-provider-extraction-migration", kKcmA, renewed, 15, kNow - absl::Hours(1));
    leases.kube_controller_manager = Lease("kube-controller-manager", kKcmA, renewed);
    return leases;
  }
  LeaseSet CcmHolds(absl::Time renewed, absl::Time acquired) {
    LeaseSet leases;
    leases.migration = Lease("cloud-provider-extraction-migration", kCcmB, renewed, 15, acquired);
    leases.cloud_controller_manager = Lease("cloud-controller-manager", kCcmB, renewed);
    return leases;
  }

  FakeClock clock_;
  KubeClient client_;
  LeaseWatcher watcher_;
};

TEST_F(WatcherObserveTest, HandOverWithAnObservedGap) {
  std::vector<LeaseEvent> events = watcher_.Observe(KcmHolds(kNow), kNow);
  ASSERT_THAT(events, SizeIs(1));
  EXPECT_EQ(events[0].kind, LeaseEvent::Kind::kHeld);
  EXPECT_EQ(events[0].at, kNow - absl::Hours(1));  // acquireTime
  // Renewals change nothing.
  EXPECT_THAT(watcher_.Observe(KcmHolds(kNow + absl::Seconds(2)), kNow + absl::Seconds(5)),
              IsEmpty());
  // The kube-controller-manager stops renewing: its lease runs out at +17s.
  events = watcher_.Observe(KcmHolds(kNow + absl::Seconds(2)), kNow + absl::Seconds(20));
  ASSERT_THAT(events, SizeIs(1));
  EXPECT_EQ(events[0].kind, LeaseEvent::Kind::kGapStarted);
  EXPECT_EQ(events[0].at, kNow + absl::Seconds(17));
  EXPECT_THAT(watcher_.Observe(KcmHolds(kNow + absl::Seconds(2)), kNow + absl::Seconds(25)),
              IsEmpty());
  // The cloud-controller-manager takes it at +26s, seen at +27s.
  events = watcher_.Observe(CcmHolds(kNow + absl::Seconds(26), kNow + absl::Seconds(26)),
                            kNow + absl::Seconds(27));
  ASSERT_THAT(events, SizeIs(1));
  EXPECT_EQ(events[0].kind, LeaseEvent::Kind::kHeld);
  EXPECT_EQ(events[0].ownership.holder, Holder::kCloudControllerManager);
  EXPECT_EQ(events[0].at, kNow + absl::Seconds(26));
  EXPECT_EQ(*events[0].gap_start, kNow + absl::Seconds(17));
  EXPECT_EQ(*events[0].gap, absl::Seconds(9));

  const WatchSummary summary = watcher_.summary();
  EXPECT_EQ(summary.polls, 5);
  EXPECT_EQ(summary.holder_changes, 1);
  EXPECT_EQ(summary.gaps, 1);
  EXPECT_EQ(summary.gap_total, absl::Seconds(9));
  EXPECT_FALSE(summary.in_gap_at_end);
  EXPECT_EQ(summary.held_for.at("kube-controller-manager on ip-10-0-1-10.ec2.internal"),
            absl::Seconds(20));
  EXPECT_EQ(summary.held_for.at("nobody"), absl::Seconds(7));
}

TEST_F(WatcherObserveTest, GapBetweenTwoPollsIsFoundFromTheTimes) {
  watcher_.Observe(KcmHolds(kNow), kNow);
  // Next poll 30s later: the KCM's lease expired at +15s, the CCM acquired at +21s.
  std::vector<LeaseEvent> events = watcher_.Observe(
      CcmHolds(kNow + absl::Seconds(28), kNow + absl::Seconds(21)), kNow + absl::Seconds(30));
  ASSERT_THAT(events, SizeIs(1));
  EXPECT_EQ(*events[0].gap_start, kNow + absl::Seconds(15));
  EXPECT_EQ(*events[0].gap, absl::Seconds(6));
  EXPECT_EQ(watcher_.summary().gaps, 1);
}

TEST_F(WatcherObserveTest, HandOverWithoutGap) {
  watcher_.Observe(KcmHolds(kNow), kNow);
  std::vector<LeaseEvent> events = watcher_.Observe(
      CcmHolds(kNow + absl::Seconds(2), kNow + absl::Seconds(1)), kNow + absl::Seconds(2));
  ASSERT_THAT(events, SizeIs(1));
  EXPECT_FALSE(events[0].gap.has_value());
  EXPECT_EQ(watcher_.summary().gaps, 0);
  EXPECT_EQ(watcher_.summary().holder_changes, 1);
}

TEST_F(WatcherObserveTest, OpenGapCountsUntilTheLastPoll) {
  watcher_.Observe(LeaseSet(), kNow);
  watcher_.Observe(LeaseSet(), kNow + absl::Seconds(4));
  const WatchSummary summary = watcher_.summary();
  EXPECT_EQ(summary.gaps, 1);
  EXPECT_TRUE(summary.in_gap_at_end);
  EXPECT_EQ(summary.gap_total, absl::Seconds(4));
}

// Against the fake API server, polled on a fake clock whose sleeps move the managers' leases.
class LeaseWatchTest : public ::testing::Test {
 protected:
  // Sets a lease on the fake server as a manager would.
  void SetLease(const std::string& name, const std::string& holder, absl::Time renewed,
                absl::Time acquired) {
    Json lease = Json::object();
    lease["apiVersion"] = "coordination.k8s.io/v1";
    lease["kind"] = "Lease";
    lease["metadata"] = {{"name", name}, {"namespace", "kube-system"}};
    lease["spec"] = {{"holderIdentity", holder},
                     {"leaseDurationSeconds", 15},
                     {"acquireTime", FormatTimestamp(acquired)},
                     {"renewTime", FormatTimestamp(renewed)}};
    ASSERT_TRUE(cluster_.store().Put(lease).ok());
  }

  FakeCluster cluster_;
};

TEST_F(LeaseWatchTest, ReportsEachOwnerAndTheGapBetween) {
  FakeClock& clock = cluster_.clock();
  const absl::Time start = clock.Now();
  SetLease("cloud-provider-extraction-migration", kKcmA, start, start - absl::Minutes(5));
  SetLease("kube-controller-manager", kKcmA, start, start - absl::Minutes(5));
  std::unique_ptr<KubeClient> client = cluster_.Client();
  LeaseWatcher watcher(*client, clock, LeaseNames());

  // What the managers do, by the second: the KCM renews until +4s, then is stopped; the CCM
  // takes the lease at +25s.
  std::map<int, std::function<void(absl::Time)>> script;
  for (int second = 1; second <= 4; ++second) {
    script[second] = [this, start](absl::Time now) {
      SetLease("cloud-provider-extraction-migration", kKcmA, now, start - absl::Minutes(5));
    };
  }
  script[25] = [this](absl::Time now) {
    SetLease("cloud-controller-manager", kCcmB, now, now);
    SetLease("cloud-provider-extraction-migration", kCcmB, now, now);
  };
  std::vector<LeaseEvent> events;
  WatchOptions options;
  options.duration = absl::Seconds(30);
  int second = 0;
  absl::Status watched = RunLeaseWatch(
      watcher, clock, options, [&events](const LeaseEvent& event) { events.push_back(event); },
      [](const absl::Status& status) { ADD_FAILURE() << status; },
      [&] {
        // Called after each poll, before the sleep: advance the managers to the next second.
        ++second;
        auto step = script.find(second);
        if (step != script.end()) step->second(clock.Now() + absl::Seconds(1));
        return false;
      });
  ASSERT_TRUE(watched.ok()) << watched;
  ASSERT_THAT(events, SizeIs(3));
  EXPECT_EQ(events[0].ownership.Describe(), "kube-controller-manager on ip-10-0-1-10.ec2.internal");
  EXPECT_EQ(events[1].kind, LeaseEvent::Kind::kGapStarted);
  EXPECT_EQ(events[1].at, start + absl::Seconds(19));  // last renewal at +4s, plus 15s
  EXPECT_EQ(events[1].observed, start + absl::Seconds(19));
  EXPECT_EQ(events[2].ownership.Describe(),
            "cloud-controller-manager on ip-10-0-1-11.ec2.internal");
  EXPECT_EQ(events[2].at, start + absl::Seconds(25));
  EXPECT_EQ(*events[2].gap, absl::Seconds(6));
  const WatchSummary summary = watcher.summary();
  EXPECT_EQ(summary.polls, 31);
  EXPECT_EQ(summary.gaps, 1);
  EXPECT_EQ(summary.end - summary.start, absl::Seconds(30));
}

TEST_F(LeaseWatchTest, TransientErrorsAreReportedAndTheWatchGoesOn) {
  FakeClock& clock = cluster_.clock();
  std::unique_ptr<KubeClient> client = cluster_.Client();
  LeaseWatcher watcher(*client, clock, LeaseNames());
  cluster_.store().FailNextRequests(4, 503);  // one whole poll's read, with its retries
  std::vector<std::string> errors;
  WatchOptions options;
  options.duration = absl::Seconds(3);
  absl::Status watched = RunLeaseWatch(
      watcher, clock, options, [](const LeaseEvent&) {},
      [&errors](const absl::Status& status) { errors.push_back(std::string(status.message())); },
      nullptr);
  ASSERT_TRUE(watched.ok()) << watched;
  ASSERT_THAT(errors, SizeIs(1));
  EXPECT_THAT(errors[0], HasSubstr("HTTP 503 after 4 attempt(s)"));
  EXPECT_EQ(watcher.summary().errors, 1);
}

TEST_F(LeaseWatchTest, PermissionErrorsEndTheWatch) {
  cluster_.store().Forbid("handoff-operator", "get", "leases");
  std::unique_ptr<KubeClient> client = cluster_.Client();
  LeaseWatcher watcher(*client, cluster_.clock(), LeaseNames());
  WatchOptions options;
  options.duration = absl::Seconds(3);
  absl::Status watched = RunLeaseWatch(
      watcher, cluster_.clock(), options, [](const LeaseEvent&) {},
      [](const absl::Status& status) { ADD_FAILURE() << status; }, nullptr);
  EXPECT_EQ(watched.code(), absl::StatusCode::kPermissionDenied);
}

TEST_F(LeaseWatchTest, GetLeaseReadsTheSeed) {
  std::unique_ptr<KubeClient> client = cluster_.Client();
  absl::StatusOr<LeaseInfo> lease = GetLease(*client, "kube-system", "kube-controller-manager");
  ASSERT_TRUE(lease.ok()) << lease.status();
  EXPECT_EQ(HostnameOfIdentity(lease->holder_identity), kNodeA);
  EXPECT_EQ(lease->lease_transitions, 3);
  EXPECT_TRUE(lease->HeldAt(cluster_.clock().Now()));
  EXPECT_EQ(GetLease(*client, "kube-system", "nope").status().code(), absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace handoff::kube
