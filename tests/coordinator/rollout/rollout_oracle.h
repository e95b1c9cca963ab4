// Test helper: an oracle for the rollout engine written from the rules' text (rollout_engine.h
// R1–R5, README "Node states"), not from the engine's code, and the cluster's safety invariant.
// Used by the exhaustive CheckMove table and the random rollouts.
#ifndef HANDOFF_TESTS_COORDINATOR_ROLLOUT_ROLLOUT_ORACLE_H_
#define HANDOFF_TESTS_COORDINATOR_ROLLOUT_ROLLOUT_ORACLE_H_

#include <algorithm>
#include <cstddef>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "coordinator/rollout/rollout_engine.h"
#include "proto/vocabulary/node_state.h"

namespace handoff::rollout::oracle {

using Kind = Decision::Kind;
inline constexpr NodeState kInTree = NodeState::kInTree;
inline constexpr NodeState kPrepared = NodeState::kPrepared;
inline constexpr NodeState kMigrated = NodeState::kMigrated;
inline constexpr NodeState kFinalized = NodeState::kFinalized;
inline constexpr NodeState kInconsistent = NodeState::kInconsistent;
inline constexpr NodeState kAllStates[] = {kInTree, kPrepared, kMigrated, kFinalized,
                                           kInconsistent};
inline constexpr NodeState kTargets[] = {kInTree, kPrepared, kMigrated, kFinalized};

// ---------------------------------------------------------------------------------------------
// The oracle: which conditions a move violates, straight from the rule text.

// The labels the engine's refusals start with ("R1: ...").
inline constexpr char kR1[] = "R1";
inline constexpr char kR2[] = "R2";
inline constexpr char kR3[] = "R3";
inline constexpr char kR4[] = "R4";
inline constexpr char kR5[] = "R5";
inline constexpr char kPaused[] = "paused";
inline constexpr char kNotOneStep[] = "not one step";
inline constexpr char kInconsistentNode[] = "inconsistent";
inline constexpr char kDisconnected[] = "disconnected";

// One violated condition: the label the engine's message must start with ("R1", "paused", ...)
// and whether only the operator can clear it (NextStep: kStuck) or it clears by itself (kWait).
struct Violation {
  const char* label;
  bool stuck;
};

// The distinct violations of one move (at most one per label and kind: a dozen). Fixed capacity,
// so that the three-million-case table allocates nothing on the oracle's side.
class Violations {
 public:
  void Add(const char* label, bool stuck) {
    for (int i = 0; i < count_; ++i) {
      if (items_[i].label == label && items_[i].stuck == stuck) return;  // the constants above
    }
    if (count_ < kCapacity) items_[count_++] = Violation{label, stuck};
  }
  bool empty() const { return count_ == 0; }
  const Violation* begin() const { return items_; }
  const Violation* end() const { return items_ + count_; }
  const Violation& front() const { return items_[0]; }

  static Violations Only(const char* label, bool stuck) {
    Violations violations;
    violations.Add(label, stuck);
    return violations;
  }

 private:
  static constexpr int kCapacity = 16;
  Violation items_[kCapacity];
  int count_ = 0;
};

inline int Rank(NodeState s) {
  switch (s) {
    case kInTree:
      return 0;
    case kPrepared:
      return 1;
    case kMigrated:
      return 2;
    case kFinalized:
      return 3;
    case kInconsistent:
    // The downtime path's states are outside this oracle's chain (downtime_strategy_test.cc
    // covers them); the random rollouts here never reach them.
    case NodeState::kStopped:
    case NodeState::kExternal:
      return -100;
  }
  return -100;
}

inline bool HasCcm(NodeState s) { return s == kMigrated || s == kFinalized; }

// Every condition the move of nodes[mover] to `to` violates. Empty: the move is allowed.
// `to` must be one of the four targets (kInconsistent is an argument error, not a rule).
inline Violations ViolationsOf(const std::vector<NodeStatus>& nodes, std::size_t mover,
                               NodeState to, const ClusterFacts& facts, const Control& control) {
  Violations v;
  const NodeStatus& m = nodes[mover];
  // R5: halted → nothing moves. The operator's pause → nothing moves.
  if (control.halted) v.Add(kR5, true);
  if (control.paused) v.Add(kPaused, false);
  // A move is one step along the chain, from a consistent state.
  const int from_rank = Rank(m.state);
  const int step = Rank(to) - from_rank;
  if (from_rank < 0 || (step != 1 && step != -1)) v.Add(kNotOneStep, true);
  bool any_transition = false, any_inconsistent = false, any_unhealthy = false;
  for (const NodeStatus& n : nodes) {
    any_transition |= n.in_transition;
    any_inconsistent |= n.state == kInconsistent;
    any_unhealthy |= !n.healthy;
  }
  // R4: one node in transition at a time; the previous move verified (every node healthy).
  if (any_transition) v.Add(kR4, false);
  if (any_unhealthy) v.Add(kR4, true);
  // No node is changed, and no rule judged, while a node's state is unknown.
  if (any_inconsistent) v.Add(kInconsistentNode, true);
  // The coordinator can only talk to a connected agent.
  if (!m.connected) v.Add(kDisconnected, false);

  bool other_migrated = false;
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    if (i == mover) continue;
    const NodeStatus& o = nodes[i];
    other_migrated |= o.state == kMigrated;
    // R1: becoming migrated needs every other node that is not migrated/finalized prepared,
    // connected and healthy.
    if (to == kMigrated && !HasCcm(o.state)) {
      if (o.state != kPrepared) v.Add(kR1, true);
      if (!o.connected) v.Add(kR1, false);
      if (!o.healthy) v.Add(kR1, true);
    }
    // R2: no node becomes finalized while any node is in-tree or prepared.
    if (to == kFinalized && (o.state == kInTree || o.state == kPrepared)) {
      v.Add(kR2, true);
    }
    // R2 backwards: no node leaves migrated for prepared while any node is finalized.
    if (m.state == kMigrated && to == kPrepared && o.state == kFinalized) {
      v.Add(kR2, true);
    }
    // R3: no node returns to in-tree while any node is migrated or finalized.
    if (to == kInTree && HasCcm(o.state)) v.Add(kR3, true);
  }
  // R1: the migration-lease RBAC.
  if (to == kMigrated && !facts.rbac_ready) v.Add(kR1, true);
  // R4: once another node is migrated (its CCM takes part in Leader Migration), the next move
  // waits for a healthy holder of the migration lease.
  if (other_migrated && !facts.lease_held_by_healthy_manager) v.Add(kR4, false);
  return v;
}

// Whether `message` names one of the violated rules as "<label>:", at its start or anywhere.
inline bool MessageHasLabelOf(std::string_view message, const Violations& violations,
                              bool at_start) {
  for (const Violation& violation : violations) {
    const std::string_view label = violation.label;
    for (std::size_t at = message.find(label); at != std::string_view::npos;
         at = message.find(label, at + 1)) {
      if (at_start && at != 0) break;
      if (message.size() > at + label.size() && message[at + label.size()] == ':') return true;
    }
  }
  return false;
}

// The decision NextStep must take, from the README and the task's plan: a forward goal prepares
// every in-tree node (node order), walks finalized nodes back (kMigrated, reverse order),
// migrates prepared nodes (node order), then finalizes (kFinalized, node order); a backward goal
// prepares in-tree nodes, walks finalized nodes back to migrated then migrated nodes to prepared
// (reverse order), and for kInTree, once no node is migrated or finalized, prepared ones to
// in-tree (reverse order). Within each phase lease holders go last (HoldingRank). Strictly in
// that order: a blocked move is waited for, not skipped.
struct Expected {
  Kind kind;
  std::optional<std::size_t> mover;
  NodeState to = kInconsistent;
  Violations violations;  // the reason must name one of these (kWait, kStuck)
};

// Holders last: a node holding none of the three leases; else one whose leases do not make it
// run the cloud controllers; last the one that runs them (the migration lease; a main lease of a
// manager without Leader Migration: an in-tree KCM, a finalized CCM).
inline int HoldingRank(const NodeStatus& node, const LeaseHolders& holders) {
  int rank = 0;
  if (node.name == holders.migration) rank = 2;
  if (node.name == holders.kube_controller_manager) {
    rank = std::max(rank, node.state == kInTree ? 2 : 1);
  }
  if (node.name == holders.cloud_controller_manager) {
    rank = std::max(rank, node.state == kFinalized ? 2 : 1);
  }
  return rank;
}

// The first node in state `s` of the lowest holding rank, in node order or reverse node order.
inline std::optional<std::size_t> Pick(const std::vector<NodeStatus>& nodes, NodeState s,
                                       const LeaseHolders& holders, bool reverse) {
  for (int rank = 0; rank <= 2; ++rank) {
    for (std::size_t k = 0; k < nodes.size(); ++k) {
      const std::size_t i = reverse ? nodes.size() - 1 - k : k;
      if (nodes[i].state == s && HoldingRank(nodes[i], holders) == rank) return i;
    }
  }
  return std::nullopt;
}
inline std::optional<std::size_t> First(const std::vector<NodeStatus>& nodes, NodeState s,
                                        const LeaseHolders& holders) {
  return Pick(nodes, s, holders, /*reverse=*/false);
}
inline std::optional<std::size_t> Last(const std::vector<NodeStatus>& nodes, NodeState s,
                                       const LeaseHolders& holders) {
  return Pick(nodes, s, holders, /*reverse=*/true);
}

inline Expected ExpectedStep(const std::vector<NodeStatus>& nodes, NodeState goal,
                             const ClusterFacts& facts, const Control& control) {
  bool done = true, any_transition = false, any_inconsistent = false, any_unhealthy = false,
       any_ccm = false;
  for (const NodeStatus& n : nodes) {
    done &= n.state == goal && !n.in_transition;
    any_transition |= n.in_transition;
    any_inconsistent |= n.state == kInconsistent;
    any_unhealthy |= !n.healthy;
    any_ccm |= HasCcm(n.state);
  }
  if (done) return {Kind::kDone, std::nullopt, kInconsistent, {}};
  // Halted, paused, a node in transition, then inconsistent or unhealthy nodes, whatever the move.
  if (control.halted) {
    return {Kind::kStuck, std::nullopt, kInconsistent, Violations::Only(kR5, true)};
  }
  if (control.paused) {
    return {Kind::kWait, std::nullopt, kInconsistent, Violations::Only(kPaused, false)};
  }
  if (any_transition) {
    return {Kind::kWait, std::nullopt, kInconsistent, Violations::Only(kR4, false)};
  }
  if (any_inconsistent) {
    return {Kind::kStuck, std::nullopt, kInconsistent, Violations::Only(kInconsistentNode, true)};
  }
  if (any_unhealthy) {
    return {Kind::kStuck, std::nullopt, kInconsistent, Violations::Only(kR4, true)};
  }

  std::optional<std::size_t> mover;
  NodeState to = kInconsistent;
  auto take = [&](std::optional<std::size_t> index, NodeState target) {
    if (!mover && index) {
      mover = index;
      to = target;
    }
  };
  const LeaseHolders& h = facts.holders;
  take(First(nodes, kInTree, h), kPrepared);  // every goal but "kInTree with no CCM left"
  if (goal == kInTree && !any_ccm) {
    mover.reset();
    take(Last(nodes, kPrepared, h), kInTree);
  } else if (goal == kMigrated) {
    take(Last(nodes, kFinalized, h), kMigrated);
    take(First(nodes, kPrepared, h), kMigrated);
  } else if (goal == kFinalized) {
    take(First(nodes, kPrepared, h), kMigrated);
    take(First(nodes, kMigrated, h), kFinalized);
  } else {  // kPrepared, or kInTree while a CCM runs
    take(Last(nodes, kFinalized, h), kMigrated);
    take(Last(nodes, kMigrated, h), kPrepared);
  }
  if (!mover) return {Kind::kStuck, std::nullopt, kInconsistent, {}};  // cannot happen
  Violations violations = ViolationsOf(nodes, *mover, to, facts, control);
  if (violations.empty()) return {Kind::kMove, mover, to, {}};
  // Stuck when anything needs the operator; the reason then names those, else what it waits for.
  bool stuck = false;
  for (const Violation& violation : violations) stuck |= violation.stuck;
  Violations reported;
  for (const Violation& violation : violations) {
    if (violation.stuck == stuck) reported.Add(violation.label, violation.stuck);
  }
  return {stuck ? Kind::kStuck : Kind::kWait, mover, to, reported};
}

// ---------------------------------------------------------------------------------------------
// The safety invariant over the states the nodes run (inconsistent ones are unknown, skipped):
//  (a) a migrated or finalized node → no in-tree node (an in-tree KCM without Leader Migration
//      would run the cloud controllers beside a CCM);
//  (b) a finalized node → no in-tree or prepared node (a KCM with Leader Migration would take the
//      migration lease and run them beside a CCM that runs them unconditionally);
// and over the nodes: (c) at most one in transition. Returns nullptr or the violated clause.
class SafetyCheck {
 public:
  void Add(NodeState s) {
    ccm_ |= HasCcm(s);
    finalized_ |= s == kFinalized;
    in_tree_ |= s == kInTree;
    prepared_ |= s == kPrepared;
  }
  const char* Violation() const {
    if (ccm_ && in_tree_) return "(a) an in-tree node beside a migrated/finalized one";
    if (finalized_ && (in_tree_ || prepared_))
      return "(b) a finalized node beside an in-tree/prepared";
    return nullptr;
  }

 private:
  bool ccm_ = false, finalized_ = false, in_tree_ = false, prepared_ = false;
};

inline const char* SafetyViolation(const std::vector<NodeState>& states) {
  SafetyCheck check;
  for (NodeState s : states) check.Add(s);
  return check.Violation();
}

// The same over the states the coordinator last heard, and (c).
inline const char* SafetyViolation(const std::vector<NodeStatus>& nodes) {
  SafetyCheck check;
  int in_transition = 0;
  for (const NodeStatus& n : nodes) {
    check.Add(n.state);
    in_transition += n.in_transition ? 1 : 0;
  }
  if (in_transition > 1) return "(c) more than one node in transition";
  return check.Violation();
}

inline std::string KindName(Kind kind) {
  switch (kind) {
    case Kind::kMove:
      return "move";
    case Kind::kWait:
      return "wait";
    case Kind::kDone:
      return "done";
    case Kind::kStuck:
      return "stuck";
  }
  return "?";
}

inline std::string Describe(const std::vector<NodeStatus>& nodes,
                            const std::vector<NodeState>& actual, NodeState goal,
                            const ClusterFacts& facts, const Control& control) {
  std::ostringstream out;
  out << "goal " << NodeStateName(goal) << "; rbac " << facts.rbac_ready << " lease "
      << facts.lease_held_by_healthy_manager << "; paused " << control.paused << " halted "
      << control.halted << "; holders: migration '" << facts.holders.migration << "' kcm '"
      << facts.holders.kube_controller_manager << "' ccm '"
      << facts.holders.cloud_controller_manager << "'; nodes:";
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    const NodeStatus& n = nodes[i];
    out << " " << n.name << "=" << NodeStateName(n.state);
    if (!actual.empty()) out << "(actual " << NodeStateName(actual[i]) << ")";
    out << (n.connected ? "" : ",disconnected") << (n.healthy ? "" : ",unhealthy")
        << (n.in_transition ? ",in-transition" : "");
  }
  return out.str();
}

}  // namespace handoff::rollout::oracle

#endif  // HANDOFF_TESTS_COORDINATOR_ROLLOUT_ROLLOUT_ORACLE_H_
