// The simulated kubelet's decision for one pod, as a pure function of what it wants (the
// manifest), what runs, and the time: start, stop (SIGTERM, then SIGKILL after the grace
// period), or wait. No processes, no clock. Thread-compatible.
#ifndef HANDOFF_REHEARSAL_KUBELET_POD_SYNC_H_
#define HANDOFF_REHEARSAL_KUBELET_POD_SYNC_H_

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

#include "rehearsal/kubelet/pod_spec.h"

namespace handoff::sandbox {

using SteadyTime = std::chrono::steady_clock::time_point;
using SteadyDuration = std::chrono::steady_clock::duration;

// The grace period between SIGTERM and SIGKILL when the sandbox stops a pod (a real kubelet
// takes terminationGracePeriodSeconds, 30s by default; the sandbox's stand-ins stop at once).
inline constexpr std::chrono::seconds kStopGracePeriod{2};
// CrashLoopBackOff: a pod whose process exits by itself is restarted at once, then no sooner
// than 10s, 20s, 40s ... 300s after the previous restart (pkg/kubelet/kubelet.go backOffPeriod,
// MaxContainerBackOff; flowcontrol.Backoff).
inline constexpr std::chrono::seconds kInitialBackOff{10};
inline constexpr std::chrono::seconds kMaxBackOff{300};

// A changed static pod: the real kubelet (v1.26 pkg/kubelet/pod_workers.go) starts the new pod
// only once the old one has finished terminating, and then on its fixed retry back-off of 10 s
// with 0.5 jitter; measured on v1.26.13, 11-15 s from a manifest's rewrite to the new process.
inline constexpr std::chrono::seconds kChangedPodRestartDelay{10};
inline constexpr double kChangedPodRestartJitter = 0.5;

// The back-off of one pod's restarts. Keyed by the manifest hash, as the kubelet keys it by the
// container's hash: a new manifest starts afresh.
struct CrashBackOff {
  std::string hash;
  SteadyDuration period{};
  SteadyTime last_update{};
};

// What the kubelet knows of one pod.
struct PodStatus {
  // The running process, if any.
  bool running = false;
  std::string running_hash;                  // the manifest hash it was started from
  std::optional<SteadyTime> terminate_sent;  // when it was sent SIGTERM
  bool kill_sent = false;                    // SIGKILL sent
  // The last process exited without being asked to: its restart is subject to `back_off`.
  bool crashed = false;
  std::optional<CrashBackOff> back_off;
  // The last process was stopped because its manifest changed or went: a manifest of another
  // hash starts no sooner than `restart_not_before` (kChangedPodRestartDelay, jittered by the
  // kubelet when it stopped it). The same manifest back starts at once.
  std::optional<SteadyTime> restart_not_before;
  std::string stopped_hash;
};

struct PodDecision {
  enum class Action { kNothing, kStart, kTerminate, kKill };
  Action action = Action::kNothing;
  // When to decide again at the latest (a grace period or back-off ending); nullopt: only when
  // something happens (a manifest change, a process exit).
  std::optional<SteadyTime> wake_at;
};

// `desired` is nullptr when no manifest defines the pod. A process whose manifest changed or
// went away is stopped first, and the new one started only once it has exited (the kubelet
// kills a pod's containers before creating the new pod's).
PodDecision DecidePod(const PodSpec* desired, const PodStatus& status, SteadyTime now,
                      SteadyDuration grace = kStopGracePeriod);

// The back-off after restarting a crashed pod at `now` (flowcontrol.Backoff.Next): the initial
// period for a new hash or after 2 × kMaxBackOff without a restart, else double, at most
// kMaxBackOff.
CrashBackOff NextBackOff(const std::optional<CrashBackOff>& previous, const std::string& hash,
                         SteadyTime now);

}  // namespace handoff::sandbox

#endif  // HANDOFF_REHEARSAL_KUBELET_POD_SYNC_H_
