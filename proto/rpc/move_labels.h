// How a move's result reads in the metrics of both daemons: one table, so the agent's and the
// coordinator's series for the same move carry the same label values.
#ifndef HANDOFF_PROTO_RPC_MOVE_LABELS_H_
#define HANDOFF_PROTO_RPC_MOVE_LABELS_H_

#include <string>

#include "handoff/v1/handoff.pb.h"

namespace handoff {

// The `outcome` label: "succeeded", "refused", "rolled_back", "needs_attention", "interrupted",
// or "unknown".
inline std::string MoveOutcomeLabel(v1::CommandResult::Outcome outcome) {
  switch (outcome) {
    case v1::CommandResult::SUCCEEDED:
      return "succeeded";
    case v1::CommandResult::REFUSED:
      return "refused";
    case v1::CommandResult::ROLLED_BACK:
      return "rolled_back";
    case v1::CommandResult::NEEDS_ATTENTION:
      return "needs_attention";
    case v1::CommandResult::INTERRUPTED:
      return "interrupted";
    default:
      return "unknown";
  }
}

// A move whose files were written and whose verification then failed: undone (ROLLED_BACK), or
// its undo failed too (NEEDS_ATTENTION with a rollback failure). A NEEDS_ATTENTION without one
// failed while writing, before anything was verified.
inline bool FailedVerification(const v1::CommandResult& result) {
  return result.outcome() == v1::CommandResult::ROLLED_BACK ||
         (result.outcome() == v1::CommandResult::NEEDS_ATTENTION &&
          !result.move().rollback_failure().empty());
}

// A move its agent undid (the node is back where it was).
inline bool UndoneByAgent(const v1::CommandResult& result) {
  return result.outcome() == v1::CommandResult::ROLLED_BACK;
}

}  // namespace handoff

#endif  // HANDOFF_PROTO_RPC_MOVE_LABELS_H_
