// The rollout engine: from the nodes' states, the rollout's goal and what is known of the
// cluster, the next safe step of a rolling move — or why it must wait. Pure: no I/O, no clock;
// the coordinator feeds it and carries out what it returns.
//
// The safety rules it enforces (README "Rollout rules"; Kubernetes' Leader Migration guide):
//  R1 no node becomes migrated unless every other node that is not migrated/finalized is
//     prepared (or external: it runs no cloud controllers), connected and verified healthy,
//     and the migration-lease RBAC is in place;
//  R2 no node becomes finalized while any node is in-tree or prepared;
//  R3 no node returns to in-tree while any node is migrated or finalized;
//  R4 at most one node is in transition at a time; the next node moves only after the previous
//     one is verified and, once any node is migrated, while the migration lease is held by a
//     healthy manager;
//  R5 the first failure halts the rollout (the agent has already rolled its node back); only the
//     operator resumes it.
// And with the workers (worker_rollout.h says W1 and W3):
//  W2 the control plane leaves its last cloud-controller-manager (its last node migrated or
//     finalized) only when no worker's kubelet is external: an external kubelet's Node is
//     initialized and kept by the cloud-controller-manager alone.
//
// How they are read (rollout_engine.cc says why at each check):
//  - every move needs: not halted (R5); not paused; no long gap of the cloud controllers
//    (Control::no_runner); no node in transition (R4); every node
//    consistent (an inconsistent node's state is unknown, so no rule can be judged); every node
//    verified healthy (R4); the moving node's agent connected; and one step along the chain;
//  - R1 governs every move to migrated, finalized → migrated included (it re-enables Leader
//    Migration, so the lease RBAC must be in place again);
//  - R2 also forbids migrated → prepared while any node is finalized: a finalized CCM runs the
//    cloud controllers without Leader Migration, a prepared KCM holding the lease would too;
//  - R4's lease: any move while another node is migrated (its CCM competes for the migration
//    lease) needs facts.lease_held_by_healthy_manager. Finalized nodes do not take part, so the
//    first CCM, the last finalize and the first walk back from an all-finalized cluster need none.
#ifndef HANDOFF_COORDINATOR_ROLLOUT_ROLLOUT_ENGINE_H_
#define HANDOFF_COORDINATOR_ROLLOUT_ROLLOUT_ENGINE_H_

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "proto/vocabulary/node_state.h"
#include "proto/vocabulary/strategy.h"

namespace handoff::rollout {

// One control-plane node as the coordinator knows it: the one shape the engine, the plan
// simulation (plan_simulation.h) and the preflight (preflight.h) read. The coordinator builds it
// from its own record of the node once per event. It stays apart from that record
// (RolloutController::Node) so that the engine stays pure: no stream, store or clock in it.
struct NodeStatus {
  std::string name;
  NodeState state = NodeState::kInconsistent;  // as last reported by its agent
  bool connected = false;                      // its agent holds a stream to the coordinator
  bool healthy = false;                        // its last move (or report) was verified healthy
  bool in_transition = false;                  // a move was sent and no result has come back
  // Its agent has not said hello since the coordinator started: `state` is only what the agent
  // said before, and the node may have changed since. Nothing moves until no node awaits it.
  bool awaiting_hello = false;
  // From its agent's last report; only the preflight reads them. (Initialised, so that the
  // engine's tests may write a node as {name, state, connected, healthy}.)
  std::string kube_controller_manager_version{};  // "v1.26.9", "" when not known
  std::vector<std::string> unfinished_transactions{};
};

// Where the operator wants the control plane. Forward: kMigrated ("start"), then kFinalized
// ("finalize"). Backward ("rollback --to"): kPrepared or kInTree.
// How the nodes get there (proto/vocabulary/strategy.h): the engine moves along the path of
// kLeaderMigration or kDowntime; a replacement's nodes go by Leader Migration (PathOf).
using ::handoff::Strategy;

struct Goal {
  NodeState target = NodeState::kMigrated;
  Strategy strategy = Strategy::kLeaderMigration;
};

// The nodes whose managers hold the leases of the move now ("" for a lease nobody validly holds,
// or whose holder runs on no node of the rollout). Only the order of moves depends on them.
struct LeaseHolders {
  std::string migration;                 // kube-system/cloud-provider-extraction-migration
  std::string kube_controller_manager;   // the kube-controller-manager's main lease
  std::string cloud_controller_manager;  // the cloud-controller-manager's main lease
};

// What the coordinator knows of the cluster besides the nodes.
struct ClusterFacts {
  bool rbac_ready = false;                     // both managers may use the migration lease
  bool lease_held_by_healthy_manager = false;  // a valid holder, whose node is healthy
  LeaseHolders holders;
  // Workers whose kubelet is external, or on its way there (worker_rollout.h). W2: while there
  // is one, the control plane keeps a cloud-controller-manager.
  std::size_t external_workers = 0;
};

struct Control {
  bool paused = false;  // operator paused: finish nothing new
  bool halted = false;  // a move failed (R5) or the operator aborted
  std::string halt_reason;
  // The live double-run detector's long gap while it lasts: the cloud controllers no manager has
  // run for longer than its limit, and since when ("service since 01:10:31 UTC"); "" when none.
  // No move starts until a manager runs them again (kWait): a move restarts managers, and none
  // is to restart while none runs them. (A double run halts instead: R5.)
  std::string no_runner{};
};

struct Decision {
  enum class Kind {
    kMove,  // send `node` a move to `to`
    kWait,  // nothing may move now; `reason` says why (e.g. a node in transition, disconnected)
    kDone,  // every node is at the goal
    kStuck  // the goal cannot be reached without the operator; `reason` says what is needed
  };
  Kind kind = Kind::kWait;
  std::string node;
  NodeState to = NodeState::kInconsistent;
  std::string reason;
};

// The next step towards `goal`. Nodes are moved in the order given (the coordinator's node
// order: moving back walks the reverse). Each move goes one state along the chain
// in-tree ⇄ prepared ⇄ migrated ⇄ finalized. A forward goal first brings every node to prepared
// ("prepare all"), then migrates them one by one; finalized only on an explicit kFinalized goal.
// A backward goal walks nodes back one by one to prepared, then (for kInTree) to in-tree.
// Never returns a move that CheckMove would refuse.
//
// The phases of each goal, in order; each moves one node at a time:
//   kMigrated:  in-tree → prepared; finalized → migrated; prepared → migrated; external →
//               migrated (a node kubeadm joined with the external configuration: the agent adds
//               the cloud-controller-manager with Leader Migration).
//   kFinalized: in-tree → prepared; prepared → migrated; migrated → finalized; external →
//               finalized (a node that joined with kubeadm's configuration after the move).
//   kPrepared:  in-tree → prepared; finalized → migrated; migrated → prepared.
//   kInTree:    as kPrepared while any node is migrated or finalized; then prepared → in-tree.
// Within a phase, holders last (facts.holders): first the nodes that hold none of the three
// leases, then those holding a lease that does not make them run the cloud controllers, last the
// node whose manager runs them (the migration lease's holder; without Leader Migration, the
// holder of the kube-controller-manager's lease on an in-tree node or of the
// cloud-controller-manager's on a finalized one). A move restarts managers, and a restarted
// holder hands its lease to a successor; moved last, the runner's successor is a node the phase
// has already moved, so the phase hands the cloud controllers over at most once. Ties (and all
// nodes when no holder is known) go in node order for forward moves and reverse node order for
// backward moves.
// The downtime strategy (AWS's "when downtime is acceptable") goes phase by phase too, every
// node through a phase before any node starts the next:
//   kFinalized: in-tree → stopped (every kube-controller-manager parked); stopped → external;
//               external → finalized (the cloud-controller-manager started).
//   kInTree:    finalized → external (every cloud-controller-manager removed); external →
//               stopped; stopped → in-tree.
// Its rules (the D rules; CheckMove enforces them whatever the strategy):
//  D1 no node becomes external while any kube-controller-manager still runs in-tree (a node
//     in-tree, prepared or migrated): every one is stopped first;
//  D2 no cloud-controller-manager starts without Leader Migration (external → finalized) while a
//     node is stopped: its parked in-tree manager could return;
//  D3 no node parks its in-tree manager again (external → stopped) while any node is finalized;
//  D4 no node returns to in-tree from stopped while any node is external (besides R3).
// A node on the other strategy's own states (prepared or migrated for the downtime strategy,
// stopped or external for Leader Migration, except external on the way to migrated or
// finalized) makes the goal kStuck, naming it and what the operator can do.
// The order is strict: a blocked move is waited for, never skipped.
// First of all: while any node awaits its agent's hello → kWait, naming those nodes (their states
// may be stale, so not even kDone can be judged).
// kDone: every node is at the goal and none is in transition (even when halted or paused).
// Otherwise, first: halted → kStuck; paused → kWait; a long gap (Control::no_runner) → kWait; a
// node in transition → kWait; an
// inconsistent or unhealthy node → kStuck. Then the planned move's obstacles: kStuck when any
// needs the operator (missing RBAC, a node in the way of R1–R3), listing those; else kWait (an
// agent disconnected, the lease without a healthy holder), listing those. `node` and `to` are set
// for kMove only; `reason` always says why, naming the rule and the nodes.
Decision NextStep(const std::vector<NodeStatus>& nodes, const Goal& goal, const ClusterFacts& facts,
                  const Control& control);

// Whether moving `node` to `to` now is allowed by R1–R5 (and adjacency); OK or
// FailedPrecondition naming the rule and the nodes in the way. The coordinator checks every move
// with this just before sending it, whatever chose it. It does not read awaiting_hello: that
// holds back the choice of a new move (NextStep), while a move recorded before a restart is
// settled, and may be sent again, on its own node's hello.
// The message starts with what refuses it: "R1:" … "R5:", "D1:" … "D4:", "W2:", "paused:",
// "inconsistent:",
// "disconnected:" or "not one step:". An unknown node is NotFound; a target of kInconsistent or
// node names that are empty or not unique are InvalidArgument.
absl::Status CheckMove(const std::vector<NodeStatus>& nodes, const std::string& node, NodeState to,
                       const ClusterFacts& facts, const Control& control);

// The conditions every move needs, whichever node moves (halted, paused, a long gap, a node in
// transition, an inconsistent or unhealthy node): kStuck or kWait saying which fails first;
// nullopt when they hold. What NextStep checks before it plans; the replacement planner
// (replacement.h) checks it before asking for a join or a removal too.
std::optional<Decision> GeneralObstacle(const std::vector<NodeStatus>& nodes,
                                        const Control& control);

// Moving `node` to `to` now, as NextStep would judge its own planned move: kMove (the move),
// kStuck (an obstacle only the operator clears, every such one named) or kWait (obstacles that
// pass by themselves). For planners that choose the node and the state themselves
// (replacement.h); never a move CheckMove would refuse.
Decision TryMove(const std::vector<NodeStatus>& nodes, const std::string& node, NodeState to,
                 const ClusterFacts& facts, const Control& control);

// How late in a phase `node` moves (see NextStep): 0 when it holds none of the leases, 1 when it
// holds one that does not make it run the cloud controllers, 2 for the node whose manager runs
// them.
int LeaseHolderRank(const NodeStatus& node, const LeaseHolders& holders);

}  // namespace handoff::rollout

#endif  // HANDOFF_COORDINATOR_ROLLOUT_ROLLOUT_ENGINE_H_
