// The rollout controller's plan fan-out (rollout_controller.h, PlanRollout): the moves a goal
// would take (rollout/plan_simulation.h), and each moving node's agent asked for its diffs along
// its chain; the answer goes out once every agent answered, failed or timed out.
#include <optional>
#include <utility>

#include "common/base/strings.h"
#include "coordinator/server/rollout_controller.h"
#include "coordinator/server/rollout_controller_internal.h"

namespace handoff::server {

using controller_internal::Deferred;
using controller_internal::RunDeferred;
using controller_internal::WrapCommand;

bool RolloutController::TakePlanResult(const pb::CommandResult& result, Deferred& deferred) {
  for (auto& [id, plan] : plans_) {
    auto waiting = plan->outstanding.find(result.command_id());
    if (waiting == plan->outstanding.end()) continue;
    pb::NodePlan& node_plan = *plan->response.mutable_nodes(static_cast<int>(waiting->second));
    if (result.outcome() == pb::CommandResult::SUCCEEDED) {
      *node_plan.mutable_transitions() = result.plan().transitions();
    } else {
      node_plan.set_error(StrCat(OutcomeName(result.outcome()), ": ", result.message()));
    }
    plan->outstanding.erase(waiting);
    FinishPlanIfComplete(id, deferred);
    return true;
  }
  return false;
}

void RolloutController::ExpirePlans(Deferred& deferred) {
  const absl::Time now = clock_.Now();
  std::vector<int64_t> expired;
  for (auto& [id, plan] : plans_) {
    if (now < plan->deadline) continue;
    for (const auto& [command, index] : plan->outstanding) {
      plan->response.mutable_nodes(static_cast<int>(index))
          ->set_error("the agent did not answer in time");
    }
    plan->outstanding.clear();
    expired.push_back(id);
  }
  for (int64_t id : expired) FinishPlanIfComplete(id, deferred);
}

void RolloutController::FinishPlanIfComplete(int64_t plan_id, Deferred& deferred) {
  auto found = plans_.find(plan_id);
  if (found == plans_.end() || !found->second->outstanding.empty()) return;
  std::shared_ptr<PendingPlan> plan(std::move(found->second));
  plans_.erase(found);
  deferred.push_back([plan] { plan->done(plan->response); });
}

void RolloutController::FailPlansOf(const std::string& node, const std::string& error,
                                    Deferred& deferred) {
  std::vector<int64_t> touched;
  for (auto& [id, plan] : plans_) {
    for (auto it = plan->outstanding.begin(); it != plan->outstanding.end();) {
      pb::NodePlan& node_plan = *plan->response.mutable_nodes(static_cast<int>(it->second));
      if (node_plan.node() == node) {
        node_plan.set_error(error);
        it = plan->outstanding.erase(it);
        touched.push_back(id);
      } else {
        ++it;
      }
    }
  }
  for (int64_t id : touched) FinishPlanIfComplete(id, deferred);
}

void RolloutController::AskForDiffs(PendingPlan& plan,
                                    const rollout::SimulatedRollout& simulated) {
  for (const Node& node : nodes_) {
    pb::NodePlan* node_plan = plan.response.add_nodes();
    node_plan->set_node(node.name);
    node_plan->set_state(ToProto(node.state));
    const std::vector<NodeState> chain = simulated.ChainOf(node.name);
    if (chain.empty()) continue;
    if (!node.link) {
      node_plan->set_error("the agent is not connected");
      continue;
    }
    pb::Command command;
    command.set_id(StrCat("plan-", instance_id_, "-", plan.id, "-", node.name));
    for (NodeState target : chain) command.mutable_plan()->add_chain(ToProto(target));
    command.mutable_plan()->set_settings_yaml(rollout_.settings_yaml);
    plan.outstanding[command.id()] = static_cast<size_t>(plan.response.nodes_size() - 1);
    node.link->Send(WrapCommand(command));
  }
}

void RolloutController::PlanRollout(NodeState goal, PlanCallback done,
                                    std::optional<Strategy> strategy) {
  Deferred deferred;
  {
    std::lock_guard<std::mutex> lock(mu_);
    const Strategy chosen = strategy.value_or(PathOf(rollout_.strategy));
    if (goal == NodeState::kInconsistent) {
      goal = rollout_.goal.value_or(chosen == Strategy::kDowntime ? NodeState::kFinalized
                                                                  : NodeState::kMigrated);
    }
    auto plan = std::make_unique<PendingPlan>();
    plan->id = next_plan_id_++;
    plan->done = std::move(done);
    plan->deadline = clock_.Now() + options_.plan_timeout;
    plan->response.set_goal(ToProto(goal));

    std::optional<rollout::Move> in_flight;
    if (rollout_.in_flight) {
      in_flight = rollout::Move{rollout_.in_flight->node, rollout_.in_flight->from,
                                rollout_.in_flight->to};
    }
    const std::vector<rollout::NodeStatus> nodes = EngineNodes();
    const rollout::SimulatedRollout simulated =
        rollout::SimulateRollout(nodes, goal, EngineFacts(nodes).holders, in_flight, chosen);
    plan->response.set_blocked_reason(simulated.blocked_reason);
    if (!strategy && rollout_.strategy == Strategy::kReplace) {
      plan->response.set_note(
          "the rollout replaces nodes (start/rollback --strategy replace): its joins and "
          "removals are the operator's, and `status` shows each when it is due; the steps below "
          "are those of an in-place rollout to the same goal, of which it makes only the moves "
          "of nodes that stay");
    }
    for (size_t i = 0; i < simulated.moves.size(); ++i) {
      pb::PlannedStep* planned = plan->response.add_steps();
      planned->set_index(static_cast<int>(i) + 1);
      planned->set_node(simulated.moves[i].node);
      planned->set_from(ToProto(simulated.moves[i].from));
      planned->set_to(ToProto(simulated.moves[i].to));
    }
    AskForDiffs(*plan, simulated);
    int64_t id = plan->id;
    plans_[id] = std::move(plan);
    FinishPlanIfComplete(id, deferred);
  }
  RunDeferred(deferred);
}

}  // namespace handoff::server
