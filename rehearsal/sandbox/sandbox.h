// `handoffctl sandbox`: the whole migration rehearsed on one machine, with no cluster and no
// root-owned paths. It builds N simulated kubeadm 1.26 control-plane nodes (temp roots with the
// real file layout), serves the fake Kubernetes API, runs a simulated kubelet per node whose
// static pods are stand-in controller-managers taking real leases, one handoff-agent per node
// (each with its own certificate) and a handoff-coordinator; then the rollout to N+1 with a live
// progress view, a check of the nodes' providerIDs, and the rollback to N. An independent
// monitor checks throughout, from the stand-ins' own records, that no cloud controller ever runs
// in two processes at once, and measures every handover gap against the lease duration.
// The cluster under all this is the model one (fake API server, stand-in managers) or the real
// one (cluster.h), chosen by SandboxOptions::cluster.
#ifndef HANDOFF_REHEARSAL_SANDBOX_SANDBOX_H_
#define HANDOFF_REHEARSAL_SANDBOX_SANDBOX_H_

#include <functional>
#include <iosfwd>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "rehearsal/sandbox/cluster.h"

namespace handoff::sandbox {

// What --fault injects (each must still end with the invariant held):
//   agent-kill        kill -9 an agent while its node's move is under way; restart it
//   coordinator-kill  kill -9 the coordinator mid-rollout; restart it
//   unhealthy         a cloud-controller-manager that never gets healthy: the agent rolls its node
//                     back, the rollout halts, the operator (the sandbox) rolls everything back
//   stray-backup      a stray kube-controller-manager.yaml.bak in a manifest dir: the agent refuses
//                     the node; the operator removes the file and restarts that agent
//   kubelet-kill      (kubeadm) kill -9 the moving node's kubelet mid-move; its service manager
//                     starts it again after its restart delay
//   kubelet-unsynced  (kubeadm) the moving node's kubelet restarted cut off from the API server
//                     before the rollout: it never reads all its pod sources, so it drops every
//                     manifest change (kubernetes#112814) and the agent must stop the old
//                     process and restart the kubelet itself; reconnected once the move is done
// On a worker (each needs workers and a goal that takes them external: not --goal prepared):
//   worker-agent-kill    kill -9 a worker's agent while its kubelet's move is under way; restart
//                        it: the agent puts the node back and the batch sends the move again
//   worker-kubelet-kill  (kubeadm) kill -9 a worker's kubelet mid-move; its service manager starts
//                        it again
//   credential-provider  a worker's credential provider answers the agent's check before the move
//                        and fails from then on: the agent's proof after the kubelet's restart
//                        fails, it rolls the node back by itself, the failure budget pauses the
//                        rollout; the operator (the sandbox) puts the provider back and resumes
// They strike together in one rollout, each on a worker of its own in the order given. Each ends
// with its worker wholly moved or wholly as it was, never between.
enum class Fault {
  kNone,
  kAgentKill,
  kCoordinatorKill,
  kUnhealthy,
  kStrayBackup,
  kKubeletKill,
  kKubeletUnsynced,
  kPreflight,
  kWorkerAgentKill,
  kWorkerKubeletKill,
  kCredentialProvider
};

// Whether the fault strikes a worker.
bool IsWorkerFault(Fault fault);

// How far each rollout of a Leader Migration rehearsal goes before it is rolled back: migrated
// (every node on the cloud-controller-manager), or prepared (every kube-controller-manager with
// Leader Migration: one move per node each way, the shortest path a fault can hit).
enum class SandboxGoal { kMigrated, kPrepared };

struct SandboxOptions {
  int nodes = 3;
  // --workers: worker nodes, each a kubelet with --cloud-provider=aws and a workload, moved to
  // external after the control plane and back before it. -1 = the cluster's default: 2 on the
  // model and kubeadm clusters (none for kubeadm's replacement, unsafe-order and --kubeadm-upgrade
  // runs), none on the real cluster (which has no workers).
  int workers = -1;
  std::string dir;  // "" = a new directory under $TMPDIR (or /tmp)
  bool keep = false;
  // The scenarios, one after another on the same cluster, each a rollout with its fault and the
  // rollback to in-tree (the worker faults in one rollout together); none = one rollout without
  // a fault.
  std::vector<Fault> faults;
  SandboxGoal goal = SandboxGoal::kMigrated;
  ClusterKind cluster = ClusterKind::kModel;
  // Where handoff-coordinator, handoff-agent, handoff-standin and handoff-sandbox-kubelet are;
  // "" = the directory of the running handoffctl, the helpers there or in ../lib/handoff
  // (sandbox_binaries.h).
  std::string bin_dir;
  // Test-only: migrate one node straight to `migrated` (a cloud-controller-manager with Leader
  // Migration) while the others still run the in-tree controllers without it — the unsafe order
  // the coordinator forbids — to prove the monitor catches it. Exit 1 when it does.
  bool unsafe_order = false;
  // The coordinator's --lease-release: true releases a stopped holder's leases on the proof that
  // it exited, false leaves them to expire (to compare the handover gaps with and without).
  bool lease_release = true;
  // AWS's downtime path (handoffctl start --strategy downtime) instead of Leader Migration: every
  // kube-controller-manager stopped, every node switched to external, then the
  // cloud-controller-manager started; the summary reports the outage the coordinator measured.
  bool downtime = false;
  // --kubeadm-upgrade (kubeadm cluster): what comes after the move instead of the rollback. The
  // rollout to migrated, `finalize`, `handoffctl kubeadm-config apply`, the real `kubeadm upgrade
  // apply v1.27.16` on the first node and `kubeadm upgrade node` on the others (every node must
  // stay external with its cloud-controller-manager), then one more machine joined with
  // `kubeadm join --control-plane` at v1.27.16, `handoffctl nodes add`ed and brought to
  // finalized by the coordinator.
  bool kubeadm_upgrade = false;
  // --strategy replace (kubeadm cluster): `handoffctl start --strategy replace` and `rollback
  // --strategy replace`, the sandbox acting as the operator's automation on what `status` asks
  // for: each node of 1.26 replaced by a machine joined at 1.27 (`kubeadm join --control-plane`),
  // the old one `kubeadm reset` and its Node deleted; then back, each replaced by a machine
  // joined at 1.26 with Leader Migration. Twice as many spare machines as nodes.
  bool replace = false;
  // --network (kubeadm cluster): its /24, "A.B.C.0/24"; "" = 172.31.250.0/24. Runs on networks
  // of their own can go at once.
  std::string network;
  absl::Duration timeout = absl::Minutes(5);
};

// Exit codes.
inline constexpr int kSandboxHeld = 0;    // the rollout and rollback completed, invariant held
inline constexpr int kSandboxBroken = 1;  // the invariant broke, or a step did not complete
inline constexpr int kSandboxSetupFailed = 2;

// Undoes what earlier kubeadm sandbox runs that died (SIGKILL, a crash) left on this host (their
// records in /run/handoff-sandbox), which the next kubeadm run also does before it starts. Says a
// line per run cleaned on `out`; 0 when nothing is left, 1 when something could not be undone.
int CleanUpSandboxes(std::ostream& out, std::ostream& err);

// Runs the rehearsal, printing progress and the summary on `out`, problems on `err`. Polls
// `interrupted` (SIGINT/SIGTERM) and tears everything down when it turns true.
int RunSandbox(const SandboxOptions& options, std::ostream& out, std::ostream& err,
               const std::function<bool()>& interrupted);

// "agent-kill", ... ; std::nullopt-like kNone for "" and false for an unknown name.
bool ParseFault(const std::string& name, Fault* fault);
// "agent-kill,coordinator-kill": every fault of a comma-separated list, in order ("" = none);
// false when one is unknown or repeated.
bool ParseFaults(const std::string& list, std::vector<Fault>* faults);
// The name ParseFault reads ("" for kNone).
std::string FaultName(Fault fault);

}  // namespace handoff::sandbox

#endif  // HANDOFF_REHEARSAL_SANDBOX_SANDBOX_H_
