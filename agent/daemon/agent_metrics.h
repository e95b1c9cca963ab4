// The agent daemon's Prometheus metrics (prometheus-cpp), fed by its events (agent_events.h).
// Every name starts with handoff_agent_:
//   connected                          gauge, 1 while the coordinator has welcomed the agent
//   reconnects_total                   counter: welcomes after the first
//   moves_total{outcome}               counter: moves carried out, by outcome
//   move_duration_seconds{outcome}     histogram: from taking a move up to its result
//   verification_failures_total        counter: moves that failed their verification
//   rollbacks_total                    counter: failed moves the agent undid
//   controller_samples_sent_total      counter: samples sent to the double-run detector
//
// Thread safety: every method may be called from any thread.
#ifndef HANDOFF_AGENT_DAEMON_AGENT_METRICS_H_
#define HANDOFF_AGENT_DAEMON_AGENT_METRICS_H_

#include <atomic>

#include "agent/daemon/agent_events.h"
#include "prometheus/counter.h"
#include "prometheus/family.h"
#include "prometheus/gauge.h"
#include "prometheus/histogram.h"
#include "prometheus/registry.h"

namespace handoff {

class AgentMetrics : public AgentEvents {
 public:
  // Adds the families to `registry`, which must outlive this.
  explicit AgentMetrics(prometheus::Registry& registry);

  // AgentEvents.
  void Welcomed() override;
  void StreamEnded() override;
  void MoveFinished(const v1::CommandResult& result, absl::Duration took) override;
  void ControllerSampleSent() override;

 private:
  prometheus::Gauge& connected_;
  prometheus::Counter& reconnects_;
  prometheus::Family<prometheus::Counter>& moves_;
  prometheus::Family<prometheus::Histogram>& move_duration_;
  prometheus::Counter& verification_failures_;
  prometheus::Counter& rollbacks_;
  prometheus::Counter& samples_sent_;
  std::atomic<bool> welcomed_before_{false};
};

}  // namespace handoff

#endif  // HANDOFF_AGENT_DAEMON_AGENT_METRICS_H_
