// Rolling replacement (`handoffctl start|rollback --strategy replace`): the upstream procedure
// for Leader Migration in its own words — "in a rolling manner, create a new control plane node
// of version N + 1 and bring down one of version N", and for a rollback "add nodes of version N
// with Leader Migration enabled … replacing one of version N + 1 each time". Pure: from the
// members' states, the next step — a move of one node in place, a node to add (which the
// operator's automation makes: handoff does not create machines), a node to remove — or why it
// must wait. Every move is one the rollout engine allows (rollout_engine.h: TryMove), and every
// join and removal one the membership rules allow (membership.h), so R1–R5 hold throughout.
//
// A node is *old* when it runs the version being replaced and *new* when it runs the one
// replacing it, told by its state: forward (towards migrated) in-tree and prepared are old;
// external, migrated and finalized are new; backward (towards prepared or in-tree) the reverse.
// A stopped node (the downtime path) is neither: the replacement is stuck, naming it.
//
// Forward, in this order:
//   1. every old node in-tree → prepared, in place (R1 needs every in-tree manager in Leader
//      Migration before any cloud-controller-manager starts);
//   2. a new node that joined external → migrated, in place (its agent adds the
//      cloud-controller-manager with Leader Migration);
//   3. while an old node is left: when the members are more than `size`, remove an old node (one
//      holding no lease first, the one whose manager runs the cloud controllers last); otherwise
//      ask for a new node, joining external (kubeadm's configuration at version N+1);
//   4. done when every member is new and migrated (`finalize` then goes on in place).
// Backward:
//   1. every new node finalized → migrated, in place (Leader Migration back on: a prepared
//      kube-controller-manager joining beside a finalized cloud-controller-manager breaks R2);
//   2. while a new node is left: remove one when the members are more than `size` (as above),
//      else ask for an old node, joining prepared (version N with Leader Migration);
//   3. to in-tree: every node prepared → in-tree, in place; done when every member is at the goal.
// One node joins, is verified healthy and brought to its state before a node leaves, so the
// control plane (and etcd's quorum) never shrinks below `size`.
//
// Once a removal is asked for, the node asked to leave (ReplacementGoal::leaving) is the next
// step until it has left, whatever else is true of it: from that moment its machine may be reset
// at any time, so its agent reports it unhealthy or inconsistent as its static pods go, then goes
// away for good (and never says hello to a coordinator started since), and the leases it held
// move to other nodes. None of that may make the planner pick another node to leave, or judge
// the rollout on what the leaving node last said: leaving never makes a set of states unsafe
// (membership.h), and the node is out once its agent is gone and neither the API server nor etcd
// lists it. Only a halt (R5) comes before it.
#ifndef HANDOFF_COORDINATOR_ROLLOUT_REPLACEMENT_H_
#define HANDOFF_COORDINATOR_ROLLOUT_REPLACEMENT_H_

#include <cstddef>
#include <string>
#include <vector>

#include "coordinator/rollout/rollout_engine.h"

namespace handoff::rollout {

struct ReplacementGoal {
  // kMigrated (forward, "start --strategy replace"), kPrepared or kInTree (backward, "rollback").
  NodeState target = NodeState::kMigrated;
  // How many members the control plane keeps: the members when the replacement began. It has one
  // more while a replacement is under way.
  std::size_t size = 0;
  // The member asked to leave that has not left yet; "" when none (see the header's comment).
  std::string leaving{};
};

struct ReplacementStep {
  enum class Kind {
    kMove,   // send `node` a move to `to`
    kJoin,   // a new node must join, in state `to` (external forward, prepared backward)
    kLeave,  // `node` must leave: its machine reset and removed (then RemoveNode)
    kWait,   // nothing may happen now; `reason` says why
    kDone,   // every member is new and at the goal
    kStuck   // the operator is needed; `reason` says what
  };
  Kind kind = Kind::kWait;
  std::string node;
  NodeState to = NodeState::kInconsistent;
  std::string reason;
};

// Whether a node in `state` runs the version a replacement towards `target` replaces.
bool IsOldNode(NodeState state, NodeState target);

// The next step (see the header's comment). First a halt → kStuck, then goal.leaving, when it is
// a member → kLeave of it. Otherwise, as NextStep: a node awaiting its agent's hello → kWait; then
// the engine's general obstacles (paused, in transition, inconsistent, unhealthy) for every kind
// of step, a kMove's own ones from TryMove.
ReplacementStep NextReplacementStep(const std::vector<NodeStatus>& nodes,
                                    const ReplacementGoal& goal, const ClusterFacts& facts,
                                    const Control& control);

}  // namespace handoff::rollout

#endif  // HANDOFF_COORDINATOR_ROLLOUT_REPLACEMENT_H_
