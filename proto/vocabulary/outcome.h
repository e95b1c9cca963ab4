// How a move ended (handoff.v1.CommandResult.Outcome): one table in outcome.cc gives each outcome
// its name in the coordinator's log and history, and its label in both daemons' metrics, so the
// agent's and the coordinator's series for the same move carry the same label values.
#ifndef HANDOFF_PROTO_VOCABULARY_OUTCOME_H_
#define HANDOFF_PROTO_VOCABULARY_OUTCOME_H_

#include <string_view>

#include "handoff/v1/handoff.pb.h"

namespace handoff {

// "succeeded", "refused", "rolled back", "needs attention", "interrupted"; "unknown outcome"
// otherwise.
std::string_view OutcomeName(v1::CommandResult::Outcome outcome);
// The `outcome` label: "succeeded", "refused", "rolled_back", "needs_attention", "interrupted",
// or "unknown".
std::string_view MoveOutcomeLabel(v1::CommandResult::Outcome outcome);

// A move whose files were written and whose verification then failed: undone (ROLLED_BACK), or
// its undo failed too (NEEDS_ATTENTION with a rollback failure). A NEEDS_ATTENTION without one
// failed while writing, before anything was verified.
bool FailedVerification(const v1::CommandResult& result);
// A move its agent undid (the node is back where it was).
bool UndoneByAgent(const v1::CommandResult& result);

}  // namespace handoff

#endif  // HANDOFF_PROTO_VOCABULARY_OUTCOME_H_
