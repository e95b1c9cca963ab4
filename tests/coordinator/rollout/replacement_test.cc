// The replacement planner (coordinator/rollout/replacement.h), driven as the coordinator carries
// it out: each move done, each join a new node in the state asked for (CheckJoin must allow it),
// each removal a node whose agent went away first (CheckLeave must allow it). The invariants are
// the membership rules' own: every set of states on the way is one the moves can reach
// (CheckConfiguration), and the control plane never has fewer members than it began with.
#include "coordinator/rollout/replacement.h"

#include <algorithm>
#include <cstddef>
#include <functional>
#include <iostream>
#include <iterator>
#include <string>
#include <vector>

#include "common/base/strings.h"
#include "coordinator/rollout/membership.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/coordinator/rollout/engine_nodes.h"

namespace handoff::rollout {
namespace {

using ::testing::ElementsAre;
using testing::GoodFacts;
using ::testing::HasSubstr;
using testing::kFinalized;
using testing::kInconsistent;
using testing::kInTree;
using testing::kMigrated;
using testing::kPrepared;
using testing::Nodes;
using ::testing::StartsWith;

constexpr NodeState kStopped = NodeState::kStopped;
constexpr NodeState kExternal = NodeState::kExternal;

// Carries out each step: "node:state" for a move, "join d:external", "leave a", then "done" or
// the step that stopped it. New nodes are named d, e, f, ... after the given ones.
std::vector<std::string> Replace(std::vector<NodeStatus> nodes, NodeState target,
                                 const ClusterFacts& facts = GoodFacts()) {
  const ReplacementGoal goal{target, nodes.size()};
  char next_name = static_cast<char>('a' + nodes.size());
  std::vector<std::string> steps;
  for (int i = 0; i < 60; ++i) {
    ReplacementStep step = NextReplacementStep(nodes, goal, facts, Control{});
    switch (step.kind) {
      case ReplacementStep::Kind::kMove: {
        EXPECT_TRUE(CheckMove(nodes, step.node, step.to, facts, Control{}).ok()) << step.reason;
        steps.push_back(StrCat(step.node, ":", NodeStateName(step.to)));
        for (NodeStatus& node : nodes) {
          if (node.name == step.node) node.state = step.to;
        }
        break;
      }
      case ReplacementStep::Kind::kJoin: {
        NodeStatus joining = Nodes({step.to}).front();
        joining.name = std::string(1, next_name++);
        EXPECT_TRUE(CheckJoin(nodes, joining).ok()) << CheckJoin(nodes, joining);
        steps.push_back(StrCat("join ", joining.name, ":", NodeStateName(step.to)));
        nodes.push_back(joining);
        break;
      }
      case ReplacementStep::Kind::kLeave: {
        EXPECT_GT(nodes.size(), goal.size) << "a node leaves only after its replacement joined";
        for (NodeStatus& node : nodes) {
          if (node.name == step.node) node.connected = false;  // its machine reset
        }
        EXPECT_TRUE(CheckLeave(nodes, step.node).ok()) << CheckLeave(nodes, step.node);
        steps.push_back(StrCat("leave ", step.node));
        nodes.erase(std::remove_if(nodes.begin(), nodes.end(),
                                   [&](const NodeStatus& n) { return n.name == step.node; }),
                    nodes.end());
        break;
      }
      case ReplacementStep::Kind::kDone:
        steps.push_back("done");
        return steps;
      case ReplacementStep::Kind::kWait:
      case ReplacementStep::Kind::kStuck:
        steps.push_back(
            StrCat(step.kind == ReplacementStep::Kind::kWait ? "wait: " : "stuck: ", step.reason));
        return steps;
    }
    EXPECT_TRUE(CheckConfiguration(nodes).ok()) << CheckConfiguration(nodes);
    EXPECT_GE(nodes.size(), goal.size);
  }
  steps.push_back("too many steps");
  return steps;
}

TEST(ReplacementTest, ThreeNodesOfVersionNAreReplacedOneByOneByNodesOfVersionN1) {
  EXPECT_THAT(
      Replace(Nodes({kInTree, kInTree, kInTree}), kMigrated),
      ElementsAre("a:prepared", "b:prepared", "c:prepared",    // Leader Migration on everywhere
                  "join d:external", "d:migrated", "leave a",  // then one node at a time
                  "join e:external", "e:migrated", "leave b", "join f:external", "f:migrated",
                  "leave c", "done"));
}

TEST(ReplacementTest, TheRollbackAddsNodesOfVersionNWithLeaderMigrationAndEndsInTree) {
  EXPECT_THAT(
      Replace(Nodes({kFinalized, kFinalized, kFinalized}), kInTree),
      ElementsAre("a:migrated", "b:migrated", "c:migrated",  // Leader Migration back on
                  "join d:prepared", "leave a", "join e:prepared", "leave b", "join f:prepared",
                  "leave c", "d:in-tree", "e:in-tree", "f:in-tree", "done"));
  EXPECT_THAT(Replace(Nodes({kMigrated, kMigrated}), kPrepared),
              ElementsAre("join c:prepared", "leave a", "join d:prepared", "leave b", "done"));
}

TEST(ReplacementTest, TheNodeWhoseManagerRunsTheCloudControllersLeavesLast) {
  ClusterFacts facts = GoodFacts();
  facts.holders.migration = "a";
  facts.holders.kube_controller_manager = "b";
  EXPECT_THAT(
      Replace(Nodes({kPrepared, kPrepared, kPrepared}), kMigrated, facts),
      ElementsAre("join d:external", "d:migrated", "leave c", "join e:external", "e:migrated",
                  "leave b", "join f:external", "f:migrated", "leave a", "done"));
}

TEST(ReplacementTest, AReplacementResumesFromEverySetItPassesThrough) {
  // A coordinator that restarts mid-replacement knows only the members and their states (and the
  // size it stored): from each intermediate set the rest of the replacement is the same.
  const std::vector<std::vector<NodeState>> intermediate = {
      {kPrepared, kPrepared, kPrepared, kExternal},
      {kPrepared, kPrepared, kPrepared, kMigrated},
      {kPrepared, kPrepared, kMigrated}};
  for (const std::vector<NodeState>& states : intermediate) {
    std::vector<NodeStatus> nodes = Nodes(states);
    const ReplacementGoal goal{kMigrated, 3};
    ReplacementStep step = NextReplacementStep(nodes, goal, GoodFacts(), Control{});
    EXPECT_NE(step.kind, ReplacementStep::Kind::kStuck) << step.reason;
    EXPECT_NE(step.kind, ReplacementStep::Kind::kWait) << step.reason;
  }
  EXPECT_EQ(NextReplacementStep(Nodes({kPrepared, kPrepared, kPrepared, kMigrated}), {kMigrated, 3},
                                GoodFacts(), Control{})
                .kind,
            ReplacementStep::Kind::kLeave);
  EXPECT_EQ(NextReplacementStep(Nodes({kPrepared, kPrepared, kMigrated}), {kMigrated, 3},
                                GoodFacts(), Control{})
                .kind,
            ReplacementStep::Kind::kJoin);
}

TEST(ReplacementTest, NothingJoinsOrLeavesWhileANodeIsUnhealthyInTransitionOrUnheard) {
  std::vector<NodeStatus> nodes = Nodes({kPrepared, kPrepared, kPrepared, kMigrated});
  nodes[3].healthy = false;
  EXPECT_EQ(NextReplacementStep(nodes, {kMigrated, 3}, GoodFacts(), Control{}).kind,
            ReplacementStep::Kind::kStuck);
  nodes[3].healthy = true;
  nodes[3].in_transition = true;
  EXPECT_THAT(NextReplacementStep(nodes, {kMigrated, 3}, GoodFacts(), Control{}).reason,
              StartsWith("R4: node d is in transition"));
  nodes[3].in_transition = false;
  nodes[0].awaiting_hello = true;
  EXPECT_THAT(NextReplacementStep(nodes, {kMigrated, 3}, GoodFacts(), Control{}).reason,
              HasSubstr("waiting for the agents of a"));
  nodes[0].awaiting_hello = false;
  Control paused;
  paused.paused = true;
  EXPECT_EQ(NextReplacementStep(nodes, {kMigrated, 3}, GoodFacts(), paused).kind,
            ReplacementStep::Kind::kWait);
}

// Once asked to leave, a node is the next step until it has left, whatever its reset shows of it
// and whoever holds the leases; only a halt comes first.
TEST(ReplacementTest, ANodeAskedToLeaveIsTheNextStepWhateverItReports) {
  const std::vector<NodeStatus> members = Nodes({kPrepared, kPrepared, kPrepared, kMigrated});
  const ReplacementGoal goal{kMigrated, 3, "a"};
  const std::vector<std::function<void(NodeStatus&)>> resets = {
      [](NodeStatus& a) { a.healthy = false; },  // its static pods stopped
      [](NodeStatus& a) { a.state = kInconsistent; },  // its manifests removed
      [](NodeStatus& a) { a.connected = false; },  // its agent stopped
      [](NodeStatus& a) { a.awaiting_hello = true; },  // unheard since a restart
  };
  for (std::size_t i = 0; i < resets.size(); ++i) {
    std::vector<NodeStatus> nodes = members;
    for (std::size_t j = 0; j <= i; ++j) resets[j](nodes[0]);
    SCOPED_TRACE(i);
    ReplacementStep step = NextReplacementStep(nodes, goal, GoodFacts(), Control{});
    EXPECT_EQ(step.kind, ReplacementStep::Kind::kLeave) << step.reason;
    EXPECT_EQ(step.node, "a");
    EXPECT_THAT(step.reason, HasSubstr("2 more of the old version after it"));
    // Without the request remembered, the planner would have stopped on what a reports.
    const ReplacementGoal forgotten{kMigrated, 3};
    EXPECT_NE(NextReplacementStep(nodes, forgotten, GoodFacts(), Control{}).kind,
              ReplacementStep::Kind::kLeave);
  }
  // The leases moved (a now the holder the planner would keep for last): still a.
  ClusterFacts facts = GoodFacts();
  facts.holders.migration = "a";
  EXPECT_EQ(NextReplacementStep(members, goal, facts, Control{}).node, "a");
  EXPECT_EQ(NextReplacementStep(members, {kMigrated, 3}, facts, Control{}).node, "b");
  // Paused: the bookkeeping of a machine being reset goes on; halted: nothing.
  Control paused;
  paused.paused = true;
  EXPECT_EQ(NextReplacementStep(members, goal, GoodFacts(), paused).kind,
            ReplacementStep::Kind::kLeave);
  Control halted;
  halted.halted = true;
  EXPECT_THAT(NextReplacementStep(members, goal, GoodFacts(), halted).reason,
              StartsWith("R5: the rollout is halted"));
  // A node asked to leave that is not a member (it has left) changes nothing.
  const ReplacementGoal gone{kMigrated, 3, "z"};
  EXPECT_EQ(NextReplacementStep(members, gone, GoodFacts(), Control{}).node, "a");
  EXPECT_EQ(NextReplacementStep(Nodes({kPrepared, kPrepared, kMigrated}), gone, GoodFacts(),
                                Control{})
                .kind,
            ReplacementStep::Kind::kJoin);
}

TEST(ReplacementTest, ANewNodeWaitsForTheMigrationRbacLikeAnyMigration) {
  ClusterFacts facts = GoodFacts();
  facts.rbac_ready = false;
  ReplacementStep step = NextReplacementStep(Nodes({kPrepared, kPrepared, kPrepared, kExternal}),
                                             {kMigrated, 3}, facts, Control{});
  EXPECT_EQ(step.kind, ReplacementStep::Kind::kStuck);
  EXPECT_THAT(step.reason, HasSubstr("R1: the migration-lease RBAC is not in place"));
}

TEST(ReplacementTest, ADowntimeNodeOrAGoalOffTheLeaderMigrationPathIsNamed) {
  EXPECT_THAT(Replace(Nodes({kStopped, kStopped}), kMigrated),
              ElementsAre(StartsWith("stuck: a, b stopped (the downtime path)")));
  EXPECT_THAT(Replace(Nodes({kMigrated}), kFinalized),
              ElementsAre(StartsWith("stuck: a replacement goes to migrated")));
}

// Every safe set of 1-3 members (as the moves reach them from in-tree), replaced forward and
// back: it ends done, every set on the way safe and never smaller than it began (Replace's
// checks), or stuck only for a stopped node.
TEST(ReplacementTest, FromEverySafeSetTheReplacementEndsAtTheGoal) {
  const NodeState states[] = {kInTree, kPrepared, kMigrated, kFinalized, kStopped, kExternal};
  int done = 0;
  int runs = 0;
  for (std::size_t n = 1; n <= 3; ++n) {
    std::vector<std::size_t> digits(n, 0);
    while (true) {
      std::vector<NodeState> set;
      for (std::size_t d : digits) set.push_back(states[d]);
      const std::vector<NodeStatus> nodes = Nodes(set);
      if (CheckConfiguration(nodes).ok()) {
        bool stopped = false;
        for (NodeState s : set) stopped = stopped || s == kStopped;
        for (NodeState target : {kMigrated, kPrepared, kInTree}) {
          ++runs;
          std::vector<std::string> steps = Replace(nodes, target);
          if (steps.back() == "done") {
            ++done;
          } else {
            EXPECT_TRUE(stopped) << StrJoin(steps, "\n");
          }
        }
      }
      std::size_t d = 0;
      while (d < n && ++digits[d] == std::size(states)) digits[d++] = 0;
      if (d == n) break;
    }
  }
  EXPECT_GT(done, 0);
  std::cout << "[ replacement ] " << runs << " replacements, " << done << " done\n";
}

}  // namespace
}  // namespace handoff::rollout
