// The states a control-plane node passes through (see README "Node states"): one table in
// node_state.cc gives each its name, its wire value (handoff.v1.NodeState) and its place on its
// path; every conversion below reads it.
#ifndef HANDOFF_PROTO_VOCABULARY_NODE_STATE_H_
#define HANDOFF_PROTO_VOCABULARY_NODE_STATE_H_

#include <optional>
#include <string_view>

#include "absl/status/statusor.h"
#include "handoff/v1/handoff.pb.h"

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
// The wire's value of the state, and back: std::nullopt for NODE_STATE_UNSPECIFIED and values
// this build does not know.
v1::NodeState ToProto(NodeState state);
std::optional<NodeState> FromProto(v1::NodeState state);
// The name of a wire value; `otherwise` for UNSPECIFIED and values this build does not know.
std::string_view WireStateName(v1::NodeState state, std::string_view otherwise);
// The state of any name above (inconsistent too: a stored node may be in it); std::nullopt
// for any other text.
std::optional<NodeState> NodeStateNamed(std::string_view name);
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

#endif  // HANDOFF_PROTO_VOCABULARY_NODE_STATE_H_
