#include "agent/daemon/node_agent.h"

#include <algorithm>
#include <cctype>
#include <ostream>
#include <utility>

#include "agent/apply/journal.h"
#include "agent/engine/classify.h"
#include "agent/engine/node_snapshot.h"
#include "agent/engine/plan_chain.h"
#include "agent/kubelet/kubelet_command_line.h"
#include "agent/verify/verifier.h"
#include "common/base/strings.h"
#include "google/protobuf/util/message_differencer.h"

#ifndef HANDOFF_VERSION
#define HANDOFF_VERSION "0.1.0"
#endif

namespace handoff {

const char kAgentVersion[] = HANDOFF_VERSION;

namespace {

std::string_view Name(v1::NodeState state) {
  std::optional<NodeState> engine = FromProto(state);
  if (engine) return NodeStateName(*engine);
  return state == v1::NODE_STATE_UNSPECIFIED ? std::string_view("unspecified")
                                             : std::string_view("unknown");
}

bool SamePaths(const NodePaths& a, const NodePaths& b) {
  return a.manifest_dir == b.manifest_dir && a.kubelet_flags_file == b.kubelet_flags_file &&
         a.leader_migration_config == b.leader_migration_config && a.state_dir == b.state_dir;
}

// CommandResult.message is one line; the engine's and applier's messages list items on lines of
// their own ("...:\n  - a\n  - b").
std::string OneLine(std::string text) {
  for (const auto& [from, to] : {std::pair<std::string_view, std::string_view>{":\n  - ", ": "},
                                 {"\n  - ", "; "},
                                 {"\n", " "}}) {
    for (size_t at = text.find(from); at != std::string::npos;
         at = text.find(from, at + to.size())) {
      text.replace(at, from.size(), to);
    }
  }
  return text;
}

v1::CommandResult Outcome(v1::CommandResult::Outcome outcome, std::string message) {
  v1::CommandResult result;
  result.set_outcome(outcome);
  result.set_message(std::move(message));
  return result;
}

}  // namespace

NodeAgent::NodeAgent(const Host& host, NodeAgentOptions options, std::ostream& log,
                     CommandLog commands)
    : host_(host), options_(std::move(options)), log_(log), commands_(std::move(commands)) {}

absl::StatusOr<std::unique_ptr<NodeAgent>> NodeAgent::Open(const Host& host,
                                                           NodeAgentOptions options,
                                                           std::ostream& log) {
  absl::StatusOr<CommandLog> commands = CommandLog::Open(host.fs, options.paths.state_dir);
  if (!commands.ok()) {
    return absl::Status(commands.status().code(), StrCat("cannot read the agent's command log: ",
                                                         commands.status().message()));
  }
  std::unique_ptr<NodeAgent> agent(
      new NodeAgent(host, std::move(options), log, *std::move(commands)));
  std::lock_guard<std::mutex> node(agent->node_mutex_);
  agent->RecoverInterrupted();
  agent->ReadReport();
  return agent;
}

void NodeAgent::RecoverInterrupted() {
  std::vector<CommandRecord> unfinished;
  for (const CommandRecord& record : commands_.Records()) {
    if (record.finished) {
      Remember(record.result, true);
    } else {
      unfinished.push_back(record);
    }
  }
  if (unfinished.empty()) return;

  // The same recovery as `handoff-agent recover`: it undoes the transaction the move left
  // started (if the applier had begun one), so the node is wholly in its state before it.
  Applier applier(host_, LocalSettings(), options_.apply, log_);
  absl::StatusOr<std::vector<std::string>> recovered = applier.Recover();
  const v1::NodeReport report = ReadReport();
  for (const CommandRecord& record : unfinished) {
    const std::string move = StrCat("(", Name(record.from), " -> ", Name(record.to), ")");
    v1::CommandResult result;
    if (!recovered.ok()) {
      result = Outcome(
          v1::CommandResult::NEEDS_ATTENTION,
          StrCat("the agent stopped mid-move ", move,
                 " and could not recover the node on restart: ", recovered.status().message(),
                 "; run `handoff-agent recover` once the cause is fixed"));
      result.mutable_move()->set_failure(std::string(recovered.status().message()));
    } else {
      const std::string what = recovered->empty()
                                   ? std::string("found no transaction to undo")
                                   : StrCat("undid transaction ", StrJoin(*recovered, ", "));
      std::string message;
      if (report.state() == record.from) {
        message = StrCat("the agent stopped mid-move ", move, "; on restart it ", what,
                         ": the node was restored to ", Name(report.state()));
      } else if (report.state() == record.to) {
        // The transaction committed, but the agent died before recording the result.
        message = StrCat("the agent stopped after applying the move ", move,
                         ", before recording its result; on restart it ", what, ": the node is ",
                         Name(report.state()));
      } else {
        message = StrCat("the agent stopped mid-move ", move, "; on restart it ", what,
                         ": the node is now ", Name(report.state()));
      }
      result = Outcome(v1::CommandResult::INTERRUPTED, message);
      if (!recovered->empty()) result.mutable_move()->set_transaction(recovered->front());
    }
    result.set_command_id(record.id);
    result.mutable_move()->set_from(record.from);
    result.mutable_move()->set_to(record.to);
    *result.mutable_report() = report;
    result.set_message(OneLine(result.message()));
    result.set_finished_unix_ms(absl::ToUnixMillis(host_.clock.Now()));
    log_ << "command " << record.id << ": " << result.message() << "\n";
    absl::Status written = commands_.RecordFinished(record.id, result);
    if (!written.ok()) {
      log_ << "command " << record.id << ": cannot record its result (" << written.message()
           << "); the next start will look at it again\n";
    }
    Remember(result, true);
  }
  absl::Status pruned = commands_.Prune();
  if (!pruned.ok()) log_ << "cannot prune the command log: " << pruned.message() << "\n";
}

std::string NodeAgent::KubeletNodeName(const std::string& hostname_override) {
  // As the kubelet 1.26 takes it (pkg/util/node GetHostname): the override, else the host's
  // name, trimmed and lower-cased.
  std::string name = hostname_override;
  if (name.empty()) {
    absl::StatusOr<std::string> hostname = host_.fs.ReadFile("/etc/hostname");
    if (hostname.ok())
      name = std::string(StripWhitespace(hostname->substr(0, hostname->find('\n'))));
  }
  std::transform(name.begin(), name.end(), name.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return std::string(StripWhitespace(name));
}

v1::NodeFacts NodeAgent::FactsOf(const absl::StatusOr<NodeSnapshot>& snapshot) {
  if (!snapshot.ok()) return ReadFacts(nullptr, "");
  const Classification classification = Classify(*snapshot);
  std::string cloud_config_path;  // the managers' --cloud-config
  for (const std::optional<ComponentView>* manager :
       {&classification.view.controller_manager, &classification.view.parked_controller_manager,
        &classification.view.cloud_controller_manager}) {
    if (!cloud_config_path.empty() || !manager->has_value()) continue;
    cloud_config_path = (*manager)->Flag("cloud-config").value_or("");
  }
  if (cloud_config_path.empty() && snapshot->role == NodeRole::kWorker) {
    // A worker has no managers: its in-tree kubelet's --cloud-config names the same cloud.
    absl::StatusOr<KubeletCommandLine> flags = ExpectedKubeletFlags(*snapshot);
    const KubeletFlag* config = flags.ok() ? flags->Effective("cloud-config") : nullptr;
    if (config != nullptr) cloud_config_path = config->value.value_or("");
  }
  v1::NodeFacts facts = ReadFacts(&*snapshot, cloud_config_path);
  if (classification.state == NodeState::kInconsistent && facts.stray_files_size() > 0) {
    facts.set_inconsistent_only_for_stray_files(Classify(WithoutStrayFiles(*snapshot)).state !=
                                                NodeState::kInconsistent);
  }
  return facts;
}

bool NodeAgent::RecheckFacts(const std::function<void(const v1::NodeReport&)>& send) {
  std::unique_lock<std::mutex> node(node_mutex_, std::try_to_lock);
  if (!node.owns_lock()) return false;  // a command runs: its result carries the next report
  v1::NodeFacts before;
  {
    std::lock_guard<std::mutex> state(state_mutex_);
    before = last_report_.facts();
  }
  const v1::NodeFacts now = FactsOf(ReadNodeSnapshot(host_.fs, LocalSettings()));
  if (google::protobuf::util::MessageDifferencer::Equals(now, before)) return false;
  send(ReadReport());
  return true;
}

v1::NodeFacts NodeAgent::ReadFacts(const NodeSnapshot* snapshot,
                                   const std::string& cloud_config_path) {
  if (!identity_) {
    if (options_.read_instance_identity) {
      identity_ = options_.read_instance_identity();
    } else {
      identity_.emplace();
      identity_->set_metadata_error("the agent does not ask the instance metadata");
    }
  }
  const absl::Time now = host_.clock.Now();
  if (options_.read_cluster_tags && !identity_->instance_id().empty() &&
      (!cluster_tags_read_ || now - *cluster_tags_read_ >= options_.cluster_tags_refresh)) {
    const absl::StatusOr<std::string> cloud_config =
        cloud_config_path.empty() ? absl::StatusOr<std::string>(std::string())
                                  : host_.fs.ReadFile(cloud_config_path);
    cluster_tags_ = options_.read_cluster_tags(*identity_, cloud_config_path, cloud_config);
    cluster_tags_read_ = now;
  }
  v1::NodeFacts facts = *identity_;
  *facts.mutable_cluster_tags() = cluster_tags_.cluster_tags();
  facts.set_cluster_tags_known(cluster_tags_.cluster_tags_known());
  facts.set_cluster_tags_error(cluster_tags_.cluster_tags_error());
  facts.set_cloud_config_cluster_id(cluster_tags_.cloud_config_cluster_id());
  if (snapshot == nullptr) return facts;
  for (std::string& stray : StrayManifestFiles(*snapshot)) facts.add_stray_files(std::move(stray));
  std::string hostname_override;
  if (snapshot->kubelet_flags || snapshot->kubelet_unit) {
    // The flags the kubelet runs with, wherever its unit reads them.
    absl::StatusOr<KubeletCommandLine> flags = ExpectedKubeletFlags(*snapshot);
    if (flags.ok()) {
      auto value = [&](std::string_view name) {
        const KubeletFlag* flag = flags->Effective(name);
        return flag == nullptr ? std::string() : flag->value.value_or("");
      };
      facts.set_kubelet_flags_known(true);
      facts.set_image_credential_provider_config(value("image-credential-provider-config"));
      facts.set_image_credential_provider_bin_dir(value("image-credential-provider-bin-dir"));
      hostname_override = value("hostname-override");
    }
  }
  facts.set_kubelet_node_name(KubeletNodeName(hostname_override));
  if (snapshot->role == NodeRole::kWorker) {
    const std::optional<FileInfo>& binary = snapshot->credential_provider_binary;
    facts.set_worker_role(true);
    facts.set_credential_provider_installed(binary && !binary->is_directory &&
                                            (binary->mode & 0111) != 0);
    facts.set_credential_provider_install_dir(snapshot->worker.credential_provider_bin_dir);
  }
  return facts;
}

v1::NodeReport NodeAgent::ReadReport() {
  v1::NodeReport report;
  report.set_observed_unix_ms(absl::ToUnixMillis(host_.clock.Now()));
  absl::StatusOr<NodeSnapshot> snapshot = ReadNodeSnapshot(host_.fs, LocalSettings());
  if (!snapshot.ok()) {
    report.set_state(v1::NODE_STATE_INCONSISTENT);
    report.add_reasons(std::string(snapshot.status().message()));
    report.set_healthy(false);
    report.set_health_detail(StrCat("cannot read the node: ", snapshot.status().message()));
  } else {
    const Classification classification = Classify(*snapshot);
    report.set_state(ToProto(classification.state));
    const std::optional<ComponentView>& kcm = classification.view.controller_manager;
    if (kcm && kcm->version) report.set_kube_controller_manager_version(kcm->version->ToString());
    if (classification.state == NodeState::kInconsistent) {
      for (const std::string& problem : classification.problems) report.add_reasons(problem);
      report.set_healthy(false);
      report.set_health_detail("the node is inconsistent (see reasons)");
    } else if (!options_.apply.verify) {
      report.set_healthy(true);
    } else {
      Verifier verifier(host_.processes, host_.health, host_.clock, options_.apply.verify_options);
      std::vector<std::string> problems;
      const NodeView& view = classification.view;
      for (const std::optional<ComponentView>* component :
           {&view.apiserver, &view.controller_manager, &view.cloud_controller_manager,
            &view.scheduler}) {
        if (!component->has_value()) continue;
        const ComponentView& c = **component;
        absl::Status status = verifier.CheckNow(CheckForManifest(c.component, &c.pod, c.container));
        if (!status.ok()) problems.push_back(std::string(status.message()));
      }
      if (snapshot->kubelet_flags || snapshot->kubelet_unit) {
        Settings settings_for_health;
        settings_for_health.kubelet = options_.kubelet;
        absl::StatusOr<std::vector<std::string>> args = ExpectedKubeletArgs(*snapshot);
        absl::Status status =
            args.ok() ? verifier.CheckNow(CheckForKubelet(*args, KubeletHealth(settings_for_health)))
                      : args.status();
        if (!status.ok()) problems.push_back(std::string(status.message()));
      }
      report.set_healthy(problems.empty());
      report.set_health_detail(StrJoin(problems, "; "));
    }
  }
  *report.mutable_facts() = FactsOf(snapshot);
  // Unfinished transactions (started, not committed or undone): a crash mid-apply outside the
  // agent's own commands, e.g. `handoff-agent apply` killed by hand.
  absl::StatusOr<std::vector<Journal>> journals =
      ListTransactions(host_.fs, options_.paths.state_dir);
  if (journals.ok()) {
    for (const Journal& journal : *journals) {
      // (A directory without a journal was never started: nothing in it changed the node.)
      if (journal.phase == kPhaseStarted || journal.phase == kPhaseDamaged) {
        report.add_unfinished_transactions(journal.id);
      }
    }
  } else {
    report.add_unfinished_transactions(
        StrCat("(the state dir cannot be read: ", journals.status().message(), ")"));
  }
  std::lock_guard<std::mutex> state(state_mutex_);
  last_report_ = report;
  return report;
}

v1::AgentHello NodeAgent::Hello() {
  v1::AgentHello hello;
  hello.set_node_name(options_.node_name);
  hello.set_agent_version(options_.agent_version);
  hello.set_verifies(options_.apply.verify);
  hello.set_role(options_.role == NodeRole::kWorker ? v1::NODE_ROLE_WORKER
                                                    : v1::NODE_ROLE_CONTROL_PLANE);
  {
    // A command holds the node: it is mid-transaction, and its result will carry the report
    // after it. Until then the last report stands.
    std::unique_lock<std::mutex> node(node_mutex_, std::try_to_lock);
    if (node.owns_lock()) ReadReport();
  }
  std::lock_guard<std::mutex> state(state_mutex_);
  *hello.mutable_report() = last_report_;
  const auto limit = static_cast<size_t>(kHelloRecentResults);
  const size_t first = finished_.size() > limit ? finished_.size() - limit : 0;
  for (size_t i = first; i < finished_.size(); ++i) {
    *hello.add_recent_results() = finished_[i].result;
  }
  hello.set_running_command_id(running_);
  return hello;
}

v1::NodeReport NodeAgent::Report() {
  std::lock_guard<std::mutex> node(node_mutex_);
  return ReadReport();
}

bool NodeAgent::RecheckUnhealthy(const std::function<void(const v1::NodeReport&)>& send) {
  std::unique_lock<std::mutex> node(node_mutex_, std::try_to_lock);
  if (!node.owns_lock()) return false;  // a command runs: its result carries the next report
  v1::NodeReport before;
  {
    std::lock_guard<std::mutex> state(state_mutex_);
    before = last_report_;
  }
  if (before.healthy() && before.state() != v1::NODE_STATE_INCONSISTENT) return false;
  const v1::NodeReport now = ReadReport();
  if (now.state() == before.state() && now.healthy() == before.healthy()) return false;
  send(now);
  return true;
}

std::optional<v1::CommandResult> NodeAgent::FinishedResult(const std::string& id) const {
  std::lock_guard<std::mutex> state(state_mutex_);
  for (auto it = finished_.rbegin(); it != finished_.rend(); ++it) {
    if (it->result.command_id() == id) return it->result;
  }
  return std::nullopt;
}

std::string NodeAgent::RunningCommandId() const {
  std::lock_guard<std::mutex> state(state_mutex_);
  return running_;
}

v1::CommandResult NodeAgent::Execute(const v1::Command& command, const ProgressSink& progress) {
  if (std::optional<v1::CommandResult> done = FinishedResult(command.id())) return *done;
  std::lock_guard<std::mutex> node(node_mutex_);
  // Another caller may have finished it while this one waited for the node.
  if (std::optional<v1::CommandResult> done = FinishedResult(command.id())) return *done;
  {
    std::lock_guard<std::mutex> state(state_mutex_);
    running_ = command.id();
  }
  bool recorded = false;
  v1::CommandResult result = Dispatch(command, progress, &recorded);
  result.set_command_id(command.id());
  Finish(result, recorded);
  return result;
}

void NodeAgent::Finish(v1::CommandResult& result, bool recorded) {
  result.set_finished_unix_ms(absl::ToUnixMillis(host_.clock.Now()));
  result.set_message(OneLine(result.message()));
  const std::string& id = result.command_id();
  log_ << "command " << id << ": " << v1::CommandResult::Outcome_Name(result.outcome()) << ": "
       << result.message() << "\n";
  if (recorded) {
    absl::Status written = commands_.RecordFinished(id, result);
    if (!written.ok()) {
      // The record still says "started": after a restart the command shows as interrupted
      // (recovery finds nothing to undo and reports the node as it is), never as run twice.
      log_ << "command " << id << ": cannot record its result (" << written.message()
           << "); it is kept in memory until the agent restarts\n";
    } else if (absl::Status pruned = commands_.Prune(); !pruned.ok()) {
      log_ << "cannot prune the command log: " << pruned.message() << "\n";
    }
  }
  if (CommandLog::IsValidId(id)) {
    Remember(result, recorded);
  } else {
    std::lock_guard<std::mutex> state(state_mutex_);
    running_.clear();
  }
}

void NodeAgent::Remember(const v1::CommandResult& result, bool recorded) {
  std::lock_guard<std::mutex> state(state_mutex_);
  finished_.push_back(Finished{result, recorded});
  // Cleared with the result added, so that no reader sees the command neither running nor done.
  if (running_ == result.command_id()) running_.clear();
  for (bool kind : {true, false}) {
    auto count = static_cast<size_t>(std::count_if(
        finished_.begin(), finished_.end(), [&](const Finished& f) { return f.recorded == kind; }));
    for (auto it = finished_.begin(); count > kCommandLogKeep && it != finished_.end();) {
      if (it->recorded == kind) {
        it = finished_.erase(it);
        --count;
      } else {
        ++it;
      }
    }
  }
}

v1::CommandResult NodeAgent::Dispatch(const v1::Command& command, const ProgressSink& progress,
                                      bool* recorded) {
  if (!CommandLog::IsValidId(command.id())) {
    v1::CommandResult result =
        Outcome(v1::CommandResult::REFUSED,
                StrCat("command id '", command.id(),
                       "' is not valid: 1 to 200 letters, digits, '.', '_' or '-'; nothing done"));
    *result.mutable_report() = ReadReport();
    return result;
  }
  switch (command.action_case()) {
    case v1::Command::kMove:
      return Move(command.id(), command.move(), progress, recorded);
    case v1::Command::kPlan:
      return PlanMoves(command.plan());
    case v1::Command::kReport: {
      v1::CommandResult result = Outcome(v1::CommandResult::SUCCEEDED, "");
      *result.mutable_report() = ReadReport();
      result.set_message(StrCat("the node is ", Name(result.report().state()),
                                result.report().healthy() ? "" : " and not healthy"));
      return result;
    }
    case v1::Command::ACTION_NOT_SET:
      break;
  }
  v1::CommandResult result = Outcome(
      v1::CommandResult::REFUSED,
      "the command carries no action this agent knows (a newer coordinator?); nothing done");
  *result.mutable_report() = ReadReport();
  return result;
}

absl::StatusOr<Settings> NodeAgent::CommandSettings(const std::string& yaml) {
  Settings settings;
  if (!StripWhitespace(yaml).empty()) {
    absl::StatusOr<Settings> parsed = ParseSettings(yaml, "the coordinator's settings");
    if (!parsed.ok()) return parsed.status();
    settings = *std::move(parsed);
    if (!SamePaths(settings.paths, NodePaths())) {
      log_ << "the coordinator's settings name paths; this node keeps its own (manifests in "
           << options_.paths.manifest_dir << ", state in " << options_.paths.state_dir << ")\n";
    }
  }
  settings.paths = options_.paths;
  settings.kubelet = options_.kubelet;
  settings.role = options_.role;
  settings.worker = options_.worker;
  return settings;
}

Settings NodeAgent::LocalSettings() const {
  Settings settings;
  settings.paths = options_.paths;
  settings.kubelet = options_.kubelet;
  settings.role = options_.role;
  settings.worker = options_.worker;
  return settings;
}

v1::CommandResult NodeAgent::Move(const std::string& id, const v1::MoveRequest& move,
                                  const ProgressSink& progress, bool* recorded) {
  const std::string step = StrCat(Name(move.from()), " -> ", Name(move.to()));
  log_ << "command " << id << ": move " << step << "\n";
  v1::CommandResult result;
  result.mutable_move()->set_from(move.from());
  result.mutable_move()->set_to(move.to());
  auto finish = [&](v1::CommandResult::Outcome outcome, std::string message) {
    result.set_outcome(outcome);
    result.set_message(std::move(message));
    *result.mutable_report() = ReadReport();
    return result;
  };
  auto refuse = [&](const std::string& why) {
    return finish(v1::CommandResult::REFUSED,
                  StrCat("move ", step, " refused: ", why,
                         EndsWith(why, "nothing written") || EndsWith(why, "nothing was written")
                             ? ""
                             : "; nothing written"));
  };

  const std::optional<NodeState> from = FromProto(move.from());
  const std::optional<NodeState> to = FromProto(move.to());
  if (!to || *to == NodeState::kInconsistent) {
    return refuse("`to` must be in-tree, prepared, migrated, finalized, stopped or external");
  }
  if (!from) return refuse("`from` must name the node's state");
  absl::StatusOr<Settings> settings = CommandSettings(move.settings_yaml());
  if (!settings.ok()) return refuse(StrCat(settings.status().message()));

  // Checked before anything is recorded: a move meant for a node elsewhere writes nothing.
  absl::StatusOr<NodeSnapshot> snapshot = ReadNodeSnapshot(host_.fs, LocalSettings());
  if (!snapshot.ok()) return refuse(StrCat(snapshot.status().message()));
  const Classification current = Classify(*snapshot);
  if (current.state != *from) {
    if (current.state == NodeState::kInconsistent) {
      return refuse(StrCat("the node is inconsistent, so handoff will not change it:\n  - ",
                           StrJoin(current.problems, "\n  - ")));
    }
    return refuse(
        StrCat("the node is ", NodeStateName(current.state), ", not ", NodeStateName(*from)));
  }

  // Durable before the move begins: if the agent dies from here on, its next start finds the
  // record unfinished and recovers the node instead of trusting files a move may have half
  // changed.
  absl::Status started = commands_.RecordStarted(id, move, host_.clock.Now());
  if (!started.ok()) {
    return refuse(StrCat("cannot record the move before starting it: ", started.message()));
  }
  *recorded = true;
  if (options_.move_delay > absl::ZeroDuration()) {
    log_ << "command " << id << ": waiting " << absl::FormatDuration(options_.move_delay)
         << " before applying (--move-delay)\n";
    host_.clock.SleepFor(options_.move_delay);
  }

  ApplyOptions apply = options_.apply;
  if (progress) {
    apply.on_processes_gone = [&](const ProcessesGone& gone) {
      v1::AgentMessage message;
      v1::ProcessesGone& out = *message.mutable_processes_gone();
      out.set_command_id(id);
      out.set_component(gone.component);
      for (const ProcessInfo& process : gone.old) out.add_old_pids(process.pid);
      out.set_gone_unix_ms(absl::ToUnixMillis(gone.gone_at));
      log_ << "command " << id << ": every old " << gone.component << " process has exited\n";
      progress(message);
    };
  }
  Applier applier(host_, *settings, apply, log_);
  absl::StatusOr<ApplyReport> report = applier.Apply(*to);
  if (!report.ok()) {
    const absl::Status& status = report.status();
    const std::string message(status.message());
    // The applier refuses (lock held, inconsistent, not adjacent, missing setting or mount
    // source) before writing anything. Any other error may have come after a change; only a node
    // still wholly at `from`, with no unfinished transaction, counts as untouched.
    bool untouched = absl::IsFailedPrecondition(status) || absl::IsInvalidArgument(status);
    if (!untouched) {
      absl::StatusOr<NodeSnapshot> after = ReadNodeSnapshot(host_.fs, LocalSettings());
      absl::StatusOr<std::vector<Journal>> journals =
          ListTransactions(host_.fs, options_.paths.state_dir);
      untouched = after.ok() && Classify(*after).state == *from && journals.ok() &&
                  std::all_of(journals->begin(), journals->end(), [](const Journal& j) {
                    return j.phase == kPhaseCommitted || j.phase == kPhaseRolledBack;
                  });
    }
    if (untouched) return refuse(message);
    result.mutable_move()->set_failure(message);
    return finish(v1::CommandResult::NEEDS_ATTENTION,
                  StrCat("move ", step, " failed and the node may be changed: ", message,
                         "; run `handoff-agent status` and `handoff-agent recover` on the node"));
  }

  v1::MoveResult& moved = *result.mutable_move();
  moved.set_transaction(report->transaction);
  moved.set_no_op(report->no_op);
  moved.set_failure(report->failure);
  moved.set_rollback_failure(report->rollback_failure);
  for (const StepReport& file : report->steps) {
    v1::FileStep& out = *moved.add_steps();
    out.set_path(file.path);
    out.set_action(file.action);
    out.set_component(file.component);
    out.set_verified(file.verified);
  }
  if (report->no_op) {
    return finish(v1::CommandResult::SUCCEEDED,
                  StrCat("the node is already ", NodeStateName(report->to), "; nothing written"));
  }
  // What the move left to the operator (ApplyOptions::before_move's lines), for the coordinator
  // to show with the result.
  const std::string notes =
      report->notes.empty() ? "" : StrCat("; note: ", StrJoin(report->notes, "; note: "));
  if (report->ok()) {
    return finish(v1::CommandResult::SUCCEEDED,
                  StrCat("moved ", step, " in transaction ", report->transaction,
                         options_.apply.verify ? "; every component verified"
                                               : " (not verified: --no-verify)",
                         notes));
  }
  if (report->rollback_failure.empty()) {
    return finish(
        v1::CommandResult::ROLLED_BACK,
        StrCat("move ", step, " failed and was undone", options_.apply.verify ? " (verified)" : "",
               "; the node is still ", NodeStateName(report->from), ": ", report->failure, notes));
  }
  return finish(v1::CommandResult::NEEDS_ATTENTION,
                StrCat("move ", step, " failed and so did the undo: ", report->rollback_failure,
                       " (the move failed with: ", report->failure,
                       "); run `handoff-agent recover` on the node once the cause is fixed",
                       notes));
}

v1::CommandResult NodeAgent::PlanMoves(const v1::PlanRequest& request) {
  auto refuse = [&](const std::string& why) {
    v1::CommandResult result = Outcome(v1::CommandResult::REFUSED, StrCat("plan refused: ", why));
    *result.mutable_report() = ReadReport();
    return result;
  };
  std::vector<NodeState> chain;
  for (int i = 0; i < request.chain_size(); ++i) {
    std::optional<NodeState> target = FromProto(request.chain(i));
    if (!target || *target == NodeState::kInconsistent) {
      return refuse(StrCat("chain item ", i + 1, " is ", Name(request.chain(i)),
                           "; targets are in-tree, prepared, migrated, finalized, stopped or "
                           "external"));
    }
    chain.push_back(*target);
  }
  absl::StatusOr<Settings> settings = CommandSettings(request.settings_yaml());
  if (!settings.ok()) return refuse(StrCat(settings.status().message()));
  absl::StatusOr<NodeSnapshot> snapshot = ReadNodeSnapshot(host_.fs, LocalSettings());
  if (!snapshot.ok()) return refuse(StrCat(snapshot.status().message()));
  absl::StatusOr<std::vector<Plan>> plans = handoff::PlanChain(*snapshot, chain, *settings);
  if (!plans.ok()) return refuse(StrCat(plans.status().message()));

  v1::CommandResult result = Outcome(v1::CommandResult::SUCCEEDED, "");
  std::vector<std::string> path;
  for (const Plan& plan : *plans) {
    v1::PlannedTransition& transition = *result.mutable_plan()->add_transitions();
    transition.set_from(ToProto(plan.from));
    transition.set_to(ToProto(plan.to));
    transition.set_diff(PlanDiff(plan));
    if (path.empty()) path.emplace_back(NodeStateName(plan.from));
    path.emplace_back(NodeStateName(plan.to));
  }
  result.set_message(StrCat("planned ", plans->size(), " transition(s): ", StrJoin(path, " -> ")));
  *result.mutable_report() = ReadReport();
  return result;
}

}  // namespace handoff
