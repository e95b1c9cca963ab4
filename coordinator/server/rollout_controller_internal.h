// What the parts of the rollout controller share (rollout_controller.cc: events and moves;
// rollout_controller_plans.cc: plan fan-out; rollout_controller_status.cc: the status feed;
// rollout_controller_workers.cc and rollout_controller_worker_replacement.cc: the workers).
// Internal: include it from those files only.
#ifndef HANDOFF_COORDINATOR_SERVER_ROLLOUT_CONTROLLER_INTERNAL_H_
#define HANDOFF_COORDINATOR_SERVER_ROLLOUT_CONTROLLER_INTERNAL_H_

#include <functional>
#include <string>
#include <vector>

#include "handoff/v1/handoff.pb.h"
#include "proto/vocabulary/node_state.h"
#include "proto/vocabulary/outcome.h"

namespace handoff::server::controller_internal {

namespace pb = ::handoff::v1;

// Callbacks gathered under the controller's mutex, run after it is released (a plan's `done`
// may call back into the controller).
using Deferred = std::vector<std::function<void()>>;

inline void RunDeferred(Deferred& deferred) {
  for (std::function<void()>& call : deferred) call();
}

// What the status names of each list of workers (the counts say the rest; `handoffctl nodes`
// lists all).
constexpr int kStatusNames = 20;

inline std::string Name(NodeState state) { return std::string(NodeStateName(state)); }

inline pb::CoordinatorMessage WrapCommand(const pb::Command& command) {
  pb::CoordinatorMessage message;
  *message.mutable_command() = command;
  return message;
}

}  // namespace handoff::server::controller_internal

#endif  // HANDOFF_COORDINATOR_SERVER_ROLLOUT_CONTROLLER_INTERNAL_H_
