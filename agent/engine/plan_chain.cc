#include "agent/engine/plan_chain.h"

#include "agent/engine/classify.h"
#include "common/base/strings.h"
#include "common/base/unified_diff.h"

namespace handoff {

absl::StatusOr<std::vector<Plan>> PlanChain(const NodeSnapshot& snapshot,
                                            const std::vector<NodeState>& chain,
                                            const Settings& settings) {
  if (chain.empty()) return absl::InvalidArgumentError("no target state to plan for");
  std::vector<Plan> plans;
  NodeSnapshot node = snapshot;
  for (size_t i = 0; i < chain.size(); ++i) {
    const Classification current = Classify(node);
    absl::StatusOr<Plan> plan = PlanTransition(node, current, chain[i], settings);
    if (!plan.ok()) {
      if (chain.size() == 1) return plan.status();
      return absl::Status(plan.status().code(),
                          StrCat("step ", i + 1, " (", NodeStateName(current.state), " -> ",
                                 NodeStateName(chain[i]), "): ", plan.status().message()));
    }
    if (i + 1 < chain.size()) node = SnapshotAfter(node, *plan);
    plans.push_back(*std::move(plan));
  }
  return plans;
}

std::string PlanDiff(const Plan& plan) {
  std::string diff;
  for (const FileChange& change : plan.changes) {
    diff += UnifiedDiff(change.path, change.before, change.after);
  }
  return diff;
}

std::string PlanSummary(const Plan& plan) {
  if (plan.empty()) {
    return StrCat("the node is already ", NodeStateName(plan.to), "; nothing to do\n");
  }
  std::string text = StrCat("plan: ", NodeStateName(plan.from), " -> ", NodeStateName(plan.to),
                            ", ", plan.changes.size(), " file(s), written in this order:\n");
  for (const FileChange& change : plan.changes) {
    StrAppend(&text, "  ",
              !change.before  ? "create "
              : !change.after ? "remove "
                              : "replace ",
              change.path, "\n");
  }
  for (const std::string& note : plan.notes) StrAppend(&text, "note: ", note, "\n");
  return text;
}

}  // namespace handoff
