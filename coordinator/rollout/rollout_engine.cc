#include "coordinator/rollout/rollout_engine.h"

#include <cassert>
#include <cstddef>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/base/strings.h"

namespace handoff::rollout {
namespace {

constexpr std::string_view kChain =
    "in-tree ⇄ prepared ⇄ migrated ⇄ finalized (or in-tree ⇄ stopped ⇄ external ⇄ finalized, "
    "and external ⇄ migrated)";

// Why one move may not be sent now. `needs_operator` tells NextStep whether the obstacle can clear
// by itself (a result coming back, an agent reconnecting, the lease finding a holder: kWait) or
// only by the operator's hand (kStuck).
struct Refusal {
  bool needs_operator = false;
  std::string message;
};

// Messages are built into one buffer sized once: CheckMove and NextStep run on every event of a
// rollout (and millions of times in the tests).
template <typename... Pieces>
std::string Text(const Pieces&... pieces) {
  std::string out;
  out.reserve(192);
  StrAppend(&out, pieces...);
  return out;
}

// Skip no node.
constexpr std::size_t kNoNode = static_cast<std::size_t>(-1);

// The nodes other than `skip` that match `pred`, as the subject of a sentence: "node a is",
// "nodes a, b are" (with the verb given); "" when none does.
template <typename Predicate>
std::string Subject(const std::vector<NodeStatus>& nodes, std::size_t skip, Predicate pred,
                    std::string_view singular_verb, std::string_view plural_verb) {
  int count = 0;
  for (std::size_t i = 0; i < nodes.size(); ++i) count += (i != skip && pred(nodes[i])) ? 1 : 0;
  if (count == 0) return "";
  std::string out = count == 1 ? "node " : "nodes ";
  bool first = true;
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    if (i == skip || !pred(nodes[i])) continue;
    StrAppend(&out, first ? "" : ", ", nodes[i].name);
    first = false;
  }
  StrAppend(&out, " ", count == 1 ? singular_verb : plural_verb);
  return out;
}

// The nodes other than `skip` that match `pred`, each with the state that puts it in the way:
// "a (in-tree), b (inconsistent)"; "" when none does.
template <typename Predicate>
std::string NamesWithStates(const std::vector<NodeStatus>& nodes, std::size_t skip,
                            Predicate pred) {
  std::string out;
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    if (i == skip || !pred(nodes[i])) continue;
    StrAppend(&out, out.empty() ? "" : ", ", nodes[i].name, " (", NodeStateName(nodes[i].state),
              ")");
  }
  return out;
}

// The names of the nodes that match `pred`: "a, b"; "" when none does.
template <typename Predicate>
std::string NamesOf(const std::vector<NodeStatus>& nodes, Predicate pred) {
  std::string out;
  for (const NodeStatus& node : nodes) {
    if (pred(node)) StrAppend(&out, out.empty() ? "" : ", ", node.name);
  }
  return out;
}

// The names must address the nodes: non-empty and unique. (Quadratic, and allocation-free: a
// control plane has a handful of nodes.)
absl::Status ValidateNames(const std::vector<NodeStatus>& nodes) {
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    if (nodes[i].name.empty()) return absl::InvalidArgumentError("a node has an empty name");
    for (std::size_t j = 0; j < i; ++j) {
      if (nodes[j].name == nodes[i].name) {
        return absl::InvalidArgumentError(
            StrCat("node ", nodes[i].name, " is listed twice; node names must be unique"));
      }
    }
  }
  return absl::OkStatus();
}

// The conditions every move needs, whichever node moves, in the order NextStep reports them.
// Returns the first one that fails.
std::optional<Refusal> GeneralRefusal(const std::vector<NodeStatus>& nodes,
                                      const Control& control) {
  // R5: after the first failure (or an abort) nothing moves until the operator resumes.
  if (control.halted) {
    return Refusal{true, Text("R5: the rollout is halted", control.halt_reason.empty() ? "" : " (",
                              control.halt_reason, control.halt_reason.empty() ? "" : ")",
                              "; only the operator can resume it")};
  }
  if (control.paused) {
    return Refusal{false,
                   "paused: the operator paused the rollout; nothing moves until it resumes"};
  }
  // Passes by itself (a successor takes the lease), so a wait, not a halt: an overloaded
  // control plane, etcd without quorum while a member joins, can leave every manager restarting
  // for a minute without anything being wrong with the move.
  if (!control.no_runner.empty()) {
    return Refusal{false, Text("no-runner: no manager has run ", control.no_runner,
                               ", longer than the gap limit (the live double-run detector); the "
                               "next move waits until one does, or an operator's start, rollback "
                               "or resume goes on without")};
  }
  // R4: one node at a time. A node in transition has not reported its result: its state may be
  // the old one or the new one, so no other node's move can be judged until it answers.
  if (std::string moving = Subject(
          nodes, kNoNode, [](const NodeStatus& n) { return n.in_transition; }, "is", "are");
      !moving.empty()) {
    return Refusal{
        false, Text("R4: ", moving, " in transition; the next move waits for its verified result")};
  }
  // handoff never changes an inconsistent node, and R1–R3 cannot be judged without every node's
  // state: an inconsistent node might run an in-tree manager beside a cloud-controller-manager.
  if (std::string inconsistent = Subject(
          nodes, kNoNode, [](const NodeStatus& n) { return n.state == NodeState::kInconsistent; },
          "is", "are");
      !inconsistent.empty()) {
    return Refusal{true, Text("inconsistent: ", inconsistent,
                              " inconsistent; handoff neither changes such a node nor judges "
                              "R1-R3 without its state: repair it by hand (handoff-agent status "
                              "lists the problems)")};
  }
  // R4: the next node moves only after the previous one is verified healthy. A node that is not
  // healthy (a failed verification, a failed probe) needs a look before anything else restarts.
  if (std::string unhealthy = Subject(
          nodes, kNoNode, [](const NodeStatus& n) { return !n.healthy; }, "is not", "are not");
      !unhealthy.empty()) {
    return Refusal{
        true, Text("R4: ", unhealthy, " verified healthy; check it before any other node moves")};
  }
  return std::nullopt;
}

// The conditions of moving nodes[index] to `to`, given that the general ones hold. Adjacency
// first (alone: the rules below assume a move along the chain), then every other obstacle.
std::vector<Refusal> MoveRefusals(const std::vector<NodeStatus>& nodes, std::size_t index,
                                  NodeState to, const ClusterFacts& facts) {
  const NodeStatus& node = nodes[index];
  const NodeState from = node.state;
  if (!AreAdjacent(from, to)) {
    return {
        Refusal{true, Text("not one step: node ", node.name, " is ", NodeStateName(from), " and ",
                           NodeStateName(to), " is not one step away along ", kChain)}};
  }
  std::vector<Refusal> refusals;
  // The coordinator can only move a node whose agent listens; it comes back by itself.
  if (!node.connected) {
    refusals.push_back(
        Refusal{false, Text("disconnected: node ", node.name, "'s agent is not connected")});
  }

  if (to == NodeState::kMigrated) {
    // R1: a cloud-controller-manager (with Leader Migration) starts on this node. Every other node
    // still running an in-tree kube-controller-manager must take part in Leader Migration
    // (prepared), be healthy and be reachable, or two managers would run the cloud controllers.
    // (That they are healthy is a condition of every move, checked before this.)
    // This also covers finalized → migrated, which re-enables Leader Migration on this node's
    // cloud-controller-manager; in a safe cluster every other node is then migrated/finalized.
    // An external node runs no cloud controllers (its kube-controller-manager is external, it has
    // no cloud-controller-manager), so it is not in the way: a node kubeadm joined external
    // during the rollout migrates beside prepared ones.
    auto not_prepared = [](const NodeStatus& n) {
      return !RunsCloudControllerManager(n.state) && n.state != NodeState::kPrepared &&
             n.state != NodeState::kExternal;
    };
    if (std::string in_the_way = NamesWithStates(nodes, index, not_prepared); !in_the_way.empty()) {
      refusals.push_back(Refusal{true, Text("R1: ", in_the_way,
                                            " not prepared; every node still running an in-tree "
                                            "kube-controller-manager must be prepared before a "
                                            "cloud-controller-manager starts on ",
                                            node.name)});
    }
    if (std::string unreachable = Subject(
            nodes, index,
            [](const NodeStatus& n) { return n.state == NodeState::kPrepared && !n.connected; },
            "is", "are");
        !unreachable.empty()) {
      refusals.push_back(Refusal{
          false, Text("R1: prepared ", unreachable,
                      " not connected; waiting for its agent before migrating ", node.name)});
    }
    // Both managers must be allowed to take the migration lease (domain brief §5: the KCM's
    // bootstrap role only covers its own lease), or the migrated controllers run nowhere.
    if (!facts.rbac_ready) {
      refusals.push_back(Refusal{true, Text("R1: the migration-lease RBAC is not in place; "
                                            "apply it (handoffctl rbac apply) before migrating ",
                                            node.name)});
    }
  }

  if (to == NodeState::kFinalized) {
    // R2: without Leader Migration the cloud-controller-manager runs the cloud controllers
    // unconditionally; an in-tree kube-controller-manager (in-tree or prepared) would too.
    auto in_tree_manager = [](const NodeStatus& n) {
      return n.state == NodeState::kInTree || n.state == NodeState::kPrepared;
    };
    if (std::string in_the_way = NamesWithStates(nodes, index, in_tree_manager);
        !in_the_way.empty()) {
      refusals.push_back(Refusal{true, Text("R2: ", in_the_way,
                                            " still running an in-tree kube-controller-manager; a "
                                            "node is finalized only when none is left")});
    }
  }

  if (from == NodeState::kMigrated && to == NodeState::kPrepared) {
    // R2 read backwards: while a finalized cloud-controller-manager runs the cloud controllers
    // without Leader Migration, a prepared kube-controller-manager taking the migration lease would
    // run them beside it. Finalized nodes go back to migrated first.
    if (std::string finalized = Subject(
            nodes, index, [](const NodeStatus& n) { return n.state == NodeState::kFinalized; },
            "is", "are");
        !finalized.empty()) {
      refusals.push_back(
          Refusal{true, Text("R2: ", finalized,
                             " finalized (Leader Migration off); move it back to "
                             "migrated before node ",
                             node.name, " runs an in-tree kube-controller-manager again")});
    }
  }

  // The downtime path's rules (rollout_engine.h, D1-D4).
  if (from == NodeState::kStopped && to == NodeState::kExternal) {
    // D1: the AWS procedure stops every kube-controller-manager before any control-plane flag
    // changes; an in-tree manager still running would keep the cloud controllers going while
    // the nodes around it turn external.
    auto running_in_tree = [](const NodeStatus& n) {
      return n.state == NodeState::kInTree || n.state == NodeState::kPrepared ||
             n.state == NodeState::kMigrated;
    };
    if (std::string in_the_way = NamesWithStates(nodes, index, running_in_tree);
        !in_the_way.empty()) {
      refusals.push_back(Refusal{true, Text("D1: ", in_the_way,
                                            " not stopped; every kube-controller-manager is "
                                            "stopped before node ",
                                            node.name, " switches to external")});
    }
  }
  if (from == NodeState::kExternal && to == NodeState::kFinalized) {
    // D2: a stopped node's parked manager is in-tree; the cloud-controller-manager starts only
    // once every node has switched, so that none can come back beside it.
    if (std::string stopped = Subject(
            nodes, index, [](const NodeStatus& n) { return n.state == NodeState::kStopped; },
            "is", "are");
        !stopped.empty()) {
      refusals.push_back(Refusal{true, Text("D2: ", stopped,
                                            " stopped (its parked kube-controller-manager is "
                                            "in-tree); every node is external before a "
                                            "cloud-controller-manager starts on ",
                                            node.name)});
    }
  }
  if (from == NodeState::kExternal && to == NodeState::kStopped) {
    // D3: parking the in-tree manager again prepares its return; no cloud-controller-manager
    // may be running then.
    if (std::string finalized = Subject(
            nodes, index, [](const NodeStatus& n) { return RunsCloudControllerManager(n.state); },
            "still runs", "still run");
        !finalized.empty()) {
      refusals.push_back(Refusal{true, Text("D3: ", finalized,
                                            " a cloud-controller-manager; every one is removed "
                                            "before node ",
                                            node.name, " goes back to stopped")});
    }
  }
  if (from == NodeState::kStopped && to == NodeState::kInTree) {
    // D4: the in-tree managers return together, after every node has gone back to stopped.
    if (std::string external = Subject(
            nodes, index, [](const NodeStatus& n) { return n.state == NodeState::kExternal; },
            "is", "are");
        !external.empty()) {
      refusals.push_back(Refusal{true, Text("D4: ", external,
                                            " external; every node is stopped before node ",
                                            node.name, " runs its in-tree manager again")});
    }
  }

  if (to == NodeState::kInTree) {
    // R3: an in-tree kube-controller-manager without Leader Migration would run the cloud
    // controllers beside any cloud-controller-manager.
    auto runs_ccm = [](const NodeStatus& n) { return RunsCloudControllerManager(n.state); };
    if (std::string in_the_way = NamesWithStates(nodes, index, runs_ccm); !in_the_way.empty()) {
      refusals.push_back(
          Refusal{true, Text("R3: ", in_the_way, " still running a cloud-controller-manager; node ",
                             node.name, " returns to in-tree only when none is left")});
    }
  }

  // W2: an external kubelet's Node is initialized (providerID, the uninitialized taint lifted)
  // and kept by the cloud-controller-manager's node controllers alone; the last one stays while
  // any worker is external.
  if (facts.external_workers > 0 && RunsCloudControllerManager(from) &&
      !RunsCloudControllerManager(to)) {
    bool another = false;
    for (std::size_t i = 0; i < nodes.size(); ++i) {
      another = another || (i != index && RunsCloudControllerManager(nodes[i].state));
    }
    if (!another) {
      refusals.push_back(Refusal{
          true, Text("W2: ", facts.external_workers,
                     facts.external_workers == 1 ? " worker's kubelet is" : " workers' kubelets are",
                     " external; node ", node.name,
                     " keeps the last cloud-controller-manager until every worker is back in-tree")});
    }
  }

  // R4: once a node is migrated, its cloud-controller-manager competes for the migration lease,
  // and the next manager restarts only while a healthy manager holds it (the migrated controllers
  // run somewhere). Finalized nodes no longer take part, so the first finalized → migrated move of
  // an all-finalized cluster, where nobody can hold the lease, is not held back.
  if (!facts.lease_held_by_healthy_manager) {
    if (std::string lease_users = Subject(
            nodes, index, [](const NodeStatus& n) { return n.state == NodeState::kMigrated; }, "is",
            "are");
        !lease_users.empty()) {
      refusals.push_back(
          Refusal{false, Text("R4: the migration lease is not held by a healthy manager while ",
                              lease_users, " migrated; waiting for a holder")});
    }
  }
  return refusals;
}

std::optional<std::size_t> FindNode(const std::vector<NodeStatus>& nodes, const std::string& name) {
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    if (nodes[i].name == name) return i;
  }
  return std::nullopt;
}

struct PlannedMove {
  std::size_t index;
  NodeState to;
};

// How late in its phase a node moves (see NextStep in the header): 2 when a lease it holds makes
// one of its managers run the cloud controllers (the migration lease; the kube-controller-
// manager's main lease on an in-tree node; the cloud-controller-manager's on a finalized node,
// both without Leader Migration), 1 when it holds another lease, 0 when it holds none.
int HolderRank(const NodeStatus& node, const LeaseHolders& holders) {
  const bool kcm = node.name == holders.kube_controller_manager;
  const bool ccm = node.name == holders.cloud_controller_manager;
  if (node.name == holders.migration || (kcm && node.state == NodeState::kInTree) ||
      (ccm && node.state == NodeState::kFinalized)) {
    return 2;
  }
  return kcm || ccm ? 1 : 0;
}

// The node in `from` that moves first: the lowest holder rank, then node order (forward moves)
// or reverse node order (backward moves).
std::optional<PlannedMove> FirstIn(const std::vector<NodeStatus>& nodes, NodeState from,
                                   NodeState to, const LeaseHolders& holders) {
  const bool forward = IsForward(from, to);
  std::optional<std::size_t> best;
  int best_rank = 0;
  for (std::size_t k = 0; k < nodes.size(); ++k) {
    const std::size_t i = forward ? k : nodes.size() - 1 - k;
    if (nodes[i].state != from) continue;
    const int rank = HolderRank(nodes[i], holders);
    if (!best || rank < best_rank) {
      best = i;
      best_rank = rank;
    }
  }
  if (!best) return std::nullopt;
  return PlannedMove{*best, to};
}

// The move the plan for `goal` wants next, by phases; each phase takes its nodes one at a time,
// holders last (FirstIn). All nodes are consistent.
//
// Every goal first prepares in-tree nodes. In a safe cluster there is no in-tree node once any
// node is migrated or finalized, so this only matters for a kMigrated/kFinalized goal from the
// start, and it repairs an unsafe cluster (an in-tree node beside a cloud-controller-manager) by
// the one move that no rule can refuse.
//  kMigrated:  in-tree → prepared; finalized → migrated (a safe walk back: Leader Migration is
//              re-enabled on that node's cloud-controller-manager); prepared → migrated.
//  kFinalized: in-tree → prepared; prepared → migrated; migrated → finalized.
//  kPrepared:  in-tree → prepared; finalized → migrated; migrated → prepared.
//  kInTree:    as kPrepared while any node is migrated or finalized; then prepared → in-tree.
struct MovePhase {
  NodeState from;
  NodeState to;
};

// The first move of the first phase that has a node to move.
std::optional<PlannedMove> FirstOf(const std::vector<NodeStatus>& nodes,
                                   const LeaseHolders& holders,
                                   std::initializer_list<MovePhase> phases) {
  for (const MovePhase& phase : phases) {
    if (std::optional<PlannedMove> move = FirstIn(nodes, phase.from, phase.to, holders)) {
      return move;
    }
  }
  return std::nullopt;
}

// The downtime strategy's phases (rollout_engine.h).
std::optional<PlannedMove> PlanDowntime(const std::vector<NodeStatus>& nodes, NodeState goal,
                                        const LeaseHolders& holders) {
  using S = NodeState;
  if (goal == S::kFinalized) {
    return FirstOf(nodes, holders,
                   {{S::kInTree, S::kStopped}, {S::kStopped, S::kExternal},
                    {S::kExternal, S::kFinalized}});
  }
  if (goal == S::kInTree) {
    return FirstOf(nodes, holders,
                   {{S::kFinalized, S::kExternal}, {S::kExternal, S::kStopped},
                    {S::kStopped, S::kInTree}});
  }
  return std::nullopt;
}

std::optional<PlannedMove> Plan(const std::vector<NodeStatus>& nodes, NodeState goal,
                                const LeaseHolders& holders) {
  using S = NodeState;
  switch (goal) {
    case S::kMigrated:
      // Last, a node that joined external (kubeadm's configuration during the move: its
      // kube-controller-manager external, no cloud-controller-manager) gets its
      // cloud-controller-manager with Leader Migration.
      return FirstOf(nodes, holders,
                     {{S::kInTree, S::kPrepared},
                      {S::kFinalized, S::kMigrated},
                      {S::kPrepared, S::kMigrated},
                      {S::kExternal, S::kMigrated}});
    case S::kFinalized:
      // Last, a node that joined external (kubeadm's configuration after the move: its
      // kube-controller-manager external, no cloud-controller-manager) gets its
      // cloud-controller-manager once no in-tree manager is left (R2, D2).
      return FirstOf(nodes, holders,
                     {{S::kInTree, S::kPrepared},
                      {S::kPrepared, S::kMigrated},
                      {S::kMigrated, S::kFinalized},
                      {S::kExternal, S::kFinalized}});
    case S::kPrepared:
    case S::kInTree: {
      bool any_ccm = false;
      for (const NodeStatus& n : nodes) any_ccm = any_ccm || RunsCloudControllerManager(n.state);
      if (goal == S::kInTree && !any_ccm) {
        return FirstOf(nodes, holders, {{S::kPrepared, S::kInTree}});
      }
      return FirstOf(nodes, holders,
                     {{S::kInTree, S::kPrepared},
                      {S::kFinalized, S::kMigrated},
                      {S::kMigrated, S::kPrepared}});
    }
    case S::kInconsistent:
    case S::kStopped:
    case S::kExternal:
      break;
  }
  return std::nullopt;
}

// Why `goal` cannot be reached with its strategy from where the nodes are (a node on the other
// strategy's own states, or a goal the strategy does not have); "" when it can.
std::string StrategyObstacle(const std::vector<NodeStatus>& nodes, const Goal& goal) {
  if (goal.strategy == Strategy::kDowntime) {
    if (goal.target != NodeState::kFinalized && goal.target != NodeState::kInTree) {
      return Text("the downtime strategy goes to finalized or back to in-tree, not to ",
                  NodeStateName(goal.target));
    }
    std::string leader_migration = NamesWithStates(nodes, kNoNode, [](const NodeStatus& n) {
      return n.state == NodeState::kPrepared || n.state == NodeState::kMigrated;
    });
    if (!leader_migration.empty()) {
      return Text(leader_migration,
                  " on the Leader Migration path; the downtime strategy moves nodes between "
                  "in-tree, stopped, external and finalized: roll them back to in-tree first, or "
                  "go on with Leader Migration");
    }
    return "";
  }
  // An external node migrates or finalizes on the way to those goals (Plan); on the way back it
  // has no in-tree kube-controller-manager to return to that the rollout knows of.
  const bool forward = goal.target == NodeState::kMigrated || goal.target == NodeState::kFinalized;
  if (!forward) {
    std::string external = NamesWithStates(
        nodes, kNoNode, [](const NodeStatus& n) { return n.state == NodeState::kExternal; });
    if (!external.empty()) {
      return Text(external,
                  " runs an external kube-controller-manager and no cloud-controller-manager; "
                  "Leader Migration brings such a node forward only (a node kubeadm joined with "
                  "the external configuration has no in-tree manager to go back to): remove it "
                  "(handoffctl nodes remove) or replace it with a node of the old version "
                  "(rollback --strategy replace)");
    }
  }
  std::string downtime = NamesWithStates(nodes, kNoNode, [&](const NodeStatus& n) {
    return IsDowntimeState(n.state) && !(forward && n.state == NodeState::kExternal);
  });
  if (!downtime.empty()) {
    return Text(downtime,
                " on the downtime path; only the downtime strategy moves such a node (handoffctl "
                "start --strategy downtime, or rollback --to in-tree of a downtime rollout)");
  }
  if (IsDowntimeState(goal.target)) {
    return Text(NodeStateName(goal.target), " is a state of the downtime path, not a goal");
  }
  return "";
}

Decision MakeDecision(Decision::Kind kind, std::string reason) {
  Decision decision;
  decision.kind = kind;
  decision.reason = std::move(reason);
  return decision;
}

}  // namespace

std::optional<Decision> GeneralObstacle(const std::vector<NodeStatus>& nodes,
                                        const Control& control) {
  std::optional<Refusal> refusal = GeneralRefusal(nodes, control);
  if (!refusal) return std::nullopt;
  return MakeDecision(refusal->needs_operator ? Decision::Kind::kStuck : Decision::Kind::kWait,
                      std::move(refusal->message));
}

Decision TryMove(const std::vector<NodeStatus>& nodes, const std::string& node, NodeState to,
                 const ClusterFacts& facts, const Control& control) {
  using Kind = Decision::Kind;
  if (absl::Status names = ValidateNames(nodes); !names.ok()) {
    return MakeDecision(Kind::kStuck, std::string(names.message()));
  }
  std::optional<std::size_t> index = FindNode(nodes, node);
  if (!index || to == NodeState::kInconsistent) {
    return MakeDecision(Kind::kStuck, Text("no move of node ", node, " to ", NodeStateName(to)));
  }
  if (std::optional<Decision> obstacle = GeneralObstacle(nodes, control)) return *obstacle;
  const NodeStatus& moving = nodes[*index];
  std::vector<Refusal> refusals = MoveRefusals(nodes, *index, to, facts);
  if (refusals.empty()) {
    Decision move;
    move.kind = Kind::kMove;
    move.node = moving.name;
    move.to = to;
    move.reason =
        Text("node ", moving.name, ": ", NodeStateName(moving.state), " → ", NodeStateName(to));
    return move;
  }
  // What the operator must fix is reported before what will pass by itself.
  bool needs_operator = false;
  for (const Refusal& r : refusals) needs_operator = needs_operator || r.needs_operator;
  std::vector<std::string> reasons;
  for (Refusal& r : refusals) {
    if (r.needs_operator == needs_operator) reasons.push_back(std::move(r.message));
  }
  return MakeDecision(needs_operator ? Kind::kStuck : Kind::kWait,
                      Text("to move node ", moving.name, " from ", NodeStateName(moving.state),
                           " to ", NodeStateName(to), ": ", StrJoin(reasons, "; ")));
}

int LeaseHolderRank(const NodeStatus& node, const LeaseHolders& holders) {
  return HolderRank(node, holders);
}

absl::Status CheckMove(const std::vector<NodeStatus>& nodes, const std::string& node, NodeState to,
                       const ClusterFacts& facts, const Control& control) {
  if (absl::Status names = ValidateNames(nodes); !names.ok()) return names;
  std::optional<std::size_t> index = FindNode(nodes, node);
  if (!index) return absl::NotFoundError(StrCat("no node named ", node, " is known"));
  if (to == NodeState::kInconsistent) {
    return absl::InvalidArgumentError("inconsistent is not a state a node can be moved to");
  }
  if (std::optional<Refusal> refusal = GeneralRefusal(nodes, control)) {
    return absl::FailedPreconditionError(refusal->message);
  }
  std::vector<Refusal> refusals = MoveRefusals(nodes, *index, to, facts);
  if (!refusals.empty()) return absl::FailedPreconditionError(refusals.front().message);
  return absl::OkStatus();
}

Decision NextStep(const std::vector<NodeStatus>& nodes, const Goal& goal, const ClusterFacts& facts,
                  const Control& control) {
  using Kind = Decision::Kind;
  if (nodes.empty()) return MakeDecision(Kind::kStuck, "no control-plane nodes are known");
  if (absl::Status names = ValidateNames(nodes); !names.ok()) {
    return MakeDecision(Kind::kStuck, std::string(names.message()));
  }
  if (goal.target == NodeState::kInconsistent) {
    return MakeDecision(Kind::kStuck, "the goal is not a node state");
  }
  // After a coordinator restart the states are what the agents said before; any node may have
  // changed since, so neither the rules nor "done" can be judged until each agent says hello.
  if (std::string awaiting = NamesOf(nodes, [](const NodeStatus& n) { return n.awaiting_hello; });
      !awaiting.empty()) {
    return MakeDecision(Kind::kWait, Text("waiting for the agents of ", awaiting,
                                          " to report their nodes' state before anything moves"));
  }

  // Done is a fact about the nodes, so it holds even when halted or paused; a node in transition
  // may already have left the goal, so it is not done until its result is in.
  bool done = true;
  for (const NodeStatus& n : nodes) done = done && n.state == goal.target && !n.in_transition;
  if (done) {
    return MakeDecision(Kind::kDone, StrCat("every node is ", NodeStateName(goal.target)));
  }

  // Halted (R5) and paused come first: they stop everything whatever else is true. Then R4's
  // transition: until the outstanding result is in, nothing else can be judged.
  if (std::optional<Refusal> refusal = GeneralRefusal(nodes, control)) {
    return MakeDecision(refusal->needs_operator ? Kind::kStuck : Kind::kWait,
                        std::move(refusal->message));
  }

  if (std::string obstacle = StrategyObstacle(nodes, goal); !obstacle.empty()) {
    return MakeDecision(Kind::kStuck, std::move(obstacle));
  }
  std::optional<PlannedMove> planned = goal.strategy == Strategy::kDowntime
                                           ? PlanDowntime(nodes, goal.target, facts.holders)
                                           : Plan(nodes, goal.target, facts.holders);
  if (!planned) {
    // Unreachable: every node is consistent and some node is not at the goal, and every goal's
    // phases cover every other state.
    return MakeDecision(Kind::kStuck, StrCat("no move leads towards ", NodeStateName(goal.target)));
  }
  const NodeStatus& moving = nodes[planned->index];
  Decision decision = TryMove(nodes, moving.name, planned->to, facts, control);
  if (decision.kind == Kind::kMove) {
    StrAppend(&decision.reason, " towards ", NodeStateName(goal.target));
    assert(CheckMove(nodes, decision.node, decision.to, facts, control).ok());
  }
  return decision;
}

}  // namespace handoff::rollout
