#include "agent/daemon/agent_metrics.h"

#include <algorithm>

#include "proto/vocabulary/outcome.h"

namespace handoff {
namespace {

// A move takes from seconds (--no-verify) to minutes (each component restarted and proven
// healthy, up to --timeout each).
const prometheus::Histogram::BucketBoundaries kMoveSeconds = {1,  2,   5,   10,  20,  30,
                                                              60, 120, 300, 600, 1200};

}  // namespace

AgentMetrics::AgentMetrics(prometheus::Registry& registry)
    : connected_(prometheus::BuildGauge()
                     .Name("handoff_agent_connected")
                     .Help("1 while the coordinator has welcomed the agent on a stream")
                     .Register(registry)
                     .Add({})),
      reconnects_(prometheus::BuildCounter()
                      .Name("handoff_agent_reconnects_total")
                      .Help("Streams the coordinator welcomed after the first one")
                      .Register(registry)
                      .Add({})),
      moves_(prometheus::BuildCounter()
                 .Name("handoff_agent_moves_total")
                 .Help("Moves the agent carried out, by outcome")
                 .Register(registry)),
      move_duration_(prometheus::BuildHistogram()
                         .Name("handoff_agent_move_duration_seconds")
                         .Help("From taking a move up to its result (verification included)")
                         .Register(registry)),
      verification_failures_(prometheus::BuildCounter()
                                 .Name("handoff_agent_verification_failures_total")
                                 .Help("Moves whose components failed their verification after "
                                       "the files were written")
                                 .Register(registry)
                                 .Add({})),
      rollbacks_(prometheus::BuildCounter()
                     .Name("handoff_agent_rollbacks_total")
                     .Help("Failed moves the agent undid (the node is back where it was)")
                     .Register(registry)
                     .Add({})),
      samples_sent_(prometheus::BuildCounter()
                        .Name("handoff_agent_controller_samples_sent_total")
                        .Help("Samples of who runs which cloud controller sent to the "
                              "coordinator's double-run detector")
                        .Register(registry)
                        .Add({})) {
  connected_.Set(0);
}

void AgentMetrics::Welcomed() {
  connected_.Set(1);
  if (welcomed_before_.exchange(true)) reconnects_.Increment();
}

void AgentMetrics::StreamEnded() { connected_.Set(0); }

void AgentMetrics::MoveFinished(const v1::CommandResult& result, absl::Duration took) {
  const prometheus::Labels labels = {{"outcome", std::string(MoveOutcomeLabel(result.outcome()))}};
  moves_.Add(labels).Increment();
  move_duration_.Add(labels, kMoveSeconds)
      .Observe(absl::ToDoubleSeconds(std::max(took, absl::ZeroDuration())));
  if (FailedVerification(result)) verification_failures_.Increment();
  if (UndoneByAgent(result)) rollbacks_.Increment();
}

void AgentMetrics::ControllerSampleSent() { samples_sent_.Increment(); }

}  // namespace handoff
