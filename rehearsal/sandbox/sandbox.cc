// The order of a sandbox run and what it says on the way: bring-up (bring_up.cc), the scenario
// (scenario.cc), the summary (report.h).
#include "rehearsal/sandbox/sandbox.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <ostream>
#include <string_view>

#include "common/base/strings.h"
#include "common/system/health_checker.h"
#include "rehearsal/monitor/run_record.h"
#include "rehearsal/sandbox/kubeadm/host_changes.h"
#include "rehearsal/sandbox/report.h"
#include "rehearsal/sandbox/sandbox_run.h"
#include "rehearsal/sandbox/timeline_svg.h"

namespace handoff::sandbox {
namespace {

// Every control-plane agent and `workers` workers' agents connected, every node in-tree.
bool EveryAgentConnectedInTree(const v1::RolloutStatus& status, int workers) {
  if (status.nodes_size() == 0) return false;
  for (const v1::NodeProgress& node : status.nodes()) {
    if (!node.connected() || node.state() != v1::NODE_STATE_IN_TREE) return false;
  }
  return status.workers().connected() == workers && status.workers().in_tree() == workers;
}

}  // namespace

void SandboxRun::Say(const std::string& line) {
  out_ << "[" << FormatSeconds(absl::Now() - started_) << "] " << line << "\n" << std::flush;
}

void SandboxRun::ShowProgress(const v1::RolloutStatus& status) {
  std::string line = ProgressLine(status);
  if (line == last_progress_) return;
  last_progress_ = line;
  const bool held = cluster_->Poll(absl::Now()).invariant_held;
  Say(StrCat(line, held ? "" : "  [INVARIANT BROKEN]"));
}

std::vector<std::string> SandboxRun::ScrapeMetrics() {
  std::unique_ptr<HealthChecker> http = NewCurlHealthChecker();
  struct Scraped {
    std::string name;
    std::string host;
    int port;
    bool running;
  };
  std::vector<Scraped> daemons = {{"coordinator", "127.0.0.1", coordinator_metrics_port_,
                                   coordinator_ && coordinator_->running()}};
  // The agents running now: a replaced node's stopped with its machine, a joined one's started.
  for (const std::vector<NodeRun>* group : {&nodes_, &spares_, &workers_}) {
    for (const NodeRun& node : *group) {
      daemons.push_back({StrCat("agent-", node.spec().name),
                         cluster_->AgentHostOf(node.node).metrics_host, node.metrics_port,
                         node.agent && node.agent->running()});
    }
  }
  std::vector<std::string> lines = {
      StrCat("metrics (Prometheus text, each daemon's --metrics-listen) in ", Path("metrics"), ":")};
  long long agent_moves = 0;
  for (const Scraped& daemon : daemons) {
    if (!daemon.running || daemon.port == 0) continue;
    HealthEndpoint endpoint{"http", daemon.host, daemon.port, "/metrics"};
    absl::StatusOr<HttpAnswer> answer = http->Get(endpoint, absl::Seconds(10), 4 << 20);
    const std::string file = Path(StrCat("metrics/", daemon.name, ".prom"));
    absl::Status saved =
        !answer.ok() ? answer.status()
        : answer->status != 200 || answer->truncated
            ? absl::UnavailableError(StrCat(endpoint.Url(), " answered ", answer->status))
            : WriteFile(file, answer->body);
    if (!saved.ok()) {
      lines.push_back(StrCat("  ", daemon.name, ": not read: ", saved.message()));
      continue;
    }
    // Counters: whole numbers.
    auto sum = [&answer](std::string_view metric) {
      return std::llround(SumOfSamples(answer->body, metric));
    };
    if (daemon.name != "coordinator") {
      agent_moves += sum("handoff_agent_moves_total");
      continue;
    }
    lines.push_back(StrCat("  coordinator: ", sum("handoff_coordinator_moves_total"), " moves, ",
                           sum("handoff_coordinator_verification_failures_total"),
                           " verification failures, ", sum("handoff_coordinator_rollbacks_total"),
                           " rollbacks, ", sum("handoff_coordinator_lease_releases_total"),
                           " lease releases, ", sum("handoff_coordinator_double_runs_total"),
                           " double runs"));
  }
  lines.push_back(StrCat("  agents: ", agent_moves, " moves"));
  return lines;
}

int SandboxRun::Summarise(bool completed, const std::string& outcome) {
  // A run that did not complete says where the coordinator stood, in its own words, before the
  // summary (and keeps it in logs/handoffctl-status.txt).
  if (!completed && !operator_status_shown_ && coordinator_ && coordinator_->running()) {
    ShowOperatorStatus();
  }
  SummaryInputs inputs;
  inputs.outcome = outcome;
  inputs.components = cluster_->ComponentLines();
  inputs.monitor = cluster_->Poll(absl::Now());
  inputs.timing = timing_;
  // Steps and time per node, from the coordinator's audit history.
  if (coordinator_ && coordinator_->running()) {
    absl::StatusOr<v1::HistoryResponse> history =
        ConnectOperator()->History(v1::HistoryRequest());
    if (history.ok()) inputs.history = *std::move(history);
  }
  inputs.metrics = ScrapeMetrics();
  inputs.downtime = downtime_;
  inputs.cluster = cluster_->SummaryLines();
  inputs.cluster.insert(inputs.cluster.end(), worker_lines_.begin(), worker_lines_.end());
  // The picture of the same run, written whole or not at all, so that an operator never opens
  // half a file.
  TimelineInputs timeline;
  timeline.outcome = outcome;
  timeline.started = started_;
  timeline.monitor = inputs.monitor;
  timeline.history = inputs.history;
  timeline.lease_holders = cluster_->LeaseHolders();
  const std::string path = Path("timeline.svg");
  absl::Status written = WriteFile(path, TimelineSvg(timeline));
  inputs.timeline = path;
  if (!written.ok()) {
    inputs.timeline_note = StrCat("(not written: ", written.message(), ")");
  } else if (!options_.keep) {
    inputs.timeline_note = "(removed with the sandbox's directory at exit: --keep keeps it)";
  }
  out_ << SummaryText(inputs);
  return completed && inputs.monitor.invariant_held ? kSandboxHeld : kSandboxBroken;
}

int SandboxRun::Run() {
  absl::Status status = Setup();
  if (status.ok()) status = MakeCertificates();
  if (status.ok()) status = StartCluster();
  // Real managers wait for their leases at start: a kubeadm node's manager that takes over
  // after the join of another node (etcd without quorum meanwhile) waits out a lease or two.
  if (status.ok()) status = WaitForCloudControllers(absl::Seconds(30) + 4 * timing_.lease_duration);
  if (!status.ok()) {
    err_ << "handoffctl sandbox: " << status.message() << "\n";
    return kSandboxSetupFailed;
  }
  Say("in-tree: one kube-controller-manager holds its lease and runs the cloud controllers");
  // Handovers from here on are the rehearsal's; those before were the cluster coming up. Noted
  // in the records too, for whoever reads them later (bench/handover).
  const absl::Time begins = absl::Now();
  cluster_->CountGapsFrom(begins);
  RunRecord note;
  note.t_ns = absl::ToUnixNanos(begins);
  note.event = kMonitorNote;
  note.message = kRehearsalBegins;
  (void)AppendRunRecord(Path("records/sandbox.jsonl"), note);
  // RBAC first in either case: the unsafe order is about the order of the moves, and a real
  // cloud-controller-manager without the lease rules would run nothing at all.
  status = ApplyRbac();
  if (!status.ok()) {
    err_ << "handoffctl sandbox: " << status.message() << "\n";
    return kSandboxSetupFailed;
  }
  // The reason every kubelet must move, shown on a real one before anything moves.
  if (status.ok()) status = TryNextKubelet(/*moved=*/false);
  if (status.ok()) status = StartCoordinator();
  for (std::vector<NodeRun>* group : {&nodes_, &workers_}) {
    for (NodeRun& node : *group) {
      if (status.ok()) status = StartAgent(node);
    }
  }
  if (!status.ok()) {
    err_ << "handoffctl sandbox: " << status.message() << "\n";
    return kSandboxSetupFailed;
  }
  feed_ = std::make_unique<StatusFeed>([this] { return ConnectOperator(); });
  const int workers = static_cast<int>(workers_.size());
  absl::StatusOr<v1::RolloutStatus> ready = Await(
      "every agent to connect",
      [workers](const v1::RolloutStatus& s) { return EveryAgentConnectedInTree(s, workers); },
      absl::Seconds(30));
  if (!ready.ok()) {
    err_ << "handoffctl sandbox: " << ready.status().message() << "\n";
    return kSandboxSetupFailed;
  }
  Say(StrCat("coordinator on ", cluster_->CoordinatorHost(), ":", coordinator_port_, ", ",
             options_.nodes + workers,
             " agents connected (mutual TLS, one certificate each from handoffctl certs; every "
             "daemon started from its --config file)",
             workers == 0 ? std::string()
                          : StrCat("; ", workers, " of them workers', with role: worker")));
  status = RecordWorkerBaseline();
  if (!status.ok()) {
    err_ << "handoffctl sandbox: " << status.message() << "\n";
    return kSandboxSetupFailed;
  }
  if (options_.unsafe_order) return RunUnsafeOrder();
  if (options_.replace) return RunReplacement();
  return options_.kubeadm_upgrade ? RunKubeadmUpgrade() : RunRollout();
}

namespace {

const std::map<std::string, Fault>& Faults() {
  static const std::map<std::string, Fault> kFaults = {
      {"", Fault::kNone},
      {"agent-kill", Fault::kAgentKill},
      {"coordinator-kill", Fault::kCoordinatorKill},
      {"unhealthy", Fault::kUnhealthy},
      {"stray-backup", Fault::kStrayBackup},
      {"kubelet-kill", Fault::kKubeletKill},
      {"kubelet-unsynced", Fault::kKubeletUnsynced},
      {"preflight", Fault::kPreflight},
      {"worker-agent-kill", Fault::kWorkerAgentKill},
      {"worker-kubelet-kill", Fault::kWorkerKubeletKill},
      {"credential-provider", Fault::kCredentialProvider}};
  return kFaults;
}

}  // namespace

bool IsWorkerFault(Fault fault) {
  return fault == Fault::kWorkerAgentKill || fault == Fault::kWorkerKubeletKill ||
         fault == Fault::kCredentialProvider;
}

bool ParseFault(const std::string& name, Fault* fault) {
  auto found = Faults().find(name);
  if (found == Faults().end()) return false;
  *fault = found->second;
  return true;
}

bool ParseFaults(const std::string& list, std::vector<Fault>* faults) {
  std::vector<Fault> parsed;
  for (std::string_view name : StrSplit(list, ",", true)) {
    Fault fault = Fault::kNone;
    if (!ParseFault(std::string(StripWhitespace(name)), &fault) || fault == Fault::kNone ||
        std::find(parsed.begin(), parsed.end(), fault) != parsed.end()) {
      return false;
    }
    parsed.push_back(fault);
  }
  *faults = std::move(parsed);
  return true;
}

std::string FaultName(Fault fault) {
  for (const auto& [name, value] : Faults()) {
    if (value == fault) return name;
  }
  return "";
}

int CleanUpSandboxes(std::ostream& out, std::ostream& err) {
  int cleaned = 0;
  std::vector<std::string> lines = kubeadm::CleanStaleRuns([&](const std::string& line) {
    out << line << "\n";
    ++cleaned;
  });
  bool failed = false;
  for (const std::string& line : lines) {
    if (StartsWith(line, "cleaned up after")) {
      out << line << "\n";
    } else {
      err << "handoffctl sandbox --cleanup: " << line << "\n";
      failed = true;
    }
  }
  if (cleaned == 0 && lines.empty()) out << "nothing left by an earlier run to clean up\n";
  return failed ? 1 : 0;
}

int RunSandbox(const SandboxOptions& options, std::ostream& out, std::ostream& err,
               const std::function<bool()>& interrupted) {
  if (options.nodes < 1 || options.nodes > 9) {
    err << "handoffctl sandbox: --nodes must be between 1 and 9\n";
    return kSandboxSetupFailed;
  }
  SandboxOptions resolved = options;
  // Two workers by default where the cluster has them; the kubeadm cluster's replacement and
  // unsafe-order runs are about the control plane and go without.
  const bool kubeadm_control_plane_only =
      options.cluster == ClusterKind::kKubeadm && (options.replace || options.unsafe_order);
  // --kubeadm-upgrade rehearses kubeadm on the control plane: workers only when asked for.
  if (resolved.workers < 0) {
    resolved.workers = options.cluster == ClusterKind::kReal || kubeadm_control_plane_only ||
                               (options.cluster == ClusterKind::kKubeadm && options.kubeadm_upgrade)
                           ? 0
                           : 2;
  }
  if (resolved.workers > 20) {
    err << "handoffctl sandbox: --workers must be between 0 and 20\n";
    return kSandboxSetupFailed;
  }
  if (resolved.workers > 0 && options.cluster == ClusterKind::kReal) {
    err << "handoffctl sandbox: --workers needs --cluster model or kubeadm: the real cluster "
           "has control-plane nodes only\n";
    return kSandboxSetupFailed;
  }
  if (resolved.workers > 0 && kubeadm_control_plane_only) {
    err << "handoffctl sandbox: --workers with --cluster kubeadm needs an in-place rollout: "
           "--strategy replace and --unsafe-order-for-tests rehearse the control plane only "
           "(give --workers 0)\n";
    return kSandboxSetupFailed;
  }
  // The worker faults strike together in one rollout, each on a worker of its own.
  int on_workers = 0;
  for (Fault fault : resolved.faults) {
    if (!IsWorkerFault(fault)) continue;
    ++on_workers;
    if (resolved.workers < on_workers || resolved.goal == SandboxGoal::kPrepared) {
      err << "handoffctl sandbox: --fault " << FaultName(fault)
          << " strikes a worker while its kubelet goes external: it needs workers (each worker "
             "fault one of its own: --workers "
          << on_workers
          << " or more, --cluster model or kubeadm) and a goal that takes them external (not "
             "--goal prepared)\n";
      return kSandboxSetupFailed;
    }
  }
  SandboxRun run(resolved, out, err, interrupted);
  return run.Run();
}

}  // namespace handoff::sandbox
