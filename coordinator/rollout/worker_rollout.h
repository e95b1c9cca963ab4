// The workers' part of a rollout: every Node without the control-plane role, whose kubelet its
// agent (the worker role) moves in-tree ⇄ external. Pure: no I/O, no clock; the coordinator feeds
// it the workers as it knows them and carries out the batch it returns.
//
// The rules beside R1–R5 and D1–D4 (rollout_engine.h, which enforces W2):
//  W1 a worker's kubelet goes external only while a cloud-controller-manager runs for the
//     cluster: some control-plane node migrated or finalized (on the downtime path, finalized:
//     its external nodes run none until then). An external kubelet's Node is initialized and
//     kept by the cloud-controller-manager alone.
//  W2 the control plane leaves its last such node only when no worker is external.
//  W3 the cluster may be upgraded to 1.27 only when every kubelet is external (a 1.27 kubelet
//     refuses --cloud-provider=aws), every manager too (every control-plane node finalized), every
//     Node keeps its providerID and none is left uninitialized (UpgradeGate).
//  W4 at most max-unavailable workers move at once, a batch spread over the zones.
//  W5 once `failure_budget` workers have failed (each agent rolled its node back), no worker
//     starts until the operator resumes; each failure is named with its reason.
// And how the two parts take turns (NextFleetStep): a forward goal moves the control plane first
// and the workers once it is at its goal; a backward goal brings every worker back first; the
// control plane moves only while no worker is in transition, and workers only while no
// control-plane node is.
#ifndef HANDOFF_COORDINATOR_ROLLOUT_WORKER_ROLLOUT_H_
#define HANDOFF_COORDINATOR_ROLLOUT_WORKER_ROLLOUT_H_

#include <cstddef>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "coordinator/rollout/rollout_engine.h"
#include "proto/vocabulary/node_state.h"

namespace handoff::rollout {

// One worker as the coordinator knows it.
struct WorkerStatus {
  std::string name;
  std::string zone;  // its Node's topology.kubernetes.io/zone; "" when it has none
  // As its agent last reported it: kInTree, kExternal, or kInconsistent (the agent's classify
  // found it neither); kInconsistent too for a worker whose agent never said hello.
  NodeState state = NodeState::kInconsistent;
  bool has_agent = false;   // an agent said hello for this Node at least once
  bool connected = false;   // its agent holds a stream now
  bool in_transition = false;
  // Its last move failed and its agent rolled it back: why. A failed worker is not retried until
  // the operator resumes (which clears it).
  std::string failure{};
  // A replacement asked it to leave (worker_replacement.h): it is no longer moved or counted as
  // serving, and it is out once its agent is away and the API server lists no Node of its name.
  bool leaving = false;
  // A worker at the goal's state that a replacement cannot count as serving yet: why ("its Node
  // has no providerID"); "" when it is verified, or its state is not the goal's.
  std::string unverified{};
};

// --max-unavailable: a number of workers, or a percentage of them.
struct MaxUnavailable {
  int value = 1;
  bool percent = false;
};
// "3" or "10%": a whole number, at least 1 (a percentage at most 100). InvalidArgument naming the
// flag and the value otherwise.
absl::StatusOr<MaxUnavailable> ParseMaxUnavailable(std::string_view text);
// How many of `workers` may move at once: the number, or the percentage rounded down; at least 1.
std::size_t AllowedInFlight(const MaxUnavailable& max_unavailable, std::size_t workers);
// "3", "10%".
std::string FormatMaxUnavailable(const MaxUnavailable& max_unavailable);

struct WorkerPolicy {
  MaxUnavailable max_unavailable;
  // W5: failed workers that pause the rollout; at least 1.
  int failure_budget = 1;
};

// W1: some control-plane node runs a cloud-controller-manager (migrated or finalized).
bool CloudControllerManagerRuns(const std::vector<NodeStatus>& control_plane);

// Where the workers go for `goal`: external for a forward goal (kMigrated, kFinalized), in-tree
// for a backward one (kPrepared, kInTree).
NodeState WorkerTarget(NodeState goal);

// How many workers count as external for W2: external, or in transition (either way).
std::size_t ExternalWorkers(const std::vector<WorkerStatus>& workers);

struct WorkerDecision {
  // kRetire: a replacement asks `nodes` to leave (worker_replacement.h).
  enum class Kind { kMove, kRetire, kWait, kDone, kStuck };
  Kind kind = Kind::kWait;
  std::vector<std::string> nodes;  // kMove: the workers to start now; kRetire: to ask to leave
  NodeState to = NodeState::kInconsistent;
  std::string reason;  // always: what it does or why not, naming the rule and the workers
  // A replacement's (worker_replacement.h): how many new workers it waits for now, and how many
  // workers of the version it replaces are left (asked to leave or not).
  std::size_t joins_wanted = 0;
  std::size_t old_left = 0;
};

// The next batch towards `goal`, for the workers alone (the control plane as it stands):
// kDone when every worker is at WorkerTarget(goal) and none is in transition (an empty fleet
// included). Otherwise, in order: halted → kStuck; paused → kWait; W5 (failures ≥ the budget) →
// kStuck listing each; an inconsistent worker, or one without an agent → kStuck naming them
// (a few, and how many); W1 for a forward goal → kWait; the batch in flight already at
// AllowedInFlight → kWait; no worker left that may start (the rest disconnected, or failed) →
// kWait or kStuck. Else kMove with as many workers as the budget allows (W4), taken zone by zone:
// each next one from the zone with the fewest workers in flight and picked (ties by zone name),
// in the order given within a zone. Workers asked to leave (a replacement's, before the goal
// changed) are neither moved nor judged: the rest done, it waits for them to go.
WorkerDecision NextWorkers(const std::vector<NodeStatus>& control_plane,
                           const std::vector<WorkerStatus>& workers, NodeState goal,
                           const WorkerPolicy& policy, const Control& control);

// Whether starting `worker` towards `to` now is allowed: OK, or FailedPrecondition starting with
// what refuses it ("R5:", "paused:", "not one step:", "disconnected:", "in transition:", "W1:").
// NotFound for an unknown worker. The coordinator checks every worker move with it before
// sending it.
absl::Status CheckWorkerMove(const std::vector<NodeStatus>& control_plane,
                             const std::vector<WorkerStatus>& workers, const std::string& worker,
                             NodeState to, const Control& control);

// Which part of the cluster moves next.
struct FleetDecision {
  enum class Part { kControlPlane, kWorkers, kNeither };
  Part part = Part::kNeither;
  Decision control_plane;  // the control plane's NextStep (with the workers in its facts)
  WorkerDecision workers;
  bool done = false;   // both parts at the goal
  std::string reason;  // the deciding part's reason
};

// The turns for a control-plane decision already made (NextStep's, or the replacement planner's,
// judged with ExternalWorkers(workers) in its facts): NextFleetStep after its NextStep.
FleetDecision CombineFleet(Decision control_plane_decision,
                           const std::vector<NodeStatus>& control_plane,
                           const std::vector<WorkerStatus>& workers, NodeState goal,
                           const WorkerPolicy& policy, const Control& control);
// The same with the workers' decision made too (NextWorkers's, or NextWorkerReplacement's): a
// kRetire takes its turn as a kMove does.
FleetDecision CombineFleet(Decision control_plane_decision, WorkerDecision workers_decision,
                           const std::vector<NodeStatus>& control_plane,
                           const std::vector<WorkerStatus>& workers, NodeState goal);

// The fleet's next step (the turns in this header's first comment): `facts.external_workers` is
// set from `workers` before the control plane is judged.
FleetDecision NextFleetStep(const std::vector<NodeStatus>& control_plane,
                            const std::vector<WorkerStatus>& workers, const Goal& goal,
                            ClusterFacts facts, const WorkerPolicy& policy,
                            const Control& control);

// W3: whether the cluster may now be upgraded to 1.27.
struct UpgradeGate {
  bool open = false;
  std::vector<std::string> reasons;  // why not, one line each; empty when open
};
// `node_problems`: what the Node checks found (a missing or malformed providerID, the
// uninitialized taint), one line each.
UpgradeGate CheckUpgradeGate(const std::vector<NodeStatus>& control_plane,
                             const std::vector<WorkerStatus>& workers,
                             const std::vector<std::string>& node_problems);

// Up to `slots` of `candidates` (zone → workers, in the order given within a zone): each next
// one from the zone with the fewest `taken` (in flight, or leaving, and picked so far; ties by
// zone name). `taken` counts what it picks.
std::vector<std::string> SpreadOverZones(
    const std::map<std::string, std::vector<const WorkerStatus*>>& candidates,
    std::map<std::string, std::size_t>& taken, std::size_t slots);

// "1 worker", "3 workers".
std::string CountOf(std::size_t n, std::string_view one, std::string_view many);
// "a, b, c and 14 more": at most `limit` names, then how many were left out.
std::string FewNames(const std::vector<std::string>& names, std::size_t limit = 5);

}  // namespace handoff::rollout

#endif  // HANDOFF_COORDINATOR_ROLLOUT_WORKER_ROLLOUT_H_
