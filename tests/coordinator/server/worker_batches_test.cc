// The controller moving the workers' kubelets (rollout_controller_workers.cc): batches spread
// over zones after the control plane forward and before it back, the failure budget, a restart
// with moves in flight, the Nodes without an agent, the upgrade gate and the node list's pages.
// In-process, on a real SQLite store, agents as recording links.
#include <algorithm>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "common/base/strings.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/coordinator/server/controller_fixture.h"
#include "tests/coordinator/server/temp_database.h"
#include "tests/support/fake_clock.h"

namespace handoff::server {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::SizeIs;
using testing::AllHistory;
using testing::Hello;
using testing::kSettings;
using testing::LastOfKind;
using testing::RecordingLink;
using testing::Report;

// The workers of these tests and their zones: two in a, two in b, one in c.
const std::map<std::string, std::string> kWorkers = {{"w-a1", "us-east-1a"},
                                                     {"w-a2", "us-east-1a"},
                                                     {"w-b1", "us-east-1b"},
                                                     {"w-b2", "us-east-1b"},
                                                     {"w-c1", "us-east-1c"}};

pb::AgentHello WorkerHello(const std::string& name, NodeState state) {
  pb::AgentHello hello = Hello(name, state);
  hello.set_role(pb::NODE_ROLE_WORKER);
  auto zone = kWorkers.find(name);
  if (zone != kWorkers.end()) {
    hello.mutable_report()->mutable_facts()->set_availability_zone(zone->second);
  }
  return hello;
}

pb::CommandResult Result(const pb::Command& command, pb::CommandResult::Outcome outcome,
                         NodeState reported, const std::string& message = "") {
  pb::CommandResult result;
  result.set_command_id(command.id());
  result.set_outcome(outcome);
  result.set_message(message);
  *result.mutable_report() = Report(reported);
  return result;
}

class WorkerBatchesTest : public ::testing::Test {
 protected:
  void SetUp() override { Reopen(); }
  void TearDown() override {
    controller_.reset();
    store_.reset();
  }

  // A coordinator (re)started on the same database.
  void Reopen() {
    controller_.reset();
    store_.reset();
    store_ = database_.Open();
    ASSERT_NE(store_, nullptr);
    ControllerOptions options;
    options.nodes = {"cp-1", "cp-2", "cp-3"};
    options.settings_yaml = kSettings;
    absl::StatusOr<std::unique_ptr<RolloutController>> controller =
        RolloutController::Create(*store_, clock_, options);
    ASSERT_TRUE(controller.ok()) << controller.status();
    controller_ = *std::move(controller);
    links_.clear();
    SetFacts(nullptr);
  }

  void SetFacts(std::shared_ptr<const preflight::ClusterView> view) {
    FactsReport facts = testing::AssumedFacts();
    facts.cluster_view = std::move(view);
    controller_->SetFacts(facts);
  }

  void Connect(const std::string& node, const pb::AgentHello& hello) {
    auto link = std::make_shared<RecordingLink>();
    ASSERT_TRUE(controller_->AgentConnected(node, hello, link).ok()) << node;
    links_[node] = link;
  }
  void ConnectControlPlane(NodeState state) {
    for (const char* node : {"cp-1", "cp-2", "cp-3"}) Connect(node, Hello(node, state));
  }
  void ConnectWorkers(NodeState state) {
    for (const auto& [name, zone] : kWorkers) Connect(name, WorkerHello(name, state));
  }

  // The moves sent to `node` and not yet answered by this test.
  std::vector<pb::Command> Unanswered(const std::string& node) {
    std::vector<pb::Command> open;
    for (const pb::Command& command : links_[node]->Commands()) {
      if (answered_.count(command.id()) == 0) open.push_back(command);
    }
    return open;
  }
  // The workers with a move sent and not answered, by name.
  std::vector<std::string> WorkersMoving() {
    std::vector<std::string> moving;
    for (const auto& [name, zone] : kWorkers) {
      if (links_.count(name) != 0 && !Unanswered(name).empty()) moving.push_back(name);
    }
    return moving;
  }

  void Answer(const std::string& node, const pb::CommandResult& result) {
    answered_.insert(result.command_id());
    pb::AgentMessage message;
    *message.mutable_result() = result;
    controller_->AgentMessage(node, links_[node].get(), message);
  }
  // Answers `node`'s one open move with success.
  void Succeed(const std::string& node) {
    std::vector<pb::Command> open = Unanswered(node);
    ASSERT_THAT(open, SizeIs(1)) << node;
    Answer(node, Result(open[0], pb::CommandResult::SUCCEEDED,
                        StateOrInconsistent(open[0].move().to())));
  }
  // Answers the control plane's moves until none is in flight; none may go to a worker
  // meanwhile.
  void RunControlPlane() {
    for (int i = 0; i < 40; ++i) {
      pb::RolloutStatus status = controller_->Status();
      if (!status.has_in_flight()) return;
      EXPECT_THAT(WorkersMoving(), IsEmpty()) << "a worker moves beside " << status.in_flight().node();
      Succeed(status.in_flight().node());
    }
    FAIL() << "the control plane did not finish";
  }

  testing::TempDatabase database_{"workers"};
  FakeClock clock_{absl::FromUnixSeconds(1800000000)};
  std::unique_ptr<store::Store> store_;
  std::unique_ptr<RolloutController> controller_;
  std::map<std::string, std::shared_ptr<RecordingLink>> links_;
  std::set<std::string> answered_;
};

// W1, W4: nothing moves a worker until the control plane runs a cloud-controller-manager; then
// at most --max-unavailable at once, each next one from the zone with the fewest in flight.
TEST_F(WorkerBatchesTest, TheWorkersMoveInBatchesSpreadOverZonesOnceTheControlPlaneIsMigrated) {
  ConnectControlPlane(NodeState::kInTree);
  ConnectWorkers(NodeState::kInTree);
  WorkerPolicyChange policy;
  policy.max_unavailable = rollout::MaxUnavailable{2, false};
  ASSERT_TRUE(controller_->Start("alice", NodeState::kMigrated, {}, Strategy::kLeaderMigration,
                                 "", policy)
                  .ok());
  RunControlPlane();
  for (const char* node : {"cp-1", "cp-2", "cp-3"}) {
    ASSERT_FALSE(links_[node]->Commands().empty());
  }

  // The first batch: one worker of zone a and one of zone b.
  EXPECT_THAT(WorkersMoving(), ElementsAre("w-a1", "w-b1"));
  pb::RolloutStatus status = controller_->Status();
  EXPECT_EQ(status.phase(), pb::RolloutStatus::MOVING_WORKERS);
  EXPECT_EQ(status.workers().in_flight(), 2);
  EXPECT_THAT(status.workers().batch(), ElementsAre("w-a1", "w-b1"));
  EXPECT_EQ(status.workers().max_unavailable(), "2");
  EXPECT_EQ(status.workers().target(), pb::NODE_STATE_EXTERNAL);
  const std::vector<pb::Command> sent = Unanswered("w-a1");
  EXPECT_EQ(sent[0].move().from(), pb::NODE_STATE_IN_TREE);
  EXPECT_EQ(sent[0].move().to(), pb::NODE_STATE_EXTERNAL);

  // Each slot that frees goes to a zone with none in flight (ties by zone name), never a second
  // worker of a zone that has one moving.
  Succeed("w-a1");
  EXPECT_THAT(WorkersMoving(), ElementsAre("w-a2", "w-b1"));
  Succeed("w-b1");
  EXPECT_THAT(WorkersMoving(), ElementsAre("w-a2", "w-b2"));
  Succeed("w-a2");
  EXPECT_THAT(WorkersMoving(), ElementsAre("w-b2", "w-c1"));
  Succeed("w-b2");
  Succeed("w-c1");

  status = controller_->Status();
  EXPECT_EQ(status.phase(), pb::RolloutStatus::DONE) << status.next();
  EXPECT_EQ(status.workers().external(), 5);
  EXPECT_EQ(status.workers().in_flight(), 0);
  // W3: the managers are not finalized yet.
  EXPECT_FALSE(status.upgrade_gate().open());
  ASSERT_THAT(status.upgrade_gate().reasons(), SizeIs(1));
  EXPECT_THAT(status.upgrade_gate().reasons(0), HasSubstr("not finalized"));

  ASSERT_TRUE(controller_->Finalize("alice").ok());
  RunControlPlane();
  status = controller_->Status();
  EXPECT_EQ(status.phase(), pb::RolloutStatus::DONE) << status.next();
  EXPECT_TRUE(status.upgrade_gate().open());
}

// W2: back, every worker first; the control plane leaves its last cloud-controller-manager only
// once no worker is external.
TEST_F(WorkerBatchesTest, ARollbackBringsEveryWorkerBackBeforeTheControlPlane) {
  ConnectControlPlane(NodeState::kMigrated);
  ConnectWorkers(NodeState::kExternal);
  WorkerPolicyChange policy;
  policy.max_unavailable = rollout::MaxUnavailable{40, true};  // 40% of 5: 2
  ASSERT_TRUE(controller_->Start("alice", NodeState::kMigrated, {}, Strategy::kLeaderMigration,
                                 "", policy)
                  .ok());
  EXPECT_EQ(controller_->Status().phase(), pb::RolloutStatus::DONE);

  ASSERT_TRUE(controller_->Rollback("alice", NodeState::kInTree).ok());
  for (int round = 0; round < 5 && !WorkersMoving().empty(); ++round) {
    EXPECT_FALSE(controller_->Status().has_in_flight()) << "the control plane moves too early";
    EXPECT_LE(WorkersMoving().size(), 2u);
    for (const std::string& worker : WorkersMoving()) Succeed(worker);
  }
  pb::RolloutStatus status = controller_->Status();
  EXPECT_EQ(status.workers().in_tree(), 5);
  ASSERT_TRUE(status.has_in_flight()) << status.next();
  RunControlPlane();
  status = controller_->Status();
  EXPECT_EQ(status.phase(), pb::RolloutStatus::DONE) << status.next();
  for (const pb::NodeProgress& node : status.nodes()) {
    EXPECT_EQ(node.state(), pb::NODE_STATE_IN_TREE) << node.name();
  }
}

// W5: a worker whose agent rolled it back is a failure, listed with why; the budget spent, the
// rollout pauses, and resume retries the failed worker.
TEST_F(WorkerBatchesTest, TheFailureBudgetPausesTheRolloutAndResumeRetriesTheFailedWorkers) {
  ConnectControlPlane(NodeState::kMigrated);
  ConnectWorkers(NodeState::kInTree);
  WorkerPolicyChange policy;
  policy.max_unavailable = rollout::MaxUnavailable{2, false};
  policy.failure_budget = 2;
  ASSERT_TRUE(controller_->Start("alice", NodeState::kMigrated, {}, Strategy::kLeaderMigration,
                                 "", policy)
                  .ok());
  ASSERT_THAT(WorkersMoving(), ElementsAre("w-a1", "w-b1"));
  Answer("w-a1", Result(Unanswered("w-a1")[0], pb::CommandResult::ROLLED_BACK, NodeState::kInTree,
                        "the credential provider did not answer; rolled back"));
  pb::RolloutStatus status = controller_->Status();
  EXPECT_FALSE(status.paused());  // one of two
  EXPECT_EQ(status.workers().failed(), 1);
  ASSERT_THAT(status.workers().failures(), SizeIs(1));
  EXPECT_THAT(status.workers().failures(0),
              AllOf(HasSubstr("w-a1: "), HasSubstr("credential provider did not answer")));
  // The failed worker is not tried again; another takes its slot.
  EXPECT_THAT(WorkersMoving(), ElementsAre("w-a2", "w-b1"));

  Answer("w-a2", Result(Unanswered("w-a2")[0], pb::CommandResult::REFUSED, NodeState::kInTree,
                        "ecr-credential-provider is missing"));
  status = controller_->Status();
  EXPECT_TRUE(status.paused());
  EXPECT_EQ(status.phase(), pb::RolloutStatus::PAUSED);
  EXPECT_EQ(status.workers().failed(), 2);
  const std::vector<pb::HistoryEntry> history = AllHistory(*controller_);
  const pb::HistoryEntry* pause = LastOfKind(history, "pause");
  ASSERT_NE(pause, nullptr);
  EXPECT_EQ(pause->actor(), "coordinator");
  EXPECT_THAT(pause->message(), AllOf(HasSubstr("2 workers failed"), HasSubstr("w-a1"),
                                      HasSubstr("w-a2"), HasSubstr("handoffctl resume")));
  // The move under way finishes; nothing new starts.
  Succeed("w-b1");
  EXPECT_THAT(WorkersMoving(), IsEmpty());

  ASSERT_TRUE(controller_->Resume("alice").ok());
  status = controller_->Status();
  EXPECT_FALSE(status.paused());
  EXPECT_EQ(status.workers().failed(), 0);
  EXPECT_THAT(LastOfKind(AllHistory(*controller_), "resume")->message(),
              HasSubstr("retries 2 failed workers"));
  // Back in the batches, one zone each (w-a1 before w-a2 in its zone).
  EXPECT_THAT(WorkersMoving(), ElementsAre("w-a1", "w-b2"));
}

// Each worker's move is recorded before it is sent: a coordinator that restarts takes its result
// from the worker's hello, or sends it again when the agent never got it.
TEST_F(WorkerBatchesTest, WorkerMovesInFlightSurviveARestartAndAreSettledFromTheHellos) {
  ConnectControlPlane(NodeState::kMigrated);
  ConnectWorkers(NodeState::kInTree);
  WorkerPolicyChange policy;
  policy.max_unavailable = rollout::MaxUnavailable{2, false};
  ASSERT_TRUE(controller_->Start("alice", NodeState::kMigrated, {}, Strategy::kLeaderMigration,
                                 "", policy)
                  .ok());
  ASSERT_THAT(WorkersMoving(), ElementsAre("w-a1", "w-b1"));
  const pb::Command done = Unanswered("w-a1")[0];
  const pb::Command lost = Unanswered("w-b1")[0];

  ASSERT_NO_FATAL_FAILURE(Reopen());
  pb::RolloutStatus status = controller_->Status();
  EXPECT_EQ(status.workers().known(), 5);
  EXPECT_EQ(status.workers().connected(), 0);
  EXPECT_EQ(status.workers().in_flight(), 2);
  ConnectControlPlane(NodeState::kMigrated);

  // w-a1 finished while the coordinator was away: its hello carries the result.
  pb::AgentHello finished = WorkerHello("w-a1", NodeState::kExternal);
  *finished.add_recent_results() =
      Result(done, pb::CommandResult::SUCCEEDED, NodeState::kExternal);
  Connect("w-a1", finished);
  // w-b1 never received its move: the same command again.
  Connect("w-b1", WorkerHello("w-b1", NodeState::kInTree));
  std::vector<pb::Command> again = links_["w-b1"]->Commands();
  ASSERT_THAT(again, SizeIs(1));
  EXPECT_EQ(again[0].id(), lost.id());
  status = controller_->Status();
  EXPECT_EQ(status.workers().in_flight(), 1);
  EXPECT_EQ(status.workers().external(), 1);

  // The others come back; the batch goes on to the end.
  for (const char* name : {"w-a2", "w-b2", "w-c1"}) {
    Connect(name, WorkerHello(name, NodeState::kInTree));
  }
  for (int round = 0; round < 5 && !WorkersMoving().empty(); ++round) {
    for (const std::string& worker : WorkersMoving()) Succeed(worker);
  }
  status = controller_->Status();
  EXPECT_EQ(status.phase(), pb::RolloutStatus::DONE) << status.next();
  EXPECT_EQ(status.workers().external(), 5);
}

// A cluster view of the control plane's three Nodes, each with its providerID.
std::shared_ptr<preflight::ClusterView> ControlPlaneView() {
  auto view = std::make_shared<preflight::ClusterView>();
  view->nodes.emplace();
  for (const char* name : {"cp-1", "cp-2", "cp-3"}) {
    view->nodes->push_back(kube::Json{
        {"metadata",
         {{"name", name}, {"labels", {{"node-role.kubernetes.io/control-plane", ""}}}}},
        {"spec", {{"providerID", "aws:///us-east-1a/i-0123456789abcdef0"}}}});
  }
  return view;
}

std::shared_ptr<const preflight::ClusterView> ViewOf(const std::vector<std::string>& workers) {
  std::shared_ptr<preflight::ClusterView> view = ControlPlaneView();
  for (const std::string& name : workers) {
    view->nodes->push_back(kube::Json{
        {"metadata", {{"name", name}, {"labels", {{"topology.kubernetes.io/zone", "us-east-1c"}}}}}});
  }
  return view;
}

// A Node without the control-plane role whose agent never said hello blocks: the start is refused
// naming it (unless the operator skips worker-agents), the status counts it, the node list shows
// it, and the rollout cannot finish. A known worker whose Node is gone is forgotten.
TEST_F(WorkerBatchesTest, NodesWithoutAnAgentAreBlockersNamedEverywhere) {
  ConnectControlPlane(NodeState::kMigrated);
  Connect("w-a1", WorkerHello("w-a1", NodeState::kExternal));
  SetFacts(ViewOf({"w-a1", "w-x"}));

  absl::StatusOr<pb::RolloutStatus> refused = controller_->Start("alice", NodeState::kMigrated);
  ASSERT_EQ(refused.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(refused.status().message()),
              AllOf(HasSubstr("[worker-agents] 1 worker has no agent"), HasSubstr("w-x")));

  ASSERT_TRUE(controller_->Start("alice", NodeState::kMigrated, {"worker-agents"}).ok());
  pb::RolloutStatus status = controller_->Status();
  EXPECT_EQ(status.workers().without_agent(), 1);
  EXPECT_THAT(status.workers().without_agent_names(), ElementsAre("w-x"));
  EXPECT_EQ(status.phase(), pb::RolloutStatus::STUCK) << status.next();
  EXPECT_THAT(status.next(), HasSubstr("w-x"));
  EXPECT_FALSE(status.upgrade_gate().open());

  pb::NodesResponse nodes = controller_->Nodes();
  ASSERT_EQ(nodes.total(), 5);
  const pb::NodeInfo& agentless = nodes.nodes(4);
  EXPECT_EQ(agentless.name(), "w-x");
  EXPECT_TRUE(agentless.without_agent());
  EXPECT_EQ(agentless.role(), pb::NODE_ROLE_WORKER);
  EXPECT_EQ(agentless.facts().availability_zone(), "us-east-1c");

  // Its agent arrives: no longer a blocker, the rollout finishes once it is external.
  Connect("w-x", WorkerHello("w-x", NodeState::kInTree));
  ASSERT_THAT(WorkersMoving(), IsEmpty());  // not one of kWorkers: moved below by hand
  std::vector<pb::Command> open = Unanswered("w-x");
  ASSERT_THAT(open, SizeIs(1));
  Answer("w-x", Result(open[0], pb::CommandResult::SUCCEEDED, NodeState::kExternal));
  EXPECT_EQ(controller_->Status().phase(), pb::RolloutStatus::DONE);

  // w-a1's machine is replaced: its agent gone and its Node deleted, it is forgotten for good.
  controller_->AgentDisconnected("w-a1", links_["w-a1"].get());
  SetFacts(ViewOf({"w-x"}));
  status = controller_->Status();
  EXPECT_EQ(status.workers().known(), 1);
  EXPECT_THAT(LastOfKind(AllHistory(*controller_), "worker-forgotten")->message(),
              HasSubstr("w-a1"));
  ASSERT_NO_FATAL_FAILURE(Reopen());
  EXPECT_EQ(controller_->Status().workers().known(), 1);
}

// The Nodes of a replacement's cluster: the control plane, and workers with a providerID unless
// named in `uninitialized` (those carry the cloud provider's taint instead).
std::shared_ptr<const preflight::ClusterView> ReplacementView(
    const std::set<std::string>& workers, const std::set<std::string>& uninitialized = {}) {
  std::shared_ptr<preflight::ClusterView> view = ControlPlaneView();
  int instance = 0;
  for (const std::string& name : workers) {
    kube::Json spec = {{"providerID", StrCat("aws:///us-east-1c/i-0aaaaaaaaaaaaaa", 10 + instance++)}};
    if (uninitialized.count(name) != 0) {
      spec = {{"taints",
               {{{"key", "node.cloudprovider.kubernetes.io/uninitialized"},
                 {"value", "true"},
                 {"effect", "NoSchedule"}}}}};
    }
    view->nodes->push_back(kube::Json{
        {"metadata", {{"name", name}, {"labels", {{"topology.kubernetes.io/zone", "us-east-1c"}}}}},
        {"spec", spec}});
  }
  return view;
}

// A new worker's hello: external, its kubelet naming a credential provider unless told not to.
pb::AgentHello NewWorkerHello(const std::string& name, bool credential_provider = true) {
  pb::AgentHello hello = WorkerHello(name, NodeState::kExternal);
  pb::NodeFacts& facts = *hello.mutable_report()->mutable_facts();
  facts.set_availability_zone("us-east-1c");
  facts.set_kubelet_flags_known(true);
  if (credential_provider) {
    facts.set_image_credential_provider_config("/etc/kubernetes/image-credential-provider-config.yaml");
    facts.set_image_credential_provider_bin_dir("/usr/libexec/kubelet-image-credential-provider-plugins");
  }
  return hello;
}

// --strategy replace for the workers (rollout/worker_replacement.h): no worker is moved; the
// coordinator asks for at most --max-unavailable to leave (stored before the status says so),
// counts a new worker only once its agent, its credential provider and its Node (initialized by
// the cloud-controller-manager) say it serves, forgets a leaving one once its agent is away and
// its Node gone, and is done when only new workers are left, as many as there were.
TEST_F(WorkerBatchesTest, AReplacementRetiresTheOldWorkersAndCountsOnlyVerifiedNewOnes) {
  ConnectControlPlane(NodeState::kMigrated);
  ConnectWorkers(NodeState::kInTree);
  std::set<std::string> listed;
  for (const auto& [name, zone] : kWorkers) listed.insert(name);
  SetFacts(ReplacementView(listed));
  WorkerPolicyChange policy;
  policy.max_unavailable = rollout::MaxUnavailable{2, false};
  ASSERT_TRUE(
      controller_->Start("alice", NodeState::kMigrated, {}, Strategy::kReplace, "", policy).ok());

  pb::RolloutStatus status = controller_->Status();
  ASSERT_TRUE(status.workers().has_replacement()) << status.next();
  const pb::WorkerReplacement* replacement = &status.workers().replacement();
  EXPECT_EQ(replacement->size(), 5);
  EXPECT_EQ(replacement->old_left(), 5);
  EXPECT_THAT(replacement->leaving_names(), ElementsAre("w-a1", "w-b1"));
  EXPECT_EQ(replacement->joins_wanted(), 2);
  EXPECT_THAT(replacement->commands(0), HasSubstr("kubectl drain NODE"));
  EXPECT_THAT(status.next(), HasSubstr("2 workers to leave (w-a1, w-b1"));
  const std::vector<pb::HistoryEntry> history = AllHistory(*controller_);
  EXPECT_EQ(std::count_if(history.begin(), history.end(),
                          [](const pb::HistoryEntry& e) { return e.kind() == "worker-leave-requested"; }),
            2);
  // Asked for good: a restart keeps who leaves and how many the replacement keeps.
  ASSERT_NO_FATAL_FAILURE(Reopen());
  ConnectControlPlane(NodeState::kMigrated);
  ConnectWorkers(NodeState::kInTree);
  SetFacts(ReplacementView(listed));
  status = controller_->Status();
  EXPECT_THAT(status.workers().replacement().leaving_names(), ElementsAre("w-a1", "w-b1"));
  EXPECT_EQ(status.workers().replacement().size(), 5);

  // A new worker without a credential provider, and one whose Node is not initialized yet: both
  // named, neither serves, so nothing more is asked to leave.
  Connect("n-1", NewWorkerHello("n-1", /*credential_provider=*/false));
  Connect("n-2", NewWorkerHello("n-2"));
  listed.insert({"n-1", "n-2"});
  SetFacts(ReplacementView(listed, {"n-2"}));
  status = controller_->Status();
  replacement = &status.workers().replacement();
  ASSERT_THAT(replacement->unverified(), SizeIs(2));
  EXPECT_THAT(replacement->unverified(0), HasSubstr("n-1: its kubelet names no credential provider"));
  EXPECT_THAT(replacement->unverified(1),
              AllOf(HasSubstr("n-2: its Node"), HasSubstr("uninitialized")));
  EXPECT_EQ(replacement->leaving(), 2);

  // The automation: each round, every leaving worker's machine is reset (agent away, Node
  // deleted) and the new ones it is asked for join verified. No worker is ever sent a move, and
  // at most two leave at once.
  int next_new = 3;
  Connect("n-1", NewWorkerHello("n-1"));
  SetFacts(ReplacementView(listed));
  for (int round = 0; round < 10; ++round) {
    status = controller_->Status();
    if (status.phase() == pb::RolloutStatus::DONE) break;
    ASSERT_TRUE(status.workers().has_replacement()) << status.next();
    replacement = &status.workers().replacement();
    EXPECT_LE(replacement->leaving(), 2) << status.next();
    for (const std::string& name : replacement->leaving_names()) {
      controller_->AgentDisconnected(name, links_[name].get());
      listed.erase(name);
    }
    for (int i = 0; i < replacement->joins_wanted(); ++i) {
      const std::string name = StrCat("n-", next_new++);
      Connect(name, NewWorkerHello(name));
      listed.insert(name);
    }
    SetFacts(ReplacementView(listed));
  }
  status = controller_->Status();
  EXPECT_EQ(status.phase(), pb::RolloutStatus::DONE) << status.next();
  EXPECT_EQ(status.workers().known(), 5);
  EXPECT_EQ(status.workers().external(), 5);
  for (const auto& [name, link] : links_) {
    if (name.rfind("cp-", 0) != 0) EXPECT_THAT(link->Commands(), IsEmpty()) << name;
  }
  for (const std::string& name : listed) EXPECT_EQ(name.rfind("n-", 0), 0u) << name;
}

TEST_F(WorkerBatchesTest, TheNodeListComesInPagesByName) {
  ConnectControlPlane(NodeState::kInTree);
  ConnectWorkers(NodeState::kInTree);
  std::vector<std::string> names;
  std::string after;
  for (int page = 0; page < 10; ++page) {
    pb::NodesResponse nodes = controller_->Nodes(3, after);
    EXPECT_EQ(nodes.total(), 8);
    EXPECT_LE(nodes.nodes_size(), 3);
    for (const pb::NodeInfo& node : nodes.nodes()) names.push_back(node.name());
    after = nodes.next_after();
    if (after.empty()) break;
    EXPECT_EQ(after, names.back());
  }
  EXPECT_THAT(names, ElementsAre("cp-1", "cp-2", "cp-3", "w-a1", "w-a2", "w-b1", "w-b2", "w-c1"));
  EXPECT_THAT(controller_->Nodes().nodes(), SizeIs(8));
}

TEST_F(WorkerBatchesTest, AFailureBudgetBelowOneIsRefused) {
  ConnectControlPlane(NodeState::kInTree);
  WorkerPolicyChange policy;
  policy.failure_budget = 0;
  absl::StatusOr<pb::RolloutStatus> refused = controller_->Start(
      "alice", NodeState::kMigrated, {}, Strategy::kLeaderMigration, "", policy);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(refused.status().message()), HasSubstr("--failure-budget"));
}

}  // namespace
}  // namespace handoff::server
