// The controller in-process: a real SQLite store in a temp dir, agents as links that record what
// they are sent, a fake clock. What goes over gRPC is tested in coordinator_server_test.cc and
// end to end in tests/coordinator/multiprocess.
#include "coordinator/server/rollout_controller.h"

#include <algorithm>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/coordinator/server/controller_fixture.h"
#include "tests/coordinator/server/temp_database.h"
#include "tests/support/fake_clock.h"

namespace handoff::server {
namespace {

using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::SizeIs;
using testing::AllHistory;
using testing::Hello;
using testing::kSettings;
using testing::LastOfKind;
using testing::NodeNames;
using testing::RecordingLink;
using testing::Report;

class RolloutControllerTest : public ::testing::Test {
 protected:
  void SetUp() override { Reopen(); }
  void TearDown() override {
    controller_.reset();
    store_.reset();
  }

  // A new controller on the same database: a coordinator restart.
  void Reopen() {
    controller_.reset();
    store_.reset();
    store_ = database_.Open();
    ASSERT_NE(store_, nullptr);
    ControllerOptions options;
    options.nodes = nodes_;
    options.settings_yaml = kSettings;
    options.fresh_facts_after_moves = fresh_facts_after_moves_;
    options.history_keep = history_keep_;
    options.read_cluster_view = read_cluster_view_;
    absl::StatusOr<std::unique_ptr<RolloutController>> controller =
        RolloutController::Create(*store_, clock_, options);
    ASSERT_TRUE(controller.ok()) << controller.status();
    controller_ = *std::move(controller);
    links_.clear();
    FactsReport facts;
    facts.rbac_ready = true;
    facts.lease_held = true;
    facts.source = "assumed";
    controller_->SetFacts(facts);
  }

  // A coordinator restart on the same database with `nodes` as --nodes; the old one is gone.
  absl::StatusOr<std::unique_ptr<RolloutController>> RestartWith(std::vector<std::string> nodes) {
    controller_.reset();
    ControllerOptions options;
    options.nodes = std::move(nodes);
    options.settings_yaml = kSettings;
    return RolloutController::Create(*store_, clock_, options);
  }

  // The facts as --no-cluster-checks reports them, with `view` as the cluster the checks read.
  void SetFactsWithView(std::shared_ptr<const preflight::ClusterView> view) {
    FactsReport facts;
    facts.rbac_ready = true;
    facts.lease_held = true;
    facts.source = "assumed";
    facts.cluster_view = std::move(view);
    controller_->SetFacts(facts);
  }

  // The agents of cp-1..3 at in-tree, with the facts the node checks read; cp-2 with a stray
  // file when `stray` is set.
  void ConnectAgentsWithFacts(bool stray) {
    for (const char* name : {"cp-1", "cp-2", "cp-3"}) {
      pb::AgentHello hello = Hello(name, NodeState::kInTree);
      pb::NodeFacts* node = hello.mutable_report()->mutable_facts();
      node->set_instance_id(absl::StrCat("i-", name));
      node->set_local_hostname(name);
      node->set_availability_zone("us-east-1a");
      if (stray && std::string(name) == "cp-2") {
        node->add_stray_files("/etc/kubernetes/manifests/kube-scheduler.yaml.orig: pod again");
      }
      Connect(name, hello);
    }
  }

  std::shared_ptr<RecordingLink> Connect(const std::string& node, const pb::AgentHello& hello) {
    auto link = std::make_shared<RecordingLink>();
    EXPECT_TRUE(controller_->AgentConnected(node, hello, link).ok());
    links_[node] = link;
    return link;
  }
  void ConnectAll(NodeState state) {
    for (const std::string& node : nodes_) Connect(node, Hello(node, state));
  }

  // The one move in flight, if any, and the link it went to.
  std::optional<pb::Command> InFlightCommand(std::string* node) {
    pb::RolloutStatus status = controller_->Status();
    if (!status.has_in_flight()) return std::nullopt;
    *node = status.in_flight().node();
    std::vector<pb::Command> commands = links_[*node]->Commands();
    EXPECT_FALSE(commands.empty());
    return commands.back();
  }

  pb::CommandResult Succeeded(const pb::Command& command) {
    pb::CommandResult result;
    result.set_command_id(command.id());
    result.set_outcome(pb::CommandResult::SUCCEEDED);
    *result.mutable_report() = Report(StateOrInconsistent(command.move().to()));
    return result;
  }

  void Answer(const std::string& node, const pb::CommandResult& result) {
    pb::AgentMessage message;
    *message.mutable_result() = result;
    controller_->AgentMessage(node, links_[node].get(), message);
  }

  // Answers every move with success until nothing is in flight; returns the moves in order.
  std::vector<std::string> RunToCompletion() {
    std::vector<std::string> moves;
    std::string node;
    while (std::optional<pb::Command> command = InFlightCommand(&node)) {
      moves.push_back(StrCatMove(node, *command));
      Answer(node, Succeeded(*command));
      if (moves.size() > 40) break;
    }
    return moves;
  }

  static std::string StrCatMove(const std::string& node, const pb::Command& command) {
    return node + ":" + std::string(NodeStateName(StateOrInconsistent(command.move().from()))) +
           ">" + std::string(NodeStateName(StateOrInconsistent(command.move().to())));
  }

  std::vector<std::string> nodes_ = {"cp-1", "cp-2", "cp-3"};
  bool fresh_facts_after_moves_ = false;
  int64_t history_keep_ = 100000;
  std::function<std::shared_ptr<const preflight::ClusterView>()> read_cluster_view_;
  testing::TempDatabase database_{"controller"};
  FakeClock clock_{absl::FromUnixSeconds(1800000000)};
  std::unique_ptr<store::Store> store_;
  std::unique_ptr<RolloutController> controller_;
  std::map<std::string, std::shared_ptr<RecordingLink>> links_;
};

TEST_F(RolloutControllerTest, IdleUntilStartAndEveryAgentWelcomedFirst) {
  ConnectAll(NodeState::kInTree);
  pb::RolloutStatus status = controller_->Status();
  EXPECT_EQ(status.phase(), pb::RolloutStatus::IDLE);
  for (const auto& [node, link] : links_) {
    ASSERT_FALSE(link->sent.empty());
    EXPECT_TRUE(link->sent.front().has_welcome());
    EXPECT_THAT(link->Commands(), SizeIs(0));
  }
}

TEST_F(RolloutControllerTest, FullRolloutPreparesAllThenMigratesOneByOne) {
  ConnectAll(NodeState::kInTree);
  ASSERT_TRUE(controller_->Start("alice", NodeState::kMigrated).ok());
  EXPECT_EQ(RunToCompletion(),
            (std::vector<std::string>{"cp-1:in-tree>prepared", "cp-2:in-tree>prepared",
                                      "cp-3:in-tree>prepared", "cp-1:prepared>migrated",
                                      "cp-2:prepared>migrated", "cp-3:prepared>migrated"}));
  pb::RolloutStatus status = controller_->Status();
  EXPECT_EQ(status.phase(), pb::RolloutStatus::DONE);
  for (const pb::NodeProgress& node : status.nodes()) {
    EXPECT_EQ(node.state(), pb::NODE_STATE_MIGRATED);
    EXPECT_EQ(node.steps_done(), 2);
    EXPECT_EQ(node.steps_total(), 2);
  }
  // Every move carries the rollout's settings.
  EXPECT_EQ(links_["cp-2"]->Commands().front().move().settings_yaml(), kSettings);
}

TEST_F(RolloutControllerTest, StartToPreparedStopsBeforeAnyCloudControllerManager) {
  ConnectAll(NodeState::kInTree);
  ASSERT_TRUE(controller_->Start("alice", NodeState::kPrepared).ok());
  EXPECT_EQ(RunToCompletion(),
            (std::vector<std::string>{"cp-1:in-tree>prepared", "cp-2:in-tree>prepared",
                                      "cp-3:in-tree>prepared"}));
  EXPECT_EQ(controller_->Status().phase(), pb::RolloutStatus::DONE);
  // From there a start goes on to migrated.
  ASSERT_TRUE(controller_->Start("alice", NodeState::kMigrated).ok());
  EXPECT_EQ(RunToCompletion(),
            (std::vector<std::string>{"cp-1:prepared>migrated", "cp-2:prepared>migrated",
                                      "cp-3:prepared>migrated"}));
}

TEST_F(RolloutControllerTest, StartToPreparedNeverWalksANodeBack) {
  ConnectAll(NodeState::kMigrated);
  absl::StatusOr<pb::RolloutStatus> refused = controller_->Start("alice", NodeState::kPrepared);
  EXPECT_TRUE(absl::IsFailedPrecondition(refused.status()));
  EXPECT_THAT(std::string(refused.status().message()),
              ::testing::HasSubstr("`handoffctl rollback --to prepared` walks them back"));
  EXPECT_FALSE(controller_->Status().has_in_flight());
  EXPECT_TRUE(absl::IsInvalidArgument(controller_->Start("alice", NodeState::kInTree).status()));
}

TEST_F(RolloutControllerTest, TheNodesWhoseManagersHoldTheLeasesMoveLastInTheirPhase) {
  FactsReport facts;
  facts.rbac_ready = true;
  facts.source = "kubernetes";
  // cp-1's in-tree kube-controller-manager runs the cloud controllers (its host name as the
  // kubelet registers it, the node as the rollout names it).
  facts.kube_controller_manager_holder_node = "cp-1.ec2.internal";
  controller_->SetFacts(facts);
  ConnectAll(NodeState::kInTree);
  ASSERT_TRUE(controller_->Start("alice", NodeState::kMigrated).ok());
  std::vector<std::string> moves;
  std::string node;
  for (int i = 0; i < 3; ++i) {
    std::optional<pb::Command> command = InFlightCommand(&node);
    ASSERT_TRUE(command.has_value());
    moves.push_back(StrCatMove(node, *command));
    if (i == 2) {
      // Before the last prepare is answered: cp-2's prepared manager now holds both leases.
      facts.kube_controller_manager_holder_node = "cp-2";
      facts.lease_held = true;
      facts.lease_holder_node = "cp-2";
      controller_->SetFacts(facts);
    }
    Answer(node, Succeeded(*command));
  }
  for (const std::string& move : RunToCompletion()) moves.push_back(move);
  EXPECT_EQ(moves, (std::vector<std::string>{"cp-2:in-tree>prepared", "cp-3:in-tree>prepared",
                                             "cp-1:in-tree>prepared", "cp-1:prepared>migrated",
                                             "cp-3:prepared>migrated", "cp-2:prepared>migrated"}));
}

// What the lease release would be told.
class RecordingListener : public MoveListener {
 public:
  void MoveSent(const std::string& node, const std::string& command_id,
                const FactsReport& facts) override {
    sent.push_back(node + ":" + command_id + ":" + std::to_string(facts.held.size()));
  }
  void ProcessesGone(const std::string& node, const pb::ProcessesGone& proof) override {
    gone.push_back(node + ":" + proof.command_id() + ":" + proof.component());
  }
  std::vector<std::string> sent, gone;
};

TEST_F(RolloutControllerTest, TheMoveListenerHearsEachMoveAndTheProofsOfTheMoveInFlightOnly) {
  RecordingListener listener;
  ControllerOptions options;
  options.nodes = nodes_;
  options.settings_yaml = kSettings;
  options.move_listener = &listener;
  controller_.reset();
  absl::StatusOr<std::unique_ptr<RolloutController>> controller =
      RolloutController::Create(*store_, clock_, options);
  ASSERT_TRUE(controller.ok()) << controller.status();
  controller_ = *std::move(controller);
  FactsReport facts;
  facts.rbac_ready = true;
  facts.lease_held = true;
  facts.source = "assumed";
  facts.held = {{"kube-controller-manager", "cp-1_x", "cp-1", "kube-controller-manager"}};
  controller_->SetFacts(facts);
  ConnectAll(NodeState::kInTree);
  ASSERT_TRUE(controller_->Start("alice", NodeState::kMigrated).ok());
  std::string node;
  std::optional<pb::Command> command = InFlightCommand(&node);
  ASSERT_TRUE(command.has_value());
  EXPECT_THAT(listener.sent, ElementsAre(node + ":" + command->id() + ":1"));
  auto gone = [&](const std::string& from, const std::string& command_id) {
    pb::AgentMessage message;
    message.mutable_processes_gone()->set_command_id(command_id);
    message.mutable_processes_gone()->set_component("kube-controller-manager");
    controller_->AgentMessage(from, links_[from].get(), message);
  };
  gone(node, "r0-not-this-move");
  gone(node == "cp-1" ? "cp-2" : "cp-1", command->id());  // another node
  gone(node, command->id());
  EXPECT_THAT(listener.gone, ElementsAre(node + ":" + command->id() + ":kube-controller-manager"));
  // The audit goes to the history.
  controller_->RecordAudit("lease-release", node, "released lease x", "{}");
  absl::StatusOr<pb::HistoryResponse> history = controller_->History(0, 100);
  ASSERT_TRUE(history.ok());
  ASSERT_GT(history->entries_size(), 0);
  const auto& last = history->entries(history->entries_size() - 1);
  EXPECT_EQ(last.kind(), "lease-release");
  EXPECT_EQ(last.message(), "released lease x");
  controller_.reset();  // before the listener goes
}

TEST_F(RolloutControllerTest, ANodeIsInconsistentOnlyWhileItsAgentSaysSo) {
  auto state_of = [&](const std::string& name) {
    const pb::RolloutStatus status = controller_->Status();
    for (const pb::NodeProgress& node : status.nodes()) {
      if (node.name() == name) return node.state();
    }
    return pb::NODE_STATE_UNSPECIFIED;
  };
  auto info_of = [&](const std::string& name) {
    const pb::NodesResponse nodes = controller_->Nodes();
    for (const pb::NodeInfo& node : nodes.nodes()) {
      if (node.name() == name) return node.state();
    }
    return pb::NODE_STATE_UNSPECIFIED;
  };
  // No agent yet: unknown, not inconsistent.
  EXPECT_EQ(state_of("cp-1"), pb::NODE_STATE_UNSPECIFIED);
  EXPECT_EQ(info_of("cp-1"), pb::NODE_STATE_UNSPECIFIED);
  Connect("cp-1", Hello("cp-1", NodeState::kInconsistent));
  Connect("cp-2", Hello("cp-2", NodeState::kMigrated));
  EXPECT_EQ(state_of("cp-1"), pb::NODE_STATE_INCONSISTENT);
  EXPECT_EQ(info_of("cp-1"), pb::NODE_STATE_INCONSISTENT);
  controller_->AgentDisconnected("cp-1", links_["cp-1"].get());
  controller_->AgentDisconnected("cp-2", links_["cp-2"].get());
  EXPECT_EQ(state_of("cp-1"), pb::NODE_STATE_UNSPECIFIED);
  EXPECT_EQ(info_of("cp-1"), pb::NODE_STATE_UNSPECIFIED);
  // A consistent state last reported stays shown (with the agent away).
  EXPECT_EQ(state_of("cp-2"), pb::NODE_STATE_MIGRATED);
}

TEST_F(RolloutControllerTest, ThePreflightRefusesAStartWithWhatToFixAndNothingMoves) {
  Connect("cp-1", Hello("cp-1", NodeState::kInTree));
  pb::AgentHello busy = Hello("cp-2", NodeState::kInTree);
  busy.mutable_report()->add_unfinished_transactions("t-1");
  Connect("cp-2", busy);
  absl::StatusOr<pb::RolloutStatus> refused = controller_->Start("alice", NodeState::kMigrated);
  ASSERT_EQ(refused.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(refused.status().message(),
            "the preflight checks refuse to start the rollout (nothing was moved):\n"
            "  [agents] cp-3: no agent is connected; start handoff-agent on the node (systemctl "
            "start handoff-agent)\n"
            "  [transactions] cp-2: unfinished transaction t-1; run `handoff-agent recover` on "
            "the node to settle it");
  EXPECT_EQ(controller_->Status().phase(), pb::RolloutStatus::IDLE);
  EXPECT_TRUE(links_["cp-1"]->Commands().empty());
  absl::StatusOr<pb::HistoryResponse> history = controller_->History(0, 100);
  ASSERT_TRUE(history.ok());
  EXPECT_EQ(history->entries(history->entries_size() - 1).kind(), "start-refused");

  // An unknown check is an error; a named one is skipped, and the history says so.
  EXPECT_EQ(controller_->Start("alice", NodeState::kMigrated, {"agent"}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(controller_->Start("alice", NodeState::kMigrated, {"agents"}).status().code(),
            absl::StatusCode::kFailedPrecondition);  // transactions still refuses
  ASSERT_TRUE(controller_
                  ->Start("alice", NodeState::kMigrated, {"agents", "transactions"},
                          Strategy::kLeaderMigration, "CHG-1042: cp-3 is retired")
                  .ok());
  history = controller_->History(0, 100);
  ASSERT_TRUE(history.ok());
  int ignored = 0;
  for (const pb::HistoryEntry& entry : history->entries()) {
    if (entry.kind() != "preflight-ignored") continue;
    ++ignored;
    EXPECT_EQ(entry.actor(), "alice");
    EXPECT_THAT(entry.message(), ::testing::HasSubstr("(skipped: CHG-1042: cp-3 is retired)"));
    const nlohmann::json detail = nlohmann::json::parse(entry.detail_json());
    EXPECT_EQ(detail["reason"], "CHG-1042: cp-3 is retired");
    EXPECT_TRUE(detail["check"] == "agents" || detail["check"] == "transactions") << detail;
  }
  EXPECT_EQ(ignored, 2);
}

// The checks `handoffctl preflight` makes, on the cluster the facts source read and the facts the
// agents reported: a failed one refuses the start, named by its check, and can be skipped by
// name; a check that only warns does not refuse.
// The cluster as the preflight's checks read it: cp-1..3 as Nodes with their instances, no pods,
// and, with `in_tree_volume`, a PersistentVolume on the in-tree EBS plugin (ebs-csi fails).
std::shared_ptr<const preflight::ClusterView> ThreeNodeView(bool in_tree_volume) {
  auto view = std::make_shared<preflight::ClusterView>();
  view->nodes = std::vector<kube::Json>{};
  for (const char* name : {"cp-1", "cp-2", "cp-3"}) {
    view->nodes->push_back(kube::Json::parse(
        absl::StrCat(R"({"metadata": {"name": ")", name,
               R"("}, "spec": {"providerID": "aws:///us-east-1a/i-)", name, R"("}})")));
  }
  view->pods = std::vector<kube::Json>{};
  view->persistent_volumes = std::vector<kube::Json>{};
  if (in_tree_volume) {
    view->persistent_volumes->push_back(kube::Json::parse(
        R"({"metadata": {"name": "pv-data"}, "spec": {"awsElasticBlockStore": {"volumeID": "vol-1"}}})"));
  }
  view->storage_classes = std::vector<kube::Json>{};
  view->csi_drivers = std::vector<kube::Json>{};
  return view;
}

TEST_F(RolloutControllerTest, ThePreflightsClusterChecksRefuseAStartByName) {
  SetFactsWithView(ThreeNodeView(/*in_tree_volume=*/true));
  ConnectAgentsWithFacts(/*stray=*/true);
  absl::StatusOr<pb::RolloutStatus> refused = controller_->Start("alice", NodeState::kMigrated);
  ASSERT_EQ(refused.status().code(), absl::StatusCode::kFailedPrecondition);
  const std::string why(refused.status().message());
  EXPECT_THAT(why, HasSubstr("  [stray-files] cp-2: /etc/kubernetes/manifests/"
                             "kube-scheduler.yaml.orig: pod again; move these files out"));
  EXPECT_THAT(why, HasSubstr("  [ebs-csi] PersistentVolume pv-data (awsElasticBlockStore vol-1) "
                             "uses the in-tree EBS plugin"));
  // rbac (no SubjectAccessReview answered), leader-elect and control-plane only warn here.
  EXPECT_THAT(why, Not(HasSubstr("[rbac]")));
  EXPECT_THAT(why, Not(HasSubstr("[control-plane]")));
  EXPECT_THAT(why, Not(HasSubstr("[node-names]")));
  EXPECT_TRUE(links_["cp-1"]->Commands().empty());

  EXPECT_EQ(controller_->Start("alice", NodeState::kMigrated, {"ebs-csi"}).status().code(),
            absl::StatusCode::kFailedPrecondition);  // stray-files still refuses
  ASSERT_TRUE(controller_->Start("alice", NodeState::kMigrated, {"ebs-csi", "stray-files"}).ok());
}

// A start the last view refuses is judged again on a view read at that moment: what was fixed
// since is not held against it, what still fails refuses it, and a start the last view lets
// through reads nothing more.
TEST_F(RolloutControllerTest, AStartTheLastViewRefusesIsJudgedAgainOnAFreshRead) {
  int reads = 0;
  bool fixed = false;
  read_cluster_view_ = [&] {
    ++reads;
    return ThreeNodeView(/*in_tree_volume=*/!fixed);
  };
  Reopen();
  SetFactsWithView(ThreeNodeView(/*in_tree_volume=*/true));
  ConnectAgentsWithFacts(/*stray=*/false);

  absl::StatusOr<pb::RolloutStatus> refused = controller_->Start("alice", NodeState::kPrepared);
  ASSERT_EQ(refused.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(refused.status().message(), HasSubstr("[ebs-csi] PersistentVolume pv-data"));
  EXPECT_EQ(reads, 1);

  // The volume moved to the CSI driver after the last read: the fresh read lets the start go.
  fixed = true;
  ASSERT_TRUE(controller_->Start("alice", NodeState::kPrepared).ok());
  EXPECT_EQ(reads, 2);
  // The fresh view is the one kept: the next start is not refused and reads nothing.
  ASSERT_TRUE(controller_->Start("alice", NodeState::kPrepared).ok());
  EXPECT_EQ(reads, 2);
}

TEST_F(RolloutControllerTest, RollbackToInTreeWalksBackInReverseOrder) {
  ConnectAll(NodeState::kInTree);
  ASSERT_TRUE(controller_->Start("alice", NodeState::kMigrated).ok());
  RunToCompletion();
  ASSERT_TRUE(controller_->Rollback("alice", NodeState::kInTree).ok());
  EXPECT_EQ(RunToCompletion(),
            (std::vector<std::string>{"cp-3:migrated>prepared", "cp-2:migrated>prepared",
                                      "cp-1:migrated>prepared", "cp-3:prepared>in-tree",
                                      "cp-2:prepared>in-tree", "cp-1:prepared>in-tree"}));
  EXPECT_EQ(controller_->Status().phase(), pb::RolloutStatus::DONE);
}

TEST_F(RolloutControllerTest, TheDowntimeStrategyMeasuresTheOutageFromTheAgentsResults) {
  ConnectAll(NodeState::kInTree);
  ASSERT_TRUE(controller_->Start("alice", NodeState::kFinalized, {}, Strategy::kDowntime).ok());
  // Each result finishes at a known time on the node's clock: move k at 1000 * k ms.
  std::vector<std::string> moves;
  std::string node;
  int64_t finished = 0;
  while (std::optional<pb::Command> command = InFlightCommand(&node)) {
    moves.push_back(StrCatMove(node, *command));
    pb::CommandResult result = Succeeded(*command);
    result.set_finished_unix_ms(finished += 1000);
    Answer(node, result);
    if (moves.size() > 20) break;
  }
  EXPECT_EQ(moves,
            (std::vector<std::string>{
                "cp-1:in-tree>stopped", "cp-2:in-tree>stopped", "cp-3:in-tree>stopped",
                "cp-1:stopped>external", "cp-2:stopped>external", "cp-3:stopped>external",
                "cp-1:external>finalized", "cp-2:external>finalized", "cp-3:external>finalized"}));
  pb::RolloutStatus status = controller_->Status();
  EXPECT_EQ(status.phase(), pb::RolloutStatus::DONE);
  EXPECT_EQ(status.strategy(), pb::STRATEGY_DOWNTIME);
  ASSERT_TRUE(status.has_downtime());
  // The last stop finished at 3 s, the first external kube-controller-manager at 4 s, the first
  // cloud-controller-manager at 7 s.
  EXPECT_EQ(status.downtime().all_stopped_unix_ms(), 3000);
  EXPECT_EQ(status.downtime().controller_manager_ms(), 1000);
  EXPECT_EQ(status.downtime().cloud_controllers_ms(), 4000);

  // The history says so in words, and a restarted coordinator still knows it.
  absl::StatusOr<pb::HistoryResponse> history = controller_->History(0, 0);
  ASSERT_TRUE(history.ok());
  std::vector<std::string> downtime_entries;
  for (const pb::HistoryEntry& entry : history->entries()) {
    if (entry.kind() == "downtime") downtime_entries.push_back(entry.message());
    if (entry.kind() == "start") {
      EXPECT_EQ(entry.message(), "start: goal finalized by the downtime strategy");
    }
  }
  EXPECT_THAT(downtime_entries, ElementsAre(HasSubstr("every kube-controller-manager is stopped"),
                                            HasSubstr("runs again (external) after 1.0 s"),
                                            HasSubstr("they were stopped for 4.0 s")));
  Reopen();
  status = controller_->Status();
  EXPECT_EQ(status.strategy(), pb::STRATEGY_DOWNTIME);
  EXPECT_EQ(status.downtime().cloud_controllers_ms(), 4000);
}

TEST_F(RolloutControllerTest, TheDowntimeStrategyRollsBackAlongItsPathAndRefusesPrepared) {
  ConnectAll(NodeState::kInTree);
  ASSERT_TRUE(controller_->Start("alice", NodeState::kFinalized, {}, Strategy::kDowntime).ok());
  std::string node;
  std::optional<pb::Command> first = InFlightCommand(&node);
  ASSERT_TRUE(first.has_value());
  Answer(node, Succeeded(*first));  // cp-1 stopped
  absl::StatusOr<pb::RolloutStatus> refused = controller_->Rollback("alice", NodeState::kPrepared);
  EXPECT_TRUE(absl::IsFailedPrecondition(refused.status())) << refused.status();
  EXPECT_THAT(std::string(refused.status().message()),
              HasSubstr("node cp-1 is stopped (the downtime path, which has no prepared): "
                        "rollback --to in-tree instead"));
  RunToCompletion();
  ASSERT_TRUE(controller_->Rollback("alice", NodeState::kInTree).ok());
  EXPECT_EQ(RunToCompletion(),
            (std::vector<std::string>{
                "cp-3:finalized>external", "cp-2:finalized>external", "cp-1:finalized>external",
                "cp-3:external>stopped", "cp-2:external>stopped", "cp-1:external>stopped",
                "cp-3:stopped>in-tree", "cp-2:stopped>in-tree", "cp-1:stopped>in-tree"}));
  EXPECT_EQ(controller_->Status().phase(), pb::RolloutStatus::DONE);
}

TEST_F(RolloutControllerTest, TheDowntimeStrategyHasNoStopAtMigrated) {
  ConnectAll(NodeState::kInTree);
  absl::StatusOr<pb::RolloutStatus> refused =
      controller_->Start("alice", NodeState::kMigrated, {}, Strategy::kDowntime);
  EXPECT_TRUE(absl::IsInvalidArgument(refused.status()));
  EXPECT_THAT(std::string(refused.status().message()), HasSubstr("no stop at migrated"));
  refused = controller_->Start("alice", NodeState::kPrepared, {}, Strategy::kDowntime);
  EXPECT_TRUE(absl::IsInvalidArgument(refused.status()));
  EXPECT_THAT(std::string(refused.status().message()), HasSubstr("no stop at prepared"));
  EXPECT_FALSE(controller_->Status().has_in_flight());
}

TEST_F(RolloutControllerTest, AFailedMoveHaltsWithTheOthersUntouched) {
  ConnectAll(NodeState::kPrepared);
  ASSERT_TRUE(controller_->Start("alice", NodeState::kMigrated).ok());
  std::string node;
  std::optional<pb::Command> command = InFlightCommand(&node);
  ASSERT_TRUE(command);
  ASSERT_EQ(node, "cp-1");
  pb::CommandResult failed;
  failed.set_command_id(command->id());
  failed.set_outcome(pb::CommandResult::ROLLED_BACK);
  failed.set_message("kube-controller-manager did not become healthy within 5m");
  *failed.mutable_report() = Report(NodeState::kPrepared);
  Answer("cp-1", failed);

  pb::RolloutStatus status = controller_->Status();
  EXPECT_EQ(status.phase(), pb::RolloutStatus::HALTED);
  EXPECT_THAT(status.halt_reason(), HasSubstr("cp-1"));
  EXPECT_THAT(status.halt_reason(), HasSubstr("did not become healthy"));
  EXPECT_FALSE(status.has_in_flight());
  EXPECT_THAT(links_["cp-2"]->Commands(), SizeIs(0));
  EXPECT_THAT(links_["cp-3"]->Commands(), SizeIs(0));

  // The operator decides: resume tries cp-1 again with a new command id.
  ASSERT_TRUE(controller_->Resume("alice").ok());
  std::optional<pb::Command> again = InFlightCommand(&node);
  ASSERT_TRUE(again);
  EXPECT_EQ(node, "cp-1");
  EXPECT_NE(again->id(), command->id());
}

TEST_F(RolloutControllerTest, TheCoordinatorHaltsARolloutUnderWayWithItsEvidence) {
  ConnectAll(NodeState::kInTree);
  // Nothing to halt before a start.
  EXPECT_FALSE(controller_->Halt("double-run", "service runs twice", "{}"));
  ASSERT_TRUE(controller_->Start("alice", NodeState::kMigrated).ok());
  std::string node;
  std::optional<pb::Command> first = InFlightCommand(&node);
  ASSERT_TRUE(first);
  EXPECT_TRUE(controller_->Halt("double-run", "service runs twice", R"({"controller":"service"})"));
  // A second finding keeps the first reason.
  EXPECT_FALSE(controller_->Halt("double-run", "route runs twice", "{}"));
  Answer(node, Succeeded(*first));  // the move in flight finishes; nothing new is sent
  pb::RolloutStatus status = controller_->Status();
  EXPECT_EQ(status.phase(), pb::RolloutStatus::HALTED);
  EXPECT_EQ(status.halt_reason(), "service runs twice");
  EXPECT_FALSE(status.has_in_flight());
  absl::StatusOr<pb::HistoryResponse> history = controller_->History(0, 0);
  ASSERT_TRUE(history.ok());
  int halts = 0;
  for (const pb::HistoryEntry& entry : history->entries()) {
    if (entry.kind() != "double-run") continue;
    ++halts;
    EXPECT_EQ(entry.actor(), "coordinator");
    EXPECT_THAT(entry.detail_json(), HasSubstr("service"));
  }
  EXPECT_EQ(halts, 1);
  // Only the operator resumes (R5).
  ASSERT_TRUE(controller_->Resume("alice").ok());
  EXPECT_TRUE(controller_->Status().has_in_flight());
}

TEST_F(RolloutControllerTest, WithClusterFactsTheNextMoveWaitsForFactsReadAfterTheLastResult) {
  fresh_facts_after_moves_ = true;
  Reopen();
  ConnectAll(NodeState::kInTree);
  ASSERT_TRUE(controller_->Start("alice", NodeState::kMigrated).ok());
  std::string node;
  std::optional<pb::Command> first = InFlightCommand(&node);
  ASSERT_TRUE(first);
  EXPECT_FALSE(controller_->WantsFacts());
  clock_.Advance(absl::Seconds(1));
  Answer(node, Succeeded(*first));
  // The move may have handed a lease over: which node goes next depends on it.
  EXPECT_FALSE(controller_->Status().has_in_flight());
  EXPECT_TRUE(controller_->WantsFacts());
  EXPECT_THAT(controller_->Status().next(),
              HasSubstr("reading the leases as the last move left them"));
  // Facts whose read began before the result do not count.
  FactsReport facts;
  facts.rbac_ready = true;
  facts.lease_held = true;
  facts.source = "kubernetes";
  facts.read_unix_ms = absl::ToUnixMillis(clock_.Now()) - 500;
  controller_->SetFacts(facts);
  EXPECT_FALSE(controller_->Status().has_in_flight());
  clock_.Advance(absl::Milliseconds(100));
  facts.read_unix_ms = absl::ToUnixMillis(clock_.Now());
  controller_->SetFacts(facts);
  EXPECT_FALSE(controller_->WantsFacts());
  EXPECT_TRUE(controller_->Status().has_in_flight());
}

TEST_F(RolloutControllerTest, PauseSendsNothingNewAndResumeContinues) {
  ConnectAll(NodeState::kInTree);
  ASSERT_TRUE(controller_->Start("alice", NodeState::kMigrated).ok());
  ASSERT_TRUE(controller_->Pause("alice", "lunch").ok());
  std::string node;
  std::optional<pb::Command> first = InFlightCommand(&node);
  ASSERT_TRUE(first);  // sent before the pause; it finishes
  Answer(node, Succeeded(*first));
  EXPECT_FALSE(controller_->Status().has_in_flight());
  EXPECT_EQ(controller_->Status().phase(), pb::RolloutStatus::PAUSED);
  ASSERT_TRUE(controller_->Resume("alice").ok());
  EXPECT_TRUE(controller_->Status().has_in_flight());
}

TEST_F(RolloutControllerTest, RestartWaitsForEveryAgentThenTakesTheResultFromTheHello) {
  ConnectAll(NodeState::kInTree);
  ASSERT_TRUE(controller_->Start("alice", NodeState::kMigrated).ok());
  std::string node;
  std::optional<pb::Command> command = InFlightCommand(&node);
  ASSERT_TRUE(command);

  Reopen();  // the coordinator died with the move in flight
  pb::RolloutStatus status = controller_->Status();
  ASSERT_TRUE(status.has_in_flight());
  EXPECT_EQ(status.in_flight().command_id(), command->id());
  EXPECT_EQ(status.phase(), pb::RolloutStatus::PREPARING);

  // The agent finished the move meanwhile and says so in its hello.
  pb::AgentHello hello = Hello(node, NodeState::kPrepared);
  *hello.add_recent_results() = Succeeded(*command);
  Connect(node, hello);
  status = controller_->Status();
  EXPECT_FALSE(status.has_in_flight());
  EXPECT_THAT(status.next(), HasSubstr("waiting for the agents of cp-2, cp-3"));

  Connect("cp-2", Hello("cp-2", NodeState::kInTree));
  Connect("cp-3", Hello("cp-3", NodeState::kInTree));
  EXPECT_THAT(RunToCompletion(), SizeIs(5));
  EXPECT_EQ(controller_->Status().phase(), pb::RolloutStatus::DONE);
}

TEST_F(RolloutControllerTest, AMoveTheAgentNeverReceivedIsSentAgainWithTheSameId) {
  ConnectAll(NodeState::kInTree);
  ASSERT_TRUE(controller_->Start("alice", NodeState::kMigrated).ok());
  std::string node;
  std::optional<pb::Command> command = InFlightCommand(&node);
  ASSERT_TRUE(command);
  controller_->AgentDisconnected(node, links_[node].get());
  EXPECT_TRUE(controller_->Status().has_in_flight());  // the outcome is unknown: wait

  std::shared_ptr<RecordingLink> again = Connect(node, Hello(node, NodeState::kInTree));
  ASSERT_THAT(again->Commands(), SizeIs(1));
  EXPECT_EQ(again->Commands().front().id(), command->id());
}

TEST_F(RolloutControllerTest, AMoveStillRunningOnTheAgentIsWaitedFor) {
  ConnectAll(NodeState::kInTree);
  ASSERT_TRUE(controller_->Start("alice", NodeState::kMigrated).ok());
  std::string node;
  std::optional<pb::Command> command = InFlightCommand(&node);
  ASSERT_TRUE(command);
  controller_->AgentDisconnected(node, links_[node].get());
  pb::AgentHello hello = Hello(node, NodeState::kInTree);
  hello.set_running_command_id(command->id());
  std::shared_ptr<RecordingLink> again = Connect(node, hello);
  EXPECT_THAT(again->Commands(), SizeIs(0));
  Answer(node, Succeeded(*command));
  EXPECT_EQ(controller_->Status().nodes(0).state(), pb::NODE_STATE_PREPARED);
}

TEST_F(RolloutControllerTest, AnInterruptedMoveIsRetriedWithoutHalting) {
  ConnectAll(NodeState::kInTree);
  ASSERT_TRUE(controller_->Start("alice", NodeState::kMigrated).ok());
  std::string node;
  std::optional<pb::Command> command = InFlightCommand(&node);
  ASSERT_TRUE(command);
  pb::AgentHello hello = Hello(node, NodeState::kInTree);
  pb::CommandResult interrupted;
  interrupted.set_command_id(command->id());
  interrupted.set_outcome(pb::CommandResult::INTERRUPTED);
  *interrupted.mutable_report() = Report(NodeState::kInTree);
  *hello.add_recent_results() = interrupted;
  std::shared_ptr<RecordingLink> again = Connect(node, hello);
  EXPECT_FALSE(controller_->Status().halted());
  ASSERT_THAT(again->Commands(), SizeIs(1));
  EXPECT_NE(again->Commands().front().id(), command->id());
}

TEST_F(RolloutControllerTest, ANewerStreamReplacesTheOlderOne) {
  ConnectAll(NodeState::kInTree);
  std::shared_ptr<RecordingLink> old_link = links_["cp-2"];
  Connect("cp-2", Hello("cp-2", NodeState::kInTree));
  ASSERT_TRUE(old_link->closed);
  EXPECT_EQ(old_link->closed->code(), absl::StatusCode::kAborted);
  // The old stream's late disconnect does not mark the node disconnected.
  controller_->AgentDisconnected("cp-2", old_link.get());
  EXPECT_TRUE(controller_->Status().nodes(1).connected());
}

// The probe's case: two machines with one node's certificate. Each stream used to replace the
// other, several times a second, and each move went to both machines.
TEST_F(RolloutControllerTest, ASecondAgentWithTheSameCertificateIsRefusedAndShown) {
  ConnectAll(NodeState::kInTree);
  std::shared_ptr<RecordingLink> first = links_["cp-1"];
  pb::AgentHello clone = Hello("cp-1", NodeState::kInTree);
  clone.set_instance_id("agent-of-a-cloned-machine");
  std::vector<std::shared_ptr<RecordingLink>> refused;
  for (int attempt = 0; attempt < 3; ++attempt) {
    refused.push_back(std::make_shared<RecordingLink>());
    absl::Status status = controller_->AgentConnected("cp-1", clone, refused.back());
    EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_THAT(std::string(status.message()),
                HasSubstr("is a second agent process with the same node certificate"));
  }
  EXPECT_FALSE(first->closed);

  pb::RolloutStatus status = controller_->Status();
  EXPECT_TRUE(status.nodes(0).connected());
  EXPECT_THAT(status.nodes(0).second_agent(),
              HasSubstr("a second agent with this node's certificate, from ipv4:127.0.0.1:5555, "
                        "refused 3 times"));
  EXPECT_EQ(controller_->Nodes().nodes(0).second_agent(), status.nodes(0).second_agent());
  EXPECT_EQ(status.nodes(1).second_agent(), "");

  // The moves go to the first agent only; the refused streams got nothing, not even a welcome.
  ASSERT_TRUE(controller_->Start("alice", NodeState::kMigrated).ok());
  ASSERT_THAT(first->Commands(), SizeIs(1));
  for (const auto& link : refused) EXPECT_THAT(link->sent, SizeIs(0));

  // One history entry, however often it retries.
  absl::StatusOr<pb::HistoryResponse> history = controller_->History(0, 0);
  ASSERT_TRUE(history.ok()) << history.status();
  int second_agent_entries = 0;
  for (const pb::HistoryEntry& entry : history->entries()) {
    if (entry.kind() == "second-agent") ++second_agent_entries;
  }
  EXPECT_EQ(second_agent_entries, 1);

  // Once the first is gone the count goes into its disconnect entry, and the other is served.
  controller_->AgentDisconnected("cp-1", first.get());
  EXPECT_EQ(controller_->Status().nodes(0).second_agent(), "");
  history = controller_->History(0, 0);
  ASSERT_TRUE(history.ok()) << history.status();
  EXPECT_THAT(history->entries(history->entries_size() - 1).message(),
              HasSubstr("agent disconnected (a second agent with this node's certificate"));
  auto successor = std::make_shared<RecordingLink>();
  EXPECT_TRUE(controller_->AgentConnected("cp-1", clone, successor).ok());
  EXPECT_TRUE(successor->sent.front().has_welcome());
}

TEST_F(RolloutControllerTest, AHelloWithoutAnInstanceIdNeverReplacesALiveStream) {
  ConnectAll(NodeState::kInTree);
  pb::AgentHello old_agent = Hello("cp-2", NodeState::kInTree);
  old_agent.clear_instance_id();
  EXPECT_EQ(
      controller_->AgentConnected("cp-2", old_agent, std::make_shared<RecordingLink>()).code(),
      absl::StatusCode::kFailedPrecondition);
  EXPECT_FALSE(links_["cp-2"]->closed);
}

// The probe's case: hundreds of reconnects a second wrote history without end. One agent gets a
// bucket of 30 entries, refilled by one every 2 s; what it was refused is counted and said.
TEST_F(RolloutControllerTest, AnAgentReconnectingWithoutEndIsRecordedWithinItsBudget) {
  ConnectAll(NodeState::kInTree);
  const size_t before = AllHistory(*controller_).size();
  for (int i = 0; i < 1000; ++i) {
    controller_->AgentDisconnected("cp-1", links_["cp-1"].get());
    Connect("cp-1", Hello("cp-1", NodeState::kInTree));
  }
  const std::vector<pb::HistoryEntry> flooded = AllHistory(*controller_);
  EXPECT_LE(flooded.size() - before, 30u);
  EXPECT_TRUE(controller_->Status().nodes(0).connected());

  clock_.Advance(absl::Seconds(2));
  controller_->AgentDisconnected("cp-1", links_["cp-1"].get());
  const std::vector<pb::HistoryEntry> after = AllHistory(*controller_);
  ASSERT_EQ(after.size(), flooded.size() + 1);
  EXPECT_EQ(after.back().kind(), "disconnect");
  EXPECT_THAT(after.back().message(),
              HasSubstr("earlier entries of cp-1's agent not written: more than 30 at once, or "
                        "one every 2s"));
  // Another node's agent is not held back by cp-1's.
  controller_->AgentDisconnected("cp-2", links_["cp-2"].get());
  EXPECT_EQ(AllHistory(*controller_).back().node(), "cp-2");
}

// A hello of megabytes (reasons, versions) is kept within bounds in the node, its status and
// its history entry.
TEST_F(RolloutControllerTest, AHugeHelloIsKeptWithinBounds) {
  pb::AgentHello hello = Hello("cp-1", NodeState::kInconsistent);
  for (int i = 0; i < 100; ++i) hello.mutable_report()->add_reasons(std::string(40000, 'r'));
  hello.mutable_report()->set_health_detail(std::string(100000, 'h'));
  hello.set_agent_version(std::string(100000, 'v'));
  Connect("cp-1", hello);
  pb::NodesResponse nodes = controller_->Nodes();
  EXPECT_EQ(nodes.nodes(0).reasons_size(), 33);  // 32 and a line saying how many more
  EXPECT_EQ(nodes.nodes(0).reasons(32), "… and 68 more");
  EXPECT_LT(nodes.ByteSizeLong(), 64u * 1024);
  EXPECT_LT(controller_->Status().ByteSizeLong(), 64u * 1024);
  const std::vector<pb::HistoryEntry> history = AllHistory(*controller_);
  ASSERT_FALSE(history.empty());
  EXPECT_EQ(history.back().kind(), "connect");
  EXPECT_LE(history.back().message().size(), 4096u + 64);
  EXPECT_THAT(history.back().message(), HasSubstr("more bytes not kept]"));
}

// The probe's case: past 4 MiB of history `history` failed with RESOURCE_EXHAUSTED. Pages stop
// at 2 MiB and say there is more.
TEST_F(RolloutControllerTest, HistoryIsServedInPagesOfBoundedSize) {
  const std::string detail = "{\"evidence\":\"" + std::string(60000, 'e') + "\"}";
  for (int i = 0; i < 100; ++i) controller_->RecordAudit("lease-release", "cp-1", "big", detail);
  absl::StatusOr<pb::HistoryResponse> page = controller_->History(0, 0);
  ASSERT_TRUE(page.ok()) << page.status();
  EXPECT_TRUE(page->more());
  EXPECT_LT(page->entries_size(), 100);
  EXPECT_LE(page->ByteSizeLong(), 2u * 1024 * 1024 + 70000);
  const std::vector<pb::HistoryEntry> all = AllHistory(*controller_);
  EXPECT_EQ(std::count_if(all.begin(), all.end(),
                          [](const pb::HistoryEntry& entry) { return entry.message() == "big"; }),
            100);
  // A detail larger than an entry keeps is replaced by a note of its size.
  controller_->RecordAudit("lease-release", "cp-1", "huge",
                           "{\"evidence\":\"" + std::string(70000, 'e') + "\"}");
  EXPECT_EQ(AllHistory(*controller_).back().detail_json(),
            R"json({"omitted":"70015 bytes, more than an entry keeps (65536)"})json");
}

TEST_F(RolloutControllerTest, OldEntriesBeyondTheKeepAreForgotten) {
  history_keep_ = 10;
  Reopen();
  for (int i = 0; i < 50; ++i) controller_->RecordAudit("note", "", absl::StrCat("entry ", i), "");
  const std::vector<pb::HistoryEntry> kept = AllHistory(*controller_);
  ASSERT_FALSE(kept.empty());
  EXPECT_LE(kept.size(), 20u);
  EXPECT_GT(kept.front().sequence(), 1);
  EXPECT_EQ(kept.back().message(), "entry 49");
  // Numbers go on: never given again.
  controller_->RecordAudit("note", "", "after", "");
  EXPECT_EQ(AllHistory(*controller_).back().sequence(), kept.back().sequence() + 1);
}

// The kinds of the history's entries, in order.
std::vector<std::string> HistoryKinds(RolloutController& controller) {
  std::vector<std::string> kinds;
  for (const pb::HistoryEntry& entry : AllHistory(controller)) kinds.push_back(entry.kind());
  return kinds;
}

TEST_F(RolloutControllerTest, AnUnknownNodeWaitsAsACandidateAndJoinsWhenAdded) {
  ConnectAll(NodeState::kInTree);
  ASSERT_TRUE(controller_->Start("alice", NodeState::kMigrated).ok());
  RunToCompletion();
  ASSERT_EQ(controller_->Status().phase(), pb::RolloutStatus::DONE);

  // A machine joined with kubeadm, its agent connected: a candidate, welcomed, never moved.
  std::shared_ptr<RecordingLink> joined = Connect("cp-4", Hello("cp-4", NodeState::kPrepared));
  ASSERT_FALSE(joined->sent.empty());
  EXPECT_TRUE(joined->sent.front().has_welcome());
  pb::RolloutStatus status = controller_->Status();
  EXPECT_THAT(NodeNames(status), ElementsAre("cp-1", "cp-2", "cp-3"));
  ASSERT_THAT(status.candidates(), SizeIs(1));
  EXPECT_EQ(status.candidates(0).name(), "cp-4");
  EXPECT_EQ(status.candidates(0).state(), pb::NODE_STATE_PREPARED);
  EXPECT_EQ(status.phase(), pb::RolloutStatus::DONE);
  pb::NodesResponse nodes = controller_->Nodes();
  ASSERT_THAT(nodes.nodes(), SizeIs(4));
  EXPECT_TRUE(nodes.nodes(3).candidate());
  EXPECT_FALSE(nodes.nodes(0).candidate());
  // Its agent reconnecting (and retrying) writes one request.
  controller_->AgentDisconnected("cp-4", joined.get());
  EXPECT_THAT(controller_->Status().candidates(), SizeIs(0));
  joined = Connect("cp-4", Hello("cp-4", NodeState::kPrepared));
  std::vector<pb::HistoryEntry> history = AllHistory(*controller_);
  const pb::HistoryEntry* request = LastOfKind(history, "join-request");
  ASSERT_NE(request, nullptr);
  EXPECT_THAT(request->message(), HasSubstr("handoffctl nodes add cp-4 makes it one"));

  absl::StatusOr<pb::RolloutStatus> added = controller_->AddNode("bob", "cp-4", "new image");
  ASSERT_TRUE(added.ok()) << added.status();
  EXPECT_THAT(NodeNames(*added), ElementsAre("cp-1", "cp-2", "cp-3", "cp-4"));
  EXPECT_THAT(added->candidates(), SizeIs(0));
  history = AllHistory(*controller_);
  const pb::HistoryEntry* entry = LastOfKind(history, "node-added");
  ASSERT_NE(entry, nullptr);
  EXPECT_EQ(entry->actor(), "bob");
  EXPECT_EQ(entry->node(), "cp-4");
  EXPECT_THAT(entry->message(), HasSubstr("joined the rollout as prepared"));
  EXPECT_THAT(entry->message(), HasSubstr("new image"));
  // The normal moves bring it to the goal.
  EXPECT_THAT(RunToCompletion(), ElementsAre("cp-4:prepared>migrated"));
  EXPECT_EQ(controller_->Status().phase(), pb::RolloutStatus::DONE);
  EXPECT_EQ(controller_->AddNode("bob", "cp-4", "").status().code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(controller_->AddNode("bob", "cp-9", "").status().code(), absl::StatusCode::kNotFound);
}

// A worker's agent is known and counted, never a candidate and never moved; a control-plane
// member's agent that says it is a worker's is refused.
TEST_F(RolloutControllerTest, AWorkersAgentIsCountedAndNeverACandidate) {
  ConnectAll(NodeState::kInTree);
  pb::AgentHello hello = Hello("w-1", NodeState::kInTree);
  hello.set_role(pb::NODE_ROLE_WORKER);
  std::shared_ptr<RecordingLink> worker = Connect("w-1", hello);
  ASSERT_FALSE(worker->sent.empty());
  EXPECT_TRUE(worker->sent.front().has_welcome());
  pb::AgentHello external = Hello("w-2", NodeState::kExternal);
  external.set_role(pb::NODE_ROLE_WORKER);
  std::shared_ptr<RecordingLink> second = Connect("w-2", external);

  pb::RolloutStatus status = controller_->Status();
  EXPECT_THAT(status.candidates(), SizeIs(0));
  EXPECT_EQ(status.workers().known(), 2);
  EXPECT_EQ(status.workers().connected(), 2);
  EXPECT_EQ(status.workers().in_tree(), 1);
  EXPECT_EQ(status.workers().external(), 1);
  pb::NodesResponse nodes = controller_->Nodes();
  ASSERT_THAT(nodes.nodes(), SizeIs(5));
  EXPECT_EQ(nodes.nodes(3).name(), "w-1");
  EXPECT_EQ(nodes.nodes(3).role(), pb::NODE_ROLE_WORKER);
  EXPECT_FALSE(nodes.nodes(3).candidate());
  EXPECT_EQ(nodes.nodes(0).role(), pb::NODE_ROLE_CONTROL_PLANE);
  EXPECT_EQ(controller_->AddNode("bob", "w-1", "").status().code(), absl::StatusCode::kNotFound);

  // The control plane moves first, without a command to either worker; then the in-tree one
  // (worker_batches_test.cc has the batches).
  ASSERT_TRUE(controller_->Start("alice", NodeState::kMigrated).ok());
  RunToCompletion();
  EXPECT_EQ(controller_->Status().phase(), pb::RolloutStatus::MOVING_WORKERS);
  ASSERT_THAT(worker->Commands(), SizeIs(1));
  EXPECT_EQ(worker->Commands()[0].move().to(), pb::NODE_STATE_EXTERNAL);
  EXPECT_THAT(second->sent, SizeIs(1));

  // Gone, it stays known, counted as not connected; back, connected again.
  controller_->AgentDisconnected("w-1", worker.get());
  status = controller_->Status();
  EXPECT_EQ(status.workers().known(), 2);
  EXPECT_EQ(status.workers().connected(), 1);
  EXPECT_EQ(status.workers().inconsistent(), 1);
  worker = Connect("w-1", hello);
  EXPECT_EQ(controller_->Status().workers().connected(), 2);

  // A second agent process for the same worker is refused while the first one's stream lives.
  pb::AgentHello clone = hello;
  clone.set_instance_id("another-process");
  EXPECT_EQ(controller_->AgentConnected("w-1", clone, std::make_shared<RecordingLink>()).code(),
            absl::StatusCode::kFailedPrecondition);

  // A member's agent claiming the worker role is refused, naming why.
  pb::AgentHello wrong = Hello("cp-1", NodeState::kMigrated);
  wrong.set_role(pb::NODE_ROLE_WORKER);
  absl::Status refused = controller_->AgentConnected("cp-1", wrong, std::make_shared<RecordingLink>());
  EXPECT_EQ(refused.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(refused.message()), HasSubstr("is a control-plane member of the rollout"));
}

TEST_F(RolloutControllerTest, AJoinTheRulesForbidIsRefusedAndChangesNothing) {
  ConnectAll(NodeState::kInTree);
  ASSERT_TRUE(controller_->Start("alice", NodeState::kMigrated).ok());
  RunToCompletion();
  const size_t entries = AllHistory(*controller_).size();
  Connect("cp-4", Hello("cp-4", NodeState::kInTree));
  absl::StatusOr<pb::RolloutStatus> added = controller_->AddNode("bob", "cp-4", "");
  EXPECT_EQ(added.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(added.status().message()),
              HasSubstr("M1: node cp-4 (in-tree) cannot join beside node cp-1 (migrated)"));
  pb::RolloutStatus status = controller_->Status();
  EXPECT_THAT(NodeNames(status), ElementsAre("cp-1", "cp-2", "cp-3"));
  EXPECT_THAT(status.candidates(), SizeIs(1));
  EXPECT_EQ(AllHistory(*controller_).size(), entries + 1);  // the join request only
  // An unhealthy node is not taken on either, whatever its state.
  pb::AgentMessage report;
  *report.mutable_report() = Report(NodeState::kPrepared, /*healthy=*/false);
  controller_->AgentMessage("cp-4", links_["cp-4"].get(), report);
  EXPECT_THAT(std::string(controller_->AddNode("bob", "cp-4", "").status().message()),
              HasSubstr("M2: node cp-4 is not verified healthy"));
}

TEST_F(RolloutControllerTest, AMemberLeavesOnceItsAgentIsGoneAndTheMembershipSurvivesARestart) {
  ConnectAll(NodeState::kInTree);
  ASSERT_TRUE(controller_->Start("alice", NodeState::kMigrated).ok());
  RunToCompletion();
  EXPECT_THAT(std::string(controller_->RemoveNode("bob", "cp-1", "").status().message()),
              HasSubstr("M3: node cp-1's agent is still connected"));
  controller_->AgentDisconnected("cp-1", links_["cp-1"].get());
  absl::StatusOr<pb::RolloutStatus> removed =
      controller_->RemoveNode("bob", "cp-1", "instance terminated");
  ASSERT_TRUE(removed.ok()) << removed.status();
  EXPECT_THAT(NodeNames(*removed), ElementsAre("cp-2", "cp-3"));
  Connect("cp-4", Hello("cp-4", NodeState::kMigrated));
  ASSERT_TRUE(controller_->AddNode("bob", "cp-4", "").ok());

  // Restarted with the --nodes it began with: the stored membership is the one taken.
  Reopen();
  EXPECT_THAT(NodeNames(controller_->Status()), ElementsAre("cp-2", "cp-3", "cp-4"));
  const std::vector<std::string> kinds = HistoryKinds(*controller_);
  EXPECT_NE(std::find(kinds.begin(), kinds.end(), "node-removed"), kinds.end());
  EXPECT_NE(std::find(kinds.begin(), kinds.end(), "node-added"), kinds.end());
  const std::vector<pb::HistoryEntry> history = AllHistory(*controller_);
  EXPECT_THAT(LastOfKind(history, "node-removed")->message(),
              HasSubstr("node cp-1 left the rollout (last reported migrated; its agent is gone): "
                        "instance terminated"));
  // And with the nodes it has now.
  nodes_ = {"cp-2", "cp-3", "cp-4"};
  Reopen();
  EXPECT_THAT(NodeNames(controller_->Status()), ElementsAre("cp-2", "cp-3", "cp-4"));
  // Not with others.
  absl::StatusOr<std::unique_ptr<RolloutController>> other = RestartWith({"cp-1", "cp-2"});
  ASSERT_FALSE(other.ok());
  EXPECT_THAT(std::string(other.status().message()), HasSubstr("it began with cp-1,cp-2,cp-3"));
}

// The facts once `gone` has left: the API server and etcd no longer list it (node_objects only
// for the nodes asked about, as KubeFactsSource reads them).
FactsReport FactsAfterLeaving(const std::string& gone, const std::vector<std::string>& members,
                              bool node_object_left) {
  FactsReport facts;
  facts.rbac_ready = true;
  facts.lease_held = true;
  facts.source = "assumed";  // the lease held, whoever holds it
  facts.node_objects[gone] = node_object_left;
  facts.etcd_members = members;
  return facts;
}

TEST_F(RolloutControllerTest, TheReplaceStrategyReplacesEachNodeAndResumesAfterARestart) {
  ConnectAll(NodeState::kInTree);
  absl::StatusOr<pb::RolloutStatus> started =
      controller_->Start("alice", NodeState::kMigrated, {}, Strategy::kReplace);
  ASSERT_TRUE(started.ok()) << started.status();
  EXPECT_EQ(started->strategy(), pb::STRATEGY_REPLACE);
  // Leader Migration on every node of version N first, in place.
  EXPECT_THAT(RunToCompletion(), ElementsAre("cp-1:in-tree>prepared", "cp-2:in-tree>prepared",
                                             "cp-3:in-tree>prepared"));
  pb::RolloutStatus status = controller_->Status();
  ASSERT_TRUE(status.has_replacement());
  EXPECT_EQ(status.replacement().waiting(), pb::Replacement::JOIN);
  EXPECT_EQ(status.replacement().join_state(), pb::NODE_STATE_EXTERNAL);
  EXPECT_EQ(status.replacement().size(), 3);
  EXPECT_EQ(status.replacement().old_nodes_left(), 3);
  EXPECT_THAT(status.replacement().commands(),
              Contains(HasSubstr("kubeadm join CONTROL_PLANE_ENDPOINT --control-plane")));
  EXPECT_THAT(status.next(), HasSubstr("a new control-plane node of version N+1 joins"));

  // A machine in another state is not taken, and the status says why.
  Connect("cp-9", Hello("cp-9", NodeState::kInTree));
  status = controller_->Status();
  EXPECT_THAT(status.replacement().refused_candidates(),
              ElementsAre("cp-9: it is in-tree, not external"));
  controller_->AgentDisconnected("cp-9", links_["cp-9"].get());

  // The node asked for joins by itself, and its agent adds its cloud-controller-manager.
  Connect("cp-4", Hello("cp-4", NodeState::kExternal));
  std::vector<pb::HistoryEntry> history = AllHistory(*controller_);
  const pb::HistoryEntry* added = LastOfKind(history, "node-added");
  ASSERT_NE(added, nullptr);
  EXPECT_EQ(added->actor(), "coordinator");
  EXPECT_THAT(added->message(), HasSubstr("the replacement asked for a node joining external"));
  EXPECT_THAT(RunToCompletion(), ElementsAre("cp-4:external>migrated"));

  // Then a node of version N leaves: only once its agent is gone and neither the API server nor
  // etcd lists it.
  status = controller_->Status();
  ASSERT_EQ(status.replacement().waiting(), pb::Replacement::LEAVE);
  EXPECT_EQ(status.replacement().node(), "cp-1");
  EXPECT_THAT(status.replacement().commands(),
              ElementsAre(HasSubstr("on cp-1: kubeadm reset --force"),
                          HasSubstr("etcdctl member remove"), "kubectl delete node cp-1"));
  EXPECT_THAT(controller_->LeavingNodes(), ElementsAre("cp-1"));
  EXPECT_THAT(
      status.replacement().pending(),
      ElementsAre(HasSubstr("its agent is connected"), HasSubstr("its Node object is not read yet"),
                  HasSubstr("etcd's member list is not read")));
  controller_->AgentDisconnected("cp-1", links_["cp-1"].get());
  controller_->SetFacts(FactsAfterLeaving("cp-1", {"cp-1", "cp-2", "cp-3", "cp-4"}, true));
  EXPECT_THAT(controller_->Status().replacement().pending(),
              ElementsAre(HasSubstr("the API server has Node cp-1 (read at "),
                          HasSubstr("etcd lists member cp-1 (member list from ")));
  EXPECT_THAT(NodeNames(controller_->Status()), ElementsAre("cp-1", "cp-2", "cp-3", "cp-4"));
  controller_->SetFacts(FactsAfterLeaving("cp-1", {"cp-2", "cp-3", "cp-4"}, false));
  status = controller_->Status();
  EXPECT_THAT(NodeNames(status), ElementsAre("cp-2", "cp-3", "cp-4"));
  EXPECT_EQ(status.replacement().waiting(), pb::Replacement::JOIN);
  EXPECT_EQ(status.replacement().old_nodes_left(), 2);
  history = AllHistory(*controller_);
  const pb::HistoryEntry* removed = LastOfKind(history, "node-removed");
  ASSERT_NE(removed, nullptr);
  EXPECT_EQ(removed->actor(), "coordinator");
  EXPECT_THAT(removed->message(), HasSubstr("neither the API server nor etcd lists it"));

  // A coordinator killed mid-replacement resumes where it was, with the size it kept.
  Reopen();
  for (const char* node : {"cp-2", "cp-3"}) Connect(node, Hello(node, NodeState::kPrepared));
  Connect("cp-4", Hello("cp-4", NodeState::kMigrated));
  status = controller_->Status();
  EXPECT_THAT(NodeNames(status), ElementsAre("cp-2", "cp-3", "cp-4"));
  ASSERT_TRUE(status.has_replacement()) << status.next();
  EXPECT_EQ(status.replacement().waiting(), pb::Replacement::JOIN);
  EXPECT_EQ(status.replacement().size(), 3);

  for (const auto& [joining, leaving] :
       std::vector<std::pair<std::string, std::string>>{{"cp-5", "cp-2"}, {"cp-6", "cp-3"}}) {
    Connect(joining, Hello(joining, NodeState::kExternal));
    EXPECT_THAT(RunToCompletion(), ElementsAre(joining + ":external>migrated"));
    ASSERT_EQ(controller_->Status().replacement().node(), leaving);
    controller_->AgentDisconnected(leaving, links_[leaving].get());
    std::vector<std::string> members = NodeNames(controller_->Status());
    members.erase(std::find(members.begin(), members.end(), leaving));
    controller_->SetFacts(FactsAfterLeaving(leaving, members, false));
  }
  status = controller_->Status();
  EXPECT_EQ(status.phase(), pb::RolloutStatus::DONE) << status.next();
  EXPECT_THAT(NodeNames(status), ElementsAre("cp-4", "cp-5", "cp-6"));
  EXPECT_FALSE(status.has_replacement());

  // Finalize goes on in place; a rollback by replacement keeps the three members.
  ASSERT_TRUE(controller_->Finalize("alice").ok());
  EXPECT_THAT(RunToCompletion(), SizeIs(3));
  absl::StatusOr<pb::RolloutStatus> back =
      controller_->Rollback("alice", NodeState::kInTree, /*replace=*/true);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_THAT(RunToCompletion(), ElementsAre("cp-4:finalized>migrated", "cp-5:finalized>migrated",
                                             "cp-6:finalized>migrated"));
  status = controller_->Status();
  EXPECT_EQ(status.replacement().waiting(), pb::Replacement::JOIN);
  EXPECT_EQ(status.replacement().join_state(), pb::NODE_STATE_PREPARED);
  EXPECT_THAT(status.replacement().commands(),
              Contains(HasSubstr("handoffctl kubeadm-config apply --to prepared")));
  EXPECT_THAT(status.replacement().commands(),
              Contains(HasSubstr("kubeadm-config leader-migration-file")));
}

TEST_F(RolloutControllerTest, ANodeWithAMoveUnderWayCannotLeave) {
  ConnectAll(NodeState::kInTree);
  ASSERT_TRUE(controller_->Start("alice", NodeState::kMigrated).ok());
  std::string moving;
  ASSERT_TRUE(InFlightCommand(&moving).has_value());
  controller_->AgentDisconnected(moving, links_[moving].get());
  EXPECT_THAT(std::string(controller_->RemoveNode("bob", moving, "").status().message()),
              HasSubstr("M3: a move to node " + moving + " is outstanding"));
}

TEST_F(RolloutControllerTest, CandidatesAreBoundedAndForgottenWhenTheirAgentsLeave) {
  std::vector<std::shared_ptr<RecordingLink>> candidates;
  for (int i = 0; i < 16; ++i) {
    const std::string name = "extra-" + std::to_string(i);
    candidates.push_back(Connect(name, Hello(name, NodeState::kInTree)));
  }
  auto one_too_many = std::make_shared<RecordingLink>();
  absl::Status refused =
      controller_->AgentConnected("extra-16", Hello("extra-16", NodeState::kInTree), one_too_many);
  EXPECT_EQ(refused.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(refused.message()), HasSubstr("at most 16"));
  EXPECT_THAT(controller_->Status().candidates(), SizeIs(16));
  controller_->AgentDisconnected("extra-0", candidates[0].get());
  EXPECT_THAT(controller_->Status().candidates(), SizeIs(15));
  EXPECT_TRUE(
      controller_->AgentConnected("extra-16", Hello("extra-16", NodeState::kInTree), one_too_many)
          .ok());
}

TEST_F(RolloutControllerTest, ARestartWithOtherNodesIsRefused) {
  ConnectAll(NodeState::kInTree);
  ASSERT_TRUE(controller_->Start("alice", NodeState::kMigrated).ok());
  absl::StatusOr<std::unique_ptr<RolloutController>> other = RestartWith({"cp-1", "cp-2"});
  ASSERT_FALSE(other.ok());
  EXPECT_THAT(std::string(other.status().message()), HasSubstr("cp-1,cp-2,cp-3"));
}

TEST_F(RolloutControllerTest, HistoryRecordsOperatorsCommandsAndResults) {
  ConnectAll(NodeState::kInTree);
  ASSERT_TRUE(controller_->Start("alice", NodeState::kMigrated).ok());
  RunToCompletion();
  absl::StatusOr<pb::HistoryResponse> history = controller_->History(0, 0);
  ASSERT_TRUE(history.ok());
  int commands = 0;
  int results = 0;
  bool started_by_alice = false;
  for (const pb::HistoryEntry& entry : history->entries()) {
    if (entry.kind() == "command") ++commands;
    if (entry.kind() == "result") ++results;
    if (entry.kind() == "start" && entry.actor() == "alice") started_by_alice = true;
  }
  EXPECT_EQ(commands, 6);
  EXPECT_EQ(results, 6);
  EXPECT_TRUE(started_by_alice);
}

TEST_F(RolloutControllerTest, PlanListsTheMovesAndAsksEachAgentForItsDiffs) {
  ConnectAll(NodeState::kInTree);
  std::optional<absl::StatusOr<pb::PlanRolloutResponse>> answer;
  controller_->PlanRollout(NodeState::kInconsistent,
                           [&](absl::StatusOr<pb::PlanRolloutResponse> plan) { answer = plan; });
  EXPECT_FALSE(answer);  // waits for the agents
  for (const std::string& node : nodes_) {
    std::vector<pb::Command> commands = links_[node]->Commands();
    ASSERT_THAT(commands, SizeIs(1));
    ASSERT_TRUE(commands[0].has_plan());
    ASSERT_EQ(commands[0].plan().chain_size(), 2);
    pb::CommandResult result;
    result.set_command_id(commands[0].id());
    result.set_outcome(pb::CommandResult::SUCCEEDED);
    pb::PlannedTransition* step = result.mutable_plan()->add_transitions();
    step->set_diff("--- a\n+++ b\n");
    Answer(node, result);
  }
  ASSERT_TRUE(answer);
  ASSERT_TRUE(answer->ok()) << answer->status();
  EXPECT_EQ((*answer)->steps_size(), 6);
  EXPECT_EQ((*answer)->steps(3).node(), "cp-1");
  EXPECT_EQ((*answer)->steps(3).to(), pb::NODE_STATE_MIGRATED);
  EXPECT_EQ((*answer)->nodes(2).transitions(0).diff(), "--- a\n+++ b\n");
  // Planning changes nothing.
  EXPECT_EQ(controller_->Status().phase(), pb::RolloutStatus::IDLE);
}

TEST_F(RolloutControllerTest, APlanOfAReplacementSaysWhatItLeavesOut) {
  ConnectAll(NodeState::kInTree);
  ASSERT_TRUE(controller_->Start("alice", NodeState::kMigrated, {}, Strategy::kReplace).ok());
  std::optional<absl::StatusOr<pb::PlanRolloutResponse>> answer;
  controller_->PlanRollout(NodeState::kInconsistent,
                           [&](absl::StatusOr<pb::PlanRolloutResponse> plan) { answer = plan; });
  for (const std::string& node : nodes_) {
    for (const pb::Command& command : links_[node]->Commands()) {
      if (!command.has_plan()) continue;
      pb::CommandResult result;
      result.set_command_id(command.id());
      result.set_outcome(pb::CommandResult::SUCCEEDED);
      Answer(node, result);
    }
  }
  ASSERT_TRUE(answer);
  ASSERT_TRUE(answer->ok()) << answer->status();
  EXPECT_THAT((*answer)->note(), HasSubstr("the rollout replaces nodes"));
  EXPECT_TRUE((*answer)->blocked_reason().empty());
}

TEST_F(RolloutControllerTest, PlanReportsAgentsThatDoNotAnswer) {
  ConnectAll(NodeState::kInTree);
  controller_->AgentDisconnected("cp-2", links_["cp-2"].get());
  std::optional<absl::StatusOr<pb::PlanRolloutResponse>> answer;
  controller_->PlanRollout(NodeState::kMigrated,
                           [&](absl::StatusOr<pb::PlanRolloutResponse> plan) { answer = plan; });
  EXPECT_FALSE(answer);
  clock_.Advance(absl::Minutes(1));
  controller_->Tick();
  ASSERT_TRUE(answer && answer->ok());
  EXPECT_THAT((*answer)->nodes(0).error(), HasSubstr("did not answer"));
  EXPECT_THAT((*answer)->nodes(1).error(), HasSubstr("not connected"));
  EXPECT_EQ((*answer)->blocked_reason(), "");
}

TEST_F(RolloutControllerTest, PlanSaysWhyItIsBlocked) {
  Connect("cp-1", Hello("cp-1", NodeState::kInTree));  // the others never reported
  std::optional<absl::StatusOr<pb::PlanRolloutResponse>> answer;
  controller_->PlanRollout(NodeState::kMigrated,
                           [&](absl::StatusOr<pb::PlanRolloutResponse> plan) { answer = plan; });
  ASSERT_TRUE(answer && answer->ok());
  EXPECT_THAT((*answer)->blocked_reason(), HasSubstr("cp-2"));
}

TEST_F(RolloutControllerTest, WatchersSeeEveryChangeWithIncreasingRevisions) {
  std::vector<pb::RolloutStatus> seen;
  int token = controller_->Watch([&](const pb::RolloutStatus& status) { seen.push_back(status); });
  ConnectAll(NodeState::kInTree);
  ASSERT_TRUE(controller_->Start("alice", NodeState::kMigrated).ok());
  controller_->Unwatch(token);
  size_t count = seen.size();
  RunToCompletion();
  EXPECT_EQ(seen.size(), count);
  ASSERT_GE(count, 3U);
  for (size_t i = 1; i < seen.size(); ++i) EXPECT_GT(seen[i].revision(), seen[i - 1].revision());
  EXPECT_EQ(seen.back().phase(), pb::RolloutStatus::PREPARING);
}

}  // namespace
}  // namespace handoff::server
