#include "agent/cli/agent_cli.h"

#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <ostream>
#include <tuple>

#include "CLI/CLI.hpp"
#include "absl/time/time.h"
#include "agent/apply/applier.h"
#include "agent/cli/cli_config.h"
#include "agent/cli/host_scope.h"
#include "agent/cli/instance_facts.h"
#include "agent/cloud/cluster_tag_step.h"
#include "agent/cloud/instance_tags.h"
#include "agent/daemon/certificate.h"
#include "agent/daemon/daemon.h"
#include "agent/engine/classify.h"
#include "agent/engine/node_snapshot.h"
#include "agent/engine/plan_chain.h"
#include "agent/engine/planner.h"
#include "agent/engine/settings.h"
#include "agent/leadermigration/config.h"
#include "agent/manifest/kubelet_flags.h"
#include "common/base/strings.h"
#include "common/system/log_setup.h"
#include "nlohmann/json.hpp"
#include "spdlog/logger.h"

namespace handoff {
namespace {

namespace lm = leadermigration;

constexpr char kDescription[] =
    "handoff-agent moves one control-plane node from the in-tree AWS cloud provider\n"
    "(kube-controller-manager --cloud-provider=aws) to the AWS cloud-controller-manager with\n"
    "Leader Migration, one state at a time:\n"
    "  in-tree  ->  prepared  ->  migrated  ->  finalized   (and back the same way)\n"
    "  in-tree    kube-controller-manager runs the cloud controllers, no Leader Migration\n"
    "  prepared   kube-controller-manager also competes for the migration lease\n"
    "  migrated   version N+1, kube-controller-manager external, cloud-controller-manager\n"
    "             runs the cloud controllers under the migration lease\n"
    "  finalized  as migrated, Leader Migration switched off on the cloud-controller-manager\n"
    "A worker (--role worker) moves its kubelet alone, in-tree <-> external: the kubelet gets\n"
    "--cloud-provider=external, the ECR credential provider and, when its host name is not\n"
    "its Node's, --hostname-override.\n";

// Options every node command shares, so one command line serves every step.
struct NodeOptions {
  std::string root = "/";
  std::string settings_file;
  std::string k8s_version;
  std::string ccm_image;
  std::string role;       // "": the settings file's (control-plane by default)
  std::string node_name;  // "": the settings file's worker.nodeName
};

// Options of the commands that change the node.
struct ChangeOptions {
  bool no_verify = false;
  std::string timeout;
  size_t keep = 10;
  std::string kubelet_restart;  // "": the default for --root (host_scope.h)
  std::string proc_root;        // "": the default for --root (host_scope.h)
};

void AddChangeOptions(CLI::App& command, ChangeOptions& options) {
  command.add_flag("--no-verify", options.no_verify,
                   "Write the files without waiting for each component to restart healthy (for "
                   "rehearsals on a copy; on a node, verification is what makes the automatic "
                   "rollback possible)");
  command.add_option("--timeout", options.timeout,
                     "How long to wait for each component to restart with the new flags and answer "
                     "its health check, e.g. 6m (default: above the kubelet's 5 min cap on its "
                     "CrashLoopBackOff, which holds back a pod that comes back unchanged soon "
                     "after it ran), 90s");
  command.add_option("--keep", options.keep,
                     "How many finished transactions (with their backups) to keep (default 10)");
  command.add_option("--kubelet-restart-command", options.kubelet_restart,
                     "Command that restarts the kubelet after its flags file changed (default "
                     "\"systemctl restart kubelet\" on a node; with any other --root, none: a "
                     "rehearsal on a copy runs nothing outside it unless named here)");
  command.add_option("--proc-root", options.proc_root,
                     "Where to read (and, to stop a pod the kubelet left running, signal) the "
                     "node's processes (default /proc on a node; with any other --root, that "
                     "root's own /proc, never the host's)");
}

void AddNodeOptions(CLI::App& command, NodeOptions& options) {
  command.add_option("--root", options.root,
                     "Directory that host paths are resolved inside, as in a chroot: symlinks "
                     "and .. never lead out of it (default /; a copy of a node's files for "
                     "rehearsal)");
  command.add_option("--settings", options.settings_file,
                     "Settings file (YAML): paths, target version, cloud-controller-manager image "
                     "and flags, Leader Migration options; see README");
  command.add_option("--k8s-version", options.k8s_version,
                     "Version N+1 of the control plane, e.g. v1.27.3: re-tags kube-apiserver, "
                     "kube-controller-manager and kube-scheduler when moving to migrated (or, with "
                     "downtime, to external); ignored by other steps");
  command.add_option("--ccm-image", options.ccm_image,
                     "cloud-controller-manager image, e.g. "
                     "registry.k8s.io/provider-aws/cloud-controller-manager:v1.27.1; needed to "
                     "move to migrated (or from external to finalized), ignored by other steps");
  command.add_option("--role", options.role,
                     "control-plane (the default) or worker: a worker runs no control-plane "
                     "static pod and only its kubelet moves, in-tree <-> external (settings key "
                     "role)")
      ->check(CLI::IsMember({"control-plane", "worker"}));
  command.add_option("--node-name", options.node_name,
                     "A worker's Node name, which its kubelet keeps when it goes external "
                     "(default: worker.nodeName, else the instance metadata's local-hostname, "
                     "the private DNS name the in-tree provider named the Node after)");
}

// A positive duration ("5m", "90s", "1m30s"); with `allow_zero` also "0s".
absl::StatusOr<absl::Duration> ParseDurationFlag(std::string_view flag, const std::string& text,
                                                 bool allow_zero = false) {
  absl::Duration duration;
  if (!absl::ParseDuration(text, &duration) || duration < absl::ZeroDuration() ||
      (!allow_zero && duration == absl::ZeroDuration()) || duration == absl::InfiniteDuration()) {
    return absl::InvalidArgumentError(
        StrCat(flag, ": '", text, "' is not a duration; write e.g. 5m, 90s or 1m30s"));
  }
  return duration;
}

absl::StatusOr<ApplyOptions> MakeApplyOptions(const ChangeOptions& change) {
  ApplyOptions options;
  options.verify = !change.no_verify;
  if (!change.timeout.empty()) {
    absl::StatusOr<absl::Duration> timeout = ParseDurationFlag("--timeout", change.timeout);
    if (!timeout.ok()) return timeout.status();
    options.verify_options.timeout = *timeout;
  }
  options.keep_transactions = change.keep;
  return options;
}

// Options of `run`, the long-running agent.
struct RunOptions {
  std::string coordinator;
  std::string ca = "/etc/handoff/pki/ca.crt";
  std::string cert = "/etc/handoff/pki/agent.crt";
  std::string key = "/etc/handoff/pki/agent.key";
  std::string cert_refresh_interval = "60s";
  std::string server_name;
  std::string node;
  std::string root = "/";
  std::string settings_file;
  std::string reconnect_max = "30s";
  std::string stream_deadline = "30m";
  std::string move_delay = "0s";
  std::string sample_interval = "2s";
  std::string cloud_refresh = "1m";
  std::string metrics_listen = "off";
  std::string log_format = "auto";
  std::string config;  // read before parsing (cli_config.h); kept for --help
};

void AddRunOptions(CLI::App& command, RunOptions& options) {
  AddConfigOption(command, options.config, "coordinator: handoff.example.internal:7450");
  command
      .add_option("--coordinator", options.coordinator,
                  "The coordinator's address, HOST:PORT (the agent dials it; it listens on no "
                  "port)")
      ->required();
  command.add_option("--ca", options.ca,
                     "The handoff CA (PEM) the coordinator's certificate must chain to (default "
                     "/etc/handoff/pki/ca.crt)");
  command.add_option("--cert", options.cert,
                     "This agent's client certificate (PEM), signed by the handoff CA with "
                     "O=handoff:agents and CN=<node name> (default /etc/handoff/pki/agent.crt)");
  command.add_option("--key", options.key,
                     "The certificate's private key (PEM) (default /etc/handoff/pki/agent.key)");
  command.add_option("--cert-refresh-interval", options.cert_refresh_interval,
                     "How often to read --ca, --cert and --key again: the next connection "
                     "presents replaced files without a restart (a key that is not the "
                     "certificate's, or a certificate for another node, is refused with a "
                     "warning and the previous pair kept; default 60s, at least 1s)");
  command.add_option("--server-name", options.server_name,
                     "The name the coordinator's certificate must carry, when it differs from "
                     "--coordinator's host (e.g. dialing an IP)");
  command.add_option("--node", options.node,
                     "This node's name (default: the CN of --cert). The coordinator accepts a node "
                     "only as its certificate's CN, so a different name is refused at start");
  command.add_option("--root", options.root,
                     "Directory that host paths are resolved inside, as in a chroot: symlinks "
                     "and .. never lead out of it (default /; a copy of a node's files for "
                     "rehearsal)");
  command.add_option("--settings", options.settings_file,
                     "Settings file (YAML) for this node's paths (manifest dir, kubelet flags "
                     "file, state dir) and instanceMetadata.endpoint (its clusterId serves when "
                     "the coordinator's settings have none); versions, images and controllers "
                     "come from the coordinator with each command");
  command.add_option("--reconnect-max", options.reconnect_max,
                     "Longest wait between attempts to reach the coordinator (default 30s; waits "
                     "start at 250ms and double, with jitter)");
  command.add_option("--stream-deadline", options.stream_deadline,
                     "Deadline of each stream to the coordinator; when it passes the agent simply "
                     "reconnects (default 30m)");
  command.add_option("--move-delay", options.move_delay,
                     "For rehearsals and tests: wait this long after recording a move as started "
                     "and before applying it, which widens the window in which a move is in "
                     "progress (default 0s)");
  command.add_option("--sample-interval", options.sample_interval,
                     "How often to ask this node's kube-controller-manager and "
                     "cloud-controller-manager (/healthz?verbose on their secure ports) which "
                     "cloud controllers they run, for the coordinator's live double-run "
                     "detector (default 2s; 0s: never)");
  command.add_option("--cloud-refresh", options.cloud_refresh,
                     "How often to ask EC2 again for this instance's kubernetes.io/cluster/<id> "
                     "tags (DescribeInstances with the instance profile, at the EC2 endpoint of "
                     "the managers' cloud config), which the agent reports for the preflight's "
                     "cluster-tag check (default 1m, at least 1s)");
  command.add_option("--metrics-listen", options.metrics_listen,
                     "Serve Prometheus metrics on http://HOST:PORT/metrics, bound to that address "
                     "only (port 0: any free one, logged at start); off (default) or \"\": none")
      ->capture_default_str();
  command.add_option("--log-format", options.log_format, kLogFormatHelp)
      ->check(CLI::IsMember(LogFormatNames()))
      ->capture_default_str();
}

class Commands {
 public:
  Commands(std::ostream& out, std::ostream& err, const AgentEnvironment& environment)
      : out_(out), err_(err), environment_(environment), open_root_(environment.open_root) {}

  absl::StatusOr<Settings> LoadSettings(const NodeOptions& options) {
    Settings settings;
    if (!options.settings_file.empty()) {
      std::unique_ptr<FileSystem> fs = open_root_("");
      absl::StatusOr<std::string> text = fs->ReadFile(options.settings_file, kSettingsRead);
      if (!text.ok()) return text.status();
      absl::StatusOr<Settings> parsed = ParseSettings(*text, options.settings_file);
      if (!parsed.ok()) return parsed.status();
      settings = *std::move(parsed);
    }
    if (!options.k8s_version.empty()) {
      absl::StatusOr<KubeVersion> version = KubeVersion::Parse(options.k8s_version);
      if (!version.ok()) {
        return absl::InvalidArgumentError(StrCat("--k8s-version: ", version.status().message()));
      }
      settings.k8s_version = *version;
    }
    if (!options.ccm_image.empty()) settings.ccm.image = options.ccm_image;
    if (!options.role.empty()) {
      settings.role = options.role == "worker" ? NodeRole::kWorker : NodeRole::kControlPlane;
    }
    if (!options.node_name.empty()) settings.worker.node_name = options.node_name;
    // Before any command opens (let alone creates) the state dir: one the kubelet reads would
    // turn handoff's own files into broken manifests.
    std::unique_ptr<FileSystem> node = open_root_(options.root);
    absl::Status state_dir = CheckStateDir(
        settings.paths,
        options.settings_file.empty() ? std::string("the default settings") : options.settings_file,
        node.get());
    if (!state_dir.ok()) return state_dir;
    return settings;
  }

  int Status(const NodeOptions& options, const std::string& format) {
    absl::StatusOr<Settings> settings = LoadSettings(options);
    if (!settings.ok()) return Refuse(settings.status());
    std::unique_ptr<FileSystem> fs = open_root_(options.root);
    absl::StatusOr<NodeSnapshot> snapshot = ReadNodeSnapshot(*fs, *settings);
    if (!snapshot.ok()) return Refuse(snapshot.status());
    Classification result = Classify(*snapshot);
    // A move interrupted half-way shows as an inconsistent node; say which transaction it was.
    std::string unfinished;
    absl::StatusOr<std::vector<Journal>> journals =
        ListTransactions(*fs, settings->paths.state_dir);
    if (journals.ok()) {
      for (const Journal& journal : *journals) {
        if (journal.phase == kPhaseStarted || journal.phase == kPhaseDamaged)
          unfinished = journal.id;
      }
    }
    if (format == "json") {
      nlohmann::json json = StatusJson(*snapshot, result);
      json["unfinishedTransaction"] =
          unfinished.empty() ? nlohmann::json(nullptr) : nlohmann::json(unfinished);
      out_ << json.dump(2) << "\n";
    } else {
      PrintStatusText(*snapshot, result);
      if (!unfinished.empty()) {
        out_ << "unfinished transaction: " << unfinished
             << " (run `handoff-agent recover`; apply does it first by itself)\n";
      }
    }
    return result.state == NodeState::kInconsistent ? kExitProblems : kExitOk;
  }

  int Plan(const NodeOptions& options, const std::string& target_name) {
    absl::StatusOr<NodeState> target = ParseTargetState(target_name);
    if (!target.ok()) return Refuse(target.status());
    absl::StatusOr<Settings> settings = LoadSettings(options);
    if (!settings.ok()) return Refuse(settings.status());
    FillWorkerNodeName(*settings);
    std::unique_ptr<FileSystem> fs = open_root_(options.root);
    absl::StatusOr<NodeSnapshot> snapshot = ReadNodeSnapshot(*fs, *settings);
    if (!snapshot.ok()) return Refuse(snapshot.status());
    absl::StatusOr<std::vector<handoff::Plan>> plans = PlanChain(*snapshot, {*target}, *settings);
    if (!plans.ok()) return Refuse(plans.status());
    const handoff::Plan& plan = plans->front();
    err_ << PlanSummary(plan);
    out_ << PlanDiff(plan);
    return kExitOk;
  }

  int LintConfig(const std::string& file, const std::string& component,
                 const std::string& version) {
    lm::LintOptions options;
    if (!component.empty()) {
      absl::StatusOr<lm::Component> parsed = lm::ParseComponent(component);
      if (!parsed.ok()) return Refuse(parsed.status());
      options.component = *parsed;
    }
    if (!version.empty()) {
      absl::StatusOr<KubeVersion> parsed = KubeVersion::Parse(version);
      if (!parsed.ok()) return Refuse(parsed.status());
      options.version = *parsed;
    }
    std::unique_ptr<FileSystem> fs = open_root_("");
    absl::StatusOr<std::string> text = fs->ReadFile(file, kLeaderMigrationConfigRead);
    if (!text.ok()) return Refuse(text.status());
    lm::LintResult result = lm::Lint(*text, options);
    for (const lm::Problem& problem : result.problems) {
      out_ << lm::FormatProblem(file, problem) << "\n";
    }
    if (result.problems.empty()) {
      out_ << file << ": valid LeaderMigrationConfiguration\n";
      return kExitOk;
    }
    return kExitProblems;
  }

  // A worker's Node name, when the settings do not give it: the in-tree provider named the Node
  // after the instance's private DNS name, which the instance metadata gives as local-hostname.
  // Left empty when the metadata does not answer (the move then refuses, saying so).
  static void FillWorkerNodeName(Settings& settings) {
    if (settings.role != NodeRole::kWorker || !settings.worker.node_name.empty() ||
        settings.instance_metadata_endpoint.empty()) {
      return;
    }
    InstanceMetadataOptions metadata;
    metadata.endpoint = settings.instance_metadata_endpoint;
    settings.worker.node_name = ReadInstanceFacts(metadata).local_hostname();
  }

  // Runs `action` with an Applier on the node; the shared part of apply, recover, rollback and
  // backups.
  // `moves`: the action moves the node (apply, rollback), so a worker's proofs are set up.
  template <typename Action>
  int WithApplier(const NodeOptions& node, const ChangeOptions& change, Action action,
                  bool moves = false) {
    absl::StatusOr<Settings> settings = LoadSettings(node);
    if (!settings.ok()) return Refuse(settings.status());
    FillWorkerNodeName(*settings);
    absl::StatusOr<ApplyOptions> options = MakeApplyOptions(change);
    if (!options.ok()) return Refuse(options.status());
    options->before_move = ClusterTagBeforeMove(*settings);
    std::unique_ptr<FileSystem> fs = open_root_(node.root);
    std::unique_ptr<ProcessTable> processes;
    absl::StatusOr<std::string> proc_root =
        Scope(node.root, *fs, change, *options, processes, /*check_now=*/false);
    if (!proc_root.ok()) return Refuse(proc_root.status());
    std::unique_ptr<ProcessSignaller> signals = environment_.open_signals(*proc_root);
    std::unique_ptr<HealthChecker> health = environment_.open_health();
    std::unique_ptr<Clock> clock = environment_.open_clock();
    std::unique_ptr<CommandRunner> commands = environment_.open_commands();
    // A worker's kubelet restart is proven on its Node, containers and credential provider too:
    // for a move (apply, rollback) that is verified.
    std::unique_ptr<WorkerScope> worker;
    if (moves && options->verify && settings->role == NodeRole::kWorker) {
      absl::StatusOr<std::unique_ptr<WorkerScope>> opened = WorkerScope::Open(
          *settings, *fs, *commands, *clock,
          environment_.open_kube ? environment_.open_kube : KubeTransportFactory(
                                                                 kube::NewCurlTransport));
      if (!opened.ok()) return Refuse(opened.status());
      worker = *std::move(opened);
      options->before_move = worker->Guard(std::move(options->before_move));
      options->kubelet_proof = worker->proof();
    }
    Applier applier(Host{*fs, *processes, *health, *clock, *commands, *signals},
                    *std::move(settings), *options, err_);
    return action(applier);
  }

  int PrintReport(const absl::StatusOr<ApplyReport>& report) {
    if (!report.ok()) return Refuse(report.status());
    if (report->no_op) {
      out_ << "the node is already " << NodeStateName(report->to) << "; nothing written\n";
      return kExitOk;
    }
    for (const StepReport& step : report->steps) {
      out_ << step.action << " " << step.path;
      if (!step.verified.empty()) out_ << " (" << step.component << ": " << step.verified << ")";
      out_ << "\n";
    }
    for (const std::string& note : report->notes) out_ << "note: " << note << "\n";
    if (report->ok()) {
      out_ << "transaction " << report->transaction << ": the node is now "
           << NodeStateName(report->to) << "\n";
      return kExitOk;
    }
    out_ << "transaction " << report->transaction << " FAILED: " << report->failure << "\n";
    if (!report->rollback_failure.empty()) {
      out_ << "the undo FAILED too: " << report->rollback_failure
           << "\nthe node needs attention: run `handoff-agent recover` once the cause is fixed\n";
      return kExitNeedsAttention;
    }
    out_ << "every change was undone and the restored components verified; the node is still "
         << NodeStateName(report->from) << "\n";
    return kExitRolledBack;
  }

  int Apply(const NodeOptions& node, const ChangeOptions& change, const std::string& target_name) {
    absl::StatusOr<NodeState> target = ParseTargetState(target_name);
    if (!target.ok()) return Refuse(target.status());
    return WithApplier(
        node, change, [&](Applier& applier) { return PrintReport(applier.Apply(*target)); },
        /*moves=*/true);
  }

  int Rollback(const NodeOptions& node, const ChangeOptions& change) {
    return WithApplier(
        node, change, [&](Applier& applier) { return PrintReport(applier.Rollback()); },
        /*moves=*/true);
  }

  int Recover(const NodeOptions& node, const ChangeOptions& change) {
    return WithApplier(node, change, [&](Applier& applier) {
      absl::StatusOr<std::vector<std::string>> recovered = applier.Recover();
      // FailedPrecondition: refused before anything was done (another holder of the lock, a
      // state dir the kubelet reads), as apply would be.
      if (!recovered.ok() && absl::IsFailedPrecondition(recovered.status())) {
        return Refuse(recovered.status());
      }
      if (!recovered.ok()) {
        err_ << "handoff-agent: " << recovered.status().message() << "\n";
        return kExitNeedsAttention;
      }
      if (recovered->empty()) out_ << "no unfinished transaction; nothing to recover\n";
      for (const std::string& id : *recovered)
        out_ << "undid interrupted transaction " << id << "\n";
      return kExitOk;
    });
  }

  int Backups(const NodeOptions& node, const ChangeOptions& change, const std::string& format) {
    return WithApplier(node, change, [&](Applier& applier) {
      absl::StatusOr<std::vector<Journal>> journals = applier.Transactions();
      if (!journals.ok()) return Refuse(journals.status());
      if (format == "json") {
        nlohmann::json list = nlohmann::json::array();
        for (const Journal& journal : *journals) {
          nlohmann::json item{{"id", journal.id},
                              {"type", journal.kind},
                              {"from", journal.from},
                              {"to", journal.to},
                              {"phase", journal.phase},
                              {"outcome", journal.outcome},
                              {"files", nlohmann::json::array()}};
          for (const JournalEntry& entry : journal.entries) item["files"].push_back(entry.path);
          list.push_back(item);
        }
        out_ << list.dump(2) << "\n";
        return kExitOk;
      }
      if (journals->empty()) out_ << "no transactions recorded in " << node.root << "\n";
      for (const Journal& journal : *journals) {
        out_ << journal.id << "  " << (journal.phase.empty() ? "incomplete" : journal.phase) << "  "
             << journal.kind << " " << journal.from << " -> " << journal.to << "  "
             << journal.entries.size() << " file(s)";
        if (!journal.outcome.empty() && journal.outcome != "committed")
          out_ << "  " << journal.outcome;
        out_ << "\n";
      }
      return kExitOk;
    });
  }

  // `run`: validates everything it can before dialing, so a bad configuration exits 2 with the
  // file or flag named instead of retrying forever.
  // `config`: the options --config stood for; a refusal about one of them names its file and key.
  int Run(const RunOptions& run, const ChangeOptions& change, const ConfigArgs& file) {
    auto refuse = [&](const absl::Status& status) {
      return Refuse(AttributeToConfigFile(status, file));
    };
    DaemonConfig config;
    config.coordinator = run.coordinator;
    const size_t colon = run.coordinator.rfind(':');
    if (colon == std::string::npos || colon == 0 || colon + 1 == run.coordinator.size()) {
      return refuse(absl::InvalidArgumentError(
          StrCat("--coordinator: '", run.coordinator, "' is not HOST:PORT")));
    }
    absl::StatusOr<ApplyOptions> apply = MakeApplyOptions(change);
    if (!apply.ok()) return refuse(apply.status());
    config.agent.apply = *apply;
    absl::StatusOr<absl::Duration> reconnect_max =
        ParseDurationFlag("--reconnect-max", run.reconnect_max);
    if (!reconnect_max.ok()) return refuse(reconnect_max.status());
    config.client.reconnect_max = *reconnect_max;
    absl::StatusOr<absl::Duration> deadline =
        ParseDurationFlag("--stream-deadline", run.stream_deadline);
    if (!deadline.ok()) return refuse(deadline.status());
    config.client.stream_deadline = *deadline;
    absl::StatusOr<absl::Duration> delay = ParseDurationFlag("--move-delay", run.move_delay, true);
    if (!delay.ok()) return refuse(delay.status());
    config.agent.move_delay = *delay;
    absl::StatusOr<absl::Duration> sample =
        ParseDurationFlag("--sample-interval", run.sample_interval, true);
    if (!sample.ok()) return refuse(sample.status());
    config.client.sample_interval = *sample;
    absl::StatusOr<absl::Duration> cloud_refresh =
        ParseDurationFlag("--cloud-refresh", run.cloud_refresh, false);
    if (!cloud_refresh.ok()) return refuse(cloud_refresh.status());
    if (*cloud_refresh < absl::Seconds(1)) {
      return refuse(absl::InvalidArgumentError(
          StrCat("--cloud-refresh ", run.cloud_refresh, " is shorter than 1s")));
    }
    config.agent.cluster_tags_refresh = *cloud_refresh;

    NodeOptions node;
    node.root = run.root;
    node.settings_file = run.settings_file;
    absl::StatusOr<Settings> settings = LoadSettings(node);
    if (!settings.ok()) return refuse(settings.status());
    FillWorkerNodeName(*settings);
    config.agent.paths = settings->paths;
    config.agent.kubelet = settings->kubelet;
    config.agent.role = settings->role;
    config.agent.worker = settings->worker;
    config.agent.apply.before_move = ClusterTagBeforeMove(*settings);
    config.agent.read_instance_identity = [endpoint = settings->instance_metadata_endpoint] {
      InstanceMetadataOptions metadata;
      metadata.endpoint = endpoint;
      return ReadInstanceFacts(metadata);
    };
    config.agent.read_cluster_tags = [endpoint = settings->instance_metadata_endpoint](
                                         const v1::NodeFacts& identity, const std::string& path,
                                         const absl::StatusOr<std::string>& cloud_config) {
      InstanceMetadataOptions metadata;
      metadata.endpoint = endpoint;
      return ReadClusterTagFacts(identity, path, cloud_config, metadata);
    };

    std::unique_ptr<FileSystem> host_files = open_root_("");
    for (auto [flag, path, content] : {std::tuple{"--ca", &run.ca, &config.tls.ca_pem},
                                       std::tuple{"--cert", &run.cert, &config.tls.cert_pem},
                                       std::tuple{"--key", &run.key, &config.tls.key_pem}}) {
      absl::StatusOr<std::string> text = host_files->ReadFile(*path, kPemRead);
      if (!text.ok()) {
        return refuse(absl::InvalidArgumentError(
            StrCat("cannot read ", flag, ": ", text.status().message())));
      }
      *content = *std::move(text);
    }
    absl::StatusOr<std::string> common_name = CertificateCommonName(config.tls.cert_pem);
    if (!common_name.ok()) {
      return refuse(absl::InvalidArgumentError(
          StrCat("--cert ", run.cert, ": ", common_name.status().message())));
    }
    absl::Status key = CheckKeyMatchesCertificate(config.tls.cert_pem, config.tls.key_pem);
    if (!key.ok()) {
      return refuse(absl::InvalidArgumentError(
          StrCat("--key ", run.key, " with --cert ", run.cert, ": ", key.message())));
    }
    if (!run.node.empty() && run.node != *common_name) {
      return refuse(absl::InvalidArgumentError(StrCat(
          "--node ", run.node, " differs from the CN '", *common_name, "' of --cert ", run.cert,
          "; the coordinator accepts a node only as its certificate's CN, so "
          "drop --node or use that node's certificate")));
    }
    config.agent.node_name = *common_name;
    config.tls.server_name = run.server_name;
    // The daemon names these files when it finds its certificate expired or refused.
    config.ca_file = run.ca;
    config.cert_file = run.cert;
    // And read them again every --cert-refresh-interval.
    config.key_file = run.key;
    absl::StatusOr<absl::Duration> cert_refresh =
        ParseDurationFlag("--cert-refresh-interval", run.cert_refresh_interval);
    if (cert_refresh.ok() && *cert_refresh < absl::Seconds(1)) {
      cert_refresh = absl::InvalidArgumentError(
          StrCat("--cert-refresh-interval: '", run.cert_refresh_interval,
                 "' is shorter than 1s; the files would be read over and over for nothing"));
    }
    if (!cert_refresh.ok()) return refuse(cert_refresh.status());
    config.cert_refresh_interval = *cert_refresh;

    config.metrics_listen = run.metrics_listen;

    absl::StatusOr<LogFormat> log_format = ParseLogFormat(run.log_format);
    if (!log_format.ok()) return refuse(log_format.status());
    LogOptions log_options;
    log_options.name = "handoff-agent";
    log_options.format = *log_format;
    log_options.stream = &err_;
    // Only the process's own stderr can be the journal's stream (tests pass a string stream).
    log_options.stream_fd = &err_ == &std::cerr ? STDERR_FILENO : -1;
    log_options.journal_stream = std::getenv("JOURNAL_STREAM");
    log_options.text_pattern = "%Y-%m-%dT%H:%M:%S.%e %L %v";
    log_options.node = config.agent.node_name;
    std::shared_ptr<spdlog::logger> logger = MakeLogger(log_options);
    std::unique_ptr<FileSystem> fs = open_root_(run.root);
    std::unique_ptr<ProcessTable> processes;
    absl::StatusOr<std::string> proc_root =
        Scope(run.root, *fs, change, config.agent.apply, processes, /*check_now=*/true);
    if (!proc_root.ok()) return refuse(proc_root.status());
    std::unique_ptr<ProcessSignaller> signals = environment_.open_signals(*proc_root);
    std::unique_ptr<HealthChecker> health = environment_.open_health();
    std::unique_ptr<Clock> clock = environment_.open_clock();
    std::unique_ptr<CommandRunner> commands = environment_.open_commands();
    // A worker's moves are proven on its Node, containers and credential provider too.
    std::unique_ptr<WorkerScope> worker;
    if (settings->role == NodeRole::kWorker && config.agent.apply.verify) {
      absl::StatusOr<std::unique_ptr<WorkerScope>> opened = WorkerScope::Open(
          *settings, *fs, *commands, *clock,
          environment_.open_kube ? environment_.open_kube
                                 : KubeTransportFactory(kube::NewCurlTransport));
      if (!opened.ok()) return refuse(opened.status());
      worker = *std::move(opened);
      config.agent.worker = settings->worker;  // the ECR registry filled in
      config.agent.apply.before_move = worker->Guard(std::move(config.agent.apply.before_move));
      config.agent.apply.kubelet_proof = worker->proof();
    }
    absl::Status status =
        RunAgentDaemon(config, Host{*fs, *processes, *health, *clock, *commands, *signals}, logger);
    if (!status.ok()) return refuse(status);
    return kExitOk;
  }

 private:
  // Scopes the process table and the kubelet restart to --root (host_scope.h): sets
  // `options.kubelet_restart`, opens `processes` and returns the proc root for the signaller.
  // `check_now` (the daemon): with verification on, the process table must be readable, or
  // every move would be refused (Applier::Run), so the daemon is refused at start instead.
  absl::StatusOr<std::string> Scope(const std::string& root, const FileSystem& node,
                                    const ChangeOptions& change, ApplyOptions& options,
                                    std::unique_ptr<ProcessTable>& processes, bool check_now) {
    absl::StatusOr<HostScope> scope =
        ScopeToRoot(*open_root_(""), node, root, change.proc_root, change.kubelet_restart);
    if (!scope.ok()) return scope.status();
    options.kubelet_restart = scope->kubelet_restart;
    processes = environment_.open_processes(scope->proc_root);
    if (check_now && options.verify) {
      absl::StatusOr<std::vector<ProcessInfo>> listed = processes->List();
      if (!listed.ok()) {
        return absl::FailedPreconditionError(StrCat(
            "verifying each restart reads the node's processes, and ", scope->proc_root,
            " cannot be read (", listed.status().message(), ")",
            scope->on_node ? "; name the process table with --proc-root"
                           : StrCat("; with --root ", root,
                                    " only that root's own /proc is read unless --proc-root names "
                                    "another: pass --no-verify to only write the files (a "
                                    "rehearsal on a copy)")));
      }
    }
    return scope->proc_root;
  }

  int Refuse(const absl::Status& status) {
    err_ << "handoff-agent: " << status.message() << "\n";
    return kExitRefused;
  }

  static nlohmann::json ComponentJson(const ComponentView& view) {
    nlohmann::json json;
    json["manifest"] = view.path;
    json["image"] = view.pod.Image(view.container);
    json["version"] = view.version ? view.version->ToString() : "";
    json["cloudProvider"] = view.Flag("cloud-provider").value_or("");
    json["leaderMigration"] = view.LeaderMigrationEnabled();
    json["leaderMigrationConfig"] = view.Flag("leader-migration-config").value_or("");
    return json;
  }

  static nlohmann::json StatusJson(const NodeSnapshot& snapshot, const Classification& result) {
    nlohmann::json json;
    json["state"] = std::string(NodeStateName(result.state));
    json["problems"] = result.problems;
    json["warnings"] = result.warnings;
    nlohmann::json components = nlohmann::json::object();
    const std::pair<std::string_view, const std::optional<ComponentView>*> all[] = {
        {kKubeApiserver, &result.view.apiserver},
        {kKubeControllerManager, &result.view.controller_manager},
        {kCloudControllerManager, &result.view.cloud_controller_manager},
        {kKubeScheduler, &result.view.scheduler}};
    for (const auto& [name, view] : all) {
      components[std::string(name)] = *view ? ComponentJson(**view) : nlohmann::json(nullptr);
    }
    json["components"] = components;
    nlohmann::json kubelet;
    kubelet["flagsFile"] = snapshot.paths.kubelet_flags_file;
    kubelet["cloudProvider"] = nullptr;
    if (snapshot.kubelet_flags) {
      absl::StatusOr<KubeletFlagsFile> flags = KubeletFlagsFile::Parse(*snapshot.kubelet_flags, "");
      if (flags.ok()) kubelet["cloudProvider"] = flags->flags().Get("cloud-provider").value_or("");
    }
    json["kubelet"] = kubelet;
    json["leaderMigrationConfig"] = {{"path", snapshot.paths.leader_migration_config},
                                     {"present", snapshot.leader_migration_config.has_value()}};
    json["migrationRecord"] = snapshot.migration_record.has_value();
    json["parkedControllerManager"] = {
        {"path", ParkedControllerManagerPath(snapshot.paths)},
        {"present", snapshot.parked_controller_manager.has_value()}};
    return json;
  }

  void PrintStatusText(const NodeSnapshot& snapshot, const Classification& result) {
    out_ << "state: " << NodeStateName(result.state) << "\n";
    const std::pair<std::string_view, const std::optional<ComponentView>*> all[] = {
        {kKubeApiserver, &result.view.apiserver},
        {kKubeControllerManager, &result.view.controller_manager},
        {kCloudControllerManager, &result.view.cloud_controller_manager},
        {kKubeScheduler, &result.view.scheduler}};
    for (const auto& [name, view] : all) {
      out_ << "  " << name << ": ";
      if (!*view) {
        if (name == kKubeControllerManager && snapshot.parked_controller_manager) {
          // Stopped by the downtime path: not in the manifest directory, so not running.
          out_ << "stopped, its manifest parked at "
               << ParkedControllerManagerPath(snapshot.paths) << "\n";
          continue;
        }
        out_ << "absent\n";
        continue;
      }
      const ComponentView& c = **view;
      out_ << c.pod.Image(c.container);
      if (c.component != kKubeScheduler) {
        out_ << ", --cloud-provider=" << c.Flag("cloud-provider").value_or("(none)");
      }
      if (c.component == kKubeControllerManager || c.component == kCloudControllerManager) {
        out_ << ", leader migration "
             << (c.LeaderMigrationEnabled()
                     ? StrCat("on (",
                              c.Flag("leader-migration-config").value_or("default configuration"),
                              ")")
                     : std::string("off"));
      }
      out_ << "\n";
    }
    if (snapshot.kubelet_flags) {
      absl::StatusOr<KubeletFlagsFile> flags = KubeletFlagsFile::Parse(*snapshot.kubelet_flags, "");
      if (flags.ok()) {
        out_ << "  kubelet: --cloud-provider="
             << flags->flags().Get("cloud-provider").value_or("(none)") << "\n";
      }
    }
    for (const std::string& problem : result.problems) out_ << "problem: " << problem << "\n";
    for (const std::string& warning : result.warnings) out_ << "warning: " << warning << "\n";
  }

  std::ostream& out_;
  std::ostream& err_;
  const AgentEnvironment& environment_;
  const FileSystemFactory& open_root_;
};

}  // namespace

AgentEnvironment RealAgentEnvironment() {
  AgentEnvironment environment;
  environment.open_root = NewPosixFileSystem;
  environment.open_processes = NewProcfsProcessTable;
  environment.open_signals = NewPidfdSignaller;
  environment.open_health = NewCurlHealthChecker;
  environment.open_clock = NewRealClock;
  environment.open_commands = NewProcessCommandRunner;
  environment.open_kube = kube::NewCurlTransport;
  return environment;
}

int RunAgentCli(int argc, const char* const* argv, std::ostream& out, std::ostream& err,
                const AgentEnvironment& environment) {
  CLI::App app(kDescription, "handoff-agent");
  app.require_subcommand(1);
  app.footer(
      "Exit codes: 0 success (or nothing to do); 1 lint-config found problems or status found the\n"
      "node inconsistent; 2 refused, nothing written (bad usage, unreadable input, a move that is\n"
      "not allowed, another apply running); 3 the move failed verification and was undone;\n"
      "4 the move and its undo failed: the node needs attention (handoff-agent recover).");
  Commands commands(out, err, environment);

  NodeOptions status_options;
  std::string format = "text";
  CLI::App* status = app.add_subcommand(
      "status",
      "Show the node's state (in-tree, prepared, migrated, finalized, stopped, external or "
      "inconsistent) "
      "and every problem");
  AddNodeOptions(*status, status_options);
  status->add_option("-o,--output", format, "Output format: text or json")
      ->check(CLI::IsMember({"text", "json"}));

  NodeOptions plan_options;
  std::string target;
  CLI::App* plan = app.add_subcommand(
      "plan", "Print, as unified diffs, every file a move to --to would write; writes nothing");
  plan->add_option("--to", target,
                   "Target state, one step from the current one: in-tree, prepared, migrated or "
                   "finalized (Leader Migration), or stopped, external (with downtime)")
      ->required();
  AddNodeOptions(*plan, plan_options);

  std::string lint_file;
  std::string lint_component;
  std::string lint_version;
  CLI::App* lint = app.add_subcommand(
      "lint-config",
      "Check a LeaderMigrationConfiguration file (e.g. /etc/leadermigration.conf), "
      "including the mistakes copied from the upstream docs");
  lint->add_option("FILE", lint_file, "The file to check")->required();
  lint->add_option("--component", lint_component,
                   "The manager that reads it: kube-controller-manager or cloud-controller-manager "
                   "(checks names and assignments for that manager)");
  lint->add_option("--k8s-version", lint_version,
                   "That manager's version, e.g. v1.27 (controller names changed in 1.28)");

  NodeOptions apply_node;
  ChangeOptions apply_change;
  std::string apply_target;
  CLI::App* apply = app.add_subcommand(
      "apply",
      "Move the node to --to: back up every file and journal the move under the state dir, write "
      "each file atomically in a safe order, prove each component restarted with the new flags "
      "and is healthy, and undo everything (verified) when one is not");
  apply->add_option("--to", apply_target,
                    "Target state, one step from the current one: in-tree, prepared, migrated, "
                    "finalized, stopped or external")
      ->required();
  AddNodeOptions(*apply, apply_node);
  AddChangeOptions(*apply, apply_change);

  NodeOptions recover_node;
  ChangeOptions recover_change;
  CLI::App* recover = app.add_subcommand(
      "recover",
      "Undo a move that was interrupted (crash, kill, power loss), so the node is "
      "wholly in its state before it; apply and rollback do this first by themselves");
  AddNodeOptions(*recover, recover_node);
  AddChangeOptions(*recover, recover_change);

  NodeOptions rollback_node;
  ChangeOptions rollback_change;
  CLI::App* rollback =
      app.add_subcommand("rollback",
                         "Restore the node to its state before its last completed move (itself a "
                         "journaled, verified move)");
  AddNodeOptions(*rollback, rollback_node);
  AddChangeOptions(*rollback, rollback_change);

  NodeOptions backups_node;
  ChangeOptions backups_change;
  std::string backups_format = "text";
  CLI::App* backups = app.add_subcommand(
      "backups", "List the recorded moves (transactions) whose backups are kept, oldest first");
  AddNodeOptions(*backups, backups_node);
  backups->add_option("-o,--output", backups_format, "Output format: text or json")
      ->check(CLI::IsMember({"text", "json"}));

  RunOptions run_options;
  ChangeOptions run_change;
  CLI::App* run = app.add_subcommand(
      "run",
      "Run as the node's long-lived agent: dial the coordinator (mutual TLS), keep one stream "
      "open, and carry out its commands (moves, plans, reports) one at a time with the same "
      "transactions as apply. Each move is recorded under the state dir before it starts, so "
      "it runs at most once and a move cut short by a crash is undone at the next start. "
      "SIGTERM or SIGINT: no new commands, a running move finishes, then exit 0. Exit 2 before "
      "dialing on a bad configuration (an unreadable --ca/--cert/--key, a --node that is not "
      "the certificate's CN)");
  AddRunOptions(*run, run_options);
  AddChangeOptions(*run, run_change);

  std::vector<std::string> args(argv + 1, argv + argc);
  // `run --config FILE`: the file's options go right after "run", before the command line's.
  ConfigArgs config;
  if (!args.empty() && args.front() == "run") {
    absl::StatusOr<ConfigArgs> loaded =
        LoadConfigFile(*run, std::vector<std::string>(args.begin() + 1, args.end()));
    if (!loaded.ok()) {
      err << "handoff-agent run: " << loaded.status().message() << "\n";
      return kExitRefused;
    }
    config = *std::move(loaded);
    args.insert(args.begin() + 1, config.args.begin(), config.args.end());
  }
  std::reverse(args.begin(), args.end());  // CLI11 parses a reversed vector
  try {
    app.parse(args);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() != 0 && !config.sources.empty()) {
      err << AttributeToConfigFile(absl::InvalidArgumentError(e.what()), config).message()
          << "\n";
      return kExitRefused;
    }
    int code = app.exit(e, out, err);
    return code == 0 ? kExitOk : kExitRefused;
  }
  if (status->parsed()) return commands.Status(status_options, format);
  if (plan->parsed()) return commands.Plan(plan_options, target);
  if (apply->parsed()) return commands.Apply(apply_node, apply_change, apply_target);
  if (recover->parsed()) return commands.Recover(recover_node, recover_change);
  if (rollback->parsed()) return commands.Rollback(rollback_node, rollback_change);
  if (backups->parsed()) return commands.Backups(backups_node, backups_change, backups_format);
  if (run->parsed()) return commands.Run(run_options, run_change, config);
  return commands.LintConfig(lint_file, lint_component, lint_version);
}

}  // namespace handoff
