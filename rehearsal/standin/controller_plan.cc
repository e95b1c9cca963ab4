#include "rehearsal/standin/controller_plan.h"

#include <map>

#include "common/base/strings.h"

namespace handoff::standin {
namespace {

constexpr std::string_view kExternal = "external";
// The in-tree AWS provider left kube-controller-manager in 1.27 (kubernetes/kubernetes#115838).
constexpr int kFirstMinorWithoutInTreeAws = 27;
// 1.28 renamed the controllers; the earlier names stay accepted by --controllers as aliases.
constexpr KubeVersion kLastVersionWithOldNames{1, 27, -1};

std::string_view OtherManager(Component component) {
  return leadermigration::ComponentName(component == Component::kKubeControllerManager
                                            ? Component::kCloudControllerManager
                                            : Component::kKubeControllerManager);
}

// IsControllerEnabled (k8s.io/controller-manager app/helper.go): the first explicit mention wins.
bool EnabledByControllersFlag(const std::vector<std::string>& controllers,
                              const std::vector<std::string>& names) {
  bool star = false;
  for (const std::string& entry : controllers) {
    for (const std::string& name : names) {
      if (entry == name) return true;
      if (entry == StrCat("-", name)) return false;
    }
    if (entry == "*") star = true;
  }
  return star;
}

// Why a registered, selected controller would still not start; "" when it starts.
std::string StartBlocker(const ControllerSettings& settings, CloudController controller) {
  const bool in_tree = !settings.cloud_provider.empty() && settings.cloud_provider != kExternal;
  const std::string no_cloud =
      settings.cloud_provider.empty()
          ? std::string("no cloud provider (--cloud-provider is not set)")
          : StrCat("no in-tree cloud provider (--cloud-provider=", settings.cloud_provider, ")");
  if (settings.component == Component::kKubeControllerManager) {
    switch (controller) {
      case CloudController::kService:
      case CloudController::kCloudNodeLifecycle:
        return in_tree ? "" : no_cloud;
      case CloudController::kRoute:
        if (!settings.allocate_node_cidrs || !settings.configure_cloud_routes) {
          return StrCat(
              "routes need --allocate-node-cidrs=true and --configure-cloud-routes=true (",
              settings.allocate_node_cidrs ? "true" : "false", ", ",
              settings.configure_cloud_routes ? "true" : "false", ")");
        }
        return in_tree ? "" : no_cloud;
      case CloudController::kNodeIpam:
        return settings.allocate_node_cidrs ? "" : "--allocate-node-cidrs is not true";
    }
  }
  if (controller == CloudController::kRoute && !settings.configure_cloud_routes) {
    return "--configure-cloud-routes=false";
  }
  return "";
}

absl::Status CheckFatal(const ControllerSettings& settings) {
  const std::string_view component = leadermigration::ComponentName(settings.component);
  if (settings.component == Component::kKubeControllerManager && settings.cloud_provider == "aws" &&
      settings.version.AtLeast(1, kFirstMinorWithoutInTreeAws)) {
    return absl::InvalidArgumentError(
        StrCat("--cloud-provider=aws: ", component, " ", settings.version.ToString(),
               " has no in-tree aws provider (removed in v1.27, kubernetes/kubernetes#115838); use "
               "--cloud-provider=external and the AWS cloud-controller-manager"));
  }
  if (settings.component == Component::kCloudControllerManager &&
      !settings.cloud_provider.empty() && settings.cloud_provider != "aws" &&
      settings.cloud_provider != "aws/v2") {
    return absl::InvalidArgumentError(
        StrCat("--cloud-provider=", settings.cloud_provider,
               ": unknown cloud provider, the AWS cloud-controller-manager supports only 'aws' "
               "and 'aws/v2'"));
  }
  return absl::OkStatus();
}

}  // namespace

std::string_view CanonicalControllerName(CloudController controller) {
  switch (controller) {
    case CloudController::kRoute:
      return "route";
    case CloudController::kService:
      return "service";
    case CloudController::kCloudNodeLifecycle:
      return "cloud-node-lifecycle";
    case CloudController::kNodeIpam:
      return "node-ipam";
  }
  return "route";
}

bool Registers(Component component, const KubeVersion& /*version*/, CloudController controller) {
  return component == Component::kKubeControllerManager || controller != CloudController::kNodeIpam;
}

std::string_view LockName(Lock lock) { return lock == Lock::kMain ? "main" : "migration"; }

std::vector<CloudController> ControllerPlan::RunningUnder(Lock lock) const {
  std::vector<CloudController> controllers;
  for (const ControllerDecision& decision : decisions) {
    if (decision.runs && decision.lock == lock) controllers.push_back(decision.controller);
  }
  return controllers;
}

absl::StatusOr<ControllerPlan> PlanControllers(const ControllerSettings& settings) {
  if (absl::Status fatal = CheckFatal(settings); !fatal.ok()) return fatal;
  const std::string_view component = leadermigration::ComponentName(settings.component);

  ControllerPlan plan;
  plan.migration = settings.enable_leader_migration && settings.leader_elect;
  // name -> whether this component runs it under the migration lease; later entries win.
  std::map<std::string, bool> migrated;
  if (plan.migration) {
    leadermigration::Config config;
    if (settings.migration_config) {
      config = *settings.migration_config;
    } else {
      absl::StatusOr<leadermigration::Config> defaults =
          leadermigration::DefaultConfig(settings.component, settings.version);
      if (!defaults.ok()) return defaults.status();
      config = *std::move(defaults);
    }
    plan.migration_lease = config.leader_name;
    for (const leadermigration::ControllerLeader& leader : config.controller_leaders) {
      migrated[leader.name] =
          leader.component == component || leader.component == leadermigration::kAnyComponent;
    }
  }

  for (CloudController controller : leadermigration::kCloudControllers) {
    ControllerDecision decision;
    decision.controller = controller;
    decision.name =
        leadermigration::ControllerName(settings.component, settings.version, controller);
    std::vector<std::string> names = {decision.name};
    if (settings.version.AtLeast(1, 28)) {
      names.push_back(leadermigration::ControllerName(settings.component, kLastVersionWithOldNames,
                                                      controller));
    }

    if (!Registers(settings.component, settings.version, controller)) {
      decision.reason =
          StrCat(component, " ", settings.version.ToString(), " does not register this controller");
      plan.decisions.push_back(std::move(decision));
      continue;
    }
    if (plan.migration) {
      auto listed = migrated.find(decision.name);
      if (listed == migrated.end()) {
        decision.reason = "not in the Leader Migration configuration";
      } else if (listed->second) {
        decision.lock = Lock::kMigration;
        decision.reason =
            StrCat("assigned to ", component, " (or \"*\") by the Leader Migration configuration");
      } else {
        decision.reason = StrCat("assigned to ", OtherManager(settings.component),
                                 " by the Leader Migration configuration");
        plan.decisions.push_back(std::move(decision));
        continue;
      }
    } else {
      decision.reason = settings.enable_leader_migration
                            ? "Leader Migration is off without leader election"
                            : "no Leader Migration";
    }
    if (!EnabledByControllersFlag(settings.controllers, names)) {
      decision.reason = StrCat("disabled by --controllers=", StrJoin(settings.controllers, ","));
      plan.decisions.push_back(std::move(decision));
      continue;
    }
    if (std::string blocker = StartBlocker(settings, controller); !blocker.empty()) {
      decision.reason = std::move(blocker);
      plan.decisions.push_back(std::move(decision));
      continue;
    }
    if ((controller == CloudController::kRoute || controller == CloudController::kNodeIpam) &&
        StripWhitespace(settings.cluster_cidr).empty()) {
      return absl::InvalidArgumentError(
          StrCat("--cluster-cidr is empty but ", component, " would start ", decision.name,
                 ", which then fails (\"invalid CIDR address\"); set --cluster-cidr, or turn the "
                 "controller off (",
                 controller == CloudController::kRoute ? "--configure-cloud-routes=false"
                                                       : "--allocate-node-cidrs=false",
                 " or --controllers=*,-", decision.name, ")"));
    }
    decision.runs = true;
    plan.decisions.push_back(std::move(decision));
  }
  return plan;
}

}  // namespace handoff::standin
