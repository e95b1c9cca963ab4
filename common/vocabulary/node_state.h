// The states a control-plane node passes through (see README "Node states").
#ifndef HANDOFF_COMMON_VOCABULARY_NODE_STATE_H_
#define HANDOFF_COMMON_VOCABULARY_NODE_STATE_H_

#include <string_view>

#include "absl/status/statusor.h"

namespace handoff {

// Two paths lead from in-tree to finalized, and a node moves one step at a time along either:
//   Leader Migration (no downtime): in-tree ⇄ prepared ⇄ migrated ⇄ finalized;
//   downtime (AWS's "when downtime is acceptable"): in-tree ⇄ stopped ⇄ external ⇄ finalized.
// kInconsistent is never a target. The enumerators' values are not an order: use IsForward.
enum class NodeState {
  kInTree,
  kPrepared,
  kMigrated,
  kFinalized,
  kInconsistent,
  // Downtime path: the in-tree kube-controller-manager's manifest parked in handoff's state
  // dir (so the kubelet stopped it); everything else as in-tree.
  kStopped,
  // Downtime path: kube-apiserver, kube-controller-manager (back in the manifest dir) and the
  // kubelet with --cloud-provider=external; no cloud-controller-manager yet, so nothing runs the
  // cloud controllers.
  kExternal,
};

// "in-tree", "prepared", "migrated", "finalized", "inconsistent", "stopped", "external".
std::string_view NodeStateName(NodeState state);
// Accepts every consistent state's name; anything else is an error listing them.
absl::StatusOr<NodeState> ParseTargetState(std::string_view name);
// Whether `to` is one step from `from` (both consistent): along either path, or between the
// paths' two middle states external ⇄ migrated, which differ only by a cloud-controller-manager
// with Leader Migration. That step brings a node joined with kubeadm's external configuration
// (kube-controller-manager external, no cloud-controller-manager: kubeadm writes none) into a
// Leader Migration rollout.
bool AreAdjacent(NodeState from, NodeState to);
// Whether `to` lies after `from` (a forward move): in-tree first, finalized last; external →
// migrated is forward (it starts a cloud-controller-manager), migrated → external backward.
bool IsForward(NodeState from, NodeState to);
// Whether the state lies on the downtime path only (stopped, external).
bool IsDowntimeState(NodeState state);
// Whether a node in `state` runs a cloud-controller-manager (migrated, finalized): from then on no
// in-tree kube-controller-manager may run without Leader Migration anywhere (R1, R3).
bool RunsCloudControllerManager(NodeState state);
// How many steps from in-tree the state lies along its path: in-tree 0, prepared and stopped 1,
// migrated and external 2, finalized 3; -1 for inconsistent.
int StepsFromInTree(NodeState state);

}  // namespace handoff

#endif  // HANDOFF_COMMON_VOCABULARY_NODE_STATE_H_
