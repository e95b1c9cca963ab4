// The coordinator's metrics: what each event and status does to the series (read back as
// Prometheus text), and the controller's and run watch's calls that feed them.
#include "coordinator/server/coordinator_metrics.h"

#include <fstream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "coordinator/server/rollout_controller.h"
#include "coordinator/server/run_watch.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "prometheus/text_serializer.h"
#include "tests/common/system/metrics_scrape.h"
#include "tests/coordinator/server/controller_fixture.h"
#include "tests/coordinator/server/coordinator_run_fixture.h"
#include "tests/coordinator/server/temp_database.h"
#include "tests/support/fake_clock.h"

namespace handoff::server {
namespace {

using ::handoff::server::testing::AssumedFacts;
using ::handoff::server::testing::OpenController;
using ::handoff::server::testing::Sample;
using ::handoff::server::testing::TwoNodeOptions;
using ::handoff::testing::SampleValue;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::Optional;

std::string Text(prometheus::Registry& registry) {
  std::ostringstream out;
  prometheus::TextSerializer().Serialize(out, registry.Collect());
  return out.str();
}

pb::RolloutStatus Status(const std::string& rollout_id, pb::RolloutStatus::Phase phase,
                         pb::NodeState goal) {
  pb::RolloutStatus status;
  status.set_rollout_id(rollout_id);
  status.set_phase(phase);
  status.set_goal(goal);
  return status;
}

void AddNode(pb::RolloutStatus& status, const std::string& name, pb::NodeState state,
             bool connected) {
  pb::NodeProgress* node = status.add_nodes();
  node->set_name(name);
  node->set_state(state);
  node->set_connected(connected);
}

TEST(CoordinatorMetricsTest, TheStatusSetsThePhaseTheRolloutAndEachNodesStateAndAgent) {
  prometheus::Registry registry;
  CoordinatorMetrics metrics(registry);
  // Before any status: every phase at 0, no rollout.
  EXPECT_THAT(SampleValue(Text(registry), "handoff_coordinator_rollout_phase{phase=\"idle\"}"),
              Optional(0.0));

  pb::RolloutStatus migrating =
      Status("r1-abc", pb::RolloutStatus::MIGRATING, pb::NODE_STATE_MIGRATED);
  AddNode(migrating, "cp-1", pb::NODE_STATE_MIGRATED, true);
  AddNode(migrating, "cp-2", pb::NODE_STATE_UNSPECIFIED, false);
  metrics.ObserveStatus(migrating);
  std::string text = Text(registry);
  EXPECT_THAT(SampleValue(text, "handoff_coordinator_rollout_phase{phase=\"migrating\"}"),
              Optional(1.0));
  EXPECT_THAT(SampleValue(text, "handoff_coordinator_rollout_phase{phase=\"idle\"}"),
              Optional(0.0));
  EXPECT_THAT(SampleValue(text, "handoff_coordinator_rollout_phase{phase=\"rolling_back\"}"),
              Optional(0.0));
  EXPECT_THAT(
      SampleValue(text, "handoff_coordinator_rollout_info{goal=\"migrated\",rollout_id=\"r1-abc\"}"),
      Optional(1.0));
  EXPECT_THAT(SampleValue(text, "handoff_coordinator_node_state{node=\"cp-1\",state=\"migrated\"}"),
              Optional(1.0));
  EXPECT_THAT(SampleValue(text, "handoff_coordinator_node_state{node=\"cp-1\",state=\"in-tree\"}"),
              Optional(0.0));
  EXPECT_THAT(SampleValue(text, "handoff_coordinator_node_state{node=\"cp-2\",state=\"unknown\"}"),
              Optional(1.0));
  EXPECT_THAT(SampleValue(text, "handoff_coordinator_node_connected{node=\"cp-1\"}"),
              Optional(1.0));
  EXPECT_THAT(SampleValue(text, "handoff_coordinator_node_connected{node=\"cp-2\"}"),
              Optional(0.0));
  EXPECT_THAT(SampleValue(text, "handoff_coordinator_agents_connected"), Optional(1.0));

  // A rollback under a new goal: the rollout's series follows, the old one is gone.
  pb::RolloutStatus back = Status("r1-abc", pb::RolloutStatus::ROLLING_BACK, pb::NODE_STATE_IN_TREE);
  AddNode(back, "cp-1", pb::NODE_STATE_PREPARED, true);
  AddNode(back, "cp-2", pb::NODE_STATE_IN_TREE, true);
  metrics.ObserveStatus(back);
  text = Text(registry);
  EXPECT_THAT(text, Not(HasSubstr("goal=\"migrated\"")));
  EXPECT_THAT(
      SampleValue(text, "handoff_coordinator_rollout_info{goal=\"in-tree\",rollout_id=\"r1-abc\"}"),
      Optional(1.0));
  EXPECT_THAT(SampleValue(text, "handoff_coordinator_rollout_phase{phase=\"migrating\"}"),
              Optional(0.0));
  EXPECT_THAT(SampleValue(text, "handoff_coordinator_node_state{node=\"cp-1\",state=\"migrated\"}"),
              Optional(0.0));
  EXPECT_THAT(SampleValue(text, "handoff_coordinator_node_state{node=\"cp-2\",state=\"unknown\"}"),
              Optional(0.0));
  EXPECT_THAT(SampleValue(text, "handoff_coordinator_agents_connected"), Optional(2.0));
}

TEST(CoordinatorMetricsTest, EachEventCountsInItsOwnSeries) {
  prometheus::Registry registry;
  CoordinatorMetrics metrics(registry);
  pb::CommandResult undone;
  undone.set_outcome(pb::CommandResult::ROLLED_BACK);
  metrics.MoveFinished("cp-1", NodeState::kPrepared, NodeState::kMigrated, undone,
                       absl::Seconds(42));
  pb::CommandResult succeeded;
  succeeded.set_outcome(pb::CommandResult::SUCCEEDED);
  metrics.MoveFinished("cp-1", NodeState::kInTree, NodeState::kPrepared, succeeded,
                       absl::Seconds(3));
  pb::CommandResult broken;  // failed while writing: nothing was verified
  broken.set_outcome(pb::CommandResult::NEEDS_ATTENTION);
  broken.mutable_move()->set_failure("disk full");
  metrics.MoveFinished("cp-2", NodeState::kInTree, NodeState::kPrepared, broken,
                       absl::Seconds(1));
  metrics.GoalSet("start", NodeState::kMigrated);
  metrics.GoalSet("rollback", NodeState::kInTree);
  metrics.AgentConnected("cp-1", false);
  metrics.AgentConnected("cp-1", true);
  metrics.AgentConnected("cp-1", true);
  metrics.LeaseReleaseDecided("released");
  metrics.LeaseReleaseDecided("released");
  metrics.LeaseReleaseDecided("not_touched");
  metrics.HandoverGapMeasured("service", absl::Milliseconds(2500));
  metrics.DoubleRunDetected("route");
  metrics.LongGapDetected("service");

  const std::string text = Text(registry);
  const std::string undone_move = "{from=\"prepared\",outcome=\"rolled_back\",to=\"migrated\"}";
  EXPECT_THAT(SampleValue(text, "handoff_coordinator_moves_total" + undone_move), Optional(1.0));
  EXPECT_THAT(SampleValue(text, "handoff_coordinator_move_duration_seconds_sum" + undone_move),
              Optional(42.0));
  EXPECT_THAT(SampleValue(text, "handoff_coordinator_move_duration_seconds_bucket{from=\"prepared\","
                                "outcome=\"rolled_back\",to=\"migrated\",le=\"30\"}"),
              Optional(0.0));
  EXPECT_THAT(SampleValue(text, "handoff_coordinator_move_duration_seconds_bucket{from=\"prepared\","
                                "outcome=\"rolled_back\",to=\"migrated\",le=\"60\"}"),
              Optional(1.0));
  EXPECT_THAT(SampleValue(text, "handoff_coordinator_moves_total{from=\"in-tree\",outcome="
                                "\"succeeded\",to=\"prepared\"}"),
              Optional(1.0));
  // The undone move failed verification; the one that broke while writing did not get that far.
  EXPECT_THAT(SampleValue(text, "handoff_coordinator_verification_failures_total"),
              Optional(1.0));
  EXPECT_THAT(SampleValue(text, "handoff_coordinator_rollbacks_total{by=\"agent\"}"),
              Optional(1.0));
  EXPECT_THAT(SampleValue(text, "handoff_coordinator_rollbacks_total{by=\"operator\"}"),
              Optional(1.0));
  EXPECT_THAT(SampleValue(text, "handoff_coordinator_agent_reconnects_total{node=\"cp-1\"}"),
              Optional(2.0));
  EXPECT_THAT(SampleValue(text, "handoff_coordinator_lease_releases_total{result=\"released\"}"),
              Optional(2.0));
  EXPECT_THAT(
      SampleValue(text, "handoff_coordinator_lease_releases_total{result=\"not_touched\"}"),
      Optional(1.0));
  EXPECT_THAT(SampleValue(text, "handoff_coordinator_lease_releases_total{result=\"error\"}"),
              Optional(0.0));
  EXPECT_THAT(
      SampleValue(text, "handoff_coordinator_handover_gap_seconds_sum{controller=\"service\"}"),
      Optional(2.5));
  EXPECT_THAT(SampleValue(text, "handoff_coordinator_double_runs_total{controller=\"route\"}"),
              Optional(1.0));
  EXPECT_THAT(SampleValue(text, "handoff_coordinator_long_gaps_total{controller=\"service\"}"),
              Optional(1.0));
  if (::handoff::testing::HavePromtool()) {
    EXPECT_EQ(::handoff::testing::PromtoolProblems(text), "") << text;
  }
}

using testing::Hello;
using testing::RecordingLink;

// The controller and the run watch tell the metrics as they work: a move's time on the
// controller's clock, a reconnect, an operator's rollback, a handover gap.
class CoordinatorEventsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ControllerOptions options = TwoNodeOptions();
    options.events = &metrics_;
    ASSERT_NO_FATAL_FAILURE(OpenController(database_, clock_, options, &store_, &controller_));
    controller_->Watch([this](const pb::RolloutStatus& status) { metrics_.ObserveStatus(status); });
    controller_->SetFacts(AssumedFacts());
  }
  void TearDown() override {
    controller_.reset();
    store_.reset();
  }

  std::shared_ptr<RecordingLink> Connect(const std::string& node) {
    auto link = std::make_shared<RecordingLink>();
    EXPECT_TRUE(controller_->AgentConnected(node, Hello(node, NodeState::kInTree), link).ok());
    return link;
  }

  ::handoff::server::testing::TempDatabase database_{"coordinator-metrics"};
  std::unique_ptr<store::Store> store_;
  FakeClock clock_;
  prometheus::Registry registry_;
  CoordinatorMetrics metrics_{registry_};
  std::unique_ptr<RolloutController> controller_;
};

TEST_F(CoordinatorEventsTest, TheControllerTellsMovesReconnectsAndRollbacks) {
  std::shared_ptr<RecordingLink> first = Connect("cp-1");
  Connect("cp-1");  // the same agent again: a reconnect
  std::shared_ptr<RecordingLink> cp1 = Connect("cp-1");
  Connect("cp-2");
  ASSERT_TRUE(controller_->Start("alice", NodeState::kMigrated).ok());
  ASSERT_EQ(cp1->Commands().size(), 1u);
  const pb::Command move = cp1->Commands().front();
  clock_.Advance(absl::Seconds(7));
  pb::AgentMessage message;
  message.mutable_result()->set_command_id(move.id());
  message.mutable_result()->set_outcome(pb::CommandResult::SUCCEEDED);
  message.mutable_result()->mutable_report()->set_state(pb::NODE_STATE_PREPARED);
  message.mutable_result()->mutable_report()->set_healthy(true);
  message.mutable_result()->mutable_report()->set_kube_controller_manager_version("v1.26.9");
  controller_->AgentMessage("cp-1", cp1.get(), message);
  ASSERT_TRUE(controller_->Rollback("alice", NodeState::kInTree).ok());

  const std::string text = Text(registry_);
  const std::string labels = "{from=\"in-tree\",outcome=\"succeeded\",to=\"prepared\"}";
  EXPECT_THAT(SampleValue(text, "handoff_coordinator_moves_total" + labels), Optional(1.0));
  EXPECT_THAT(SampleValue(text, "handoff_coordinator_move_duration_seconds_sum" + labels),
              Optional(7.0));
  EXPECT_THAT(SampleValue(text, "handoff_coordinator_agent_reconnects_total{node=\"cp-1\"}"),
              Optional(2.0));
  EXPECT_THAT(SampleValue(text, "handoff_coordinator_agent_reconnects_total{node=\"cp-2\"}"),
              Optional(0.0));
  EXPECT_THAT(SampleValue(text, "handoff_coordinator_rollbacks_total{by=\"operator\"}"),
              Optional(1.0));
  EXPECT_THAT(SampleValue(text, "handoff_coordinator_node_state{node=\"cp-1\",state=\"prepared\"}"),
              Optional(1.0));
  EXPECT_THAT(SampleValue(text, "handoff_coordinator_rollout_phase{phase=\"rolling_back\"}"),
              Optional(1.0));
  EXPECT_THAT(text, HasSubstr("handoff_coordinator_rollout_info{goal=\"in-tree\",rollout_id=\"r"));
}

TEST_F(CoordinatorEventsTest, TheRunWatchTellsEachHandoverGapOnce) {
  Connect("cp-1");
  Connect("cp-2");
  DetectorOptions detector;
  detector.nodes = {"cp-1", "cp-2"};
  RunWatch watch(*controller_, detector, &metrics_);
  // cp-1's manager runs service until its last sighting at 1s; cp-2's is first seen at 5s.
  for (int64_t t : {0, 1000}) {
    watch.Observe("cp-1", Sample(t, "kube-controller-manager", 11, true));
    watch.Observe("cp-2", Sample(t, "cloud-controller-manager", 22, false));
  }
  for (int64_t t : {2000, 3000}) {
    watch.Observe("cp-1", Sample(t, "kube-controller-manager", 11, false));
    watch.Observe("cp-2", Sample(t, "cloud-controller-manager", 22, false));
  }
  EXPECT_THAT(Text(registry_), Not(HasSubstr("handoff_coordinator_handover_gap_seconds_count")));
  for (int64_t t : {5000, 6000, 7000}) {
    watch.Observe("cp-1", Sample(t, "kube-controller-manager", 11, false));
    watch.Observe("cp-2", Sample(t, "cloud-controller-manager", 22, true));
  }
  const std::string text = Text(registry_);
  EXPECT_THAT(
      SampleValue(text, "handoff_coordinator_handover_gap_seconds_count{controller=\"service\"}"),
      Optional(1.0));
  EXPECT_THAT(
      SampleValue(text, "handoff_coordinator_handover_gap_seconds_sum{controller=\"service\"}"),
      Optional(4.0));
  EXPECT_THAT(SampleValue(text, "handoff_coordinator_double_runs_total{controller=\"service\"}"),
              std::nullopt);
}

// --metrics-listen on handoff-coordinator: an address it cannot serve stops the start (exit 2),
// named as the flag or as the config file's key.
class MetricsFlagTest : public testing::CoordinatorRunTest {
 protected:
  MetricsFlagTest() : CoordinatorRunTest("metrics-flag") {}

  int Run(std::vector<std::string> args, std::string* err) {
    const std::string tls = std::string(HANDOFF_TESTDATA_DIR) + "/handoff-tls/";
    std::vector<std::string> all = {"--nodes", "cp-1", "--no-cluster-checks", "--listen",
                                    "127.0.0.1:0", "--state-dir", dir_ + "/state", "--ca",
                                    tls + "ca.crt", "--cert", tls + "coordinator.crt", "--key",
                                    tls + "coordinator.key"};
    all.insert(all.end(), args.begin(), args.end());
    return CoordinatorRunTest::Run(std::move(all), err);
  }
};

TEST_F(MetricsFlagTest, AnAddressThatIsNotHostPortStopsTheStart) {
  std::string err;
  EXPECT_EQ(Run({"--metrics-listen", "127.0.0.1:metrics"}, &err), 2);
  EXPECT_THAT(err, HasSubstr("--metrics-listen: '127.0.0.1:metrics' is not HOST:PORT"));

  const std::string config = dir_ + "/coordinator.yaml";
  std::ofstream(config) << "metrics-listen: 127.0.0.1:99999\n";
  EXPECT_EQ(Run({"--config", config}, &err), 2);
  EXPECT_THAT(err, HasSubstr(config + ":1: key metrics-listen: --metrics-listen: "
                             "'127.0.0.1:99999' is not HOST:PORT"));
}

}  // namespace
}  // namespace handoff::server
