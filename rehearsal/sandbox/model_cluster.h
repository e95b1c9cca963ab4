// The model cluster under the sandbox (cluster.h): the in-process fake API server
// (rehearsal/fakeapi) seeded with the nodes and the 1.26 leader-locking Role, and stand-in
// controller-managers (handoff-standin) as every static pod, which take real leases and record
// each controller they run in records/<node>.jsonl. The monitor reads those records.
#ifndef HANDOFF_REHEARSAL_SANDBOX_MODEL_CLUSTER_H_
#define HANDOFF_REHEARSAL_SANDBOX_MODEL_CLUSTER_H_

#include <memory>

#include "rehearsal/sandbox/cluster.h"

namespace handoff::sandbox {

std::unique_ptr<SandboxCluster> NewModelCluster(const ClusterSetup& setup);

}  // namespace handoff::sandbox

#endif  // HANDOFF_REHEARSAL_SANDBOX_MODEL_CLUSTER_H_
