#include "coordinator/server/rollout_controller.h"

#include <algorithm>
#include <cstddef>
#include <iterator>
#include <map>
#include <random>
#include <utility>

#include "absl/status/status.h"
#include "agent/engine/settings.h"
#include "common/base/strings.h"
#include "coordinator/rollout/membership.h"
#include "coordinator/rollout/rollout_progress.h"
#include "coordinator/server/bounded_text.h"
#include "coordinator/server/rollout_controller_internal.h"
#include "google/protobuf/util/json_util.h"
#include "nlohmann/json.hpp"
#include "spdlog/spdlog.h"

#ifndef HANDOFF_VERSION
#define HANDOFF_VERSION "0.0.0"
#endif

namespace handoff::server {

using controller_internal::Deferred;
using controller_internal::Name;
using controller_internal::RunDeferred;
using controller_internal::WrapCommand;

namespace {

// What the coordinator keeps of text a client sent (bounded_text.h): a history entry's message,
// a reason or health detail line of a node's report, a version or transaction id; at most
// kReportLines reasons. An entry's detail (JSON) over its limit is replaced by a note.
constexpr size_t kEntryMessageBytes = 4096;
constexpr size_t kEntryDetailBytes = 64 * 1024;
constexpr size_t kReportLineBytes = 1024;
constexpr size_t kVersionBytes = 128;
constexpr size_t kReportLines = 32;
// Old history entries are deleted this many at a time (ControllerOptions::history_keep).
constexpr int64_t kHistoryForgetBatch = 1000;

// "2.4 s", "3 min 12 s".
std::string FormatMs(int64_t ms) {
  if (ms < 0) ms = 0;
  if (ms < 60'000) return StrCat(ms / 1000, ".", (ms % 1000) / 100, " s");
  return StrCat(ms / 60'000, " min ", (ms % 60'000) / 1000, " s");
}

std::vector<std::string> KeysOf(const std::map<std::string, int64_t>& map) {
  std::vector<std::string> keys;
  for (const auto& [key, value] : map) keys.push_back(key);
  return keys;
}

// "21:47:10": a time of day, UTC, as the status and the history show it.
std::string ClockTime(int64_t unix_ms) {
  return absl::FormatTime("%H:%M:%S", absl::FromUnixMillis(unix_ms), absl::UTCTimeZone());
}

std::string ToJson(const google::protobuf::Message& message) {
  std::string json;
  google::protobuf::util::JsonPrintOptions options;
  options.preserve_proto_field_names = true;
  if (!google::protobuf::util::MessageToJsonString(message, &json, options).ok()) return "{}";
  return json;
}

std::string RandomHex(int bytes) {
  std::random_device device;
  std::string out;
  static constexpr char kDigits[] = "0123456789abcdef";
  for (int i = 0; i < bytes; ++i) {
    unsigned value = device() & 0xffU;
    out.push_back(kDigits[value >> 4U]);
    out.push_back(kDigits[value & 0xfU]);
  }
  return out;
}

absl::Status CheckNodes(const std::vector<std::string>& nodes) {
  if (nodes.empty()) {
    return absl::InvalidArgumentError("no nodes: name the control-plane nodes with --nodes");
  }
  std::vector<std::string> sorted = nodes;
  std::sort(sorted.begin(), sorted.end());
  if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end()) {
    return absl::InvalidArgumentError(StrCat("--nodes names a node twice: ", StrJoin(nodes, ",")));
  }
  return absl::OkStatus();
}

// A stored rollout resumes only with its nodes and (once started) the settings it began with:
// every node must move with the same ones, and the nodes' order is the order of the moves.
// --nodes names them, or the nodes the membership began as before operators changed it.
absl::Status CheckResumable(const store::StoredRollout& stored, const ControllerOptions& options) {
  std::vector<std::string> stored_names;
  for (const store::StoredNode& node : stored.nodes) stored_names.push_back(node.name);
  if (stored_names != options.nodes &&
      (stored.launch_nodes.empty() || stored.launch_nodes != options.nodes)) {
    std::string began;
    if (!stored.launch_nodes.empty()) {
      began = StrCat(" (it began with ", StrJoin(stored.launch_nodes, ","),
                     "; handoffctl nodes add and remove changed it since)");
    }
    return absl::FailedPreconditionError(StrCat(
        "the coordinator's state holds a rollout of the nodes ", StrJoin(stored_names, ","), began,
        " but --nodes says ", StrJoin(options.nodes, ","),
        ": give the same nodes in the same order, or (only once that rollout is over) move the "
        "state dir aside to begin a new one"));
  }
  if (stored.goal && stored.settings_yaml != options.settings_yaml) {
    return absl::FailedPreconditionError(
        StrCat("rollout ", stored.rollout_id,
               " was started with other settings than --settings gives now: start the "
               "coordinator with the settings it began with (every node must move with the "
               "same ones)"));
  }
  return absl::OkStatus();
}

}  // namespace

RolloutController::RolloutController(store::Store& store, Clock& clock, ControllerOptions options)
    : store_(store), clock_(clock), options_(std::move(options)), instance_id_(RandomHex(4)) {}

RolloutController::~RolloutController() = default;

absl::StatusOr<std::unique_ptr<RolloutController>> RolloutController::Create(
    store::Store& store, Clock& clock, ControllerOptions options) {
  if (absl::Status nodes = CheckNodes(options.nodes); !nodes.ok()) return nodes;
  absl::StatusOr<std::optional<store::StoredRollout>> loaded = store.Load();
  if (!loaded.ok()) return loaded.status();
  absl::StatusOr<std::vector<store::StoredWorker>> workers = store.LoadWorkers();
  if (!workers.ok()) return workers.status();
  if (*loaded) {
    if (absl::Status resumable = CheckResumable(**loaded, options); !resumable.ok()) {
      return resumable;
    }
  }

  std::unique_ptr<RolloutController> controller(
      new RolloutController(store, clock, std::move(options)));
  RolloutController& self = *controller;
  std::lock_guard<std::mutex> lock(self.mu_);
  self.Restore(*std::move(loaded));
  self.RestoreWorkers(*std::move(workers));
  std::string message =
      self.rollout_.goal
          ? StrCat("coordinator started; rollout ", self.rollout_.rollout_id, " towards ",
                   Name(*self.rollout_.goal), " resumes once every agent has reported")
          : "coordinator started; no rollout yet";
  if (self.rollout_.in_flight) {
    StrAppend(&message, "; move ", self.rollout_.in_flight->command_id, " to ",
              self.rollout_.in_flight->node, " is settled first");
  }
  if (!self.workers_.empty()) {
    StrAppend(&message, "; ", self.workers_.size(), " known workers, ",
              self.WorkersInFlight(), " with a move in flight (each settled at its agent's hello)");
  }
  absl::Status committed =
      self.Commit({self.Entry("coordinator", "resume-after-restart", "", message)});
  if (!committed.ok()) return committed;
  self.Advance();
  return controller;
}

void RolloutController::Restore(std::optional<store::StoredRollout> stored) {
  if (stored) {
    // The stored membership: --nodes, or what operators have made of it since (CheckResumable).
    rollout_ = *std::move(stored);
    for (const store::StoredNode& recorded : rollout_.nodes) {
      Node node;
      static_cast<store::StoredNode&>(node) = recorded;
      nodes_.push_back(std::move(node));
    }
  } else {
    for (const std::string& name : options_.nodes) {
      Node node;
      node.name = name;
      nodes_.push_back(std::move(node));
    }
  }
  rollout_.settings_yaml = options_.settings_yaml;
}

RolloutController::Node* RolloutController::FindNode(const std::string& name) {
  for (Node& node : nodes_) {
    if (node.name == name) return &node;
  }
  return nullptr;
}

RolloutController::Node* RolloutController::FindCandidate(const std::string& name) {
  auto it = candidates_.find(name);
  return it == candidates_.end() ? nullptr : &it->second;
}

int64_t RolloutController::NowMs() const { return absl::ToUnixMillis(clock_.Now()); }

store::HistoryEntry RolloutController::Entry(const std::string& actor, const std::string& kind,
                                             const std::string& node,
                                             const std::string& message) const {
  store::HistoryEntry entry;
  entry.unix_ms = NowMs();
  entry.actor = actor;
  entry.kind = kind;
  entry.node = node;
  entry.message = message;
  return entry;
}

store::HistoryEntry RolloutController::MoveEntry(const std::string& kind,
                                                 const store::InFlight& move,
                                                 const std::string& message) const {
  store::HistoryEntry entry = Entry("coordinator", kind, move.node, message);
  entry.command_id = move.command_id;
  return entry;
}

absl::Status RolloutController::Commit(std::vector<store::HistoryEntry> history) {
  // The stored part of each node, as it is.
  rollout_.nodes.assign(nodes_.begin(), nodes_.end());
  for (store::HistoryEntry& entry : history) {
    entry.message = BoundedText(entry.message, kEntryMessageBytes);
    if (entry.detail_json.size() > kEntryDetailBytes) {
      entry.detail_json = nlohmann::json{
          {"omitted",
           StrCat(entry.detail_json.size(), " bytes, more than an entry keeps (", kEntryDetailBytes,
                  ")")}}.dump();
    }
  }
  store::WorkerChanges workers;
  for (const std::string& name : dirty_workers_) {
    auto it = workers_.find(name);
    if (it != workers_.end()) workers.write.push_back(StoredOf(it->second));
  }
  workers.forget.assign(forgotten_workers_.begin(), forgotten_workers_.end());
  absl::StatusOr<std::vector<store::HistoryEntry>> stored =
      store_.Commit(rollout_, history, workers);
  if (stored.ok()) {
    dirty_workers_.clear();
    forgotten_workers_.clear();
    if (!stored->empty()) ForgetOldHistory(stored->back().sequence);
    return absl::OkStatus();
  }
  // Without a durable record the coordinator could not resume what it sends: stop moving.
  spdlog::error("cannot record the rollout: {}", std::string(stored.status().message()));
  rollout_.halted = true;
  rollout_.halt_reason =
      StrCat("the coordinator cannot record its state: ", stored.status().message());
  return stored.status();
}

void RolloutController::ForgetOldHistory(int64_t newest) {
  if (options_.history_keep <= 0) return;
  const int64_t through = newest - options_.history_keep;
  // In batches, so that a commit rarely pays for a delete.
  const int64_t batch = std::min(kHistoryForgetBatch, options_.history_keep);
  if (through < history_forgotten_through_ + batch) return;
  if (absl::Status forgotten = store_.ForgetHistoryThrough(through); !forgotten.ok()) {
    spdlog::warn("cannot delete history entries up to {} (history keep {}): {}", through,
                 options_.history_keep, std::string(forgotten.message()));
    return;
  }
  history_forgotten_through_ = through;
}

bool EntryBudget::Admit(int64_t now_ms, int burst, absl::Duration interval) {
  const double most = std::max(1, burst);
  const double interval_ms = std::max<double>(1, absl::ToDoubleMilliseconds(interval));
  tokens_ = tokens_ < 0 ? most : std::min(most, tokens_ + (now_ms - tokens_ms_) / interval_ms);
  tokens_ms_ = now_ms;
  if (tokens_ < 1) {
    ++not_written_;
    return false;
  }
  tokens_ -= 1;
  return true;
}

int64_t EntryBudget::TakeNotWritten() {
  const int64_t count = not_written_;
  not_written_ = 0;
  return count;
}

// "(and 3 earlier entries of cp-1's agent not written: ...)"
std::string RolloutController::NotWrittenNote(int64_t count, const std::string& whose) const {
  return StrCat(" (and ", count, " earlier ", count == 1 ? "entry" : "entries", " of ", whose,
                " not written: more than ", options_.agent_entry_burst, " at once, or one every ",
                absl::FormatDuration(options_.agent_entry_interval), ")");
}

bool RolloutController::AdmitAgentEntry(Node& node, store::HistoryEntry& entry) {
  if (!node.entries.Admit(NowMs(), options_.agent_entry_burst, options_.agent_entry_interval)) {
    return false;
  }
  if (const int64_t not_written = node.entries.TakeNotWritten(); not_written > 0) {
    entry.message += NotWrittenNote(not_written, StrCat(node.name, "'s agent"));
  }
  return true;
}

void RolloutController::ApplyReport(Node& node, const pb::NodeReport& report) {
  node.state = StateOrInconsistent(report.state());
  node.reasons.clear();
  for (const std::string& reason : report.reasons()) {
    if (node.reasons.size() == kReportLines) {
      node.reasons.push_back(
          StrCat("… and ", static_cast<size_t>(report.reasons_size()) - kReportLines, " more"));
      break;
    }
    node.reasons.push_back(BoundedText(reason, kReportLineBytes));
  }
  node.healthy = report.healthy();
  node.health_detail = BoundedText(report.health_detail(), kReportLineBytes);
  node.kube_controller_manager_version =
      BoundedText(report.kube_controller_manager_version(), kVersionBytes);
  node.unfinished_transactions.clear();
  for (const std::string& id : report.unfinished_transactions()) {
    if (node.unfinished_transactions.size() == kReportLines) break;
    node.unfinished_transactions.push_back(BoundedText(id, kVersionBytes));
  }
  const pb::NodeFacts& facts = report.facts();
  node.facts.Clear();
  node.facts.set_instance_id(BoundedText(facts.instance_id(), kVersionBytes));
  node.facts.set_local_hostname(BoundedText(facts.local_hostname(), kVersionBytes));
  node.facts.set_availability_zone(BoundedText(facts.availability_zone(), kVersionBytes));
  node.facts.set_metadata_error(BoundedText(facts.metadata_error(), kReportLineBytes));
  node.facts.set_kubelet_flags_known(facts.kubelet_flags_known());
  node.facts.set_image_credential_provider_config(
      BoundedText(facts.image_credential_provider_config(), kReportLineBytes));
  node.facts.set_image_credential_provider_bin_dir(
      BoundedText(facts.image_credential_provider_bin_dir(), kReportLineBytes));
  for (const std::string& file : facts.stray_files()) {
    if (node.facts.stray_files_size() == static_cast<int>(kReportLines)) break;
    node.facts.add_stray_files(BoundedText(file, kReportLineBytes));
  }
  for (const auto& [id, value] : facts.cluster_tags()) {
    if (node.facts.cluster_tags_size() == static_cast<int>(kReportLines)) break;
    (*node.facts.mutable_cluster_tags())[BoundedText(id, kVersionBytes)] =
        BoundedText(value, kReportLineBytes);
  }
  node.facts.set_cluster_tags_known(facts.cluster_tags_known());
  node.facts.set_cluster_tags_error(BoundedText(facts.cluster_tags_error(), kReportLineBytes));
  node.facts.set_cloud_config_cluster_id(
      BoundedText(facts.cloud_config_cluster_id(), kVersionBytes));
  node.facts.set_kubelet_node_name(BoundedText(facts.kubelet_node_name(), kVersionBytes));
  node.facts.set_inconsistent_only_for_stray_files(facts.inconsistent_only_for_stray_files());
  node.facts.set_worker_role(facts.worker_role());
  node.facts.set_credential_provider_installed(facts.credential_provider_installed());
  node.facts.set_credential_provider_install_dir(
      BoundedText(facts.credential_provider_install_dir(), kReportLineBytes));
}

absl::Status RolloutController::AgentConnected(const std::string& name, const pb::AgentHello& hello,
                                               std::shared_ptr<AgentLink> link) {
  Deferred deferred;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (hello.role() == pb::NODE_ROLE_WORKER) return WorkerConnected(name, hello, link);
    if (auto known = workers_.find(name); known != workers_.end()) {
      if (known->second.link || known->second.in_flight) {
        return absl::FailedPreconditionError(StrCat(
            "node ", name, " is a worker whose agent ",
            known->second.link ? "is connected" : "has a move in flight",
            "; an agent as a control-plane node for the same Node is refused"));
      }
      // Its agent now runs as a control-plane node's: no longer a worker.
      forgotten_workers_.insert(name);
      dirty_workers_.erase(name);
      workers_.erase(known);
    }
    Node* node = FindNode(name);
    const bool candidate = node == nullptr;
    if (candidate) {
      node = FindCandidate(name);
      if (node == nullptr) {
        if (candidates_.size() >= kMaxCandidates) {
          return absl::FailedPreconditionError(
              StrCat("node ", name, " is not a member of the rollout, and ", candidates_.size(),
                     " other nodes already wait to join (at most ", kMaxCandidates,
                     "): add or stop those first (handoffctl nodes)"));
        }
        node = &candidates_[name];
        node->name = name;
      }
    }
    if (node->link && node->link != link) {
      if (hello.instance_id().empty() || hello.instance_id() != node->instance_id) {
        return RefuseSecondAgent(*node, link->Peer());
      }
      node->link->Close(
          absl::AbortedError(StrCat("replaced by a newer stream from the same agent of node ", name,
                                    " (", link->Peer(), ")")));
      FailPlansOf(name, "the agent reconnected before answering", deferred);
    }
    node->link = link;
    node->instance_id = hello.instance_id();
    if (options_.events != nullptr) options_.events->AgentConnected(name, node->said_hello);
    node->said_hello = true;
    node->verifies = hello.verifies();
    node->agent_version = BoundedText(hello.agent_version(), kVersionBytes);
    node->last_seen_unix_ms = NowMs();
    ApplyReport(*node, hello.report());

    pb::CoordinatorMessage welcome;
    welcome.mutable_welcome()->set_rollout_id(rollout_.rollout_id);
    welcome.mutable_welcome()->set_coordinator_version(HANDOFF_VERSION);
    link->Send(welcome);

    if (candidate) {
      // Once per candidate: its agent retries for as long as it runs.
      if (!node->join_recorded) {
        node->join_recorded = true;
        store::HistoryEntry entry = Entry(
            name, "join-request", name,
            StrCat("agent ", hello.agent_version(), " connected from ", link->Peer(), " for node ",
                   name, ", which is not a member of the rollout: ", Name(node->state),
                   node->healthy ? ", healthy" : ", not healthy", "; handoffctl nodes add ", name,
                   " makes it one"));
        if (AdmitAgentEntry(*node, entry)) (void)Commit({std::move(entry)});
      }
      CandidateChanged();
      return absl::OkStatus();
    }

    std::vector<store::HistoryEntry> history;
    std::string message = StrCat(
        "agent ", hello.agent_version(), " connected from ", link->Peer(), ": ", Name(node->state),
        node->healthy ? ", healthy" : ", not healthy", node->verifies ? "" : " (verification off)");
    if (!node->reasons.empty()) StrAppend(&message, " (", StrJoin(node->reasons, "; "), ")");
    store::HistoryEntry connect = Entry(name, "connect", name, message);
    if (AdmitAgentEntry(*node, connect)) history.push_back(std::move(connect));
    SettleInFlight(*node, hello, history);
    (void)Commit(std::move(history));
    Advance();
  }
  RunDeferred(deferred);
  return absl::OkStatus();
}

absl::Status RolloutController::RefuseSecondAgent(Node& node, const std::string& peer) {
  const int64_t now = NowMs();
  const bool first = !node.second_agent;
  if (first) node.second_agent = Node::SecondAgent{peer, 0, now, now};
  Node::SecondAgent& second = *node.second_agent;
  second.peer = peer;
  ++second.refusals;
  second.last_unix_ms = now;
  const std::string why =
      StrCat("node ", node.name, " already has an agent connected (from ", node.link->Peer(),
             "), and this stream from ", peer,
             " is a second agent process with the same node certificate: a cloned machine, the "
             "certificate copied to another node, or an old agent left running. Two agents would "
             "both carry out each move, so only the first is served; stop the other one");
  if (first) {
    // Once per live stream: the refused agent retries with backoff for as long as it runs, and
    // the count in the node's status says how often.
    store::HistoryEntry entry = Entry(node.name, "second-agent", node.name, why);
    if (AdmitAgentEntry(node, entry)) (void)Commit({std::move(entry)});
    Notify(View());
  }
  return absl::FailedPreconditionError(why);
}

std::string RolloutController::SecondAgentText(const Node& node) {
  if (!node.second_agent) return "";
  const Node::SecondAgent& second = *node.second_agent;
  return StrCat(
      "a second agent with this node's certificate, from ", second.peer, ", refused ",
      second.refusals, second.refusals == 1 ? " time" : " times", " from ",
      ClockTime(second.first_unix_ms), " to ", ClockTime(second.last_unix_ms),
      " UTC while the first is connected from ",
      node.link ? node.link->Peer() : std::string("(gone)"));
}

void RolloutController::SettleInFlight(Node& node, const pb::AgentHello& hello,
                                       std::vector<store::HistoryEntry>& history) {
  if (!rollout_.in_flight || rollout_.in_flight->node != node.name) return;
  const store::InFlight move = *rollout_.in_flight;
  for (const pb::CommandResult& result : hello.recent_results()) {
    if (result.command_id() == move.command_id) {
      FinishMove(node, result, history);
      return;
    }
  }
  if (hello.running_command_id() == move.command_id) return;  // its result follows
  SettleUnanswered(node, move, history);
}

void RolloutController::SettleUnanswered(Node& node, const store::InFlight& move,
                                         std::vector<store::HistoryEntry>& history) {
  const std::string what = StrCat("move ", Name(move.from), " → ", Name(move.to));
  if (node.state == move.from) {
    // The agent never received the move, or lost it before recording it (it records a move
    // before starting it, so it did not start). Judged as a move about to be sent, which it is.
    EngineView view = View();
    for (rollout::NodeStatus& status : view.nodes) {
      if (status.name == node.name) status.in_transition = false;
    }
    absl::Status allowed =
        rollout::CheckMove(view.nodes, node.name, move.to, view.facts, view.control);
    if (allowed.ok()) {
      node.link->Send(WrapCommand(MoveCommand(move)));
      history.push_back(MoveEntry("command", move,
                                  StrCat(what, " sent again: the agent had not received it")));
      return;
    }
    rollout_.in_flight.reset();
    history.push_back(MoveEntry(
        "result", move, StrCat(what, " never reached the agent; dropped: ", allowed.message())));
    return;
  }
  rollout_.in_flight.reset();
  if (node.state == move.to) {
    node.last_result =
        StrCat("reached ", Name(move.to), " (the agent's record of the move is gone)");
    history.push_back(
        MoveEntry("result", move, StrCat(what, " took effect: the node reports ", Name(move.to))));
    return;
  }
  rollout_.halted = true;
  rollout_.halt_reason = StrCat(node.name, ": after ", what, " the node reports ",
                                Name(node.state), ", neither: look at the node");
  history.push_back(MoveEntry("halt", move, rollout_.halt_reason));
}

void RolloutController::FinishMove(Node& node, const pb::CommandResult& result,
                                   std::vector<store::HistoryEntry>& history) {
  const store::InFlight move = *rollout_.in_flight;
  rollout_.in_flight.reset();
  // The move may have handed leases over: the next move waits for facts read after it.
  facts_needed_after_ms_ = NowMs();
  if (result.has_report()) ApplyReport(node, result.report());
  std::string line =
      StrCat(Name(move.from), " → ", Name(move.to), " ", OutcomeName(result.outcome()));
  if (!result.message().empty()) StrAppend(&line, ": ", result.message());
  line = BoundedText(line, kEntryMessageBytes);
  node.last_result = line;
  store::HistoryEntry entry = Entry(node.name, "result", node.name, line);
  entry.command_id = move.command_id;
  entry.detail_json = ToJson(result);
  history.push_back(std::move(entry));
  if (options_.events != nullptr) {
    options_.events->MoveFinished(node.name, move.from, move.to, result,
                                  absl::Milliseconds(NowMs() - move.sent_unix_ms));
  }

  std::string failure;
  switch (result.outcome()) {
    case pb::CommandResult::SUCCEEDED:
      if (node.state != move.to) {
        failure = StrCat("the agent reported success but the node is ", Name(node.state));
      } else {
        MarkDowntime(move, result.finished_unix_ms(), history);
      }
      break;
    case pb::CommandResult::INTERRUPTED:
      // The agent stopped mid-move and restored the node on restart: nothing failed in the
      // cluster, so the engine may send the move again.
      return;
    default:
      failure = line;
      break;
  }
  if (failure.empty()) return;
  // R5: the first failure halts the rollout; the agent has already restored its node.
  rollout_.halted = true;
  rollout_.halt_reason = StrCat(node.name, ": ", failure);
  history.push_back(Entry("coordinator", "halt", node.name,
                          StrCat("halted: ", rollout_.halt_reason,
                                 " (handoffctl resume to try again, rollback to go back)")));
}

void RolloutController::MarkDowntime(const store::InFlight& move, int64_t finished_unix_ms,
                                     std::vector<store::HistoryEntry>& history) {
  if (rollout_.strategy != Strategy::kDowntime) return;
  const int64_t at = finished_unix_ms != 0 ? finished_unix_ms : NowMs();
  store::DowntimeMarks& marks = rollout_.downtime;
  if (move.from == NodeState::kInTree && move.to == NodeState::kStopped) {
    // The last kube-controller-manager parked (holders last: the one that ran the controllers):
    // from here no controller manager runs anywhere.
    for (const Node& other : nodes_) {
      if (other.state == NodeState::kInTree) return;
    }
    marks.all_stopped_unix_ms = at;
    history.push_back(Entry("coordinator", "downtime", move.node,
                            "every kube-controller-manager is stopped: the control plane runs "
                            "no controller manager until the first node is external"));
  } else if (move.from == NodeState::kStopped && move.to == NodeState::kExternal &&
             marks.controller_manager_back_unix_ms == 0 && marks.all_stopped_unix_ms != 0) {
    marks.controller_manager_back_unix_ms = at;
    history.push_back(Entry("coordinator", "downtime", move.node,
                            StrCat("a kube-controller-manager runs again (external) after ",
                                   FormatMs(at - marks.all_stopped_unix_ms),
                                   "; the cloud controllers wait for the first "
                                   "cloud-controller-manager")));
  } else if (move.from == NodeState::kExternal && move.to == NodeState::kFinalized &&
             marks.cloud_controllers_back_unix_ms == 0 && marks.all_stopped_unix_ms != 0) {
    marks.cloud_controllers_back_unix_ms = at;
    history.push_back(Entry("coordinator", "downtime", move.node,
                            StrCat("a cloud-controller-manager runs the cloud controllers: they "
                                   "were stopped for ",
                                   FormatMs(at - marks.all_stopped_unix_ms))));
  }
}

std::optional<pb::Downtime> RolloutController::MeasuredDowntime() const {
  const store::DowntimeMarks& marks = rollout_.downtime;
  if (rollout_.strategy != Strategy::kDowntime || marks.all_stopped_unix_ms == 0) {
    return std::nullopt;
  }
  pb::Downtime downtime;
  downtime.set_all_stopped_unix_ms(marks.all_stopped_unix_ms);
  downtime.set_controller_manager_back_unix_ms(marks.controller_manager_back_unix_ms);
  downtime.set_cloud_controllers_back_unix_ms(marks.cloud_controllers_back_unix_ms);
  if (marks.controller_manager_back_unix_ms != 0) {
    downtime.set_controller_manager_ms(marks.controller_manager_back_unix_ms -
                                       marks.all_stopped_unix_ms);
  }
  if (marks.cloud_controllers_back_unix_ms != 0) {
    downtime.set_cloud_controllers_ms(marks.cloud_controllers_back_unix_ms -
                                      marks.all_stopped_unix_ms);
  }
  return downtime;
}

void RolloutController::AgentMessage(const std::string& name, const AgentLink* link,
                                     const pb::AgentMessage& message) {
  Deferred deferred;
  {
    std::lock_guard<std::mutex> lock(mu_);
    Node* node = FindNode(name);
    if (node == nullptr && WorkerMessage(name, link, message)) return;
    if (node == nullptr) {
      // A candidate: only its reports count (what AddNode judges); nothing is sent to it.
      Node* candidate = FindCandidate(name);
      if (candidate == nullptr || candidate->link.get() != link) return;
      candidate->last_seen_unix_ms = NowMs();
      if (message.has_report()) {
        ApplyReport(*candidate, message.report());
        CandidateChanged();
      }
      return;
    }
    if (node->link.get() != link) return;  // a replaced stream
    node->last_seen_unix_ms = NowMs();
    std::vector<store::HistoryEntry> history;
    if (message.has_result()) {
      const pb::CommandResult& result = message.result();
      if (rollout_.in_flight && rollout_.in_flight->node == name &&
          rollout_.in_flight->command_id == result.command_id()) {
        FinishMove(*node, result, history);
      } else if (!TakePlanResult(result, deferred)) {
        spdlog::info("{}: result of command {} that is no longer awaited ({})", name,
                     result.command_id(), OutcomeName(result.outcome()));
      }
    } else if (message.has_processes_gone()) {
      const pb::ProcessesGone& proof = message.processes_gone();
      if (rollout_.in_flight && rollout_.in_flight->node == name &&
          rollout_.in_flight->command_id == proof.command_id() &&
          options_.move_listener != nullptr) {
        options_.move_listener->ProcessesGone(name, proof);
      }
    } else if (message.has_report()) {
      NodeState before = node->state;
      bool healthy_before = node->healthy;
      ApplyReport(*node, message.report());
      if (before != node->state || healthy_before != node->healthy) {
        store::HistoryEntry report = Entry(name, "report", name,
                                           StrCat("node now reports ", Name(node->state),
                                                  node->healthy ? ", healthy" : ", not healthy"));
        if (AdmitAgentEntry(*node, report)) history.push_back(std::move(report));
      }
    }
    if (!history.empty()) (void)Commit(std::move(history));
    Advance();
  }
  RunDeferred(deferred);
}

void RolloutController::AgentDisconnected(const std::string& name, const AgentLink* link) {
  Deferred deferred;
  {
    std::lock_guard<std::mutex> lock(mu_);
    Node* node = FindNode(name);
    if (node == nullptr && WorkerDisconnected(name, link)) return;
    if (node == nullptr) {
      // A candidate is known only while its agent is connected.
      Node* candidate = FindCandidate(name);
      if (candidate != nullptr && candidate->link.get() == link) {
        candidates_.erase(name);
        CandidateChanged();
      }
      return;
    }
    if (node->link.get() != link) return;
    std::string message = "agent disconnected";
    if (node->second_agent) {
      StrAppend(&message, " (", SecondAgentText(*node), ")");
      node->second_agent.reset();
    }
    node->link.reset();
    node->instance_id.clear();
    FailPlansOf(name, "the agent disconnected before answering", deferred);
    if (rollout_.in_flight && rollout_.in_flight->node == name) {
      StrAppend(&message, " with move ", rollout_.in_flight->command_id,
                " under way: its outcome is asked for when the agent is back");
    }
    // Nothing stored changes with a disconnect: only its entry, which the bucket bounds.
    store::HistoryEntry entry = Entry(name, "disconnect", name, message);
    if (AdmitAgentEntry(*node, entry)) (void)Commit({std::move(entry)});
    Advance();
  }
  RunDeferred(deferred);
}

void RolloutController::SetLongGaps(const std::map<std::string, int64_t>& gaps) {
  std::lock_guard<std::mutex> lock(mu_);
  long_gaps_ = gaps;
  // A gap that ended is not held against the next one.
  for (auto it = long_gaps_acknowledged_.begin(); it != long_gaps_acknowledged_.end();) {
    it = long_gaps_.count(it->first) == 0 ? long_gaps_acknowledged_.erase(it) : std::next(it);
  }
  Advance();
}

void RolloutController::SetFacts(const FactsReport& facts) {
  std::lock_guard<std::mutex> lock(mu_);
  facts_ = facts;
  facts_checked_ms_ = NowMs();
  facts_read_ms_ = facts.read_unix_ms != 0 ? facts.read_unix_ms : facts_checked_ms_;
  TakeClusterView();
  Advance();
}

bool RolloutController::WantsFacts() {
  std::lock_guard<std::mutex> lock(mu_);
  // A node just asked to leave is looked up at once, not at the next read.
  const std::string leaving = LeavingMember();
  return FactsStale() || (!leaving.empty() && facts_.node_objects.count(leaving) == 0 &&
                          facts_.node_objects_detail.empty());
}

void RolloutController::CandidateChanged() {
  // A replacement waiting for a join takes a candidate in by itself; otherwise only the status
  // changes.
  if (rollout_.strategy == Strategy::kReplace && rollout_.goal) {
    Advance();
  } else {
    Notify(View());
  }
}

std::vector<std::string> RolloutController::LeavingNodes() {
  std::lock_guard<std::mutex> lock(mu_);
  // Asked about from the moment the removal is asked for until the node has left, whatever the
  // rollout waits for meanwhile: what it waits for is read again at every facts read.
  const std::string leaving = LeavingMember();
  if (leaving.empty()) return {};
  return {leaving};
}

std::string RolloutController::LeavingMember() const {
  if (rollout_.strategy != Strategy::kReplace || rollout_.replace_leaving.empty()) return "";
  for (const Node& node : nodes_) {
    if (node.name == rollout_.replace_leaving) return node.name;
  }
  return "";
}

bool RolloutController::FactsStale() const {
  return options_.fresh_facts_after_moves && facts_read_ms_ <= facts_needed_after_ms_;
}

void RolloutController::RecordAudit(const std::string& kind, const std::string& node,
                                    const std::string& message, const std::string& detail_json) {
  std::lock_guard<std::mutex> lock(mu_);
  store::HistoryEntry entry = Entry("coordinator", kind, node, message);
  entry.detail_json = detail_json;
  if (absl::Status committed = Commit({std::move(entry)}); !committed.ok()) {
    spdlog::error("cannot record {} of {} in the history: {}", kind, node,
                  std::string(committed.message()));
  }
  Notify(View());
}

bool RolloutController::Halt(const std::string& kind, const std::string& reason,
                             const std::string& detail_json) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!rollout_.goal || rollout_.halted || next_.kind == rollout::Decision::Kind::kDone) {
    return false;
  }
  rollout_.halted = true;
  rollout_.halt_reason = reason;
  store::HistoryEntry entry = Entry("coordinator", kind, "", reason);
  entry.detail_json = detail_json;
  if (absl::Status committed = Commit({std::move(entry)}); !committed.ok()) {
    spdlog::error("cannot record the halt ({}) in the history: {}", reason,
                  std::string(committed.message()));
  }
  Advance();
  return true;
}

bool RolloutController::OutageAccepted() {
  std::lock_guard<std::mutex> lock(mu_);
  return rollout_.strategy == Strategy::kDowntime && rollout_.goal &&
         next_.kind != rollout::Decision::Kind::kDone;
}

void RolloutController::Tick() {
  Deferred deferred;
  {
    std::lock_guard<std::mutex> lock(mu_);
    ExpirePlans(deferred);
    Advance();
  }
  RunDeferred(deferred);
}

rollout::NodeStatus RolloutController::EngineNode(const Node& node) const {
  rollout::NodeStatus status;
  status.name = node.name;
  status.state = node.state;
  status.connected = node.link != nullptr;
  status.healthy = node.healthy;
  status.in_transition = rollout_.in_flight && rollout_.in_flight->node == node.name;
  status.awaiting_hello = !node.said_hello;
  status.kube_controller_manager_version = node.kube_controller_manager_version;
  status.unfinished_transactions = node.unfinished_transactions;
  return status;
}

std::vector<rollout::NodeStatus> RolloutController::EngineNodes() const {
  std::vector<rollout::NodeStatus> nodes;
  for (const Node& node : nodes_) nodes.push_back(EngineNode(node));
  return nodes;
}

rollout::ClusterFacts RolloutController::EngineFacts(
    const std::vector<rollout::NodeStatus>& nodes) const {
  if (facts_.source == "assumed") {
    // --no-cluster-checks: the operator vouches for the lease; no holder is known to order by.
    rollout::ClusterFacts facts;
    facts.rbac_ready = facts_.rbac_ready;
    facts.lease_held_by_healthy_manager = facts_.lease_held;
    return facts;
  }
  rollout::LeaseHosts hosts;
  if (facts_.lease_held) hosts.migration = facts_.lease_holder_node;
  hosts.kube_controller_manager = facts_.kube_controller_manager_holder_node;
  hosts.cloud_controller_manager = facts_.cloud_controller_manager_holder_node;
  return rollout::FactsFromLeases(nodes, hosts, facts_.rbac_ready);
}

rollout::Control RolloutController::EngineControl() const {
  rollout::Control control;
  control.paused = rollout_.paused;
  control.halted = rollout_.halted;
  control.halt_reason = rollout_.halt_reason;
  if (rollout_.strategy != Strategy::kDowntime) {
    std::vector<std::string> names;
    int64_t since = 0;
    for (const auto& [name, none_since] : long_gaps_) {
      const auto acknowledged = long_gaps_acknowledged_.find(name);
      if (acknowledged != long_gaps_acknowledged_.end() && acknowledged->second == none_since) {
        continue;
      }
      names.push_back(name);
      since = since == 0 ? none_since : std::min(since, none_since);
    }
    if (!names.empty()) {
      control.no_runner = StrCat(StrJoin(names, ", "), " since ", ClockTime(since), " UTC");
    }
  }
  return control;
}

RolloutController::EngineView RolloutController::View() const {
  EngineView view;
  view.nodes = EngineNodes();
  view.facts = EngineFacts(view.nodes);
  view.facts.external_workers = ExternalWorkerCount();
  view.control = EngineControl();
  return view;
}

std::string RolloutController::NewCommandId() {
  return StrCat(rollout_.rollout_id, "-", rollout_.next_command_sequence++);
}

pb::Command RolloutController::MoveCommand(const store::InFlight& move) const {
  pb::Command command;
  command.set_id(move.command_id);
  pb::MoveRequest* request = command.mutable_move();
  request->set_from(ToProto(move.from));
  request->set_to(ToProto(move.to));
  request->set_settings_yaml(rollout_.settings_yaml);
  return command;
}

void RolloutController::Advance() {
  EngineView view = View();
  const bool routine = DecideAndSend(view);
  RecordWhyItWaits(routine);
  Notify(view);
}

void RolloutController::RecordWhyItWaits(bool routine) {
  using Kind = rollout::Decision::Kind;
  const bool blocked =
      rollout_.goal.has_value() && (next_.kind == Kind::kWait || next_.kind == Kind::kStuck);
  // A pause and a halt have entries of their own.
  routine = routine || rollout_.paused || rollout_.halted;
  const std::string reason = blocked ? rollout::DescribeNext(next_, rollout_.goal) : "";
  const std::string kind = !blocked ? "" : next_.kind == Kind::kStuck ? "stuck" : "waiting";
  if (kind == why_kind_ && reason == why_reason_) return;
  why_kind_ = kind;
  why_reason_ = reason;
  why_since_ms_ = blocked ? NowMs() : 0;
  // The waits every move passes through (its result, the facts read after it) are the command's
  // and the result's entries already; a wait or a stuck rollout of any other reason is recorded
  // each time that reason changes.
  if (!blocked || routine) return;
  // A reason that flaps (an agent reconnecting without end) is bounded as that agent's entries.
  if (!why_entries_.Admit(NowMs(), options_.agent_entry_burst, options_.agent_entry_interval)) {
    return;
  }
  store::HistoryEntry entry = Entry("coordinator", kind, next_.node, reason);
  if (const int64_t not_written = why_entries_.TakeNotWritten(); not_written > 0) {
    entry.message += NotWrittenNote(not_written, "the rollout's waiting reasons");
  }
  if (absl::Status committed = Commit({std::move(entry)}); !committed.ok()) {
    spdlog::error("cannot record why the rollout {}: {}", kind, std::string(committed.message()));
  }
}

bool RolloutController::DecideAndSend(EngineView& view) {
  if (!rollout_.goal) {
    next_ = rollout::Decision{};
    next_.kind = rollout::Decision::Kind::kWait;
    next_.reason = "no rollout yet: `handoffctl start` begins one";
    return true;
  }
  const rollout::FleetDecision fleet = DecideFleet(view);
  if (fleet.part == rollout::FleetDecision::Part::kWorkers) {
    const bool acted = (fleet.workers.kind == rollout::WorkerDecision::Kind::kMove &&
                        SendWorkerMoves(fleet.workers, view)) ||
                       (fleet.workers.kind == rollout::WorkerDecision::Kind::kRetire &&
                        AskWorkersToLeave(fleet.workers).ok());
    if (acted) {
      view = View();
      DecideFleet(view);
    }
    return WorkersInFlight() > 0;
  }
  if (next_.kind != rollout::Decision::Kind::kMove) {
    return rollout_.in_flight.has_value() || WorkersInFlight() > 0;
  }
  if (FactsStale()) {
    // Which node to move next depends on who holds the leases (holders last), and the last move
    // may have changed that: decide on the leases as it left them.
    next_.kind = rollout::Decision::Kind::kWait;
    next_.reason = StrCat("reading the leases as the last move left them, then ", next_.node,
                          " → ", Name(next_.to));
    return true;
  }
  absl::Status allowed =
      rollout::CheckMove(view.nodes, next_.node, next_.to, view.facts, view.control);
  Node* node = FindNode(next_.node);
  if (!allowed.ok() || node == nullptr || !node->link) {
    // NextStep never proposes what CheckMove refuses; if it ever did, waiting is the safe side.
    spdlog::error("refused the engine's move of {} to {}: {}", next_.node, Name(next_.to),
                  std::string(allowed.message()));
    next_.kind = rollout::Decision::Kind::kWait;
    next_.reason = StrCat("move of ", next_.node, " refused: ", allowed.message());
    return false;
  }
  store::InFlight move;
  move.command_id = NewCommandId();
  move.node = node->name;
  move.from = node->state;
  move.to = next_.to;
  move.sent_unix_ms = NowMs();
  SendMove(move, *node);
  // What the status shows next: the move in flight, or the halt of a failed record.
  for (rollout::NodeStatus& status : view.nodes) {
    status.in_transition = rollout_.in_flight && rollout_.in_flight->node == status.name;
  }
  view.control = EngineControl();
  view.facts.external_workers = ExternalWorkerCount();
  DecideFleet(view);
  return rollout_.in_flight.has_value();
}

rollout::FleetDecision RolloutController::DecideFleet(EngineView& view) {
  using Fleet = rollout::FleetDecision;
  using Workers = rollout::WorkerDecision;
  rollout::Decision control_plane = Decide(view);
  const std::vector<rollout::WorkerStatus> workers = WorkerStatuses();
  rollout::FleetDecision fleet =
      rollout::CombineFleet(std::move(control_plane), DecideWorkers(view, workers), view.nodes,
                            workers, *rollout_.goal);
  next_ = rollout::Decision{};
  next_.reason = fleet.reason;
  if (fleet.done) {
    next_.kind = rollout::Decision::Kind::kDone;
  } else if (fleet.part == Fleet::Part::kControlPlane) {
    next_ = fleet.control_plane;
  } else if (fleet.part == Fleet::Part::kNeither) {
    next_.kind = rollout::Decision::Kind::kWait;
  } else if (fleet.workers.kind == Workers::Kind::kMove) {
    next_.kind = rollout::Decision::Kind::kMove;
    next_.node = StrJoin(fleet.workers.nodes, ", ");
    next_.to = fleet.workers.to;
  } else if (fleet.workers.kind == Workers::Kind::kRetire) {
    next_.kind = rollout::Decision::Kind::kWait;
  } else {
    next_.kind = fleet.workers.kind == Workers::Kind::kStuck ? rollout::Decision::Kind::kStuck
                                                               : rollout::Decision::Kind::kWait;
  }
  return fleet;
}

rollout::Decision RolloutController::Decide(EngineView& view) {
  replacement_.reset();
  if (rollout_.strategy == Strategy::kReplace) return DecideReplacement(view);
  const rollout::Goal goal{*rollout_.goal, PathOf(rollout_.strategy)};
  return rollout::NextStep(view.nodes, goal, view.facts, view.control);
}

rollout::Decision RolloutController::DecideReplacement(EngineView& view) {
  using Kind = rollout::ReplacementStep::Kind;
  rollout::ReplacementGoal goal{*rollout_.goal, rollout_.replace_size};
  rollout::Decision decision;
  // Each round may take a node in or out, and then decides again on the new membership; a
  // replacement changes it at most twice before it must wait for a move.
  for (int round = 0; round < 3; ++round) {
    goal.leaving = LeavingMember();
    rollout::ReplacementStep step =
        rollout::NextReplacementStep(view.nodes, goal, view.facts, view.control);
    decision.node = step.node;
    decision.to = step.to;
    decision.reason = step.reason;
    switch (step.kind) {
      case Kind::kMove:
        decision.kind = rollout::Decision::Kind::kMove;
        return decision;
      case Kind::kDone:
        decision.kind = rollout::Decision::Kind::kDone;
        return decision;
      case Kind::kStuck:
        decision.kind = rollout::Decision::Kind::kStuck;
        return decision;
      case Kind::kWait:
        decision.kind = rollout::Decision::Kind::kWait;
        return decision;
      case Kind::kJoin: {
        pb::Replacement replacement;
        replacement.set_waiting(pb::Replacement::JOIN);
        replacement.set_join_state(ToProto(step.to));
        std::string joined;
        for (const auto& [name, candidate] : candidates_) {
          const rollout::NodeStatus status = EngineNode(candidate);
          absl::Status allowed =
              candidate.state != step.to
                  ? absl::FailedPreconditionError(
                        StrCat("it is ", Name(candidate.state), ", not ", Name(step.to)))
                  : rollout::CheckJoin(view.nodes, status);
          if (allowed.ok()) {
            joined = name;
            break;
          }
          replacement.add_refused_candidates(StrCat(name, ": ", allowed.message()));
        }
        if (!joined.empty() &&
            JoinMember("coordinator", joined,
                       StrCat("the replacement asked for a node joining ", Name(step.to)))
                .ok()) {
          view = View();
          continue;
        }
        ReplacementCommands(step, replacement);
        replacement_ = std::move(replacement);
        decision.kind = rollout::Decision::Kind::kWait;
        decision.reason = StrCat(step.reason, "; waiting for its agent to connect");
        return decision;
      }
      case Kind::kLeave: {
        if (rollout_.replace_leaving != step.node) {
          if (absl::Status asked = AskToLeave(step); !asked.ok()) {
            decision.kind = rollout::Decision::Kind::kStuck;
            decision.reason = rollout_.halt_reason;
            return decision;
          }
        }
        const Node* leaving = FindNode(step.node);
        std::vector<Presence> pending = StillPresent(*leaving);
        if (pending.empty() &&
            LeaveMember("coordinator", step.node,
                        "the replacement removed it: its agent is gone, and neither the API "
                        "server nor etcd lists it")
                .ok()) {
          view = View();
          continue;
        }
        pb::Replacement replacement;
        replacement.set_waiting(pb::Replacement::LEAVE);
        replacement.set_node(step.node);
        std::vector<std::string> what;
        for (const Presence& item : pending) {
          replacement.add_pending(
              item.evidence.empty() ? item.what : StrCat(item.what, " (", item.evidence, ")"));
          what.push_back(item.what);
        }
        ReplacementCommands(step, replacement);
        replacement_ = std::move(replacement);
        decision.kind = rollout::Decision::Kind::kWait;
        decision.reason = StrCat("M3: ", step.reason, "; waiting: ", StrJoin(what, "; "));
        return decision;
      }
    }
  }
  decision.kind = rollout::Decision::Kind::kWait;
  decision.reason = "the membership changed; deciding again on the next event";
  return decision;
}

void RolloutController::ReplacementCommands(const rollout::ReplacementStep& step,
                                            pb::Replacement& replacement) const {
  replacement.set_size(static_cast<int32_t>(rollout_.replace_size));
  int32_t old_nodes = 0;
  for (const Node& node : nodes_) {
    old_nodes += rollout::IsOldNode(node.state, *rollout_.goal) ? 1 : 0;
  }
  replacement.set_old_nodes_left(old_nodes);
  const std::string agent =
      "handoffctl certs issue --dir CA_DIR --node NEW_NODE, then start handoff-agent on the new "
      "machine with that certificate (it connects, and the coordinator takes the node in once "
      "it is verified healthy)";
  if (step.kind == rollout::ReplacementStep::Kind::kJoin && step.to == NodeState::kExternal) {
    replacement.add_commands(
        "handoffctl kubeadm-config apply --to external --kubernetes-version VERSION_N+1 (once: "
        "kubeadm builds the new node at N+1 with every cloud-provider flag external)");
    replacement.add_commands(
        "on the new machine: kubeadm join CONTROL_PLANE_ENDPOINT --control-plane --config "
        "join.yaml (a JoinConfiguration with nodeRegistration.kubeletExtraArgs: "
        "{cloud-provider: external})");
    replacement.add_commands(agent);
  } else if (step.kind == rollout::ReplacementStep::Kind::kJoin) {
    replacement.add_commands(
        "handoffctl kubeadm-config apply --to prepared --kubernetes-version VERSION_N (once: "
        "kubeadm builds the new node at N with the in-tree provider and Leader Migration; a "
        "kube-controller-manager of version N without it would run the cloud controllers "
        "beside the cloud-controller-managers)");
    replacement.add_commands(
        "on the new machine, before kubeadm join: handoffctl kubeadm-config "
        "leader-migration-file --kubernetes-version VERSION_N --settings SETTINGS > "
        "/etc/leadermigration.conf");
    replacement.add_commands(
        "on the new machine: kubeadm join CONTROL_PLANE_ENDPOINT --control-plane --config "
        "join.yaml (a JoinConfiguration with nodeRegistration.kubeletExtraArgs: "
        "{cloud-provider: aws}); once the rollback is done, handoffctl kubeadm-config apply "
        "--to in-tree");
    replacement.add_commands(agent);
  } else {
    const std::string& node = step.node;
    replacement.add_commands(StrCat("on ", node,
                                    ": kubeadm reset --force (stops its static pods and removes "
                                    "its etcd member), then systemctl disable --now "
                                    "handoff-agent"));
    replacement.add_commands(
        StrCat("if the machine is gone without a reset: etcdctl member remove MEMBER_ID (the ID "
               "etcdctl member list shows for ",
               node, ", from a remaining control-plane node)"));
    replacement.add_commands(StrCat("kubectl delete node ", node));
  }
}

std::vector<RolloutController::Presence> RolloutController::StillPresent(const Node& node) const {
  std::vector<Presence> pending;
  const std::string read_at =
      facts_read_ms_ == 0 ? std::string() : StrCat(" at ", ClockTime(facts_read_ms_), " UTC");
  if (node.link) {
    pending.push_back({"its agent is connected",
                       StrCat("from ", node.link->Peer(), ", last heard ",
                              ClockTime(node.last_seen_unix_ms), " UTC")});
  }
  const auto object = facts_.node_objects.find(node.name);
  if (object == facts_.node_objects.end()) {
    pending.push_back({"its Node object is not read yet", facts_.node_objects_detail});
  } else if (object->second) {
    pending.push_back({StrCat("the API server has Node ", node.name), StrCat("read", read_at)});
  }
  if (!facts_.etcd_members) {
    pending.push_back(
        {"etcd's member list is not read",
         StrCat(facts_.etcd_members_detail, facts_.etcd_members_detail.empty() ? "" : ": ",
                "once etcdctl member list no longer shows it, handoffctl nodes remove ",
                node.name)});
  } else if (std::find(facts_.etcd_members->begin(), facts_.etcd_members->end(), node.name) !=
             facts_.etcd_members->end()) {
    pending.push_back({StrCat("etcd lists member ", node.name),
                       StrCat("member list from ",
                              facts_.etcd_members_source.empty() ? std::string("etcd")
                                                                 : facts_.etcd_members_source,
                              read_at)});
  }
  return pending;
}

absl::Status RolloutController::AskToLeave(const rollout::ReplacementStep& step) {
  const std::string before = rollout_.replace_leaving;
  rollout_.replace_leaving = step.node;
  // Remembered before anyone is told: from now on the node's machine may be reset at any moment,
  // so the replacement waits for this node, and no other, to leave (replacement.h).
  absl::Status committed =
      Commit({Entry("coordinator", "leave-requested", step.node, step.reason)});
  if (!committed.ok()) rollout_.replace_leaving = before;
  return committed;
}

bool RolloutController::SendMove(const store::InFlight& move, Node& node) {
  rollout_.in_flight = move;
  store::HistoryEntry entry =
      MoveEntry("command", move, StrCat("move ", Name(move.from), " → ", Name(move.to)));
  pb::Command command = MoveCommand(move);
  pb::Command recorded = command;
  recorded.mutable_move()->clear_settings_yaml();  // the rollout's settings, recorded once
  entry.detail_json = ToJson(recorded);
  // Recorded before it is sent: a coordinator that dies in between asks the agent about it.
  if (!Commit({std::move(entry)}).ok()) {
    rollout_.in_flight.reset();
    return false;
  }
  // The holders before the move, for the lease release: the facts were read before it.
  if (options_.move_listener != nullptr) {
    options_.move_listener->MoveSent(node.name, move.command_id, facts_);
  }
  node.link->Send(WrapCommand(command));
  return true;
}

absl::StatusOr<pb::RolloutStatus> RolloutController::SetGoal(const std::string& actor,
                                                             const std::string& kind,
                                                             NodeState goal) {
  if (rollout_.rollout_id.empty()) {
    rollout_.rollout_id =
        StrCat("r", absl::FormatTime("%Y%m%d%H%M%S", clock_.Now(), absl::UTCTimeZone()), "-",
               RandomHex(3));
  }
  std::string message = StrCat(kind, ": goal ", Name(goal));
  if (rollout_.strategy == Strategy::kDowntime) message += " by the downtime strategy";
  if (rollout_.strategy == Strategy::kReplace) {
    StrAppend(&message, " by replacing nodes (the control plane keeps ", rollout_.replace_size,
              " members)");
  }
  if (!rollout_.goal || *rollout_.goal != goal) {
    // Progress is counted from where each node stands when the goal is set.
    for (Node& node : nodes_) node.goal_start = node.state;
    for (auto& [name, worker] : workers_) {
      worker.goal_start = worker.state;
      dirty_workers_.insert(name);
    }
  }
  ClearWorkerFailures(message);
  if (!workers_.empty() || !agentless_.empty()) {
    const rollout::WorkerPolicy policy = WorkerPolicyNow();
    StrAppend(&message, "; workers ", rollout::FormatMaxUnavailable(policy.max_unavailable),
              " at a time, pausing after ", policy.failure_budget, " failed");
  }
  if (rollout_.halted) StrAppend(&message, "; clears the halt (", rollout_.halt_reason, ")");
  if (rollout_.paused) StrAppend(&message, "; clears the pause");
  if (rollout_.strategy != Strategy::kReplace && !rollout_.replace_leaving.empty()) {
    // In place, nothing waits for the node the replacement asked to leave: if its machine is
    // reset, the rollout stops on its last report until the operator takes it out.
    StrAppend(&message, "; no longer waits for ", rollout_.replace_leaving,
              " to leave (the replacement asked for it): once its machine is reset, handoffctl "
              "nodes remove ",
              rollout_.replace_leaving);
    rollout_.replace_leaving.clear();
  }
  if (!long_gaps_.empty()) {
    StrAppend(&message, "; goes on without a runner of ", StrJoin(KeysOf(long_gaps_), ", "),
              " (the long gap going on)");
    long_gaps_acknowledged_ = long_gaps_;
  }
  rollout_.goal = goal;
  rollout_.paused = false;
  rollout_.halted = false;
  rollout_.halt_reason.clear();
  absl::Status committed = Commit({Entry(actor, kind, "", message)});
  if (!committed.ok()) return committed;
  if (options_.events != nullptr) options_.events->GoalSet(kind, goal);
  Advance();
  return BuildStatus(View());
}

absl::StatusOr<pb::RolloutStatus> RolloutController::Start(
    const std::string& actor, NodeState goal, const std::vector<std::string>& ignore_preflight,
    Strategy strategy, const std::string& ignore_reason,
    const WorkerPolicyChange& workers) {
  const bool replace = strategy == Strategy::kReplace;
  if (goal != NodeState::kPrepared && goal != NodeState::kMigrated &&
      goal != NodeState::kFinalized) {
    return absl::InvalidArgumentError(
        "start takes the goal prepared, migrated or finalized; to go back use rollback --to");
  }
  if (strategy == Strategy::kDowntime && goal != NodeState::kFinalized) {
    return absl::InvalidArgumentError(StrCat("the downtime strategy has no stop at ",
                                             NodeStateName(goal), ": its goal is finalized"));
  }
  if (replace && goal != NodeState::kMigrated) {
    return absl::InvalidArgumentError(
        StrCat("a replacement goes to migrated (every node of version N replaced), not to ",
               NodeStateName(goal), "; finalize then goes on in place"));
  }
  if (absl::Status ignorable = rollout::CheckIgnorable(ignore_preflight); !ignorable.ok()) {
    return ignorable;
  }
  if (workers.failure_budget && *workers.failure_budget < 1) {
    return absl::InvalidArgumentError(StrCat("--failure-budget must be at least 1, not ",
                                             *workers.failure_budget));
  }
  const bool downtime = strategy == Strategy::kDowntime;
  std::shared_ptr<const preflight::ClusterView> fresh;
  if (options_.read_cluster_view && ClusterViewRefuses(downtime, ignore_preflight)) {
    fresh = options_.read_cluster_view();
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (fresh != nullptr) {
    facts_.cluster_view = std::move(fresh);
    TakeClusterView();
  }
  if (goal == NodeState::kPrepared) {
    // Forward only: prepared as a goal from a node that runs a cloud-controller-manager would
    // walk it back, which is the rollback's to do.
    for (const Node& node : nodes_) {
      if (RunsCloudControllerManager(node.state)) {
        return absl::FailedPreconditionError(
            StrCat(node.name, " is ", NodeStateName(node.state),
                   ": start --prepare-only only moves nodes forward; `handoffctl rollback --to "
                   "prepared` walks them back"));
      }
    }
  }
  auto [refusing, ignored] = rollout::Judge(RunPreflight(View(), downtime), ignore_preflight);
  if (!refusing.empty()) {
    const std::string why = rollout::DescribePreflight(refusing);
    // Recorded: an operator reading the history sees why nothing moved.
    (void)Commit({Entry(actor, "start-refused", "", why)});
    return absl::FailedPreconditionError(why);
  }
  if (!ignored.empty()) {
    std::vector<store::HistoryEntry> history;
    const std::string reason =
        ignore_reason.empty() ? std::string("no reason given") : BoundedText(ignore_reason, 1024);
    for (const rollout::PreflightProblem& problem : ignored) {
      store::HistoryEntry entry =
          Entry(actor, "preflight-ignored", "",
                StrCat("[", problem.check, "] ", problem.message, " (skipped: ", reason, ")"));
      entry.detail_json = nlohmann::json{
          {"check", problem.check},
          {"problem", problem.message},
          {"reason", reason}}.dump();
      history.push_back(std::move(entry));
    }
    if (absl::Status committed = Commit(std::move(history)); !committed.ok()) return committed;
  }
  if (replace && (rollout_.strategy != Strategy::kReplace || rollout_.replace_size == 0 ||
                  rollout_.goal != goal)) {
    // The control plane keeps the members it has now, the workers theirs; a start again after
    // a halt keeps the sizes of the replacement under way.
    rollout_.replace_size = nodes_.size();
    rollout_.worker_replace_size = WorkersToKeep();
  }
  if (workers.max_unavailable) {
    rollout_.worker_max_unavailable = rollout::FormatMaxUnavailable(*workers.max_unavailable);
  }
  if (workers.failure_budget) rollout_.worker_failure_budget = *workers.failure_budget;
  bool all_in_tree = true;
  for (const Node& node : nodes_) all_in_tree = all_in_tree && node.state == NodeState::kInTree;
  if (strategy != rollout_.strategy || all_in_tree) {
    // A new strategy, or a new start from in-tree, measures its own outage (a start again after
    // a halt keeps measuring the one under way).
    rollout_.strategy = strategy;
    rollout_.downtime = store::DowntimeMarks{};
  }
  return SetGoal(actor, "start", goal);
}

bool RolloutController::ClusterViewRefuses(bool downtime, const std::vector<std::string>& ignore) {
  std::lock_guard<std::mutex> lock(mu_);
  return facts_.cluster_view != nullptr &&
         !rollout::Judge(RunPreflight(View(), downtime), ignore).refusing.empty();
}

std::vector<rollout::PreflightProblem> RolloutController::RunPreflight(const EngineView& view,
                                                                      bool downtime) const {
  rollout::PreflightInput input;
  input.downtime = downtime;
  input.nodes = view.nodes;
  input.cluster_checked = facts_.source == "kubernetes";
  input.rbac_ready = facts_.rbac_ready;
  const rollout::ClusterFacts& engine = view.facts;
  input.kube_controller_manager = {facts_.kube_controller_manager_holder_node,
                                   engine.holders.kube_controller_manager};
  input.cloud_controller_manager = {facts_.cloud_controller_manager_holder_node,
                                    engine.holders.cloud_controller_manager};
  if (facts_.lease_held) input.migration = {facts_.lease_holder_node, engine.holders.migration};
  std::vector<rollout::PreflightProblem> problems =
      rollout::Preflight(std::move(input), options_.settings_yaml, "--settings");
  if (!agentless_.empty()) {
    std::vector<std::string> names;
    for (const auto& [name, zone] : agentless_) names.push_back(name);
    problems.push_back(rollout::PreflightProblem{
        "worker-agents",
        StrCat(names.size(), names.size() == 1 ? " worker has" : " workers have",
               " no agent: their kubelets cannot be moved (", rollout::FewNames(names),
               "); install the worker agent on them (README: moving the workers)")});
  }
  if (facts_.cluster_view == nullptr) return problems;

  // The checks `handoffctl preflight` makes, on the view the facts source read last and the
  // facts the agents reported: each failed one refuses the start, named by its check.
  preflight::ClusterCheckOptions options;
  if (absl::StatusOr<Settings> settings = ParseSettings(options_.settings_yaml, "--settings");
      settings.ok()) {
    options.settings = *std::move(settings);
  }
  options.rbac.migration_lease = options.settings.leader_name;
  options.downtime = downtime;
  std::vector<preflight::NodeFacts> reported;
  for (const Node& node : nodes_) {
    reported.push_back(preflight::FromReport(node.name, node.said_hello ? &node.facts : nullptr));
    if (std::optional<preflight::KubeletFacts> kubelet = preflight::KubeletFromReport(node.facts)) {
      options.kubelets[node.name] = *kubelet;
    }
  }
  std::vector<preflight::CheckResult> results =
      preflight::RunNodeChecks(*facts_.cluster_view, reported, options.settings.cluster_id);
  for (preflight::CheckResult& result :
       preflight::RunClusterChecks(*facts_.cluster_view, options)) {
    if (result.name == preflight::kCheckRbac && result.verdict != preflight::Verdict::kWarn) {
      // The authorizer answered: its answer replaces the rules' shape.
      problems.erase(std::remove_if(problems.begin(), problems.end(),
                                    [](const rollout::PreflightProblem& problem) {
                                      return problem.check == preflight::kCheckRbac;
                                    }),
                     problems.end());
    }
    results.push_back(std::move(result));
  }
  for (const preflight::CheckResult& result : results) {
    if (result.verdict != preflight::Verdict::kFail) continue;
    problems.push_back(rollout::PreflightProblem{
        result.name, StrCat(StrJoin(result.evidence, "; "), "; ", result.action)});
  }
  return problems;
}

absl::StatusOr<pb::RolloutStatus> RolloutController::Finalize(const std::string& actor) {
  std::lock_guard<std::mutex> lock(mu_);
  if (rollout_.strategy == Strategy::kReplace) {
    // Finalizing changes no version: it goes on in place.
    rollout_.strategy = Strategy::kLeaderMigration;
    rollout_.replace_size = 0;
    rollout_.worker_replace_size = 0;
  }
  return SetGoal(actor, "finalize", NodeState::kFinalized);
}

absl::StatusOr<pb::RolloutStatus> RolloutController::Rollback(const std::string& actor,
                                                              NodeState to, bool replace) {
  if (to != NodeState::kPrepared && to != NodeState::kInTree) {
    return absl::InvalidArgumentError("rollback goes --to prepared or --to in-tree");
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (!rollout_.goal) {
    return absl::FailedPreconditionError("no rollout has started: there is nothing to roll back");
  }
  if (rollout_.strategy == Strategy::kDowntime && to == NodeState::kPrepared) {
    // The downtime path has no prepared. Nodes on it (stopped, external) go back along it; once
    // every node is in-tree or finalized, Leader Migration can walk finalized nodes back.
    for (const Node& node : nodes_) {
      if (IsDowntimeState(node.state)) {
        return absl::FailedPreconditionError(StrCat(
            "node ", node.name, " is ", Name(node.state),
            " (the downtime path, which has no prepared): rollback --to in-tree instead"));
      }
    }
    rollout_.strategy = Strategy::kLeaderMigration;
  }
  if (replace) {
    if (rollout_.strategy == Strategy::kDowntime) {
      return absl::FailedPreconditionError(
          "a downtime rollout rolls back in place (rollback --to in-tree); a replacement goes by "
          "Leader Migration");
    }
    if (rollout_.strategy != Strategy::kReplace || rollout_.goal != to ||
        rollout_.replace_size == 0) {
      rollout_.replace_size = nodes_.size();
      rollout_.worker_replace_size = WorkersToKeep();
    }
    rollout_.strategy = Strategy::kReplace;
  } else if (rollout_.strategy == Strategy::kReplace) {
    rollout_.strategy = Strategy::kLeaderMigration;
    rollout_.replace_size = 0;
    rollout_.worker_replace_size = 0;
  }
  return SetGoal(actor, "rollback", to);
}

absl::StatusOr<pb::RolloutStatus> RolloutController::Pause(const std::string& actor,
                                                           const std::string& reason) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!rollout_.goal)
    return absl::FailedPreconditionError("no rollout has started: nothing to pause");
  if (!rollout_.paused) {
    rollout_.paused = true;
    std::string message = "paused";
    if (!reason.empty()) StrAppend(&message, ": ", reason);
    if (rollout_.in_flight) {
      StrAppend(&message, " (move ", rollout_.in_flight->command_id, " to ",
                rollout_.in_flight->node, " finishes)");
    }
    absl::Status committed = Commit({Entry(actor, "pause", "", message)});
    if (!committed.ok()) return committed;
  }
  Advance();
  return BuildStatus(View());
}

absl::StatusOr<pb::RolloutStatus> RolloutController::AddNode(const std::string& actor,
                                                             const std::string& name,
                                                             const std::string& reason) {
  std::lock_guard<std::mutex> lock(mu_);
  if (FindNode(name) != nullptr) {
    return absl::FailedPreconditionError(
        StrCat("node ", name, " is already a member of the rollout"));
  }
  Node* candidate = FindCandidate(name);
  if (candidate == nullptr) {
    return absl::NotFoundError(
        StrCat("no agent of a node named ", name,
               " is connected: a node joins once its agent, with a certificate for ", name,
               " from this coordinator's CA, has connected (handoffctl nodes lists them)"));
  }
  if (absl::Status allowed = rollout::CheckJoin(EngineNodes(), EngineNode(*candidate));
      !allowed.ok()) {
    return allowed;
  }
  if (absl::Status joined = JoinMember(actor, name, reason); !joined.ok()) return joined;
  Advance();
  return BuildStatus(View());
}

absl::Status RolloutController::JoinMember(const std::string& actor, const std::string& name,
                                           const std::string& reason) {
  Node* candidate = FindCandidate(name);
  const std::vector<std::string> launch_before = rollout_.launch_nodes;
  if (rollout_.launch_nodes.empty()) {
    for (const Node& node : nodes_) rollout_.launch_nodes.push_back(node.name);
  }
  std::string message =
      StrCat("node ", name, " joined the rollout as ", Name(candidate->state),
             ", verified healthy, its agent connected from ", candidate->link->Peer());
  if (!reason.empty()) StrAppend(&message, ": ", reason);
  Node joined = std::move(*candidate);
  candidates_.erase(name);
  joined.goal_start = joined.state;
  joined.last_result = StrCat("joined as ", Name(joined.state));
  nodes_.push_back(std::move(joined));
  if (absl::Status committed = Commit({Entry(actor, "node-added", name, message)});
      !committed.ok()) {
    // Not recorded: it is not a member.
    candidates_[name] = std::move(nodes_.back());
    nodes_.pop_back();
    rollout_.launch_nodes = launch_before;
    return committed;
  }
  return absl::OkStatus();
}

absl::StatusOr<pb::RolloutStatus> RolloutController::RemoveNode(const std::string& actor,
                                                                const std::string& name,
                                                                const std::string& reason) {
  std::lock_guard<std::mutex> lock(mu_);
  if (FindNode(name) == nullptr && FindCandidate(name) != nullptr) {
    return absl::FailedPreconditionError(
        StrCat("node ", name,
               " is not a member of the rollout (its agent is connected, and "
               "handoffctl nodes add would make it one)"));
  }
  // LeaveMember checks M3 (CheckLeave) before it changes anything.
  if (absl::Status left = LeaveMember(actor, name, reason); !left.ok()) return left;
  Advance();
  return BuildStatus(View());
}

absl::Status RolloutController::LeaveMember(const std::string& actor, const std::string& name,
                                            const std::string& reason) {
  if (absl::Status allowed = rollout::CheckLeave(EngineNodes(), name); !allowed.ok()) {
    return allowed;
  }
  const std::vector<std::string> launch_before = rollout_.launch_nodes;
  if (rollout_.launch_nodes.empty()) {
    for (const Node& node : nodes_) rollout_.launch_nodes.push_back(node.name);
  }
  auto it = std::find_if(nodes_.begin(), nodes_.end(),
                         [&](const Node& node) { return node.name == name; });
  const std::ptrdiff_t position = it - nodes_.begin();
  std::string message = StrCat("node ", name, " left the rollout (last reported ", Name(it->state),
                               "; its agent is gone)");
  if (!reason.empty()) StrAppend(&message, ": ", reason);
  Node left = std::move(*it);
  nodes_.erase(it);
  const std::string leaving_before = rollout_.replace_leaving;
  if (rollout_.replace_leaving == name) rollout_.replace_leaving.clear();
  if (absl::Status committed = Commit({Entry(actor, "node-removed", name, message)});
      !committed.ok()) {
    nodes_.insert(nodes_.begin() + position, std::move(left));
    rollout_.launch_nodes = launch_before;
    rollout_.replace_leaving = leaving_before;
    return committed;
  }
  return absl::OkStatus();
}

absl::StatusOr<pb::RolloutStatus> RolloutController::Resume(const std::string& actor) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!rollout_.goal) {
    return absl::FailedPreconditionError("no rollout has started: `handoffctl start` begins one");
  }
  bool failed_workers = false;
  for (const auto& [name, worker] : workers_) failed_workers |= !worker.failure.empty();
  if (rollout_.paused || rollout_.halted || long_gaps_acknowledged_ != long_gaps_ ||
      failed_workers) {
    std::string message = "resumed";
    ClearWorkerFailures(message);
    if (rollout_.halted) StrAppend(&message, " after the halt (", rollout_.halt_reason, ")");
    if (long_gaps_acknowledged_ != long_gaps_) {
      StrAppend(&message, "; goes on without a runner of ", StrJoin(KeysOf(long_gaps_), ", "),
                " (the long gap going on)");
      long_gaps_acknowledged_ = long_gaps_;
    }
    rollout_.paused = false;
    rollout_.halted = false;
    rollout_.halt_reason.clear();
    absl::Status committed = Commit({Entry(actor, "resume", "", message)});
    if (!committed.ok()) return committed;
  }
  Advance();
  return BuildStatus(View());
}

absl::StatusOr<pb::RolloutStatus> RolloutController::Abort(const std::string& actor,
                                                           const std::string& reason) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!rollout_.goal)
    return absl::FailedPreconditionError("no rollout has started: nothing to abort");
  rollout_.halted = true;
  rollout_.halt_reason = StrCat("aborted by ", actor);
  if (!reason.empty()) StrAppend(&rollout_.halt_reason, ": ", reason);
  std::string message = rollout_.halt_reason;
  if (rollout_.in_flight) {
    StrAppend(&message, " (move ", rollout_.in_flight->command_id, " to ", rollout_.in_flight->node,
              " finishes; the agent restores its node if it fails)");
  }
  absl::Status committed = Commit({Entry(actor, "abort", "", message)});
  if (!committed.ok()) return committed;
  Advance();
  return BuildStatus(View());
}

}  // namespace handoff::server
