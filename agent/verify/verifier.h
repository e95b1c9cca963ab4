// Proof that the kubelet restarted a component with the intended flags and that it is healthy:
// the old process is gone, a new one runs with exactly the manifest's argv, and its health
// endpoint answers 200. Nothing here trusts the mirror pod's config hash (kubernetes/kubeadm#2927).
#ifndef HANDOFF_AGENT_VERIFY_VERIFIER_H_
#define HANDOFF_AGENT_VERIFY_VERIFIER_H_

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "agent/manifest/static_pod.h"
#include "common/system/clock.h"
#include "common/system/health_checker.h"
#include "common/system/process_table.h"

namespace handoff {

// What must hold once a component's manifest (or the kubelet's flags) has been written.
struct ComponentCheck {
  std::string component;  // "kube-controller-manager", "kubelet", ...
  // Basenames of argv[0] that identify the component's process ("kube-controller-manager";
  // for the AWS cloud-controller-manager image's entrypoint "aws-cloud-controller-manager").
  std::vector<std::string> binaries;
  // The argv the new process must have: `command` followed by `args`. With an empty `command`
  // (the image's entrypoint runs) argv[1..] must equal `args`. With `args_subset` (the kubelet,
  // whose unit adds flags of its own) each of `args` must appear in argv[1..].
  std::vector<std::string> command;
  std::vector<std::string> args;
  bool args_subset = false;
  // False when the component was removed: then it holds once no process of it runs.
  bool present = true;
  std::optional<HealthEndpoint> health;
  // The component's processes before the write. None of them may still run afterwards.
  std::vector<ProcessInfo> before;
  // Once the check holds, the same process must go on passing it this long before it counts
  // (the kubelet: KubeletSettings::settle). A new process meanwhile starts the wait again.
  absl::Duration settle = absl::ZeroDuration();
  // How long after the write the kubelet has, at most, to end every one of `before`: the old
  // pod's termination grace plus the kubelet's manifest re-list. One still running after that
  // was never asked to stop (a kubelet drops a change made before it has read all its pod
  // sources, kubernetes#112814), and Wait's `outlived` is called. Zero: never.
  absl::Duration stop_within = absl::ZeroDuration();
};

// Where `component` serves HTTPS, from its flags (`flag("secure-port")`, `flag("bind-address")`;
// nullopt for a flag not given): its --secure-port (default 10257 kube-controller-manager, 10258
// cloud-controller-manager, 10259 kube-scheduler, 6443 kube-apiserver) at its --bind-address
// (0.0.0.0, :: or unset: 127.0.0.1), path /healthz (/livez for kube-apiserver). nullopt for
// --secure-port=0 and for components without a known endpoint (etcd).
std::optional<HealthEndpoint> ComponentEndpoint(
    std::string_view component,
    const std::function<std::optional<std::string>(std::string_view)>& flag);

// The basenames of argv[0] a component's process runs as: the component's name; for the
// cloud-controller-manager also the AWS image's entrypoint, /bin/aws-cloud-controller-manager.
std::vector<std::string> BinariesOf(std::string_view component);
// Whether argv[0]'s basename is one of `binaries`.
bool IsProcessOf(const ProcessInfo& process, const std::vector<std::string>& binaries);

// The check for `component`, whose container `container` of `pod` was just written (or, with
// `pod` nullptr, removed): argv from its command and args; health on its --secure-port (default
// 10257 kube-controller-manager, 10258 cloud-controller-manager, 10259 kube-scheduler, 6443
// kube-apiserver) at its --bind-address (0.0.0.0, :: or unset → 127.0.0.1), path /healthz
// (/livez for kube-apiserver), HTTPS.
ComponentCheck CheckForManifest(std::string_view component, const StaticPod* pod, size_t container);
// The kubelet's health endpoint with its defaults (--healthz-bind-address 127.0.0.1,
// --healthz-port 10248): http://127.0.0.1:10248/healthz.
HealthEndpoint DefaultKubeletHealth();
// The kubelet after its flags file changed: every flag in `flags` on its command line; health on
// `health` (the settings' kubelet.healthzUrl); healthy for `settle` (kubelet.settle) before it
// counts.
ComponentCheck CheckForKubelet(const std::vector<std::string>& flags,
                               const HealthEndpoint& health = DefaultKubeletHealth(),
                               absl::Duration settle = absl::ZeroDuration());

// The processes of `old` found in `now`, by pid and start time: a pid reused by an unrelated
// process does not count as the old one still running.
std::vector<ProcessInfo> StillRunning(const std::vector<ProcessInfo>& old,
                                      const std::vector<ProcessInfo>& now);

// Whether `process` is one of `check`'s binaries running with the argv `check` asks for.
bool RunsAsChecked(const ComponentCheck& check, const ProcessInfo& process);

struct VerifyOptions {
  // Per component. Above the kubelet's CrashLoopBackOff cap (5 min): a static pod that comes back
  // unchanged within minutes of its last run (a rollback soon after a move) keeps its pod UID and
  // the kubelet's growing back-off, and starts only when that has run out.
  absl::Duration timeout = absl::Minutes(6);
  absl::Duration poll_interval = absl::Seconds(1);   // between looks; bounded, never grows
  // Between looks while an old process still runs and someone waits for the proof that it is
  // gone (Wait's `old_gone`): the coordinator releases the dead manager's leases on that proof,
  // and a successor takes them at its next retry, so every interval here is time with no
  // runner. A look is one read of /proc.
  absl::Duration gone_poll_interval = absl::Milliseconds(50);
  absl::Duration health_timeout = absl::Seconds(5);  // one health request
};

class Verifier {
 public:
  // Borrows all three; they must outlive the verifier.
  Verifier(const ProcessTable& processes, HealthChecker& health, Clock& clock,
           VerifyOptions options);

  // The processes of `check.component` (matched by `check.binaries`) running now.
  absl::StatusOr<std::vector<ProcessInfo>> Running(const ComponentCheck& check) const;

  // Polls until `check` holds (for check.settle with one process) or the timeout passes. OK
  // when it holds; otherwise
  // DeadlineExceeded whose message names the component, how long it waited and the last reason
  // seen: an old process (pid) still running, no process, an argv that differs (the first
  // differing item, expected and found), or the health endpoint's error.
  // `old_gone`, when given, is called once, at the first look that finds none of `check.before`
  // running (never when `check.before` is empty), with the time of that look: the moment the old
  // process is proven gone, which comes before the new one is proven.
  // `outlived`, when given, is called once, at the first look past check.stop_within that finds
  // some of `check.before` still running, with those processes; its error ends the wait with
  // that error, and after it returns OK the wait goes on as before.
  absl::Status Wait(
      const ComponentCheck& check, const std::function<void(absl::Time)>& old_gone = nullptr,
      const std::function<absl::Status(const std::vector<ProcessInfo>&)>& outlived = nullptr);

  // One look, no waiting: OK when `check` holds now, else Unavailable with the reason Wait would
  // report (no process, an argv that differs, the health endpoint's error, ...). Used to report
  // whether a node's components run as their manifests say, outside any move.
  absl::Status CheckNow(const ComponentCheck& check);

 private:
  // Empty when the check holds now, else the reason it does not. `old_running` (optional) is set
  // to the processes of `check.before` that still run, nullopt when the table cannot be read.
  std::string Look(const ComponentCheck& check,
                   std::optional<std::vector<ProcessInfo>>* old_running = nullptr);

  const ProcessTable& processes_;
  HealthChecker& health_;
  Clock& clock_;
  VerifyOptions options_;
};

}  // namespace handoff

#endif  // HANDOFF_AGENT_VERIFY_VERIFIER_H_
