// Replacing the workers (`handoffctl start|rollback --strategy replace`): rather than moving each
// worker's kubelet in place, the operator's automation retires the workers of the version being
// replaced and joins new ones at the goal's, as for the control plane (replacement.h); handoff
// does not create machines. Pure, as worker_rollout.h: the coordinator feeds it the workers and
// carries out what it returns (asks the workers it names to leave; says in its status what to
// join).
//
// A worker is *old* when its kubelet is not at WorkerTarget(goal) (in-tree forward, external
// back) and *new* when it is. A new worker *serves* once it is verified (WorkerStatus::unverified
// empty): its agent connected and healthy, and, forward, its kubelet naming a credential provider
// and its Node carrying a providerID and no uninitialized taint, so the cloud-controller-manager
// initialized it. An old worker not asked to leave serves too. The rules beside W1–W5:
//  WR1 the workers serving never fall more than max-unavailable below `size`, the workers there
//      were when the replacement of the workers began: a worker is asked to leave only while that
//      holds after it leaves, and at most max-unavailable are leaving at once. New workers may
//      join first (a surge) or after.
//  WR2 a worker asked to leave is asked for good (WorkerStatus::leaving): it no longer serves or
//      moves, and it is out once its agent is away and the API server lists no Node of its name
//      (the coordinator forgets it then). Only a halt comes before it.
//  WR3 forward, W1 holds for the new workers: none is asked for, and none asked to leave, before a
//      cloud-controller-manager runs for the cluster (an external kubelet's Node waits for one).
// Done when no old worker is left, none asked to leave is still listed, every new worker is
// verified, and at least `size` serve.
#ifndef HANDOFF_COORDINATOR_ROLLOUT_WORKER_REPLACEMENT_H_
#define HANDOFF_COORDINATOR_ROLLOUT_WORKER_REPLACEMENT_H_

#include <cstddef>
#include <vector>

#include "coordinator/rollout/rollout_engine.h"
#include "coordinator/rollout/worker_rollout.h"

namespace handoff::rollout {

// The workers' next step in a replacement towards `goal` (see the header's comment): kDone;
// kStuck when halted, or for a worker neither in-tree nor external that is not leaving (its agent
// says why); kWait when paused, for W1 forward, for moves still in flight (from an earlier goal),
// and while nothing may leave (joins_wanted says how many new workers would let more go);
// otherwise kRetire with as many old workers as WR1 allows, spread over the zones as NextWorkers
// spreads a batch (each next one from the zone with the fewest leaving and picked). A Node
// without an agent neither serves nor is asked to leave: its agent's hello tells old from new (a
// new worker's agent starts after its kubeadm join), and the replacement is not done while one is
// listed.
WorkerDecision NextWorkerReplacement(const std::vector<NodeStatus>& control_plane,
                                     const std::vector<WorkerStatus>& workers, NodeState goal,
                                     std::size_t size, const WorkerPolicy& policy,
                                     const Control& control);

}  // namespace handoff::rollout

#endif  // HANDOFF_COORDINATOR_ROLLOUT_WORKER_REPLACEMENT_H_
