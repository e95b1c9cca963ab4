// The scenario of a sandbox run (sandbox_run.h), once everything is up: the operator's rollout
// to 1.27 with the fault of --fault injected on the way, the check of the nodes' providerIDs,
// and the rollback to 1.26; or, test-only, the unsafe order the monitor must catch.
#include <signal.h>
#include <sys/wait.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "common/base/strings.h"
#include "common/fs/atomic_file.h"
#include "common/kube/client.h"
#include "common/kube/http_transport.h"
#include "common/kube/kubeconfig.h"
#include "coordinator/kube/nodes.h"
#include "proto/vocabulary/node_state.h"
#include "rehearsal/sandbox/report.h"
#include "rehearsal/sandbox/sandbox_run.h"

namespace handoff::sandbox {

bool AllAt(const v1::RolloutStatus& status, v1::NodeState state) {
  if (status.nodes_size() == 0) return false;
  for (const v1::NodeProgress& node : status.nodes()) {
    if (node.state() != state) return false;
  }
  return true;
}

absl::Status SandboxRun::Call(const std::string& what,
                              const std::function<absl::Status(ctl::OperatorClient&)>& call) {
  std::unique_ptr<ctl::OperatorClient> client = ConnectOperator();
  absl::Status status = call(*client);
  if (!status.ok()) {
    return absl::Status(status.code(), StrCat("handoffctl ", what, ": ", status.message()));
  }
  Say(StrCat("handoffctl ", what));
  return absl::OkStatus();
}

absl::StatusOr<v1::RolloutStatus> SandboxRun::Await(
    const std::string& what, const std::function<bool(const v1::RolloutStatus&)>& done,
    absl::Duration timeout) {
  std::optional<v1::RolloutStatus> status =
      feed_->WaitFor(done, absl::Now() + timeout, interrupted_,
                     [this](const v1::RolloutStatus& s) { ShowProgress(s); });
  if (status && done(*status)) return *status;
  if (interrupted_()) return absl::CancelledError("interrupted");
  // What an unhealthy node's agent found, as `handoffctl nodes` shows it: the reason it stopped.
  std::string health;
  if (status) {
    absl::StatusOr<v1::NodesResponse> nodes = ConnectOperator()->Nodes(v1::NodesRequest());
    if (nodes.ok()) {
      for (const v1::NodeInfo& node : nodes->nodes()) {
        if (node.connected() && !node.healthy()) {
          StrAppend(&health, "; ", node.name(), " not healthy: ", node.health_detail());
        }
      }
    }
  }
  return absl::DeadlineExceededError(StrCat(
      "timed out after ", FormatSeconds(timeout), " waiting for ", what,
      status ? StrCat("; the rollout is ", v1::RolloutStatus::Phase_Name(status->phase()), ": ",
                      status->next(), status->halted() ? " — " + status->halt_reason() : "",
                      health)
             : "; the coordinator never answered"));
}

absl::Status SandboxRun::CheckProviderIds() {
  absl::StatusOr<std::unique_ptr<kube::KubeClient>> client = AdminClient();
  if (!client.ok()) return client.status();
  absl::StatusOr<std::vector<kube::Json>> nodes = kube::ListNodes(**client, true);
  if (!nodes.ok()) return nodes.status();
  std::vector<std::string> bad;
  for (const kube::NodeCheck& check : kube::CheckNodes(*nodes)) {
    if (!check.problems.empty())
      bad.push_back(StrCat(check.name, ": ", StrJoin(check.problems, "; ")));
  }
  if (!bad.empty()) return absl::FailedPreconditionError(StrJoin(bad, "\n"));
  Say(StrCat("node providerIDs: all ", nodes->size(),
             " control-plane nodes carry aws:///<zone>/<instance>"));
  return absl::OkStatus();
}

v1::NodeState SandboxRun::Goal() const {
  if (options_.downtime) return v1::NODE_STATE_FINALIZED;
  return options_.goal == SandboxGoal::kPrepared ? v1::NODE_STATE_PREPARED
                                                 : v1::NODE_STATE_MIGRATED;
}

absl::StatusOr<std::string> SandboxRun::AwaitMoveUnderWay(NodeRun& node, v1::NodeState to) {
  absl::StatusOr<v1::RolloutStatus> moving = Await(
      StrCat("a move of ", node.spec().name),
      [&](const v1::RolloutStatus& s) {
        return s.has_in_flight() && s.in_flight().node() == node.spec().name &&
               s.in_flight().to() == to;
      },
      ForMoves(static_cast<int>(nodes_.size()) + 2));
  if (!moving.ok()) return moving.status();
  // Once the agent has recorded the move as started, it is under way on the node.
  const std::string id = moving->in_flight().command_id();
  std::string record =
      StrCat(cluster_->AgentHostOf(node.node).files, "/var/lib/handoff/commands/", id, ".json");
  absl::Time deadline = absl::Now() + absl::Seconds(20);
  while (!fs_->ReadFile(record).ok() && absl::Now() < deadline) {
    // The agent writes the record with nothing this process can wait on.
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return id;
}

absl::Status SandboxRun::KillMidMove(Fault fault, NodeRun& node, v1::NodeState to) {
  absl::StatusOr<std::string> id = AwaitMoveUnderWay(node, to);
  if (!id.ok()) return id.status();
  switch (fault) {
    case Fault::kAgentKill:
      Say(StrCat("fault: kill -9 the agent of ", node.spec().name, " during move ", *id));
      return RestartAgent(node, /*kill=*/true);
    case Fault::kKubeletKill: {
      absl::Status killed = cluster_->KillKubelet(node.node);
      if (!killed.ok()) return killed;
      Say(StrCat("fault: kill -9 the kubelet of ", node.spec().name, " during move ", *id,
                 "; its service manager starts it again"));
      return absl::OkStatus();
    }
    case Fault::kCoordinatorKill: {
      coordinator_->Stop(SIGKILL, absl::ZeroDuration());
      Say(StrCat("fault: kill -9 the coordinator during move ", *id));
      absl::Status started = StartCoordinator();
      if (started.ok()) {
        Say("coordinator restarted: it resumes from its database once every agent has reported");
      }
      return started;
    }
    default:
      return absl::InternalError("not a fault that kills a process");
  }
}

namespace {

// Whether `status` is a start the preflight refused for its control-plane check alone.
bool RefusedForControlPlaneOnly(const absl::Status& status) {
  if (!absl::IsFailedPrecondition(status)) return false;
  bool control_plane = false;
  const std::string message(status.message());
  for (std::string_view line : StrSplit(message, "\n", /*skip_empty=*/true)) {
    line = StripWhitespace(line);
    if (!StartsWith(line, "[")) continue;
    if (!StartsWith(line, "[control-plane]")) return false;
    control_plane = true;
  }
  return control_plane;
}

}  // namespace

absl::Status SandboxRun::StartSettled(
    const std::string& what, const std::function<absl::Status(ctl::OperatorClient&)>& start,
    bool settle) {
  if (settle) {
    if (absl::Status settled = cluster_->AwaitControlPlaneSettled(); !settled.ok()) return settled;
  }
  // The kubelet replaces a static pod's mirror pod after its manifest changed: one the control
  // plane settled with a moment ago may be Pending again for a few seconds when the coordinator
  // reads it. A start refused for control-plane alone is asked again, as an operator would, for
  // up to 30 s.
  const absl::Time deadline = absl::Now() + absl::Seconds(30);
  while (true) {
    absl::Status status = Call(what, start);
    if (status.ok() || options_.cluster != ClusterKind::kKubeadm ||
        !RefusedForControlPlaneOnly(status) || absl::Now() >= deadline || interrupted_()) {
      return status;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
}

absl::Status SandboxRun::StartRollout(v1::NodeState goal, bool settle) {
  const bool downtime = options_.downtime;
  return StartSettled(
      downtime                          ? "start --strategy downtime"
      : goal == v1::NODE_STATE_PREPARED ? "start --prepare-only"
                                        : "start",
      [downtime, goal](ctl::OperatorClient& client) {
        v1::StartRequest request;
        request.set_goal(goal);
        if (downtime) request.set_strategy(v1::STRATEGY_DOWNTIME);
        return client.Start(request).status();
      },
      settle);
}

absl::Status SandboxRun::InjectStrayBackup(NodeRun& target) {
  const AgentHost host = cluster_->AgentHostOf(target.node);
  const std::string stray = "/etc/kubernetes/manifests/kube-controller-manager.yaml.bak";
  std::unique_ptr<FileSystem> node_fs = NewPosixFileSystem(host.files);
  absl::StatusOr<std::string> kcm =
      node_fs->ReadFile("/etc/kubernetes/manifests/kube-controller-manager.yaml");
  absl::Status status = kcm.ok() ? WriteNodeFile(host, stray, *kcm) : kcm.status();
  if (status.ok()) status = RestartAgent(target, /*kill=*/false);
  if (!status.ok()) return status;
  Say(StrCat("fault: a stray kube-controller-manager.yaml.bak in ", target.spec().name,
             "'s manifest dir"));
  const std::string name = target.spec().name;
  status = Await(
               StrCat(name, "'s agent to report the stray file"),
               [name](const v1::RolloutStatus& s) {
                 for (const v1::NodeProgress& node : s.nodes()) {
                   if (node.name() == name) {
                     return node.connected() && node.state() == v1::NODE_STATE_INCONSISTENT;
                   }
                 }
                 return false;
               },
               absl::Seconds(30))
               .status();
  if (!status.ok()) return status;
  // The preflight refuses to start beside an inconsistent node, and says which and why.
  absl::Status refused = StartRollout(Goal());
  if (refused.ok() || !absl::IsFailedPrecondition(refused)) {
    return absl::InternalError(
        StrCat("the start beside an inconsistent node was not refused by the preflight: ",
               refused.ok() ? "it started" : refused.message()));
  }
  Say(StrCat("refused as it must be: ", refused.message()));
  status = DurableRemove(*node_fs, stray);
  if (status.ok()) status = RestartAgent(target, /*kill=*/false);
  if (!status.ok()) return status;
  Say(StrCat("operator: removed the stray file, restarted ", target.spec().name, "'s agent"));
  return Await(
             "every agent to report its node in-tree again",
             [](const v1::RolloutStatus& s) { return AllAt(s, v1::NODE_STATE_IN_TREE); },
             absl::Seconds(30))
      .status();
}

absl::Status SandboxRun::NoteDowntime(const v1::RolloutStatus& done) {
  if (!done.has_downtime() || done.downtime().cloud_controllers_back_unix_ms() == 0) {
    return absl::InternalError(
        "the downtime rollout is done but the coordinator reports no measured outage");
  }
  const v1::Downtime& measured = done.downtime();
  downtime_ = StrCat("no kube-controller-manager for ",
                     FormatSeconds(absl::Milliseconds(measured.controller_manager_ms())),
                     ", no cloud controllers for ",
                     FormatSeconds(absl::Milliseconds(measured.cloud_controllers_ms())),
                     " (measured by the coordinator from the agents' verified results)");
  if (measured.observed_cloud_controllers_ms() != 0) {
    StrAppend(&downtime_, "; the managers' /healthz showed no runner of ",
              measured.observed_controller(), " for ",
              FormatSeconds(absl::Milliseconds(measured.observed_cloud_controllers_ms())));
  }
  Say(StrCat("downtime: ", downtime_));
  return absl::OkStatus();
}

absl::StatusOr<v1::RolloutStatus> SandboxRun::AwaitGoal(v1::NodeState goal,
                                                        const std::string& what) {
  absl::StatusOr<v1::RolloutStatus> done = Await(
      what,
      [goal](const v1::RolloutStatus& s) {
        // A halt ends the wait too: nothing moves until an operator acts. Only a halt on the way
        // to this goal: the status from before the last command may still show an earlier one.
        return (s.phase() == v1::RolloutStatus::DONE && AllAt(s, goal)) ||
               (s.halted() && s.goal() == goal);
      },
      ForMoves(2 * static_cast<int>(nodes_.size() + workers_.size())));
  if (done.ok() && (done->phase() != v1::RolloutStatus::DONE || !AllAt(*done, goal))) {
    return absl::AbortedError(StrCat("the rollout halted on the way to ", WireStateName(goal, "-"),
                                     ": ", done->halt_reason()));
  }
  return done;
}

absl::Status SandboxRun::RollBackToInTree() {
  absl::Status status = Call("rollback --to in-tree", [](ctl::OperatorClient& client) {
    v1::RollbackRequest request;
    request.set_to(v1::NODE_STATE_IN_TREE);
    return client.Rollback(request).status();
  });
  if (status.ok()) {
    status = AwaitGoal(v1::NODE_STATE_IN_TREE, "every node to be back in-tree").status();
  }
  if (!status.ok()) return status;
  Say("rollback done: every node runs the in-tree cloud provider (1.26) again");
  status = CheckWorkers(false);
  if (!status.ok()) return status;
  // The coordinator is done once every node runs its old manifests, but the agents prove health,
  // not leadership: the last handover (a successor waiting out the lease of a manager that is
  // gone, twice for a kube-controller-manager) may still be under way. Wait for it, so that its
  // gap is measured and a rollback that leaves no manager running the controllers is caught.
  status = WaitForCloudControllers(absl::Seconds(30) + 4 * timing_.lease_duration);
  if (status.ok()) {
    Say("in-tree again: a kube-controller-manager holds its lease and runs the cloud controllers");
  }
  return status;
}

SandboxRun::NodeRun& SandboxRun::FirstToMove(v1::NodeState goal) {
  NodeRun& fallback = nodes_.size() > 1 ? nodes_[1] : nodes_[0];
  v1::PlanRolloutRequest request;
  request.set_goal(goal);
  absl::StatusOr<v1::PlanRolloutResponse> plan = ConnectOperator()->Plan(request);
  if (!plan.ok()) return fallback;
  for (const v1::PlannedStep& step : plan->steps()) {
    if (step.to() != goal) continue;
    for (NodeRun& node : nodes_) {
      if (node.spec().name == step.node()) return node;
    }
  }
  return fallback;
}

absl::Status SandboxRun::AwaitAllDone(v1::NodeState goal) {
  absl::StatusOr<v1::RolloutStatus> done =
      AwaitGoal(goal, StrCat("every node to be ", WireStateName(goal, "-")));
  if (!done.ok()) return done.status();
  Say(goal == v1::NODE_STATE_PREPARED
          ? "rollout done: every node's kube-controller-manager runs with Leader Migration"
          : "rollout done: every node runs the cloud-controller-manager (1.27)");
  absl::Status status;
  if (options_.downtime) status = NoteDowntime(*done);
  if (status.ok() && goal != v1::NODE_STATE_PREPARED) status = CheckProviderIds();
  // The workers go external only once a cloud-controller-manager runs (W1).
  if (status.ok()) status = CheckWorkers(goal != v1::NODE_STATE_PREPARED);
  return status;
}

absl::Status SandboxRun::RunUnhealthyScenario() {
  // A cloud-controller-manager that never gets healthy needs a move that starts one. With Leader
  // Migration every node is prepared first (as an operator would, with --prepare-only): from
  // there the plan's first move to migrated is the one the coordinator sends next (no manager
  // restarts before it to move the leases), so the fault is put on that node and the halt comes
  // on the first move that starts a cloud-controller-manager. On a real node each move to
  // migrated and back takes a minute.
  const v1::NodeState goal = options_.downtime ? Goal() : v1::NODE_STATE_MIGRATED;
  absl::Status status;
  if (!options_.downtime) {
    status = StartRollout(v1::NODE_STATE_PREPARED);
    if (status.ok()) status = AwaitAllDone(v1::NODE_STATE_PREPARED);
  }
  NodeRun& target =
      options_.downtime ? (nodes_.size() > 1 ? nodes_[1] : nodes_[0]) : FirstToMove(goal);
  if (status.ok()) status = cluster_->SetCloudControllerManagerUnhealthy(target.node, true);
  if (!status.ok()) return status;
  Say(StrCat("fault: ", target.spec().name, "'s cloud-controller-manager will never be healthy"));
  status = StartRollout(goal);
  if (!status.ok()) return status;
  absl::StatusOr<v1::RolloutStatus> halted = Await(
      "the rollout to halt",
      [](const v1::RolloutStatus& s) { return s.phase() == v1::RolloutStatus::HALTED; },
      ForMoves(static_cast<int>(nodes_.size()) + 2));
  if (!halted.ok()) return halted.status();
  Say(StrCat("halted as it must be: ", halted->halt_reason()));
  status = cluster_->SetCloudControllerManagerUnhealthy(target.node, false);
  if (status.ok()) status = RollBackToInTree();
  return status;
}

absl::Status SandboxRun::RunScenario(Fault fault) {
  if (fault == Fault::kUnhealthy) return RunUnhealthyScenario();
  const v1::NodeState goal = Goal();
  NodeRun& target = nodes_.size() > 1 ? nodes_[1] : nodes_[0];
  absl::Status status;
  // The kubelet cut off from the API server is cut off on a settled control plane and the
  // rollout starts at once, as when the fault strikes mid-rollout: its Node turns NotReady once
  // the node lifecycle controller's grace period (40 s) has passed, and from then on the
  // coordinator's control-plane check refuses a start, as it must.
  const bool settled_first = fault == Fault::kKubeletUnsynced;
  if (settled_first) status = cluster_->AwaitControlPlaneSettled();
  if (status.ok() && fault == Fault::kStrayBackup) status = InjectStrayBackup(target);
  if (status.ok() && fault == Fault::kKubeletUnsynced) status = CutKubeletOff(target);
  if (fault == Fault::kPreflight) status = RehearsePreflight(target);
  // On the real components the checks read real objects: what an operator runs first must pass
  // on a healthy cluster. (The model's fake cluster has no control-plane pods to check.)
  if (status.ok() && fault == Fault::kNone && options_.cluster != ClusterKind::kModel) {
    status = RunPreflight();
  }
  if (status.ok()) status = StartRollout(goal, /*settle=*/!settled_first);
  if (!status.ok()) return status;
  switch (fault) {
    case Fault::kAgentKill:
    case Fault::kKubeletKill:
    case Fault::kCoordinatorKill:
      // The target's move to the goal: the one that restarts the most components.
      status = KillMidMove(fault, target, goal);
      break;
    default:
      break;
  }
  if (status.ok()) status = AwaitAllDone(goal);
  // What the move is for: a moved worker runs the 1.27 kubelet.
  if (status.ok() && fault == Fault::kNone && goal != v1::NODE_STATE_PREPARED) {
    status = TryNextKubelet(/*moved=*/true);
  }
  if (status.ok() && fault == Fault::kKubeletUnsynced) status = ReconnectKubelet(target);
  if (status.ok()) status = RollBackToInTree();
  return status;
}

absl::Status SandboxRun::CutKubeletOff(NodeRun& target) {
  absl::Status cut = cluster_->CutKubeletOff(target.node, true);
  if (!cut.ok()) return cut;
  Say(StrCat("fault: ", target.spec().name,
             "'s kubelet restarted with no route to the API server: it drops every manifest "
             "change until it has read all its pod sources"));
  return absl::OkStatus();
}

absl::Status SandboxRun::ReconnectKubelet(NodeRun& target) {
  // The fault only counts if the kubelet did drop the change and the agent stepped in: its
  // move says so in a note.
  const std::string log = Path(StrCat("logs/agent-", target.spec().name, ".log"));
  absl::StatusOr<std::string> text = fs_->ReadFile(log);
  constexpr char kStepped[] = "handoff stopped it and restarted the kubelet";
  if (!text.ok() || text->find(kStepped) == std::string::npos) {
    return absl::InternalError(StrCat(
        target.spec().name, "'s agent never stopped a process its kubelet left running (no \"",
        kStepped, "\" in ", log, "): the kubelet cut off from the API server acted on the change"));
  }
  Say(StrCat(target.spec().name,
             "'s agent stopped the old process its kubelet left running "
             "and restarted the kubelet; the move completed"));
  absl::Status back = cluster_->CutKubeletOff(target.node, false);
  if (back.ok()) Say(StrCat(target.spec().name, "'s kubelet has its route to the API server back"));
  return back;
}

int SandboxRun::RunRollout() {
  // Each fault in a rollout of its own; the worker faults together in one, each on its worker.
  std::vector<std::vector<Fault>> scenarios;
  std::vector<Fault> on_workers;
  for (Fault fault : options_.faults) {
    if (!IsWorkerFault(fault)) {
      scenarios.push_back({fault});
      continue;
    }
    if (on_workers.empty()) scenarios.push_back({});  // its place among the scenarios
    on_workers.push_back(fault);
  }
  for (std::vector<Fault>& scenario : scenarios) {
    if (scenario.empty()) scenario = on_workers;
  }
  if (scenarios.empty()) scenarios.push_back({Fault::kNone});
  std::vector<std::string> done;
  for (const std::vector<Fault>& scenario : scenarios) {
    std::vector<std::string> names;
    for (Fault fault : scenario) {
      names.push_back(fault == Fault::kNone ? "no fault" : FaultName(fault));
    }
    const std::string name = StrJoin(names, "+");
    if (scenarios.size() > 1) {
      Say(StrCat("== scenario ", done.size() + 1, " of ", scenarios.size(), ": ", name));
    }
    absl::Status status = IsWorkerFault(scenario.front()) ? RunWorkerScenario(scenario)
                                                          : RunScenario(scenario.front());
    if (!status.ok()) {
      err_ << "handoffctl sandbox: " << status.message() << "\n";
      return Summarise(false, StrCat("did not complete",
                                     done.empty() ? "" : " (completed: ", StrJoin(done, ", "),
                                     done.empty() ? "" : ")", ": ", status.message()));
    }
    const bool held = cluster_->Poll(absl::Now()).invariant_held;
    done.push_back(name);
    if (scenarios.size() > 1 || IsWorkerFault(scenario.front())) {
      Say(StrCat("scenario ", name, " completed; invariant ", held ? "held so far" : "BROKEN"));
    }
  }
  const std::string to = options_.downtime ? "1.27 by the downtime strategy"
                         : options_.goal == SandboxGoal::kPrepared
                             ? "prepared (1.26, Leader Migration)"
                             : "1.27";
  std::string outcome = StrCat("rollout to ", to, " and rollback to 1.26 completed");
  if (!options_.faults.empty()) StrAppend(&outcome, " with each fault: ", StrJoin(done, ", "));
  return Summarise(true, outcome);
}

int SandboxRun::RunUnsafeOrder() {
  // The order the coordinator forbids: one node goes straight to a cloud-controller-manager
  // with Leader Migration while the other kube-controller-managers run the cloud controllers
  // without it. Done with the agent's own command line, around the coordinator, while a rollout
  // is under way (started, then paused): the coordinator's live double-run detector must halt it
  // and `handoffctl status` must name both managers, as the sandbox's own monitor must report it.
  absl::Status status = StartSettled("start", [](ctl::OperatorClient& client) {
    return client.Start(v1::StartRequest()).status();
  });
  if (status.ok()) {
    status = Call("pause", [](ctl::OperatorClient& client) {
      v1::PauseRequest request;
      request.set_reason("the unsafe order is forced next (test-only)");
      return client.Pause(request).status();
    });
  }
  absl::StatusOr<v1::RolloutStatus> paused = absl::UnknownError("not paused");
  if (status.ok()) {
    paused = Await(
        "the move sent before the pause to finish",
        [](const v1::RolloutStatus& s) {
          return s.phase() == v1::RolloutStatus::PAUSED && !s.has_in_flight();
        },
        ForMoves(1));
    status = paused.status();
  }
  if (!status.ok()) {
    err_ << "handoffctl sandbox: " << status.message() << "\n";
    return Summarise(false, StrCat("unsafe order (test-only) not set up: ", status.message()));
  }
  // A node not yet on a cloud-controller-manager (prepared, else in-tree), and not the one whose
  // kube-controller-manager holds the main lease: that one, gone external, would keep the lease
  // and no in-tree manager would run the controllers beside the CCM. The holder runs them
  // without Leader Migration (in-tree) either way. Prepared first: with the prepared node gone
  // to the CCM, every other kube-controller-manager is in-tree, so a holder that loses its lease
  // meanwhile (a loaded machine, a 4 s lease) hands it to another in-tree manager, which runs the
  // controllers beside the CCM too. With an in-tree node chosen instead, a prepared manager could
  // take the lease and, with Leader Migration, leave them to the CCM: no double run to catch (so
  // it went once in CI).
  std::string holder;
  for (const ControllerStats& stats : cluster_->Poll(absl::Now()).controllers) {
    if (!stats.runs.empty() && stats.runs.back().end == RunEnd::kStillRunning) {
      holder = stats.runs.back().process.node;
    }
  }
  const NodeRun* chosen = nullptr;
  for (v1::NodeState wanted : {v1::NODE_STATE_PREPARED, v1::NODE_STATE_IN_TREE}) {
    for (const NodeRun& candidate : nodes_) {
      bool fits = false;
      for (const v1::NodeProgress& node : paused->nodes()) {
        if (node.name() == candidate.spec().name) fits = node.state() == wanted;
      }
      if (fits && candidate.spec().name != holder && chosen == nullptr) chosen = &candidate;
    }
  }
  if (chosen == nullptr) {
    err_ << "handoffctl sandbox: the unsafe order needs a node in-tree or prepared that does not "
            "hold the lease: run it with --nodes 2 or more\n";
    return kSandboxSetupFailed;
  }
  const NodeRun& node = *chosen;
  const AgentHost host = cluster_->AgentHostOf(node.node);
  // The rollout's settings where the node's agent reads its files.
  absl::StatusOr<std::string> settings = fs_->ReadFile(Path("settings.yaml"));
  if (!settings.ok() ||
      !WriteNodeFile(host, "/etc/handoff/rollout-settings.yaml", *settings).ok()) {
    err_ << "handoffctl sandbox: cannot give " << node.spec().name << " the rollout's settings\n";
    return kSandboxSetupFailed;
  }
  for (const char* to : {"prepared", "migrated"}) {
    std::vector<std::string> argv = host.prefix;
    argv.insert(argv.end(),
                {Bin("handoff-agent"), "apply", "--to", to, "--settings",
                 StrCat(host.agent_prefix, "/etc/handoff/rollout-settings.yaml"), "--no-verify",
                 "--kubelet-restart-command", host.kubelet_restart_command});
    if (!host.root.empty()) argv.insert(argv.end(), {"--root", host.root});
    absl::StatusOr<std::unique_ptr<Process>> apply =
        SpawnOwned(argv, Path("logs/unsafe-order.log"));
    if (!apply.ok()) return kSandboxSetupFailed;
    (*apply)->WaitFor(cluster_->MoveBudget(), nullptr);
  }
  Say(StrCat("unsafe order forced: ", node.spec().name,
             " runs a cloud-controller-manager while the others run the in-tree controllers "
             "without Leader Migration"));
  // The cloud-controller-manager takes both leases (no one else competes for them) and starts
  // its controllers: a few lease durations at most. The agents sample the managers meanwhile.
  absl::StatusOr<v1::RolloutStatus> halted = Await(
      "the coordinator to halt the rollout on the double run",
      [](const v1::RolloutStatus& s) { return s.phase() == v1::RolloutStatus::HALTED; },
      absl::Seconds(20) + 5 * timing_.lease_duration);
  if (halted.ok()) {
    Say(StrCat("coordinator halted the rollout: ", halted->halt_reason()));
  } else {
    Say(StrCat("the coordinator did NOT halt the rollout: ", halted.status().message()));
  }
  absl::Time deadline = absl::Now() + absl::Seconds(20) + 5 * timing_.lease_duration;
  while (absl::Now() < deadline && !interrupted_()) {
    if (!cluster_->Poll(absl::Now()).invariant_held) break;
    // The monitor reads what the managers append; nothing signals a new record.
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ShowOperatorStatus();
  return Summarise(false,
                   "unsafe order (test-only): the monitor and the coordinator must report the "
                   "broken invariant");
}

void SandboxRun::ShowOperatorStatus() {
  operator_status_shown_ = true;
  // What an operator sees, from the CLI itself: this program.
  const std::string log = Path("logs/handoffctl-status.txt");
  absl::StatusOr<std::unique_ptr<Process>> shown =
      SpawnOwned({Handoffctl(), "status", "--coordinator",
                  StrCat(cluster_->CoordinatorHost(), ":", coordinator_port_), "--server-name",
                  kCoordinatorServerName, "--ca", Path("pki/handoff/ca.crt"), "--cert",
                  Path("pki/operator.crt"), "--key", Path("pki/operator.key")},
                 log);
  if (!shown.ok()) return;
  (*shown)->WaitFor(absl::Seconds(30), nullptr);
  absl::StatusOr<std::string> text = fs_->ReadFile(log);
  if (!text.ok()) return;
  Say("handoffctl status:");
  out_ << *text << std::flush;
}

}  // namespace handoff::sandbox
