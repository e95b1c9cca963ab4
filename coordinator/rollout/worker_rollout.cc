#include "coordinator/rollout/worker_rollout.h"

#include <algorithm>
#include <charconv>
#include <map>
#include <utility>

#include "common/base/strings.h"

namespace handoff::rollout {
namespace {

bool Forward(NodeState goal) {
  return goal == NodeState::kMigrated || goal == NodeState::kFinalized;
}

std::vector<std::string> NamesOf(const std::vector<WorkerStatus>& workers,
                                 bool (*pick)(const WorkerStatus&, NodeState), NodeState target) {
  std::vector<std::string> names;
  for (const WorkerStatus& worker : workers) {
    if (pick(worker, target)) names.push_back(worker.name);
  }
  return names;
}

}  // namespace

absl::StatusOr<MaxUnavailable> ParseMaxUnavailable(std::string_view text) {
  MaxUnavailable parsed;
  std::string_view number = text;
  if (!number.empty() && number.back() == '%') {
    parsed.percent = true;
    number.remove_suffix(1);
  }
  int value = 0;
  const auto [end, error] = std::from_chars(number.data(), number.data() + number.size(), value);
  if (number.empty() || error != std::errc() || end != number.data() + number.size() ||
      value < 1 || (parsed.percent && value > 100)) {
    return absl::InvalidArgumentError(
        StrCat("--max-unavailable \"", text, "\": give a number of workers of at least 1 (\"3\") "
               "or a percentage of them from 1% to 100% (\"10%\")"));
  }
  parsed.value = value;
  return parsed;
}

std::size_t AllowedInFlight(const MaxUnavailable& max_unavailable, std::size_t workers) {
  const std::size_t allowed =
      max_unavailable.percent
          ? workers * static_cast<std::size_t>(max_unavailable.value) / 100
          : static_cast<std::size_t>(max_unavailable.value);
  return std::max<std::size_t>(allowed, 1);
}

std::string FormatMaxUnavailable(const MaxUnavailable& max_unavailable) {
  return StrCat(max_unavailable.value, max_unavailable.percent ? "%" : "");
}

bool CloudControllerManagerRuns(const std::vector<NodeStatus>& control_plane) {
  return std::any_of(control_plane.begin(), control_plane.end(),
                     [](const NodeStatus& n) { return RunsCloudControllerManager(n.state); });
}

NodeState WorkerTarget(NodeState goal) {
  return Forward(goal) ? NodeState::kExternal : NodeState::kInTree;
}

std::size_t ExternalWorkers(const std::vector<WorkerStatus>& workers) {
  return static_cast<std::size_t>(
      std::count_if(workers.begin(), workers.end(), [](const WorkerStatus& w) {
        return w.state == NodeState::kExternal || w.in_transition;
      }));
}

std::vector<std::string> SpreadOverZones(
    const std::map<std::string, std::vector<const WorkerStatus*>>& candidates,
    std::map<std::string, std::size_t>& taken, std::size_t slots) {
  std::vector<std::string> picked;
  std::map<std::string, std::size_t> next;  // per zone: the next candidate's index
  while (picked.size() < slots) {
    const std::string* zone = nullptr;
    for (const auto& [name, list] : candidates) {
      if (next[name] >= list.size()) continue;
      if (zone == nullptr || taken[name] < taken[*zone]) zone = &name;
    }
    if (zone == nullptr) break;
    picked.push_back(candidates.at(*zone)[next[*zone]++]->name);
    ++taken[*zone];
  }
  return picked;
}

std::string CountOf(std::size_t n, std::string_view one, std::string_view many) {
  return StrCat(n, " ", n == 1 ? one : many);
}

std::string FewNames(const std::vector<std::string>& names, std::size_t limit) {
  if (names.size() <= limit) return StrJoin(names, ", ");
  std::vector<std::string> shown(names.begin(), names.begin() + static_cast<long>(limit));
  return StrCat(StrJoin(shown, ", "), " and ", names.size() - limit, " more");
}

WorkerDecision NextWorkers(const std::vector<NodeStatus>& control_plane,
                           const std::vector<WorkerStatus>& workers, NodeState goal,
                           const WorkerPolicy& policy, const Control& control) {
  std::vector<std::string> leaving;
  for (const WorkerStatus& worker : workers) {
    if (worker.leaving) leaving.push_back(worker.name);
  }
  if (!leaving.empty()) {
    std::vector<WorkerStatus> staying;
    for (const WorkerStatus& worker : workers) {
      if (!worker.leaving) staying.push_back(worker);
    }
    WorkerDecision decision = NextWorkers(control_plane, staying, goal, policy, control);
    if (decision.kind == WorkerDecision::Kind::kDone) {
      decision.kind = WorkerDecision::Kind::kWait;
      decision.reason = StrCat(decision.reason, "; waiting for ",
                               CountOf(leaving.size(), "worker", "workers"),
                               " asked to leave by the replacement (", FewNames(leaving), ")");
    }
    return decision;
  }
  const NodeState target = WorkerTarget(goal);
  const std::string target_name(NodeStateName(target));
  WorkerDecision decision;
  auto decide = [&](WorkerDecision::Kind kind, std::string reason) {
    decision.kind = kind;
    decision.reason = std::move(reason);
    return decision;
  };
  std::vector<std::string> in_flight;
  std::size_t at_target = 0;
  for (const WorkerStatus& worker : workers) {
    if (worker.in_transition) in_flight.push_back(worker.name);
    if (!worker.in_transition && worker.state == target) ++at_target;
  }
  if (at_target == workers.size()) {
    return decide(WorkerDecision::Kind::kDone,
                  workers.empty() ? "no workers"
                                  : StrCat("every worker is ", target_name, " (", workers.size(),
                                           ")"));
  }
  const std::string progress = StrCat(at_target, " of ", workers.size(), " workers ", target_name);
  if (control.halted) {
    return decide(WorkerDecision::Kind::kStuck,
                  StrCat("R5: the rollout is halted",
                         control.halt_reason.empty() ? "" : StrCat(" (", control.halt_reason, ")"),
                         "; ", progress));
  }
  if (control.paused) {
    return decide(WorkerDecision::Kind::kWait, StrCat("paused: ", progress));
  }
  // W5: what failed stays failed until the operator looks.
  std::vector<std::string> failures;
  for (const WorkerStatus& worker : workers) {
    if (!worker.failure.empty() && !worker.in_transition && worker.state != target) {
      failures.push_back(StrCat(worker.name, " (", worker.failure, ")"));
    }
  }
  if (!failures.empty() &&
      failures.size() >= static_cast<std::size_t>(std::max(policy.failure_budget, 1))) {
    return decide(WorkerDecision::Kind::kStuck,
                  StrCat("W5: ", CountOf(failures.size(), "worker", "workers"),
                         " failed, the failure budget is ", std::max(policy.failure_budget, 1),
                         ": ", FewNames(failures, 10),
                         "; each was rolled back by its agent; fix the cause and resume"));
  }
  const std::vector<std::string> without_agent = NamesOf(
      workers, [](const WorkerStatus& w, NodeState t) { return !w.has_agent && w.state != t; },
      target);
  if (!without_agent.empty()) {
    return decide(WorkerDecision::Kind::kStuck,
                  StrCat(CountOf(without_agent.size(), "worker has", "workers have"),
                         " no agent: their kubelets cannot be moved (", FewNames(without_agent),
                         "); install handoff-agent on them (the DaemonSet, or the package)"));
  }
  const std::vector<std::string> inconsistent = NamesOf(
      workers,
      [](const WorkerStatus& w, NodeState) {
        return !w.in_transition && w.state != NodeState::kInTree &&
               w.state != NodeState::kExternal;
      },
      target);
  if (!inconsistent.empty()) {
    return decide(WorkerDecision::Kind::kStuck,
                  StrCat("inconsistent: ", CountOf(inconsistent.size(), "worker is", "workers are"),
                         " neither in-tree nor external (", FewNames(inconsistent),
                         "); `handoff-agent status --role worker` on each says why"));
  }
  if (target == NodeState::kExternal && !CloudControllerManagerRuns(control_plane)) {
    return decide(WorkerDecision::Kind::kWait,
                  StrCat("W1: no cloud-controller-manager runs for the cluster yet (no "
                         "control-plane node migrated or finalized); the workers' kubelets go "
                         "external after; ",
                         progress));
  }
  const std::size_t allowed = AllowedInFlight(policy.max_unavailable, workers.size());
  if (in_flight.size() >= allowed) {
    return decide(WorkerDecision::Kind::kWait,
                  StrCat("W4: ", in_flight.size(), " of at most ", allowed,
                         " workers in transition (", FewNames(in_flight), "); ", progress));
  }

  // The candidates, by zone, in the order given; and how many are in flight per zone.
  std::map<std::string, std::vector<const WorkerStatus*>> candidates;
  std::map<std::string, std::size_t> taken;
  std::vector<std::string> disconnected;
  for (const WorkerStatus& worker : workers) {
    if (worker.in_transition) {
      ++taken[worker.zone];
      continue;
    }
    if (worker.state == target || !worker.failure.empty()) continue;
    if (!worker.connected) {
      disconnected.push_back(worker.name);
      continue;
    }
    candidates[worker.zone].push_back(&worker);
  }
  decision.nodes = SpreadOverZones(candidates, taken, allowed - in_flight.size());
  if (!decision.nodes.empty()) {
    decision.to = target;
    std::vector<std::string> zones;
    for (const auto& [name, count] : taken) {
      if (count > 0) zones.push_back(StrCat(name.empty() ? "no zone" : name, ": ", count));
    }
    return decide(WorkerDecision::Kind::kMove,
                  StrCat("move ", CountOf(decision.nodes.size(), "worker", "workers"), " to ",
                         target_name, " (", FewNames(decision.nodes), "); in flight by zone: ",
                         StrJoin(zones, ", "), "; ", progress));
  }
  if (!in_flight.empty()) {
    return decide(WorkerDecision::Kind::kWait,
                  StrCat("waiting for ", CountOf(in_flight.size(), "worker", "workers"),
                         " in transition (", FewNames(in_flight), "); ", progress));
  }
  if (!disconnected.empty()) {
    return decide(WorkerDecision::Kind::kWait,
                  StrCat("disconnected: ", CountOf(disconnected.size(), "worker's agent is",
                                                 "workers' agents are"),
                         " not connected (", FewNames(disconnected), "); ", progress));
  }
  return decide(WorkerDecision::Kind::kStuck,
                StrCat("W5: ", FewNames(failures, 10),
                       " failed and no other worker is left to move; fix the cause and resume; ",
                       progress));
}

absl::Status CheckWorkerMove(const std::vector<NodeStatus>& control_plane,
                             const std::vector<WorkerStatus>& workers, const std::string& worker,
                             NodeState to, const Control& control) {
  const auto it = std::find_if(workers.begin(), workers.end(),
                               [&](const WorkerStatus& w) { return w.name == worker; });
  if (it == workers.end()) return absl::NotFoundError(StrCat("no worker is named ", worker));
  auto refuse = [](std::string message) {
    return absl::FailedPreconditionError(std::move(message));
  };
  if (control.halted) {
    return refuse(StrCat("R5: the rollout is halted",
                         control.halt_reason.empty() ? "" : StrCat(" (", control.halt_reason, ")")));
  }
  if (control.paused) return refuse("paused: the rollout is paused");
  const bool one_step = (it->state == NodeState::kInTree && to == NodeState::kExternal) ||
                        (it->state == NodeState::kExternal && to == NodeState::kInTree);
  if (!one_step) {
    return refuse(StrCat("not one step: worker ", worker, " is ", NodeStateName(it->state),
                         "; a worker's kubelet moves in-tree <-> external"));
  }
  if (it->in_transition) return refuse(StrCat("in transition: worker ", worker, " is moving"));
  if (!it->connected) {
    return refuse(StrCat("disconnected: worker ", worker, "'s agent is not connected"));
  }
  if (to == NodeState::kExternal && !CloudControllerManagerRuns(control_plane)) {
    return refuse(StrCat("W1: no cloud-controller-manager runs for the cluster (no "
                         "control-plane node migrated or finalized); worker ",
                         worker, "'s kubelet stays in-tree until one does"));
  }
  return absl::OkStatus();
}

FleetDecision NextFleetStep(const std::vector<NodeStatus>& control_plane,
                            const std::vector<WorkerStatus>& workers, const Goal& goal,
                            ClusterFacts facts, const WorkerPolicy& policy,
                            const Control& control) {
  facts.external_workers = ExternalWorkers(workers);
  return CombineFleet(NextStep(control_plane, goal, facts, control), control_plane, workers,
                      goal.target, policy, control);
}

FleetDecision CombineFleet(Decision control_plane_decision,
                           const std::vector<NodeStatus>& control_plane,
                           const std::vector<WorkerStatus>& workers, NodeState goal,
                           const WorkerPolicy& policy, const Control& control) {
  WorkerDecision workers_decision = NextWorkers(control_plane, workers, goal, policy, control);
  return CombineFleet(std::move(control_plane_decision), std::move(workers_decision),
                      control_plane, workers, goal);
}

FleetDecision CombineFleet(Decision control_plane_decision, WorkerDecision workers_decision,
                           const std::vector<NodeStatus>& control_plane,
                           const std::vector<WorkerStatus>& workers, NodeState goal) {
  FleetDecision fleet;
  fleet.control_plane = std::move(control_plane_decision);
  fleet.workers = std::move(workers_decision);
  const bool control_plane_done = fleet.control_plane.kind == Decision::Kind::kDone;
  const bool workers_done = fleet.workers.kind == WorkerDecision::Kind::kDone;
  if (control_plane_done && workers_done) {
    fleet.done = true;
    fleet.reason = StrCat(fleet.control_plane.reason, "; ", fleet.workers.reason);
    return fleet;
  }
  std::vector<std::string> cp_moving;
  for (const NodeStatus& node : control_plane) {
    if (node.in_transition) cp_moving.push_back(node.name);
  }
  std::vector<std::string> workers_moving;
  for (const WorkerStatus& worker : workers) {
    if (worker.in_transition) workers_moving.push_back(worker.name);
  }
  // Forward: the control plane first. Backward: the workers first.
  const bool control_plane_turn = Forward(goal) ? !control_plane_done : workers_done;
  if (control_plane_turn) {
    if (!workers_moving.empty() && fleet.control_plane.kind == Decision::Kind::kMove) {
      fleet.reason = StrCat("waiting for ", CountOf(workers_moving.size(), "worker", "workers"),
                            " in transition (", FewNames(workers_moving),
                            ") before the control plane moves");
      return fleet;
    }
    fleet.part = FleetDecision::Part::kControlPlane;
    fleet.reason = fleet.control_plane.reason;
    return fleet;
  }
  if (!cp_moving.empty() && (fleet.workers.kind == WorkerDecision::Kind::kMove ||
                             fleet.workers.kind == WorkerDecision::Kind::kRetire)) {
    fleet.reason = StrCat("waiting for control-plane node ", FewNames(cp_moving),
                          " in transition before the workers move");
    return fleet;
  }
  fleet.part = FleetDecision::Part::kWorkers;
  fleet.reason = fleet.workers.reason;
  return fleet;
}

UpgradeGate CheckUpgradeGate(const std::vector<NodeStatus>& control_plane,
                             const std::vector<WorkerStatus>& workers,
                             const std::vector<std::string>& node_problems) {
  UpgradeGate gate;
  std::vector<std::string> managers;
  for (const NodeStatus& node : control_plane) {
    if (node.state != NodeState::kFinalized) {
      managers.push_back(StrCat(node.name, " (", NodeStateName(node.state), ")"));
    }
  }
  if (!managers.empty()) {
    gate.reasons.push_back(
        StrCat(CountOf(managers.size(), "control-plane node is", "control-plane nodes are"),
               " not finalized: ", FewNames(managers),
               "; a 1.27 kube-controller-manager refuses --cloud-provider=aws"));
  }
  std::vector<std::string> in_tree;
  for (const WorkerStatus& worker : workers) {
    if (worker.state != NodeState::kExternal || worker.in_transition) in_tree.push_back(worker.name);
  }
  if (!in_tree.empty()) {
    gate.reasons.push_back(
        StrCat(CountOf(in_tree.size(), "worker's kubelet is", "workers' kubelets are"),
               " not external: ", FewNames(in_tree),
               "; a 1.27 kubelet refuses --cloud-provider=aws (\"unknown cloud provider\")"));
  }
  for (const std::string& problem : node_problems) gate.reasons.push_back(problem);
  gate.open = gate.reasons.empty();
  return gate;
}

}  // namespace handoff::rollout
