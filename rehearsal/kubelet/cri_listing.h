// `crictl ps -o json` for a simulated node (handoff-sandbox-kubelet crictl --root DIR ps -o json):
// the pods its kubelets run (pod_state.h) as the container runtime lists running containers
// (CRI ListContainers, as crictl prints it), so that a worker's agent can prove its kubelet's
// restart left them running (agent/verify/worker_proof.h ParseCriContainers reads it). A pod's
// container id names its process (pid and start time: a restarted pod gets another), its
// sandbox id the pod, which outlives its container's restarts; createdAt is the process's start
// in nanoseconds since the epoch.
#ifndef HANDOFF_REHEARSAL_KUBELET_CRI_LISTING_H_
#define HANDOFF_REHEARSAL_KUBELET_CRI_LISTING_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "rehearsal/kubelet/pod_state.h"

namespace handoff::sandbox {

// The listing of `pods` on node `node_name`, those for which `started_at` gives a start (the
// process still runs with the recorded start time) in nanoseconds since the epoch.
std::string CriListing(const PodProcesses& pods, std::string_view node_name,
                       const std::function<std::optional<std::int64_t>(const PodProcess&)>&
                           started_at);

// The start of `pod`'s process in nanoseconds since the epoch when it still runs (the pid with
// the recorded start time), from /proc and the boot time; nullopt otherwise.
std::optional<std::int64_t> RunningSince(const PodProcess& pod);

}  // namespace handoff::sandbox

#endif  // HANDOFF_REHEARSAL_KUBELET_CRI_LISTING_H_
