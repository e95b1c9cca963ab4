// What the coordinator tells its metrics (coordinator_metrics.h) as it happens, beyond the status
// feed: the moves' results, the agents' hellos, operators' rollbacks, the lease release's
// decisions and the double-run detector's measures. Every method does nothing by default, so a
// coordinator without metrics (tests, rehearsals) passes none.
//
// Thread safety: called from the controller's, the lease releaser's and the run watch's threads,
// some with the controller's mutex held: an implementation must only record, never block or call
// back into the coordinator.
#ifndef HANDOFF_COORDINATOR_SERVER_COORDINATOR_EVENTS_H_
#define HANDOFF_COORDINATOR_SERVER_COORDINATOR_EVENTS_H_

#include <string>

#include "absl/time/time.h"
#include "handoff/v1/handoff.pb.h"
#include "proto/vocabulary/node_state.h"

namespace handoff::server {

class CoordinatorEvents {
 public:
  virtual ~CoordinatorEvents() = default;

  // `node`'s agent said hello; `again`: its agent had already said hello since this coordinator
  // started (a reconnect).
  virtual void AgentConnected(const std::string& /*node*/, bool /*again*/) {}
  // The result of the move `from` → `to` sent to `node` `took` ago (from the coordinator's record
  // of sending it to the result's arrival).
  virtual void MoveFinished(const std::string& /*node*/, NodeState /*from*/, NodeState /*to*/,
                            const v1::CommandResult& /*result*/, absl::Duration /*took*/) {}
  // An operator set a new goal: `kind` "start", "rollback" or "finalize".
  virtual void GoalSet(const std::string& /*kind*/, NodeState /*goal*/) {}
  // A lease release decided: `result` is "released", "not_touched", "lost_race" or "error" (the
  // lease could not be read or written).
  virtual void LeaseReleaseDecided(const std::string& /*result*/) {}
  // `controller` ran nowhere for `gap` and then ran again (a handover, measured by the double-run
  // detector from the agents' samples).
  virtual void HandoverGapMeasured(const std::string& /*controller*/, absl::Duration /*gap*/) {}
  // The double-run detector found two managers running `controller` at once.
  virtual void DoubleRunDetected(const std::string& /*controller*/) {}
  // The double-run detector found `controller` running nowhere for longer than its limit.
  virtual void LongGapDetected(const std::string& /*controller*/) {}
};

}  // namespace handoff::server

#endif  // HANDOFF_COORDINATOR_SERVER_COORDINATOR_EVENTS_H_
