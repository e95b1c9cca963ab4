// Both daemons' /metrics on loopback, the real binaries: a rollout's figures as Prometheus
// scrapes them, and the text accepted by `promtool check metrics`.
#include <fstream>
#include <regex>
#include <sstream>
#include <string>

#include "gmock/gmock.h"
#include "grpcpp/client_context.h"
#include "gtest/gtest.h"
#include "tests/common/system/metrics_scrape.h"
#include "tests/coordinator/multiprocess/loopback_cluster.h"

namespace handoff::testing {
namespace {

using ::testing::ContainsRegex;
using ::testing::Optional;

// The URL a daemon logged ("serving metrics on http://127.0.0.1:<port>/metrics").
std::string MetricsUrl(const std::string& log_path) {
  std::ifstream in(log_path);
  std::stringstream text;
  text << in.rdbuf();
  std::smatch match;
  const std::string log = text.str();
  if (!std::regex_search(log, match, std::regex("serving metrics on (http://\\S+/metrics)"))) {
    return "";
  }
  return match[1];
}

bool AllConnected(const pb::RolloutStatus& status) {
  for (const pb::NodeProgress& node : status.nodes()) {
    if (!node.connected()) return false;
  }
  return status.nodes_size() > 0;
}

TEST(MetricsTest, BothDaemonsExposeARolloutsFiguresThatPromtoolAccepts) {
  if (!HavePromtool()) {
    GTEST_SKIP() << "promtool is not installed (Debian package prometheus); CI installs it";
  }
  LoopbackCluster cluster(2);
  cluster.StartCoordinator();
  for (const std::string& node : cluster.nodes()) {
    cluster.StartAgent(node, {"--metrics-listen", "127.0.0.1:0"});
  }
  cluster.WaitFor([](const pb::RolloutStatus& status) {
    return AllConnected(status) && AllNodesAt(status, pb::NODE_STATE_IN_TREE);
  });
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
  pb::RolloutStatus started;
  ASSERT_TRUE(cluster.Operator()->Start(&context, pb::StartRequest(), &started).ok());
  cluster.WaitFor([](const pb::RolloutStatus& status) {
    return status.phase() == pb::RolloutStatus::DONE &&
           AllNodesAt(status, pb::NODE_STATE_MIGRATED);
  });

  const std::string coordinator_url = MetricsUrl(cluster.dir() + "/logs/coordinator-1.log");
  ASSERT_THAT(coordinator_url, ContainsRegex("^http://127\\.0\\.0\\.1:[1-9][0-9]*/metrics$"))
      << cluster.Logs();
  std::optional<std::string> coordinator = Scrape(coordinator_url);
  ASSERT_TRUE(coordinator.has_value()) << coordinator_url;
  EXPECT_EQ(PromtoolProblems(*coordinator), "") << *coordinator;
  EXPECT_THAT(SampleValue(*coordinator, "handoff_coordinator_rollout_phase{phase=\"done\"}"),
              Optional(1.0));
  EXPECT_THAT(SampleValue(*coordinator, "handoff_coordinator_rollout_phase{phase=\"idle\"}"),
              Optional(0.0));
  EXPECT_THAT(*coordinator, ContainsRegex("handoff_coordinator_rollout_info\\{goal=\"migrated\","
                                          "rollout_id=\"r[0-9]+-[0-9a-f]+\"\\} 1\n"));
  EXPECT_THAT(SampleValue(*coordinator, "handoff_coordinator_agents_connected"), Optional(2.0));
  for (const std::string& node : cluster.nodes()) {
    EXPECT_THAT(SampleValue(*coordinator, "handoff_coordinator_node_state{node=\"" + node +
                                              "\",state=\"migrated\"}"),
                Optional(1.0));
    EXPECT_THAT(SampleValue(*coordinator, "handoff_coordinator_node_state{node=\"" + node +
                                              "\",state=\"in-tree\"}"),
                Optional(0.0));
  }
  // Two moves per node: in-tree → prepared → migrated.
  for (const std::string& move : {std::string("from=\"in-tree\",outcome=\"succeeded\",to=\"prepared\""),
                                  std::string("from=\"prepared\",outcome=\"succeeded\",to=\"migrated\"")}) {
    EXPECT_THAT(SampleValue(*coordinator, "handoff_coordinator_moves_total{" + move + "}"),
                Optional(2.0));
    EXPECT_THAT(
        SampleValue(*coordinator, "handoff_coordinator_move_duration_seconds_count{" + move + "}"),
        Optional(2.0));
  }
  EXPECT_THAT(SampleValue(*coordinator, "handoff_coordinator_verification_failures_total"),
              Optional(0.0));
  EXPECT_THAT(SampleValue(*coordinator, "handoff_coordinator_rollbacks_total{by=\"agent\"}"),
              Optional(0.0));

  for (const std::string& node : cluster.nodes()) {
    const std::string url = MetricsUrl(cluster.dir() + "/logs/agent-" + node + ".log");
    ASSERT_THAT(url, ContainsRegex("^http://127\\.0\\.0\\.1:[1-9][0-9]*/metrics$")) << node;
    std::optional<std::string> agent = Scrape(url);
    ASSERT_TRUE(agent.has_value()) << url;
    EXPECT_EQ(PromtoolProblems(*agent), "") << *agent;
    EXPECT_THAT(SampleValue(*agent, "handoff_agent_connected"), Optional(1.0)) << node;
    EXPECT_THAT(SampleValue(*agent, "handoff_agent_moves_total{outcome=\"succeeded\"}"),
                Optional(2.0))
        << node;
    EXPECT_THAT(
        SampleValue(*agent, "handoff_agent_move_duration_seconds_count{outcome=\"succeeded\"}"),
        Optional(2.0))
        << node;
    EXPECT_THAT(SampleValue(*agent, "handoff_agent_rollbacks_total"), Optional(0.0)) << node;
  }
}

}  // namespace
}  // namespace handoff::testing
