// The agent's metrics: what each event does to the series, read back as Prometheus text.
#include "agent/daemon/agent_metrics.h"

#include <sstream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "prometheus/text_serializer.h"
#include "tests/common/system/metrics_scrape.h"

namespace handoff {
namespace {

using ::testing::Optional;

std::string Text(prometheus::Registry& registry) {
  std::ostringstream out;
  prometheus::TextSerializer().Serialize(out, registry.Collect());
  return out.str();
}

TEST(AgentMetricsTest, ConnectionsMovesAndSamplesEachCountInTheirSeries) {
  prometheus::Registry registry;
  AgentMetrics metrics(registry);
  std::string text = Text(registry);
  EXPECT_THAT(testing::SampleValue(text, "handoff_agent_connected"), Optional(0.0));
  EXPECT_THAT(testing::SampleValue(text, "handoff_agent_reconnects_total"), Optional(0.0));

  metrics.Welcomed();  // the first stream is no reconnect
  EXPECT_THAT(testing::SampleValue(Text(registry), "handoff_agent_connected"), Optional(1.0));
  metrics.StreamEnded();
  EXPECT_THAT(testing::SampleValue(Text(registry), "handoff_agent_connected"), Optional(0.0));
  metrics.Welcomed();
  metrics.ControllerSampleSent();
  metrics.ControllerSampleSent();

  v1::CommandResult succeeded;
  succeeded.set_outcome(v1::CommandResult::SUCCEEDED);
  metrics.MoveFinished(succeeded, absl::Seconds(12));
  v1::CommandResult undone;
  undone.set_outcome(v1::CommandResult::ROLLED_BACK);
  metrics.MoveFinished(undone, absl::Seconds(300));
  v1::CommandResult undo_failed;  // verification failed, and so did the undo
  undo_failed.set_outcome(v1::CommandResult::NEEDS_ATTENTION);
  undo_failed.mutable_move()->set_rollback_failure("cannot restore");
  metrics.MoveFinished(undo_failed, absl::Seconds(1));

  text = Text(registry);
  EXPECT_THAT(testing::SampleValue(text, "handoff_agent_connected"), Optional(1.0));
  EXPECT_THAT(testing::SampleValue(text, "handoff_agent_reconnects_total"), Optional(1.0));
  EXPECT_THAT(testing::SampleValue(text, "handoff_agent_controller_samples_sent_total"),
              Optional(2.0));
  EXPECT_THAT(testing::SampleValue(text, "handoff_agent_moves_total{outcome=\"succeeded\"}"),
              Optional(1.0));
  EXPECT_THAT(testing::SampleValue(text, "handoff_agent_moves_total{outcome=\"rolled_back\"}"),
              Optional(1.0));
  EXPECT_THAT(
      testing::SampleValue(text, "handoff_agent_move_duration_seconds_sum{outcome=\"succeeded\"}"),
      Optional(12.0));
  EXPECT_THAT(testing::SampleValue(
                  text, "handoff_agent_move_duration_seconds_bucket{outcome=\"rolled_back\",le=\"300\"}"),
              Optional(1.0));
  EXPECT_THAT(testing::SampleValue(text, "handoff_agent_verification_failures_total"),
              Optional(2.0));
  EXPECT_THAT(testing::SampleValue(text, "handoff_agent_rollbacks_total"), Optional(1.0));
  if (testing::HavePromtool()) {
    EXPECT_EQ(testing::PromtoolProblems(text), "") << text;
  }
}

}  // namespace
}  // namespace handoff
