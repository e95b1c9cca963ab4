// The live double-run detector inside the coordinator: samples in, a halt with its evidence in the
// history and who runs what in the status out. The detection rules themselves are in
// double_run_detector_test.cc.
#include "coordinator/server/run_watch.h"

#include <map>
#include <memory>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/coordinator/server/controller_fixture.h"
#include "tests/coordinator/server/temp_database.h"
#include "tests/support/fake_clock.h"

namespace handoff::server {
namespace {

using ::handoff::server::testing::Sample;
using ::testing::HasSubstr;
using ::testing::SizeIs;

class NullLink : public AgentLink {
 public:
  void Send(const pb::CoordinatorMessage&) override {}
  void Close(const absl::Status&) override {}
  std::string Peer() const override { return "test"; }
};

class RunWatchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_NO_FATAL_FAILURE(testing::OpenController(database_, clock_, testing::TwoNodeOptions(),
                                                    &store_, &controller_));
    controller_->SetFacts(testing::AssumedFacts());
    for (const std::string node : {"cp-1", "cp-2"}) {
      pb::AgentHello hello;
      hello.set_node_name(node);
      hello.mutable_report()->set_state(pb::NODE_STATE_IN_TREE);
      hello.mutable_report()->set_healthy(true);
      hello.mutable_report()->set_kube_controller_manager_version("v1.26.9");
      links_[node] = std::make_shared<NullLink>();
      ASSERT_TRUE(controller_->AgentConnected(node, hello, links_[node]).ok());
    }
    DetectorOptions detector;
    detector.nodes = {"cp-1", "cp-2"};
    watch_ = std::make_unique<RunWatch>(*controller_, detector);
  }
  void TearDown() override {
    watch_.reset();
    controller_.reset();
    store_.reset();
  }

  // Both nodes' managers run service from 0 to `until_ms`, sampled each second.
  void DoubleRunUntil(int64_t until_ms) {
    for (int64_t t = 0; t <= until_ms; t += 1000) {
      watch_->Observe("cp-1", Sample(t, "kube-controller-manager", 11, true));
      watch_->Observe("cp-2", Sample(t + 100, "cloud-controller-manager", 22, true));
    }
  }
  std::vector<pb::HistoryEntry> EntriesOfKind(const std::string& kind) {
    std::vector<pb::HistoryEntry> found;
    absl::StatusOr<pb::HistoryResponse> history = controller_->History(0, 0);
    EXPECT_TRUE(history.ok());
    for (const pb::HistoryEntry& entry : history->entries()) {
      if (entry.kind() == kind) found.push_back(entry);
    }
    return found;
  }

  // Answers the move in flight with success; false when none is.
  bool AnswerMove() {
    const pb::RolloutStatus status = controller_->Status();
    if (!status.has_in_flight()) return false;
    pb::AgentMessage message;
    pb::CommandResult* result = message.mutable_result();
    result->set_command_id(status.in_flight().command_id());
    result->set_outcome(pb::CommandResult::SUCCEEDED);
    result->mutable_report()->set_state(status.in_flight().to());
    result->mutable_report()->set_healthy(true);
    result->mutable_report()->set_kube_controller_manager_version("v1.26.9");
    const std::string node = status.in_flight().node();
    controller_->AgentMessage(node, links_[node].get(), message);
    return true;
  }

  std::map<std::string, std::shared_ptr<NullLink>> links_;
  testing::TempDatabase database_{"run-watch"};
  FakeClock clock_{absl::FromUnixSeconds(1800000000)};
  std::unique_ptr<store::Store> store_;
  std::unique_ptr<RolloutController> controller_;
  std::unique_ptr<RunWatch> watch_;
};

TEST_F(RunWatchTest, ADoubleRunHaltsTheRolloutWithTheEvidenceAndStatusNamesBothManagers) {
  ASSERT_TRUE(controller_->Start("alice", NodeState::kMigrated).ok());
  DoubleRunUntil(3000);
  pb::RolloutStatus status = controller_->Status();
  EXPECT_EQ(status.phase(), pb::RolloutStatus::HALTED);
  EXPECT_THAT(status.halt_reason(), HasSubstr("double run: service"));
  std::vector<pb::HistoryEntry> halts = EntriesOfKind("double-run");
  ASSERT_THAT(halts, SizeIs(1));
  EXPECT_THAT(halts[0].detail_json(), HasSubstr("\"pid\":22"));

  watch_->Fill(status);
  ASSERT_THAT(status.cloud_controllers(), SizeIs(3));
  const pb::CloudControllerView& service = status.cloud_controllers(1);
  EXPECT_EQ(service.name(), "service");
  ASSERT_THAT(service.runners(), SizeIs(2));
  EXPECT_EQ(service.runners(0).manager(), "kube-controller-manager");
  EXPECT_EQ(service.runners(0).node(), "cp-1");
  EXPECT_EQ(service.runners(1).manager(), "cloud-controller-manager");
  EXPECT_EQ(service.runners(1).node(), "cp-2");
}

TEST_F(RunWatchTest, WithoutARolloutMovingTheFindingGoesToTheHistoryOnly) {
  DoubleRunUntil(3000);
  EXPECT_EQ(controller_->Status().phase(), pb::RolloutStatus::IDLE);
  EXPECT_THAT(EntriesOfKind("double-run"), SizeIs(1));
}

// cp-1's kube-controller-manager runs service until 1 s, then no manager does until `back_ms`,
// when cp-2's cloud-controller-manager does; both nodes sampled every second.
void GapUntil(RunWatch& watch, int64_t back_ms) {
  for (int64_t t = 0; t <= back_ms; t += 1000) {
    watch.Observe("cp-1", Sample(t, "kube-controller-manager", 11, t <= 1000));
    watch.Observe("cp-2", Sample(t + 100, "cloud-controller-manager", 22, t == back_ms));
  }
}

// A long gap holds the next move back while it lasts, and the rollout goes on by itself once a
// manager runs the controller again: it passes (a successor takes the lease), so it is a wait,
// never a halt. The move under way finishes.
TEST_F(RunWatchTest, ALongGapHoldsTheNextMoveUntilAManagerRunsTheControllerAgain) {
  ASSERT_TRUE(controller_->Start("alice", NodeState::kMigrated).ok());
  ASSERT_TRUE(controller_->Status().has_in_flight());
  for (int64_t t = 0; t <= 70'000; t += 1000) {
    watch_->Observe("cp-1", Sample(t, "kube-controller-manager", 11, t <= 1000));
    watch_->Observe("cp-2", Sample(t + 100, "cloud-controller-manager", 22, false));
  }
  ASSERT_TRUE(AnswerMove());
  pb::RolloutStatus status = controller_->Status();
  EXPECT_EQ(status.phase(), pb::RolloutStatus::WAITING) << status.next();
  EXPECT_FALSE(status.halted());
  EXPECT_FALSE(status.has_in_flight());
  EXPECT_THAT(status.next(), HasSubstr("no-runner: no manager has run service since 00:00:01 UTC"));
  std::vector<pb::HistoryEntry> gaps = EntriesOfKind("no-runner");
  ASSERT_THAT(gaps, SizeIs(1));
  EXPECT_THAT(gaps[0].message(), HasSubstr("the next move waits until a manager runs it"));
  // cp-2's manager runs it: the next move goes out.
  watch_->Observe("cp-2", Sample(71'100, "cloud-controller-manager", 22, true));
  status = controller_->Status();
  EXPECT_TRUE(status.has_in_flight()) << status.next();

  // Another gap that does not end: the operator's resume goes on without a runner.
  for (int64_t t = 72'000; t <= 140'000; t += 1000) {
    watch_->Observe("cp-1", Sample(t, "kube-controller-manager", 11, false));
    watch_->Observe("cp-2", Sample(t + 100, "cloud-controller-manager", 22, false));
  }
  ASSERT_TRUE(AnswerMove());  // the move under way meanwhile finishes; no other starts
  status = controller_->Status();
  EXPECT_THAT(status.next(), HasSubstr("no-runner: no manager has run service since 00:01:11"));
  EXPECT_FALSE(status.has_in_flight());
  ASSERT_TRUE(controller_->Resume("alice").ok());
  status = controller_->Status();
  EXPECT_TRUE(status.has_in_flight()) << status.next();
  EXPECT_THAT(EntriesOfKind("resume").back().message(),
              HasSubstr("goes on without a runner of service"));
}

TEST_F(RunWatchTest, TheDowntimeStrategysOutageIsRecordedNotHaltingAndMeasuredFromTheSamples) {
  ASSERT_TRUE(controller_->Start("alice", NodeState::kFinalized, {}, Strategy::kDowntime).ok());
  GapUntil(*watch_, 70'000);
  pb::RolloutStatus status = controller_->Status();
  EXPECT_NE(status.phase(), pb::RolloutStatus::HALTED) << status.halt_reason();
  std::vector<pb::HistoryEntry> gaps = EntriesOfKind("no-runner");
  ASSERT_THAT(gaps, SizeIs(1));
  EXPECT_THAT(gaps[0].message(), HasSubstr("(expected: the downtime strategy's outage)"));

  // The status's outage, once the coordinator has marked it, gets the managers' own figure: the
  // gap from the last sighting at 1 s to the first at 70.1 s (cp-2 samples 100 ms later).
  status.mutable_downtime()->set_all_stopped_unix_ms(2'000);
  status.mutable_downtime()->set_cloud_controllers_back_unix_ms(65'000);
  watch_->Fill(status);
  EXPECT_EQ(status.downtime().observed_cloud_controllers_ms(), 69'100);
  EXPECT_EQ(status.downtime().observed_controller(), "service");
  // A gap outside the outage is not its figure.
  status.mutable_downtime()->set_all_stopped_unix_ms(80'000);
  status.mutable_downtime()->set_cloud_controllers_back_unix_ms(90'000);
  watch_->Fill(status);
  EXPECT_EQ(status.downtime().observed_cloud_controllers_ms(), 0);
}

TEST_F(RunWatchTest, AnAgentAwayMakesItsNodeUnknown) {
  watch_->Observe("cp-1", Sample(0, "kube-controller-manager", 11, true));
  watch_->Observe("cp-2", Sample(0, "cloud-controller-manager", 22, false));
  watch_->Away("cp-2");
  pb::RolloutStatus status;
  watch_->Fill(status);
  EXPECT_THAT(status.cloud_controllers(1).unknown_reason(), HasSubstr("cp-2: agent away"));
  EXPECT_THAT(status.cloud_controllers(1).runners(), SizeIs(1));
}

}  // namespace
}  // namespace handoff::server
