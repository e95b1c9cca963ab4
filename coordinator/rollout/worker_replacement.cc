#include "coordinator/rollout/worker_replacement.h"

#include <algorithm>
#include <map>
#include <string>
#include <string_view>
#include <utility>

#include "common/base/strings.h"

namespace handoff::rollout {
WorkerDecision NextWorkerReplacement(const std::vector<NodeStatus>& control_plane,
                                     const std::vector<WorkerStatus>& workers, NodeState goal,
                                     std::size_t size, const WorkerPolicy& policy,
                                     const Control& control) {
  const NodeState target = WorkerTarget(goal);
  const std::string target_name(NodeStateName(target));
  std::vector<const WorkerStatus*> old;
  std::vector<std::string> leaving, verified, unverified, inconsistent, without_agent, in_flight;
  std::map<std::string, std::size_t> leaving_by_zone;
  for (const WorkerStatus& worker : workers) {
    if (worker.leaving) {
      leaving.push_back(worker.name);
      ++leaving_by_zone[worker.zone];
    } else if (!worker.has_agent) {
      without_agent.push_back(worker.name);
    } else if (worker.in_transition) {
      in_flight.push_back(worker.name);
    } else if (worker.state == target) {
      if (worker.unverified.empty()) {
        verified.push_back(worker.name);
      } else {
        unverified.push_back(StrCat(worker.name, " (", worker.unverified, ")"));
      }
    } else if (worker.state == NodeState::kInTree || worker.state == NodeState::kExternal) {
      old.push_back(&worker);
    } else {
      inconsistent.push_back(worker.name);
    }
  }
  WorkerDecision decision;
  // A worker moving in place (an earlier goal's) still serves, as one of the old.
  const std::size_t serving = old.size() + verified.size() + in_flight.size();
  decision.old_left = old.size() + leaving.size() + in_flight.size();
  const std::size_t awaited = serving + unverified.size();
  decision.joins_wanted = size > awaited ? size - awaited : 0;
  auto decide = [&](WorkerDecision::Kind kind, std::string reason) {
    decision.kind = kind;
    decision.reason = std::move(reason);
    return decision;
  };
  const std::string progress =
      StrCat(verified.size(), " new ", target_name, " of ", size, " serving, ",
             CountOf(decision.old_left, "old worker", "old workers"), " left (",
             leaving.size(), " asked to leave)");
  if (decision.old_left == 0 && unverified.empty() && inconsistent.empty() &&
      without_agent.empty() && serving >= size) {
    return decide(WorkerDecision::Kind::kDone,
                  workers.empty() ? "no workers"
                                  : StrCat("every worker replaced: ", verified.size(), " new ",
                                           target_name, " workers serve"));
  }
  if (control.halted) {
    return decide(WorkerDecision::Kind::kStuck,
                  StrCat("R5: the rollout is halted",
                         control.halt_reason.empty() ? "" : StrCat(" (", control.halt_reason, ")"),
                         "; ", progress));
  }
  if (control.paused) return decide(WorkerDecision::Kind::kWait, StrCat("paused: ", progress));
  if (!inconsistent.empty()) {
    return decide(WorkerDecision::Kind::kStuck,
                  StrCat("inconsistent: ", CountOf(inconsistent.size(), "worker is", "workers are"),
                         " neither in-tree nor external (", FewNames(inconsistent),
                         "); `handoff-agent status --role worker` on each says why, or retire "
                         "it (kubeadm reset, kubectl delete node); ",
                         progress));
  }
  if (!in_flight.empty()) {
    return decide(WorkerDecision::Kind::kWait,
                  StrCat("waiting for ", CountOf(in_flight.size(), "worker", "workers"),
                         " moving in place (", FewNames(in_flight), "); ", progress));
  }
  if (target == NodeState::kExternal && !CloudControllerManagerRuns(control_plane)) {
    return decide(WorkerDecision::Kind::kWait,
                  StrCat("W1: no cloud-controller-manager runs for the cluster yet (no "
                         "control-plane node migrated or finalized); no external worker may "
                         "join before one does; ",
                         progress));
  }
  // WR1: at most `allowed` below the size.
  const std::size_t allowed = AllowedInFlight(policy.max_unavailable, std::max<std::size_t>(size, 1));
  const std::size_t floor = size > allowed ? size - allowed : 0;
  std::size_t slots = serving > floor ? std::min(serving - floor, old.size()) : 0;
  slots = std::min(slots, allowed > leaving.size() ? allowed - leaving.size() : 0);
  std::map<std::string, std::vector<const WorkerStatus*>> by_zone;
  for (const WorkerStatus* worker : old) by_zone[worker->zone].push_back(worker);
  decision.nodes = SpreadOverZones(by_zone, leaving_by_zone, slots);
  if (!decision.nodes.empty()) {
    return decide(WorkerDecision::Kind::kRetire,
                  StrCat("WR1: ask ", CountOf(decision.nodes.size(), "worker", "workers"),
                         " to leave (", FewNames(decision.nodes), "): ", serving, " serve, ",
                         serving - decision.nodes.size(), " after, at most ", allowed,
                         " below the ", size, " there were; ", progress));
  }
  std::vector<std::string> waiting;
  if (!leaving.empty()) {
    waiting.push_back(StrCat(CountOf(leaving.size(), "worker", "workers"), " to leave (",
                             FewNames(leaving), ": agent away and Node deleted)"));
  }
  if (decision.joins_wanted > 0) {
    waiting.push_back(StrCat(CountOf(decision.joins_wanted, "new worker", "new workers"),
                             " to join ", target_name));
  }
  if (!unverified.empty()) {
    waiting.push_back(StrCat(CountOf(unverified.size(), "new worker", "new workers"),
                             " to be verified: ", FewNames(unverified)));
  }
  if (!without_agent.empty()) {
    waiting.push_back(StrCat(CountOf(without_agent.size(), "Node", "Nodes"),
                             " without an agent to say hello (", FewNames(without_agent),
                             "): install handoff-agent on them, or retire them"));
  }
  return decide(WorkerDecision::Kind::kWait,
                StrCat("WR1: waiting for ", StrJoin(waiting, "; "), "; ", progress));
}

}  // namespace handoff::rollout
