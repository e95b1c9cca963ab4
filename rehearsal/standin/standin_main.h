// handoff-standin: one binary that plays kube-controller-manager, cloud-controller-manager
// (also as the AWS image's /bin/aws-cloud-controller-manager), kube-apiserver and kube-scheduler
// in the sandbox, chosen by basename(argv[0]). The sandbox's kubelet execs it with the manifest's
// command as argv, so /proc/<pid>/cmdline shows the real component's command line.
//
// Controller managers take the flags in standin_flags.h and the environment in
// sandbox_environment.h, elect leaders on the API server in --kubeconfig, run the cloud
// controllers of controller_plan.h under their leases (controller_manager.h), append run records
// and serve HTTPS /healthz on --bind-address:--secure-port. kube-apiserver (/livez, /readyz,
// /healthz on 6443) and kube-scheduler (/healthz, /livez, /readyz on 10259) only serve health.
//
// Logs go to stderr. SIGTERM/SIGINT are taken as every handoff daemon takes them
// (common/system/service_lifecycle.h).
// Exit codes: 0 stopped by SIGTERM or SIGINT (running controllers recorded as stopped,
// "shutdown"; no lease released); 1 a lease was lost ("leaderelection lost", as the real
// managers exit) or the health port cannot be bound; 2 bad configuration: an unknown argv[0],
// a malformed flag or sandbox variable, an unreadable or invalid kubeconfig or
// LeaderMigrationConfiguration (each message names the flag, variable or file).
#ifndef HANDOFF_REHEARSAL_STANDIN_STANDIN_MAIN_H_
#define HANDOFF_REHEARSAL_STANDIN_STANDIN_MAIN_H_

namespace handoff::standin {

inline constexpr int kExitStopped = 0;
inline constexpr int kExitLeaseLost = 1;
inline constexpr int kExitBadConfiguration = 2;

// Everything main() does. Blocks SIGTERM and SIGINT in the calling thread first (call it before
// starting any thread), reads the process environment, and returns the exit code.
int RunStandin(int argc, const char* const* argv);

}  // namespace handoff::standin

#endif  // HANDOFF_REHEARSAL_STANDIN_STANDIN_MAIN_H_
