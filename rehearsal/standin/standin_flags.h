// The stand-in's command line: which component it plays (from argv[0], as the sandbox's kubelet
// execs it with the manifest's command unchanged) and the flags that component takes.
//
// Flags are read the way the real components' pflag command lines read them: "--flag=value" and
// "--flag value" (a single leading '-' works too), booleans bare or "=true|false" (never a
// separate value), a repeated flag's last value wins, --controllers accumulates. Flags the
// stand-in does not model are accepted and ignored (listed in `ignored_flags`); an unknown flag
// without '=' takes the next argument as its value unless that starts with '-'. A positional
// argument is an error, as it is for the real commands ("does not take any arguments").
//
// Pure. Thread-compatible.
#ifndef HANDOFF_REHEARSAL_STANDIN_STANDIN_FLAGS_H_
#define HANDOFF_REHEARSAL_STANDIN_STANDIN_FLAGS_H_

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "agent/leadermigration/config.h"
#include "common/base/kube_version.h"

namespace handoff::standin {

// The component a stand-in plays. kWorkload is a worker's workload container: it runs until it is
// stopped and serves nothing, so that a worker's move can be seen to leave it running.
enum class Role {
  kKubeControllerManager,
  kCloudControllerManager,
  kKubeApiserver,
  kKubeScheduler,
  kWorkload
};

// basename(argv[0]): "kube-controller-manager", "cloud-controller-manager" or
// "aws-cloud-controller-manager" (the AWS image's entrypoint), "kube-apiserver",
// "kube-scheduler", "workload". InvalidArgument naming the name for anything else.
absl::StatusOr<Role> RoleFromArgv0(std::string_view argv0);
// "kube-controller-manager", "cloud-controller-manager", "kube-apiserver", "kube-scheduler",
// "workload": the `component` of its run records.
std::string_view RoleName(Role role);
// The manager a controller-manager role is; nullopt for kube-apiserver and kube-scheduler.
std::optional<leadermigration::Component> ManagerOf(Role role);
// The version a role plays when the sandbox names none: v1.26 for kube-controller-manager (the
// last with the in-tree AWS provider), v1.27 for cloud-controller-manager, v1.26 otherwise.
KubeVersion DefaultVersion(Role role);

struct StandinOptions {
  std::string kubeconfig;  // --kubeconfig, a path inside the container
  // --leader-elect and its timings (client-go's defaults).
  bool leader_elect = true;
  absl::Duration lease_duration = absl::Seconds(15);
  absl::Duration renew_deadline = absl::Seconds(10);
  absl::Duration retry_period = absl::Seconds(2);
  std::string resource_lock = "leases";
  std::string resource_name;  // the component's main lease: its own name
  std::string resource_namespace = "kube-system";
  // Cloud and controllers.
  std::string cloud_provider;  // --cloud-provider, "" = none
  std::vector<std::string> controllers{"*"};
  bool allocate_node_cidrs = false;
  bool configure_cloud_routes = true;
  std::string cluster_cidr;
  // Leader Migration.
  bool enable_leader_migration = false;
  std::string leader_migration_config;  // a path inside the container; "" = the default config
  // Serving.
  std::string bind_address = "0.0.0.0";
  int secure_port = 0;  // the role's default (10257, 10258, 6443, 10259); 0 from the flag = off

  // Flags accepted without effect, as written ("--v=2", "--profiling").
  std::vector<std::string> ignored_flags;
};

// Parses the arguments after argv[0] for `role`. InvalidArgument naming the flag (and the value)
// for a malformed value, a value-taking flag without one, a positional argument, an unsupported
// --leader-elect-resource-lock, or timings client-go refuses (lease duration must exceed the
// renew deadline, which must exceed 1.2 × the retry period; all positive).
absl::StatusOr<StandinOptions> ParseStandinFlags(Role role, const std::vector<std::string>& args);

}  // namespace handoff::standin

#endif  // HANDOFF_REHEARSAL_STANDIN_STANDIN_FLAGS_H_
