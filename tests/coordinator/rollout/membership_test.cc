// Membership (coordinator/rollout/membership.h): exhaustive tables over small memberships. The
// oracle is the engine's own move rule: a set of states is safe when CheckMove's moves reach it
// from every node in-tree (a breadth-first search here, independent of membership.cc's pairs).
#include "coordinator/rollout/membership.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <iostream>
#include <set>
#include <string>
#include <vector>

#include "common/base/strings.h"
#include "coordinator/rollout/rollout_engine.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/coordinator/rollout/engine_nodes.h"

namespace handoff::rollout {
namespace {

using testing::Drive;
using ::testing::ElementsAre;
using testing::GoodFacts;
using ::testing::HasSubstr;
using testing::kFinalized;
using testing::kInTree;
using testing::kMigrated;
using testing::kPrepared;
using testing::Nodes;
using ::testing::StartsWith;

constexpr NodeState kStopped = NodeState::kStopped;
constexpr NodeState kExternal = NodeState::kExternal;
constexpr NodeState kStates[] = {kInTree, kPrepared, kMigrated, kFinalized, kStopped, kExternal};

using States = std::vector<NodeState>;

States Sorted(States states) {
  std::sort(states.begin(), states.end());
  return states;
}

// Every set of `n` states (as sorted lists) that CheckMove's moves reach from all in-tree.
std::set<States> Reachable(std::size_t n) {
  std::set<States> seen;
  std::vector<States> todo{States(n, kInTree)};
  seen.insert(todo.front());
  while (!todo.empty()) {
    const States states = todo.back();
    todo.pop_back();
    const std::vector<NodeStatus> nodes = Nodes(states);
    for (std::size_t i = 0; i < n; ++i) {
      for (NodeState to : kStates) {
        if (!CheckMove(nodes, nodes[i].name, to, GoodFacts(), Control{}).ok()) continue;
        States next = states;
        next[i] = to;
        if (seen.insert(Sorted(next)).second) todo.push_back(next);
      }
    }
  }
  return seen;
}

// Every set of `n` states (multisets, as sorted lists).
std::vector<States> EverySet(std::size_t n) {
  std::vector<States> out;
  std::vector<std::size_t> digits(n, 0);
  while (true) {
    States candidate;
    for (std::size_t d : digits) candidate.push_back(kStates[d]);
    if (std::is_sorted(digits.begin(), digits.end())) out.push_back(candidate);
    std::size_t k = 0;
    while (k < n && ++digits[k] == std::size(kStates)) digits[k++] = 0;
    if (k == n) break;
  }
  return out;
}

std::string Describe(const States& states) {
  std::vector<std::string> names;
  for (NodeState s : states) names.emplace_back(NodeStateName(s));
  return StrJoin(names, ",");
}

TEST(MembershipTableTest, SafeSetsAreExactlyTheOnesTheMovesReach) {
  std::uint64_t sets = 0, safe = 0;
  for (std::size_t n = 1; n <= 5; ++n) {
    const std::set<States> reachable = Reachable(n);
    for (const States& states : EverySet(n)) {
      ++sets;
      const absl::Status status = CheckConfiguration(Nodes(states));
      EXPECT_EQ(status.ok(), reachable.count(states) == 1) << Describe(states) << ": " << status;
      if (!status.ok()) {
        EXPECT_THAT(std::string(status.message()), StartsWith("M1: "));
      }
      safe += status.ok() ? 1 : 0;
    }
  }
  // Sets of 1–5 of six states: 6 + 21 + 56 + 126 + 252.
  EXPECT_EQ(sets, 461u);
  std::cout << "[ membership ] " << sets << " sets of 1-5 nodes, " << safe << " safe\n";
}

// A join into every safe membership of up to four nodes, by every state and flag of the joining
// node and with a member in transition, awaiting its hello or inconsistent: allowed exactly when
// the members and the node are known and idle and the new set is one the moves reach.
TEST(MembershipTableTest, AJoinIsAllowedExactlyIntoASetTheMovesReach) {
  std::uint64_t cases = 0, allowed = 0;
  constexpr NodeState kJoinStates[] = {
      kInTree, kPrepared, kMigrated, kFinalized, kStopped, kExternal, NodeState::kInconsistent};
  for (std::size_t n = 1; n <= 4; ++n) {
    const std::set<States> reachable_after = Reachable(n + 1);
    for (const States& states : Reachable(n)) {
      // 0: every member known and idle; 1: the first in transition; 2: awaiting its hello;
      // 3: inconsistent.
      for (int member_case = 0; member_case < 4; ++member_case) {
        std::vector<NodeStatus> members = Nodes(states);
        members[0].in_transition = member_case == 1;
        members[0].awaiting_hello = member_case == 2;
        if (member_case == 3) members[0].state = NodeState::kInconsistent;
        for (NodeState joining_state : kJoinStates) {
          for (int flags = 0; flags < 16; ++flags) {
            NodeStatus joining;
            joining.name = "new";
            joining.state = joining_state;
            joining.connected = (flags & 1) != 0;
            joining.healthy = (flags & 2) != 0;
            joining.in_transition = (flags & 4) != 0;
            joining.awaiting_hello = (flags & 8) != 0;
            const bool known = joining.connected && joining.healthy && !joining.in_transition &&
                               !joining.awaiting_hello &&
                               joining_state != NodeState::kInconsistent && member_case == 0;
            States after = states;
            after.push_back(joining_state);
            const bool safe = joining_state != NodeState::kInconsistent &&
                              reachable_after.count(Sorted(after)) == 1;
            const absl::Status status = CheckJoin(members, joining);
            ++cases;
            allowed += status.ok() ? 1 : 0;
            EXPECT_EQ(status.ok(), known && safe)
                << Describe(states) << " + " << NodeStateName(joining_state) << " flags " << flags
                << " member case " << member_case << ": " << status;
            if (!status.ok()) {
              // M2 (what is not known) is judged before M1 (the states).
              EXPECT_THAT(std::string(status.message()), StartsWith(known ? "M1: " : "M2: "));
            }
          }
        }
      }
    }
  }
  std::cout << "[ membership ] " << cases << " joins judged, " << allowed << " allowed\n";
  EXPECT_GT(allowed, 0u);
}

TEST(MembershipTableTest, LeavingKeepsEverySetOneTheMovesReach) {
  std::uint64_t cases = 0;
  for (std::size_t n = 2; n <= 5; ++n) {
    const std::set<States> reachable_after = Reachable(n - 1);
    for (const States& states : Reachable(n)) {
      for (std::size_t i = 0; i < n; ++i) {
        std::vector<NodeStatus> members = Nodes(states);
        ++cases;
        // Connected: its managers may still run.
        EXPECT_THAT(std::string(CheckLeave(members, members[i].name).message()),
                    StartsWith("M3: "));
        members[i].connected = false;
        members[i].in_transition = true;
        EXPECT_THAT(std::string(CheckLeave(members, members[i].name).message()),
                    StartsWith("M3: "));
        members[i].in_transition = false;
        ASSERT_TRUE(CheckLeave(members, members[i].name).ok()) << Describe(states);
        States after = states;
        after.erase(after.begin() + static_cast<std::ptrdiff_t>(i));
        EXPECT_EQ(reachable_after.count(Sorted(after)), 1u) << Describe(states) << " - " << i;
      }
    }
  }
  std::cout << "[ membership ] " << cases << " removals judged\n";
}

TEST(MembershipTest, TheLastNodeAndAStrangerCannotLeave) {
  std::vector<NodeStatus> members = Nodes({kMigrated});
  members[0].connected = false;
  EXPECT_THAT(std::string(CheckLeave(members, "a").message()),
              HasSubstr("M3: node a is the rollout's last node"));
  EXPECT_EQ(CheckLeave(members, "zz").code(), absl::StatusCode::kNotFound);
}

NodeStatus Joining(NodeState state) {
  NodeStatus node = Nodes({state}).front();
  node.name = "d";
  return node;
}

// After a join the normal moves take the new set to the goal, every set on the way safe; or the
// engine stops, naming the node that only the other strategy moves.
TEST(MembershipTableTest, AJoinedNodeIsBroughtToTheGoalByTheNormalMoves) {
  const Goal goals[] = {
      {kMigrated, Strategy::kLeaderMigration}, {kFinalized, Strategy::kLeaderMigration},
      {kPrepared, Strategy::kLeaderMigration}, {kInTree, Strategy::kLeaderMigration},
      {kFinalized, Strategy::kDowntime},       {kInTree, Strategy::kDowntime}};
  std::uint64_t runs = 0, done = 0;
  for (std::size_t n = 1; n <= 3; ++n) {
    for (const States& states : Reachable(n)) {
      for (NodeState joining_state : kStates) {
        std::vector<NodeStatus> nodes = Nodes(states);
        if (!CheckJoin(nodes, Joining(joining_state)).ok()) continue;
        nodes.push_back(Joining(joining_state));
        for (const Goal& goal : goals) {
          ++runs;
          const std::vector<std::string> moves =
              Drive(nodes, goal, GoodFacts(), [&](const std::vector<NodeStatus>& now) {
                EXPECT_TRUE(CheckConfiguration(now).ok());
              });
          ASSERT_FALSE(moves.empty());
          // A node on the other strategy's own states: prepared or migrated for the downtime
          // strategy, stopped or external for Leader Migration.
          bool other_path = false;
          for (const NodeStatus& node : nodes) {
            other_path = other_path || (goal.strategy == Strategy::kDowntime
                                            ? node.state == kPrepared || node.state == kMigrated
                                            : IsDowntimeState(node.state));
          }
          if (moves.back() == "done") {
            ++done;
            continue;
          }
          // Only such a node stops it (one joined external into a Leader Migration rollback, say:
          // it has no in-tree manager to go back to).
          EXPECT_THAT(moves.back(), StartsWith("stuck: "))
              << Describe(states) << " + " << NodeStateName(joining_state);
          EXPECT_TRUE(other_path) << Describe(states) << " + " << NodeStateName(joining_state)
                                  << ": " << moves.back();
        }
      }
    }
  }
  std::cout << "[ membership ] " << runs << " rollouts after a join, " << done << " done\n";
  EXPECT_GT(done, 0u);
}

TEST(MembershipTest, AnInTreeNodeCannotJoinAMigratedRolloutAPreparedOneJoinsAndIsMigrated) {
  const std::vector<NodeStatus> members = Nodes({kMigrated, kMigrated, kMigrated});
  EXPECT_THAT(std::string(CheckJoin(members, Joining(kInTree)).message()),
              HasSubstr("M1: node d (in-tree) cannot join beside node a (migrated)"));
  ASSERT_TRUE(CheckJoin(members, Joining(kPrepared)).ok());
  std::vector<NodeStatus> nodes = members;
  nodes.push_back(Joining(kPrepared));
  EXPECT_THAT(Drive(nodes, Goal{kMigrated, Strategy::kLeaderMigration}, GoodFacts()),
              ElementsAre("d:migrated", "done"));
}

// A node joined with kubeadm after the move (the kube-controller-manager external, no
// cloud-controller-manager yet) gets its cloud-controller-manager like the others.
TEST(MembershipTest, AnExternalNodeJoiningAFinalizedRolloutIsFinalized) {
  const std::vector<NodeStatus> members = Nodes({kFinalized, kFinalized, kFinalized});
  ASSERT_TRUE(CheckJoin(members, Joining(kExternal)).ok());
  std::vector<NodeStatus> nodes = members;
  nodes.push_back(Joining(kExternal));
  EXPECT_THAT(Drive(nodes, Goal{kFinalized, Strategy::kLeaderMigration}, GoodFacts()),
              ElementsAre("d:finalized", "done"));
}

// A node joined with kubeadm's external configuration while the others are still prepared
// runs no cloud controllers: R1 does not hold the others back, and it gets its
// cloud-controller-manager (with Leader Migration) after them.
TEST(MembershipTest, AnExternalNodeJoiningALeaderMigrationRolloutIsMigratedAfterThePreparedOnes) {
  const std::vector<NodeStatus> members = Nodes({kPrepared, kPrepared, kMigrated});
  ASSERT_TRUE(CheckJoin(members, Joining(kExternal)).ok());
  std::vector<NodeStatus> nodes = members;
  nodes.push_back(Joining(kExternal));
  EXPECT_THAT(Drive(nodes, Goal{kMigrated, Strategy::kLeaderMigration}, GoodFacts()),
              ElementsAre("a:migrated", "b:migrated", "d:migrated", "done"));
  // On the way back it is named, and nothing moves: it has no in-tree manager to return to.
  EXPECT_THAT(Drive(nodes, Goal{kInTree, Strategy::kLeaderMigration}, GoodFacts()),
              ElementsAre(StartsWith("stuck: d (external) runs an external "
                                     "kube-controller-manager and no cloud-controller-manager")));
}

TEST(MembershipTest, AStoppedNodeCannotJoinBesideACloudControllerManager) {
  EXPECT_THAT(std::string(CheckJoin(Nodes({kMigrated}), Joining(kStopped)).message()),
              HasSubstr("M1: node d (stopped) cannot join beside node a (migrated): R1"));
  EXPECT_THAT(std::string(CheckJoin(Nodes({kFinalized}), Joining(kStopped)).message()),
              HasSubstr("D2"));
  EXPECT_THAT(std::string(CheckJoin(Nodes({kFinalized}), Joining(kPrepared)).message()),
              HasSubstr("R2"));
}

TEST(MembershipTest, ANodeOfTheSameNameOrWithoutOneIsRefused) {
  EXPECT_THAT(std::string(CheckJoin(Nodes({kMigrated}), Nodes({kMigrated}).front()).message()),
              HasSubstr("M2: node a is already a member"));
  NodeStatus nameless = Joining(kMigrated);
  nameless.name.clear();
  EXPECT_EQ(CheckJoin(Nodes({kMigrated}), nameless).code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace handoff::rollout
