// The faults that strike a worker while its kubelet goes external (sandbox.h Fault): the rollout
// with the fault on the way, each pause the workers' failure budget makes checked and lifted as
// an operator would, then the rollback. A worker ends wholly moved or wholly as it was.
#include <algorithm>
#include <chrono>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "agent/daemon/command_log.h"
#include "common/base/strings.h"
#include "proto/vocabulary/node_state.h"
#include "rehearsal/sandbox/sandbox_run.h"

namespace handoff::sandbox {
namespace {

// The agent's state directory on every sandbox node, under the node's files.
constexpr char kAgentStateDir[] = "/var/lib/handoff";

// The ids of the moves the agent has recorded so far; empty while it has recorded none.
std::set<std::string> RecordedMoves(FileSystem& fs) {
  std::set<std::string> ids;
  absl::StatusOr<CommandLog> log = CommandLog::Open(fs, kAgentStateDir);
  if (!log.ok()) return ids;
  for (const CommandRecord& record : log->Records()) ids.insert(record.id);
  return ids;
}

}  // namespace

absl::StatusOr<std::string> SandboxRun::AwaitWorkerMoveUnderWay(
    NodeRun& worker, const std::set<std::string>& before) {
  std::unique_ptr<FileSystem> node_fs =
      NewPosixFileSystem(cluster_->AgentHostOf(worker.node).files);
  const absl::Time deadline =
      absl::Now() + ForMoves(2 * static_cast<int>(nodes_.size()) + 2);
  while (absl::Now() < deadline && !interrupted_()) {
    absl::StatusOr<CommandLog> log = CommandLog::Open(*node_fs, kAgentStateDir);
    if (log.ok()) {
      for (const CommandRecord& record : log->Records()) {
        if (!before.count(record.id) && !record.finished &&
            record.to == v1::NODE_STATE_EXTERNAL) {
          return record.id;
        }
      }
    }
    // The agent records a move with nothing this process can wait on: it is looked for every
    // 20 ms, and a worker's move takes seconds (its kubelet's restart and heartbeat).
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (interrupted_()) return absl::CancelledError("interrupted");
  return absl::DeadlineExceededError(
      StrCat("timed out waiting for ", worker.spec().name, "'s agent to begin its kubelet's move"));
}

absl::Status SandboxRun::CheckFailedWorkersAsTheyWere(const v1::RolloutStatus& paused) {
  absl::StatusOr<std::unique_ptr<kube::KubeClient>> client = AdminClient();
  if (!client.ok()) return client.status();
  Say(StrCat("rollout paused: ", paused.workers().failed(), " failed of a failure budget of ",
             paused.workers().failure_budget()));
  for (const std::string& failure : paused.workers().failures()) {
    const std::string name = failure.substr(0, failure.find(':'));
    const NodeRun* worker = nullptr;
    for (const NodeRun& candidate : workers_) {
      if (candidate.spec().name == name) worker = &candidate;
    }
    if (worker == nullptr) {
      return absl::FailedPreconditionError(
          StrCat("the coordinator names a failed worker the sandbox does not have: ", failure));
    }
    absl::StatusOr<WorkerLook> look = LookAtWorker(**client, *worker);
    if (!look.ok()) return look.status();
    const std::vector<std::string> differences = WorkerDifferences(*worker, *look, "aws");
    if (!differences.empty()) {
      return absl::FailedPreconditionError(StrCat(name, " failed (", failure,
                                                  ") but is not as it was: ",
                                                  StrJoin(differences, "; ")));
    }
    // The agent's reason may quote a command's output over several lines: one line here.
    std::string shown = failure;
    std::replace(shown.begin(), shown.end(), '\n', ' ');
    Say(StrCat("  failed: ", shown));
    Say(StrCat("  ", name, " is wholly as it was: its kubelet runs --cloud-provider=aws (",
               look->kubelet.source, "), the same Node, its workload never restarted"));
  }
  return absl::OkStatus();
}

absl::Status SandboxRun::RunWorkerScenario(const std::vector<Fault>& faults) {
  const v1::NodeState goal = Goal();
  // Each fault on a worker of its own, in the order given (RunSandbox checked there are enough):
  // on the kubeadm cluster the first worker's cloud provider is in /etc/default/kubelet.
  struct Strike {
    Fault fault;
    NodeRun* worker;
    std::set<std::string> before;  // the moves its agent had recorded before the rollout
    bool struck = false;
  };
  std::vector<Strike> strikes;
  for (size_t i = 0; i < faults.size(); ++i) {
    NodeRun& worker = workers_[i];
    std::unique_ptr<FileSystem> node_fs =
        NewPosixFileSystem(cluster_->AgentHostOf(worker.node).files);
    strikes.push_back({faults[i], &worker, RecordedMoves(*node_fs)});
  }
  absl::Status status;
  // What an operator runs first must pass on the healthy cluster (as a fault-free rollout's).
  if (options_.cluster != ClusterKind::kModel) status = RunPreflight();
  for (Strike& strike : strikes) {
    if (!status.ok() || strike.fault != Fault::kCredentialProvider) continue;
    status = cluster_->SetCredentialProviderFailing(strike.worker->node, true);
    if (status.ok()) {
      Say(StrCat("fault: ", strike.worker->spec().name, "'s ecr-credential-provider answers the "
                 "agent's check before the move, then fails (ECR refuses the node)"));
    }
  }
  if (status.ok()) status = StartRollout(goal);
  // Until the rollout is done: each kill strikes once its worker's move is in the batch; a worker
  // whose move failed was rolled back by its agent and the failure budget paused the rollout,
  // so the sandbox checks it is as it was, lifts the fault and resumes, as an operator would.
  int pauses = 0;
  int64_t paused_at = 0;  // the revision of the last pause handled
  auto pending = [&strikes](const v1::RolloutStatus& s) -> Strike* {
    for (Strike& strike : strikes) {
      if (strike.struck || strike.fault == Fault::kCredentialProvider) continue;
      for (const std::string& name : s.workers().batch()) {
        if (name == strike.worker->spec().name) return &strike;
      }
    }
    return nullptr;
  };
  while (status.ok()) {
    absl::StatusOr<v1::RolloutStatus> now = Await(
        StrCat("every node to be ", WireStateName(goal, "-"), ", a worker's move to strike or a "
               "pause for a failed worker"),
        [&](const v1::RolloutStatus& s) {
          return pending(s) != nullptr ||
                 (s.revision() > paused_at &&
                  ((s.phase() == v1::RolloutStatus::DONE && AllAt(s, goal)) ||
                   (s.paused() && s.workers().failed() > 0) || (s.halted() && s.goal() == goal)));
        },
        ForMoves(2 * static_cast<int>(nodes_.size() + workers_.size())));
    if (!now.ok()) return now.status();
    if (Strike* strike = pending(*now)) {
      strike->struck = true;
      NodeRun& worker = *strike->worker;
      absl::StatusOr<std::string> id = AwaitWorkerMoveUnderWay(worker, strike->before);
      if (!id.ok()) return id.status();
      // Once the move has put the kubelet's new flags in place and before it has proved them:
      // the node half moved, for the agent to put back or carry on with.
      bool external = false;
      const absl::Time until = absl::Now() + ForMoves(1);
      while (!external && absl::Now() < until && !interrupted_()) {
        absl::StatusOr<WorkerKubeletLook> look = cluster_->LookAtWorker(worker.node);
        external = look.ok() && look->cloud_provider == "external";
        // The node's files and processes change with nothing to wait on.
        if (!external) std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
      const std::string when =
          StrCat(*id, external ? ", its kubelet already on --cloud-provider=external" : "");
      if (strike->fault == Fault::kWorkerAgentKill) {
        Say(StrCat("fault: kill -9 the agent of ", worker.spec().name,
                   " during its kubelet's move ", when));
        status = RestartAgent(worker, /*kill=*/true);
      } else {
        status = cluster_->KillKubelet(worker.node);
        if (status.ok()) {
          Say(StrCat("fault: kill -9 the kubelet of ", worker.spec().name, " during its move ",
                     when, "; its service manager starts it again"));
        }
      }
      continue;
    }
    if (!now->paused()) break;  // done, or halted: AwaitAllDone says which
    if (++pauses > static_cast<int>(workers_.size())) {
      return absl::FailedPreconditionError(
          StrCat("the rollout paused ", pauses, " times for failed workers: ", now->next()));
    }
    paused_at = now->revision();
    status = CheckFailedWorkersAsTheyWere(*now);
    for (Strike& strike : strikes) {
      if (!status.ok() || strike.fault != Fault::kCredentialProvider || strike.struck) continue;
      const std::string& name = strike.worker->spec().name;
      bool failed = false;
      for (const std::string& failure : now->workers().failures()) {
        failed = failed || StartsWith(failure, name + ":");
      }
      if (!failed) continue;
      strike.struck = true;
      status = cluster_->SetCredentialProviderFailing(strike.worker->node, false);
      if (status.ok()) Say(StrCat(name, "'s ecr-credential-provider put back as it was"));
    }
    if (status.ok()) {
      status = Call("resume", [](ctl::OperatorClient& client) {
        return client.Resume(v1::ResumeRequest()).status();
      });
    }
  }
  // A fault counts only if it struck: a kill during its worker's move, a failing provider by
  // the agent's proof failing after the kubelet's restart.
  for (const Strike& strike : strikes) {
    if (!status.ok() || strike.struck) continue;
    status = absl::FailedPreconditionError(StrCat(
        "--fault ", FaultName(strike.fault), " never struck ", strike.worker->spec().name,
        strike.fault == Fault::kCredentialProvider
            ? ": its move succeeded with a credential provider that fails"
            : ": its move was never seen under way"));
  }
  if (status.ok()) status = AwaitAllDone(goal);
  // What the move is for: a moved worker runs the 1.27 kubelet.
  if (status.ok()) status = TryNextKubelet(/*moved=*/true);
  if (status.ok()) status = RollBackToInTree();
  return status;
}

}  // namespace handoff::sandbox
