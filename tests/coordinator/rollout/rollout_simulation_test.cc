// Random rollouts of the rollout engine: 100,000 scenarios of one to five nodes from a safe start
// towards a random goal, with moves that succeed, fail (the agent rolls back, the rollout halts)
// or lose their agent mid-move (it comes back having finished or undone the move), slow moves,
// operator commands (pause, resume, abort, a new goal forwards or backwards), the RBAC and lease
// facts (the leases' holders included) changing, probes failing and nodes edited by hand. Every decision is checked against the
// oracle (rollout_oracle.h), every move against CheckMove, and the safety invariant after every
// step, on what the nodes really run as well as on what the coordinator last heard. Then, left
// alone, every rollout must reach its goal within nodes × 4 moves.
// Deterministic: one std::mt19937_64 with a fixed seed, no clock.
#include <cstdint>
#include <iostream>
#include <random>
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
using oracle::Expected;
using oracle::ExpectedStep;
using oracle::kInconsistent;
using oracle::KindName;
using oracle::kMigrated;
using oracle::kTargets;
using oracle::MessageHasLabelOf;
using oracle::SafetyViolation;
using oracle::Violations;
using oracle::ViolationsOf;

struct Counters {
  std::uint64_t scenarios = 0, quiet_scenarios = 0, decisions = 0, moves = 0, successes = 0,
                failures = 0, disconnects = 0, slow_moves = 0, waits = 0, stucks = 0, dones = 0,
                operator_commands = 0, moves_after_turbulence = 0, probes = 0, probes_allowed = 0;
};

class Rollout {
 public:
  // `quiet`: no failures, disconnects, pauses or commands, and the facts hold throughout.
  Rollout(std::mt19937_64& rng, bool quiet, Counters& counters)
      : rng_(rng), quiet_(quiet), counters_(counters) {}

  // Returns "" or what went wrong.
  std::string Run() {
    const int n = 1 + static_cast<int>(Pick(5));
    nodes_.resize(n);
    for (int i = 0; i < n; ++i) {
      nodes_[i].name = StrCat("cp-", i);
      nodes_[i].connected = true;
      nodes_[i].healthy = true;
    }
    // A safe starting point, uniformly among the safe ones.
    do {
      actual_.clear();
      for (int i = 0; i < n; ++i) actual_.push_back(kTargets[Pick(4)]);
    } while (SafetyViolation(actual_) != nullptr);
    for (int i = 0; i < n; ++i) nodes_[i].state = actual_[i];
    pending_.assign(n, kInconsistent);
    goal_ = kTargets[Pick(4)];
    facts_.rbac_ready = quiet_ || Chance(700);
    facts_.lease_held_by_healthy_manager = quiet_ || Chance(700);
    ShuffleHolders();

    if (!quiet_) {
      // Turbulence: anything may happen between and during moves.
      for (int step = 0; step < 2 * n + 6; ++step) {
        Disturb();
        if (std::string error = CheckSafety("after events"); !error.empty()) return error;
        if (std::string error = Probe(); !error.empty()) return error;
        const Decision decision = NextStep(nodes_, Goal{goal_}, facts_, control_);
        if (std::string error = Carry(decision); !error.empty()) return error;
        if (std::string error = CheckSafety("after the decision"); !error.empty()) return error;
      }
      // Then calm: the operator resumes, the facts hold, every agent reports what it runs.
      control_ = Control{};
      facts_.rbac_ready = true;
      facts_.lease_held_by_healthy_manager = true;
      for (int i = 0; i < n; ++i) nodes_[i] = NodeStatus{nodes_[i].name, actual_[i], true, true};
    }
    // Liveness: left alone, the rollout reaches its goal within nodes × 4 moves, all of them
    // allowed.
    for (int moves = 0;; ++moves) {
      const Decision decision = NextStep(nodes_, Goal{goal_}, facts_, control_);
      if (decision.kind == Decision::Kind::kDone) break;
      if (decision.kind != Decision::Kind::kMove || moves == 4 * n) {
        return StrCat("liveness: after ", moves, " moves: ", KindName(decision.kind), " (",
                      decision.reason, ")\n", Where());
      }
      if (std::string error = Carry(decision, /*always_succeed=*/true); !error.empty()) {
        return error;
      }
      ++counters_.moves_after_turbulence;
      if (std::string error = CheckSafety("after the move"); !error.empty()) return error;
    }
    for (const NodeStatus& node : nodes_) {
      if (node.state != goal_) return StrCat("done but not at the goal\n", Where());
    }
    ++counters_.scenarios;
    counters_.quiet_scenarios += quiet_ ? 1 : 0;
    return "";
  }

 private:
  std::uint64_t Pick(std::uint64_t n) { return rng_() % n; }
  bool Chance(int permille) { return static_cast<int>(Pick(1000)) < permille; }
  std::string Where() const { return Describe(nodes_, actual_, goal_, facts_, control_); }

  // Operator commands, cluster facts, agents coming and going, before the next decision.
  void Disturb() {
    const int command = static_cast<int>(Pick(1000));
    bool commanded = true;
    if (command < 40) {
      control_.paused = !control_.paused;
    } else if (command < 90) {
      goal_ = kTargets[Pick(4)];  // forwards or backwards
    } else if (command < 110) {
      control_.halted = true;  // abort
      control_.halt_reason = "operator abort";
    } else if (command < 250 && (control_.halted || control_.paused)) {
      control_ = Control{};  // resume: clears the pause and the halt
    } else {
      commanded = false;
    }
    if (commanded) ++counters_.operator_commands;
    if (Chance(50)) facts_.rbac_ready = !facts_.rbac_ready;
    if (Chance(100)) facts_.lease_held_by_healthy_manager = !facts_.lease_held_by_healthy_manager;
    if (Chance(200)) ShuffleHolders();

    for (std::size_t i = 0; i < nodes_.size(); ++i) {
      NodeStatus& node = nodes_[i];
      if (node.in_transition) {
        if (!node.connected) {
          // Back from a disconnect: the agent finished or undid the move and reports which.
          if (Chance(350)) node = NodeStatus{node.name, actual_[i], true, true};
        } else if (Chance(400)) {
          // A slow move's verified result.
          if (Chance(800)) {
            node.state = actual_[i] = pending_[i];
          } else {
            Fail(node);
          }
          node.in_transition = false;
          node.healthy = true;
        }
        continue;
      }
      if (node.connected ? Chance(15) : Chance(300)) node.connected = !node.connected;
      if (node.healthy ? Chance(10) : Chance(300)) node.healthy = !node.healthy;  // a probe
      // Edited by hand: reported inconsistent until repaired (what it runs is unchanged).
      if (node.state == kInconsistent) {
        if (Chance(300)) node.state = actual_[i];
      } else if (Chance(8)) {
        node.state = kInconsistent;
      }
    }
  }

  // The leases' holders: any node, or none (only the order of moves depends on them).
  void ShuffleHolders() {
    auto any = [&]() -> std::string {
      const std::uint64_t k = Pick(nodes_.size() + 1);
      return k == nodes_.size() ? "" : nodes_[k].name;
    };
    facts_.holders.migration = any();
    facts_.holders.kube_controller_manager = any();
    facts_.holders.cloud_controller_manager = any();
  }

  void Fail(const NodeStatus& node) {
    control_.halted = true;
    control_.halt_reason = StrCat("move of ", node.name, " failed and was rolled back");
  }

  // CheckMove on a random node and target, against the oracle: every combination of node flags,
  // facts and control flags the rollouts reach, not only the moves NextStep picks.
  std::string Probe() {
    const std::size_t mover = Pick(nodes_.size());
    const NodeState to = kTargets[Pick(4)];
    const absl::Status status = CheckMove(nodes_, nodes_[mover].name, to, facts_, control_);
    const Violations violations = ViolationsOf(nodes_, mover, to, facts_, control_);
    ++counters_.probes;
    if (status.ok()) ++counters_.probes_allowed;
    const bool agrees =
        status.ok() ? violations.empty()
                    : !violations.empty() &&
                          MessageHasLabelOf(
                              std::string_view(status.message().data(), status.message().size()),
                              violations, /*at_start=*/true);
    if (agrees) return "";
    return StrCat("probe: CheckMove(", nodes_[mover].name, " to ", NodeStateName(to), ") says ",
                  status.ToString(), " but the oracle ",
                  violations.empty() ? "allows it" : "refuses it", "\n", Where());
  }

  // Checks the decision against the oracle; for a move, CheckMove too, then an outcome.
  std::string Carry(const Decision& decision, bool always_succeed = false) {
    ++counters_.decisions;
    const Expected expected = ExpectedStep(nodes_, goal_, facts_, control_);
    if (decision.kind != expected.kind) {
      return StrCat("NextStep: ", KindName(decision.kind), " (", decision.node, " ",
                    NodeStateName(decision.to), ": ", decision.reason,
                    "); the oracle: ", KindName(expected.kind), "\n", Where());
    }
    switch (decision.kind) {
      case Decision::Kind::kDone:
        ++counters_.dones;
        return "";
      case Decision::Kind::kWait:
      case Decision::Kind::kStuck:
        ++(decision.kind == Decision::Kind::kWait ? counters_.waits : counters_.stucks);
        // The reason names a rule the oracle finds broken (for the class of the decision).
        if (!MessageHasLabelOf(decision.reason, expected.violations, /*at_start=*/false)) {
          return StrCat("the reason names no rule the oracle finds: ", decision.reason, "\n",
                        Where());
        }
        return "";
      case Decision::Kind::kMove:
        break;
    }
    ++counters_.moves;
    const std::size_t i = *expected.mover;
    if (decision.node != nodes_[i].name || decision.to != expected.to) {
      return StrCat("NextStep moves ", decision.node, " to ", NodeStateName(decision.to),
                    "; the oracle ", nodes_[i].name, " to ", NodeStateName(expected.to), "\n",
                    Where());
    }
    if (absl::Status check = CheckMove(nodes_, decision.node, decision.to, facts_, control_);
        !check.ok()) {
      return StrCat("CheckMove refuses NextStep's move: ", check.ToString(), "\n", Where());
    }
    NodeStatus& node = nodes_[i];
    const int outcome = always_succeed ? 0 : static_cast<int>(Pick(1000));
    if (outcome < 700) {
      // Verified healthy in the new state.
      ++counters_.successes;
      node.state = actual_[i] = decision.to;
      node.healthy = true;
    } else if (outcome < 800) {
      // Failed: the agent rolled its node back and verified it; the rollout halts (R5).
      ++counters_.failures;
      Fail(node);
      node.healthy = true;
    } else if (outcome < 900) {
      // The agent drops off mid-move and will come back having finished or undone it.
      ++counters_.disconnects;
      node.connected = false;
      node.in_transition = true;
      if (Chance(500)) actual_[i] = decision.to;
    } else {
      // Still running: the result comes in a later step.
      ++counters_.slow_moves;
      node.in_transition = true;
      pending_[i] = decision.to;
    }
    return "";
  }

  // (a), (b) on what the nodes run and on what the coordinator last heard; (c).
  std::string CheckSafety(const char* when) const {
    const char* violation = SafetyViolation(actual_);
    if (violation == nullptr) violation = SafetyViolation(nodes_);
    if (violation == nullptr) return "";
    return StrCat("unsafe ", when, ": ", violation, "\n", Where());
  }

  std::mt19937_64& rng_;
  const bool quiet_;
  Counters& counters_;
  std::vector<NodeStatus> nodes_;   // as the coordinator knows them
  std::vector<NodeState> actual_;   // what each node really runs
  std::vector<NodeState> pending_;  // the target of a slow move
  NodeState goal_ = kMigrated;
  ClusterFacts facts_;
  Control control_;
};

TEST(RolloutSimulationTest, RandomRolloutsStaySafeAndReachTheirGoal) {
  constexpr std::uint64_t kScenarios = 100'000;
  std::mt19937_64 rng(0x68616e646f6666);  // "handoff"
  Counters counters;
  for (std::uint64_t s = 0; s < kScenarios; ++s) {
    // One in four runs quietly.
    const bool quiet = s % 4 == 0;
    if (std::string error = Rollout(rng, quiet, counters).Run(); !error.empty()) {
      FAIL() << "scenario " << s << (quiet ? " (quiet)" : "") << ": " << error;
    }
  }
  EXPECT_EQ(counters.scenarios, kScenarios);
  EXPECT_EQ(counters.quiet_scenarios, kScenarios / 4);
  // Every kind of event happened, often.
  for (std::uint64_t count : {counters.failures, counters.disconnects, counters.slow_moves,
                              counters.waits, counters.stucks, counters.probes_allowed}) {
    EXPECT_GT(count, 5'000u);
  }
  std::cout << "[ rollout ] random rollouts: " << counters.scenarios << " scenarios ("
            << counters.quiet_scenarios << " quiet), " << counters.decisions
            << " decisions: " << counters.moves << " moves (" << counters.successes
            << " succeeded, " << counters.failures << " failed, " << counters.disconnects
            << " lost their agent, " << counters.slow_moves << " slow), " << counters.waits
            << " waits, " << counters.stucks << " stuck, " << counters.dones << " done; "
            << counters.operator_commands << " operator commands; " << counters.probes
            << " CheckMove probes (" << counters.probes_allowed << " allowed); "
            << counters.moves_after_turbulence << " moves to the goal when left alone\n";
  RecordProperty("scenarios", static_cast<int>(counters.scenarios));
  RecordProperty("decisions", static_cast<int>(counters.decisions));
  RecordProperty("moves", static_cast<int>(counters.moves));
  RecordProperty("probes", static_cast<int>(counters.probes));
}

}  // namespace
}  // namespace handoff::rollout
