// The sandbox's simulated kubelet, run mode: runs the static pods of one simulated node as
// processes of the stand-in binary or of the real upstream managers, the way a kubelet runs
// them as containers.
//
// - Manifests: --pod-manifest-path under the node's root, watched with inotify and re-listed
//   every --file-check-frequency (pod_spec.h has the file rules).
// - Each pod's first container runs the program PodBinaryFor (pod_binaries.h) picks for its
//   image: --standin unless --real-bin-dir holds a real binary for it. The stand-in is exec'ed
//   with the container's argv (argv[0] unchanged, so the process shows the component's name)
//   and the environment of PodEnvironment. A real binary is started through the pod-exec helper
//   (pod_exec.h): its own mount and UTS namespaces, the hostPath volumes bound at their
//   mountPaths, hostname = the node's name, argv exactly the container's, the environment of
//   ContainerEnvironment (the container's env). Either runs in a session of its own, with
//   stdout and stderr appended to <root>/var/log/pods/<pod>.log. hostPath volumes are checked
//   (File, Directory) or created (FileOrCreate, DirectoryOrCreate) under the node's root first,
//   as the kubelet's hostPath plugin does.
// - A changed manifest (another hash) stops the old process (SIGTERM, SIGKILL after 2s) and
//   starts the new one once the old has exited; a removed one stops it; a process that exits by
//   itself is restarted under CrashLoopBackOff (pod_sync.h).
// - Pods are started with posix_spawn(POSIX_SPAWN_SETSID), not a double fork: the kubelet that
//   starts a pod stays its parent while it runs, so it reaps it and records how it ended
//   ("signal 9"); once that kubelet exits the pod is reparented to the nearest child subreaper
//   (the sandbox's orchestrator, which must reap it; see kubelet_control.h) or init. A pod
//   adopted from an earlier kubelet is not a child: its exit is seen through its pidfd and
//   recorded with status "unknown".
// - Pods outlive the kubelet: it records them in <root>/var/lib/kubelet/sandbox-pods.json and a
//   new kubelet adopts those still running (same pid and start time), replacing any whose
//   manifest changed meanwhile.
// - Exits are watched with pidfds; each start and exit is appended to --records as a
//   process-start / process-exit run record (the stand-in cannot record its own SIGKILL).
// - /healthz on --healthz-bind-address:--healthz-port answers "ok", with header
//   X-Sandbox-Kubelet-Pid naming this process.
// - Its pid goes to <root>/run/sandbox-kubelet.pid; the node's process view
//   (<root>/run/sandbox-proc, see kubelet_options.h) lists it and its pods.
// - SIGTERM or SIGINT: it exits, leaving the pods running.
#ifndef HANDOFF_REHEARSAL_KUBELET_SANDBOX_KUBELET_H_
#define HANDOFF_REHEARSAL_KUBELET_SANDBOX_KUBELET_H_

#include "absl/status/status.h"
#include "rehearsal/kubelet/kubelet_options.h"

namespace handoff::sandbox {

// Runs until SIGTERM or SIGINT; OK then. An error when the node cannot be served (another
// kubelet holds the node's lock, the health port cannot be bound, the root is not writable).
// Blocks SIGTERM and SIGINT in the calling thread and takes them as every handoff daemon does
// (common/system/service_lifecycle.h): call it before any other thread exists.
absl::Status RunSandboxKubelet(const KubeletOptions& options);

}  // namespace handoff::sandbox

#endif  // HANDOFF_REHEARSAL_KUBELET_SANDBOX_KUBELET_H_
