// The checks before `start`: what must hold before the first node of a rollout moves, each
// refusal naming what to fix. Pure: the coordinator gathers the inputs (agents' reports, the
// leases and RBAC it read, the rollout's settings) and refuses the start while any check fails;
// nothing moves.
//
//  agents            every control-plane node has a connected agent that has reported its node
//                    since the coordinator started, and no node is inconsistent;
//  transactions      no agent reports an unfinished transaction (`handoff-agent recover` first);
//  leases            (read from the cluster) the kube-controller-manager's main lease, the
//                    cloud-controller-manager's once any node runs one, and the migration lease
//                    once any node runs with Leader Migration, are each held by a manager on a node
//                    of the rollout that is connected and healthy;
//  rbac              (read from the cluster) both managers may use the migration lease;
//  image             the cloud-controller-manager image (or, untagged, the settings'
//                    kubernetesVersion) is one minor version after every kube-controller-manager
//                    the agents report;
//  leader-migration  the Leader Migration files the agents will write, rendered from the settings
//                    as the agents render them, lint clean for the manager and version reading
//                    each: the kube-controller-manager (N) on prepared nodes, the
//                    cloud-controller-manager (N+1) on migrated ones.
// The coordinator adds the checks of `handoffctl preflight` (coordinator/preflight: node-names,
// stray-files, ebs-csi, ecr-credentials, cloud-routes, leader-elect, control-plane, and rbac as
// the authorizer answers it), which CheckIgnorable also takes.
#ifndef HANDOFF_COORDINATOR_ROLLOUT_PREFLIGHT_H_
#define HANDOFF_COORDINATOR_ROLLOUT_PREFLIGHT_H_

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "agent/engine/settings.h"
#include "common/base/kube_version.h"
#include "coordinator/rollout/rollout_engine.h"
#include "proto/vocabulary/node_state.h"

namespace handoff::rollout {

// A lease as read: its holder's host ("" when nobody validly holds it) and the rollout's node that
// host is ("" when none).
struct PreflightLease {
  std::string holder_host;
  std::string holder_node;
};

struct PreflightInput {
  // The nodes as the engine sees them (rollout_engine.h); in_transition is not read.
  std::vector<NodeStatus> nodes;
  // False with --no-cluster-checks: the lease and RBAC checks are skipped (and said so).
  bool cluster_checked = false;
  bool rbac_ready = false;
  PreflightLease kube_controller_manager;
  PreflightLease cloud_controller_manager;
  PreflightLease migration;
  Settings settings;  // the rollout's settings, as sent with every move
  // The downtime strategy (rollout_engine.h): no manager takes part in Leader Migration, so the
  // migration-lease RBAC (rbac) and the Leader Migration files (leader-migration) are not
  // checked.
  bool downtime = false;
};

struct PreflightProblem {
  std::string check;    // "agents", "transactions", "leases", "rbac", "image", "leader-migration"
  std::string message;  // what is wrong and what to do
};

// Every failed check, in the order above; empty: the rollout may start.
std::vector<PreflightProblem> Preflight(const PreflightInput& input);

// The same with the rollout's settings as text (input.settings is replaced by them; `source`
// names them in errors). Settings that do not parse are a "settings" problem, first; the checks
// that read them (image, leader-migration) are then left out, the others still say what to fix.
std::vector<PreflightProblem> Preflight(PreflightInput input, std::string_view settings_yaml,
                                        std::string_view source);

// What `start --ignore-preflight` may name: a check above, "settings" or "all" (every one).
// InvalidArgument naming the first unknown one and listing the checks otherwise.
absl::Status CheckIgnorable(const std::vector<std::string>& ignore);

// The problems split by the operator's `ignore` (CheckIgnorable's names).
struct PreflightVerdict {
  std::vector<PreflightProblem> refusing;  // the start is refused while any is left
  std::vector<PreflightProblem> ignored;   // named in `ignore`: recorded, not refusing
};
PreflightVerdict Judge(std::vector<PreflightProblem> problems,
                       const std::vector<std::string>& ignore);

// "preflight refused the start:\n  [agents] ...\n  [rbac] ..." for the operator.
std::string DescribePreflight(const std::vector<PreflightProblem>& problems);

}  // namespace handoff::rollout

#endif  // HANDOFF_COORDINATOR_ROLLOUT_PREFLIGHT_H_
