// Test helper for the workers' tests (worker_rollout.h, worker_replacement.h): a worker as its
// agent reports it, connected, and a policy.
#ifndef HANDOFF_TESTS_COORDINATOR_ROLLOUT_WORKER_FLEET_H_
#define HANDOFF_TESTS_COORDINATOR_ROLLOUT_WORKER_FLEET_H_

#include <string>
#include <utility>

#include "coordinator/rollout/worker_rollout.h"

namespace handoff::rollout::testing {

// A worker in `zone`, in `state`, its agent connected.
inline WorkerStatus Worker(std::string name, std::string zone,
                           NodeState state = NodeState::kInTree) {
  WorkerStatus worker;
  worker.name = std::move(name);
  worker.zone = std::move(zone);
  worker.state = state;
  worker.has_agent = true;
  worker.connected = true;
  return worker;
}

// --max-unavailable (a number, or a percentage) and --failure-budget.
inline WorkerPolicy Policy(int max_unavailable, int failure_budget = 1, bool percent = false) {
  WorkerPolicy policy;
  policy.max_unavailable = MaxUnavailable{max_unavailable, percent};
  policy.failure_budget = failure_budget;
  return policy;
}

}  // namespace handoff::rollout::testing

#endif  // HANDOFF_TESTS_COORDINATOR_ROLLOUT_WORKER_FLEET_H_
