// The phases of a rollout as operators read them (`handoffctl status`, the metrics): one table in
// phase.cc gives each its wire value (handoff.v1.RolloutStatus.Phase), its name and its metrics
// label. Which phase a rollout is in is derived in coordinator/rollout/rollout_progress.h.
#ifndef HANDOFF_PROTO_VOCABULARY_PHASE_H_
#define HANDOFF_PROTO_VOCABULARY_PHASE_H_

#include <string_view>

#include "handoff/v1/handoff.pb.h"

namespace handoff {

enum class Phase {
  kIdle,       // no goal set yet
  kPreparing,  // a move in-tree → prepared is under way
  kMigrating,  // a move to migrated is under way (prepared → migrated, or finalized → migrated)
  kFinalizing,   // a move migrated → finalized is under way
  kRollingBack,  // a move is under way towards a backward goal (prepared, in-tree)
  kDone,         // every node is at the goal and nothing is in flight
  kHalted,       // R5: a move failed, the operator aborted or the coordinator halted
  kPaused,       // the operator paused
  kWaiting,      // nothing moves now, and it clears by itself (the decision says what it waits for)
  kStuck,        // the goal cannot be reached without the operator (the decision says why)
  // The downtime strategy's forward moves under way:
  kStopping,   // in-tree → stopped (a kube-controller-manager parked)
  kSwitching,  // stopped → external
  kStarting,   // external → finalized (a cloud-controller-manager started)
  kMovingWorkers,  // workers' kubelets in-tree ⇄ external (RolloutStatus.workers.batch)
};

v1::RolloutStatus::Phase ToProto(Phase phase);
// "idle", "preparing", ... "rolling-back" (what `handoffctl status` prints); "-" for a wire value
// this build does not know.
std::string_view PhaseName(v1::RolloutStatus::Phase phase);
// "idle", ... "rolling_back" (the metrics' `phase` label: the wire's name in lower case); "" for
// a wire value this build does not know.
std::string_view PhaseLabel(v1::RolloutStatus::Phase phase);

}  // namespace handoff

#endif  // HANDOFF_PROTO_VOCABULARY_PHASE_H_
