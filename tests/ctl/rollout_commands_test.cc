// handoffctl's coordinator commands against an in-process OperatorClient: what each command asks,
// what it prints, and which exit code each answer gives. coordinator_grpc_test.cc runs them over a
// real mutual-TLS connection.
#include <algorithm>
#include <deque>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "common/base/strings.h"
#include "coordinator/client/coordinator_client.h"
#include "ctl/ctl_cli.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/coordinator/fake_cluster.h"
#include "tests/ctl/rollout_test_support.h"
#include "tests/support/fake_clock.h"

namespace handoff::ctl {
namespace {

using ::handoff::ctl::test_support::CountOf;
using ::handoff::ctl::test_support::HaltedStatus;
using ::handoff::ctl::test_support::IdleStatus;
using ::handoff::ctl::test_support::kHaltedStatusText;
using ::handoff::ctl::test_support::kIdleStatusText;
using ::handoff::ctl::test_support::kMigratingStatusText;
using ::handoff::ctl::test_support::MigratingStatus;
using ::handoff::ctl::test_support::Result;
using ::handoff::testing::TempDir;
using ::handoff::testing::Testdata;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::IsEmpty;
using ::testing::SizeIs;
using ::testing::StartsWith;

// What the fake coordinator answers, and what it was asked.
struct Script {
  std::vector<std::string> calls;  // "<Method> {<request in text format>}"
  absl::StatusOr<v1::RolloutStatus> change = MigratingStatus();  // Start ... Finalize
  absl::StatusOr<v1::PlanRolloutResponse> plan = v1::PlanRolloutResponse();
  absl::StatusOr<v1::HistoryResponse> history = v1::HistoryResponse();
  // When not empty, each History call takes the first of these instead.
  std::deque<v1::HistoryResponse> history_pages;
  absl::StatusOr<v1::NodesResponse> nodes = v1::NodesResponse();
  std::vector<v1::RolloutStatus> statuses = {MigratingStatus()};
  absl::Status stream_end;  // how the Status stream ends after `statuses`
  // The stream stays open after `statuses` until `stop` says so.
  bool hold_until_stopped = false;
  // When not empty, each Status call takes the first of these instead (a reconnecting watch
  // makes several); once they are used up, `statuses` and `stream_end` again.
  struct Stream {
    std::vector<v1::RolloutStatus> statuses;
    absl::Status end;
  };
  std::deque<Stream> streams;
};

class FakeOperatorClient : public OperatorClient {
 public:
  explicit FakeOperatorClient(Script& script) : script_(script) {}

  absl::StatusOr<v1::PlanRolloutResponse> Plan(const v1::PlanRolloutRequest& request) override {
    Record("Plan", request);
    return script_.plan;
  }
  absl::StatusOr<v1::RolloutStatus> Start(const v1::StartRequest& request) override {
    return Change("Start", request);
  }
  absl::StatusOr<v1::RolloutStatus> Pause(const v1::PauseRequest& request) override {
    return Change("Pause", request);
  }
  absl::StatusOr<v1::RolloutStatus> Resume(const v1::ResumeRequest& request) override {
    return Change("Resume", request);
  }
  absl::StatusOr<v1::RolloutStatus> Abort(const v1::AbortRequest& request) override {
    return Change("Abort", request);
  }
  absl::StatusOr<v1::RolloutStatus> Rollback(const v1::RollbackRequest& request) override {
    return Change("Rollback", request);
  }
  absl::StatusOr<v1::RolloutStatus> Finalize(const v1::FinalizeRequest& request) override {
    return Change("Finalize", request);
  }
  absl::StatusOr<v1::RolloutStatus> AddNode(const v1::AddNodeRequest& request) override {
    return Change("AddNode", request);
  }
  absl::StatusOr<v1::RolloutStatus> RemoveNode(const v1::RemoveNodeRequest& request) override {
    return Change("RemoveNode", request);
  }
  absl::StatusOr<v1::HistoryResponse> History(const v1::HistoryRequest& request) override {
    Record("History", request);
    if (!script_.history_pages.empty()) {
      v1::HistoryResponse page = std::move(script_.history_pages.front());
      script_.history_pages.pop_front();
      return page;
    }
    return script_.history;
  }
  absl::StatusOr<v1::NodesResponse> Nodes(const v1::NodesRequest& request) override {
    Record("Nodes", request);
    return script_.nodes;
  }
  absl::Status Status(const v1::StatusRequest& request,
                      const std::function<void(const v1::RolloutStatus&)>& on_status,
                      const std::function<bool()>& stop) override {
    Record("Status", request);
    if (!script_.streams.empty()) {
      const Script::Stream stream = script_.streams.front();
      script_.streams.pop_front();
      for (const v1::RolloutStatus& status : stream.statuses) on_status(status);
      return stream.end;
    }
    for (const v1::RolloutStatus& status : script_.statuses) on_status(status);
    if (script_.hold_until_stopped) {
      if (!stop()) return absl::InternalError("fake: the held stream was not stopped");
      return absl::OkStatus();
    }
    return script_.stream_end;
  }

 private:
  void Record(const std::string& method, const google::protobuf::Message& request) {
    script_.calls.push_back(StrCat(method, " {", request.ShortDebugString(), "}"));
  }
  absl::StatusOr<v1::RolloutStatus> Change(const std::string& method,
                                           const google::protobuf::Message& request) {
    Record(method, request);
    return script_.change;
  }

  Script& script_;
};

class RolloutCommandsTest : public ::testing::Test {
 protected:
  RolloutCommandsTest() {
    environment_.open_files = [] { return NewPosixFileSystem(""); };
    environment_.open_clock = [this] {
      clock_.Advance(kClockStart - clock_.Now());  // each command starts at kClockStart
      return std::make_unique<BorrowedClock>(clock_);
    };
    environment_.get_env = [this](const std::string& name) -> std::optional<std::string> {
      auto it = env_.find(name);
      if (it == env_.end()) return std::nullopt;
      return it->second;
    };
    environment_.interrupted = [] { return false; };
    environment_.output_is_terminal = [this] { return terminal_; };
    environment_.open_coordinator = [this](const CoordinatorEndpoint& endpoint) {
      endpoints_.push_back(endpoint);
      return std::make_unique<FakeOperatorClient>(script_);
    };
  }

  // The connection flags every command needs, to the test CA and operator certificate.
  static std::vector<std::string> Connection() {
    return {"--coordinator", "coordinator.example:9443",
            "--ca",          Testdata("handoff-tls/ca.crt"),
            "--cert",        Testdata("handoff-tls/operator.crt"),
            "--key",         Testdata("handoff-tls/operator.key")};
  }

  // Runs with the connection flags the test did not give itself.
  Result Run(std::vector<std::string> args) {
    const std::vector<std::string> connection = Connection();
    for (size_t i = 0; i + 1 < connection.size(); i += 2) {
      if (std::find(args.begin(), args.end(), connection[i]) == args.end()) {
        args.insert(args.end(), {connection[i], connection[i + 1]});
      }
    }
    return RunBare(std::move(args));
  }

  Result RunBare(std::vector<std::string> args) {
    return test_support::Run(std::move(args), environment_);
  }

  // The clock of the last run, kept by the test after the run's context is gone; SleepFor
  // advances it at once.
  class BorrowedClock : public Clock {
   public:
    explicit BorrowedClock(FakeClock& clock) : clock_(clock) {}
    absl::Time Now() override { return clock_.Now(); }
    void SleepFor(absl::Duration duration) override { clock_.SleepFor(duration); }

   private:
    FakeClock& clock_;
  };
  static constexpr absl::Time kClockStart = absl::FromUnixSeconds(1'700'000'000);
  FakeClock clock_{kClockStart};
  absl::Duration Slept() { return clock_.Now() - kClockStart; }

  Script script_;
  std::map<std::string, std::string> env_;
  bool terminal_ = false;
  std::vector<CoordinatorEndpoint> endpoints_;
  CtlEnvironment environment_;
};

TEST_F(RolloutCommandsTest, StatusPrintsTheRolloutThenOneRowPerNode) {
  Result result = Run({"status"});
  EXPECT_EQ(result.code, kExitOk) << result.err;
  EXPECT_EQ(result.out, kMigratingStatusText);
  EXPECT_THAT(result.err, IsEmpty());
  EXPECT_THAT(script_.calls, ElementsAre("Status {}"));
}

TEST_F(RolloutCommandsTest, StatusOfAHaltedOrStuckRolloutIsExitCode1) {
  script_.statuses = {HaltedStatus()};
  Result halted = Run({"status"});
  EXPECT_EQ(halted.code, kExitProblems);
  EXPECT_EQ(halted.out, kHaltedStatusText);

  v1::RolloutStatus stuck = MigratingStatus();
  stuck.set_phase(v1::RolloutStatus::STUCK);
  stuck.set_next("cp-3 is inconsistent: repair it by hand, then resume");
  script_.statuses = {stuck};
  Result result = Run({"status"});
  EXPECT_EQ(result.code, kExitProblems);
  EXPECT_THAT(result.out, HasSubstr("phase:      stuck\n"
                                    "next:       cp-3 is inconsistent: repair it by hand, then "
                                    "resume\n"));

  v1::RolloutStatus paused = MigratingStatus();
  paused.set_phase(v1::RolloutStatus::PAUSED);
  paused.set_paused(true);
  script_.statuses = {paused};
  result = Run({"status"});
  EXPECT_EQ(result.code, kExitOk);
  EXPECT_THAT(result.out, HasSubstr("phase:      paused\npaused:     yes\nnext:"));
}

TEST_F(RolloutCommandsTest, ANodeWhoseStateIsNotKnownIsUnknownAgentAwayNeverInconsistent) {
  v1::RolloutStatus status = MigratingStatus();
  status.mutable_nodes(2)->set_state(v1::NODE_STATE_UNSPECIFIED);
  status.mutable_nodes(2)->set_connected(false);
  script_.statuses = {status};
  Result result = Run({"status"});
  EXPECT_THAT(result.out, HasSubstr("\ncp-3  unknown (agent away)  no "));
  EXPECT_THAT(result.out, Not(HasSubstr("inconsistent")));

  v1::NodesResponse nodes;
  v1::NodeInfo* away = nodes.add_nodes();
  away->set_name("cp-2");
  away->set_state(v1::NODE_STATE_UNSPECIFIED);
  away->add_reasons("a reason from before its agent left");
  script_.nodes = nodes;
  result = Run({"nodes"});
  EXPECT_THAT(result.out, HasSubstr("\ncp-2  unknown (agent away)  no "));
  EXPECT_THAT(result.out, HasSubstr("\ncp-2 is unknown (agent away):\n"));
}

TEST_F(RolloutCommandsTest, StatusCountsTheWorkersAndNodesListsEach) {
  v1::RolloutStatus status = MigratingStatus();
  v1::WorkerSummary* workers = status.mutable_workers();
  workers->set_known(3);
  workers->set_connected(2);
  workers->set_in_tree(1);
  workers->set_external(1);
  workers->set_inconsistent(1);
  script_.statuses = {status};
  Result result = Run({"status"});
  EXPECT_EQ(result.code, kExitOk) << result.err;
  EXPECT_THAT(result.out, HasSubstr("\nworkers:    3 (3 with an agent, 2 connected): 1 in-tree, "
                                    "1 external, 1 inconsistent or away\n"));
  // The batch, the failures, the blockers and the gate.
  workers->set_without_agent(23);
  for (int i = 0; i < 20; ++i) workers->add_without_agent_names("w-x" + std::to_string(i));
  workers->set_in_flight(2);
  workers->add_batch("w-2");
  workers->add_batch("w-3");
  workers->set_failed(1);
  workers->add_failures("w-4: in-tree -> external ROLLED_BACK: no credential provider");
  workers->set_max_unavailable("10%");
  workers->set_failure_budget(3);
  workers->set_target(v1::NODE_STATE_EXTERNAL);
  status.mutable_upgrade_gate()->add_reasons("2 workers' kubelets are not external: w-1, w-4");
  script_.statuses = {status};
  result = Run({"status"});
  EXPECT_THAT(result.out, HasSubstr(", 23 without an agent\n"
                                    "            towards external, 10% at a time, pausing after 3 "
                                    "failed\n"
                                    "            moving: w-2, w-3\n"
                                    "            failed: w-4: in-tree -> external ROLLED_BACK: no "
                                    "credential provider\n"
                                    "            23 workers have no agent: their kubelets cannot be "
                                    "moved (w-x0, w-x1, "));
  EXPECT_THAT(result.out, HasSubstr("w-x19 and 3 more)\n"));
  EXPECT_THAT(result.out, HasSubstr("\nupgrade:    not yet to 1.27:\n  - 2 workers' kubelets are "
                                    "not external: w-1, w-4\n"));
  status.mutable_upgrade_gate()->Clear();
  status.mutable_upgrade_gate()->set_open(true);
  script_.statuses = {status};
  EXPECT_THAT(Run({"status"}).out, HasSubstr("\nupgrade:    the cluster may now be upgraded"));
  // None known: no line.
  status.clear_workers();
  script_.statuses = {status};
  EXPECT_THAT(Run({"status"}).out, Not(HasSubstr("workers:")));

  v1::NodesResponse nodes;
  v1::NodeInfo* worker = nodes.add_nodes();
  worker->set_name("w-1");
  worker->set_role(v1::NODE_ROLE_WORKER);
  worker->set_state(v1::NODE_STATE_IN_TREE);
  worker->set_connected(true);
  worker->set_in_flight_command_id("r-9");
  nodes.set_next_after("w-1");
  nodes.set_total(40);
  script_.nodes = nodes;
  result = Run({"nodes", "--limit", "1"});
  EXPECT_THAT(result.out, HasSubstr("\nw-1 (worker)  in-tree"));
  EXPECT_THAT(result.out, HasSubstr("moving (r-9)"));
  EXPECT_THAT(result.out, HasSubstr("\n1 of 40 nodes; the next page: --after w-1\n"));
  EXPECT_THAT(script_.calls, ::testing::Contains(HasSubstr("Nodes {limit: 1")));
}

TEST_F(RolloutCommandsTest, StatusOfAWorkersReplacementNamesWhoLeavesWhatWaitsAndTheCommands) {
  v1::RolloutStatus status = MigratingStatus();
  status.set_strategy(v1::STRATEGY_REPLACE);
  v1::WorkerSummary* workers = status.mutable_workers();
  workers->set_known(4);
  workers->set_connected(4);
  workers->set_in_tree(3);
  workers->set_external(1);
  v1::WorkerReplacement* replacement = workers->mutable_replacement();
  replacement->set_size(3);
  replacement->set_old_left(3);
  replacement->set_leaving(1);
  replacement->add_leaving_names("w-1");
  replacement->set_joins_wanted(1);
  replacement->add_unverified("n-1: its Node: no providerID");
  replacement->add_commands("kubectl drain NODE");
  replacement->add_commands("kubectl delete node NODE");
  script_.statuses = {status};
  Result result = Run({"status"});
  EXPECT_EQ(result.code, kExitOk) << result.err;
  EXPECT_THAT(result.out, HasSubstr("            replacing: 3 of the old version left, 3 kept, 1 "
                                    "new wanted now\n"
                                    "            leaving: w-1\n"
                                    "            not serving yet: n-1: its Node: no providerID\n"
                                    "              1. kubectl drain NODE\n"
                                    "              2. kubectl delete node NODE\n"));
  // Nothing to do for the operator: no commands.
  replacement->set_leaving(0);
  replacement->clear_leaving_names();
  replacement->set_joins_wanted(0);
  script_.statuses = {status};
  EXPECT_THAT(Run({"status"}).out, Not(HasSubstr("kubectl drain")));

  v1::NodesResponse nodes;
  v1::NodeInfo* worker = nodes.add_nodes();
  worker->set_name("w-1");
  worker->set_role(v1::NODE_ROLE_WORKER);
  worker->set_state(v1::NODE_STATE_IN_TREE);
  worker->set_leaving(true);
  script_.nodes = nodes;
  EXPECT_THAT(Run({"nodes"}).out, HasSubstr("\nw-1 (worker, leaving)  in-tree"));
}

TEST_F(RolloutCommandsTest, StatusOfAReplacementShowsWhatItWaitsForAndTheCommands) {
  v1::RolloutStatus status = MigratingStatus();
  status.set_strategy(v1::STRATEGY_REPLACE);
  status.clear_in_flight();
  v1::Replacement* replacement = status.mutable_replacement();
  replacement->set_waiting(v1::Replacement::LEAVE);
  replacement->set_node("cp-1");
  replacement->set_size(3);
  replacement->set_old_nodes_left(3);
  replacement->add_pending("the API server has Node cp-1");
  replacement->add_commands("on cp-1: kubeadm reset --force");
  replacement->add_commands("kubectl delete node cp-1");
  script_.statuses = {status};
  Result result = Run({"status"});
  EXPECT_EQ(result.code, kExitOk) << result.err;
  EXPECT_THAT(result.out, HasSubstr("strategy:   replace (Leader Migration, node by node)\n"));
  EXPECT_THAT(result.out,
              HasSubstr("\nreplacement: 3 node(s) of the old version left, 3 members kept\n"
                        "  waiting for cp-1 to leave\n"
                        "  still: the API server has Node cp-1\n"
                        "  1. on cp-1: kubeadm reset --force\n"
                        "  2. kubectl delete node cp-1\n"));
  replacement->set_waiting(v1::Replacement::JOIN);
  replacement->set_join_state(v1::NODE_STATE_EXTERNAL);
  replacement->clear_pending();
  replacement->add_refused_candidates("cp-9: it is in-tree, not external");
  script_.statuses = {status};
  result = Run({"status"});
  EXPECT_THAT(result.out, HasSubstr("  waiting for a new node to join as external\n"
                                    "  not taken: cp-9: it is in-tree, not external\n"));
  Result json = Run({"status", "-o", "json"});
  EXPECT_EQ(nlohmann::json::parse(json.out)["replacement"]["waiting"], "JOIN");
}

TEST_F(RolloutCommandsTest, StatusOfADowntimeRolloutShowsTheStrategyTheOutageAndTheNewStates) {
  v1::RolloutStatus status = MigratingStatus();
  status.set_goal(v1::NODE_STATE_FINALIZED);
  status.set_strategy(v1::STRATEGY_DOWNTIME);
  status.set_phase(v1::RolloutStatus::SWITCHING);
  status.mutable_in_flight()->set_from(v1::NODE_STATE_STOPPED);
  status.mutable_in_flight()->set_to(v1::NODE_STATE_EXTERNAL);
  status.mutable_nodes(0)->set_state(v1::NODE_STATE_EXTERNAL);
  status.mutable_nodes(1)->set_state(v1::NODE_STATE_STOPPED);
  v1::Downtime* downtime = status.mutable_downtime();
  downtime->set_all_stopped_unix_ms(1'700'000'000'000);
  downtime->set_controller_manager_back_unix_ms(1'700'000'041'250);
  downtime->set_controller_manager_ms(41'250);
  script_.statuses = {status};
  Result result = Run({"status"});
  EXPECT_EQ(result.code, kExitOk) << result.err;
  EXPECT_THAT(result.out,
              HasSubstr("goal:       finalized\nstrategy:   downtime\nphase:      switching\n"
                        "downtime:   no kube-controller-manager for 41.2 s, no cloud controllers "
                        "since 2023-11-14T22:13:20Z (from the moves' verified results)\n"));
  EXPECT_THAT(result.out, HasSubstr("in flight:  cp-2 stopped -> external"));
  EXPECT_THAT(result.out, HasSubstr("\ncp-1  external "));
  EXPECT_THAT(result.out, HasSubstr("\ncp-2  stopped "));

  downtime->set_cloud_controllers_back_unix_ms(1'700'000'063'000);
  downtime->set_cloud_controllers_ms(63'000);
  status.set_phase(v1::RolloutStatus::DONE);
  script_.statuses = {status};
  result = Run({"status"});
  EXPECT_THAT(result.out, HasSubstr("downtime:   no kube-controller-manager for 41.2 s, no cloud "
                                    "controllers for 63.0 s (from the moves' verified results)\n"));
  downtime->set_observed_cloud_controllers_ms(64'500);
  downtime->set_observed_controller("service");
  script_.statuses = {status};
  result = Run({"status"});
  EXPECT_THAT(result.out, HasSubstr("controllers for 63.0 s (from the moves' verified results); the "
                                    "managers' /healthz showed no runner of service for 64.5 s\n"));
  // A Leader Migration rollout shows neither line.
  script_.statuses = {MigratingStatus()};
  result = Run({"status"});
  EXPECT_THAT(result.out, Not(HasSubstr("strategy:")));
  EXPECT_THAT(result.out, Not(HasSubstr("downtime:")));
}

TEST_F(RolloutCommandsTest, StartRefusesAStrategyItDoesNotKnow) {
  Result result = Run({"start", "--strategy", "fast"});
  EXPECT_EQ(result.code, kExitRefused);
  EXPECT_THAT(result.err, HasSubstr("--strategy"));
  EXPECT_THAT(script_.calls, IsEmpty());
}

TEST_F(RolloutCommandsTest, StartPrepareOnlyExcludesFinalize) {
  Result result = Run({"start", "--prepare-only", "--finalize"});
  EXPECT_EQ(result.code, kExitRefused);
  EXPECT_THAT(result.err, HasSubstr("--prepare-only"));
  EXPECT_THAT(script_.calls, IsEmpty());
}

TEST_F(RolloutCommandsTest, StatusBeforeAnyRollout) {
  script_.statuses = {IdleStatus()};
  Result result = Run({"status"});
  EXPECT_EQ(result.code, kExitOk);
  EXPECT_EQ(result.out, kIdleStatusText);
}

TEST_F(RolloutCommandsTest, ProgressBars) {
  v1::RolloutStatus status = IdleStatus();
  auto add = [&status](const std::string& name, int done, int total) {
    v1::NodeProgress* node = status.add_nodes();
    node->set_name(name);
    node->set_state(v1::NODE_STATE_IN_TREE);
    node->set_steps_done(done);
    node->set_steps_total(total);
  };
  add("a", 0, 3);
  add("b", 1, 3);
  add("c", 3, 3);
  add("d", 0, 0);
  add("e", 3, 12);
  script_.statuses = {status};
  Result result = Run({"status"});
  EXPECT_THAT(result.out,
              HasSubstr("NODE  STATE    CONNECTED  HEALTHY  PROGRESS         MOVING TO  LAST "
                        "RESULT\n"
                        "a     in-tree  no         no       [--------] 0/3   -          -\n"
                        "b     in-tree  no         no       [##------] 1/3   -          -\n"
                        "c     in-tree  no         no       [########] 3/3   -          -\n"
                        "d     in-tree  no         no       [--------] 0/0   -          -\n"
                        "e     in-tree  no         no       [##------] 3/12  -          -\n"));
}

TEST_F(RolloutCommandsTest, StatusJsonUsesTheProtoFieldNames) {
  Result result = Run({"status", "-o", "json"});
  ASSERT_EQ(result.code, kExitOk) << result.err;
  ASSERT_EQ(CountOf(result.out, "\n"), 1u);
  nlohmann::json json = nlohmann::json::parse(result.out);
  EXPECT_EQ(json["rollout_id"], "r-7f3a");
  EXPECT_EQ(json["revision"], "12");  // proto3 JSON: 64-bit integers are strings
  EXPECT_EQ(json["goal"], "NODE_STATE_MIGRATED");
  EXPECT_EQ(json["phase"], "MIGRATING");
  EXPECT_EQ(json["paused"], false);
  EXPECT_EQ(json["halt_reason"], "");
  EXPECT_EQ(json["facts"]["lease_held_by_healthy_manager"], true);
  EXPECT_EQ(json["in_flight"]["command_id"], "r-7f3a-5");
  ASSERT_EQ(json["nodes"].size(), 3u);
  EXPECT_EQ(json["nodes"][1]["name"], "cp-2");
  EXPECT_EQ(json["nodes"][1]["moving_to"], "NODE_STATE_MIGRATED");
  EXPECT_EQ(json["nodes"][1]["steps_done"], 1);
  EXPECT_EQ(json["nodes"][1]["steps_total"], 2);
  EXPECT_EQ(json["nodes"][2]["connected"], false);

  script_.statuses = {HaltedStatus()};
  Result halted = Run({"status", "-o", "json"});
  EXPECT_EQ(halted.code, kExitProblems);
  nlohmann::json parsed = nlohmann::json::parse(halted.out);
  EXPECT_EQ(parsed["phase"], "HALTED");
  EXPECT_FALSE(parsed.contains("in_flight"));
}

TEST_F(RolloutCommandsTest, EachChangeSendsItsRequestAndPrintsTheStatus) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"start"}, "Start {goal: NODE_STATE_MIGRATED}"},
      {{"start", "--finalize"}, "Start {goal: NODE_STATE_FINALIZED}"},
      {{"start", "--prepare-only"}, "Start {goal: NODE_STATE_PREPARED}"},
      // Sent as asked: the coordinator refuses it (the downtime path has no stop at prepared).
      {{"start", "--prepare-only", "--strategy", "downtime"},
       "Start {goal: NODE_STATE_PREPARED strategy: STRATEGY_DOWNTIME}"},
      {{"start", "--ignore-preflight", "leases,rbac"},
       "Start {goal: NODE_STATE_MIGRATED ignore_preflight: \"leases\" ignore_preflight: "
       "\"rbac\"}"},
      {{"pause"}, "Pause {}"},
      {{"pause", "--reason", "change freeze"}, "Pause {reason: \"change freeze\"}"},
      {{"resume"}, "Resume {}"},
      {{"abort", "--reason", "ccm crashloops"}, "Abort {reason: \"ccm crashloops\"}"},
      {{"rollback", "--to", "in-tree"}, "Rollback {to: NODE_STATE_IN_TREE}"},
      {{"rollback", "--to", "prepared"}, "Rollback {to: NODE_STATE_PREPARED}"},
      {{"start", "--strategy", "replace"},
       "Start {goal: NODE_STATE_MIGRATED strategy: STRATEGY_REPLACE}"},
      {{"rollback", "--to", "in-tree", "--strategy", "replace"},
       "Rollback {to: NODE_STATE_IN_TREE strategy: STRATEGY_REPLACE}"},
      {{"finalize"}, "Finalize {}"},
      {{"nodes", "add", "cp-4", "--reason", "new image"},
       "AddNode {node: \"cp-4\" reason: \"new image\"}"},
      {{"nodes", "remove", "cp-1"}, "RemoveNode {node: \"cp-1\"}"},
  };
  for (const auto& [args, call] : cases) {
    script_.calls.clear();
    Result result = Run(args);
    EXPECT_EQ(result.code, kExitOk) << args[0] << ": " << result.err;
    EXPECT_EQ(result.out, kMigratingStatusText) << args[0];
    EXPECT_THAT(script_.calls, ElementsAre(call));
  }
  // A change answered with a halted rollout still succeeded: exit code 1 is status's alone.
  script_.change = HaltedStatus();
  Result abort = Run({"abort", "-o", "json"});
  EXPECT_EQ(abort.code, kExitOk);
  EXPECT_EQ(nlohmann::json::parse(abort.out)["halted"], true);
}

TEST_F(RolloutCommandsTest, RollbackNeedsATargetItCanWalkBackTo) {
  Result missing = Run({"rollback"});
  EXPECT_EQ(missing.code, kExitRefused);
  EXPECT_THAT(missing.err, HasSubstr("--to is required"));
  Result forward = Run({"rollback", "--to", "migrated"});
  EXPECT_EQ(forward.code, kExitRefused);
  EXPECT_THAT(forward.err, HasSubstr("--to: migrated not in {prepared,in-tree}"));
  EXPECT_EQ(Run({"plan", "--goal", "inconsistent"}).code, kExitRefused);
  EXPECT_EQ(Run({"status", "-o", "yaml"}).code, kExitRefused);
  EXPECT_EQ(Run({"history", "--limit", "-1"}).code, kExitRefused);
  EXPECT_THAT(script_.calls, IsEmpty());
}

v1::PlanRolloutResponse TwoNodePlan() {
  v1::PlanRolloutResponse plan;
  plan.set_goal(v1::NODE_STATE_MIGRATED);
  auto step = [&plan](int index, const std::string& node, v1::NodeState from, v1::NodeState to) {
    v1::PlannedStep* added = plan.add_steps();
    added->set_index(index);
    added->set_node(node);
    added->set_from(from);
    added->set_to(to);
  };
  step(1, "cp-1", v1::NODE_STATE_IN_TREE, v1::NODE_STATE_PREPARED);
  step(2, "cp-2", v1::NODE_STATE_IN_TREE, v1::NODE_STATE_PREPARED);
  step(3, "cp-1", v1::NODE_STATE_PREPARED, v1::NODE_STATE_MIGRATED);
  step(4, "cp-2", v1::NODE_STATE_PREPARED, v1::NODE_STATE_MIGRATED);
  v1::NodePlan* cp1 = plan.add_nodes();
  cp1->set_node("cp-1");
  cp1->set_state(v1::NODE_STATE_IN_TREE);
  v1::PlannedTransition* prepare = cp1->add_transitions();
  prepare->set_from(v1::NODE_STATE_IN_TREE);
  prepare->set_to(v1::NODE_STATE_PREPARED);
  prepare->set_diff(
      "--- /dev/null\n"
      "+++ /etc/leadermigration.conf\n"
      "@@ -0,0 +1,2 @@\n"
      "+kind: LeaderMigrationConfiguration\n"
      "+leaderName: cloud-provider-extraction-migration");  // no final newline
  v1::PlannedTransition* migrate = cp1->add_transitions();
  migrate->set_from(v1::NODE_STATE_PREPARED);
  migrate->set_to(v1::NODE_STATE_MIGRATED);
  v1::NodePlan* cp2 = plan.add_nodes();
  cp2->set_node("cp-2");
  cp2->set_state(v1::NODE_STATE_IN_TREE);
  cp2->set_error("agent disconnected");
  return plan;
}

TEST_F(RolloutCommandsTest, PlanPrintsTheStepsInOrderThenEachNodesDiffs) {
  script_.plan = TwoNodePlan();
  Result result = Run({"plan"});
  EXPECT_EQ(result.code, kExitOk) << result.err;
  EXPECT_EQ(result.out,
            "plan to migrated: 4 step(s), in this order, each after the previous one succeeded\n"
            "  1.  cp-1  in-tree -> prepared\n"
            "  2.  cp-2  in-tree -> prepared\n"
            "  3.  cp-1  prepared -> migrated\n"
            "  4.  cp-2  prepared -> migrated\n"
            "\n"
            "# cp-1 (in-tree): in-tree -> prepared\n"
            "--- /dev/null\n"
            "+++ /etc/leadermigration.conf\n"
            "@@ -0,0 +1,2 @@\n"
            "+kind: LeaderMigrationConfiguration\n"
            "+leaderName: cloud-provider-extraction-migration\n"
            "# cp-1 (in-tree): prepared -> migrated: no file changes\n"
            "# cp-2 (in-tree): no diffs: agent disconnected\n");
  EXPECT_THAT(script_.calls, ElementsAre("Plan {}"));

  script_.calls.clear();
  Run({"plan", "--goal", "finalized"});
  Run({"plan", "--goal", "in-tree"});
  EXPECT_THAT(script_.calls,
              ElementsAre("Plan {goal: NODE_STATE_FINALIZED}", "Plan {goal: NODE_STATE_IN_TREE}"));
}

TEST_F(RolloutCommandsTest, BlockedPlanIsExitCode1) {
  v1::PlanRolloutResponse plan;
  plan.set_goal(v1::NODE_STATE_FINALIZED);
  plan.set_blocked_reason(
      "cp-3 is inconsistent: /etc/kubernetes/manifests/kube-controller-manager.yaml.bak defines "
      "a second kube-controller-manager pod");
  script_.plan = plan;
  Result result = Run({"plan", "--goal", "finalized"});
  EXPECT_EQ(result.code, kExitProblems);
  EXPECT_EQ(result.out,
            "plan to finalized: no steps\n"
            "blocked: cp-3 is inconsistent: /etc/kubernetes/manifests/"
            "kube-controller-manager.yaml.bak defines a second kube-controller-manager pod\n");

  script_.plan = v1::PlanRolloutResponse();
  script_.plan->set_goal(v1::NODE_STATE_MIGRATED);
  Result nothing = Run({"plan"});
  EXPECT_EQ(nothing.code, kExitOk);
  EXPECT_EQ(nothing.out, "plan to migrated: nothing to do, every node is migrated\n");

  script_.plan->set_note("the rollout replaces nodes");
  Result noted = Run({"plan"});
  EXPECT_EQ(noted.code, kExitOk);
  EXPECT_EQ(noted.out,
            "plan to migrated: nothing to do, every node is migrated\n"
            "note: the rollout replaces nodes\n");
}

TEST_F(RolloutCommandsTest, PlanJson) {
  script_.plan = TwoNodePlan();
  Result result = Run({"plan", "-o", "json"});
  ASSERT_EQ(result.code, kExitOk);
  nlohmann::json json = nlohmann::json::parse(result.out);
  EXPECT_EQ(json["goal"], "NODE_STATE_MIGRATED");
  ASSERT_EQ(json["steps"].size(), 4u);
  EXPECT_EQ(json["steps"][2]["index"], 3);
  EXPECT_EQ(json["steps"][2]["from"], "NODE_STATE_PREPARED");
  EXPECT_EQ(json["nodes"][0]["transitions"][0]["diff"].get<std::string>().substr(0, 13),
            "--- /dev/null");
  EXPECT_EQ(json["nodes"][1]["error"], "agent disconnected");
  EXPECT_EQ(json["blocked_reason"], "");
}

v1::HistoryResponse TwoEntries() {
  v1::HistoryResponse history;
  v1::HistoryEntry* start = history.add_entries();
  start->set_sequence(1);
  start->set_unix_ms(1'700'000'000'000);
  start->set_actor("alice");
  start->set_kind("start");
  start->set_message("goal migrated");
  start->set_detail_json(R"({"goal":"NODE_STATE_MIGRATED"})");
  v1::HistoryEntry* command = history.add_entries();
  command->set_sequence(2);
  command->set_unix_ms(1'700'000'001'000);
  command->set_actor("coordinator");
  command->set_kind("command");
  command->set_node("cp-1");
  command->set_command_id("r-7f3a-1");
  command->set_message("move cp-1 in-tree -> prepared");
  return history;
}

TEST_F(RolloutCommandsTest, History) {
  script_.history = TwoEntries();
  Result result = Run({"history"});
  EXPECT_EQ(result.code, kExitOk);
  EXPECT_EQ(result.out,
            "SEQ  TIME                  ACTOR        KIND     NODE  COMMAND   MESSAGE\n"
            "1    2023-11-14T22:13:20Z  alice        start    -     -         goal migrated\n"
            "2    2023-11-14T22:13:21Z  coordinator  command  cp-1  r-7f3a-1  move cp-1 in-tree -> "
            "prepared\n");
  EXPECT_THAT(result.err, IsEmpty());
  EXPECT_THAT(script_.calls, ElementsAre("History {}"));

  // A page as long as the limit may not be the last one.
  script_.calls.clear();
  Result page = Run({"history", "--after", "40", "--limit", "2"});
  EXPECT_EQ(page.code, kExitOk);
  EXPECT_EQ(page.err, "handoffctl: showing 2 entries; more may follow: --after 2\n");
  EXPECT_THAT(script_.calls, ElementsAre("History {after_sequence: 40 limit: 2}"));

  Result json = Run({"history", "-o", "json"});
  nlohmann::json parsed = nlohmann::json::parse(json.out);
  EXPECT_EQ(parsed["entries"][0]["sequence"], "1");
  EXPECT_EQ(parsed["entries"][0]["detail_json"], R"({"goal":"NODE_STATE_MIGRATED"})");
  EXPECT_EQ(parsed["entries"][1]["command_id"], "r-7f3a-1");

  script_.history = v1::HistoryResponse();
  EXPECT_EQ(Run({"history", "--after", "7"}).out, "no history entries after 7\n");
}

// The coordinator stops a page at a size (2 MiB): handoffctl asks for the rest, up to its limit.
TEST_F(RolloutCommandsTest, HistoryFollowsThePages) {
  v1::HistoryResponse first = TwoEntries();
  first.set_more(true);
  v1::HistoryResponse second;
  v1::HistoryEntry* third = second.add_entries();
  third->set_sequence(3);
  third->set_unix_ms(1'700'000'002'000);
  third->set_actor("cp-1");
  third->set_kind("result");
  third->set_message("in-tree → prepared succeeded");
  script_.history_pages = {first, second};
  Result result = Run({"history"});
  EXPECT_EQ(result.code, kExitOk) << result.err;
  EXPECT_THAT(result.out, HasSubstr("3    2023-11-14T22:13:22Z  cp-1"));
  EXPECT_THAT(script_.calls, ElementsAre("History {}", "History {after_sequence: 2 limit: 998}"));

  // Paging stops at --limit.
  script_.calls.clear();
  script_.history_pages = {first, second};
  Result limited = Run({"history", "--limit", "2", "-o", "json"});
  EXPECT_EQ(nlohmann::json::parse(limited.out)["entries"].size(), 2u);
  EXPECT_THAT(script_.calls, ElementsAre("History {limit: 2}"));
}

TEST_F(RolloutCommandsTest, Nodes) {
  v1::NodesResponse nodes;
  v1::NodeInfo* good = nodes.add_nodes();
  good->set_name("cp-1");
  good->set_state(v1::NODE_STATE_MIGRATED);
  good->set_connected(true);
  good->set_healthy(true);
  good->set_verifies(true);
  good->set_agent_version("0.1.0");
  good->set_peer("ipv4:10.0.1.10:53122");
  good->set_last_seen_unix_ms(1'700'000'002'000);
  good->set_last_result("succeeded: prepared -> migrated, verified");
  v1::NodeInfo* bad = nodes.add_nodes();
  bad->set_name("cp-3");
  bad->set_state(v1::NODE_STATE_INCONSISTENT);
  bad->set_agent_version("0.1.0");
  bad->set_last_seen_unix_ms(1'699'999'990'000);
  bad->add_reasons(
      "/etc/kubernetes/manifests/kube-controller-manager.yaml.bak: a second manifest defines pod "
      "kube-controller-manager");
  bad->set_health_detail("kube-controller-manager: https://127.0.0.1:10257/healthz refused");
  script_.nodes = nodes;
  Result result = Run({"nodes"});
  EXPECT_EQ(result.code, kExitOk);
  EXPECT_EQ(result.out,
            "NODE  STATE         CONNECTED  HEALTHY  VERIFIES  AGENT  PEER                  LAST "
            "SEEN             LAST RESULT\n"
            "cp-1  migrated      yes        yes      yes       0.1.0  ipv4:10.0.1.10:53122  "
            "2023-11-14T22:13:22Z  succeeded: prepared -> migrated, verified\n"
            "cp-3  inconsistent  no         no       no        0.1.0  -                     "
            "2023-11-14T22:13:10Z  -\n"
            "\n"
            "cp-3 is inconsistent:\n"
            "  - /etc/kubernetes/manifests/kube-controller-manager.yaml.bak: a second manifest "
            "defines pod kube-controller-manager\n"
            "cp-3 is not healthy: kube-controller-manager: https://127.0.0.1:10257/healthz "
            "refused\n");
  Result json = Run({"nodes", "-o", "json"});
  nlohmann::json parsed = nlohmann::json::parse(json.out);
  EXPECT_EQ(parsed["nodes"][1]["state"], "NODE_STATE_INCONSISTENT");
  EXPECT_EQ(parsed["nodes"][1]["peer"], "");
  EXPECT_EQ(parsed["nodes"][0]["last_seen_unix_ms"], "1700000002000");
}

TEST_F(RolloutCommandsTest, RefusalsAreExitCode2WithTheCoordinatorsMessage) {
  script_.change = absl::FailedPreconditionError(
      "the rollout is halted: resume, start or rollback instead of finalize");
  Result result = Run({"finalize"});
  EXPECT_EQ(result.code, kExitRefused);
  EXPECT_EQ(result.err,
            "handoffctl: the coordinator refused finalize (FAILED_PRECONDITION): the rollout is "
            "halted: resume, start or rollback instead of finalize\n");
  EXPECT_THAT(result.out, IsEmpty());

  script_.change = absl::InvalidArgumentError("rollback to MIGRATED: the target must be ...");
  EXPECT_EQ(Run({"rollback", "--to", "prepared"}).code, kExitRefused);
  script_.change = absl::NotFoundError("no rollout");
  EXPECT_EQ(Run({"resume"}).code, kExitRefused);

  script_.change = absl::PermissionDeniedError("certificate organisation is not handoff:operators");
  Result denied = Run({"start"});
  EXPECT_EQ(denied.code, kExitRefused);
  EXPECT_EQ(denied.err,
            "handoffctl: the coordinator refused start (PERMISSION_DENIED): "
            "certificate organisation is not handoff:operators (it accepts operator "
            "certificates, O=handoff:operators, signed by the handoff CA; this one is " +
                Testdata("handoff-tls/operator.crt") + ")\n");
  script_.change = absl::UnauthenticatedError("no client certificate");
  EXPECT_EQ(Run({"start"}).code, kExitRefused);

  script_.change = absl::InternalError("database is locked");
  Result internal = Run({"pause"});
  EXPECT_EQ(internal.code, kExitRefused);
  EXPECT_EQ(internal.err,
            "handoffctl: pause failed at the coordinator coordinator.example:9443 (INTERNAL): "
            "database is locked\n");
}

TEST_F(RolloutCommandsTest, UnreachableOrSilentCoordinatorIsExitCode3) {
  script_.statuses.clear();
  script_.stream_end = absl::UnavailableError("failed to connect to all addresses");
  Result result = Run({"status"});
  EXPECT_EQ(result.code, kExitUnavailable);
  EXPECT_EQ(result.err,
            "handoffctl: cannot reach the coordinator at coordinator.example:9443 (status: failed "
            "to connect to all addresses); check --coordinator (or $HANDOFF_COORDINATOR) and the "
            "certificates (--ca " +
                Testdata("handoff-tls/ca.crt") + ", --cert " +
                Testdata("handoff-tls/operator.crt") + ", --key " +
                Testdata("handoff-tls/operator.key") + ")\n");

  script_.change = absl::DeadlineExceededError("Deadline Exceeded");
  Result start = Run({"start", "--timeout", "2s"});
  EXPECT_EQ(start.code, kExitUnavailable);
  EXPECT_EQ(start.err,
            "handoffctl: the coordinator at coordinator.example:9443 did not answer start within "
            "2s (Deadline Exceeded); check --coordinator (or $HANDOFF_COORDINATOR) and the "
            "certificates; the change may still be made: see `handoffctl status`\n");

  script_.nodes = absl::DeadlineExceededError("Deadline Exceeded");
  Result nodes = Run({"nodes"});
  EXPECT_EQ(nodes.code, kExitUnavailable);
  EXPECT_THAT(nodes.err, AllOf(HasSubstr("did not answer nodes within 30s"),
                               ::testing::Not(HasSubstr("may still be made"))));
}

TEST_F(RolloutCommandsTest, StatusWithoutAnyStatusIsAnError) {
  script_.statuses.clear();
  Result result = Run({"status"});
  EXPECT_EQ(result.code, kExitRefused);
  EXPECT_THAT(result.err, HasSubstr("the coordinator ended the stream without a status"));
}

TEST_F(RolloutCommandsTest, WatchPrintsBlocksWhenNotATerminal) {
  script_.statuses = {IdleStatus(), MigratingStatus(), HaltedStatus()};
  Result result = Run({"status", "--watch"});
  EXPECT_EQ(result.code, kExitOk);  // halted, but a watch only watches
  EXPECT_EQ(result.out,
            std::string(kIdleStatusText) + "\n" + kMigratingStatusText + "\n" + kHaltedStatusText);
  EXPECT_EQ(result.err, "handoffctl: the coordinator ended the watch after 3 status(es)\n");
  EXPECT_THAT(script_.calls, ElementsAre("Status {watch: true}"));
}

TEST_F(RolloutCommandsTest, WatchRedrawsOnATerminal) {
  terminal_ = true;
  script_.statuses = {MigratingStatus(), HaltedStatus()};
  Result result = Run({"status", "-w"});
  EXPECT_EQ(result.code, kExitOk);
  EXPECT_EQ(result.out, std::string("\x1b[H\x1b[2J") + kMigratingStatusText + "\x1b[H\x1b[2J" +
                            kHaltedStatusText);
}

TEST_F(RolloutCommandsTest, WatchJsonIsOneObjectPerLine) {
  terminal_ = true;  // JSON is never drawn over
  script_.statuses = {IdleStatus(), MigratingStatus()};
  Result result = Run({"status", "--watch", "-o", "json"});
  EXPECT_EQ(result.code, kExitOk);
  std::istringstream lines(result.out);
  std::string line;
  std::vector<nlohmann::json> statuses;
  while (std::getline(lines, line)) statuses.push_back(nlohmann::json::parse(line));
  ASSERT_EQ(statuses.size(), 2u);
  EXPECT_EQ(statuses[0]["phase"], "IDLE");
  EXPECT_EQ(statuses[0]["nodes"], nlohmann::json::array());
  EXPECT_EQ(statuses[1]["revision"], "12");
}

TEST_F(RolloutCommandsTest, WatchStopsWhenInterrupted) {
  script_.statuses = {IdleStatus(), MigratingStatus()};
  script_.hold_until_stopped = true;
  environment_.interrupted = [] { return true; };
  Result result = Run({"status", "--watch"});
  EXPECT_EQ(result.code, kExitOk) << result.err;
  EXPECT_EQ(result.out, std::string(kIdleStatusText) + "\n" + kMigratingStatusText);
  EXPECT_THAT(result.err, IsEmpty());
}

TEST_F(RolloutCommandsTest, WatchEnds) {
  // --watch-timeout reached after statuses: the watch is over, not failed.
  script_.stream_end = absl::DeadlineExceededError("Deadline Exceeded");
  Result timed_out = Run({"status", "--watch", "--watch-timeout", "90m"});
  EXPECT_EQ(timed_out.code, kExitOk);
  EXPECT_EQ(timed_out.out, kMigratingStatusText);
  EXPECT_EQ(timed_out.err, "handoffctl: stopped watching: --watch-timeout 1h30m reached\n");
  EXPECT_EQ(endpoints_.back().watch_timeout, absl::Minutes(90));

  // The coordinator went away mid-watch, and reconnecting is off.
  script_.stream_end = absl::UnavailableError("Socket closed");
  Result lost = Run({"status", "--watch", "--reconnect-timeout", "0"});
  EXPECT_EQ(lost.code, kExitUnavailable);
  EXPECT_THAT(lost.err, StartsWith("handoffctl: cannot reach the coordinator at "
                                   "coordinator.example:9443 (status --watch: Socket closed)"));
  EXPECT_EQ(CountOf(lost.err, "reconnect"), 0u) << lost.err;

  // No first status within --timeout.
  script_.statuses.clear();
  script_.stream_end = absl::DeadlineExceededError("no status came");
  Result silent = Run({"status", "--watch", "--timeout", "5s"});
  EXPECT_EQ(silent.code, kExitUnavailable);
  EXPECT_THAT(silent.err, HasSubstr("did not answer status --watch within 5s"));
}

TEST_F(RolloutCommandsTest, WatchReconnectsWhenTheCoordinatorComesBack) {
  script_.streams = {
      {{IdleStatus(), MigratingStatus()}, absl::UnavailableError("Socket closed")},
      {{}, absl::UnavailableError("failed to connect to all addresses")},
      {{}, absl::UnavailableError("failed to connect to all addresses")},
      {{HaltedStatus()}, absl::OkStatus()},
  };
  Result result = Run({"status", "--watch", "--watch-timeout", "1h"});
  EXPECT_EQ(result.code, kExitOk) << result.err;
  // Every status from both coordinators, in order, and nothing else on stdout.
  EXPECT_EQ(result.out,
            std::string(kIdleStatusText) + "\n" + kMigratingStatusText + "\n" + kHaltedStatusText);
  // Waited 250ms, then 500ms, then 1s before the three new connections.
  EXPECT_EQ(result.err,
            "handoffctl: lost the coordinator at coordinator.example:9443 (status --watch: "
            "Socket closed); reconnecting for up to 2m\n"
            "handoffctl: reconnected to the coordinator at coordinator.example:9443 after 1.75s\n"
            "handoffctl: the coordinator ended the watch after 3 status(es)\n");
  EXPECT_EQ(Slept(), absl::Milliseconds(1750));
  EXPECT_THAT(script_.calls, ElementsAre("Status {watch: true}", "Status {watch: true}",
                                         "Status {watch: true}", "Status {watch: true}"));
  // A new connection each time, whose watch deadline is what is left of --watch-timeout.
  ASSERT_EQ(endpoints_.size(), 4u);
  EXPECT_EQ(endpoints_[0].watch_timeout, absl::Hours(1));
  EXPECT_EQ(endpoints_[1].watch_timeout, absl::Hours(1) - absl::Milliseconds(250));
  EXPECT_EQ(endpoints_[3].watch_timeout, absl::Hours(1) - absl::Milliseconds(1750));
}

TEST_F(RolloutCommandsTest, WatchReconnectsAfterEveryOutageAndResetsItsBackoff) {
  script_.streams = {
      {{IdleStatus()}, absl::CancelledError("Cancelled")},  // cancelled by the coordinator
      {{}, absl::UnavailableError("Connection refused")},
      {{MigratingStatus()}, absl::UnavailableError("Socket closed")},
      {{HaltedStatus()}, absl::DeadlineExceededError("Deadline Exceeded")},
  };
  Result result = Run({"status", "--watch", "-o", "json"});
  EXPECT_EQ(result.code, kExitOk) << result.err;
  EXPECT_EQ(CountOf(result.out, "\n"), 3u) << result.out;
  EXPECT_EQ(CountOf(result.err, "handoffctl: lost the coordinator"), 2u) << result.err;
  EXPECT_THAT(result.err, HasSubstr("reconnected to the coordinator at coordinator.example:9443 "
                                    "after 750ms\n"));
  // The second outage starts again from the first backoff.
  EXPECT_THAT(result.err, HasSubstr("reconnected to the coordinator at coordinator.example:9443 "
                                    "after 250ms\n"));
  EXPECT_THAT(result.err, HasSubstr("stopped watching: --watch-timeout 24h reached"));
}

TEST_F(RolloutCommandsTest, WatchGivesUpWhenTheCoordinatorStaysAway) {
  script_.streams = {{{MigratingStatus()}, absl::UnavailableError("Socket closed")}};
  script_.statuses.clear();
  script_.stream_end = absl::UnavailableError("Connection refused");
  Result result = Run({"status", "--watch", "--reconnect-timeout", "10s"});
  EXPECT_EQ(result.code, kExitUnavailable);
  EXPECT_EQ(result.out, kMigratingStatusText);
  EXPECT_THAT(result.err,
              AllOf(HasSubstr("reconnecting for up to 10s\n"),
                    HasSubstr("handoffctl: the coordinator at coordinator.example:9443 did not "
                              "come back within 10s\n"),
                    HasSubstr("handoffctl: cannot reach the coordinator at "
                              "coordinator.example:9443 (status --watch: Connection refused)")));
  EXPECT_EQ(Slept(), absl::Seconds(10));
  // Tries after 0.25, 0.75, 1.75, 3.75, 7.75 and (the last wait cut short) 10 seconds.
  EXPECT_EQ(script_.calls.size(), 7u);
}

TEST_F(RolloutCommandsTest, WatchDoesNotReconnectWhenItNeverSawAStatus) {
  script_.statuses.clear();
  script_.stream_end = absl::UnavailableError("Connection refused");
  Result result = Run({"status", "--watch"});
  EXPECT_EQ(result.code, kExitUnavailable);
  EXPECT_THAT(result.err, StartsWith("handoffctl: cannot reach the coordinator at "));
  EXPECT_THAT(script_.calls, SizeIs(1));
  EXPECT_EQ(Slept(), absl::ZeroDuration());
}

TEST_F(RolloutCommandsTest, CtrlCWhileReconnectingEndsTheWatch) {
  script_.stream_end = absl::UnavailableError("Socket closed");
  int polls = 0;
  // The first wait (250ms) looks 3 times, and once more before dialling; the second wait is
  // interrupted on its third look.
  environment_.interrupted = [&polls] { return ++polls > 6; };
  Result result = Run({"status", "--watch"});
  EXPECT_EQ(result.code, kExitOk) << result.err;
  EXPECT_THAT(script_.calls, SizeIs(2));
  EXPECT_THAT(result.err, HasSubstr("reconnecting for up to 2m"));
  EXPECT_THAT(result.err, ::testing::Not(HasSubstr("did not come back")));
}

TEST_F(RolloutCommandsTest, ReconnectTimeoutMustBeADuration) {
  Result result = Run({"status", "--watch", "--reconnect-timeout", "soon"});
  EXPECT_EQ(result.code, kExitRefused);
  EXPECT_THAT(result.err, HasSubstr("--reconnect-timeout \"soon\" is not a duration"));
  EXPECT_THAT(Run({"status", "--help"}).out, HasSubstr("--reconnect-timeout"));
}

TEST_F(RolloutCommandsTest, ConnectionFromFlags) {
  ASSERT_EQ(Run({"nodes", "--server-name", "coordinator.internal", "--timeout", "45s"}).code,
            kExitOk);
  ASSERT_EQ(endpoints_.size(), 1u);
  const CoordinatorEndpoint& endpoint = endpoints_[0];
  EXPECT_EQ(endpoint.address, "coordinator.example:9443");
  EXPECT_EQ(endpoint.tls.ca_pem, handoff::testing::ReadTestdata("handoff-tls/ca.crt"));
  EXPECT_EQ(endpoint.tls.cert_pem, handoff::testing::ReadTestdata("handoff-tls/operator.crt"));
  EXPECT_EQ(endpoint.tls.key_pem, handoff::testing::ReadTestdata("handoff-tls/operator.key"));
  EXPECT_EQ(endpoint.tls.server_name, "coordinator.internal");
  EXPECT_EQ(endpoint.timeout, absl::Seconds(45));
  EXPECT_EQ(endpoint.watch_timeout, absl::Hours(24));
}

TEST_F(RolloutCommandsTest, ConnectionFromTheEnvironment) {
  env_["HANDOFF_COORDINATOR"] = "10.0.0.5:9443";
  env_["HANDOFF_CA"] = Testdata("handoff-tls/ca.crt");
  env_["HANDOFF_CERT"] = Testdata("handoff-tls/operator.crt");
  env_["HANDOFF_KEY"] = Testdata("handoff-tls/operator.key");
  Result result = RunBare({"status"});
  ASSERT_EQ(result.code, kExitOk) << result.err;
  EXPECT_EQ(endpoints_.back().address, "10.0.0.5:9443");
  EXPECT_EQ(endpoints_.back().cert_path, Testdata("handoff-tls/operator.crt"));
  // A flag wins over its variable.
  RunBare({"status", "--coordinator", "10.0.0.6:9443", "--key",
           Testdata("handoff-tls/rogue-operator.key")});
  EXPECT_EQ(endpoints_.back().address, "10.0.0.6:9443");
  EXPECT_EQ(endpoints_.back().key_path, Testdata("handoff-tls/rogue-operator.key"));
  EXPECT_EQ(endpoints_.back().ca_path, Testdata("handoff-tls/ca.crt"));
}

TEST_F(RolloutCommandsTest, DefaultCertificatesAreReadThroughTheFileSystem) {
  TempDir root;
  std::filesystem::create_directories(root.path() + "/etc/handoff/pki");
  root.Write("etc/handoff/pki/ca.crt", handoff::testing::ReadTestdata("handoff-tls/ca.crt"));
  root.Write("etc/handoff/pki/operator.crt",
             handoff::testing::ReadTestdata("handoff-tls/operator.crt"));
  environment_.open_files = [&root] { return NewPosixFileSystem(root.path()); };
  Result missing = RunBare({"status", "--coordinator", "c:1"});
  EXPECT_EQ(missing.code, kExitRefused);
  EXPECT_EQ(missing.err,
            "handoffctl: cannot read the operator key /etc/handoff/pki/operator.key (the default; "
            "choose another with --key or $HANDOFF_KEY): /etc/handoff/pki/operator.key: No such "
            "file or directory\n");
  EXPECT_THAT(endpoints_, IsEmpty());

  root.Write("etc/handoff/pki/operator.key",
             handoff::testing::ReadTestdata("handoff-tls/operator.key"));
  Result result = RunBare({"status", "--coordinator", "c:1"});
  EXPECT_EQ(result.code, kExitOk) << result.err;
  ASSERT_EQ(endpoints_.size(), 1u);
  EXPECT_EQ(endpoints_[0].ca_path, "/etc/handoff/pki/ca.crt");
  EXPECT_EQ(endpoints_[0].tls.key_pem, handoff::testing::ReadTestdata("handoff-tls/operator.key"));
}

TEST_F(RolloutCommandsTest, ConnectionErrorsAreRefusals) {
  Result no_address = RunBare({"status"});
  EXPECT_EQ(no_address.code, kExitRefused);
  EXPECT_EQ(no_address.err,
            "handoffctl: no coordinator address: pass --coordinator HOST:PORT or set "
            "HANDOFF_COORDINATOR\n");

  Result bad_timeout = Run({"status", "--timeout", "soon"});
  EXPECT_EQ(bad_timeout.code, kExitRefused);
  EXPECT_EQ(bad_timeout.err,
            "handoffctl: --timeout \"soon\" is not a positive duration such as 30s, 5m or 24h\n");
  EXPECT_EQ(Run({"status", "--watch", "--watch-timeout", "0s"}).code, kExitRefused);

  // The certificate where the key should be.
  Result not_a_key = Run({"status", "--key", Testdata("handoff-tls/operator.crt")});
  EXPECT_EQ(not_a_key.code, kExitRefused);
  EXPECT_EQ(not_a_key.err, "handoffctl: the operator key " + Testdata("handoff-tls/operator.crt") +
                               " (from --key) holds no PEM block with \"PRIVATE KEY\"\n");
  Result missing_ca = Run({"status", "--ca", "/nonexistent/ca.crt"});
  EXPECT_EQ(missing_ca.code, kExitRefused);
  EXPECT_EQ(missing_ca.err,
            "handoffctl: cannot read the CA certificate /nonexistent/ca.crt (from --ca): "
            "/nonexistent/ca.crt: No such file or directory\n");
  EXPECT_THAT(endpoints_, IsEmpty());
  EXPECT_THAT(script_.calls, IsEmpty());
}

TEST_F(RolloutCommandsTest, Help) {
  Result help = RunBare({"--help"});
  EXPECT_EQ(help.code, kExitOk);
  EXPECT_THAT(help.out, AllOf(HasSubstr("  plan "), HasSubstr("  start "), HasSubstr("  status "),
                              HasSubstr("  rollback "), HasSubstr("  history, nodes "),
                              HasSubstr("3 the coordinator could not be\nreached")));
  for (const std::string command : {"plan", "start", "status", "pause", "resume", "abort",
                                    "rollback", "finalize", "history", "nodes"}) {
    Result command_help = RunBare({command, "--help"});
    EXPECT_EQ(command_help.code, kExitOk) << command;
    EXPECT_THAT(command_help.out,
                AllOf(HasSubstr("--coordinator"), HasSubstr("$HANDOFF_COORDINATOR"),
                      HasSubstr("--ca"), HasSubstr("--cert"), HasSubstr("--key"),
                      HasSubstr("--server-name"), HasSubstr("--timeout"), HasSubstr("-o,--output"),
                      HasSubstr("proto3 JSON mapping"), HasSubstr("Exit codes: 0 success"),
                      HasSubstr("3 the coordinator could not be reached")))
        << command;
  }
  EXPECT_THAT(RunBare({"status", "--help"}).out,
              AllOf(HasSubstr("--watch-timeout"), HasSubstr("1 the rollout is halted or stuck")));
  EXPECT_THAT(RunBare({"rollback", "--help"}).out, HasSubstr("--to"));
  EXPECT_THAT(RunBare({"plan", "--help"}).out, HasSubstr("--goal"));
}

}  // namespace
}  // namespace handoff::ctl
