#include "rehearsal/standin/controller_plan.h"

#include <string>
#include <vector>

#include "common/base/strings.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace handoff::standin {
namespace {

using leadermigration::Config;
using leadermigration::ControllerLeader;
using ::testing::HasSubstr;

constexpr Component kKcm = Component::kKubeControllerManager;
constexpr Component kCcm = Component::kCloudControllerManager;
constexpr char kKcmName[] = "kube-controller-manager";
constexpr char kCcmName[] = "cloud-controller-manager";

Config MigrationConfig(std::vector<ControllerLeader> leaders) {
  Config config;
  config.api_version = "controllermanager.config.k8s.io/v1";
  config.leader_name = "cloud-provider-extraction-migration";
  config.controller_leaders = std::move(leaders);
  return config;
}

// The three cloud controllers under their pre-1.28 names, all given to `component`.
Config OldNames(const std::string& component) {
  return MigrationConfig(
      {{"route", component}, {"service", component}, {"cloud-node-lifecycle", component}});
}

std::string Names(const std::vector<CloudController>& controllers) {
  std::vector<std::string> names;
  for (CloudController controller : controllers) {
    names.emplace_back(CanonicalControllerName(controller));
  }
  return StrJoin(names, ",");
}

struct Row {
  std::string name;
  ControllerSettings settings;
  bool migration = false;
  std::string main;      // canonical names, comma-separated, in plan order
  std::string migrated;  // likewise
};

ControllerSettings Kcm(std::string version, std::string cloud_provider) {
  ControllerSettings settings;
  settings.component = kKcm;
  settings.version = *KubeVersion::Parse(version);
  settings.cloud_provider = std::move(cloud_provider);
  return settings;
}

ControllerSettings Ccm(std::string version) {
  ControllerSettings settings;
  settings.component = kCcm;
  settings.version = *KubeVersion::Parse(version);
  settings.cloud_provider = "aws";
  settings.cluster_cidr = "10.244.0.0/16";
  return settings;
}

ControllerSettings WithCidrs(ControllerSettings settings) {
  settings.allocate_node_cidrs = true;
  settings.cluster_cidr = "10.244.0.0/16";
  return settings;
}

ControllerSettings WithMigration(ControllerSettings settings, std::optional<Config> config) {
  settings.enable_leader_migration = true;
  settings.migration_config = std::move(config);
  return settings;
}

std::vector<Row> Rows() {
  std::vector<Row> rows;
  auto add = [&rows](std::string name, ControllerSettings settings, bool migration,
                     std::string main, std::string migrated) {
    rows.push_back(
        {std::move(name), std::move(settings), migration, std::move(main), std::move(migrated)});
  };
  // kube-controller-manager 1.26, no Leader Migration (in-tree).
  add("kcm126_aws", Kcm("v1.26.5", "aws"), false, "service,cloud-node-lifecycle", "");
  add("kcm126_aws_cidrs", WithCidrs(Kcm("v1.26.5", "aws")), false,
      "route,service,cloud-node-lifecycle,node-ipam", "");
  {
    ControllerSettings no_routes = WithCidrs(Kcm("v1.26.5", "aws"));
    no_routes.configure_cloud_routes = false;
    add("kcm126_aws_no_cloud_routes", no_routes, false, "service,cloud-node-lifecycle,node-ipam",
        "");
  }
  add("kcm126_no_provider", Kcm("v1.26.5", ""), false, "", "");
  add("kcm126_external", Kcm("v1.26.5", "external"), false, "", "");
  // nodeipam is not a cloud controller in kube-controller-manager: it runs on external too.
  add("kcm126_external_cidrs", WithCidrs(Kcm("v1.26.5", "external")), false, "node-ipam", "");
  {
    ControllerSettings disabled = Kcm("v1.26.5", "aws");
    disabled.controllers = {"*", "bootstrapsigner", "tokencleaner", "-service"};
    add("kcm126_controllers_minus_service", disabled, false, "cloud-node-lifecycle", "");
    ControllerSettings only = Kcm("v1.26.5", "aws");
    only.controllers = {"service"};
    add("kcm126_controllers_without_star", only, false, "service", "");
    ControllerSettings first_wins = Kcm("v1.26.5", "aws");
    first_wins.controllers = {"-service", "*", "service"};
    add("kcm126_controllers_first_mention_wins", first_wins, false, "cloud-node-lifecycle", "");
  }

  // kube-controller-manager 1.26, prepared (Leader Migration on).
  add("kcm126_prepared", WithMigration(WithCidrs(Kcm("v1.26.5", "aws")), OldNames(kKcmName)), true,
      "node-ipam", "route,service,cloud-node-lifecycle");
  add("kcm126_prepared_wildcard", WithMigration(Kcm("v1.26.5", "aws"), OldNames("*")), true, "",
      "service,cloud-node-lifecycle");
  add("kcm126_default_config", WithMigration(Kcm("v1.26.5", "aws"), std::nullopt), true, "",
      "service,cloud-node-lifecycle");
  add("kcm126_config_for_ccm_runs_nothing_migrated",
      WithMigration(WithCidrs(Kcm("v1.26.5", "aws")), OldNames(kCcmName)), true, "node-ipam", "");
  {
    Config with_nodeipam = OldNames(kKcmName);
    with_nodeipam.controller_leaders.push_back({"nodeipam", "*"});
    add("kcm126_prepared_nodeipam", WithMigration(WithCidrs(Kcm("v1.26.5", "aws")), with_nodeipam),
        true, "", "route,service,cloud-node-lifecycle,node-ipam");
    ControllerSettings no_election = WithMigration(Kcm("v1.26.5", "aws"), OldNames(kKcmName));
    no_election.leader_elect = false;
    add("kcm126_migration_needs_leader_election", no_election, false,
        "service,cloud-node-lifecycle", "");
    ControllerSettings disabled = WithMigration(Kcm("v1.26.5", "aws"), OldNames(kKcmName));
    disabled.controllers = {"*", "-cloud-node-lifecycle"};
    add("kcm126_prepared_controllers_flag_still_applies", disabled, true, "", "service");
  }
  // An external kube-controller-manager with Leader Migration on (the state handoff forbids):
  // it campaigns for the migration lease and runs nothing under it.
  add("kcm127_external_with_migration", WithMigration(Kcm("v1.27.6", "external"), OldNames("*")),
      true, "", "");
  {
    ControllerSettings migrated = WithCidrs(Kcm("v1.27.6", "external"));
    migrated.controllers = {"*", "-nodeipam"};
    add("kcm127_migrated_without_nodeipam", migrated, false, "", "");
  }
  // 1.28 renamed the controllers; --controllers still takes the old names as aliases.
  {
    ControllerSettings migrated = WithCidrs(Kcm("v1.28.2", "external"));
    migrated.controllers = {"*", "-nodeipam"};
    add("kcm128_alias_disables_node_ipam_controller", migrated, false, "", "");
    Config new_names = MigrationConfig({{"node-route-controller", kKcmName},
                                        {"service-lb-controller", kKcmName},
                                        {"cloud-node-lifecycle-controller", kKcmName}});
    add("kcm128_new_names_migrate", WithMigration(WithCidrs(Kcm("v1.28.2", "gce")), new_names),
        true, "node-ipam", "route,service,cloud-node-lifecycle");
    add("kcm128_old_names_match_nothing",
        WithMigration(WithCidrs(Kcm("v1.28.2", "gce")), OldNames(kKcmName)), true,
        "route,service,cloud-node-lifecycle,node-ipam", "");
  }

  // cloud-controller-manager 1.27.
  add("ccm127", Ccm("v1.27.1"), false, "route,service,cloud-node-lifecycle", "");
  {
    ControllerSettings no_routes = Ccm("v1.27.1");
    no_routes.configure_cloud_routes = false;
    no_routes.cluster_cidr = "";
    add("ccm127_no_cloud_routes", no_routes, false, "service,cloud-node-lifecycle", "");
  }
  add("ccm127_migrated", WithMigration(Ccm("v1.27.1"), OldNames(kCcmName)), true, "",
      "route,service,cloud-node-lifecycle");
  add("ccm127_wildcard", WithMigration(Ccm("v1.27.1"), OldNames("*")), true, "",
      "route,service,cloud-node-lifecycle");
  add("ccm127_config_for_kcm_runs_nothing", WithMigration(Ccm("v1.27.1"), OldNames(kKcmName)), true,
      "", "");
  {
    Config with_nodeipam = OldNames(kCcmName);
    with_nodeipam.controller_leaders.push_back({"nodeipam", kCcmName});
    add("ccm127_registers_no_nodeipam", WithMigration(Ccm("v1.27.1"), with_nodeipam), true, "",
        "route,service,cloud-node-lifecycle");
    // Upstream fills a map in order: a repeated name takes its last entry.
    Config repeated = MigrationConfig({{"service", kKcmName}, {"service", kCcmName}});
    add("ccm127_repeated_name_last_wins", WithMigration(Ccm("v1.27.1"), repeated), true,
        "route,cloud-node-lifecycle", "service");
  }
  add("ccm127_default_config", WithMigration(Ccm("v1.27.1"), std::nullopt), true, "",
      "route,service,cloud-node-lifecycle");

  // cloud-controller-manager 1.28: names compared exactly.
  add("ccm128_old_names_match_nothing", WithMigration(Ccm("v1.28.0"), OldNames(kCcmName)), true,
      "route,service,cloud-node-lifecycle", "");
  add("ccm128_default_config_matches_only_lifecycle", WithMigration(Ccm("v1.28.0"), std::nullopt),
      true, "route,service", "cloud-node-lifecycle");
  return rows;
}

class PlanTable : public ::testing::TestWithParam<Row> {};

TEST_P(PlanTable, DecidesWhereEachControllerRuns) {
  const Row& row = GetParam();
  absl::StatusOr<ControllerPlan> plan = PlanControllers(row.settings);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->migration, row.migration);
  if (row.migration) {
    EXPECT_EQ(plan->migration_lease, "cloud-provider-extraction-migration");
  }
  EXPECT_EQ(Names(plan->RunningUnder(Lock::kMain)), row.main);
  EXPECT_EQ(Names(plan->RunningUnder(Lock::kMigration)), row.migrated);
  ASSERT_EQ(plan->decisions.size(), 4u);
  for (const ControllerDecision& decision : plan->decisions) {
    EXPECT_FALSE(decision.reason.empty()) << CanonicalControllerName(decision.controller);
  }
}

INSTANTIATE_TEST_SUITE_P(Rows, PlanTable, ::testing::ValuesIn(Rows()),
                         [](const ::testing::TestParamInfo<Row>& param) {
                           return param.param.name;
                         });

TEST(PlanControllers, UsesEachVersionsRegisteredNames) {
  absl::StatusOr<ControllerPlan> kcm126 = PlanControllers(Kcm("v1.26.5", "aws"));
  ASSERT_TRUE(kcm126.ok());
  EXPECT_EQ(kcm126->decisions[3].name, "nodeipam");
  absl::StatusOr<ControllerPlan> ccm128 = PlanControllers(Ccm("v1.28.0"));
  ASSERT_TRUE(ccm128.ok());
  EXPECT_EQ(ccm128->decisions[0].name, "node-route-controller");
  EXPECT_EQ(ccm128->decisions[1].name, "service-lb-controller");
  EXPECT_EQ(ccm128->decisions[2].name, "cloud-node-lifecycle-controller");
  EXPECT_FALSE(ccm128->decisions[3].runs);
  EXPECT_THAT(ccm128->decisions[3].reason, HasSubstr("does not register"));
}

TEST(PlanControllers, SaysWhyAControllerIsUnowned) {
  absl::StatusOr<ControllerPlan> plan =
      PlanControllers(WithMigration(Kcm("v1.26.5", "aws"), OldNames(kCcmName)));
  ASSERT_TRUE(plan.ok());
  EXPECT_FALSE(plan->decisions[1].runs);
  EXPECT_EQ(plan->decisions[1].reason,
            "assigned to cloud-controller-manager by the Leader Migration configuration");
}

TEST(PlanControllers, RefusesTheInTreeAwsProviderFrom127) {
  absl::StatusOr<ControllerPlan> plan = PlanControllers(Kcm("v1.27.6", "aws"));
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(plan.status().message()), HasSubstr("--cloud-provider=aws"));
  EXPECT_THAT(std::string(plan.status().message()), HasSubstr("115838"));
}

TEST(PlanControllers, RefusesAnUnknownProviderInTheAwsCloudControllerManager) {
  ControllerSettings settings = Ccm("v1.27.1");
  settings.cloud_provider = "external";
  absl::StatusOr<ControllerPlan> plan = PlanControllers(settings);
  ASSERT_FALSE(plan.ok());
  EXPECT_THAT(std::string(plan.status().message()), HasSubstr("--cloud-provider=external"));
}

TEST(PlanControllers, RefusesRoutesWithoutClusterCidr) {
  ControllerSettings settings = Ccm("v1.27.1");
  settings.cluster_cidr = "";
  absl::StatusOr<ControllerPlan> plan = PlanControllers(settings);
  ASSERT_FALSE(plan.ok());
  EXPECT_THAT(std::string(plan.status().message()), HasSubstr("--cluster-cidr"));
  EXPECT_THAT(std::string(plan.status().message()), HasSubstr("--configure-cloud-routes=false"));
  // Not when the migration gives route to the other manager: it never starts here.
  absl::StatusOr<ControllerPlan> unowned =
      PlanControllers(WithMigration(settings, OldNames(kKcmName)));
  EXPECT_TRUE(unowned.ok()) << unowned.status();
}

TEST(PlanControllers, NeedsAConfigurationBeforeTheDefaultExisted) {
  absl::StatusOr<ControllerPlan> plan =
      PlanControllers(WithMigration(Kcm("v1.21.14", "aws"), std::nullopt));
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.status().code(), absl::StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace handoff::standin
