// Transition planning: from a node's files and a target state one step away, the exact new
// content of every file the move touches, in the order they must be written. Pure.
#ifndef HANDOFF_AGENT_ENGINE_PLANNER_H_
#define HANDOFF_AGENT_ENGINE_PLANNER_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "agent/engine/classify.h"
#include "agent/engine/node_snapshot.h"
#include "agent/engine/settings.h"

namespace handoff {

// One file to create, replace or remove.
struct FileChange {
  std::string path;
  std::optional<std::string> before;  // nullopt: the file does not exist now
  std::optional<std::string> after;   // nullopt: the file is removed
  // The component that must be seen restarting (and healthy) once this file is written:
  // "kube-apiserver", "kube-controller-manager", "kube-scheduler", "cloud-controller-manager",
  // "kubelet", or "" for a file no process needs to reload.
  std::string component;
};

struct Plan {
  NodeState from = NodeState::kInconsistent;
  NodeState to = NodeState::kInconsistent;
  // In write order. Moving forward: migration record, kube-apiserver, the Leader Migration file,
  // cloud-controller-manager, kube-controller-manager, kube-scheduler, kubelet; moving back the
  // reverse. A file always exists before the manifest that mounts it is written, and is removed
  // only after the last manifest that mounts it stops doing so. The manager that takes the cloud
  // controllers over starts before the one that gives them up stops, so that it already waits
  // for the lease when the other's is released.
  // The downtime path keeps that order with its own files: in-tree → stopped writes the parked
  // kube-controller-manager manifest (component "") before it removes the one in the manifest
  // directory (component kube-controller-manager, proven stopped), so the manifest is always in
  // one place or both; stopped → external writes the migration record, kube-apiserver, the
  // external kube-controller-manager back in the manifest directory, removes the parked copy,
  // then kube-scheduler and the kubelet; external → finalized adds the cloud-controller-manager
  // (no Leader Migration). external → migrated (a node kubeadm joined external during a Leader
  // Migration rollout) writes the Leader Migration file, then the cloud-controller-manager with
  // Leader Migration; migrated → external removes them in the reverse order. Each move back is its
  // forward move reversed, restoring from the migration record (external → stopped parks the
  // recorded in-tree kube-controller-manager).
  std::vector<FileChange> changes;
  std::vector<std::string> notes;  // for the operator: what the plan assumes or leaves to them
  bool empty() const { return changes.empty(); }
};

// Errors: FailedPrecondition when the node is inconsistent (every reason listed), when `target`
// is not adjacent to the current state, or when a precondition of the move does not hold (e.g.
// --leader-elect=false, no migration record to move back with, from external or migrated);
// InvalidArgument when a needed
// setting is missing or wrong (no CCM image, a downgrade). Planning the current state gives an
// empty plan.
absl::StatusOr<Plan> PlanTransition(const NodeSnapshot& snapshot, const Classification& current,
                                    NodeState target, const Settings& settings);

// The node as it would read after `plan` is carried out (files the snapshot does not know are
// taken as absent). Used to check every plan by classifying its outcome.
NodeSnapshot SnapshotAfter(const NodeSnapshot& snapshot, const Plan& plan);

}  // namespace handoff

#endif  // HANDOFF_AGENT_ENGINE_PLANNER_H_
