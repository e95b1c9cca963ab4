// The coordinator's Prometheus metrics (prometheus-cpp), fed by its status feed (ObserveStatus,
// from RolloutController::Watch) and its events (coordinator_events.h). Every name starts with
// handoff_coordinator_:
//   rollout_phase{phase}                   gauge, 1 for the rollout's phase, 0 for the others
//   rollout_info{rollout_id,goal}          gauge, 1 for the rollout under way (none before)
//   node_state{node,state}                 gauge, 1 for each node's state, 0 for the others
//   node_connected{node}, agents_connected gauges: each node's agent on a stream, and how many
//   agent_reconnects_total{node}           counter: hellos from an agent seen before this run
//   moves_total{from,to,outcome}           counter: moves' results
//   move_duration_seconds{from,to,outcome} histogram: from sending a move to its result
//   verification_failures_total            counter: moves that failed their verification
//   rollbacks_total{by}                    counter: "agent" undid a failed move, "operator"
//                                          set a rollback goal
//   handover_gap_seconds{controller}       histogram: how long a cloud controller ran nowhere
//                                          in a handover (the double-run detector's measure)
//   double_runs_total{controller}          counter: two managers ran it at once
//   long_gaps_total{controller}            counter: it ran nowhere for longer than --gap-limit
//   lease_releases_total{result}           counter: the lease release's decisions
//
// Thread safety: every method may be called from any thread, also with the controller's mutex
// held; each only updates the registry's series.
#ifndef HANDOFF_COORDINATOR_SERVER_COORDINATOR_METRICS_H_
#define HANDOFF_COORDINATOR_SERVER_COORDINATOR_METRICS_H_

#include <map>
#include <mutex>
#include <string>

#include "coordinator/server/coordinator_events.h"
#include "handoff/v1/handoff.pb.h"
#include "prometheus/counter.h"
#include "prometheus/family.h"
#include "prometheus/gauge.h"
#include "prometheus/histogram.h"
#include "prometheus/registry.h"

namespace handoff::server {

class CoordinatorMetrics : public CoordinatorEvents {
 public:
  // Adds the families to `registry`, which must outlive this.
  explicit CoordinatorMetrics(prometheus::Registry& registry);

  // The rollout as operators see it: its phase and goal, each node's state and agent.
  void ObserveStatus(const v1::RolloutStatus& status);

  // CoordinatorEvents.
  void AgentConnected(const std::string& node, bool again) override;
  void MoveFinished(const std::string& node, NodeState from, NodeState to,
                    const v1::CommandResult& result, absl::Duration took) override;
  void GoalSet(const std::string& kind, NodeState goal) override;
  void LeaseReleaseDecided(const std::string& result) override;
  void HandoverGapMeasured(const std::string& controller, absl::Duration gap) override;
  void DoubleRunDetected(const std::string& controller) override;
  void LongGapDetected(const std::string& controller) override;

 private:
  prometheus::Family<prometheus::Gauge>& phase_;
  prometheus::Family<prometheus::Gauge>& info_;
  prometheus::Family<prometheus::Gauge>& node_state_;
  prometheus::Family<prometheus::Gauge>& node_connected_;
  prometheus::Gauge& agents_connected_;
  prometheus::Family<prometheus::Counter>& reconnects_;
  prometheus::Family<prometheus::Counter>& moves_;
  prometheus::Family<prometheus::Histogram>& move_duration_;
  prometheus::Counter& verification_failures_;
  prometheus::Family<prometheus::Counter>& rollbacks_;
  prometheus::Family<prometheus::Histogram>& handover_gap_;
  prometheus::Family<prometheus::Counter>& double_runs_;
  prometheus::Family<prometheus::Counter>& long_gaps_;
  prometheus::Family<prometheus::Counter>& lease_releases_;

  std::mutex mu_;  // guards the members below
  prometheus::Gauge* current_info_ = nullptr;
  std::string current_info_key_;
  // Each node's series, by state label, once the node was seen.
  std::map<std::string, std::map<std::string, prometheus::Gauge*>> node_states_;
};

}  // namespace handoff::server

#endif  // HANDOFF_COORDINATOR_SERVER_COORDINATOR_METRICS_H_
