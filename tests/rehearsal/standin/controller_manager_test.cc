#include "rehearsal/standin/controller_manager.h"

#include <memory>
#include <string>
#include <vector>

#include "common/base/strings.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "spdlog/sinks/null_sink.h"
#include "tests/coordinator/fake_cluster.h"
#include "tests/rehearsal/standin/standin_test_util.h"

namespace handoff::standin {
namespace {

using handoff::testing::FakeCluster;
using ::testing::ElementsAre;

constexpr char kMainLease[] = "kube-controller-manager";
constexpr char kMigrationLease[] = "cloud-provider-extraction-migration";
constexpr char kIdentity[] = "cp-1_1111";

class ControllerManagerTest : public ::testing::Test {
 protected:
  ControllerManagerTest()
      : cluster_(/*seed=*/false),
        client_(testing::ElectionClient(cluster_)),
        recorder_(sink_, cluster_.clock(), {"cp-1", "kube-controller-manager", 42}),
        logger_(std::make_shared<spdlog::logger>("test",
                                                 std::make_shared<spdlog::sinks::null_sink_mt>())),
        t0_(cluster_.clock().Now()) {}

  static ElectionConfig MainElection() {
    ElectionConfig election;
    election.name = kMainLease;
    election.identity = kIdentity;
    election.jitter_factor = 0;
    return election;
  }

  // The plan of a 1.26 kube-controller-manager with --cloud-provider=aws, `migrated` controllers
  // given to it in the Leader Migration configuration (none: no Leader Migration).
  static ManagerConfig KcmConfig(std::vector<std::string> migrated) {
    ControllerSettings settings;
    settings.cloud_provider = "aws";
    settings.allocate_node_cidrs = true;
    settings.cluster_cidr = "10.244.0.0/16";
    if (!migrated.empty()) {
      leadermigration::Config config;
      config.leader_name = kMigrationLease;
      for (const std::string& name : migrated) {
        config.controller_leaders.push_back({name, "kube-controller-manager"});
      }
      settings.enable_leader_migration = true;
      settings.migration_config = config;
    }
    absl::StatusOr<ControllerPlan> plan = PlanControllers(settings);
    EXPECT_TRUE(plan.ok()) << plan.status();
    return ManagerConfigFor(*plan, true, MainElection());
  }

  std::unique_ptr<ControllerManager> Manager(ManagerConfig config) {
    return std::make_unique<ControllerManager>(std::move(config), client_.get(), nullptr,
                                               cluster_.clock(), recorder_, logger_);
  }

  // "t+<seconds> <event> <details>" per record.
  std::vector<std::string> Records() const {
    std::vector<std::string> lines;
    for (const sandbox::RunRecord& record : sink_.records()) {
      std::string line = StrCat("t+", absl::FormatDuration(absl::FromUnixNanos(record.t_ns) - t0_),
                                " ", record.event);
      for (const std::string* field :
           {&record.controller, &record.lock, &record.lease, &record.reason}) {
        if (!field->empty()) StrAppend(&line, " ", *field);
      }
      EXPECT_EQ(record.node, "cp-1");
      EXPECT_EQ(record.component, "kube-controller-manager");
      EXPECT_EQ(record.pid, 42);
      lines.push_back(line);
    }
    return lines;
  }

  FakeCluster cluster_;
  std::unique_ptr<kube::KubeClient> client_;
  MemoryRecordSink sink_;
  RunRecorder recorder_;
  std::shared_ptr<spdlog::logger> logger_;
  absl::Time t0_;
};

TEST_F(ControllerManagerTest, InTreeRunsCloudControllersUnderTheMainLeaseUntilStopped) {
  std::unique_ptr<ControllerManager> manager = Manager(KcmConfig({}));
  cluster_.clock().set_on_wake([&](absl::Time now) {
    if (now >= t0_ + absl::Seconds(30)) manager->Stop();
  });
  EXPECT_EQ(manager->Run(), ManagerOutcome::kStopped);
  EXPECT_THAT(
      Records(),
      ElementsAre("t+0 lease-acquired kube-system/kube-controller-manager",
                  "t+0 controller-start route main", "t+0 controller-start service main",
                  "t+0 controller-start cloud-node-lifecycle main",
                  "t+0 controller-start node-ipam main", "t+30s controller-stop node-ipam shutdown",
                  "t+30s controller-stop cloud-node-lifecycle shutdown",
                  "t+30s controller-stop service shutdown",
                  "t+30s controller-stop route shutdown"));
  // Not released: the lease stays held by this identity until it expires.
  std::optional<kube::LeaseInfo> lease = testing::StoredLease(cluster_, kMainLease);
  ASSERT_TRUE(lease.has_value());
  EXPECT_EQ(lease->holder_identity, kIdentity);
  EXPECT_EQ(lease->renew_time, t0_ + absl::Seconds(28));
  EXPECT_FALSE(testing::StoredLease(cluster_, kMigrationLease).has_value());
}

TEST_F(ControllerManagerTest, TriesTheMigrationLeaseOnlyWhileHoldingTheMainLease) {
  // Another manager holds the main lease until t0+10s and then dies.
  testing::WriteLease(cluster_, kMainLease, "cp-2_2222", t0_);
  std::unique_ptr<ControllerManager> manager =
      Manager(KcmConfig({"route", "service", "cloud-node-lifecycle"}));
  cluster_.clock().set_on_wake([&](absl::Time now) {
    if (now <= t0_ + absl::Seconds(10)) testing::WriteLease(cluster_, kMainLease, "cp-2_2222", now);
    EXPECT_FALSE(testing::StoredLease(cluster_, kMigrationLease).has_value() &&
                 now < t0_ + absl::Seconds(26));
    if (now >= t0_ + absl::Seconds(30)) manager->Stop();
  });
  EXPECT_EQ(manager->Run(), ManagerOutcome::kStopped);
  // Last change seen at t0+10s, so the lease is free from t0+25s; attempts fall every 2s.
  EXPECT_THAT(
      Records(),
      ElementsAre("t+26s lease-acquired kube-system/kube-controller-manager",
                  "t+26s controller-start node-ipam main",
                  "t+26s lease-acquired kube-system/cloud-provider-extraction-migration",
                  "t+26s controller-start route migration",
                  "t+26s controller-start service migration",
                  "t+26s controller-start cloud-node-lifecycle migration",
                  "t+30s controller-stop cloud-node-lifecycle shutdown",
                  "t+30s controller-stop service shutdown", "t+30s controller-stop route shutdown",
                  "t+30s controller-stop node-ipam shutdown"));
  std::optional<kube::LeaseInfo> migration = testing::StoredLease(cluster_, kMigrationLease);
  ASSERT_TRUE(migration.has_value());
  EXPECT_EQ(migration->holder_identity, kIdentity);  // one identity for both leases
}

TEST_F(ControllerManagerTest, RunsMigratedControllersOnlyOnceTheMigrationLeaseIsFree) {
  // A cloud-controller-manager holds the migration lease and renews it until t0+5s.
  testing::WriteLease(cluster_, kMigrationLease, "cp-2_ccm", t0_);
  std::unique_ptr<ControllerManager> manager =
      Manager(KcmConfig({"service", "cloud-node-lifecycle"}));
  cluster_.clock().set_on_wake([&](absl::Time now) {
    if (now <= t0_ + absl::Seconds(5)) {
      testing::WriteLease(cluster_, kMigrationLease, "cp-2_ccm", now);
    }
    if (now >= t0_ + absl::Seconds(24)) manager->Stop();
  });
  EXPECT_EQ(manager->Run(), ManagerOutcome::kStopped);
  EXPECT_THAT(Records(),
              ElementsAre("t+0 lease-acquired kube-system/kube-controller-manager",
                          "t+0 controller-start route main", "t+0 controller-start node-ipam main",
                          // The last write (t0+4s) was seen at t0+4s: free from t0+19s.
                          "t+20s lease-acquired kube-system/cloud-provider-extraction-migration",
                          "t+20s controller-start service migration",
                          "t+20s controller-start cloud-node-lifecycle migration",
                          "t+24s controller-stop cloud-node-lifecycle shutdown",
                          "t+24s controller-stop service shutdown",
                          "t+24s controller-stop node-ipam shutdown",
                          "t+24s controller-stop route shutdown"));
  std::optional<kube::LeaseInfo> migration = testing::StoredLease(cluster_, kMigrationLease);
  ASSERT_TRUE(migration.has_value());
  EXPECT_EQ(migration->lease_transitions, 1);
}

TEST_F(ControllerManagerTest, LosingTheMainLeaseStopsEveryControllerAndEndsTheRun) {
  std::unique_ptr<ControllerManager> manager =
      Manager(KcmConfig({"route", "service", "cloud-node-lifecycle"}));
  cluster_.clock().set_on_wake([&](absl::Time now) {
    if (now == t0_ + absl::Seconds(4)) testing::WriteLease(cluster_, kMainLease, "cp-3_3333", now);
  });
  EXPECT_EQ(manager->Run(), ManagerOutcome::kLeaseLost);
  // Renewed at t0+2s, taken at t0+4s just before the next renewal: the window that opens then
  // ends at t0+14s.
  EXPECT_EQ(cluster_.clock().Now(), t0_ + absl::Seconds(14));
  EXPECT_THAT(
      Records(),
      ElementsAre("t+0 lease-acquired kube-system/kube-controller-manager",
                  "t+0 controller-start node-ipam main",
                  "t+0 lease-acquired kube-system/cloud-provider-extraction-migration",
                  "t+0 controller-start route migration", "t+0 controller-start service migration",
                  "t+0 controller-start cloud-node-lifecycle migration",
                  "t+14s lease-lost kube-system/kube-controller-manager",
                  "t+14s controller-stop cloud-node-lifecycle lease lost",
                  "t+14s controller-stop service lease lost",
                  "t+14s controller-stop route lease lost",
                  "t+14s controller-stop node-ipam lease lost"));
  EXPECT_TRUE(manager->running().empty());
  EXPECT_EQ(manager->main_elector()->state(), LeaderElector::State::kLost);
  // The migration lease was renewed until the end (every 2s) and is not released either.
  std::optional<kube::LeaseInfo> migration = testing::StoredLease(cluster_, kMigrationLease);
  ASSERT_TRUE(migration.has_value());
  EXPECT_EQ(migration->holder_identity, kIdentity);
  EXPECT_EQ(migration->renew_time, t0_ + absl::Seconds(12));
}

TEST_F(ControllerManagerTest, LosingTheMigrationLeaseEndsTheRunToo) {
  std::unique_ptr<ControllerManager> manager = Manager(KcmConfig({"service"}));
  cluster_.clock().set_on_wake([&](absl::Time now) {
    if (now == t0_ + absl::Seconds(2)) {
      testing::WriteLease(cluster_, kMigrationLease, "cp-3_3333", now);
    }
  });
  EXPECT_EQ(manager->Run(), ManagerOutcome::kLeaseLost);
  const std::vector<std::string> records = Records();
  ASSERT_GE(records.size(), 5u);
  EXPECT_EQ(records[records.size() - 5],
            "t+12s lease-lost kube-system/cloud-provider-extraction-migration");
  EXPECT_EQ(records.back(), "t+12s controller-stop route lease lost");
}

TEST_F(ControllerManagerTest, WithoutLeaderElectionStartsAtOnceAndTalksToNoServer) {
  ManagerConfig config = KcmConfig({});
  config.leader_elect = false;
  ControllerManager manager(config, nullptr, nullptr, cluster_.clock(), recorder_, logger_);
  cluster_.clock().set_on_wake([&](absl::Time) { manager.Stop(); });
  EXPECT_EQ(manager.Run(), ManagerOutcome::kStopped);
  EXPECT_EQ(Records().size(), 8u);
  EXPECT_EQ(Records().front(), "t+0 controller-start route main");
  EXPECT_TRUE(cluster_.store().requests().empty());
}

}  // namespace
}  // namespace handoff::standin
