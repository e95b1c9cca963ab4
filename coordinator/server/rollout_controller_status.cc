// The rollout controller's status feed (rollout_controller.h): the status, the nodes and the
// history as operators read them, and the watchers told of each change. The rollout's phase,
// next step and each node's steps are derived in rollout/rollout_progress.h; this maps them onto
// the wire.
#include <map>
#include <optional>
#include <utility>

#include "coordinator/rollout/rollout_progress.h"
#include "coordinator/server/rollout_controller.h"
#include "proto/vocabulary/phase.h"
#include "proto/vocabulary/strategy.h"

namespace handoff::server {

pb::RolloutStatus RolloutController::Status() {
  std::lock_guard<std::mutex> lock(mu_);
  return BuildStatus(View());
}

absl::StatusOr<pb::HistoryResponse> RolloutController::History(int64_t after_sequence, int limit) {
  if (limit < 0) return absl::InvalidArgumentError("limit must not be negative");
  if (limit == 0) limit = 1000;
  std::lock_guard<std::mutex> lock(mu_);
  absl::StatusOr<std::vector<store::HistoryEntry>> entries = store_.History(after_sequence, limit);
  if (!entries.ok()) return entries.status();
  pb::HistoryResponse response;
  // A page stays well under the 4 MiB a gRPC message may have, whatever the entries hold.
  constexpr size_t kPageBytes = 2 * 1024 * 1024;
  size_t page_bytes = 0;
  for (const store::HistoryEntry& entry : *entries) {
    const size_t entry_bytes = entry.actor.size() + entry.kind.size() + entry.node.size() +
                               entry.command_id.size() + entry.message.size() +
                               entry.detail_json.size() + 64;
    if (response.entries_size() > 0 && page_bytes + entry_bytes > kPageBytes) {
      response.set_more(true);
      break;
    }
    page_bytes += entry_bytes;
    pb::HistoryEntry* out = response.add_entries();
    out->set_sequence(entry.sequence);
    out->set_unix_ms(entry.unix_ms);
    out->set_actor(entry.actor);
    out->set_kind(entry.kind);
    out->set_node(entry.node);
    out->set_command_id(entry.command_id);
    out->set_message(entry.message);
    out->set_detail_json(entry.detail_json);
  }
  return response;
}

pb::NodeState RolloutController::ShownState(const Node& node) {
  // "Inconsistent" tells the operator handoff will not touch the node until it is repaired: only
  // its connected agent can say so. A node whose agent is away shows its last known state, or
  // unknown.
  const bool known = node.link != nullptr || node.state != NodeState::kInconsistent;
  return known ? ToProto(node.state) : pb::NODE_STATE_UNSPECIFIED;
}

void RolloutController::FillNodeInfo(const Node& node, pb::NodeRole role,
                                     pb::NodeInfo& info) const {
  info.set_name(node.name);
  info.set_state(ShownState(node));
  for (const std::string& reason : node.reasons) info.add_reasons(reason);
  info.set_connected(node.link != nullptr);
  info.set_healthy(node.healthy);
  info.set_health_detail(node.health_detail);
  info.set_agent_version(node.agent_version);
  info.set_verifies(node.verifies);
  if (node.link) info.set_peer(node.link->Peer());
  info.set_last_seen_unix_ms(node.last_seen_unix_ms);
  info.set_last_result(node.last_result);
  info.set_second_agent(SecondAgentText(node));
  *info.mutable_facts() = node.facts;
  info.set_role(role);
}

pb::NodesResponse RolloutController::Nodes(int limit, const std::string& after) {
  std::lock_guard<std::mutex> lock(mu_);
  pb::NodesResponse response;
  // One list by name: the members, candidates, workers, and the Nodes without an agent.
  struct Entry {
    const Node* node = nullptr;  // null: a Node without an agent
    pb::NodeRole role = pb::NODE_ROLE_CONTROL_PLANE;
    bool candidate = false;
  };
  std::map<std::string, Entry> all;
  for (const Node& node : nodes_) all[node.name] = Entry{&node, pb::NODE_ROLE_CONTROL_PLANE};
  for (const auto& [name, candidate] : candidates_) {
    all[name] = Entry{&candidate, pb::NODE_ROLE_CONTROL_PLANE, true};
  }
  for (const auto& [name, worker] : workers_) all[name] = Entry{&worker, pb::NODE_ROLE_WORKER};
  for (const auto& [name, zone] : agentless_) {
    all.emplace(name, Entry{nullptr, pb::NODE_ROLE_WORKER});
  }
  response.set_total(static_cast<int32_t>(all.size()));
  *response.mutable_upgrade_gate() = UpgradeGateNow(View());
  for (auto it = after.empty() ? all.begin() : all.upper_bound(after); it != all.end(); ++it) {
    if (limit > 0 && response.nodes_size() == limit) {
      response.set_next_after(response.nodes(response.nodes_size() - 1).name());
      break;
    }
    pb::NodeInfo* info = response.add_nodes();
    const Entry& entry = it->second;
    if (entry.node == nullptr) {
      info->set_name(it->first);
      info->set_role(pb::NODE_ROLE_WORKER);
      info->set_without_agent(true);
      info->add_reasons("no agent has said hello for this Node: its kubelet cannot be moved");
      info->mutable_facts()->set_availability_zone(agentless_.at(it->first));
      continue;
    }
    FillNodeInfo(*entry.node, entry.role, *info);
    info->set_candidate(entry.candidate);
    if (entry.role == pb::NODE_ROLE_WORKER) {
      const Worker& worker = workers_.at(it->first);
      if (worker.in_flight) info->set_in_flight_command_id(worker.in_flight->command_id);
      info->set_failure(worker.failure);
      info->set_leaving(worker.leaving);
      if (info->facts().availability_zone().empty()) {
        info->mutable_facts()->set_availability_zone(worker.zone);
      }
    }
  }
  return response;
}

pb::RolloutStatus RolloutController::BuildStatus(const EngineView& view) const {
  pb::RolloutStatus status;
  status.set_rollout_id(rollout_.rollout_id);
  status.set_revision(rollout_.revision);
  if (rollout_.goal) status.set_goal(ToProto(*rollout_.goal));
  status.set_paused(rollout_.paused);
  status.set_halted(rollout_.halted);
  status.set_halt_reason(rollout_.halt_reason);
  status.set_updated_unix_ms(NowMs());

  std::optional<NodeState> moving_to;
  std::optional<NodeState> moving_from;
  if (rollout_.in_flight) {
    moving_to = rollout_.in_flight->to;
    moving_from = rollout_.in_flight->from;
  }
  const pb::WorkerSummary workers = WorkerSummary();
  status.set_phase(ToProto(rollout::PhaseOf(rollout_.goal, EngineControl(), moving_to, next_,
                                            moving_from, workers.in_flight() > 0)));
  if (rollout_.goal) status.set_strategy(ToProto(rollout_.strategy));
  if (replacement_) *status.mutable_replacement() = *replacement_;
  if (std::optional<pb::Downtime> downtime = MeasuredDowntime()) {
    *status.mutable_downtime() = *downtime;
  }
  status.set_next(rollout::DescribeNext(next_, rollout_.goal));
  status.set_next_since_unix_ms(why_since_ms_);

  for (const Node& node : nodes_) {
    pb::NodeProgress* progress = status.add_nodes();
    progress->set_name(node.name);
    progress->set_state(ShownState(node));
    progress->set_connected(node.link != nullptr);
    progress->set_healthy(node.healthy);
    if (rollout_.in_flight && rollout_.in_flight->node == node.name) {
      progress->set_moving_to(ToProto(rollout_.in_flight->to));
    }
    if (rollout_.goal) {
      if (std::optional<rollout::Steps> steps =
              rollout::StepsOf(node.goal_start, node.state, *rollout_.goal)) {
        progress->set_steps_total(steps->total);
        progress->set_steps_done(steps->done);
      }
    }
    progress->set_last_result(node.last_result);
    progress->set_second_agent(SecondAgentText(node));
  }
  *status.mutable_workers() = workers;
  *status.mutable_upgrade_gate() = UpgradeGateNow(view);
  for (const auto& [name, candidate] : candidates_) {
    pb::NodeProgress* progress = status.add_candidates();
    progress->set_name(name);
    progress->set_state(ShownState(candidate));
    progress->set_connected(candidate.link != nullptr);
    progress->set_healthy(candidate.healthy);
    progress->set_second_agent(SecondAgentText(candidate));
  }

  pb::ClusterFacts* facts = status.mutable_facts();
  facts->set_rbac_ready(view.facts.rbac_ready);
  facts->set_lease_held_by_healthy_manager(view.facts.lease_held_by_healthy_manager);
  facts->set_source(facts_.source);
  facts->set_detail(facts_.detail);
  facts->set_checked_unix_ms(facts_checked_ms_);

  if (rollout_.in_flight) {
    pb::InFlightMove* in_flight = status.mutable_in_flight();
    in_flight->set_command_id(rollout_.in_flight->command_id);
    in_flight->set_node(rollout_.in_flight->node);
    in_flight->set_from(ToProto(rollout_.in_flight->from));
    in_flight->set_to(ToProto(rollout_.in_flight->to));
    in_flight->set_sent_unix_ms(rollout_.in_flight->sent_unix_ms);
  }
  return status;
}

void RolloutController::Notify(const EngineView& view) {
  pb::RolloutStatus status = BuildStatus(view);
  // A change is a change of content; the clock alone is not one.
  pb::RolloutStatus comparable = status;
  comparable.clear_revision();
  comparable.clear_updated_unix_ms();
  comparable.mutable_facts()->clear_checked_unix_ms();
  std::string serialized;
  comparable.SerializeToString(&serialized);
  const bool changed = serialized != last_notified_;
  if (changed) {
    last_notified_ = std::move(serialized);
    ++rollout_.revision;
  }
  status.set_revision(rollout_.revision);
  std::lock_guard<std::mutex> lock(status_mu_);
  latest_ = status;
  if (!changed) return;
  for (auto& [token, watcher] : watchers_) watcher(status);
}

pb::RolloutStatus RolloutController::LatestStatus() const {
  std::lock_guard<std::mutex> lock(status_mu_);
  return latest_;
}

int RolloutController::Watch(std::function<void(const pb::RolloutStatus&)> watcher) {
  std::lock_guard<std::mutex> lock(status_mu_);
  int token = next_watch_token_++;
  watcher(latest_);
  watchers_[token] = std::move(watcher);
  return token;
}

void RolloutController::Unwatch(int token) {
  std::lock_guard<std::mutex> lock(status_mu_);
  watchers_.erase(token);
}

}  // namespace handoff::server
