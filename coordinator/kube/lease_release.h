// Proof-based lease release: when a move stopped the manager that holds a lease a successor is
// waiting for, the coordinator gives the lease up on the dead holder's behalf, with the write
// client-go's leader election makes on a voluntary release, so the successor takes it at its next
// retry instead of waiting out the lease (twice in a row for the kube-controller-manager: main
// lease, then migration lease).
//
// Releasing a lease whose holder is alive would let two managers run the same controllers, so
// the release is made only on proof, and every doubt means "do not touch it, wait as today":
//   - the coordinator recorded the holder's identity, node and component just before the move;
//   - that node's agent proved every old process of that component exited, and when (its clock);
//   - the lease still names the recorded identity and was not renewed after that moment (the
//     holder writes renewTime with the same node's clock, so a later renewal means it lives);
//   - the write is a PUT guarded by the resourceVersion read, never a blind write: a holder that
//     renews (or a successor that takes the lease) between the read and the write makes it fail.
#ifndef HANDOFF_COORDINATOR_KUBE_LEASE_RELEASE_H_
#define HANDOFF_COORDINATOR_KUBE_LEASE_RELEASE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/system/clock.h"
#include "common/kube/client.h"
#include "coordinator/kube/lease.h"

namespace handoff::kube {

// What the coordinator recorded of one lease's holder just before it sent a move.
struct RecordedHolder {
  std::string ns = "kube-system";
  // "kube-controller-manager", "cloud-controller-manager", "cloud-provider-extraction-migration".
  std::string lease;
  std::string identity;   // holderIdentity then ("<hostname>_<uuid>"), non-empty
  std::string node;       // the rollout's node the holder runs on
  // The manager holding it: "kube-controller-manager" or "cloud-controller-manager".
  std::string component;
};

// The agent's proof that every old process of `component` on `node` has exited.
struct ExitProof {
  std::string node;
  std::string component;
  std::vector<int64_t> old_pids;  // the processes seen before the move, all gone; never empty
  absl::Time gone_at;             // when the agent saw them gone (the node's clock)
};

struct ReleaseDecision {
  bool release = false;
  std::string reason;  // one line for the audit history: why released, or why not touched
};

// Pure. Releases only when all of these hold, and says which failed otherwise:
//   - a proof is present, for the recorded node and component, naming at least one old process
//     (a proof of no process proves nothing about the holder);
//   - the lease exists and is not already released (its holderIdentity is not empty);
//   - current.holder_identity == recorded.identity, and that is not empty;
//   - the lease has a renewTime, not after proof.gone_at.
ReleaseDecision DecideRelease(const RecordedHolder& recorded, const std::optional<ExitProof>& proof,
                              const std::optional<LeaseInfo>& current);

struct ReleaseOutcome {
  enum class Kind {
    kReleased,    // the release was written (holderIdentity "", leaseDurationSeconds 1)
    kNotTouched,  // DecideRelease refused (or conflicts kept coming): nothing written
    kLostRace,    // the write met 409 and the re-read names another holder, none, or no lease
  };
  Kind kind = Kind::kNotTouched;
  std::string detail;  // for the audit history: the decision's reason, and what was written
  // The lease as read for the last decision (nullopt: it does not exist); after a conflict, the
  // re-read.
  std::optional<LeaseInfo> before;
  // As the server returned it after the release write (kReleased only).
  std::optional<LeaseInfo> after;
  int conflicts = 0;  // 409s met on the way
};

std::string_view ReleaseOutcomeKindName(ReleaseOutcome::Kind kind);  // "released", ...

// The release writes at most this many PUTs; after as many conflicts that re-read to the
// recorded holder, it gives up (kNotTouched).
inline constexpr int kMaxReleaseAttempts = 3;

// Reads recorded.ns/recorded.lease, asks DecideRelease, and when allowed writes the voluntary
// release as a PUT carrying the resourceVersion read: the whole spec as client-go writes it
// (holderIdentity "", leaseDurationSeconds 1, acquireTime and renewTime clock.Now() as MicroTime,
// leaseTransitions as read), the metadata as read. On a 409 (or a 404: deleted meanwhile) it
// re-reads once: another holder, an empty holder or no lease is kLostRace, nothing written; the
// recorded holder still named means deciding again (a renewal meanwhile refuses) and another PUT,
// up to kMaxReleaseAttempts PUTs in all. A release whose answer was lost (the client's retry of
// the PUT then meets its own write as a 409) is recognised on the re-read by the times it wrote,
// and reported as kReleased. Errors: the client's (reading or writing), or an unparsable lease.
// Borrows `client` and `clock`; thread-compatible.
absl::StatusOr<ReleaseOutcome> ReleaseIfDead(KubeClient& client, Clock& clock,
                                             const RecordedHolder& recorded,
                                             const std::optional<ExitProof>& proof);

}  // namespace handoff::kube

#endif  // HANDOFF_COORDINATOR_KUBE_LEASE_RELEASE_H_
