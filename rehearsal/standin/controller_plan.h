// Which cloud controllers a controller manager runs, and under which lease: the decision the real
// managers make from their flags and the LeaderMigrationConfiguration, as a pure function.
//
// The rules, each from its upstream source:
//  1. Registration. kube-controller-manager registers route, service, cloud-node-lifecycle and
//     nodeipam (cmd/kube-controller-manager/app/controllermanager.go NewControllerInitializers /
//     NewControllerDescriptors); cloud-controller-manager registers route, service and
//     cloud-node-lifecycle (k8s.io/cloud-provider app DefaultInitFuncConstructors; also
//     cloud-node, which never migrates and which the records do not track), no nodeipam. Names
//     are per component and version (leadermigration::ControllerName: 1.28 renamed them).
//  2. Leader Migration is active when --enable-leader-migration is set AND leader election is on
//     (k8s.io/controller-manager pkg/leadermigration/util.go Enabled); --leader-migration-config
//     without the enable flag is ignored. The configuration is the file, or the built-in default
//     (leadermigration::DefaultConfig) when no file is given. When active, the manager campaigns
//     for the migration lease (leaderName, in --leader-elect-resource-namespace) after it holds
//     its main lease, whatever controllers that lease would run.
//  3. The filter (pkg/leadermigration/migrator.go NewLeaderMigrator), by the controller's
//     registered name compared exactly: a name listed with this component or "*" runs under the
//     migration lease (ControllerMigrated); a name listed with the other component does not run
//     here at all (ControllerUnowned); a name not listed runs under the main lease as without
//     migration (ControllerNonMigrated). A config name this manager does not register does
//     nothing. When a name is listed twice the later entry wins (a map is filled in order).
//  4. --controllers (k8s.io/controller-manager app/helper.go IsControllerEnabled): the first
//     entry naming the controller ("name" or "-name") decides; otherwise "*" enables it
//     (none of these four is disabled by default); no "*" and no mention disables it. From 1.28
//     the pre-1.28 names are accepted as aliases.
//  5. Start conditions (each InitFunc returns "not started"):
//     kube-controller-manager: service and cloud-node-lifecycle need an in-tree cloud provider
//     (--cloud-provider set and not "external"); route needs that and --allocate-node-cidrs and
//     --configure-cloud-routes (cmd/kube-controller-manager/app/core.go startRouteController);
//     nodeipam needs only --allocate-node-cidrs — it runs with --cloud-provider=external too
//     (startNodeIpamController), which is why a migrated node disables it with --controllers.
//     cloud-controller-manager: route needs only --configure-cloud-routes (default true;
//     kubernetes/kubernetes#97029, k8s.io/cloud-provider app/core.go startRouteController).
//  6. Fatal configurations: route or nodeipam starting without --cluster-cidr fails the manager
//     ("invalid CIDR address", processCIDRs); kube-controller-manager 1.27+ has no in-tree aws
//     provider (kubernetes/kubernetes#115838: "unknown cloud provider"); the AWS
//     cloud-controller-manager knows only aws and aws/v2 (cloud-provider-aws
//     cmd/aws-cloud-controller-manager/main.go). The real managers fail some of these only once
//     they hold a lease; the stand-in refuses them at startup.
//
// Pure. Thread-compatible.
#ifndef HANDOFF_REHEARSAL_STANDIN_CONTROLLER_PLAN_H_
#define HANDOFF_REHEARSAL_STANDIN_CONTROLLER_PLAN_H_

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "agent/leadermigration/config.h"
#include "common/base/kube_version.h"

namespace handoff::standin {

using leadermigration::CloudController;
using leadermigration::Component;

// "route", "service", "cloud-node-lifecycle", "node-ipam": the names run records use, whatever
// the component and version.
std::string_view CanonicalControllerName(CloudController controller);

// Whether `component` at `version` registers `controller` (rule 1).
bool Registers(Component component, const KubeVersion& version, CloudController controller);

// The lease a running controller depends on; "main" / "migration" in run records.
enum class Lock { kMain, kMigration };
std::string_view LockName(Lock lock);

struct ControllerSettings {
  Component component = Component::kKubeControllerManager;
  KubeVersion version{1, 26, -1};
  std::string cloud_provider;
  std::vector<std::string> controllers{"*"};
  bool allocate_node_cidrs = false;
  bool configure_cloud_routes = true;
  std::string cluster_cidr;
  bool leader_elect = true;
  bool enable_leader_migration = false;
  // The parsed --leader-migration-config; nullopt = the default configuration.
  std::optional<leadermigration::Config> migration_config;
};

struct ControllerDecision {
  CloudController controller = CloudController::kRoute;
  std::string name;  // as this component and version register it
  bool runs = false;
  Lock lock = Lock::kMain;  // meaningful when `runs`
  std::string reason;       // why it runs under that lock, or why it does not run
};

struct ControllerPlan {
  bool migration = false;       // rule 2: Leader Migration active
  std::string migration_lease;  // its leaderName, when active
  // One decision per cloud controller, in leadermigration::kCloudControllers order.
  std::vector<ControllerDecision> decisions;

  // The controllers that run under `lock`, in that order.
  std::vector<CloudController> RunningUnder(Lock lock) const;
};

// Applies rules 1-6. Errors (InvalidArgument, naming the flag) for the fatal configurations of
// rule 6, and (FailedPrecondition) when migration is active without a configuration on a version
// that has no default (before 1.22).
absl::StatusOr<ControllerPlan> PlanControllers(const ControllerSettings& settings);

}  // namespace handoff::standin

#endif  // HANDOFF_REHEARSAL_STANDIN_CONTROLLER_PLAN_H_
