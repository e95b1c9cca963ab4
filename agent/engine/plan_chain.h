// Planning several moves ahead without writing anything, and the text a plan is shown as. Shared
// by `handoff-agent plan` and the agent daemon's PlanRequest, so both show the same diffs.
#ifndef HANDOFF_AGENT_ENGINE_PLAN_CHAIN_H_
#define HANDOFF_AGENT_ENGINE_PLAN_CHAIN_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "agent/engine/node_snapshot.h"
#include "agent/engine/planner.h"
#include "agent/engine/settings.h"
#include "proto/vocabulary/node_state.h"

namespace handoff {

// Plans the successive targets of `chain` from `snapshot`: each step is planned on the node as
// the previous step would leave it (SnapshotAfter). Pure. Errors are PlanTransition's for the
// first step that cannot be planned, prefixed with the step ("step 2 (prepared -> migrated): ");
// InvalidArgument for an empty chain.
absl::StatusOr<std::vector<Plan>> PlanChain(const NodeSnapshot& snapshot,
                                            const std::vector<NodeState>& chain,
                                            const Settings& settings);

// The unified diffs of every file `plan` writes or removes, in write order (new files from
// /dev/null, removed files to /dev/null); "" for an empty plan. What `handoff-agent plan` prints
// on stdout.
std::string PlanDiff(const Plan& plan);

// For the operator: "plan: FROM -> TO, N file(s), written in this order:", one line per file
// ("  create|replace|remove PATH") and one "note: ..." line per note; for an empty plan "the node
// is already STATE; nothing to do". Lines end in "\n". What `handoff-agent plan` prints on stderr.
std::string PlanSummary(const Plan& plan);

}  // namespace handoff

#endif  // HANDOFF_AGENT_ENGINE_PLAN_CHAIN_H_
