#include "coordinator/server/coordinator_metrics.h"

#include <algorithm>
#include <optional>
#include <vector>

#include "proto/vocabulary/node_state.h"
#include "proto/vocabulary/outcome.h"
#include "proto/vocabulary/phase.h"

namespace handoff::server {
namespace {

// A move takes from seconds (no kubelet restart, --no-verify) to minutes (each component
// restarted and proven healthy, up to --timeout each).
const prometheus::Histogram::BucketBoundaries kMoveSeconds = {1,  2,   5,   10,  20,  30,
                                                              60, 120, 300, 600, 1200};
// A handover takes one lease duration (15s by default) after a release is missed, two for a
// kube-controller-manager successor; with the lease release, about a manager's start.
const prometheus::Histogram::BucketBoundaries kGapSeconds = {0.5, 1,  2,  5,  10,  15,
                                                             20,  30, 45, 60, 120, 300};

// "in-tree", ... "inconsistent" (the product's names); "unknown" while the agent is away.
std::string StateLabel(v1::NodeState state) { return std::string(WireStateName(state, "unknown")); }

std::vector<v1::NodeState> WireStates() {
  std::vector<v1::NodeState> states;
  const google::protobuf::EnumDescriptor* descriptor = v1::NodeState_descriptor();
  for (int i = 0; i < descriptor->value_count(); ++i) {
    states.push_back(static_cast<v1::NodeState>(descriptor->value(i)->number()));
  }
  return states;
}

}  // namespace

CoordinatorMetrics::CoordinatorMetrics(prometheus::Registry& registry)
    : phase_(prometheus::BuildGauge()
                 .Name("handoff_coordinator_rollout_phase")
                 .Help("The rollout's phase (handoffctl status): 1 for the current phase, 0 for "
                       "the others")
                 .Register(registry)),
      info_(prometheus::BuildGauge()
                .Name("handoff_coordinator_rollout_info")
                .Help("1 for the rollout the coordinator holds, with its id and goal (the "
                      "direction: migrated or finalized forward, prepared or in-tree back)")
                .Register(registry)),
      node_state_(prometheus::BuildGauge()
                      .Name("handoff_coordinator_node_state")
                      .Help("Each node's state as its agent last reported it: 1 for the current "
                            "state, 0 for the others (unknown: the agent is away)")
                      .Register(registry)),
      node_connected_(prometheus::BuildGauge()
                          .Name("handoff_coordinator_node_connected")
                          .Help("1 while the node's agent holds a stream to the coordinator")
                          .Register(registry)),
      agents_connected_(prometheus::BuildGauge()
                            .Name("handoff_coordinator_agents_connected")
                            .Help("How many nodes' agents hold a stream to the coordinator")
                            .Register(registry)
                            .Add({})),
      reconnects_(prometheus::BuildCounter()
                      .Name("handoff_coordinator_agent_reconnects_total")
                      .Help("Hellos from a node's agent that had already said hello since the "
                            "coordinator started")
                      .Register(registry)),
      moves_(prometheus::BuildCounter()
                 .Name("handoff_coordinator_moves_total")
                 .Help("Moves whose result arrived, by states and outcome")
                 .Register(registry)),
      move_duration_(prometheus::BuildHistogram()
                         .Name("handoff_coordinator_move_duration_seconds")
                         .Help("From recording a move as sent to its result's arrival")
                         .Register(registry)),
      verification_failures_(prometheus::BuildCounter()
                                 .Name("handoff_coordinator_verification_failures_total")
                                 .Help("Moves whose components failed their verification after "
                                       "the files were written (then undone by the agent)")
                                 .Register(registry)
                                 .Add({})),
      rollbacks_(prometheus::BuildCounter()
                     .Name("handoff_coordinator_rollbacks_total")
                     .Help("Rollbacks: by=agent, a failed move its agent undid; by=operator, a "
                           "rollback goal set with handoffctl rollback")
                     .Register(registry)),
      handover_gap_(prometheus::BuildHistogram()
                        .Name("handoff_coordinator_handover_gap_seconds")
                        .Help("How long a cloud controller ran nowhere before a manager ran it "
                              "again, from the agents' samples (the double-run detector)")
                        .Register(registry)),
      double_runs_(prometheus::BuildCounter()
                       .Name("handoff_coordinator_double_runs_total")
                       .Help("Two managers proven to run one cloud controller at once")
                       .Register(registry)),
      long_gaps_(prometheus::BuildCounter()
                     .Name("handoff_coordinator_long_gaps_total")
                     .Help("A cloud controller that ran nowhere for longer than --gap-limit")
                     .Register(registry)),
      lease_releases_(prometheus::BuildCounter()
                          .Name("handoff_coordinator_lease_releases_total")
                          .Help("The lease release's decisions on a stopped manager's leases, by "
                                "result (released, not_touched, lost_race, error)")
                          .Register(registry)) {
  // Every series that can only count up from zero exists from the start, so a rate() sees its
  // first increase.
  const google::protobuf::EnumDescriptor* phases = v1::RolloutStatus::Phase_descriptor();
  for (int i = 0; i < phases->value_count(); ++i) {
    const auto phase = static_cast<v1::RolloutStatus::Phase>(phases->value(i)->number());
    if (phase != v1::RolloutStatus::PHASE_UNSPECIFIED)
      phase_.Add({{"phase", std::string(PhaseLabel(phase))}});
  }
  for (const char* by : {"agent", "operator"}) rollbacks_.Add({{"by", by}});
  for (const char* result : {"released", "not_touched", "lost_race", "error"}) {
    lease_releases_.Add({{"result", result}});
  }
}

void CoordinatorMetrics::ObserveStatus(const v1::RolloutStatus& status) {
  const std::string_view current = PhaseLabel(status.phase());
  const google::protobuf::EnumDescriptor* phases = v1::RolloutStatus::Phase_descriptor();
  for (int i = 0; i < phases->value_count(); ++i) {
    const auto phase = static_cast<v1::RolloutStatus::Phase>(phases->value(i)->number());
    if (phase == v1::RolloutStatus::PHASE_UNSPECIFIED) continue;
    const std::string label(PhaseLabel(phase));
    phase_.Add({{"phase", label}}).Set(label == current ? 1 : 0);
  }

  int connected = 0;
  std::lock_guard<std::mutex> lock(mu_);
  for (const v1::NodeProgress& node : status.nodes()) {
    std::map<std::string, prometheus::Gauge*>& states = node_states_[node.name()];
    if (states.empty()) {
      for (v1::NodeState state : WireStates()) {
        const std::string label = StateLabel(state);
        states[label] = &node_state_.Add({{"node", node.name()}, {"state", label}});
      }
    }
    const std::string shown = StateLabel(node.state());
    for (auto& [label, gauge] : states) gauge->Set(label == shown ? 1 : 0);
    node_connected_.Add({{"node", node.name()}}).Set(node.connected() ? 1 : 0);
    if (node.connected()) ++connected;
  }
  agents_connected_.Set(connected);

  const std::string goal =
      status.goal() != v1::NODE_STATE_UNSPECIFIED ? StateLabel(status.goal()) : "";
  const std::string key = status.rollout_id() + "\n" + goal;
  if (key == current_info_key_) return;
  if (current_info_ != nullptr) info_.Remove(current_info_);
  current_info_ = nullptr;
  current_info_key_ = key;
  if (!status.rollout_id().empty()) {
    current_info_ = &info_.Add({{"rollout_id", status.rollout_id()}, {"goal", goal}});
    current_info_->Set(1);
  }
}

void CoordinatorMetrics::AgentConnected(const std::string& node, bool again) {
  prometheus::Counter& reconnects = reconnects_.Add({{"node", node}});
  if (again) reconnects.Increment();
}

void CoordinatorMetrics::MoveFinished(const std::string& /*node*/, NodeState from, NodeState to,
                                      const v1::CommandResult& result, absl::Duration took) {
  const prometheus::Labels labels = {{"from", std::string(NodeStateName(from))},
                                     {"to", std::string(NodeStateName(to))},
                                     {"outcome", std::string(MoveOutcomeLabel(result.outcome()))}};
  moves_.Add(labels).Increment();
  move_duration_.Add(labels, kMoveSeconds)
      .Observe(absl::ToDoubleSeconds(std::max(took, absl::ZeroDuration())));
  if (FailedVerification(result)) verification_failures_.Increment();
  if (UndoneByAgent(result)) rollbacks_.Add({{"by", "agent"}}).Increment();
}

void CoordinatorMetrics::GoalSet(const std::string& kind, NodeState /*goal*/) {
  if (kind == "rollback") rollbacks_.Add({{"by", "operator"}}).Increment();
}

void CoordinatorMetrics::LeaseReleaseDecided(const std::string& result) {
  lease_releases_.Add({{"result", result}}).Increment();
}

void CoordinatorMetrics::HandoverGapMeasured(const std::string& controller, absl::Duration gap) {
  handover_gap_.Add({{"controller", controller}}, kGapSeconds).Observe(absl::ToDoubleSeconds(gap));
}

void CoordinatorMetrics::DoubleRunDetected(const std::string& controller) {
  double_runs_.Add({{"controller", controller}}).Increment();
}

void CoordinatorMetrics::LongGapDetected(const std::string& controller) {
  long_gaps_.Add({{"controller", controller}}).Increment();
}

}  // namespace handoff::server
