// The workers as the controller knows them (AgentHello.role WORKER): known from their agent's
// first hello on and stored one row each, their state from their reports; one stream per agent
// process as for the control plane's; never members or candidates. The rollout moves them in
// batches (rollout/worker_rollout.h): each worker's move recorded in flight before it is sent,
// settled from its agent's answer or, after a restart, from its hello; a failed worker counts
// against the failure budget, which pauses the rollout once spent.
//
// Cost: a report that changes nothing is a map lookup. A decision reads every worker once
// (O(workers)); it is taken on the events that can change it (a result, a hello, a disconnect,
// a state change, an operator's call), never per report.
#include <algorithm>
#include <string_view>
#include <utility>

#include "common/base/strings.h"
#include "coordinator/kube/nodes.h"
#include "coordinator/server/bounded_text.h"
#include "coordinator/server/rollout_controller.h"
#include "coordinator/server/rollout_controller_internal.h"
#include "proto/vocabulary/outcome.h"
#include "spdlog/spdlog.h"

namespace handoff::server {
namespace {

using controller_internal::kStatusNames;
using controller_internal::Name;
using controller_internal::WrapCommand;

constexpr size_t kAgentVersionBytes = 128;
constexpr size_t kLineBytes = 1024;

std::string ZoneLabelOf(const kube::Json& node) {
  for (std::string_view key :
       {"topology.kubernetes.io/zone", "failure-domain.beta.kubernetes.io/zone"}) {
    std::string zone = kube::StringAt(node, {"metadata", "labels", key});
    if (!zone.empty()) return zone;
  }
  return "";
}

bool IsControlPlaneNode(const kube::Json& node) {
  const auto metadata = node.find("metadata");
  if (metadata == node.end() || !metadata->is_object()) return false;
  const auto labels = metadata->find("labels");
  if (labels == metadata->end() || !labels->is_object()) return false;
  return labels->contains(std::string(kube::kControlPlaneLabel)) ||
         labels->contains("node-role.kubernetes.io/master");
}

}  // namespace

store::StoredWorker RolloutController::StoredOf(const Worker& worker) {
  store::StoredWorker stored;
  static_cast<store::StoredNode&>(stored) = worker;
  stored.zone = worker.zone;
  stored.in_flight = worker.in_flight;
  stored.failure = worker.failure;
  stored.leaving = worker.leaving;
  return stored;
}

void RolloutController::RestoreWorkers(std::vector<store::StoredWorker> stored) {
  for (store::StoredWorker& row : stored) {
    if (FindNode(row.name) != nullptr) continue;
    Worker& worker = workers_[row.name];
    static_cast<store::StoredNode&>(worker) = row;
    worker.zone = std::move(row.zone);
    worker.in_flight = std::move(row.in_flight);
    worker.failure = std::move(row.failure);
    worker.leaving = row.leaving;
  }
}

absl::Status RolloutController::WorkerConnected(const std::string& name,
                                                const pb::AgentHello& hello,
                                                const std::shared_ptr<AgentLink>& link) {
  if (FindNode(name) != nullptr) {
    return absl::FailedPreconditionError(
        StrCat("node ", name, " is a control-plane member of the rollout, and its agent says it "
               "runs as a worker (role: worker in its settings); a worker's agent moves the "
               "kubelet alone, so it is refused for this node: set role: control-plane"));
  }
  candidates_.erase(name);
  const bool known = workers_.count(name) != 0;
  Worker& worker = workers_[name];
  worker.name = name;
  if (worker.link && worker.link != link) {
    if (hello.instance_id().empty() || hello.instance_id() != worker.instance_id) {
      return RefuseSecondAgent(worker, link->Peer());
    }
    worker.link->Close(absl::AbortedError(
        StrCat("replaced by a newer stream from the same agent of worker ", name, " (",
               link->Peer(), ")")));
  }
  const bool first = !worker.said_hello;
  const store::StoredWorker before = StoredOf(worker);
  worker.link = link;
  worker.instance_id = hello.instance_id();
  worker.said_hello = true;
  worker.verifies = hello.verifies();
  worker.agent_version = BoundedText(hello.agent_version(), kAgentVersionBytes);
  worker.last_seen_unix_ms = NowMs();
  ApplyReport(worker, hello.report());
  if (!worker.facts.availability_zone().empty()) worker.zone = worker.facts.availability_zone();
  if (!known && rollout_.goal) worker.goal_start = worker.state;
  agentless_.erase(name);

  pb::CoordinatorMessage welcome;
  welcome.mutable_welcome()->set_rollout_id(rollout_.rollout_id);
  welcome.mutable_welcome()->set_coordinator_version(HANDOFF_VERSION);
  link->Send(welcome);
  std::vector<store::HistoryEntry> history;
  if (first) {
    // Once per worker and coordinator process: a fleet's agents reconnect often.
    store::HistoryEntry entry =
        Entry(name, "worker-connect", name,
              StrCat("worker agent ", worker.agent_version, " connected from ", link->Peer(),
                     ": its kubelet is ", NodeStateName(worker.state)));
    if (AdmitAgentEntry(worker, entry)) history.push_back(std::move(entry));
  }
  SettleWorkerInFlight(worker, hello, history);
  const store::StoredWorker after = StoredOf(worker);
  if (!known || before.state != after.state || before.zone != after.zone ||
      before.in_flight.has_value() != after.in_flight.has_value()) {
    dirty_workers_.insert(name);
  }
  if (!history.empty() || !dirty_workers_.empty()) (void)Commit(std::move(history));
  Advance();
  return absl::OkStatus();
}

bool RolloutController::WorkerMessage(const std::string& name, const AgentLink* link,
                                      const pb::AgentMessage& message) {
  auto it = workers_.find(name);
  if (it == workers_.end()) return false;
  Worker& worker = it->second;
  if (worker.link.get() != link) return true;  // a replaced stream
  worker.last_seen_unix_ms = NowMs();
  std::vector<store::HistoryEntry> history;
  if (message.has_result()) {
    const pb::CommandResult& result = message.result();
    if (!worker.in_flight || worker.in_flight->command_id != result.command_id()) {
      spdlog::info("worker {}: result of command {} that is no longer awaited ({})", name,
                   result.command_id(), OutcomeName(result.outcome()));
      return true;
    }
    FinishWorkerMove(worker, result, history);
  } else if (message.has_report()) {
    const NodeState before = worker.state;
    const bool healthy_before = worker.healthy;
    ApplyReport(worker, message.report());
    if (before == worker.state && healthy_before == worker.healthy) return true;
    if (before != worker.state) dirty_workers_.insert(name);
  } else {
    return true;
  }
  (void)Commit(std::move(history));
  Advance();
  return true;
}

bool RolloutController::WorkerDisconnected(const std::string& name, const AgentLink* link) {
  auto it = workers_.find(name);
  if (it == workers_.end()) return false;
  Worker& worker = it->second;
  if (worker.link.get() != link) return true;
  worker.link.reset();
  worker.instance_id.clear();
  worker.second_agent.reset();
  if (worker.in_flight) {
    // Its move stays in flight (and in the batch's count) until the agent says what became of it.
    store::HistoryEntry entry =
        Entry(name, "disconnect", name,
              StrCat("worker agent disconnected with move ", worker.in_flight->command_id,
                     " under way: its outcome is asked for when the agent is back"));
    if (AdmitAgentEntry(worker, entry)) (void)Commit({std::move(entry)});
  }
  Advance();
  return true;
}

void RolloutController::SettleWorkerInFlight(Worker& worker, const pb::AgentHello& hello,
                                             std::vector<store::HistoryEntry>& history) {
  if (!worker.in_flight) return;
  const store::InFlight move = *worker.in_flight;
  for (const pb::CommandResult& result : hello.recent_results()) {
    if (result.command_id() == move.command_id) {
      FinishWorkerMove(worker, result, history);
      return;
    }
  }
  if (hello.running_command_id() == move.command_id) return;  // its result follows
  const std::string what = StrCat("move ", Name(move.from), " → ", Name(move.to));
  dirty_workers_.insert(worker.name);
  if (worker.state == move.from) {
    // Never received (the agent records a move before it starts it): judged as a move about to
    // be sent, which it is.
    std::vector<rollout::WorkerStatus> workers = WorkerStatuses();
    for (rollout::WorkerStatus& status : workers) {
      if (status.name == worker.name) status.in_transition = false;
    }
    const EngineView view = View();
    absl::Status allowed =
        rollout::CheckWorkerMove(view.nodes, workers, worker.name, move.to, view.control);
    if (allowed.ok()) {
      worker.link->Send(WrapCommand(MoveCommand(move)));
      history.push_back(MoveEntry("command", move,
                                  StrCat(what, " sent again: the agent had not received it")));
      return;
    }
    worker.in_flight.reset();
    history.push_back(MoveEntry(
        "result", move, StrCat(what, " never reached the agent; dropped: ", allowed.message())));
    return;
  }
  worker.in_flight.reset();
  if (worker.state == move.to) {
    worker.last_result =
        StrCat("reached ", Name(move.to), " (the agent's record of the move is gone)");
    history.push_back(MoveEntry("result", move,
                                StrCat(what, " took effect: the worker reports ", Name(move.to))));
    return;
  }
  FailWorker(worker,
             StrCat("after ", what, " the worker reports ", Name(worker.state),
                    ", neither: look at the node"),
             history);
}

void RolloutController::FinishWorkerMove(Worker& worker, const pb::CommandResult& result,
                                         std::vector<store::HistoryEntry>& history) {
  const store::InFlight move = *worker.in_flight;
  worker.in_flight.reset();
  dirty_workers_.insert(worker.name);
  if (result.has_report()) ApplyReport(worker, result.report());
  std::string line =
      StrCat(Name(move.from), " → ", Name(move.to), " ", OutcomeName(result.outcome()));
  if (!result.message().empty()) StrAppend(&line, ": ", result.message());
  line = BoundedText(line, kLineBytes);
  worker.last_result = line;
  store::HistoryEntry entry = Entry(worker.name, "result", worker.name, line);
  entry.command_id = move.command_id;
  history.push_back(std::move(entry));
  if (options_.events != nullptr) {
    options_.events->MoveFinished(worker.name, move.from, move.to, result,
                                  absl::Milliseconds(NowMs() - move.sent_unix_ms));
  }
  switch (result.outcome()) {
    case pb::CommandResult::SUCCEEDED:
      if (worker.state != move.to) {
        FailWorker(worker,
                   StrCat("the agent reported success but the worker is ", Name(worker.state)),
                   history);
      }
      return;
    case pb::CommandResult::INTERRUPTED:
      // The agent stopped mid-move and restored the node on restart: the batch may send it again.
      return;
    default:
      FailWorker(worker, line, history);
      return;
  }
}

void RolloutController::FailWorker(Worker& worker, const std::string& why,
                                   std::vector<store::HistoryEntry>& history) {
  worker.failure = BoundedText(why, kLineBytes);
  dirty_workers_.insert(worker.name);
  history.push_back(Entry("coordinator", "worker-failed", worker.name,
                          StrCat("worker ", worker.name, " failed: ", worker.failure)));
  // W5: once the budget is spent, no worker starts until the operator decides.
  std::vector<std::string> failed;
  for (const auto& [name, other] : workers_) {
    if (!other.failure.empty()) failed.push_back(name);
  }
  const rollout::WorkerPolicy policy = WorkerPolicyNow();
  if (rollout_.paused || static_cast<int64_t>(failed.size()) < policy.failure_budget) return;
  rollout_.paused = true;
  history.push_back(Entry(
      "coordinator", "pause", "",
      StrCat("paused: ", failed.size(), failed.size() == 1 ? " worker" : " workers",
             " failed, the failure budget is ", policy.failure_budget, " (",
             rollout::FewNames(failed),
             "; each rolled back by its agent, handoffctl nodes says why): handoffctl resume "
             "retries them, handoffctl rollback takes every node back")));
}

void RolloutController::ClearWorkerFailures(std::string& message) {
  std::vector<std::string> cleared;
  for (auto& [name, worker] : workers_) {
    if (worker.failure.empty()) continue;
    worker.failure.clear();
    dirty_workers_.insert(name);
    cleared.push_back(name);
  }
  if (cleared.empty()) return;
  StrAppend(&message, "; retries ", cleared.size(), cleared.size() == 1 ? " failed worker (" : " failed workers (",
            rollout::FewNames(cleared), ")");
}

std::vector<rollout::WorkerStatus> RolloutController::WorkerStatuses() const {
  // Only a replacement counts a worker as serving or not (GCC 12 warns of an optional enum here).
  const bool replacing = rollout_.goal && rollout_.strategy == Strategy::kReplace;
  const NodeState target =
      replacing ? rollout::WorkerTarget(*rollout_.goal) : NodeState::kInconsistent;
  std::vector<rollout::WorkerStatus> statuses;
  statuses.reserve(workers_.size() + agentless_.size());
  for (const auto& [name, worker] : workers_) {
    rollout::WorkerStatus& status = statuses.emplace_back();
    status.name = name;
    status.zone = worker.zone;
    status.state = worker.state;
    status.has_agent = true;
    status.connected = worker.link != nullptr;
    status.in_transition = worker.in_flight.has_value();
    status.failure = worker.failure;
    status.leaving = worker.leaving;
    if (replacing && worker.state == target) status.unverified = UnverifiedReason(worker, target);
  }
  for (const auto& [name, zone] : agentless_) {
    rollout::WorkerStatus& status = statuses.emplace_back();
    status.name = name;
    status.zone = zone;
  }
  return statuses;
}

rollout::WorkerPolicy RolloutController::WorkerPolicyNow() const {
  rollout::WorkerPolicy policy;
  // The store holds what Start parsed; a value this build cannot read keeps one at a time.
  if (absl::StatusOr<rollout::MaxUnavailable> parsed =
          rollout::ParseMaxUnavailable(rollout_.worker_max_unavailable);
      parsed.ok()) {
    policy.max_unavailable = *parsed;
  }
  policy.failure_budget = static_cast<int>(std::max<int64_t>(1, rollout_.worker_failure_budget));
  return policy;
}

size_t RolloutController::ExternalWorkerCount() const {
  size_t count = 0;
  for (const auto& [name, worker] : workers_) {
    if (worker.state == NodeState::kExternal || worker.in_flight) ++count;
  }
  return count;
}

size_t RolloutController::WorkersInFlight() const {
  size_t count = 0;
  for (const auto& [name, worker] : workers_) count += worker.in_flight ? 1 : 0;
  return count;
}

bool RolloutController::SendWorkerMoves(const rollout::WorkerDecision& decision,
                                        const EngineView& view) {
  std::vector<rollout::WorkerStatus> statuses = WorkerStatuses();
  std::vector<store::HistoryEntry> history;
  std::vector<Worker*> sent;
  for (const std::string& name : decision.nodes) {
    auto it = workers_.find(name);
    absl::Status allowed =
        it == workers_.end()
            ? absl::NotFoundError(StrCat("no agent of worker ", name))
            : rollout::CheckWorkerMove(view.nodes, statuses, name, decision.to, view.control);
    if (!allowed.ok() || !it->second.link) {
      // NextWorkers never proposes what CheckWorkerMove refuses; if it ever did, leaving the
      // worker out is the safe side.
      spdlog::error("refused the batch's move of worker {} to {}: {}", name, Name(decision.to),
                    std::string(allowed.message()));
      continue;
    }
    Worker& worker = it->second;
    store::InFlight move;
    move.command_id = NewCommandId();
    move.node = name;
    move.from = worker.state;
    move.to = decision.to;
    move.sent_unix_ms = NowMs();
    worker.in_flight = move;
    dirty_workers_.insert(name);
    for (rollout::WorkerStatus& status : statuses) {
      if (status.name == name) status.in_transition = true;
    }
    history.push_back(
        MoveEntry("command", move, StrCat("move ", Name(move.from), " → ", Name(move.to))));
    sent.push_back(&worker);
  }
  if (sent.empty()) return false;
  // Recorded before they are sent: a coordinator that dies in between asks each agent about it.
  if (!Commit(std::move(history)).ok()) {
    for (Worker* worker : sent) worker->in_flight.reset();
    return false;
  }
  for (Worker* worker : sent) worker->link->Send(WrapCommand(MoveCommand(*worker->in_flight)));
  return true;
}

void RolloutController::TakeClusterView() {
  const preflight::ClusterView* view = facts_.cluster_view.get();
  if (view == view_taken_) return;
  view_taken_ = view;
  if (view == nullptr || !view->nodes) return;
  std::set<std::string>& listed = listed_nodes_;
  listed.clear();
  nodes_listed_ = true;
  agentless_.clear();
  for (const kube::Json& node : *view->nodes) {
    const std::string name = kube::ObjectName(node);
    listed.insert(name);
    if (IsControlPlaneNode(node) || FindNode(name) != nullptr || FindCandidate(name) != nullptr ||
        workers_.count(name) != 0) {
      continue;
    }
    agentless_[name] = ZoneLabelOf(node);
  }
  node_problems_.clear();
  node_problems_by_name_.clear();
  for (const kube::NodeCheck& check : kube::CheckNodes(*view->nodes)) {
    for (const std::string& problem : check.problems) {
      node_problems_.push_back(StrCat("Node ", check.name, ": ", problem));
    }
    if (!check.problems.empty()) node_problems_by_name_[check.name] = check.problems;
  }
  std::vector<store::HistoryEntry> history;
  for (auto it = workers_.begin(); it != workers_.end();) {
    const Worker& worker = it->second;
    if (listed.count(it->first) != 0 || worker.link || worker.in_flight) {
      ++it;
      continue;
    }
    // A replaced or deleted worker: it would hold the rollout short of done for good.
    history.push_back(Entry("coordinator", "worker-forgotten", it->first,
                            StrCat("worker ", it->first,
                                   ": the API server lists no Node of that name and its agent "
                                   "is away: forgotten (its last state was ",
                                   Name(worker.state), ")")));
    forgotten_workers_.insert(it->first);
    dirty_workers_.erase(it->first);
    it = workers_.erase(it);
  }
  if (!history.empty()) (void)Commit(std::move(history));
}

pb::WorkerSummary RolloutController::WorkerSummary() const {
  pb::WorkerSummary summary;
  for (const auto& [name, worker] : workers_) {
    summary.set_known(summary.known() + 1);
    if (worker.link) summary.set_connected(summary.connected() + 1);
    if (worker.link && worker.state == NodeState::kInTree) {
      summary.set_in_tree(summary.in_tree() + 1);
    } else if (worker.link && worker.state == NodeState::kExternal) {
      summary.set_external(summary.external() + 1);
    } else {
      summary.set_inconsistent(summary.inconsistent() + 1);
    }
    if (worker.in_flight) {
      summary.set_in_flight(summary.in_flight() + 1);
      if (summary.batch_size() < kStatusNames) summary.add_batch(name);
    }
    if (!worker.failure.empty()) {
      summary.set_failed(summary.failed() + 1);
      if (summary.failures_size() < kStatusNames) {
        summary.add_failures(StrCat(name, ": ", worker.failure));
      }
    }
  }
  summary.set_without_agent(static_cast<int32_t>(agentless_.size()));
  for (const auto& [name, zone] : agentless_) {
    if (summary.without_agent_names_size() == kStatusNames) break;
    summary.add_without_agent_names(name);
  }
  const rollout::WorkerPolicy policy = WorkerPolicyNow();
  summary.set_max_unavailable(rollout::FormatMaxUnavailable(policy.max_unavailable));
  summary.set_failure_budget(policy.failure_budget);
  if (rollout_.goal) summary.set_target(ToProto(rollout::WorkerTarget(*rollout_.goal)));
  if (worker_replacement_) *summary.mutable_replacement() = WorkerReplacementStatus();
  return summary;
}

pb::UpgradeGate RolloutController::UpgradeGateNow(const EngineView& view) const {
  const rollout::UpgradeGate gate =
      rollout::CheckUpgradeGate(view.nodes, WorkerStatuses(), node_problems_);
  pb::UpgradeGate out;
  out.set_open(gate.open);
  for (const std::string& reason : gate.reasons) out.add_reasons(reason);
  return out;
}

}  // namespace handoff::server
