#include "coordinator/kube/lease_release.h"

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/coordinator/fake_cluster.h"
#include "tests/coordinator/lease_object.h"
#include "tests/coordinator/kube/interposing_transport.h"

namespace handoff::kube {
namespace {

using ::handoff::testing::FakeCluster;
using ::handoff::testing::InterposingTransport;
using ::testing::HasSubstr;
using ::testing::StartsWith;

constexpr char kNodeA[] = "ip-10-0-1-10.ec2.internal";
constexpr char kNodeB[] = "ip-10-0-1-11.ec2.internal";
const std::string kKcmA = std::string(kNodeA) + "_7a4e0f0c-5d4e-4c43-a2a9-3f3f1e0b8c11";
// The same node's kube-controller-manager after a restart: a new uuid.
const std::string kKcmARestarted = std::string(kNodeA) + "_3b1d9a52-0e7c-4f6b-8d21-5c9e4a7f1b03";
const std::string kCcmB = std::string(kNodeB) + "_0c9d8e7f-1a2b-4c3d-9e8f-7a6b5c4d3e2f";
constexpr char kKcm[] = "kube-controller-manager";
constexpr char kCcm[] = "cloud-controller-manager";

RecordedHolder Recorded() {
  RecordedHolder recorded;
  recorded.lease = kKcm;
  recorded.identity = kKcmA;
  recorded.node = kNodeA;
  recorded.component = kKcm;
  return recorded;
}

ExitProof Proof(absl::Time gone_at) {
  ExitProof proof;
  proof.node = kNodeA;
  proof.component = kKcm;
  proof.old_pids = {4242, 4250};
  proof.gone_at = gone_at;
  return proof;
}

// ---- DecideRelease ----

const absl::Time kGone = absl::FromUnixMicros(1'700'000'000'250'000);

LeaseInfo HeldLease() {
  LeaseInfo lease;
  lease.ns = "kube-system";
  lease.name = kKcm;
  lease.holder_identity = kKcmA;
  lease.renew_time = kGone - absl::Milliseconds(1800);
  lease.acquire_time = kGone - absl::Hours(1);
  lease.lease_duration_seconds = 15;
  lease.lease_transitions = 3;
  return lease;
}

struct DecideCase {
  std::string name;
  std::function<void(RecordedHolder&, std::optional<ExitProof>&, std::optional<LeaseInfo>&)>
      change;
  std::string reason;  // what the refusal says, after "kube-system/kube-controller-manager ..."
};

TEST(DecideReleaseTest, AllConditionsTogetherRelease) {
  const ReleaseDecision decision = DecideRelease(Recorded(), Proof(kGone), HeldLease());
  EXPECT_TRUE(decision.release);
  EXPECT_EQ(decision.reason,
            "kube-system/kube-controller-manager released from " + kKcmA +
                ": every old kube-controller-manager process on ip-10-0-1-10.ec2.internal "
                "(pid 4242, 4250) was gone at 2023-11-14T22:13:20.25Z, the lease was last renewed "
                "at 2023-11-14T22:13:18.45Z");
}

TEST(DecideReleaseTest, RenewedExactlyWhenTheProcessesWereSeenGoneReleases) {
  std::optional<LeaseInfo> lease = HeldLease();
  lease->renew_time = kGone;
  EXPECT_TRUE(DecideRelease(Recorded(), Proof(kGone), lease).release);
}

TEST(DecideReleaseTest, EachConditionAloneRefuses) {
  const std::vector<DecideCase> cases = {
      {"no proof", [](auto&, auto& proof, auto&) { proof.reset(); },
       "no proof that kube-controller-manager on ip-10-0-1-10.ec2.internal exited"},
      {"proof from another node", [](auto&, auto& proof, auto&) { proof->node = kNodeB; },
       "the exit proof is from node ip-10-0-1-11.ec2.internal, but the recorded holder ran on "
       "ip-10-0-1-10.ec2.internal"},
      {"proof for another component", [](auto&, auto& proof, auto&) { proof->component = kCcm; },
       "the exit proof is for cloud-controller-manager, but the recorded holder is "
       "kube-controller-manager"},
      {"proof of no process", [](auto&, auto& proof, auto&) { proof->old_pids.clear(); },
       "the exit proof names no old process of kube-controller-manager on "
       "ip-10-0-1-10.ec2.internal"},
      {"no lease", [](auto&, auto&, auto& lease) { lease.reset(); }, "the lease does not exist"},
      {"already released", [](auto&, auto&, auto& lease) { lease->holder_identity.clear(); },
       "already released (holderIdentity is empty)"},
      {"identity changed",
       [](auto&, auto&, auto& lease) { lease->holder_identity = kKcmARestarted; },
       "held by " + kKcmARestarted + " now, not the recorded " + kKcmA},
      {"another manager holds it",
       [](auto&, auto&, auto& lease) { lease->holder_identity = kCcmB; },
       "held by " + kCcmB + " now, not the recorded " + kKcmA},
      {"nothing recorded",
       [](auto& recorded, auto&, auto& lease) {
         recorded.identity.clear();
         lease->holder_identity.clear();
       },
       "no holder identity was recorded before the move"},
      {"nothing recorded, lease held",
       [](auto& recorded, auto&, auto&) { recorded.identity.clear(); },
       "no holder identity was recorded before the move"},
      {"no renewTime", [](auto&, auto&, auto& lease) { lease->renew_time.reset(); },
       "it has no renewTime, so a renewal after the exit proof cannot be ruled out"},
      {"renewed after the proof",
       [](auto&, auto&, auto& lease) { lease->renew_time = kGone + absl::Microseconds(1); },
       "renewed at 2023-11-14T22:13:20.250001Z, after the old processes were seen gone at "
       "2023-11-14T22:13:20.25Z: the holder is alive"},
  };
  for (const DecideCase& each : cases) {
    RecordedHolder recorded = Recorded();
    std::optional<ExitProof> proof = Proof(kGone);
    std::optional<LeaseInfo> lease = HeldLease();
    each.change(recorded, proof, lease);
    const ReleaseDecision decision = DecideRelease(recorded, proof, lease);
    EXPECT_FALSE(decision.release) << each.name;
    EXPECT_EQ(decision.reason, "kube-system/kube-controller-manager not touched: " + each.reason)
        << each.name;
  }
}

// ---- ReleaseIfDead against the fake API server ----

class ReleaseIfDeadTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::unique_ptr<HttpTransport>> inner =
        NewCurlTransport(cluster_.Credentials());
    ASSERT_TRUE(inner.ok()) << inner.status();
    auto transport = std::make_unique<InterposingTransport>(*std::move(inner));
    transport_ = transport.get();
    client_ = std::make_unique<KubeClient>(std::move(transport), cluster_.clock(),
                                           ClientOptionsFor(cluster_.Credentials()));
    other_ = cluster_.Client();
    // The manager on node A renewed 1.8 s before its processes were seen gone, as the last renewal
    // before a SIGTERM; the coordinator asks 1 s later.
    gone_at_ = cluster_.clock().Now() - absl::Seconds(1);
    PutLease(kKcmA, gone_at_ - absl::Milliseconds(1800));
  }

  // Writes the lease as a manager's leader election would, with a label to show the release
  // keeps the metadata it read.
  void PutLease(const std::string& holder, absl::Time renewed) {
    testing::LeaseFields fields;
    fields.name = kKcm;
    fields.holder = holder;
    fields.renewed = renewed;
    fields.transitions = 3;
    fields.labels = {{"owner", "kubeadm"}};
    ASSERT_TRUE(cluster_.store().Put(testing::LeaseObject(fields)).ok());
  }

  const ObjectRef& Ref() const { return ref_; }
  LeaseInfo Current() {
    absl::StatusOr<LeaseInfo> lease = GetLease(*other_, "kube-system", kKcm);
    EXPECT_TRUE(lease.ok()) << lease.status();
    return lease.ok() ? *lease : LeaseInfo();
  }
  // Another writer's change to the lease, through the second client.
  void Change(const std::function<void(Json&)>& change) {
    absl::StatusOr<MutateResult> changed = other_->Mutate(Ref(), [&change](Json& lease) {
      change(lease);
      return absl::StatusOr<bool>(true);
    });
    ASSERT_TRUE(changed.ok()) << changed.status();
  }

  absl::StatusOr<ReleaseOutcome> Release(const std::optional<ExitProof>& proof) {
    return ReleaseIfDead(*client_, cluster_.clock(), Recorded(), proof);
  }

  FakeCluster cluster_;
  InterposingTransport* transport_ = nullptr;
  std::unique_ptr<KubeClient> client_;
  std::unique_ptr<KubeClient> other_;
  absl::Time gone_at_;
  const ObjectRef ref_{&kLeases, "kube-system", kKcm};
};

TEST_F(ReleaseIfDeadTest, ReleasesTheLeaseOfADeadHolderAsClientGoWould) {
  const LeaseInfo before = Current();
  cluster_.clock().Advance(absl::Milliseconds(7));
  absl::StatusOr<ReleaseOutcome> outcome = Release(Proof(gone_at_));
  ASSERT_TRUE(outcome.ok()) << outcome.status();
  EXPECT_EQ(outcome->kind, ReleaseOutcome::Kind::kReleased) << outcome->detail;
  EXPECT_EQ(outcome->conflicts, 0);
  const absl::Time now = cluster_.clock().Now();

  const LeaseInfo after = Current();
  EXPECT_EQ(after.holder_identity, "");
  EXPECT_EQ(after.lease_duration_seconds, 1);
  EXPECT_EQ(after.lease_transitions, 3);
  EXPECT_EQ(after.renew_time, now);
  EXPECT_EQ(after.acquire_time, now);
  EXPECT_NE(after.resource_version, before.resource_version);
  ASSERT_TRUE(outcome->after.has_value());
  EXPECT_EQ(outcome->after->resource_version, after.resource_version);
  ASSERT_TRUE(outcome->before.has_value());
  EXPECT_EQ(outcome->before->resource_version, before.resource_version);
  EXPECT_EQ(outcome->before->holder_identity, kKcmA);

  // One guarded PUT: the resourceVersion read, the whole spec as client-go writes it (six
  // fractional digits even where they are zeros), the metadata kept.
  ASSERT_EQ(transport_->sent("PUT"), 1);
  const Json put = Json::parse(transport_->bodies("PUT")[0]);
  EXPECT_EQ(put["metadata"]["resourceVersion"], before.resource_version);
  EXPECT_EQ(put["metadata"]["labels"]["owner"], "kubeadm");
  EXPECT_EQ(put["spec"], Json::parse(R"({"holderIdentity": "", "leaseDurationSeconds": 1,
      "acquireTime": "2023-11-14T22:13:20.007000Z", "renewTime": "2023-11-14T22:13:20.007000Z",
      "leaseTransitions": 3})"));
  absl::StatusOr<Json> stored = other_->Get(Ref());
  ASSERT_TRUE(stored.ok()) << stored.status();
  EXPECT_EQ((*stored)["metadata"]["labels"]["owner"], "kubeadm");

  EXPECT_THAT(outcome->detail,
              StartsWith("kube-system/kube-controller-manager released from " + kKcmA));
  EXPECT_THAT(outcome->detail,
              HasSubstr("; wrote holderIdentity \"\", leaseDurationSeconds 1, acquireTime and "
                        "renewTime 2023-11-14T22:13:20.007000Z, leaseTransitions 3 "
                        "(resourceVersion " +
                        before.resource_version + " -> " + after.resource_version + ")"));
}

TEST_F(ReleaseIfDeadTest, AHolderThatRenewedAfterTheProofIsNeverWritten) {
  PutLease(kKcmA, gone_at_ + absl::Milliseconds(200));
  const LeaseInfo before = Current();
  absl::StatusOr<ReleaseOutcome> outcome = Release(Proof(gone_at_));
  ASSERT_TRUE(outcome.ok()) << outcome.status();
  EXPECT_EQ(outcome->kind, ReleaseOutcome::Kind::kNotTouched);
  EXPECT_THAT(outcome->detail, HasSubstr("the holder is alive"));
  EXPECT_EQ(transport_->sent("PUT"), 0);
  EXPECT_EQ(Current().resource_version, before.resource_version);
  EXPECT_EQ(Current().holder_identity, kKcmA);
}

TEST_F(ReleaseIfDeadTest, AChangedIdentityIsNeverWritten) {
  PutLease(kKcmARestarted, gone_at_ - absl::Seconds(5));
  const LeaseInfo before = Current();
  absl::StatusOr<ReleaseOutcome> outcome = Release(Proof(gone_at_));
  ASSERT_TRUE(outcome.ok()) << outcome.status();
  EXPECT_EQ(outcome->kind, ReleaseOutcome::Kind::kNotTouched);
  EXPECT_THAT(outcome->detail, HasSubstr("held by " + kKcmARestarted + " now, not the recorded"));
  EXPECT_EQ(transport_->sent("PUT"), 0);
  EXPECT_EQ(Current().resource_version, before.resource_version);
}

TEST_F(ReleaseIfDeadTest, WithoutProofNothingIsWritten) {
  const LeaseInfo before = Current();
  absl::StatusOr<ReleaseOutcome> outcome = Release(std::nullopt);
  ASSERT_TRUE(outcome.ok()) << outcome.status();
  EXPECT_EQ(outcome->kind, ReleaseOutcome::Kind::kNotTouched);
  EXPECT_THAT(outcome->detail, HasSubstr("no proof that kube-controller-manager on"));
  EXPECT_EQ(transport_->sent("PUT"), 0);
  EXPECT_EQ(Current().resource_version, before.resource_version);
}

TEST_F(ReleaseIfDeadTest, AMissingLeaseIsNotTouched) {
  ASSERT_TRUE(other_->Delete(Ref()).ok());
  absl::StatusOr<ReleaseOutcome> outcome = Release(Proof(gone_at_));
  ASSERT_TRUE(outcome.ok()) << outcome.status();
  EXPECT_EQ(outcome->kind, ReleaseOutcome::Kind::kNotTouched);
  EXPECT_FALSE(outcome->before.has_value());
  EXPECT_EQ(outcome->detail,
            "kube-system/kube-controller-manager not touched: the lease does not exist");
  EXPECT_EQ(transport_->sent("PUT"), 0);
  EXPECT_EQ(transport_->sent("POST"), 0);
}

TEST_F(ReleaseIfDeadTest, AConflictThatRereadsToANewHolderIsALostRace) {
  // Between the read and the write, the cloud-controller-manager on node B takes the lease.
  std::string taken_version;
  transport_->BeforeNext("PUT", 1, [&](const HttpRequest&) {
    Change([&](Json& lease) {
      lease["spec"]["holderIdentity"] = kCcmB;
      lease["spec"]["leaseTransitions"] = 4;
      lease["spec"]["acquireTime"] = testing::MicroTime(cluster_.clock().Now());
      lease["spec"]["renewTime"] = testing::MicroTime(cluster_.clock().Now());
    });
    taken_version = Current().resource_version;
  });
  absl::StatusOr<ReleaseOutcome> outcome = Release(Proof(gone_at_));
  ASSERT_TRUE(outcome.ok()) << outcome.status();
  EXPECT_EQ(outcome->kind, ReleaseOutcome::Kind::kLostRace);
  EXPECT_EQ(outcome->conflicts, 1);
  EXPECT_EQ(outcome->detail, "kube-system/kube-controller-manager not touched: held by " + kCcmB +
                                 " now, not the recorded " + kKcmA + " (409)");
  ASSERT_TRUE(outcome->before.has_value());
  EXPECT_EQ(outcome->before->holder_identity, kCcmB);
  EXPECT_FALSE(outcome->after.has_value());
  EXPECT_EQ(transport_->sent("PUT"), 1);
  const LeaseInfo now_there = Current();
  EXPECT_EQ(now_there.holder_identity, kCcmB);
  EXPECT_EQ(now_there.lease_transitions, 4);
  EXPECT_EQ(now_there.lease_duration_seconds, 15);
  EXPECT_EQ(now_there.resource_version, taken_version);
}

TEST_F(ReleaseIfDeadTest, AConflictThatRereadsToAReleasedLeaseIsALostRace) {
  transport_->BeforeNext("PUT", 1, [&](const HttpRequest&) {
    Change([](Json& lease) { lease["spec"]["holderIdentity"] = ""; });
  });
  absl::StatusOr<ReleaseOutcome> outcome = Release(Proof(gone_at_));
  ASSERT_TRUE(outcome.ok()) << outcome.status();
  EXPECT_EQ(outcome->kind, ReleaseOutcome::Kind::kLostRace);
  EXPECT_THAT(outcome->detail, HasSubstr("released by someone else meanwhile (409)"));
  EXPECT_EQ(transport_->sent("PUT"), 1);
  EXPECT_EQ(Current().lease_duration_seconds, 15);
}

TEST_F(ReleaseIfDeadTest, AConflictThatRereadsToNoLeaseIsALostRace) {
  transport_->BeforeNext("PUT", 1,
                         [&](const HttpRequest&) { ASSERT_TRUE(other_->Delete(Ref()).ok()); });
  absl::StatusOr<ReleaseOutcome> outcome = Release(Proof(gone_at_));
  ASSERT_TRUE(outcome.ok()) << outcome.status();
  EXPECT_EQ(outcome->kind, ReleaseOutcome::Kind::kLostRace);
  EXPECT_EQ(outcome->detail,
            "kube-system/kube-controller-manager not touched: deleted while it was being released "
            "(404)");
  EXPECT_FALSE(outcome->before.has_value());
  EXPECT_TRUE(absl::IsNotFound(other_->Get(Ref()).status()));
}

TEST_F(ReleaseIfDeadTest, AConflictThatKeepsTheHolderIsDecidedAgainAndReleased) {
  // Something else labels the lease between the read and the write; the holder is still the dead
  // one, so the retry, guarded by the new resourceVersion, releases it and keeps the label.
  transport_->BeforeNext("PUT", 1, [&](const HttpRequest&) {
    Change([](Json& lease) { lease["metadata"]["labels"]["audited"] = "yes"; });
  });
  absl::StatusOr<ReleaseOutcome> outcome = Release(Proof(gone_at_));
  ASSERT_TRUE(outcome.ok()) << outcome.status();
  EXPECT_EQ(outcome->kind, ReleaseOutcome::Kind::kReleased) << outcome->detail;
  EXPECT_EQ(outcome->conflicts, 1);
  ASSERT_EQ(transport_->sent("PUT"), 2);
  const Json first = Json::parse(transport_->bodies("PUT")[0]);
  const Json second = Json::parse(transport_->bodies("PUT")[1]);
  EXPECT_NE(first["metadata"]["resourceVersion"], second["metadata"]["resourceVersion"]);
  EXPECT_EQ(second["metadata"]["labels"]["audited"], "yes");
  const LeaseInfo after = Current();
  EXPECT_EQ(after.holder_identity, "");
  EXPECT_EQ(after.lease_duration_seconds, 1);
  EXPECT_EQ(after.lease_transitions, 3);
  absl::StatusOr<Json> stored = other_->Get(Ref());
  ASSERT_TRUE(stored.ok());
  EXPECT_EQ((*stored)["metadata"]["labels"]["audited"], "yes");
}

TEST_F(ReleaseIfDeadTest, ARenewalDuringTheReleaseIsNotTouched) {
  // The holder was not dead after all: it renews between the read and the write. The 409's
  // re-read shows the renewal, and the second decision refuses.
  transport_->BeforeNext("PUT", 1, [&](const HttpRequest&) {
    Change([&](Json& lease) {
      lease["spec"]["renewTime"] = testing::MicroTime(gone_at_ + absl::Milliseconds(500));
    });
  });
  absl::StatusOr<ReleaseOutcome> outcome = Release(Proof(gone_at_));
  ASSERT_TRUE(outcome.ok()) << outcome.status();
  EXPECT_EQ(outcome->kind, ReleaseOutcome::Kind::kNotTouched);
  EXPECT_THAT(outcome->detail, HasSubstr("the holder is alive (re-read after 1 conflict(s))"));
  EXPECT_EQ(transport_->sent("PUT"), 1);
  EXPECT_EQ(Current().holder_identity, kKcmA);
  EXPECT_EQ(Current().lease_duration_seconds, 15);
}

TEST_F(ReleaseIfDeadTest, ConflictsThatKeepComingEndAfterThreeWrites) {
  int changes = 0;
  transport_->BeforeNext("PUT", 10, [&](const HttpRequest&) {
    ++changes;
    Change([&](Json& lease) { lease["metadata"]["labels"]["change"] = std::to_string(changes); });
  });
  absl::StatusOr<ReleaseOutcome> outcome = Release(Proof(gone_at_));
  ASSERT_TRUE(outcome.ok()) << outcome.status();
  EXPECT_EQ(outcome->kind, ReleaseOutcome::Kind::kNotTouched);
  EXPECT_EQ(outcome->conflicts, kMaxReleaseAttempts);
  EXPECT_EQ(transport_->sent("PUT"), kMaxReleaseAttempts);
  EXPECT_THAT(outcome->detail, HasSubstr("3 writes in a row met a conflict while it still named"));
  EXPECT_EQ(Current().holder_identity, kKcmA);
}

TEST_F(ReleaseIfDeadTest, AReleaseWhoseAnswerWasLostIsRecognised) {
  // The server applies the PUT but the answer is lost; the client repeats the PUT (it is
  // idempotent), which meets the first one's write as a conflict. The re-read shows our release.
  transport_->LoseNextAnswer("PUT", absl::InternalError("connection reset after sending"));
  absl::StatusOr<ReleaseOutcome> outcome = Release(Proof(gone_at_));
  ASSERT_TRUE(outcome.ok()) << outcome.status();
  EXPECT_EQ(outcome->kind, ReleaseOutcome::Kind::kReleased) << outcome->detail;
  EXPECT_EQ(outcome->conflicts, 1);
  EXPECT_EQ(transport_->sent("PUT"), 2);
  EXPECT_THAT(outcome->detail, HasSubstr("its answer was lost"));
  ASSERT_TRUE(outcome->after.has_value());
  EXPECT_EQ(outcome->after->holder_identity, "");
  EXPECT_EQ(Current().holder_identity, "");
  EXPECT_EQ(Current().lease_duration_seconds, 1);
}

TEST_F(ReleaseIfDeadTest, AForbiddenWriteIsAnError) {
  cluster_.store().Forbid("handoff-operator", "update", "leases");
  absl::StatusOr<ReleaseOutcome> outcome = Release(Proof(gone_at_));
  EXPECT_EQ(outcome.status().code(), absl::StatusCode::kPermissionDenied) << outcome.status();
  EXPECT_EQ(Current().holder_identity, kKcmA);
}

}  // namespace
}  // namespace handoff::kube
