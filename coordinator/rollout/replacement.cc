#include "coordinator/rollout/replacement.h"

#include <cstddef>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/base/strings.h"

namespace handoff::rollout {
namespace {

using Kind = ReplacementStep::Kind;

ReplacementStep Step(Kind kind, std::string reason) {
  ReplacementStep step;
  step.kind = kind;
  step.reason = std::move(reason);
  return step;
}

ReplacementStep FromDecision(const Decision& decision) {
  ReplacementStep step;
  step.reason = decision.reason;
  switch (decision.kind) {
    case Decision::Kind::kMove:
      step.kind = Kind::kMove;
      step.node = decision.node;
      step.to = decision.to;
      break;
    case Decision::Kind::kWait:
      step.kind = Kind::kWait;
      break;
    case Decision::Kind::kDone:
      step.kind = Kind::kDone;
      break;
    case Decision::Kind::kStuck:
      step.kind = Kind::kStuck;
      break;
  }
  return step;
}

// The first node in `from` among those `pick` accepts: holders last (LeaseHolderRank), then node
// order.
template <typename Pick>
std::optional<std::size_t> First(const std::vector<NodeStatus>& nodes, const LeaseHolders& holders,
                                 Pick pick) {
  std::optional<std::size_t> best;
  int best_rank = 0;
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    if (!pick(nodes[i])) continue;
    const int rank = LeaseHolderRank(nodes[i], holders);
    if (!best || rank < best_rank) {
      best = i;
      best_rank = rank;
    }
  }
  return best;
}

// The first node in `from` moved one step to `to`, as the engine judges it; nullopt when no node
// is in `from`.
std::optional<ReplacementStep> MoveFirst(const std::vector<NodeStatus>& nodes, NodeState from,
                                         NodeState to, const ClusterFacts& facts,
                                         const Control& control) {
  std::optional<std::size_t> index =
      First(nodes, facts.holders, [&](const NodeStatus& n) { return n.state == from; });
  if (!index) return std::nullopt;
  ReplacementStep step = FromDecision(TryMove(nodes, nodes[*index].name, to, facts, control));
  if (step.kind == Kind::kMove) StrAppend(&step.reason, " (replacement)");
  return step;
}

// The removal of nodes[index], `others_left` members of the replaced version staying after it.
ReplacementStep LeaveStep(const std::vector<NodeStatus>& nodes, std::size_t index, bool forward,
                          std::size_t others_left) {
  ReplacementStep step;
  step.kind = Kind::kLeave;
  step.node = nodes[index].name;
  step.reason = StrCat("node ", step.node, " (", NodeStateName(nodes[index].state), ", ",
                       forward ? "version N" : "version N+1",
                       ") is replaced: reset its machine, remove its etcd member and its Node; "
                       "the replacement goes on once its agent is gone and neither the API server "
                       "nor etcd lists it (",
                       others_left, " more of the ", forward ? "old" : "new", " version after it)");
  return step;
}

}  // namespace

bool IsOldNode(NodeState state, NodeState target) {
  const bool forward = target == NodeState::kMigrated || target == NodeState::kFinalized;
  const bool runs_version_n = state == NodeState::kInTree || state == NodeState::kPrepared;
  const bool runs_version_n1 = state == NodeState::kExternal || state == NodeState::kMigrated ||
                               state == NodeState::kFinalized;
  return forward ? runs_version_n : runs_version_n1;
}

ReplacementStep NextReplacementStep(const std::vector<NodeStatus>& nodes,
                                    const ReplacementGoal& goal, const ClusterFacts& facts,
                                    const Control& control) {
  using S = NodeState;
  if (nodes.empty()) return Step(Kind::kStuck, "no control-plane nodes are known");
  const bool forward = goal.target == S::kMigrated;
  if (!forward && goal.target != S::kPrepared && goal.target != S::kInTree) {
    return Step(Kind::kStuck, StrCat("a replacement goes to migrated, or back to prepared or "
                                     "in-tree, not to ",
                                     NodeStateName(goal.target)));
  }
  if (goal.size == 0) return Step(Kind::kStuck, "the replacement's control-plane size is unknown");
  // A node asked to leave leaves first, whatever it reports now (replacement.h); a halt still
  // stops everything.
  if (!goal.leaving.empty()) {
    for (std::size_t i = 0; i < nodes.size(); ++i) {
      if (nodes[i].name != goal.leaving) continue;
      if (control.halted) return FromDecision(*GeneralObstacle(nodes, control));
      std::size_t others_left = 0;
      for (std::size_t j = 0; j < nodes.size(); ++j) {
        others_left += j != i && IsOldNode(nodes[j].state, goal.target) ? 1 : 0;
      }
      return LeaveStep(nodes, i, forward, others_left);
    }
  }
  std::string awaiting;
  for (const NodeStatus& n : nodes) {
    if (n.awaiting_hello) StrAppend(&awaiting, awaiting.empty() ? "" : ", ", n.name);
  }
  if (!awaiting.empty()) {
    return Step(Kind::kWait, StrCat("waiting for the agents of ", awaiting,
                                    " to report their nodes' state before anything changes"));
  }

  std::size_t old_nodes = 0;
  bool at_goal = true;
  for (const NodeStatus& n : nodes) {
    old_nodes += IsOldNode(n.state, goal.target) ? 1 : 0;
    at_goal = at_goal && n.state == goal.target && !n.in_transition;
  }
  if (at_goal) {
    return Step(Kind::kDone, StrCat("every node is ", NodeStateName(goal.target),
                                    forward ? ", of the new version" : ", of the old version"));
  }
  if (std::optional<Decision> obstacle = GeneralObstacle(nodes, control)) {
    return FromDecision(*obstacle);
  }
  std::string stopped;
  for (const NodeStatus& n : nodes) {
    if (n.state == S::kStopped) StrAppend(&stopped, stopped.empty() ? "" : ", ", n.name);
  }
  if (!stopped.empty()) {
    return Step(Kind::kStuck,
                StrCat(stopped,
                       " stopped (the downtime path); a replacement goes by Leader Migration: "
                       "roll the downtime rollout back to in-tree first"));
  }

  // In place first: every manager of the old version in Leader Migration (forward), every
  // cloud-controller-manager of the new one back in it (backward); then a joined node brought to
  // its state.
  for (const auto& [from, to] : forward
                                    ? std::vector<std::pair<S, S>>{{S::kInTree, S::kPrepared},
                                                                   {S::kExternal, S::kMigrated},
                                                                   {S::kFinalized, S::kMigrated}}
                                    : std::vector<std::pair<S, S>>{{S::kFinalized, S::kMigrated}}) {
    if (std::optional<ReplacementStep> move = MoveFirst(nodes, from, to, facts, control)) {
      return *move;
    }
  }

  if (old_nodes > 0) {
    if (nodes.size() > goal.size) {
      std::optional<std::size_t> leaving = First(nodes, facts.holders, [&](const NodeStatus& n) {
        return IsOldNode(n.state, goal.target);
      });
      return LeaveStep(nodes, *leaving, forward, old_nodes - 1);
    }
    ReplacementStep step;
    step.kind = Kind::kJoin;
    step.to = forward ? S::kExternal : S::kPrepared;
    step.reason = forward ? StrCat(
                                "a new control-plane node of version N+1 joins (kubeadm join "
                                "--control-plane with the external configuration): it comes up "
                                "external, and its agent adds the cloud-controller-manager; ",
                                old_nodes, " node(s) of version N left to replace")
                          : StrCat(
                                "a control-plane node of version N joins with Leader Migration "
                                "(prepared): ",
                                old_nodes, " node(s) of version N+1 left to replace");
    return step;
  }
  // Backward, every node of version N: to the goal in place (holders last, as the engine would).
  const S from = goal.target == S::kInTree ? S::kPrepared : S::kInTree;
  if (std::optional<ReplacementStep> move = MoveFirst(nodes, from, goal.target, facts, control)) {
    return *move;
  }
  return Step(Kind::kStuck, StrCat("no step leads towards ", NodeStateName(goal.target)));
}

}  // namespace handoff::rollout
