// The real cluster under the sandbox (cluster.h): etcd and kube-apiserver 1.26, and the
// upstream kube-controller-manager 1.26 (--cloud-provider=aws) and aws-cloud-controller-manager
// 1.27 as the nodes' static pods, against a fake AWS (moto and a per-node instance-metadata
// endpoint), from the components dir that tests/real/components.sh builds. The monitor reads
// the managers' own logs.
#ifndef HANDOFF_COORDINATOR_SANDBOX_REAL_CLUSTER_H_
#define HANDOFF_COORDINATOR_SANDBOX_REAL_CLUSTER_H_

#include <memory>

#include "absl/status/statusor.h"
#include "coordinator/sandbox/cluster.h"

namespace handoff::sandbox {

// FailedPrecondition naming what is missing (a component, the fake AWS) and how to get it.
absl::StatusOr<std::unique_ptr<SandboxCluster>> NewRealCluster(const ClusterSetup& setup);

}  // namespace handoff::sandbox

#endif  // HANDOFF_COORDINATOR_SANDBOX_REAL_CLUSTER_H_
