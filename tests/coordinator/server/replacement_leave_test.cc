// A node leaving a replacement (rollout/replacement.h), as the controller sees it go: every order
// of what the leaving machine's reset shows the coordinator — its agent reporting the node
// broken as its static pods go, its agent gone, its Node deleted, its etcd member removed — with
// the next machine's agent saying hello among them, and a coordinator restart. The cluster is a
// model that answers only what it is asked (the facts source's Check of LeavingNodes), as the
// real one does; whatever the order, the rollout never stops for good, never asks another node
// to leave, and goes on once the node is out.
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

using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;
using testing::AllHistory;
using testing::Hello;
using testing::kSettings;
using testing::LastOfKind;
using testing::NodeNames;
using testing::RecordingLink;
using testing::Report;

// What the API server and etcd would say: of the Node objects, only those asked about (the facts
// source reads the Node objects of LeavingNodes and no others, as KubeFactsSource::Check does).
struct ModelCluster {
  std::set<std::string> node_objects;
  std::set<std::string> etcd_members;
  // The hosts of the leases' holders: the migration lease's from the first migrated node on, the
  // kube-controller-manager's on the node of version N replaced last.
  std::string migration_holder = "cp-4";
  std::string kube_controller_manager_holder = "cp-3";

  FactsReport Check(const std::vector<std::string>& leaving) const {
    FactsReport facts;
    facts.rbac_ready = true;
    facts.lease_held = true;
    facts.lease_holder_node = migration_holder;
    facts.kube_controller_manager_holder_node = kube_controller_manager_holder;
    facts.source = "kubernetes";
    for (const std::string& node : leaving) facts.node_objects[node] = node_objects.count(node) > 0;
    if (!leaving.empty()) {
      facts.etcd_members.emplace(etcd_members.begin(), etcd_members.end());
      facts.etcd_members_source = "https://10.0.0.9:2379";
    }
    return facts;
  }
};

// A coordinator's controller on a database of its own, the agents of the nodes and the model
// cluster: one per test, or one per order of events. The clock stands at 08:00:00 UTC.
class Replacement {
 public:
  Replacement() { Open(); }
  ~Replacement() {
    controller_.reset();
    store_.reset();
  }
  Replacement(const Replacement&) = delete;
  Replacement& operator=(const Replacement&) = delete;

  RolloutController& controller() { return *controller_; }
  ModelCluster& cluster() { return cluster_; }
  FakeClock& clock() { return clock_; }
  bool connected(const std::string& node) const { return links_.count(node) > 0; }

  // The controller on the database (again: a coordinator restart, every agent's stream gone).
  void Open() {
    controller_.reset();
    store_.reset();
    ControllerOptions options;
    options.nodes = {"cp-1", "cp-2", "cp-3"};
    options.settings_yaml = kSettings;
    testing::OpenController(database_, clock_, options, &store_, &controller_);
    links_.clear();
    if (controller_ != nullptr) ReadFacts();
  }

  // The facts source's read: what the coordinator asks about, the model answers.
  void ReadFacts() { controller_->SetFacts(cluster_.Check(controller_->LeavingNodes())); }
  // Whether each event below is followed by a facts read (as the coordinator's ticker does when
  // WantsFacts says so, and every --facts-interval).
  void set_reads_facts_after_each_event(bool reads) { reads_facts_ = reads; }

  // `node`'s agent connects (a new machine's joins the cluster's API server and etcd first).
  void Connect(const std::string& node, NodeState state) {
    cluster_.node_objects.insert(node);
    cluster_.etcd_members.insert(node);
    auto link = std::make_shared<RecordingLink>();
    EXPECT_TRUE(controller_->AgentConnected(node, Hello(node, state), link).ok()) << node;
    links_[node] = link;
    if (reads_facts_) ReadFacts();
  }

  void Disconnect(const std::string& node) {
    controller_->AgentDisconnected(node, links_.at(node).get());
    links_.erase(node);
    if (reads_facts_) ReadFacts();
  }

  void SendReport(const std::string& node, const pb::NodeReport& report) {
    pb::AgentMessage message;
    *message.mutable_report() = report;
    controller_->AgentMessage(node, links_.at(node).get(), message);
    if (reads_facts_) ReadFacts();
  }

  // Answers each move in flight with success until none is.
  void AnswerEveryMove() {
    for (int i = 0; i < 20; ++i) {
      const pb::RolloutStatus status = controller_->Status();
      if (!status.has_in_flight()) return;
      const std::string node = status.in_flight().node();
      const pb::Command command = links_.at(node)->Commands().back();
      pb::AgentMessage message;
      pb::CommandResult* result = message.mutable_result();
      result->set_command_id(command.id());
      result->set_outcome(pb::CommandResult::SUCCEEDED);
      *result->mutable_report() = Report(StateOrInconsistent(command.move().to()));
      controller_->AgentMessage(node, links_.at(node).get(), message);
      if (reads_facts_) ReadFacts();
    }
    ADD_FAILURE() << "still moving after 20 moves";
  }

  // From three nodes in-tree to the first removal the replacement asks for: every node prepared,
  // cp-4 joined external and migrated. Returns the node asked to leave.
  std::string UpToTheFirstLeave() {
    for (const char* node : {"cp-1", "cp-2", "cp-3"}) Connect(node, NodeState::kInTree);
    absl::StatusOr<pb::RolloutStatus> started =
        controller_->Start("alice", NodeState::kMigrated, {}, Strategy::kReplace);
    EXPECT_TRUE(started.ok()) << started.status();
    AnswerEveryMove();
    Connect("cp-4", NodeState::kExternal);
    AnswerEveryMove();
    const pb::RolloutStatus status = controller_->Status();
    EXPECT_EQ(status.replacement().waiting(), pb::Replacement::LEAVE) << status.next();
    return status.replacement().node();
  }

  // What the rollout must be at every moment while `leaving` is a member: waiting for it, and it
  // alone, to leave, and asking about it at every read.
  void ExpectWaitingFor(const std::string& leaving, const std::string& after) {
    SCOPED_TRACE(after);
    const pb::RolloutStatus status = controller_->Status();
    EXPECT_EQ(status.phase(), pb::RolloutStatus::WAITING) << status.next();
    EXPECT_EQ(status.replacement().waiting(), pb::Replacement::LEAVE) << status.next();
    EXPECT_EQ(status.replacement().node(), leaving);
    EXPECT_THAT(status.next(), HasSubstr("M3: node " + leaving));
    EXPECT_THAT(controller_->LeavingNodes(), ElementsAre(leaving));
  }

  // The messages of the history's entries of `kind`, oldest first.
  std::vector<std::string> Entries(const std::string& kind) {
    std::vector<std::string> messages;
    for (const pb::HistoryEntry& entry : AllHistory(*controller_)) {
      if (entry.kind() == kind) messages.push_back(entry.message());
    }
    return messages;
  }

 private:
  testing::TempDatabase database_{"leave"};
  FakeClock clock_{absl::FromUnixSeconds(1800000000)};
  std::unique_ptr<store::Store> store_;
  std::unique_ptr<RolloutController> controller_;
  std::map<std::string, std::shared_ptr<RecordingLink>> links_;
  ModelCluster cluster_;
  bool reads_facts_ = true;
};

// What the reset of the leaving machine shows the coordinator, and the next machine's hello.
enum class Event { kReportsBroken, kAgentGone, kNodeDeleted, kMemberRemoved, kNextNodeHello };

std::string EventName(Event event) {
  switch (event) {
    case Event::kReportsBroken:
      return "its agent reports it broken";
    case Event::kAgentGone:
      return "its agent is gone";
    case Event::kNodeDeleted:
      return "its Node is deleted";
    case Event::kMemberRemoved:
      return "its etcd member is removed";
    case Event::kNextNodeHello:
      return "the next node's agent says hello";
  }
  return "";
}

// Every order of the five events. Before the controller remembered the node it asked to leave, an
// agent that reported its node broken before it went away left the rollout STUCK for good on
// that report (the node "unknown (agent away)", not verified healthy, or inconsistent), and
// nothing asked about the node any more.
TEST(ReplacementLeaveTest, EveryOrderOfTheLeavingNodesEventsEndsWithItOutAndTheRolloutGoingOn) {
  std::vector<Event> order = {Event::kReportsBroken, Event::kAgentGone, Event::kNodeDeleted,
                              Event::kMemberRemoved, Event::kNextNodeHello};
  int orders = 0;
  do {
    ++orders;
    std::string trace;
    for (Event event : order) StrAppend(&trace, trace.empty() ? "" : ", ", EventName(event));
    SCOPED_TRACE(trace);
    Replacement run;
    const std::string leaving = run.UpToTheFirstLeave();
    ASSERT_EQ(leaving, "cp-1");
    for (Event event : order) {
      switch (event) {
        case Event::kReportsBroken:
          // kubeadm reset stops the pods and removes the manifests: unhealthy, then inconsistent.
          if (!run.connected(leaving)) continue;  // an agent gone reports nothing
          run.SendReport(leaving, Report(NodeState::kPrepared, /*healthy=*/false));
          run.SendReport(leaving, Report(NodeState::kInconsistent, /*healthy=*/false));
          break;
        case Event::kAgentGone:
          run.Disconnect(leaving);
          break;
        case Event::kNodeDeleted:
          run.cluster().node_objects.erase(leaving);
          run.ReadFacts();
          break;
        case Event::kMemberRemoved:
          run.cluster().etcd_members.erase(leaving);
          run.ReadFacts();
          break;
        case Event::kNextNodeHello:
          run.Connect("cp-5", NodeState::kExternal);
          break;
      }
      const pb::RolloutStatus status = run.controller().Status();
      EXPECT_NE(status.phase(), pb::RolloutStatus::STUCK) << EventName(event) << ": "
                                                          << status.next();
      const std::vector<std::string> members = NodeNames(status);
      if (std::find(members.begin(), members.end(), leaving) != members.end()) {
        run.ExpectWaitingFor(leaving, EventName(event));
      }
    }
    // Out once every event happened: its agent gone, neither the API server nor etcd naming it.
    pb::RolloutStatus status = run.controller().Status();
    EXPECT_THAT(NodeNames(status), Not(Contains(leaving))) << status.next();
    EXPECT_THAT(run.controller().LeavingNodes(), IsEmpty());
    const std::vector<pb::HistoryEntry> history = AllHistory(run.controller());
    const pb::HistoryEntry* removed = LastOfKind(history, "node-removed");
    ASSERT_NE(removed, nullptr);
    EXPECT_EQ(removed->node(), leaving);
    // And the replacement goes on: cp-5 taken in and migrated, then the next node of version N
    // asked to leave.
    run.AnswerEveryMove();
    status = run.controller().Status();
    EXPECT_THAT(NodeNames(status), ElementsAre("cp-2", "cp-3", "cp-4", "cp-5"));
    EXPECT_EQ(status.replacement().waiting(), pb::Replacement::LEAVE) << status.next();
    EXPECT_EQ(status.replacement().node(), "cp-2");
  } while (std::next_permutation(order.begin(), order.end()));
  EXPECT_EQ(orders, 120);
}

// The node asked to leave stays the one, whichever node the leases would pick now: a machine
// being reset hands its managers' leases on, and the automation resets only the node it was told.
TEST(ReplacementLeaveTest, TheNodeAskedToLeaveStaysTheOneWhenTheLeasesMove) {
  Replacement run;
  ASSERT_EQ(run.UpToTheFirstLeave(), "cp-1");
  EXPECT_THAT(run.Entries("leave-requested"), ElementsAre(HasSubstr("node cp-1 (prepared")));
  // cp-1's kube-controller-manager takes the main lease: the planner alone would pick cp-2 now.
  run.cluster().kube_controller_manager_holder = "cp-1";
  run.ReadFacts();
  run.ExpectWaitingFor("cp-1", "cp-1 holds the lease");
  // Its reset shows the coordinator nothing but its agent gone: still cp-1 it waits for, and the
  // status says where and when each thing in the way was seen.
  run.Disconnect("cp-1");
  run.ExpectWaitingFor("cp-1", "its agent is gone");
  EXPECT_THAT(run.controller().Status().replacement().pending(),
              ElementsAre("the API server has Node cp-1 (read at 08:00:00 UTC)",
                          "etcd lists member cp-1 (member list from https://10.0.0.9:2379 at "
                          "08:00:00 UTC)"));
  EXPECT_THAT(run.Entries("leave-requested"), ElementsAre(HasSubstr("node cp-1")));
}

// A coordinator restarted while a node leaves: the node never says hello again (its machine is
// reset), and the rollout does not wait for it to, only for it to be gone.
TEST(ReplacementLeaveTest, ARestartDuringTheLeaveWaitsForTheNodeToGoNotForItsHello) {
  Replacement run;
  const std::string leaving = run.UpToTheFirstLeave();
  run.SendReport(leaving, Report(NodeState::kInconsistent, /*healthy=*/false));
  run.Open();
  for (const char* node : {"cp-2", "cp-3"}) run.Connect(node, NodeState::kPrepared);
  run.Connect("cp-4", NodeState::kMigrated);
  run.ExpectWaitingFor(leaving, "the restart");
  EXPECT_THAT(
      run.controller().Status().replacement().pending(),
      ElementsAre(HasSubstr("the API server has Node cp-1"), HasSubstr("etcd lists member cp-1")));
  run.cluster().node_objects.erase(leaving);
  run.cluster().etcd_members.erase(leaving);
  run.ReadFacts();
  const pb::RolloutStatus status = run.controller().Status();
  EXPECT_THAT(NodeNames(status), ElementsAre("cp-2", "cp-3", "cp-4"));
  EXPECT_EQ(status.replacement().waiting(), pb::Replacement::JOIN) << status.next();
}

// Each change of why the rollout waits is a history entry, and the status says since when; the
// waits every move passes through, and the same reason read again, are not.
TEST(ReplacementLeaveTest, EachChangeOfWhyItWaitsIsRecordedOnce) {
  Replacement run;
  run.set_reads_facts_after_each_event(false);  // the facts read at the start only
  const std::string leaving = run.UpToTheFirstLeave();
  // The node asked to leave is looked up at once (the ticker reads when WantsFacts says so).
  EXPECT_TRUE(run.controller().WantsFacts());
  run.ReadFacts();
  EXPECT_FALSE(run.controller().WantsFacts());
  run.set_reads_facts_after_each_event(true);
  // Up to here: the first join asked for, then the removal, before and after the facts source
  // first looked the node up.
  std::vector<std::string> reasons = run.Entries("waiting");
  ASSERT_EQ(reasons.size(), 3u) << ::testing::PrintToString(reasons);
  EXPECT_THAT(reasons[0], HasSubstr("a new control-plane node of version N+1 joins"));
  EXPECT_THAT(reasons[1], HasSubstr("waiting: its agent is connected; its Node object is not read "
                                    "yet; etcd's member list is not read"));
  EXPECT_THAT(reasons[2], HasSubstr("waiting: its agent is connected; the API server has Node"));
  EXPECT_EQ(run.controller().Status().next_since_unix_ms(), absl::ToUnixMillis(run.clock().Now()));

  run.clock().Advance(absl::Seconds(30));
  for (int i = 0; i < 3; ++i) run.ReadFacts();
  run.Disconnect(leaving);
  run.clock().Advance(absl::Seconds(5));
  run.ReadFacts();
  reasons = run.Entries("waiting");
  ASSERT_EQ(reasons.size(), 4u) << ::testing::PrintToString(reasons);
  EXPECT_THAT(reasons[3], HasSubstr("waiting: the API server has Node cp-1; etcd lists member"));
  EXPECT_EQ(run.controller().Status().next_since_unix_ms(),
            absl::ToUnixMillis(run.clock().Now() - absl::Seconds(5)));
  EXPECT_THAT(run.Entries("stuck"), IsEmpty());
}

// A reason that flaps without end (the leaving node's agent restarted again and again by its
// service manager) is recorded within a budget, as an agent's own entries are.
TEST(ReplacementLeaveTest, AReasonThatFlapsIsRecordedWithinItsBudget) {
  Replacement run;
  const std::string leaving = run.UpToTheFirstLeave();
  const size_t before = run.Entries("waiting").size();
  for (int i = 0; i < 500; ++i) {
    run.Disconnect(leaving);
    run.Connect(leaving, NodeState::kInconsistent);
  }
  EXPECT_LE(run.Entries("waiting").size() - before, 30u);
  run.clock().Advance(absl::Seconds(2));
  run.Disconnect(leaving);
  const std::vector<std::string> reasons = run.Entries("waiting");
  EXPECT_THAT(reasons.back(), HasSubstr("waiting: the API server has Node cp-1"));
  EXPECT_THAT(reasons.back(),
              HasSubstr("earlier entries of the rollout's waiting reasons not written: more than "
                        "30 at once, or one every 2s"));
  run.ExpectWaitingFor(leaving, "the flapping");
}

}  // namespace
}  // namespace handoff::server
