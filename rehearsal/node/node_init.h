// The first process of a kubeadm sandbox node (`handoff-sandbox-node boot`): it makes the node's
// namespaces and mounts (node_spec.h) and then plays the node's init and systemd for the two
// services a kubeadm node runs outside containers:
//   containerd  started at once with /etc/containerd/config.toml; restarted 1 s after it exits;
//   kubelet     started as kubeadm's drop-in starts it (KubeletCommand) once kubeadm has written
//               /var/lib/kubelet/config.yaml, with its flags read again at each start; restarted
//               spec.kubelet_restart_delay after it exits by itself (kubeadm's RestartSec=10).
// It reaps every orphan of the node, as PID 1 must. The kernel kills every process of the node
// when it exits, so that nothing of a node outlives it, and it dies with the process that started
// it (PR_SET_PDEATHSIG), so that nothing outlives a crashed sandbox either.
//
// Control: one line on the unix socket kControlSocket, one line back:
//   restart-kubelet   what `systemctl restart kubelet` does: SIGTERM, wait for the exit, start
//                     again at once; "ok <pid>" once the new kubelet runs
//   kill-kubelet      SIGKILL; the kubelet starts again after its restart delay, as after a
//                     crash; "ok <pid>" with the killed pid
//   stop-kubelet      what `systemctl stop kubelet` does (kubeadm reset's first step on a host
//                     with systemd): SIGTERM, and not started again until restart-kubelet;
//                     "ok <pid>" once it has exited ("ok -" when it was not running)
//   status            "kubelet <pid|-> containerd <pid|->"
// Anything else: "error <why>".
#ifndef HANDOFF_REHEARSAL_NODE_NODE_INIT_H_
#define HANDOFF_REHEARSAL_NODE_NODE_INIT_H_

#include <sys/types.h>

#include "absl/status/status.h"
#include "rehearsal/node/node_spec.h"

namespace handoff::sandbox::node {

// The host-side marker files of a booted node, under <dir>/.node/: "pid" holds the host pid of
// the node's first process (written by `boot` once it forked it), "ready" appears once the mounts
// are made and the control socket listens.
std::string PidFile(const BootSpec& spec);
std::string ReadyFile(const BootSpec& spec);

// `handoff-sandbox-node boot`: unshares the namespaces, forks the node's first process and
// waits for it; SIGTERM and SIGINT are passed on to it. Returns its exit code (or 128+signal).
// Returns 1 with a message on stderr when the namespaces cannot be made.
int BootNode(const BootSpec& spec);

// The node's first process, once the namespaces exist: mounts, then the services until SIGTERM
// or SIGINT (which stop the kubelet and containerd, then return 0). Single-threaded.
int RunNodeInit(const BootSpec& spec);

}  // namespace handoff::sandbox::node

#endif  // HANDOFF_REHEARSAL_NODE_NODE_INIT_H_
