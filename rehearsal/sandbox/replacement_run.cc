// The scenario of `handoffctl sandbox --cluster kubeadm --strategy replace` (sandbox_run.h): the
// upstream procedure's rolling replacement, forward and back. The coordinator (start and rollback
// with --strategy replace) says in its status what it waits for; the sandbox does it as an
// operator's automation would, with the real kubeadm on machines launched at the start:
//   JOIN external  `handoffctl kubeadm-config apply` once, then `kubeadm join --control-plane` of
//                  the next machine at 1.27.16 (its kubelet external) and its agent started;
//   JOIN prepared  `handoffctl kubeadm-config apply --to prepared --kubernetes-version v1.26.13`
//                  once, the Leader Migration file the agents write put on the machine, then
//                  `kubeadm join --control-plane` at 1.26.13 (its kubelet in-tree);
//   LEAVE node     `kubeadm reset --force` on it (its etcd member removed), its kubelet and agent
//                  stopped (systemd would), and its Node deleted (`kubectl delete node`).
// The coordinator takes each joined node in and moves it, and takes a leaving node out only once
// its agent is gone, the API server has no Node of that name and etcd's member list does not name
// it. The monitor watches throughout.
#include <signal.h>

#include <string>
#include <vector>

#include "common/base/strings.h"
#include "common/kube/client.h"
#include "common/kube/resource.h"
#include "rehearsal/sandbox/kubeadm/kubeadm_cluster.h"
#include "rehearsal/sandbox/report.h"
#include "rehearsal/sandbox/sandbox_run.h"

namespace handoff::sandbox {
namespace {

constexpr const char* kVersionN = kKubeadmVersionN;

bool IsMember(const v1::RolloutStatus& status, const std::string& name) {
  for (const v1::NodeProgress& node : status.nodes()) {
    if (node.name() == name) return true;
  }
  return false;
}

std::string Names(const v1::RolloutStatus& status) {
  std::vector<std::string> names;
  for (const v1::NodeProgress& node : status.nodes()) names.push_back(node.name());
  return StrJoin(names, ", ");
}

}  // namespace

SandboxRun::NodeRun* SandboxRun::FindNode(const std::string& name) {
  for (std::vector<NodeRun>* group : {&nodes_, &spares_}) {
    for (NodeRun& node : *group) {
      if (node.spec().name == name) return &node;
    }
  }
  return nullptr;
}

absl::Status SandboxRun::JoinSpare(NodeRun& spare, v1::NodeState join_state) {
  const bool forward = join_state == v1::NODE_STATE_EXTERNAL;
  const std::string config = forward ? "external" : "prepared";
  if (kubeadm_config_applied_.insert(config).second) {
    std::vector<std::string> args = {"kubeadm-config",   "apply",      "--kubeconfig",
                                     Path("admin.conf"), "--settings", Path("settings.yaml")};
    if (!forward) args.insert(args.end(), {"--to", "prepared", "--kubernetes-version", kVersionN});
    absl::Status applied = RunHandoffctl(args, StrCat("handoffctl-kubeadm-config-", config));
    if (!applied.ok()) return applied;
  }
  if (!forward) {
    // A node of version N joins with Leader Migration: its kube-controller-manager reads the
    // file from its first start (`kubeadm-config leader-migration-file`).
    const std::string log = StrCat("handoffctl-leader-migration-file-", spare.spec().name);
    absl::Status printed = RunHandoffctl({"kubeadm-config", "leader-migration-file", "--settings",
                                          Path("settings.yaml"), "--kubernetes-version", kVersionN},
                                         log);
    absl::StatusOr<std::string> file =
        printed.ok() ? fs_->ReadFile(Path(StrCat("logs/", log, ".log"))) : printed;
    if (!file.ok()) return file.status();
    absl::Status written =
        WriteNodeFile(cluster_->AgentHostOf(spare.node), "/etc/leadermigration.conf", *file);
    if (!written.ok()) return written;
  }
  absl::Status joined = cluster_->JoinWithKubeadm(
      spare.node, forward ? KubeadmJoin::kNextExternal : KubeadmJoin::kPreviousInTree);
  // Its agent starts once the machine has joined, as the package's unit would after kubeadm.
  if (joined.ok()) joined = StartAgent(spare);
  return joined;
}

absl::Status SandboxRun::RemoveMember(const std::string& name) {
  NodeRun* node = FindNode(name);
  if (node == nullptr) return absl::NotFoundError(StrCat("no node ", name, " in this sandbox"));
  // What status's commands say, in order: kubeadm reset, the agent disabled, the Node deleted.
  // kubeadm reset stops the kubelet first (`systemctl stop kubelet`); the nodes here have no
  // systemd, and a kubelet left running restarts the containers reset removes, from manifests it
  // has not deleted yet: a kube-controller-manager started again in the middle of the reset
  // (found by the monitor on a loaded machine). So the node's service manager stops it first.
  absl::Status status = cluster_->StopKubelet(node->node);
  if (!status.ok()) return status;
  status = cluster_->ResetWithKubeadm(node->node);
  if (!status.ok()) return status;
  if (node->agent) node->agent->Stop(SIGTERM, absl::Seconds(10));
  node->agent.reset();
  absl::StatusOr<std::unique_ptr<kube::KubeClient>> client = AdminClient();
  if (!client.ok()) return client.status();
  status = (*client)->Delete(kube::ObjectRef{&kube::kNodes, "", name});
  if (!status.ok() && !absl::IsNotFound(status)) return status;
  Say(StrCat("kubeadm reset on ", name, ", its kubelet and agent stopped, kubectl delete node ",
             name));
  return absl::OkStatus();
}

absl::Status SandboxRun::ServeReplacement(v1::NodeState goal) {
  std::string joining;  // the machine joined last, until the coordinator has taken it in
  std::string leaving;  // the node removed last, until the coordinator has taken it out
  while (true) {
    absl::StatusOr<v1::RolloutStatus> status = Await(
        "the replacement to ask for a machine or a removal, or to be done",
        [&](const v1::RolloutStatus& s) {
          if (s.halted()) return true;
          if (s.phase() == v1::RolloutStatus::DONE && AllAt(s, goal)) return true;
          const v1::Replacement& replacement = s.replacement();
          if (replacement.waiting() == v1::Replacement::JOIN) {
            return joining.empty() || IsMember(s, joining);
          }
          if (replacement.waiting() == v1::Replacement::LEAVE) {
            return replacement.node() != leaving;
          }
          return false;
        },
        ForMoves(4));
    if (!status.ok()) return status.status();
    if (status->halted()) {
      return absl::AbortedError(StrCat("the rollout halted: ", status->halt_reason()));
    }
    if (status->phase() == v1::RolloutStatus::DONE && AllAt(*status, goal)) {
      Say(StrCat("replacement done: the members are ", Names(*status)));
      return absl::OkStatus();
    }
    const v1::Replacement& replacement = status->replacement();
    if (replacement.waiting() == v1::Replacement::JOIN) {
      if (spares_used_ >= spares_.size()) {
        return absl::FailedPreconditionError(
            "the replacement asks for another machine, and "
            "every spare machine has joined");
      }
      NodeRun& spare = spares_[spares_used_++];
      absl::Status joined = JoinSpare(spare, replacement.join_state());
      if (!joined.ok()) return joined;
      joining = spare.spec().name;
    } else {
      leaving = replacement.node();
      absl::Status removed = RemoveMember(leaving);
      if (!removed.ok()) return removed;
    }
  }
}

absl::Status SandboxRun::ReplaceForwardAndBack() {
  absl::Status status = StartSettled("start --strategy replace", [](ctl::OperatorClient& client) {
    v1::StartRequest request;
    request.set_goal(v1::NODE_STATE_MIGRATED);
    request.set_strategy(v1::STRATEGY_REPLACE);
    return client.Start(request).status();
  });
  if (status.ok()) status = ServeReplacement(v1::NODE_STATE_MIGRATED);
  if (status.ok()) status = CheckProviderIds();
  if (!status.ok()) return status;
  Say("rollout done: every node of 1.26 replaced by one joined at 1.27, each running the "
      "cloud-controller-manager");
  status = Call("rollback --to in-tree --strategy replace", [](ctl::OperatorClient& client) {
    v1::RollbackRequest request;
    request.set_to(v1::NODE_STATE_IN_TREE);
    request.set_strategy(v1::STRATEGY_REPLACE);
    return client.Rollback(request).status();
  });
  if (status.ok()) status = ServeReplacement(v1::NODE_STATE_IN_TREE);
  // kubeadm's configuration back as it was before the move, for the next join or upgrade.
  if (status.ok()) {
    status = RunHandoffctl({"kubeadm-config", "apply", "--kubeconfig", Path("admin.conf"), "--to",
                            "in-tree", "--kubernetes-version", kVersionN},
                           "handoffctl-kubeadm-config-in-tree");
  }
  if (!status.ok()) return status;
  Say("rollback done: every node of 1.27 replaced by one joined at 1.26, all in-tree");
  status = WaitForCloudControllers(absl::Seconds(30) + 4 * timing_.lease_duration);
  if (status.ok()) {
    Say("in-tree again: a kube-controller-manager holds its lease and runs the cloud controllers");
  }
  return status;
}

int SandboxRun::RunReplacement() {
  absl::Status status = ReplaceForwardAndBack();
  if (!status.ok()) {
    err_ << "handoffctl sandbox: " << status.message() << "\n";
    return Summarise(false, StrCat("did not complete: ", status.message()));
  }
  return Summarise(true,
                   "rollout to 1.27 and rollback to 1.26 by replacing every node, each way, "
                   "completed");
}

}  // namespace handoff::sandbox
