#include "coordinator/kube/lease_release.h"

#include <utility>

#include "common/base/strings.h"

namespace handoff::kube {
namespace {

std::string LeaseName(const RecordedHolder& recorded) {
  return StrCat(recorded.ns, "/", recorded.lease);
}

ReleaseDecision Refuse(const RecordedHolder& recorded, std::string_view why) {
  return ReleaseDecision{false, StrCat(LeaseName(recorded), " not touched: ", why)};
}

// Lease times are metav1.MicroTime, which kube-apiserver decodes as RFC3339Micro: exactly six
// fractional digits, or 400 (tests/real/api_conformance_test.cc LeaseTimesMustBeMicroTime).
// FormatTimestamp drops trailing zeros, so it must not write a lease.
absl::Time ToMicros(absl::Time time) { return absl::FromUnixMicros(absl::ToUnixMicros(time)); }

std::string FormatMicroTime(absl::Time time) {
  return absl::FormatTime("%Y-%m-%dT%H:%M:%E6SZ", time, absl::UTCTimeZone());
}

// The voluntary release of client-go's leader election (kubernetes/kubernetes
// staging/src/k8s.io/client-go/tools/leaderelection/leaderelection.go, LeaderElector.release):
// a LeaderElectionRecord with no HolderIdentity, LeaseDurationSeconds 1, RenewTime and
// AcquireTime now, LeaderTransitions as last observed; resourcelock/leaselock.go Update replaces
// the whole spec with LeaderElectionRecordToLeaseSpec of it (holderIdentity written as "",
// nothing else kept) and PUTs the lease it last read, so the write carries that resourceVersion.
// A candidate takes a lease whose holderIdentity is empty at its next retry, whatever renewTime
// says; leaseDurationSeconds 1 shortens the wait of one that read the lease before.
Json ReleaseSpec(absl::Time now, int64_t lease_transitions) {
  Json spec = Json::object();
  spec["holderIdentity"] = "";
  spec["leaseDurationSeconds"] = 1;
  spec["acquireTime"] = FormatMicroTime(now);
  spec["renewTime"] = FormatMicroTime(now);
  spec["leaseTransitions"] = lease_transitions;
  return spec;
}

// One read of the lease: the object as the server sent it (to write back with its metadata and
// resourceVersion) and its fields.
struct LeaseRead {
  Json object;
  LeaseInfo info;
};

absl::StatusOr<std::optional<LeaseRead>> ReadLease(KubeClient& client, const ObjectRef& ref) {
  absl::StatusOr<Json> object = client.Get(ref);
  if (!object.ok()) {
    if (absl::IsNotFound(object.status())) return std::optional<LeaseRead>();
    return object.status();
  }
  absl::StatusOr<LeaseInfo> info = ParseLease(*object);
  if (!info.ok()) return info.status();
  return std::optional<LeaseRead>(LeaseRead{*std::move(object), *std::move(info)});
}

// The lease as our own release left it: what a re-read shows when the release was applied but its
// answer lost (the client repeated the PUT, which then met its own write as a conflict).
bool IsOurRelease(const LeaseInfo& lease, absl::Time written) {
  return lease.holder_identity.empty() && lease.lease_duration_seconds == 1 &&
         lease.renew_time == written && lease.acquire_time == written;
}

std::string Written(absl::Time now, int64_t transitions, std::string_view version_before,
                    std::string_view version_after) {
  return StrCat("wrote holderIdentity \"\", leaseDurationSeconds 1, acquireTime and renewTime ",
                FormatMicroTime(now), ", leaseTransitions ", transitions, " (resourceVersion ",
                version_before, " -> ", version_after, ")");
}

}  // namespace

std::string_view ReleaseOutcomeKindName(ReleaseOutcome::Kind kind) {
  switch (kind) {
    case ReleaseOutcome::Kind::kReleased:
      return "released";
    case ReleaseOutcome::Kind::kNotTouched:
      return "not touched";
    case ReleaseOutcome::Kind::kLostRace:
      return "lost race";
  }
  return "unknown";
}

ReleaseDecision DecideRelease(const RecordedHolder& recorded, const std::optional<ExitProof>& proof,
                              const std::optional<LeaseInfo>& current) {
  if (recorded.identity.empty()) {
    return Refuse(recorded, "no holder identity was recorded before the move");
  }
  if (!proof) {
    return Refuse(recorded, StrCat("no proof that ", recorded.component, " on ", recorded.node,
                                   " exited"));
  }
  if (proof->node != recorded.node) {
    return Refuse(recorded, StrCat("the exit proof is from node ", proof->node,
                                   ", but the recorded holder ran on ", recorded.node));
  }
  if (proof->component != recorded.component) {
    return Refuse(recorded, StrCat("the exit proof is for ", proof->component,
                                   ", but the recorded holder is ", recorded.component));
  }
  if (proof->old_pids.empty()) {
    return Refuse(recorded, StrCat("the exit proof names no old process of ", recorded.component,
                                   " on ", recorded.node));
  }
  if (!current) return Refuse(recorded, "the lease does not exist");
  if (current->holder_identity.empty()) {
    return Refuse(recorded, "already released (holderIdentity is empty)");
  }
  if (current->holder_identity != recorded.identity) {
    return Refuse(recorded, StrCat("held by ", current->holder_identity, " now, not the recorded ",
                                   recorded.identity));
  }
  if (!current->renew_time) {
    return Refuse(recorded,
                  "it has no renewTime, so a renewal after the exit proof cannot be ruled out");
  }
  // Both times come from the holder's node's clock: a renewal stamped after the moment the agent
  // saw every old process gone was made by a process that still lives.
  if (*current->renew_time > proof->gone_at) {
    return Refuse(recorded, StrCat("renewed at ", FormatTimestamp(*current->renew_time),
                                   ", after the old processes were seen gone at ",
                                   FormatTimestamp(proof->gone_at), ": the holder is alive"));
  }
  return ReleaseDecision{
      true, StrCat(LeaseName(recorded), " released from ", recorded.identity, ": every old ",
                   recorded.component, " process on ", recorded.node, " (pid ",
                   StrJoin(proof->old_pids, ", "), ") was gone at ",
                   FormatTimestamp(proof->gone_at), ", the lease was last renewed at ",
                   FormatTimestamp(*current->renew_time))};
}

absl::StatusOr<ReleaseOutcome> ReleaseIfDead(KubeClient& client, Clock& clock,
                                             const RecordedHolder& recorded,
                                             const std::optional<ExitProof>& proof) {
  const ObjectRef ref{&kLeases, recorded.ns, recorded.lease};
  ReleaseOutcome outcome;
  absl::StatusOr<std::optional<LeaseRead>> read = ReadLease(client, ref);
  if (!read.ok()) return read.status();
  for (int attempt = 1;; ++attempt) {
    outcome.before.reset();
    if (*read) outcome.before = (*read)->info;
    const ReleaseDecision decision = DecideRelease(recorded, proof, outcome.before);
    if (!decision.release) {
      outcome.kind = ReleaseOutcome::Kind::kNotTouched;
      outcome.detail = decision.reason;
      if (outcome.conflicts > 0) {
        StrAppend(&outcome.detail, " (re-read after ", outcome.conflicts, " conflict(s))");
      }
      return outcome;
    }
    const LeaseRead& lease = **read;
    const absl::Time now = ToMicros(clock.Now());
    Json released = lease.object;
    released["spec"] = ReleaseSpec(now, lease.info.lease_transitions);
    // metadata.resourceVersion stays as read: the server applies the PUT only to that version.
    absl::StatusOr<Json> written = client.Update(ref, released);
    if (written.ok()) {
      absl::StatusOr<LeaseInfo> after = ParseLease(*written);
      if (!after.ok()) return after.status();
      outcome.kind = ReleaseOutcome::Kind::kReleased;
      outcome.detail = StrCat(decision.reason, "; ",
                              Written(now, lease.info.lease_transitions,
                                      lease.info.resource_version, after->resource_version));
      outcome.after = *std::move(after);
      return outcome;
    }
    // 409: somebody wrote the lease between our read and our write. 404: somebody deleted it
    // (the fake API server's answer; kube-apiserver answers 409, as the PUT carries the deleted
    // lease's uid, a precondition no new lease meets). Either way, find out who.
    const bool conflict = absl::IsAborted(written.status());
    if (!conflict && !absl::IsNotFound(written.status())) return written.status();
    if (conflict) ++outcome.conflicts;
    const std::string_view answer = conflict ? "409" : "404";
    const std::string version_read = lease.info.resource_version;
    const int64_t transitions = lease.info.lease_transitions;
    read = ReadLease(client, ref);
    if (!read.ok()) return read.status();
    outcome.before.reset();
    if (*read) outcome.before = (*read)->info;
    if (!*read) {
      outcome.kind = ReleaseOutcome::Kind::kLostRace;
      outcome.detail = StrCat(LeaseName(recorded), " not touched: deleted while it was being ",
                              "released (", answer, ")");
      return outcome;
    }
    const LeaseInfo& now_there = (*read)->info;
    if (IsOurRelease(now_there, now)) {
      outcome.kind = ReleaseOutcome::Kind::kReleased;
      outcome.detail = StrCat(decision.reason, "; ",
                              Written(now, transitions, version_read, now_there.resource_version),
                              "; its answer was lost, the re-read after the 409 shows it");
      outcome.after = now_there;
      return outcome;
    }
    if (now_there.holder_identity.empty()) {
      outcome.kind = ReleaseOutcome::Kind::kLostRace;
      outcome.detail = StrCat(LeaseName(recorded),
                              " not touched: released by someone else meanwhile (", answer, ")");
      return outcome;
    }
    if (now_there.holder_identity != recorded.identity) {
      outcome.kind = ReleaseOutcome::Kind::kLostRace;
      outcome.detail = StrCat(LeaseName(recorded), " not touched: held by ",
                              now_there.holder_identity, " now, not the recorded ",
                              recorded.identity, " (", answer, ")");
      return outcome;
    }
    if (attempt >= kMaxReleaseAttempts) {
      outcome.kind = ReleaseOutcome::Kind::kNotTouched;
      outcome.detail = StrCat(LeaseName(recorded), " not touched: ", attempt,
                              " writes in a row met a conflict while it still named ",
                              recorded.identity, "; something else keeps writing it");
      return outcome;
    }
    // Still the recorded holder: the change was something else (a label, an annotation) or a
    // renewal, which the next decision refuses.
  }
}

}  // namespace handoff::kube
