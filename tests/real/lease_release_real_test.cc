// The proof-based lease release (coordinator/kube/lease_release.h) against a real kube-apiserver
// 1.26: what it stores for client-go's voluntary release, that a live holder is never written,
// and that a concurrent writer between the read and the guarded PUT makes it back off.
#include <memory>
#include <string>

#include "absl/time/clock.h"
#include "common/system/clock.h"
#include "common/kube/client.h"
#include "common/kube/http_transport.h"
#include "coordinator/kube/lease.h"
#include "coordinator/kube/lease_release.h"
#include "common/kube/resource.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/coordinator/kube/interposing_transport.h"
#include "tests/coordinator/lease_object.h"
#include "tests/real/real_cluster.h"

namespace handoff {
namespace {

using kube::Json;
using kube::ReleaseOutcome;
using ::testing::HasSubstr;

constexpr char kNode[] = "ip-10-0-1-11.ec2.internal";
const std::string kKcm = std::string(kNode) + "_6d3f1c2e-0000-4000-8000-000000000001";
const std::string kCcm = "ip-10-0-2-12.ec2.internal_0c9d8e7f-1a2b-4c3d-9e8f-7a6b5c4d3e2f";
constexpr char kLease[] = "kube-controller-manager";

class LeaseReleaseRealTest : public ::testing::Test {
 protected:
  void SetUp() override {
    HANDOFF_REAL_CLUSTER_OR_SKIP(cluster);
    absl::StatusOr<std::unique_ptr<kube::KubeClient>> admin =
        cluster.Client(cluster.AdminCredentials(), *clock_);
    ASSERT_TRUE(admin.ok()) << admin.status();
    admin_ = *std::move(admin);
    // The client under test speaks through a transport the test can step into.
    const kube::ClusterCredentials credentials = cluster.AdminCredentials();
    absl::StatusOr<std::unique_ptr<kube::HttpTransport>> inner =
        kube::NewCurlTransport(credentials);
    ASSERT_TRUE(inner.ok()) << inner.status();
    auto transport = std::make_unique<testing::InterposingTransport>(*std::move(inner));
    transport_ = transport.get();
    client_ = std::make_unique<kube::KubeClient>(std::move(transport), *clock_,
                                                 kube::ClientOptionsFor(credentials));
    gone_at_ = absl::Now() - absl::Seconds(1);
    PutLease(kKcm, gone_at_ - absl::Milliseconds(1800));
  }


  // A fresh kube-system/kube-controller-manager held by `holder`, renewed at `renewed`.
  void PutLease(const std::string& holder, absl::Time renewed) {
    testing::LeaseFields fields;
    fields.name = kLease;
    fields.holder = holder;
    fields.renewed = renewed;
    fields.transitions = 3;
    fields.labels = {{"owner", "kubeadm"}};
    const Json lease = testing::LeaseObject(fields);
    absl::Status removed = admin_->Delete(Ref());
    ASSERT_TRUE(removed.ok() || absl::IsNotFound(removed)) << removed;
    absl::StatusOr<Json> created = admin_->Create(kube::kLeases, "kube-system", lease);
    ASSERT_TRUE(created.ok()) << created.status();
  }

  static kube::ObjectRef Ref() { return {&kube::kLeases, "kube-system", kLease}; }

  kube::LeaseInfo Current() {
    absl::StatusOr<kube::LeaseInfo> lease = kube::GetLease(*admin_, "kube-system", kLease);
    EXPECT_TRUE(lease.ok()) << lease.status();
    return lease.ok() ? *lease : kube::LeaseInfo();
  }

  void Change(const std::function<void(Json&)>& change) {
    absl::StatusOr<kube::MutateResult> changed =
        admin_->Mutate(Ref(), [&change](Json& lease) {
          change(lease);
          return absl::StatusOr<bool>(true);
        });
    ASSERT_TRUE(changed.ok()) << changed.status();
  }

  static kube::RecordedHolder Recorded() {
    kube::RecordedHolder recorded;
    recorded.lease = kLease;
    recorded.identity = kKcm;
    recorded.node = kNode;
    recorded.component = "kube-controller-manager";
    return recorded;
  }

  kube::ExitProof Proof() const {
    kube::ExitProof proof;
    proof.node = kNode;
    proof.component = "kube-controller-manager";
    proof.old_pids = {31337};
    proof.gone_at = gone_at_;
    return proof;
  }

  absl::StatusOr<ReleaseOutcome> Release() {
    return kube::ReleaseIfDead(*client_, *clock_, Recorded(), Proof());
  }

  std::unique_ptr<Clock> clock_ = NewRealClock();
  std::unique_ptr<kube::KubeClient> admin_;
  testing::InterposingTransport* transport_ = nullptr;
  std::unique_ptr<kube::KubeClient> client_;
  absl::Time gone_at_;
};

TEST_F(LeaseReleaseRealTest, TheServerStoresTheReleaseOfADeadHolder) {
  const kube::LeaseInfo before = Current();
  absl::StatusOr<ReleaseOutcome> outcome = Release();
  ASSERT_TRUE(outcome.ok()) << outcome.status();
  ASSERT_EQ(outcome->kind, ReleaseOutcome::Kind::kReleased) << outcome->detail;
  ASSERT_TRUE(outcome->after.has_value());

  absl::StatusOr<Json> stored = admin_->Get(Ref());
  ASSERT_TRUE(stored.ok()) << stored.status();
  // holderIdentity is kept as "" (client-go sends a pointer to ""), not dropped.
  EXPECT_EQ((*stored)["spec"]["holderIdentity"], "") << stored->dump();
  EXPECT_EQ((*stored)["spec"]["leaseDurationSeconds"], 1);
  EXPECT_EQ((*stored)["spec"]["leaseTransitions"], 3);
  EXPECT_EQ((*stored)["metadata"]["labels"]["owner"], "kubeadm");
  const kube::LeaseInfo after = Current();
  EXPECT_EQ(after.renew_time, outcome->after->renew_time);
  EXPECT_EQ(after.acquire_time, after.renew_time);
  EXPECT_GT(*after.renew_time, gone_at_);
  EXPECT_NE(after.resource_version, before.resource_version);
  EXPECT_EQ(after.resource_version, outcome->after->resource_version);
  EXPECT_EQ(transport_->sent("PUT"), 1);
}

TEST_F(LeaseReleaseRealTest, AHolderThatRenewedAfterTheProofIsUntouched) {
  PutLease(kKcm, gone_at_ + absl::Milliseconds(300));
  const kube::LeaseInfo before = Current();
  absl::StatusOr<ReleaseOutcome> outcome = Release();
  ASSERT_TRUE(outcome.ok()) << outcome.status();
  EXPECT_EQ(outcome->kind, ReleaseOutcome::Kind::kNotTouched);
  EXPECT_THAT(outcome->detail, HasSubstr("the holder is alive"));
  EXPECT_EQ(transport_->sent("PUT"), 0);
  const kube::LeaseInfo after = Current();
  EXPECT_EQ(after.resource_version, before.resource_version);
  EXPECT_EQ(after.holder_identity, kKcm);
  EXPECT_EQ(after.lease_duration_seconds, 15);
}

TEST_F(LeaseReleaseRealTest, AConflictToANewHolderIsALostRaceAndTheNewHolderStays) {
  std::string taken_version;
  transport_->BeforeNext("PUT", 1, [&](const kube::HttpRequest&) {
    Change([](Json& lease) {
      lease["spec"]["holderIdentity"] = kCcm;
      lease["spec"]["leaseTransitions"] = 4;
      lease["spec"]["acquireTime"] = testing::MicroTime(absl::Now());
      lease["spec"]["renewTime"] = testing::MicroTime(absl::Now());
    });
    taken_version = Current().resource_version;
  });
  absl::StatusOr<ReleaseOutcome> outcome = Release();
  ASSERT_TRUE(outcome.ok()) << outcome.status();
  EXPECT_EQ(outcome->kind, ReleaseOutcome::Kind::kLostRace) << outcome->detail;
  EXPECT_EQ(outcome->conflicts, 1);
  EXPECT_THAT(outcome->detail, HasSubstr("held by " + kCcm + " now, not the recorded " + kKcm));
  EXPECT_EQ(transport_->sent("PUT"), 1);
  const kube::LeaseInfo after = Current();
  EXPECT_EQ(after.holder_identity, kCcm);
  EXPECT_EQ(after.lease_transitions, 4);
  EXPECT_EQ(after.lease_duration_seconds, 15);
  EXPECT_EQ(after.resource_version, taken_version);
}

TEST_F(LeaseReleaseRealTest, AConflictThatKeepsTheHolderIsRetriedAndReleases) {
  transport_->BeforeNext("PUT", 1, [&](const kube::HttpRequest&) {
    Change([](Json& lease) { lease["metadata"]["labels"]["audited"] = "yes"; });
  });
  absl::StatusOr<ReleaseOutcome> outcome = Release();
  ASSERT_TRUE(outcome.ok()) << outcome.status();
  EXPECT_EQ(outcome->kind, ReleaseOutcome::Kind::kReleased) << outcome->detail;
  EXPECT_EQ(outcome->conflicts, 1);
  EXPECT_EQ(transport_->sent("PUT"), 2);
  absl::StatusOr<Json> stored = admin_->Get(Ref());
  ASSERT_TRUE(stored.ok()) << stored.status();
  EXPECT_EQ((*stored)["spec"]["holderIdentity"], "");
  EXPECT_EQ((*stored)["spec"]["leaseDurationSeconds"], 1);
  EXPECT_EQ((*stored)["metadata"]["labels"]["audited"], "yes");
}

TEST_F(LeaseReleaseRealTest, ALeaseDeletedBeforeTheWriteIsNotCreatedAgain) {
  // Leases allow create-on-update (a PUT to a missing name creates it), but the PUT carries the
  // deleted lease's uid, a precondition the missing object fails: 409, not a new released lease.
  transport_->BeforeNext("PUT", 1, [&](const kube::HttpRequest&) {
    ASSERT_TRUE(admin_->Delete(Ref()).ok());
  });
  absl::StatusOr<ReleaseOutcome> outcome = Release();
  ASSERT_TRUE(outcome.ok()) << outcome.status();
  EXPECT_EQ(outcome->kind, ReleaseOutcome::Kind::kLostRace) << outcome->detail;
  EXPECT_EQ(outcome->conflicts, 1) << outcome->detail;
  EXPECT_THAT(outcome->detail, HasSubstr("deleted while it was being released (409)"));
  EXPECT_TRUE(absl::IsNotFound(admin_->Get(Ref()).status()));
}

}  // namespace
}  // namespace handoff
