// KubeFactsSource's read of what the preflight's cluster checks need, against the fake API server
// seeded with a healthy kubeadm control plane (tests/testdata/cluster/preflight.yaml): read at
// the first Check, then kept for the interval, and read again sooner while a check fails on it.
#include "coordinator/server/cluster_facts.h"

#include <memory>

#include "coordinator/kube/rbac.h"
#include "coordinator/preflight/cluster_checks.h"
#include "gtest/gtest.h"
#include "tests/coordinator/fake_cluster.h"

namespace handoff::server {
namespace {

using ::handoff::testing::FakeCluster;
using ::handoff::testing::ReadTestdata;

class ClusterFactsTest : public ::testing::Test {
 protected:
  ClusterFactsTest() : cluster_(/*seed=*/false) {
    absl::Status seeded =
        cluster_.store().Seed(ReadTestdata("cluster/preflight.yaml"), "cluster/preflight.yaml");
    EXPECT_TRUE(seeded.ok()) << seeded;
    source_ = std::make_unique<KubeFactsSource>(cluster_.Client(cluster_.Credentials()),
                                                cluster_.clock());
  }

  size_t Reviews() {
    size_t reviews = 0;
    for (const auto& request : cluster_.store().requests()) {
      reviews += request.path == "/apis/authorization.k8s.io/v1/subjectaccessreviews" ? 1 : 0;
    }
    return reviews;
  }

  FakeCluster cluster_;
  std::unique_ptr<KubeFactsSource> source_;
};

TEST_F(ClusterFactsTest, WithoutTheChecksNoViewIsRead) {
  EXPECT_EQ(source_->Check({}).cluster_view, nullptr);
  EXPECT_EQ(Reviews(), 0u);
}

TEST_F(ClusterFactsTest, TheViewIsKeptForTheIntervalAndReadAgainSoonerWhileACheckFails) {
  source_->ReadClusterChecks(preflight::ClusterCheckOptions{}, absl::Seconds(30));
  // The migration-lease RBAC is not applied yet: the rbac check fails on the first view.
  const FactsReport first = source_->Check({});
  ASSERT_NE(first.cluster_view, nullptr);
  EXPECT_TRUE(preflight::AnyFailed(
      preflight::RunClusterChecks(*first.cluster_view, preflight::ClusterCheckOptions{})));
  cluster_.clock().Advance(absl::Seconds(1));
  EXPECT_EQ(source_->Check({}).cluster_view, first.cluster_view);

  ASSERT_TRUE(kube::ApplyRbac(*cluster_.Client(cluster_.Credentials()), kube::RbacOptions{}).ok());
  cluster_.clock().Advance(absl::Seconds(2));  // 3 s since the failing read
  const FactsReport fixed = source_->Check({});
  ASSERT_NE(fixed.cluster_view, first.cluster_view);
  EXPECT_FALSE(preflight::AnyFailed(
      preflight::RunClusterChecks(*fixed.cluster_view, preflight::ClusterCheckOptions{})));

  // Passing, it is kept for the whole interval.
  const size_t reviews = Reviews();
  cluster_.clock().Advance(absl::Seconds(29));
  EXPECT_EQ(source_->Check({}).cluster_view, fixed.cluster_view);
  EXPECT_EQ(Reviews(), reviews);
  cluster_.clock().Advance(absl::Seconds(1));
  EXPECT_NE(source_->Check({}).cluster_view, fixed.cluster_view);
  EXPECT_GT(Reviews(), reviews);
}

// A start's read (ControllerOptions::read_cluster_view): at once, whatever the interval, and the
// view the next Check reports.
TEST_F(ClusterFactsTest, AViewReadNowIsTheOneTheNextCheckReports) {
  EXPECT_EQ(source_->ReadClusterViewNow(), nullptr);  // the checks are not read
  EXPECT_EQ(Reviews(), 0u);
  source_->ReadClusterChecks(preflight::ClusterCheckOptions{}, absl::Seconds(30));
  const FactsReport first = source_->Check({});
  ASSERT_NE(first.cluster_view, nullptr);
  EXPECT_TRUE(preflight::AnyFailed(
      preflight::RunClusterChecks(*first.cluster_view, preflight::ClusterCheckOptions{})));

  ASSERT_TRUE(kube::ApplyRbac(*cluster_.Client(cluster_.Credentials()), kube::RbacOptions{}).ok());
  const size_t reviews = Reviews();
  std::shared_ptr<const preflight::ClusterView> now = source_->ReadClusterViewNow();
  ASSERT_NE(now, nullptr);
  EXPECT_GT(Reviews(), reviews);
  EXPECT_FALSE(
      preflight::AnyFailed(preflight::RunClusterChecks(*now, preflight::ClusterCheckOptions{})));
  EXPECT_EQ(source_->Check({}).cluster_view, now);
}

}  // namespace
}  // namespace handoff::server
