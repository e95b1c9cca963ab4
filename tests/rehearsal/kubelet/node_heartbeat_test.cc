#include "rehearsal/kubelet/node_heartbeat.h"

#include <chrono>
#include <thread>

#include "common/fs/file_system.h"
#include "common/kube/resource.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/coordinator/fake_cluster.h"

namespace handoff::sandbox {
namespace {

using ::handoff::testing::FakeCluster;
using ::testing::HasSubstr;
using ::testing::MatchesRegex;

std::string RenewTime(FakeCluster& cluster) {
  std::optional<kube::Json> lease = cluster.store().Get(kube::kLeases, "kube-node-lease", "w-1");
  return lease ? kube::StringAt(*lease, {"spec", "renewTime"}) : "";
}

// Polls the store until `done` holds (the heartbeat's thread writes with nothing to wait on),
// for at most 20 s.
template <typename Done>
bool Eventually(Done done) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (std::chrono::steady_clock::now() < deadline) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return done();
}

TEST(NodeHeartbeatTest, TheNodesLeaseIsCreatedThenRenewedAsTheKubeletsNodeLeaseController) {
  FakeCluster cluster;
  const std::unique_ptr<FileSystem> fs = NewPosixFileSystem("/");
  absl::StatusOr<std::unique_ptr<NodeHeartbeat>> heartbeat = NodeHeartbeat::Start(
      *fs, cluster.WriteKubeconfig(), "w-1", absl::Milliseconds(20));
  ASSERT_TRUE(heartbeat.ok()) << heartbeat.status();
  ASSERT_TRUE(Eventually([&] { return !RenewTime(cluster).empty(); }));
  std::optional<kube::Json> lease = cluster.store().Get(kube::kLeases, "kube-node-lease", "w-1");
  ASSERT_TRUE(lease);
  EXPECT_EQ(kube::StringAt(*lease, {"spec", "holderIdentity"}), "w-1");
  EXPECT_EQ((*lease)["spec"]["leaseDurationSeconds"], 40);
  // metav1.MicroTime: six fractional digits, or the real API server refuses the Lease.
  const std::string first = RenewTime(cluster);
  EXPECT_THAT(first, MatchesRegex("[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:]{8}\\.[0-9]{6}Z"));
  EXPECT_TRUE(Eventually([&] { return RenewTime(cluster) > first; }));
}

TEST(NodeHeartbeatTest, AKubeconfigThatCannotBeReadIsNamed) {
  const std::unique_ptr<FileSystem> fs = NewPosixFileSystem("/");
  absl::StatusOr<std::unique_ptr<NodeHeartbeat>> heartbeat =
      NodeHeartbeat::Start(*fs, "/nonexistent/kubelet.conf", "w-1", absl::Seconds(1));
  ASSERT_FALSE(heartbeat.ok());
  EXPECT_THAT(std::string(heartbeat.status().message()),
              HasSubstr("--kubeconfig=/nonexistent/kubelet.conf"));
}

}  // namespace
}  // namespace handoff::sandbox
