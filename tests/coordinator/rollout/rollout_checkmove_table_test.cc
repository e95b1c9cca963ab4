// CheckMove against the oracle (rollout_oracle.h) on three nodes, exhaustively:
//  - every node state (the four and inconsistent) × moving node × target (inconsistent too, an
//    argument error) × cluster facts × control flags, the nodes connected, healthy and idle;
//  - every node state and node flag (connected, healthy, in transition; at most one node in
//    transition, as R4 keeps it) × moving node × target × cluster facts, neither paused nor
//    halted.
// The product of both (15 million cases, some fifteen seconds under the sanitizers) is left to
// the random rollouts' probes (rollout_simulation_test.cc), which meet paused and halted rollouts
// with disconnected, unhealthy, inconsistent and moving nodes.
// And NextStep against the oracle for every state, goal and holder of the three leases.
#include <cstdint>
#include <iostream>
#include <string>
#include <string_view>
#include <vector>

#include "common/base/strings.h"
#include "coordinator/rollout/rollout_engine.h"
#include "gtest/gtest.h"
#include "tests/coordinator/rollout/rollout_oracle.h"

namespace handoff::rollout {
namespace {

using oracle::Describe;
using oracle::kAllStates;
using oracle::kFinalized;
using oracle::kInconsistent;
using oracle::kInTree;
using oracle::kMigrated;
using oracle::kPrepared;
using oracle::MessageHasLabelOf;
using oracle::Violations;
using oracle::ViolationsOf;

// Node flags as bits of a variant: connected, healthy, in transition.
constexpr int kConnected = 1, kHealthy = 2, kInTransition = 4;

struct TableResult {
  std::uint64_t cases = 0;
  std::uint64_t allowed = 0;
};

// Runs every combination of: per node a state and one of `flag_variants`; moving node; one of
// `targets`; facts (4); one of `controls`. Reports the first disagreements as test failures.
TableResult RunTable(const std::vector<int>& flag_variants, const std::vector<NodeState>& targets,
                     const std::vector<Control>& controls) {
  std::vector<NodeStatus> nodes(3);
  const std::string names[] = {"a", "b", "c"};
  for (int i = 0; i < 3; ++i) nodes[i].name = names[i];
  const int variants = 5 * static_cast<int>(flag_variants.size());
  TableResult result;
  int reported = 0;
  for (int v0 = 0; v0 < variants; ++v0) {
    for (int v1 = 0; v1 < variants; ++v1) {
      for (int v2 = 0; v2 < variants; ++v2) {
        const int node_variants[] = {v0, v1, v2};
        int in_transition = 0;
        for (int i = 0; i < 3; ++i) {
          const int flags = flag_variants[node_variants[i] % flag_variants.size()];
          nodes[i].state = kAllStates[node_variants[i] / flag_variants.size()];
          nodes[i].connected = (flags & kConnected) != 0;
          nodes[i].healthy = (flags & kHealthy) != 0;
          nodes[i].in_transition = (flags & kInTransition) != 0;
          in_transition += nodes[i].in_transition ? 1 : 0;
        }
        // R4 never lets a second node start a move (CheckMoveTest has that case).
        if (in_transition > 1) continue;
        for (std::size_t mover = 0; mover < 3; ++mover) {
          for (NodeState to : targets) {
            for (int fact_bits = 0; fact_bits < 4; ++fact_bits) {
              ClusterFacts facts;
              facts.rbac_ready = (fact_bits & 1) != 0;
              facts.lease_held_by_healthy_manager = (fact_bits & 2) != 0;
              for (const Control& control : controls) {
                ++result.cases;
                const absl::Status status = CheckMove(nodes, names[mover], to, facts, control);
                bool agrees;
                std::string oracle_says;
                if (to == kInconsistent) {
                  // Not a rule: an argument error, whatever else holds.
                  agrees = status.code() == absl::StatusCode::kInvalidArgument;
                  oracle_says = "invalid argument";
                } else {
                  const Violations violations = ViolationsOf(nodes, mover, to, facts, control);
                  const std::string_view message(status.message().data(), status.message().size());
                  agrees = status.ok()
                               ? violations.empty()
                               : !violations.empty() &&
                                     status.code() == absl::StatusCode::kFailedPrecondition &&
                                     MessageHasLabelOf(message, violations,
                                                       /*at_start=*/true);
                  if (!agrees) {
                    oracle_says = violations.empty()
                                      ? "allowed"
                                      : StrCat("refused, first by ", violations.front().label);
                  }
                }
                if (status.ok()) ++result.allowed;
                if (!agrees && reported++ < 10) {
                  ADD_FAILURE() << "move " << names[mover] << " to " << NodeStateName(to)
                                << ": CheckMove says " << status << "; the oracle: " << oracle_says
                                << "\n"
                                << Describe(nodes, {}, to, facts, control);
                }
              }
            }
          }
        }
      }
    }
  }
  return result;
}

std::vector<Control> EveryControl() {
  std::vector<Control> controls(4);
  controls[1].paused = true;
  controls[2].halted = true;
  controls[2].halt_reason = "node b failed";
  controls[3].paused = true;
  controls[3].halted = true;
  return controls;
}

TEST(CheckMoveTableTest, EveryStateTargetFactAndControlFlag) {
  const TableResult result =
      RunTable({kConnected | kHealthy}, {kInTree, kPrepared, kMigrated, kFinalized, kInconsistent},
               EveryControl());
  // 5^3 states × 3 moving nodes × 5 targets × 4 facts × 4 control flags.
  EXPECT_EQ(result.cases, 30'000u);
  std::cout << "[ rollout ] CheckMove table (states, facts, control): " << result.cases
            << " cases, " << result.allowed << " allowed\n";
  RecordProperty("cases", static_cast<int>(result.cases));
  RecordProperty("allowed", static_cast<int>(result.allowed));
}

TEST(CheckMoveTableTest, EveryStateNodeFlagTargetAndFact) {
  std::vector<int> every_flag;
  for (int flags = 0; flags < 8; ++flags) every_flag.push_back(flags);
  const TableResult result =
      RunTable(every_flag, {kInTree, kPrepared, kMigrated, kFinalized}, {Control{}});
  // Nodes: (5 states × 4 connected/healthy)^3 × (none or one of 3 in transition); × 3 moving
  // nodes × 4 targets × 4 facts.
  EXPECT_EQ(result.cases, 1'536'000u);
  std::cout << "[ rollout ] CheckMove table (states, node flags, facts): " << result.cases
            << " cases, " << result.allowed << " allowed\n";
  RecordProperty("cases", static_cast<int>(result.cases));
  RecordProperty("allowed", static_cast<int>(result.allowed));
}

// NextStep against the oracle's ExpectedStep, exhaustively over the leases' holders: every state
// of three connected, healthy, idle nodes × goal × each lease held by a, b, c or nobody × the
// RBAC and lease facts. Holders only change which node moves (never whether one may).
TEST(NextStepTableTest, EveryStateGoalAndLeaseHolder) {
  const std::string names[] = {"a", "b", "c", ""};
  std::vector<NodeStatus> nodes(3);
  for (int i = 0; i < 3; ++i) {
    nodes[i].name = names[i];
    nodes[i].connected = nodes[i].healthy = true;
  }
  std::uint64_t cases = 0, moves = 0;
  int reported = 0;
  for (NodeState s0 : kAllStates) {
    for (NodeState s1 : kAllStates) {
      for (NodeState s2 : kAllStates) {
        nodes[0].state = s0, nodes[1].state = s1, nodes[2].state = s2;
        for (NodeState goal : oracle::kTargets) {
          for (int holders = 0; holders < 64; ++holders) {
            for (int bits = 0; bits < 4; ++bits) {
              ClusterFacts facts;
              facts.rbac_ready = (bits & 1) != 0;
              facts.lease_held_by_healthy_manager = (bits & 2) != 0;
              facts.holders.migration = names[holders % 4];
              facts.holders.kube_controller_manager = names[holders / 4 % 4];
              facts.holders.cloud_controller_manager = names[holders / 16];
              ++cases;
              const Decision decision = NextStep(nodes, Goal{goal}, facts, Control{});
              const oracle::Expected expected = oracle::ExpectedStep(nodes, goal, facts, Control{});
              const bool same =
                  decision.kind == expected.kind &&
                  (decision.kind != Decision::Kind::kMove ||
                   (decision.node == nodes[*expected.mover].name && decision.to == expected.to));
              moves += decision.kind == Decision::Kind::kMove ? 1 : 0;
              if (!same && reported++ < 5) {
                ADD_FAILURE() << "NextStep: " << oracle::KindName(decision.kind) << " "
                              << decision.node << " " << NodeStateName(decision.to) << " ("
                              << decision.reason << "); the oracle: "
                              << oracle::KindName(expected.kind) << " "
                              << (expected.mover ? nodes[*expected.mover].name : "") << " "
                              << NodeStateName(expected.to) << "\n"
                              << Describe(nodes, {}, goal, facts, Control{});
              }
            }
          }
        }
      }
    }
  }
  // 5^3 states × 4 goals × 4^3 holders × 4 facts.
  EXPECT_EQ(cases, 128'000u);
  EXPECT_GT(moves, 10'000u);
  std::cout << "[ rollout ] NextStep table (states, goals, lease holders, facts): " << cases
            << " cases, " << moves << " moves\n";
  RecordProperty("cases", static_cast<int>(cases));
}

}  // namespace
}  // namespace handoff::rollout
