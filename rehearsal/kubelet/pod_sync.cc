#include "rehearsal/kubelet/pod_sync.h"

#include <algorithm>

namespace handoff::sandbox {

PodDecision DecidePod(const PodSpec* desired, const PodStatus& status, SteadyTime now,
                      SteadyDuration grace) {
  using Action = PodDecision::Action;
  PodDecision decision;
  if (status.running) {
    // A stop once begun is finished even if the manifest came back meanwhile: SIGTERM cannot be
    // taken back, and the pod is started again from its manifest after the exit.
    const bool wanted = desired != nullptr && desired->hash == status.running_hash;
    if (wanted && !status.terminate_sent) return decision;
    if (!status.terminate_sent) {
      decision.action = Action::kTerminate;
      decision.wake_at = now + grace;
      return decision;
    }
    if (status.kill_sent) return decision;  // the exit will come
    const SteadyTime deadline = *status.terminate_sent + grace;
    if (now >= deadline) {
      decision.action = Action::kKill;
    } else {
      decision.wake_at = deadline;
    }
    return decision;
  }
  if (desired == nullptr) return decision;
  // pkg/kubelet/pod_workers.go: a pod replaced by another is retried on the worker's back-off.
  if (status.restart_not_before && desired->hash != status.stopped_hash &&
      now < *status.restart_not_before) {
    decision.wake_at = *status.restart_not_before;
    return decision;
  }
  // pkg/kubelet/kuberuntime doBackOff: only a container that exited is held back, and only
  // while the time since the back-off's last update is below its period.
  if (status.crashed && status.back_off && status.back_off->hash == desired->hash) {
    const SteadyTime ready = status.back_off->last_update + status.back_off->period;
    if (now < ready) {
      decision.wake_at = ready;
      return decision;
    }
  }
  decision.action = Action::kStart;
  return decision;
}

CrashBackOff NextBackOff(const std::optional<CrashBackOff>& previous, const std::string& hash,
                         SteadyTime now) {
  CrashBackOff next;
  next.hash = hash;
  next.last_update = now;
  const bool fresh = !previous || previous->hash != hash ||
                     now - previous->last_update > 2 * SteadyDuration(kMaxBackOff);
  next.period = fresh ? SteadyDuration(kInitialBackOff)
                      : std::min<SteadyDuration>(2 * previous->period, kMaxBackOff);
  return next;
}

}  // namespace handoff::sandbox
