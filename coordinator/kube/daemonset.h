// Whether a DaemonSet has rolled out, decided as `kubectl rollout status daemonset` decides it
// (DaemonSetStatusViewer in k8s.io/kubectl/pkg/polymorphichelpers/rollout_status.go), so that
// handoff's answer and the one the Rancher guide tells operators to run never disagree. The
// decision is pure; reading the DaemonSet is not.
#ifndef HANDOFF_COORDINATOR_KUBE_DAEMONSET_H_
#define HANDOFF_COORDINATOR_KUBE_DAEMONSET_H_

#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "common/kube/client.h"
#include "common/kube/resource.h"

namespace handoff::kube {

// The DaemonSet the aws-cloud-controller-manager chart installs.
inline constexpr std::string_view kAwsCcmNamespace = "kube-system";
inline constexpr std::string_view kAwsCcmDaemonSet = "aws-cloud-controller-manager";

struct DaemonSetRollout {
  bool done = false;
  // kubectl's words: what the rollout waits for, or that it finished.
  std::string message;
};

// kubectl's test: only the RollingUpdate strategy (the API server's default, so an object without
// spec.updateStrategy counts as one) can be judged; then status.observedGeneration must have
// caught up with metadata.generation, and updatedNumberScheduled and numberAvailable must both
// reach desiredNumberScheduled. FailedPrecondition for OnDelete (or any other strategy), as
// kubectl refuses it; InvalidArgument when a count is not an integer. Pure.
absl::StatusOr<DaemonSetRollout> DaemonSetRolloutStatus(const Json& daemon_set);

// GET of the DaemonSet (NotFound names it).
absl::StatusOr<Json> GetDaemonSet(KubeClient& client, std::string_view ns, std::string_view name);

}  // namespace handoff::kube

#endif  // HANDOFF_COORDINATOR_KUBE_DAEMONSET_H_
