#include "proto/vocabulary/node_state.h"

#include <array>

#include "common/base/strings.h"
#include "proto/vocabulary/word_table.h"

namespace handoff {
namespace {

using vocabulary_internal::FindWord;
using vocabulary_internal::OptionalColumnOf;

// Every state, once: its name, its wire value, and how many steps from in-tree it lies along its
// path (-1: on none).
struct NodeStateWord {
  NodeState state;
  v1::NodeState wire;
  std::string_view name;
  int steps;
};
constexpr std::array<NodeStateWord, 7> kNodeStateWords = {{
    {NodeState::kInTree, v1::NODE_STATE_IN_TREE, "in-tree", 0},
    {NodeState::kPrepared, v1::NODE_STATE_PREPARED, "prepared", 1},
    {NodeState::kMigrated, v1::NODE_STATE_MIGRATED, "migrated", 2},
    {NodeState::kFinalized, v1::NODE_STATE_FINALIZED, "finalized", 3},
    {NodeState::kInconsistent, v1::NODE_STATE_INCONSISTENT, "inconsistent", -1},
    {NodeState::kStopped, v1::NODE_STATE_STOPPED, "stopped", 1},
    {NodeState::kExternal, v1::NODE_STATE_EXTERNAL, "external", 2},
}};
constexpr size_t kInconsistentWord = 4;
static_assert(kNodeStateWords[kInconsistentWord].state == NodeState::kInconsistent);

const NodeStateWord& WordOf(NodeState state) {
  const NodeStateWord* word = FindWord(kNodeStateWords, &NodeStateWord::state, state);
  return word != nullptr ? *word : kNodeStateWords[kInconsistentWord];  // a value outside the enum
}

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

int StepsFromInTree(NodeState state) { return WordOf(state).steps; }

std::string_view NodeStateName(NodeState state) { return WordOf(state).name; }

v1::NodeState ToProto(NodeState state) { return WordOf(state).wire; }

std::optional<NodeState> FromProto(v1::NodeState state) {
  return OptionalColumnOf(kNodeStateWords, &NodeStateWord::wire, state, &NodeStateWord::state);
}

std::string_view WireStateName(v1::NodeState state, std::string_view otherwise) {
  std::optional<NodeState> known = FromProto(state);
  return known ? NodeStateName(*known) : otherwise;
}

std::optional<NodeState> NodeStateNamed(std::string_view name) {
  return OptionalColumnOf(kNodeStateWords, &NodeStateWord::name, name, &NodeStateWord::state);
}

absl::StatusOr<NodeState> ParseTargetState(std::string_view name) {
  for (const NodeStateWord& word : kNodeStateWords) {
    if (word.state != NodeState::kInconsistent && name == word.name) return word.state;
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
