// The real cluster under the sandbox (cluster.h): etcd and kube-apiserver 1.26, and the
// upstream kube-controller-manager 1.26 (--cloud-provider=aws) and aws-cloud-controller-manager
// 1.27 as the nodes' static pods, against a fake AWS (moto and a per-node instance-metadata
// endpoint), from the components dir that tests/real/components.sh builds. The monitor reads
// the managers' own logs.
#ifndef HANDOFF_REHEARSAL_REAL_CLUSTER_H_
#define HANDOFF_REHEARSAL_REAL_CLUSTER_H_

#include <memory>

#include "absl/status/statusor.h"
#include "rehearsal/sandbox/cluster.h"
#include "rehearsal/sandbox/node_layout.h"

namespace handoff::sandbox {

// Leader-election timing for the real managers: longer than the model's. A manager that misses
// its renew deadline keeps running its controllers until its process has exited, and a successor
// takes the lease one lease duration after it last saw it renewed; lease duration minus renew
// deadline is the margin that keeps the two apart (5 s with the managers' defaults, 15 s and
// 10 s), and on a loaded two-core machine the model's 300 ms is not enough.
LeaseTiming RealManagerTiming();

// FailedPrecondition naming what is missing (a component, the fake AWS) and how to get it.
absl::StatusOr<std::unique_ptr<SandboxCluster>> NewRealCluster(const ClusterSetup& setup);

}  // namespace handoff::sandbox

#endif  // HANDOFF_REHEARSAL_REAL_CLUSTER_H_
