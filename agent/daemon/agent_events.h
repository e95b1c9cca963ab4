// What the agent daemon tells its metrics (agent_metrics.h) as it happens. Every method does
// nothing by default, so an agent without metrics (tests, --metrics-listen off) passes none.
//
// Thread safety: called from the client's reader, worker and sampler threads; an implementation
// must only record, never block or call back into the client.
#ifndef HANDOFF_AGENT_DAEMON_AGENT_EVENTS_H_
#define HANDOFF_AGENT_DAEMON_AGENT_EVENTS_H_

#include "absl/time/time.h"
#include "handoff/v1/handoff.pb.h"

namespace handoff {

class AgentEvents {
 public:
  virtual ~AgentEvents() = default;

  // The coordinator welcomed the agent on a new stream.
  virtual void Welcomed() {}
  // A welcomed stream ended (the agent reconnects unless it stops).
  virtual void StreamEnded() {}
  // The agent carried out a move, which took `took`, with `result`.
  virtual void MoveFinished(const v1::CommandResult& /*result*/, absl::Duration /*took*/) {}
  // A sample of who runs which cloud controller went to the coordinator.
  virtual void ControllerSampleSent() {}
};

}  // namespace handoff

#endif  // HANDOFF_AGENT_DAEMON_AGENT_EVENTS_H_
