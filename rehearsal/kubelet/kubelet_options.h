// The simulated kubelet's command line and the files it keeps under its node's root.
//
// Flags (the real kubelet's names where it has them; pflag forms "--flag=value" and
// "--flag value"; the last occurrence wins, as flags from kubeadm-flags.env come after the
// base flags):
//   --root DIR                       the node's root directory (required)
//   --pod-manifest-path PATH         host path under --root (default /etc/kubernetes/manifests)
//   --healthz-bind-address ADDR      default 127.0.0.1
//   --healthz-port PORT              default 10248; 0 picks a free port (tests)
//   --standin PATH                   the program the pods run (required)
//   --real-bin-dir DIR               the components dir's bin/: pods whose image has a real
//                                    upstream binary there run it instead (pod_binaries.h)
//   --records FILE                   run-records file (rehearsal/monitor/run_record.h)
//   --node-name NAME                 default: the basename of --root
//   --file-check-frequency DURATION  manifest re-list period (default 1s; the real kubelet's is
//                                    20s)
//   --pod-restart-delay DURATION     a changed pod starts this long after its predecessor
//                                    stopped (default 10s, the real kubelet's retry back-off)
//   --pod-restart-jitter FRACTION    ... plus up to this fraction of it at random (default 0.5)
//   --kubeconfig PATH                host path under --root: with it the kubelet renews its
//                                    node's Lease in kube-node-lease (node_heartbeat.h)
//   --node-lease-renew-interval DURATION  how often (default 10s, the real kubelet's)
// Every other flag (--container-runtime-endpoint, --cloud-provider, ...) is accepted and ignored.
#ifndef HANDOFF_REHEARSAL_KUBELET_KUBELET_OPTIONS_H_
#define HANDOFF_REHEARSAL_KUBELET_KUBELET_OPTIONS_H_

#include <chrono>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "rehearsal/kubelet/pod_sync.h"

namespace handoff::sandbox {

// Host paths under the node's root.
inline constexpr char kKubeletPidFile[] = "/run/sandbox-kubelet.pid";
// {"binary": "...", "args": [...]}: how `start` ran the kubelet, less the kubeadm-flags.env
// flags, so that `restart` can run it again the way systemd re-runs ExecStart.
inline constexpr char kKubeletBaseArgsFile[] = "/run/sandbox-kubelet.json";
// "<pid> <url>": the health URL the running kubelet bound (its port when --healthz-port=0).
inline constexpr char kKubeletHealthzFile[] = "/run/sandbox-kubelet-healthz";
inline constexpr char kKubeletLockFile[] = "/run/sandbox-kubelet.lock";
inline constexpr char kKubeletLogFile[] = "/var/log/sandbox-kubelet.log";
inline constexpr char kKubeletFlagsFile[] = "/var/lib/kubelet/kubeadm-flags.env";
inline constexpr char kPodLogDir[] = "/var/log/pods";
// The node's own view of /proc: one symlink <pid> → /proc/<pid> for the kubelet and for each
// pod process, so that handoff-agent --proc-root <root>/run/sandbox-proc sees this node's
// processes only, not every simulated node's.
inline constexpr char kProcViewDir[] = "/run/sandbox-proc";
// Where each real pod mounts its own root tmpfs, in its own mount namespace (pod_exec.h).
inline constexpr char kPodRootDir[] = "/run/sandbox-pod-root";

struct KubeletOptions {
  std::string root;  // absolute, without a trailing slash
  std::string pod_manifest_path = "/etc/kubernetes/manifests";
  std::string healthz_bind_address = "127.0.0.1";
  int healthz_port = 10248;
  std::string standin;       // absolute
  std::string real_bin_dir;  // absolute; "" = every pod runs the stand-in
  std::string records;  // "" = write no records
  std::string node_name;
  std::chrono::milliseconds file_check_frequency{1000};
  // A changed static pod's start after its predecessor stopped (pod_sync.h
  // kChangedPodRestartDelay): the real kubelet's, or a shorter one for a sandbox whose leases
  // are shorter than the real managers'.
  std::chrono::milliseconds pod_restart_delay{
      std::chrono::duration_cast<std::chrono::milliseconds>(kChangedPodRestartDelay)};
  double pod_restart_jitter = kChangedPodRestartJitter;
  std::string kubeconfig;  // a path under `root`; "" = no heartbeat
  std::chrono::milliseconds node_lease_renew_interval{10000};
};

// Parses `args` (without argv[0]). Relative --root, --standin, --real-bin-dir and --records are
// taken from the working directory. Errors name the flag.
absl::StatusOr<KubeletOptions> ParseKubeletOptions(const std::vector<std::string>& args);

}  // namespace handoff::sandbox

#endif  // HANDOFF_REHEARSAL_KUBELET_KUBELET_OPTIONS_H_
