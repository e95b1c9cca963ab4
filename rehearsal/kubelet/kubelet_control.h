// Starting, stopping and restarting a simulated node's kubelet the way systemd handles the real
// one: the kubelet runs detached (its own session, reparented to the nearest subreaper or init
// once the starting command exits), its command line is the base flags followed by
// KUBELET_KUBEADM_ARGS from <root>/var/lib/kubelet/kubeadm-flags.env (the kubeadm drop-in's
// ExecStart), and argv[0] is "kubelet", so that handoff-agent recognises it.
//
// The process that runs the sandbox should be a child subreaper (prctl(PR_SET_CHILD_SUBREAPER))
// that reaps what is reparented to it: kubelets outlive the commands that start them, and pods
// outlive their kubelets. Unreaped, they stay zombies (harmless to the kubelet, which watches
// pidfds, and invisible to handoff-agent, which skips empty command lines, but never freed).
#ifndef HANDOFF_REHEARSAL_KUBELET_KUBELET_CONTROL_H_
#define HANDOFF_REHEARSAL_KUBELET_KUBELET_CONTROL_H_

#include <chrono>
#include <iosfwd>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace handoff::sandbox {

struct ControlOptions {
  // How long a new kubelet may take to answer /healthz.
  std::chrono::milliseconds health_timeout{30'000};
  // How long a kubelet may take to exit after SIGTERM before it is sent SIGKILL.
  std::chrono::milliseconds stop_timeout{10'000};
};

// The kubelet's base command line as `start` recorded it (kKubeletBaseArgsFile).
struct KubeletBaseArgs {
  std::string binary;             // the sandbox kubelet executable
  std::vector<std::string> args;  // flags, without argv[0]
};

// Records `args` (the base flags; they must name --root) as the node's base command line, then
// starts the kubelet with them and waits until its /healthz answers. FailedPrecondition when a
// kubelet already runs on that root. `binary` is the executable to run (this program).
absl::Status StartKubelet(const std::string& binary, const std::vector<std::string>& args,
                          const ControlOptions& options, std::ostream& out);

// SIGTERM to the node's kubelet, SIGKILL after options.stop_timeout; waits for it to exit. OK
// when none runs. The pods keep running unless `stop_pods`: then each recorded pod process is
// sent SIGTERM, then SIGKILL after 2s, and its process-exit recorded (teardown).
absl::Status StopKubelet(const std::string& root, bool stop_pods, const ControlOptions& options,
                         std::ostream& out);

// StopKubelet (pods kept), then a new kubelet from the recorded base command line and the
// flags file as it is now; waits until its /healthz answers. The node's pods are adopted by it.
absl::Status RestartKubelet(const std::string& root, const ControlOptions& options,
                            std::ostream& out);

// The argv a kubelet started now on `root` would get: {"kubelet", base args..., kubeadm flags...}.
absl::StatusOr<std::vector<std::string>> KubeletArgv(const std::string& root,
                                                     KubeletBaseArgs* base);

}  // namespace handoff::sandbox

#endif  // HANDOFF_REHEARSAL_KUBELET_KUBELET_CONTROL_H_
