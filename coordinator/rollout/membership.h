// Membership: which control-plane nodes the rollout moves, and when that set may change. Pure:
// the coordinator asks before it records a join or a removal (handoffctl nodes add|remove, the
// replace strategy), and the rules R1–R5 and D1–D4 (rollout_engine.h) then hold over the new set.
//
// A node's state alone can run a controller twice beside another's; these pairs never coexist:
//   in-tree  beside migrated or finalized (R1, R3): its in-tree kube-controller-manager, without
//            Leader Migration, runs the cloud controllers beside a cloud-controller-manager;
//   prepared beside finalized (R2): a finalized cloud-controller-manager runs them without Leader
//            Migration, while the prepared kube-controller-manager may take the migration lease;
//   stopped  beside migrated (R1: every node keeping an in-tree manager is prepared before a
//            cloud-controller-manager starts) or finalized (D2: its parked manager could return).
// A set of states without these pairs is exactly one that the moves CheckMove allows can reach
// from every node in-tree (membership_test.cc searches every set of up to five nodes), so a safe
// join leaves the rollout where its own moves could have brought it, and NextStep goes on from
// there. Leaving never makes a set unsafe: it only takes a state away.
//
// The rules, each refusal's message starting with its name:
//  M1 a node joins only when its state and the members' states form no pair above;
//  M2 a node joins only when it is known: its agent connected and said hello, its state
//     consistent and verified healthy, its name new; and every member's state is known (none
//     inconsistent, none awaiting its agent's hello) and none is in transition (R4: the set
//     changes between moves, never during one);
//  M3 a node leaves only when its agent is gone (the machine reset or terminated: `kubeadm reset`
//     stops its static pods and the agent with them), no move to it is outstanding, and another
//     node stays.
#ifndef HANDOFF_COORDINATOR_ROLLOUT_MEMBERSHIP_H_
#define HANDOFF_COORDINATOR_ROLLOUT_MEMBERSHIP_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "coordinator/rollout/rollout_engine.h"

namespace handoff::rollout {

// Whether the consistent states of `nodes` form none of the pairs above: OK, or
// FailedPrecondition "M1: node a (in-tree) beside node b (migrated): …" naming the first pair and
// why it cannot be. Inconsistent nodes are not judged here (M2 refuses a join beside them).
absl::Status CheckConfiguration(const std::vector<NodeStatus>& nodes);

// Whether `joining` may become a member beside `members` now (M1, M2). OK, or FailedPrecondition
// with the rule's message; InvalidArgument when `joining` has no name.
absl::Status CheckJoin(const std::vector<NodeStatus>& members, const NodeStatus& joining);

// Whether the member `node` may leave now (M3). OK, FailedPrecondition with the rule's message,
// or NotFound when it is not a member.
absl::Status CheckLeave(const std::vector<NodeStatus>& members, const std::string& node);

}  // namespace handoff::rollout

#endif  // HANDOFF_COORDINATOR_ROLLOUT_MEMBERSHIP_H_
