// The coordinator's lease release on the fake API server: holders recorded from the facts when a
// move is sent, a release only for the component the agent proved gone, every decision in the
// audit.
#include "coordinator/server/lease_releaser.h"

#include <memory>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "coordinator/kube/lease.h"
#include "common/kube/resource.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/coordinator/fake_cluster.h"
#include "tests/coordinator/lease_object.h"

namespace handoff::server {
namespace {

using ::handoff::testing::FakeCluster;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::SizeIs;

constexpr char kNode[] = "cp-1";
const std::string kKcmIdentity = "cp-1_7a4e0f0c-5d4e-4c43-a2a9-3f3f1e0b8c11";
const std::string kCcmIdentity = "cp-2_0c9d8e7f-1a2b-4c3d-9e8f-7a6b5c4d3e2f";
constexpr char kMigration[] = "cloud-provider-extraction-migration";

struct AuditEntry {
  std::string kind, node, message, detail;
};

class LeaseReleaserTest : public ::testing::Test {
 protected:
  void SetUp() override {
    renewed_ = cluster_.clock().Now() - absl::Seconds(1);
    PutLease("kube-controller-manager", kKcmIdentity);
    PutLease(kMigration, kKcmIdentity);
    PutLease("cloud-controller-manager", kCcmIdentity);
    releaser_ = std::make_unique<LeaseReleaser>(cluster_.Client(), cluster_.clock());
    releaser_->SetAudit([this](const std::string& kind, const std::string& node,
                               const std::string& message, const std::string& detail) {
      audit_.push_back(AuditEntry{kind, node, message, detail});
    });
  }

  void PutLease(const std::string& name, const std::string& holder) {
    testing::LeaseFields fields;
    fields.name = name;
    fields.holder = holder;
    fields.renewed = renewed_;
    fields.transitions = 2;
    ASSERT_TRUE(cluster_.store().Put(testing::LeaseObject(fields)).ok());
  }
  kube::LeaseInfo Lease(const std::string& name) {
    std::unique_ptr<kube::KubeClient> client = cluster_.Client();
    absl::StatusOr<kube::LeaseInfo> lease = kube::GetLease(*client, "kube-system", name);
    EXPECT_TRUE(lease.ok()) << lease.status();
    return lease.ok() ? *lease : kube::LeaseInfo();
  }

  // The facts as KubeFactsSource reads them: cp-1's KCM holds its lease and the migration
  // lease, cp-2's CCM its own.
  FactsReport Facts() const {
    FactsReport facts;
    facts.held = {{"kube-controller-manager", kKcmIdentity, "cp-1", "kube-controller-manager"},
                  {kMigration, kKcmIdentity, "cp-1", "kube-controller-manager"},
                  {"cloud-controller-manager", kCcmIdentity, "cp-2", "cloud-controller-manager"}};
    return facts;
  }
  pb::ProcessesGone Gone(const std::string& command_id, const std::string& component) const {
    pb::ProcessesGone proof;
    proof.set_command_id(command_id);
    proof.set_component(component);
    proof.add_old_pids(4242);
    proof.set_gone_unix_ms(absl::ToUnixMillis(renewed_ + absl::Milliseconds(500)));
    return proof;
  }

  FakeCluster cluster_;
  absl::Time renewed_;
  std::vector<AuditEntry> audit_;
  std::unique_ptr<LeaseReleaser> releaser_;
};

TEST_F(LeaseReleaserTest, ReleasesTheLeasesOfTheProvenComponentOnTheMovedNodeMigrationFirst) {
  releaser_->MoveSent(kNode, "r1-1", Facts());
  releaser_->ProcessesGone(kNode, Gone("r1-1", "kube-controller-manager"));
  releaser_->Drain();
  for (const char* name : {"kube-controller-manager", kMigration}) {
    const kube::LeaseInfo lease = Lease(name);
    EXPECT_EQ(lease.holder_identity, "") << name;
    EXPECT_EQ(lease.lease_duration_seconds, 1) << name;
  }
  // cp-2's cloud-controller-manager was not on the moved node: untouched.
  EXPECT_EQ(Lease("cloud-controller-manager").holder_identity, kCcmIdentity);
  ASSERT_THAT(audit_, SizeIs(2));
  EXPECT_EQ(audit_[0].kind, "lease-release");
  EXPECT_EQ(audit_[0].node, kNode);
  EXPECT_THAT(audit_[0].message,
              HasSubstr(std::string("released lease ") + kMigration + " of " + kKcmIdentity));
  EXPECT_THAT(audit_[0].message, HasSubstr("old processes 4242 exited by"));
  EXPECT_THAT(audit_[1].message, HasSubstr("released lease kube-controller-manager"));
  const kube::Json detail = kube::Json::parse(audit_[1].detail);
  EXPECT_EQ(detail["outcome"], "released");
  EXPECT_EQ(detail["recorded"]["identity"], kKcmIdentity);
  EXPECT_EQ(detail["recorded"]["commandId"], "r1-1");
  EXPECT_EQ(detail["proof"]["oldPids"][0], 4242);
  EXPECT_EQ(detail["after"]["holderIdentity"], "");
}

TEST_F(LeaseReleaserTest, AProofOfAnotherComponentOrMoveOrNodeReleasesNothing) {
  releaser_->MoveSent(kNode, "r1-1", Facts());
  // cp-1's cloud-controller-manager held nothing; a proof for an older command counts for nothing.
  releaser_->ProcessesGone(kNode, Gone("r1-1", "cloud-controller-manager"));
  releaser_->ProcessesGone(kNode, Gone("r1-0", "kube-controller-manager"));
  // cp-3 held nothing before its move.
  releaser_->MoveSent("cp-3", "r1-2", Facts());
  releaser_->ProcessesGone("cp-3", Gone("r1-2", "kube-controller-manager"));
  releaser_->Drain();
  EXPECT_EQ(Lease("kube-controller-manager").holder_identity, kKcmIdentity);
  EXPECT_EQ(Lease(kMigration).holder_identity, kKcmIdentity);
  EXPECT_THAT(audit_, IsEmpty());
}

TEST_F(LeaseReleaserTest, AHolderThatRenewedAfterTheProofIsNotTouchedAndTheAuditSaysWhy) {
  releaser_->MoveSent(kNode, "r1-1", Facts());
  const pb::ProcessesGone proof = Gone("r1-1", "kube-controller-manager");
  renewed_ += absl::Seconds(2);  // renewed after the proof's moment: alive
  PutLease("kube-controller-manager", kKcmIdentity);
  PutLease(kMigration, kKcmIdentity);
  releaser_->ProcessesGone(kNode, proof);
  releaser_->Drain();
  EXPECT_EQ(Lease("kube-controller-manager").holder_identity, kKcmIdentity);
  EXPECT_EQ(Lease(kMigration).holder_identity, kKcmIdentity);
  ASSERT_THAT(audit_, SizeIs(2));
  for (const AuditEntry& entry : audit_) {
    EXPECT_THAT(entry.message, HasSubstr("not released (not touched)"));
    EXPECT_EQ(kube::Json::parse(entry.detail)["outcome"], "not touched");
  }
}

TEST_F(LeaseReleaserTest, ANewMoveOfTheNodeForgetsTheHoldersRecordedForTheLastOne) {
  releaser_->MoveSent(kNode, "r1-1", Facts());
  releaser_->Drain();
  // By the next move of cp-1, cp-3's managers hold the leases.
  const std::string cp3 = "cp-3_0c9d2f41-7a55-4f0b-9d1e-2b7c8e5a6f30";
  PutLease("kube-controller-manager", cp3);
  PutLease(kMigration, cp3);
  releaser_->MoveSent(kNode, "r1-2", Facts());
  releaser_->ProcessesGone(kNode, Gone("r1-1", "kube-controller-manager"));
  releaser_->ProcessesGone(kNode, Gone("r1-2", "kube-controller-manager"));
  releaser_->Drain();
  EXPECT_EQ(Lease("kube-controller-manager").holder_identity, cp3);
  EXPECT_EQ(Lease(kMigration).holder_identity, cp3);
  EXPECT_THAT(audit_, IsEmpty());
}

// The facts are up to --facts-interval old: the holders are read when the move is sent.
TEST_F(LeaseReleaserTest, TheHoldersAreReadWhenTheMoveIsSentNotTakenFromTheFacts) {
  FactsReport stale;  // the last facts knew of no holder on cp-1
  stale.held = {{"kube-controller-manager", "cp-2_old", "cp-2", "kube-controller-manager"}};
  releaser_->MoveSent(kNode, "r1-1", stale);
  releaser_->ProcessesGone(kNode, Gone("r1-1", "kube-controller-manager"));
  releaser_->Drain();
  EXPECT_EQ(Lease("kube-controller-manager").holder_identity, "");
  EXPECT_EQ(Lease(kMigration).holder_identity, "");
  EXPECT_THAT(audit_, SizeIs(2));
}

}  // namespace
}  // namespace handoff::server
