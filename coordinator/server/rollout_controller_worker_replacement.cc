// The replace strategy's part for the workers (rollout/worker_replacement.h): which workers to
// ask to leave, recorded for good before anyone is told; when a worker that joined counts as
// serving (its agent, its credential provider, its Node initialized); and what the status says
// the operator's automation runs. A leaving worker is forgotten, as any other, once its agent is
// away and the API server lists no Node of its name (TakeClusterView).
//
// Cost: a decision reads every worker once, as NextWorkers does; the verification of a worker is
// a few lookups.
#include <utility>

#include "common/base/strings.h"
#include "coordinator/rollout/worker_replacement.h"
#include "coordinator/server/rollout_controller.h"
#include "coordinator/server/rollout_controller_internal.h"

namespace handoff::server {

using controller_internal::kStatusNames;

rollout::WorkerDecision RolloutController::DecideWorkers(
    const EngineView& view, const std::vector<rollout::WorkerStatus>& workers) {
  worker_replacement_.reset();
  if (rollout_.strategy != Strategy::kReplace) {
    return rollout::NextWorkers(view.nodes, workers, *rollout_.goal, WorkerPolicyNow(),
                                view.control);
  }
  rollout::WorkerDecision decision =
      rollout::NextWorkerReplacement(view.nodes, workers, *rollout_.goal,
                                     rollout_.worker_replace_size, WorkerPolicyNow(), view.control);
  worker_replacement_ = decision;
  return decision;
}

absl::Status RolloutController::AskWorkersToLeave(const rollout::WorkerDecision& decision) {
  std::vector<store::HistoryEntry> history;
  std::vector<Worker*> asked;
  for (const std::string& name : decision.nodes) {
    auto it = workers_.find(name);
    if (it == workers_.end() || it->second.leaving) continue;
    it->second.leaving = true;
    dirty_workers_.insert(name);
    asked.push_back(&it->second);
    history.push_back(Entry("coordinator", "worker-leave-requested", name,
                            StrCat("the replacement asks worker ", name,
                                   " to leave: drain it, reset it and delete its Node (",
                                   decision.reason, ")")));
  }
  if (asked.empty()) return absl::OkStatus();
  // Remembered before anyone is told: from now on its machine may be reset at any moment.
  absl::Status committed = Commit(std::move(history));
  if (!committed.ok()) {
    for (Worker* worker : asked) worker->leaving = false;
  }
  return committed;
}

std::string RolloutController::UnverifiedReason(const Worker& worker, NodeState target) const {
  if (!worker.link) return "its agent is away";
  if (!worker.healthy) {
    return worker.health_detail.empty() ? "its agent reports it unhealthy"
                                        : StrCat("unhealthy: ", worker.health_detail);
  }
  if (target == NodeState::kExternal) {
    if (!worker.facts.kubelet_flags_known()) {
      return "its agent cannot read the kubelet's flags, so its credential provider is not known";
    }
    if (worker.facts.image_credential_provider_config().empty() ||
        worker.facts.image_credential_provider_bin_dir().empty()) {
      return "its kubelet names no credential provider (--image-credential-provider-config and "
             "--image-credential-provider-bin-dir), so images from ECR do not pull: join it "
             "with handoffctl kubeadm-config worker-join";
    }
  }
  if (!nodes_listed_) {
    return facts_.source == "assumed" ? std::string()
                                      : std::string("the API server's Nodes are not read yet");
  }
  if (listed_nodes_.count(worker.name) == 0) {
    return StrCat("the API server lists no Node ", worker.name);
  }
  const auto problems = node_problems_by_name_.find(worker.name);
  if (problems != node_problems_by_name_.end()) {
    return StrCat("its Node: ", StrJoin(problems->second, "; "));
  }
  return "";
}

size_t RolloutController::WorkersToKeep() const {
  size_t keep = agentless_.size();
  for (const auto& [name, worker] : workers_) keep += worker.leaving ? 0 : 1;
  return keep;
}

pb::WorkerReplacement RolloutController::WorkerReplacementStatus() const {
  pb::WorkerReplacement out;
  out.set_size(static_cast<int32_t>(rollout_.worker_replace_size));
  out.set_old_left(static_cast<int32_t>(worker_replacement_->old_left));
  out.set_joins_wanted(static_cast<int32_t>(worker_replacement_->joins_wanted));
  // Set with a goal (worker_replacement_ is).
  const NodeState target = rollout::WorkerTarget(rollout_.goal.value_or(NodeState::kMigrated));
  for (const auto& [name, worker] : workers_) {
    if (worker.leaving) {
      out.set_leaving(out.leaving() + 1);
      if (out.leaving_names_size() < kStatusNames) out.add_leaving_names(name);
    } else if (worker.state == target && out.unverified_size() < kStatusNames) {
      std::string why = UnverifiedReason(worker, target);
      if (!why.empty()) out.add_unverified(StrCat(name, ": ", why));
    }
  }
  out.add_commands(
      "for each worker leaving: kubectl drain NODE --ignore-daemonsets --delete-emptydir-data "
      "(cordons it, then evicts its pods through the eviction API, so PodDisruptionBudgets "
      "hold)");
  out.add_commands(
      "on it: kubeadm reset --force, then systemctl disable --now handoff-agent (the "
      "DaemonSet's agent goes with its Node)");
  out.add_commands("kubectl delete node NODE (the coordinator forgets it once its agent is "
                   "away and the API server lists no Node of that name)");
  if (target == NodeState::kExternal) {
    out.add_commands(
        "for each new worker: handoffctl kubeadm-config worker-join --api-server-endpoint "
        "HOST:6443 --token TOKEN --discovery-token-ca-cert-hash sha256:HASH --node-name "
        "NEW_NODE > join.yaml (its kubelet external, with the credential provider)");
    out.add_commands(
        "on the new machine, with ecr-credential-provider installed: handoffctl kubeadm-config "
        "credential-provider-config > /etc/kubernetes/image-credential-provider-config.yaml, "
        "then kubeadm join --config join.yaml");
  } else {
    out.add_commands(
        "for each new worker: handoffctl kubeadm-config worker-join --to in-tree "
        "--api-server-endpoint HOST:6443 --token TOKEN --discovery-token-ca-cert-hash "
        "sha256:HASH --node-name NEW_NODE > join.yaml, then on the new machine kubeadm join "
        "--config join.yaml");
  }
  out.add_commands(
      "its agent: handoffctl certs issue --dir CA_DIR --node NEW_NODE, role: worker in its "
      "settings, systemctl enable --now handoff-agent (it serves once its agent says hello "
      "and its Node is initialized)");
  return out;
}

}  // namespace handoff::server
