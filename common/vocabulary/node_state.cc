#include "common/vocabulary/node_state.h"

#include "common/base/strings.h"

namespace handoff {
namespace {

// Whether the state may lie on the Leader Migration path (in-tree and finalized lie on both).
bool OnLeaderMigrationPath(NodeState state) {
  return state != NodeState::kInconsistent && !IsDowntimeState(state);
}

bool OnDowntimePath(NodeState state) {
  return state == NodeState::kInTree || state == NodeState::kFinalized || IsDowntimeState(state);
}

// One step along the Leader Migration path or the downtime path.
bool AlongOnePath(NodeState from, NodeState to) {
  if (from == NodeState::kInconsistent || to == NodeState::kInconsistent) return false;
  const int from_steps = StepsFromInTree(from);
  const int to_steps = StepsFromInTree(to);
  if (from_steps - to_steps != 1 && to_steps - from_steps != 1) return false;
  return (OnLeaderMigrationPath(from) && OnLeaderMigrationPath(to)) ||
         (OnDowntimePath(from) && OnDowntimePath(to));
}

}  // namespace

int StepsFromInTree(NodeState state) {
  switch (state) {
    case NodeState::kInTree:
      return 0;
    case NodeState::kPrepared:
    case NodeState::kStopped:
      return 1;
    case NodeState::kMigrated:
    case NodeState::kExternal:
      return 2;
    case NodeState::kFinalized:
      return 3;
    case NodeState::kInconsistent:
      return -1;
  }
  return -1;
}

std::string_view NodeStateName(NodeState state) {
  switch (state) {
    case NodeState::kInTree:
      return "in-tree";
    case NodeState::kPrepared:
      return "prepared";
    case NodeState::kMigrated:
      return "migrated";
    case NodeState::kFinalized:
      return "finalized";
    case NodeState::kInconsistent:
      return "inconsistent";
    case NodeState::kStopped:
      return "stopped";
    case NodeState::kExternal:
      return "external";
  }
  return "inconsistent";
}

absl::StatusOr<NodeState> ParseTargetState(std::string_view name) {
  for (NodeState state : {NodeState::kInTree, NodeState::kPrepared, NodeState::kMigrated,
                          NodeState::kFinalized, NodeState::kStopped, NodeState::kExternal}) {
    if (name == NodeStateName(state)) return state;
  }
  return absl::InvalidArgumentError(
      StrCat("'", name,
             "' is not a node state; use one of in-tree, prepared, migrated, finalized (Leader "
             "Migration) or stopped, external (the downtime path)"));
}

bool AreAdjacent(NodeState from, NodeState to) {
  return AlongOnePath(from, to) || (from == NodeState::kExternal && to == NodeState::kMigrated) ||
         (from == NodeState::kMigrated && to == NodeState::kExternal);
}

bool IsForward(NodeState from, NodeState to) {
  if (from == NodeState::kExternal && to == NodeState::kMigrated) return true;
  return StepsFromInTree(to) > StepsFromInTree(from);
}

bool IsDowntimeState(NodeState state) {
  return state == NodeState::kStopped || state == NodeState::kExternal;
}

bool RunsCloudControllerManager(NodeState state) {
  return state == NodeState::kMigrated || state == NodeState::kFinalized;
}

}  // namespace handoff
