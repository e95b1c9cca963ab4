#include "agent/apply/applier.h"

#include <algorithm>
#include <csignal>
#include <cstdlib>
#include <ostream>

#include "agent/engine/classify.h"
#include "agent/engine/node_snapshot.h"
#include "common/base/strings.h"
#include "common/fs/atomic_file.h"

namespace handoff {
namespace {

std::string Action(const FileChange& change) {
  if (!change.before) return "create";
  if (!change.after) return "remove";
  return "replace";
}

bool IsUnder(const std::string& path, const std::string& dir) {
  return StartsWith(path, EndsWith(dir, "/") ? dir : dir + "/");
}

// The kubelet's default file-check frequency: a manifest change inotify missed is seen at the
// next re-list of the manifest directory, at most this long after it.
constexpr absl::Duration kKubeletManifestRelist = absl::Seconds(20);
// A pod's termination grace when its spec does not set one (the API's default).
constexpr absl::Duration kDefaultTerminationGrace = absl::Seconds(30);
// After SIGKILL, how long a process may take to be gone.
constexpr absl::Duration kKillWait = absl::Seconds(10);

// The grace the kubelet gives the pod `manifest` describes when it stops it:
// spec.terminationGracePeriodSeconds, else the default.
absl::Duration TerminationGrace(const std::optional<std::string>& manifest,
                                const std::string& path) {
  if (!manifest) return kDefaultTerminationGrace;
  absl::StatusOr<StaticPod> pod = StaticPod::Parse(*manifest, path);
  if (!pod.ok()) return kDefaultTerminationGrace;
  const YAML::Node seconds = pod->node()["spec"]["terminationGracePeriodSeconds"];
  long value = 0;
  if (!seconds.IsScalar() || !YAML::convert<long>::decode(seconds, value) || value < 0) {
    return kDefaultTerminationGrace;
  }
  return absl::Seconds(value);
}

std::string Pids(const std::vector<ProcessInfo>& processes) {
  std::vector<std::string> pids;
  for (const ProcessInfo& process : processes) pids.push_back(StrCat(process.pid));
  return StrJoin(pids, ", ");
}

}  // namespace

HealthEndpoint KubeletHealth(const Settings& settings) {
  HealthEndpoint endpoint;
  endpoint.scheme = settings.kubelet.healthz.scheme;
  endpoint.host = settings.kubelet.healthz.host;
  endpoint.port = settings.kubelet.healthz.port;
  endpoint.path = settings.kubelet.healthz.path;
  return endpoint;
}

Applier::Applier(Host host, Settings settings, ApplyOptions options, std::ostream& log)
    : host_(host),
      settings_(std::move(settings)),
      options_(std::move(options)),
      log_(log),
      verifier_(host.processes, host.health, host.clock, options_.verify_options) {}

absl::StatusOr<std::unique_ptr<FileSystem::Lock>> Applier::Lock() {
  // The CLI checks this with the settings file's name; checked again here, before the first
  // thing is created, for every other way an Applier is made.
  absl::Status state_dir = CheckStateDir(settings_.paths, "settings", &host_.fs);
  if (!state_dir.ok()) {
    return absl::FailedPreconditionError(
        StrCat(state_dir.message(), " (nothing was created or written)"));
  }
  if (!host_.fs.Exists(settings_.paths.state_dir)) {
    absl::Status dir = EnsureDirectory(host_.fs, settings_.paths.state_dir, 0700);
    if (!dir.ok()) return dir;
  }
  const std::string path = StrCat(settings_.paths.state_dir, "/lock");
  absl::StatusOr<std::unique_ptr<FileSystem::Lock>> lock = host_.fs.TryLock(path);
  if (!lock.ok() && absl::IsUnavailable(lock.status())) {
    return absl::FailedPreconditionError(
        StrCat("another handoff-agent is changing this node (it holds ", path,
               "); wait for it to finish"));
  }
  return lock;
}

absl::StatusOr<ApplyReport> Applier::Apply(NodeState target) {
  // First a look without the lock, which writes nothing: a move that would be refused, or is
  // already done, leaves no trace on the node (not even the lock file). Unless a transaction is
  // unfinished: then the node must be recovered before it can be judged.
  absl::StatusOr<std::vector<Journal>> journals =
      ListTransactions(host_.fs, settings_.paths.state_dir);
  if (!journals.ok()) return journals.status();
  const bool unfinished = std::any_of(journals->begin(), journals->end(), [](const Journal& j) {
    return j.phase != kPhaseCommitted && j.phase != kPhaseRolledBack;
  });
  // The move options_.before_move accepted, and the lines it gave for the operator.
  std::optional<std::pair<NodeState, NodeState>> accepted;
  std::vector<std::string> notes;
  auto check_move = [&](const Plan& plan) -> absl::Status {
    if (!options_.before_move) return absl::OkStatus();
    if (accepted == std::make_pair(plan.from, plan.to)) return absl::OkStatus();
    absl::StatusOr<std::vector<std::string>> lines =
        options_.before_move(plan.from, plan.to, settings_);
    if (!lines.ok()) return lines.status();
    accepted = std::make_pair(plan.from, plan.to);
    notes = *std::move(lines);
    return absl::OkStatus();
  };
  if (!unfinished) {
    absl::StatusOr<NodeSnapshot> snapshot = ReadNodeSnapshot(host_.fs, settings_);
    if (!snapshot.ok()) return snapshot.status();
    absl::StatusOr<Plan> plan = PlanTransition(*snapshot, Classify(*snapshot), target, settings_);
    if (!plan.ok()) return plan.status();
    absl::Status sources = CheckMountSources(*plan);
    if (!sources.ok()) return sources;
    if (plan->empty()) {
      ApplyReport report;
      report.from = report.to = target;
      report.no_op = true;
      return report;
    }
    // Before the lock, so that a refused move leaves no trace on the node.
    absl::Status checked = check_move(*plan);
    if (!checked.ok()) return checked;
  }

  // Then the same under the lock, after recovery, on a fresh read of the node.
  absl::StatusOr<std::unique_ptr<FileSystem::Lock>> lock = Lock();
  if (!lock.ok()) return lock.status();
  absl::StatusOr<std::vector<std::string>> recovered = RecoverLocked();
  if (!recovered.ok()) return recovered.status();
  absl::StatusOr<NodeSnapshot> snapshot = ReadNodeSnapshot(host_.fs, settings_);
  if (!snapshot.ok()) return snapshot.status();
  Classification current = Classify(*snapshot);
  absl::StatusOr<Plan> plan = PlanTransition(*snapshot, current, target, settings_);
  if (!plan.ok()) return plan.status();
  if (plan->empty()) {
    ApplyReport report;
    report.from = report.to = target;
    report.no_op = true;
    return report;
  }
  // Again only when recovery (or another writer) changed the move judged without the lock.
  absl::Status checked = check_move(*plan);
  if (!checked.ok()) return checked;
  absl::StatusOr<ApplyReport> report = Run(*plan, "apply", "");
  if (report.ok()) report->notes.insert(report->notes.begin(), notes.begin(), notes.end());
  return report;
}

absl::Status Applier::CheckMountSources(const Plan& plan) const {
  // The kubelet will not start a pod whose hostPath of type File or Directory is missing; such a
  // move would only be undone, so it is refused before anything is written.
  std::vector<std::string> missing;
  auto will_exist = [&](const std::string& path) {
    for (const FileChange& change : plan.changes) {
      if (change.path == path) return change.after.has_value();
    }
    return host_.fs.Exists(path);
  };
  for (const FileChange& change : plan.changes) {
    if (!change.after || !IsUnder(change.path, settings_.paths.manifest_dir)) continue;
    absl::StatusOr<StaticPod> pod = StaticPod::Parse(*change.after, change.path);
    if (!pod.ok()) return pod.status();
    const YAML::Node& root = pod->node();
    const YAML::Node volumes = root["spec"]["volumes"];
    if (!volumes.IsDefined() || !volumes.IsSequence()) continue;
    for (const YAML::Node& volume : volumes) {
      const YAML::Node host_path = volume["hostPath"];
      if (!host_path.IsDefined() || !host_path["type"].IsDefined()) continue;
      const std::string type = host_path["type"].Scalar();
      const std::string path = host_path["path"].Scalar();
      if ((type == "File" || type == "Directory") && !will_exist(path)) {
        missing.push_back(StrCat(change.path, ": volume '", volume["name"].Scalar(), "' mounts ",
                                 path, " (type ", type, "), which does not exist"));
      }
    }
  }
  if (missing.empty()) return absl::OkStatus();
  return absl::FailedPreconditionError(
      StrCat("the new manifests mount files that are missing, so the kubelet could not start them; "
             "nothing was written:\n  - ",
             StrJoin(missing, "\n  - ")));
}

std::string Applier::NewTransactionId(NodeState from, NodeState to) {
  // A sequence number first, so that ids sort in the order the moves were made even within one
  // second (the time is for people).
  long sequence = 0;
  absl::StatusOr<std::vector<std::string>> ids =
      host_.fs.ListDirectory(TransactionsDir(settings_.paths.state_dir));
  if (ids.ok()) {
    for (const std::string& id : *ids) sequence = std::max(sequence, std::atol(id.c_str()));
  }
  char number[32];
  std::snprintf(number, sizeof(number), "%06ld", sequence + 1);
  return StrCat(number, "-",
                absl::FormatTime("%Y%m%dT%H%M%SZ", host_.clock.Now(), absl::UTCTimeZone()), "-",
                NodeStateName(from), "-to-", NodeStateName(to));
}

absl::Status Applier::EnsureParent(const std::string& path) {
  // Only handoff's own directories are created (the parked kube-controller-manager's, the first
  // time one is parked); a missing manifest or kubelet directory stays an error.
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos || slash == 0) return absl::OkStatus();
  const std::string parent = path.substr(0, slash);
  if (!IsUnder(path, settings_.paths.state_dir) || host_.fs.Exists(parent)) {
    return absl::OkStatus();
  }
  return EnsureDirectory(host_.fs, parent, 0700);
}

absl::Status Applier::WriteJournal(const Journal& journal) {
  return AtomicReplace(host_.fs, JournalPath(settings_.paths.state_dir, journal.id), journal.Emit(),
                       FileInfo{false, 0600, 0, 0});
}

absl::Status Applier::RestartKubelet() {
  if (options_.kubelet_restart.empty()) {
    constexpr char kNotRestarted[] =
        "the kubelet's flags file changed and no kubelet was restarted: no kubelet restart "
        "command was named (--kubelet-restart-command)";
    log_ << kNotRestarted << "\n";
    interventions_.push_back(kNotRestarted);
    return absl::OkStatus();
  }
  log_ << "restarting the kubelet: " << StrJoin(options_.kubelet_restart, " ") << "\n";
  return host_.commands.Run(options_.kubelet_restart, options_.command_timeout);
}

absl::StatusOr<std::vector<ProcessInfo>> Applier::ProcessesBefore(const FileChange& change) {
  // The processes to see replaced: matched by the binaries of the manifest as it is now (or, for
  // a component being created, as it will be).
  const std::optional<std::string>& content = change.before ? change.before : change.after;
  ComponentCheck check;
  if (change.component == kKubelet) {
    check = CheckForKubelet({}, KubeletHealth(settings_));
  } else {
    absl::StatusOr<StaticPod> pod = StaticPod::Parse(content.value_or(""), change.path);
    absl::StatusOr<size_t> container =
        pod.ok() ? pod->FindContainer(change.component) : absl::StatusOr<size_t>(pod.status());
    check = container.ok() ? CheckForManifest(change.component, &*pod, *container)
                           : CheckForManifest(change.component, nullptr, 0);
  }
  return verifier_.Running(check);
}

absl::Status Applier::VerifyComponent(const std::string& component,
                                      const std::optional<std::string>& content,
                                      const std::optional<std::string>& replaced,
                                      const std::string& path,
                                      const std::vector<ProcessInfo>& before) {
  ComponentCheck check;
  if (component == kKubelet) {
    // What the kubelet must run with now: its files as they are on disk, read as its unit
    // starts it (every file the move wrote, whichever was last).
    absl::StatusOr<NodeSnapshot> node = ReadNodeSnapshot(host_.fs, settings_);
    if (!node.ok()) return node.status();
    absl::StatusOr<std::vector<std::string>> args = ExpectedKubeletArgs(*node);
    if (!args.ok()) return args.status();
    check = CheckForKubelet(*args, KubeletHealth(settings_), settings_.kubelet.settle);
  } else if (content) {
    absl::StatusOr<StaticPod> pod = StaticPod::Parse(*content, path);
    if (!pod.ok()) return pod.status();
    absl::StatusOr<size_t> container = pod->FindContainer(component);
    if (!container.ok()) return container.status();
    check = CheckForManifest(component, &*pod, *container);
  } else {
    check = CheckForManifest(component, nullptr, 0);
  }
  // A process that already runs exactly as intended need not be replaced: when a move is undone
  // after the kubelet never picked up the change, the old process is the right one.
  for (const ProcessInfo& process : before) {
    if (!check.present || !RunsAsChecked(check, process)) check.before.push_back(process);
  }
  log_ << "waiting for " << component << " to " << (check.present ? "restart" : "stop") << "\n";
  std::function<void(absl::Time)> old_gone;
  if (options_.on_processes_gone) {
    old_gone = [&](absl::Time at) {
      options_.on_processes_gone(ProcessesGone{component, check.before, at});
    };
  }
  std::function<absl::Status(const std::vector<ProcessInfo>&)> outlived;
  if (component != kKubelet) {
    // The kubelet ends a changed static pod within the old pod's grace of noticing the change.
    const absl::Duration grace = TerminationGrace(replaced, path);
    check.stop_within = grace + kKubeletManifestRelist;
    outlived = [&, grace](const std::vector<ProcessInfo>& left) {
      return StopLeftRunning(component, left, check.stop_within, grace);
    };
  }
  return verifier_.Wait(check, old_gone, outlived);
}

absl::Status Applier::StopLeftRunning(const std::string& component,
                                      const std::vector<ProcessInfo>& left, absl::Duration waited,
                                      absl::Duration grace) {
  log_ << component << ": the kubelet has not stopped process " << Pids(left) << " in the "
       << absl::FormatDuration(waited)
       << " since the manifest changed, so it never will: a kubelet drops a change it sees before "
          "it has read all its pod sources (the API server among them; "
          "kubernetes/kubernetes#112814) "
          "and then neither stops the old pod nor starts the new one until it restarts. Stopping "
          "it as the kubelet would (SIGTERM, SIGKILL after "
       << absl::FormatDuration(grace) << "), then restarting the kubelet\n";
  const auto running = [&]() -> absl::StatusOr<std::vector<ProcessInfo>> {
    absl::StatusOr<std::vector<ProcessInfo>> now = host_.processes.List();
    if (!now.ok()) return now.status();
    return StillRunning(left, *now);
  };
  const auto signal_all = [&](const std::vector<ProcessInfo>& processes,
                              int signal) -> absl::Status {
    for (const ProcessInfo& process : processes) {
      absl::Status sent = host_.signals.Signal(process, signal);
      if (!sent.ok() && !absl::IsNotFound(sent)) {
        return absl::Status(sent.code(),
                            StrCat(component, ": the kubelet left process ", process.pid,
                                   " running and it cannot be stopped (", sent.message(),
                                   "); the kubelet was not restarted"));
      }
    }
    return absl::OkStatus();
  };
  // Waits up to `limit` for every process left to be gone; returns those still running.
  const auto await_gone = [&](absl::Duration limit) -> absl::StatusOr<std::vector<ProcessInfo>> {
    const absl::Time until = host_.clock.Now() + limit;
    const absl::Duration interval =
        std::max(options_.verify_options.gone_poll_interval, absl::Milliseconds(1));
    while (true) {
      absl::StatusOr<std::vector<ProcessInfo>> still = running();
      if (!still.ok() || still->empty()) return still;
      const absl::Time now = host_.clock.Now();
      if (now >= until) return still;
      host_.clock.SleepFor(std::min(interval, until - now));
    }
  };
  absl::Status sent = signal_all(left, SIGTERM);
  if (!sent.ok()) return sent;
  absl::StatusOr<std::vector<ProcessInfo>> still = await_gone(grace);
  if (still.ok() && !still->empty()) {
    sent = signal_all(*still, SIGKILL);
    if (!sent.ok()) return sent;
    still = await_gone(kKillWait);
  }
  if (!still.ok()) return still.status();
  if (!still->empty()) {
    return absl::DeadlineExceededError(StrCat(component, ": process ", Pids(*still),
                                              " still running ", absl::FormatDuration(kKillWait),
                                              " after SIGKILL; the kubelet was not restarted"));
  }
  interventions_.push_back(
      StrCat(component, ": the kubelet left process ", Pids(left), " running ",
             absl::FormatDuration(waited),
             " after the manifest changed (a kubelet that has not read all its pod sources drops "
             "the change); handoff stopped it and restarted the kubelet"));
  return RestartKubelet();
}

absl::StatusOr<ApplyReport> Applier::Run(const Plan& plan, const std::string& kind,
                                         const std::string& undoes) {
  absl::Status sources = CheckMountSources(plan);
  if (!sources.ok()) return sources;
  if (options_.verify && options_.kubelet_restart.empty()) {
    for (const FileChange& change : plan.changes) {
      if (change.component != kKubelet) continue;
      return absl::FailedPreconditionError(StrCat(
          change.path,
          " would change, and no kubelet restart command was named (--kubelet-restart-command), "
          "so no kubelet could come back with the new flags to be verified; nothing was written. "
          "Name the command, or pass --no-verify to only write the files"));
    }
  }
  if (options_.verify) {
    // Otherwise the move would fail at its first component, after the backups were taken.
    absl::StatusOr<std::vector<ProcessInfo>> listed = host_.processes.List();
    if (!listed.ok()) {
      return absl::FailedPreconditionError(
          StrCat("verifying each restart reads the node's processes, and they cannot be read (",
                 listed.status().message(),
                 "); nothing was written. Name the node's process table with --proc-root, or pass "
                 "--no-verify to only write the files (a rehearsal on a copy of a node's files)"));
    }
  }
  const std::string& state_dir = settings_.paths.state_dir;

  Journal journal;
  journal.id = NewTransactionId(plan.from, plan.to);
  journal.kind = kind;
  journal.undoes = undoes;
  journal.from = std::string(NodeStateName(plan.from));
  journal.to = std::string(NodeStateName(plan.to));
  journal.phase = std::string(kPhaseStarted);
  journal.started_at = host_.clock.Now();
  for (const FileChange& change : plan.changes) {
    JournalEntry entry;
    entry.path = change.path;
    entry.component = change.component;
    entry.existed = change.before.has_value();
    entry.removes = !change.after.has_value();
    if (entry.existed) {
      absl::StatusOr<FileInfo> info = host_.fs.Stat(change.path);
      if (!info.ok()) return info.status();
      entry.attributes = *info;
    } else {
      // kubeadm writes manifests 0600; handoff's state is private; the Leader Migration file is
      // read by the managers in their containers.
      const bool private_file =
          IsUnder(change.path, settings_.paths.manifest_dir) || IsUnder(change.path, state_dir);
      entry.attributes = FileInfo{false, private_file ? 0600u : 0644u, 0, 0};
    }
    journal.entries.push_back(entry);
  }

  // Backups, then the journal, each durable before the first change to the node: after a crash
  // at any later point, recovery finds the journal and every backup it names.
  absl::Status status =
      EnsureDirectory(host_.fs, StrCat(TransactionDir(state_dir, journal.id), "/files"));
  for (size_t i = 0; status.ok() && i < plan.changes.size(); ++i) {
    if (plan.changes[i].after) status = EnsureParent(plan.changes[i].path);
    if (!status.ok() || !plan.changes[i].before) continue;
    status = AtomicReplace(host_.fs, BackupPath(state_dir, journal.id, i), *plan.changes[i].before,
                           FileInfo{false, 0600, 0, 0});
  }
  if (status.ok()) status = WriteJournal(journal);
  if (!status.ok()) {
    return absl::Status(status.code(), StrCat("could not record the transaction before changing "
                                              "the node (nothing on the node was changed): ",
                                              status.message()));
  }
  log_ << "transaction " << journal.id << ": " << journal.from << " -> " << journal.to << "\n";

  interventions_.clear();
  ApplyReport report;
  report.transaction = journal.id;
  report.from = plan.from;
  report.to = plan.to;
  size_t touched = 0;
  // The kubelet's processes from before the first of its files in a row changed: its files are
  // written together and the kubelet restarted once, after the last.
  std::optional<std::vector<ProcessInfo>> kubelet_before;
  for (size_t i = 0; i < plan.changes.size(); ++i) {
    const FileChange& change = plan.changes[i];
    const bool kubelet = change.component == kKubelet;
    const bool more_for_kubelet =
        kubelet && i + 1 < plan.changes.size() && plan.changes[i + 1].component == kKubelet;
    StepReport step{change.path, Action(change), change.component, ""};
    absl::StatusOr<std::vector<ProcessInfo>> before = std::vector<ProcessInfo>();
    if (kubelet && kubelet_before) {
      before = *kubelet_before;
    } else if (options_.verify && !change.component.empty()) {
      before = ProcessesBefore(change);
    }
    if (!before.ok()) {
      status = before.status();
      break;
    }
    if (kubelet) kubelet_before = *before;
    log_ << step.action << " " << change.path << "\n";
    ++touched;
    status = change.after ? AtomicReplace(host_.fs, change.path, *change.after,
                                          journal.entries[touched - 1].attributes)
                          : DurableRemove(host_.fs, change.path);
    if (status.ok() && more_for_kubelet) {
      step.verified = "written; the kubelet restarts once its last file is";
      report.steps.push_back(step);
      continue;
    }
    if (kubelet) kubelet_before.reset();
    KubeletProof* proof = kubelet && options_.verify ? options_.kubelet_proof : nullptr;
    if (status.ok() && proof) status = proof->Before();
    if (status.ok() && kubelet) status = RestartKubelet();
    if (status.ok() && options_.verify && !change.component.empty()) {
      status = VerifyComponent(change.component, change.after, change.before, change.path, *before);
      if (status.ok()) {
        step.verified = change.after ? "restarted with the new flags and healthy" : "stopped";
      }
    }
    if (status.ok() && proof) {
      absl::StatusOr<std::string> proven = proof->After();
      status = proven.status();
      if (proven.ok()) StrAppend(&step.verified, "; ", *proven);
    }
    if (!status.ok()) {
      status = absl::Status(status.code(), StrCat(change.path, ": ", status.message()));
      break;
    }
    report.steps.push_back(step);
  }

  if (status.ok()) {
    journal.phase = std::string(kPhaseCommitted);
    journal.outcome = "committed";
    absl::Status committed = WriteJournal(journal);
    if (!committed.ok()) {
      // Every change is in place and verified, but the commit mark may not be durable: after a
      // crash recovery could find the transaction unfinished and undo it, which is safe. Say so
      // rather than pretend.
      return absl::Status(
          committed.code(),
          StrCat("the node reached ", journal.to, " but marking transaction ", journal.id,
                 " committed failed, so a later recovery may move it "
                 "back to ",
                 journal.from, ": ", committed.message()));
    }
    Prune();
    report.notes = interventions_;
    return report;
  }

  report.failure = std::string(status.message());
  log_ << "failed: " << report.failure << "\nundoing transaction " << journal.id << "\n";
  std::vector<std::string> notes;
  absl::Status undone = Restore(journal, touched, options_.verify, &notes);
  report.notes = interventions_;
  if (!undone.ok()) report.rollback_failure = std::string(undone.message());
  journal.phase = undone.ok() ? std::string(kPhaseRolledBack) : std::string(kPhaseStarted);
  journal.outcome = StrCat(
      "failed: ", report.failure,
      undone.ok() ? "; undone and verified" : StrCat("; undo failed: ", report.rollback_failure));
  if (!undone.ok()) {
    // Left "started" so that the next start (or `recover`) tries the undo again.
    return report;
  }
  absl::Status marked = WriteJournal(journal);
  if (!marked.ok()) report.rollback_failure = std::string(marked.message());
  return report;
}

absl::Status Applier::Restore(const Journal& journal, size_t entries_touched, bool verify,
                              std::vector<std::string>* notes) {
  const std::string& state_dir = settings_.paths.state_dir;
  std::vector<std::string> errors;
  // The kubelet's files in a row are restored together and the kubelet restarted once, after
  // the last of them (the first in the journal): the processes from before the first restored.
  std::optional<std::vector<ProcessInfo>> kubelet_before;
  std::string kubelet_path;
  auto restart_kubelet = [&] {
    if (!kubelet_before) return;
    absl::Status status = RestartKubelet();
    if (status.ok() && verify) {
      status = VerifyComponent(std::string(kKubelet), std::nullopt, std::nullopt, kubelet_path,
                               *kubelet_before);
    }
    if (!status.ok()) {
      errors.push_back(StrCat(kubelet_path, ": ", status.message()));
    } else if (notes != nullptr) {
      notes->push_back("restarted the kubelet");
    }
    kubelet_before.reset();
  };
  // Back to front, so each component is restored (and verified) in the reverse of the order it
  // was changed in, as the forward order was chosen to be safe.
  for (size_t k = entries_touched; k-- > 0;) {
    const JournalEntry& entry = journal.entries[k];
    if (entry.component != kKubelet) restart_kubelet();
    std::optional<std::string> backup;
    if (entry.existed) {
      absl::StatusOr<std::string> content =
          host_.fs.ReadFile(BackupPath(state_dir, journal.id, k), kChangedFileRead);
      if (!content.ok()) {
        errors.push_back(StrCat(entry.path, ": backup unreadable: ", content.status().message()));
        continue;
      }
      backup = *content;
    }
    absl::StatusOr<std::string> current = host_.fs.ReadFile(entry.path, kChangedFileRead);
    const bool absent = !current.ok() && absl::IsNotFound(current.status());
    const bool unchanged = backup ? (current.ok() && *current == *backup) : absent;
    // A temp file left by an interrupted write is a dotfile the kubelet ignores; remove it anyway.
    const std::string temp = TempPathFor(entry.path);
    if (host_.fs.Exists(temp)) {
      absl::Status removed = DurableRemove(host_.fs, temp);
      if (!removed.ok()) errors.push_back(std::string(removed.message()));
    }
    if (unchanged) continue;
    FileChange change{entry.path, absent ? std::nullopt : std::optional<std::string>(*current),
                      backup, entry.component};
    const bool kubelet = entry.component == kKubelet;
    absl::StatusOr<std::vector<ProcessInfo>> before = std::vector<ProcessInfo>();
    if (verify && !entry.component.empty() && !(kubelet && kubelet_before)) {
      before = ProcessesBefore(change);
    }
    log_ << "restore " << entry.path << "\n";
    absl::Status status = backup ? EnsureParent(entry.path) : absl::OkStatus();
    if (status.ok()) {
      status = backup ? AtomicReplace(host_.fs, entry.path, *backup, entry.attributes)
                      : DurableRemove(host_.fs, entry.path);
    }
    if (kubelet) {
      if (!status.ok() || !before.ok()) {
        errors.push_back(
            StrCat(entry.path, ": ", (status.ok() ? before.status() : status).message()));
        continue;
      }
      if (notes != nullptr) notes->push_back(StrCat("restored ", entry.path));
      if (!kubelet_before) kubelet_before = *before;
      kubelet_path = entry.path;
      continue;
    }
    if (status.ok() && verify && !entry.component.empty()) {
      status = before.ok()
                   ? VerifyComponent(entry.component, backup, change.before, entry.path, *before)
                   : before.status();
    }
    if (!status.ok()) {
      errors.push_back(StrCat(entry.path, ": ", status.message()));
    } else if (notes != nullptr) {
      notes->push_back(StrCat("restored ", entry.path));
    }
  }
  restart_kubelet();
  if (errors.empty()) return absl::OkStatus();
  return absl::InternalError(StrJoin(errors, "; "));
}

absl::StatusOr<std::vector<std::string>> Applier::Recover() {
  absl::StatusOr<std::unique_ptr<FileSystem::Lock>> lock = Lock();
  if (!lock.ok()) return lock.status();
  absl::StatusOr<std::vector<std::string>> recovered = RecoverLocked();
  // Under the lock recovery has begun: however it fails, it is not a refusal with nothing
  // done, which FailedPrecondition means to the caller.
  if (!recovered.ok() && absl::IsFailedPrecondition(recovered.status())) {
    return absl::InternalError(recovered.status().message());
  }
  return recovered;
}

absl::StatusOr<std::vector<std::string>> Applier::RecoverLocked() {
  absl::StatusOr<std::vector<Journal>> journals =
      ListTransactions(host_.fs, settings_.paths.state_dir);
  if (!journals.ok()) return journals.status();
  std::vector<std::string> recovered;
  for (Journal& journal : *journals) {
    if (journal.phase == kPhaseDamaged) {
      return absl::DataLossError(
          StrCat("transaction ", journal.id, " has a damaged journal (", journal.outcome,
                 "); handoff cannot tell what it changed, so it will not act. Inspect ",
                 TransactionDir(settings_.paths.state_dir, journal.id)));
    }
    if (journal.phase.empty()) {
      // Interrupted before its journal was durable: it changed nothing on the node.
      absl::Status removed = RemoveTree(journal.id);
      if (!removed.ok()) return removed;
      continue;
    }
    if (journal.phase != kPhaseStarted) continue;
    log_ << "recovering interrupted transaction " << journal.id << " (" << journal.from << " -> "
         << journal.to << ")\n";
    absl::Status undone = Restore(journal, journal.entries.size(), options_.verify, nullptr);
    if (!undone.ok()) {
      return absl::Status(undone.code(), StrCat("could not undo interrupted transaction ",
                                                journal.id, ": ", undone.message()));
    }
    journal.phase = std::string(kPhaseRolledBack);
    journal.outcome = StrCat("interrupted; undone by recovery", journal.outcome.empty() ? "" : " (",
                             journal.outcome, journal.outcome.empty() ? "" : ")");
    absl::Status marked = WriteJournal(journal);
    if (!marked.ok()) return marked;
    recovered.push_back(journal.id);
  }
  return recovered;
}

absl::StatusOr<ApplyReport> Applier::Rollback() {
  absl::StatusOr<std::unique_ptr<FileSystem::Lock>> lock = Lock();
  if (!lock.ok()) return lock.status();
  absl::StatusOr<std::vector<std::string>> recovered = RecoverLocked();
  if (!recovered.ok()) return recovered.status();
  absl::StatusOr<std::vector<Journal>> journals =
      ListTransactions(host_.fs, settings_.paths.state_dir);
  if (!journals.ok()) return journals.status();
  const Journal* last = nullptr;
  for (const Journal& journal : *journals) {
    if (journal.phase == kPhaseCommitted) last = &journal;
  }
  if (last == nullptr) {
    return absl::FailedPreconditionError(
        "there is no completed transaction to roll back (see handoff-agent backups)");
  }
  absl::StatusOr<NodeSnapshot> snapshot = ReadNodeSnapshot(host_.fs, settings_);
  if (!snapshot.ok()) return snapshot.status();
  Classification current = Classify(*snapshot);
  if (NodeStateName(current.state) != last->to) {
    return absl::FailedPreconditionError(
        StrCat("the last transaction ", last->id, " left the node ", last->to, " but it is now ",
               NodeStateName(current.state),
               "; something changed it since, so rolling back would undo "
               "more than that transaction. Nothing was written"));
  }
  Plan plan;
  plan.from = current.state;
  absl::StatusOr<NodeState> to = ParseTargetState(last->from);
  if (!to.ok()) return to.status();
  plan.to = *to;
  for (size_t k = last->entries.size(); k-- > 0;) {
    const JournalEntry& entry = last->entries[k];
    FileChange change;
    change.path = entry.path;
    change.component = entry.component;
    absl::StatusOr<std::string> current_content = host_.fs.ReadFile(entry.path, kChangedFileRead);
    if (current_content.ok()) change.before = *current_content;
    if (entry.existed) {
      absl::StatusOr<std::string> backup =
          host_.fs.ReadFile(BackupPath(settings_.paths.state_dir, last->id, k), kChangedFileRead);
      if (!backup.ok()) return backup.status();
      change.after = *backup;
    }
    if (change.before != change.after) plan.changes.push_back(change);
  }
  std::vector<std::string> notes;
  if (options_.before_move && !plan.empty()) {
    absl::StatusOr<std::vector<std::string>> lines =
        options_.before_move(plan.from, plan.to, settings_);
    if (!lines.ok()) return lines.status();
    notes = *std::move(lines);
  }
  absl::StatusOr<ApplyReport> report = Run(plan, "rollback", last->id);
  if (report.ok()) report->notes.insert(report->notes.begin(), notes.begin(), notes.end());
  return report;
}

absl::StatusOr<std::vector<Journal>> Applier::Transactions() const {
  return ListTransactions(host_.fs, settings_.paths.state_dir);
}

absl::Status Applier::RemoveTree(const std::string& id) {
  const std::string dir = TransactionDir(settings_.paths.state_dir, id);
  // The journal goes first: a removal cut short then leaves a directory without a journal, which
  // recovery knows changed nothing and clears, never a journal whose backups are gone.
  absl::Status status = DurableRemove(host_.fs, JournalPath(settings_.paths.state_dir, id));
  if (!status.ok()) return status;
  // Then every file left, temp files of an interrupted write included.
  const std::string files = StrCat(dir, "/files");
  for (const std::string& directory : {files, dir}) {
    absl::StatusOr<std::vector<std::string>> names = host_.fs.ListDirectory(directory);
    if (!names.ok() && !absl::IsNotFound(names.status())) return names.status();
    if (!names.ok()) continue;
    for (const std::string& name : *names) {
      const std::string path = StrCat(directory, "/", name);
      if (path == files) continue;
      status = host_.fs.RemoveFile(path);
      if (!status.ok() && !absl::IsNotFound(status)) return status;
    }
  }
  for (const std::string& directory : {files, dir}) {
    status = host_.fs.RemoveDirectory(directory);
    if (!status.ok() && !absl::IsNotFound(status)) return status;
  }
  return host_.fs.SyncDirectory(TransactionsDir(settings_.paths.state_dir));
}

void Applier::Prune() {
  absl::StatusOr<std::vector<Journal>> journals =
      ListTransactions(host_.fs, settings_.paths.state_dir);
  if (!journals.ok()) return;
  std::vector<std::string> finished;
  for (const Journal& journal : *journals) {
    if (journal.phase == kPhaseCommitted || journal.phase == kPhaseRolledBack) {
      finished.push_back(journal.id);
    }
  }
  if (finished.size() <= options_.keep_transactions) return;
  for (size_t i = 0; i + options_.keep_transactions < finished.size(); ++i) {
    absl::Status removed = RemoveTree(finished[i]);
    if (!removed.ok()) {
      log_ << "warning: could not prune transaction " << finished[i] << ": " << removed.message()
           << "\n";
      return;
    }
  }
}

}  // namespace handoff
