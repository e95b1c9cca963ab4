#include "coordinator/kube/daemonset.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/coordinator/fake_cluster.h"

namespace handoff::kube {
namespace {

using ::handoff::testing::FakeCluster;
using ::testing::HasSubstr;

// The DaemonSet as the chart leaves it, its status as the DaemonSet controller writes it.
Json DaemonSet(int generation, int observed, int desired, int updated, int available,
               const std::string& strategy = "RollingUpdate") {
  Json daemon_set = Json::object();
  daemon_set["apiVersion"] = "apps/v1";
  daemon_set["kind"] = "DaemonSet";
  daemon_set["metadata"] = {{"name", "aws-cloud-controller-manager"},
                            {"namespace", "kube-system"},
                            {"generation", generation}};
  daemon_set["spec"] = Json::object();
  if (!strategy.empty()) daemon_set["spec"]["updateStrategy"] = {{"type", strategy}};
  daemon_set["status"] = {{"currentNumberScheduled", desired},
                          {"desiredNumberScheduled", desired},
                          {"numberAvailable", available},
                          {"numberReady", available},
                          {"observedGeneration", observed},
                          {"updatedNumberScheduled", updated}};
  return daemon_set;
}

TEST(DaemonSetRolloutTest, RolledOutWhenObservedUpdatedAndAvailable) {
  absl::StatusOr<DaemonSetRollout> rollout = DaemonSetRolloutStatus(DaemonSet(2, 2, 3, 3, 3));
  ASSERT_TRUE(rollout.ok()) << rollout.status();
  EXPECT_TRUE(rollout->done);
  EXPECT_EQ(rollout->message,
            "daemon set \"aws-cloud-controller-manager\" successfully rolled out");
}

TEST(DaemonSetRolloutTest, WaitsForTheNewGenerationToBeObserved) {
  // Counts from the previous generation say nothing about the new spec.
  absl::StatusOr<DaemonSetRollout> rollout = DaemonSetRolloutStatus(DaemonSet(3, 2, 3, 3, 3));
  ASSERT_TRUE(rollout.ok()) << rollout.status();
  EXPECT_FALSE(rollout->done);
  EXPECT_EQ(rollout->message, "Waiting for daemon set spec update to be observed...");
}

TEST(DaemonSetRolloutTest, WaitsForEveryPodToBeUpdated) {
  absl::StatusOr<DaemonSetRollout> rollout = DaemonSetRolloutStatus(DaemonSet(2, 2, 3, 1, 3));
  ASSERT_TRUE(rollout.ok()) << rollout.status();
  EXPECT_FALSE(rollout->done);
  EXPECT_EQ(rollout->message,
            "Waiting for daemon set \"aws-cloud-controller-manager\" rollout to finish: 1 out of "
            "3 new pods have been updated...");
}

TEST(DaemonSetRolloutTest, WaitsForEveryUpdatedPodToBeAvailable) {
  absl::StatusOr<DaemonSetRollout> rollout = DaemonSetRolloutStatus(DaemonSet(2, 2, 3, 3, 2));
  ASSERT_TRUE(rollout.ok()) << rollout.status();
  EXPECT_FALSE(rollout->done);
  EXPECT_EQ(rollout->message,
            "Waiting for daemon set \"aws-cloud-controller-manager\" rollout to finish: 2 of 3 "
            "updated pods are available...");
}

TEST(DaemonSetRolloutTest, NoStatusYetIsNotRolledOut) {
  // Just created: generation 1, the controller has not written a status.
  Json daemon_set = DaemonSet(1, 0, 0, 0, 0);
  daemon_set.erase("status");
  absl::StatusOr<DaemonSetRollout> rollout = DaemonSetRolloutStatus(daemon_set);
  ASSERT_TRUE(rollout.ok()) << rollout.status();
  EXPECT_FALSE(rollout->done);
  EXPECT_EQ(rollout->message, "Waiting for daemon set spec update to be observed...");
}

TEST(DaemonSetRolloutTest, NoStrategyIsTheDefaultRollingUpdate) {
  absl::StatusOr<DaemonSetRollout> rollout = DaemonSetRolloutStatus(DaemonSet(1, 1, 2, 2, 2, ""));
  ASSERT_TRUE(rollout.ok()) << rollout.status();
  EXPECT_TRUE(rollout->done);
}

TEST(DaemonSetRolloutTest, OnDeleteCannotBeJudged) {
  absl::StatusOr<DaemonSetRollout> rollout =
      DaemonSetRolloutStatus(DaemonSet(2, 2, 3, 3, 3, "OnDelete"));
  ASSERT_FALSE(rollout.ok());
  EXPECT_EQ(rollout.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(rollout.status().message(),
              HasSubstr("DaemonSet kube-system/aws-cloud-controller-manager: "
                        "spec.updateStrategy.type is OnDelete; rollout status is only available "
                        "for the RollingUpdate strategy type"));
}

TEST(DaemonSetRolloutTest, CountThatIsNotAnIntegerIsRefusedByField) {
  Json daemon_set = DaemonSet(2, 2, 3, 3, 3);
  daemon_set["status"]["numberAvailable"] = "3";
  absl::StatusOr<DaemonSetRollout> rollout = DaemonSetRolloutStatus(daemon_set);
  ASSERT_FALSE(rollout.ok());
  EXPECT_EQ(rollout.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(rollout.status().message(),
              HasSubstr("status.numberAvailable is not an integer (\"3\")"));
}

TEST(GetDaemonSetTest, ReadsItFromTheApiServer) {
  FakeCluster cluster(/*seed=*/false);
  ASSERT_TRUE(cluster.store().Put(DaemonSet(4, 4, 3, 3, 1)).ok());
  std::unique_ptr<KubeClient> client = cluster.Client();
  absl::StatusOr<Json> daemon_set = GetDaemonSet(*client, kAwsCcmNamespace, kAwsCcmDaemonSet);
  ASSERT_TRUE(daemon_set.ok()) << daemon_set.status();
  EXPECT_EQ(ObjectName(*daemon_set), "aws-cloud-controller-manager");
  absl::StatusOr<DaemonSetRollout> rollout = DaemonSetRolloutStatus(*daemon_set);
  ASSERT_TRUE(rollout.ok()) << rollout.status();
  EXPECT_FALSE(rollout->done);
  EXPECT_THAT(rollout->message, HasSubstr("1 of 3 updated pods are available"));

  absl::StatusOr<Json> missing = GetDaemonSet(*client, "kube-system", "not-installed");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace handoff::kube
