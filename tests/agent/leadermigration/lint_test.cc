#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "agent/leadermigration/config.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/common/base/yaml_bomb.h"

namespace handoff::leadermigration {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::StartsWith;

constexpr Component kKcm = Component::kKubeControllerManager;
constexpr Component kCcm = Component::kCloudControllerManager;

KubeVersion V(int minor, int patch = -1) { return KubeVersion{1, minor, patch}; }

std::string ReadFixture(const std::string& name) {
  const std::string path = std::string(HANDOFF_TESTDATA_DIR) + "/leadermigration/" + name;
  std::ifstream in(path);
  if (!in) {
    ADD_FAILURE() << "missing fixture " << path;
    return "";
  }
  std::stringstream contents;
  contents << in.rdbuf();
  return contents.str();
}

std::vector<std::string> Formatted(std::string_view file, const LintResult& result) {
  std::vector<std::string> lines;
  for (const Problem& problem : result.problems) lines.push_back(FormatProblem(file, problem));
  return lines;
}

// Lints a fixture and returns its problems as an operator sees them.
std::vector<std::string> LintFixture(const std::string& name, const LintOptions& options = {}) {
  return Formatted(name, Lint(ReadFixture(name), options));
}

// Lints inline text; problems are reported against the file name "f".
std::vector<std::string> LintText(std::string_view text, const LintOptions& options = {}) {
  return Formatted("f", Lint(text, options));
}

// A valid v1 document whose controllerLeaders are `entries` (already indented list items).
std::string V1With(const std::string& entries) {
  return "kind: LeaderMigrationConfiguration\n"
         "apiVersion: controllermanager.config.k8s.io/v1\n"
         "leaderName: cloud-provider-extraction-migration\n"
         "controllerLeaders:\n" +
         entries;
}

constexpr char kShortNamesKcm[] =
    "  - name: route\n"
    "    component: kube-controller-manager\n";

std::string V1Beta1With(const std::string& resource_lock_line) {
  return "kind: LeaderMigrationConfiguration\n"
         "apiVersion: controllermanager.config.k8s.io/v1beta1\n"
         "leaderName: cloud-provider-extraction-migration\n" +
         resource_lock_line + "controllerLeaders:\n" + kShortNamesKcm;
}

// --- The upstream page's examples, as the page shows them ----------------------------------------

TEST(UpstreamExamplesTest, KubeControllerManagerVersionIsValid) {
  EXPECT_THAT(LintFixture("upstream_kube_controller_manager.yaml"), IsEmpty());
  EXPECT_THAT(LintFixture("upstream_kube_controller_manager.yaml", {kKcm, V(26)}), IsEmpty());
  LintResult result = Lint(ReadFixture("upstream_kube_controller_manager.yaml"), {});
  ASSERT_TRUE(result.config.has_value());
  EXPECT_EQ(result.config->api_version, "controllermanager.config.k8s.io/v1");
  EXPECT_EQ(result.config->leader_name, "cloud-provider-extraction-migration");
  EXPECT_EQ(result.config->resource_lock, "");
  EXPECT_THAT(ControllersFor(*result.config, kKcm),
              ElementsAre("route", "service", "cloud-node-lifecycle"));
  EXPECT_THAT(ControllersFor(*result.config, kCcm), IsEmpty());
}

TEST(UpstreamExamplesTest, WildcardVersionHasUnquotedStars) {
  EXPECT_THAT(
      LintFixture("upstream_wildcard.yaml"),
      ElementsAre(
          "upstream_wildcard.yaml:7: \"component: *\" does not parse: an unquoted * starts a YAML "
          "alias; write component: \"*\"",
          "upstream_wildcard.yaml:9: \"component: *\" does not parse: an unquoted * starts a YAML "
          "alias; write component: \"*\"",
          "upstream_wildcard.yaml:11: \"component: *\" does not parse: an unquoted * starts a "
          "YAML alias; write component: \"*\""));
  // Linting went on with the repaired text: it decoded, and found nothing else.
  LintResult result = Lint(ReadFixture("upstream_wildcard.yaml"), {kCcm, V(27)});
  EXPECT_EQ(result.problems.size(), 3u);
  ASSERT_TRUE(result.config.has_value());
  EXPECT_THAT(ControllersFor(*result.config, kCcm),
              ElementsAre("route", "service", "cloud-node-lifecycle"));
}

TEST(UpstreamExamplesTest, UnquotedStarReallyDoesNotParseWithoutTheRepair) {
  // The same file with one star repaired by hand: the other two are still reported, each on its
  // own line, which shows the finding comes from the text and not from a parse of a repaired copy.
  std::string text = ReadFixture("upstream_wildcard.yaml");
  const size_t first = text.find("component: *");
  ASSERT_NE(first, std::string::npos);
  text.replace(first, 12, "component: \"*\"");
  EXPECT_THAT(LintText(text),
              ElementsAre(StartsWith("f:9: "), StartsWith("f:11: ")));
}

TEST(UpstreamExamplesTest, CloudControllerManagerVersionIsValid) {
  EXPECT_THAT(LintFixture("upstream_cloud_controller_manager.yaml"), IsEmpty());
  EXPECT_THAT(LintFixture("upstream_cloud_controller_manager.yaml", {kCcm, V(27)}), IsEmpty());
}

TEST(UpstreamExamplesTest, CloudControllerManagerVersionReadByKubeControllerManager) {
  EXPECT_THAT(
      LintFixture("upstream_cloud_controller_manager.yaml", {kKcm, V(26)}),
      ElementsAre("upstream_cloud_controller_manager.yaml: controllerLeaders[0].component: "
                  "assigned to cloud-controller-manager, so kube-controller-manager never runs "
                  "\"route\", not even while it holds the migration lease; use "
                  "kube-controller-manager or \"*\"",
                  "upstream_cloud_controller_manager.yaml: controllerLeaders[1].component: "
                  "assigned to cloud-controller-manager, so kube-controller-manager never runs "
                  "\"service\", not even while it holds the migration lease; use "
                  "kube-controller-manager or \"*\"",
                  "upstream_cloud_controller_manager.yaml: controllerLeaders[2].component: "
                  "assigned to cloud-controller-manager, so kube-controller-manager never runs "
                  "\"cloud-node-lifecycle\", not even while it holds the migration lease; use "
                  "kube-controller-manager or \"*\""));
}

TEST(UpstreamExamplesTest, WildcardWithNodeIpamSplitsTheNodeIpamEntry) {
  const std::string star =
      " \"component: *\" does not parse: an unquoted * starts a YAML alias; write component: "
      "\"*\"";
  EXPECT_THAT(LintFixture("upstream_wildcard_nodeipam.yaml"),
              ElementsAre("upstream_wildcard_nodeipam.yaml:7:" + star,
                          "upstream_wildcard_nodeipam.yaml:9:" + star,
                          "upstream_wildcard_nodeipam.yaml:11:" + star,
                          "upstream_wildcard_nodeipam.yaml:13:" + star,
                          "upstream_wildcard_nodeipam.yaml:13: \"- component:\" starts a new list "
                          "item, so the entry for \"nodeipam\" (line 12) has no component; remove "
                          "the \"- \" so that component sits under name"));
  // One finding per mistake: no "missing component" / "missing name" for the two halves.
  LintResult result = Lint(ReadFixture("upstream_wildcard_nodeipam.yaml"), {kKcm, V(26)});
  EXPECT_EQ(result.problems.size(), 5u);
  ASSERT_TRUE(result.config.has_value());
  ASSERT_EQ(result.config->controller_leaders.size(), 4u);
  EXPECT_EQ(result.config->controller_leaders[3].name, "nodeipam");
  EXPECT_EQ(result.config->controller_leaders[3].component, "*");
}

TEST(UpstreamExamplesTest, CorrectedVersionsAreValid) {
  for (const char* name : {"wildcard_fixed.yaml", "wildcard_nodeipam_fixed.yaml"}) {
    EXPECT_THAT(LintFixture(name), IsEmpty()) << name;
    EXPECT_THAT(LintFixture(name, {kKcm, V(26)}), IsEmpty()) << name;
    EXPECT_THAT(LintFixture(name, {kCcm, V(27)}), IsEmpty()) << name;
  }
  absl::StatusOr<Config> config =
      ParseAndValidate(ReadFixture("wildcard_nodeipam_fixed.yaml"), {kCcm, V(27)});
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_THAT(ControllersFor(*config, kCcm),
              ElementsAre("route", "service", "cloud-node-lifecycle", "nodeipam"));
  EXPECT_THAT(ControllersFor(*config, kKcm),
              ElementsAre("route", "service", "cloud-node-lifecycle", "nodeipam"));
}

TEST(UpstreamExamplesTest, OlderPagesWithResourceLockAreValidForTheirReleases) {
  EXPECT_THAT(LintFixture("upstream_v1alpha1_kube_controller_manager.yaml", {kKcm, V(21)}),
              IsEmpty());
  EXPECT_THAT(LintFixture("upstream_v1beta1_cloud_controller_manager.yaml", {kCcm, V(22)}),
              IsEmpty());
  // Newer managers still decode the older apiVersions.
  EXPECT_THAT(LintFixture("upstream_v1beta1_cloud_controller_manager.yaml", {kCcm, V(27)}),
              IsEmpty());
}

// --- Every problem at once, in line order and then field order ----------------------------------

TEST(LintTest, ReportsEveryProblemInOrder) {
  EXPECT_THAT(
      LintFixture("many_problems.yaml"),
      ElementsAre(
          "many_problems.yaml:7: unknown field \"leader\" in controllerLeaders[0]; an entry has "
          "only name and component (before 1.32 it is ignored, from 1.32 the manager refuses to "
          "start)",
          "many_problems.yaml:14: duplicate key \"name\" in controllerLeaders[4] (first on line "
          "13); before 1.32 the last one silently wins, from 1.32 the manager refuses to start: "
          "keep one",
          "many_problems.yaml: kind: \"LeaderMigrationConfig\" is not "
          "LeaderMigrationConfiguration; write kind: LeaderMigrationConfiguration",
          "many_problems.yaml: leaderName: missing; every manager must name the same migration "
          "lease, usually cloud-provider-extraction-migration",
          "many_problems.yaml: resourceLock: \"endpoints\" locks were removed from client-go, so "
          "no manager can take the migration lease; use resourceLock: leases",
          "many_problems.yaml: controllerLeaders[1].component: \"kcm\" is not a controller "
          "manager; use kube-controller-manager, cloud-controller-manager or \"*\"",
          "many_problems.yaml: controllerLeaders[2].name: \"route\" is also the name of "
          "controllerLeaders[0]; upstream silently keeps only the later entry, so remove one",
          "many_problems.yaml: controllerLeaders[3].name: missing; write the name of the "
          "controller to migrate (e.g. route)",
          "many_problems.yaml: controllerLeaders[4].component: missing; use "
          "kube-controller-manager, cloud-controller-manager or \"*\""));
}

// --- One test per rule ---------------------------------------------------------------------------

TEST(LintRuleTest, DuplicateControllerNames) {
  EXPECT_THAT(LintText(V1With("  - name: route\n"
                              "    component: kube-controller-manager\n"
                              "  - name: service\n"
                              "    component: kube-controller-manager\n"
                              "  - name: route\n"
                              "    component: \"*\"\n")),
              ElementsAre("f: controllerLeaders[2].name: \"route\" is also the name of "
                          "controllerLeaders[0]; upstream silently keeps only the later entry, so "
                          "remove one"));
}

TEST(LintRuleTest, UnknownTopLevelField) {
  EXPECT_THAT(LintText(V1With(kShortNamesKcm) + "leaderElection: true\n"),
              ElementsAre("f:7: unknown field \"leaderElection\"; LeaderMigrationConfiguration has "
                          "only kind, apiVersion, leaderName and controllerLeaders (before 1.32 it "
                          "is ignored, from 1.32 the manager refuses to start)"));
}

TEST(LintRuleTest, UnknownTopLevelFieldBeforeV1ListsResourceLock) {
  EXPECT_THAT(LintText(V1Beta1With("resourceLock: leases\nresourceNamespace: kube-system\n")),
              ElementsAre("f:5: unknown field \"resourceNamespace\"; LeaderMigrationConfiguration "
                          "has only kind, apiVersion, leaderName, resourceLock and "
                          "controllerLeaders (before 1.32 it is ignored, from 1.32 the manager "
                          "refuses to start)"));
}

TEST(LintRuleTest, UnknownEntryField) {
  EXPECT_THAT(LintText(V1With("  - name: route\n"
                              "    component: kube-controller-manager\n"
                              "    enabled: true\n")),
              ElementsAre("f:7: unknown field \"enabled\" in controllerLeaders[0]; an entry has "
                          "only name and component (before 1.32 it is ignored, from 1.32 the "
                          "manager refuses to start)"));
}

TEST(LintRuleTest, DuplicateTopLevelKey) {
  LintResult result = Lint(V1With(kShortNamesKcm) + "leaderName: other-migration\n", {});
  EXPECT_THAT(Formatted("f", result),
              ElementsAre("f:7: duplicate key \"leaderName\" (first on line 3); before 1.32 the "
                          "last one silently wins, from 1.32 the manager refuses to start: keep "
                          "one"));
  // Like sigs.k8s.io/yaml before 1.32, the decoded value is the last one.
  ASSERT_TRUE(result.config.has_value());
  EXPECT_EQ(result.config->leader_name, "other-migration");
}

TEST(LintRuleTest, DuplicateEntryKey) {
  EXPECT_THAT(LintText(V1With("  - name: route\n"
                              "    component: kube-controller-manager\n"
                              "    component: cloud-controller-manager\n")),
              ElementsAre("f:7: duplicate key \"component\" in controllerLeaders[0] (first on line "
                          "6); before 1.32 the last one silently wins, from 1.32 the manager "
                          "refuses to start: keep one"));
}

TEST(LintRuleTest, ResourceLockUnderV1) {
  EXPECT_THAT(LintFixture("v1_with_resource_lock.yaml"),
              ElementsAre("v1_with_resource_lock.yaml:4: resourceLock is not a field of "
                          "controllermanager.config.k8s.io/v1 (v1 always uses leases); remove it: "
                          "before 1.32 it is ignored, from 1.32 the manager refuses to start"));
}

TEST(LintRuleTest, EndpointsLockIsRejected) {
  EXPECT_THAT(LintText(V1Beta1With("resourceLock: endpoints\n")),
              ElementsAre("f: resourceLock: \"endpoints\" locks were removed from client-go, so "
                          "no manager can take the migration lease; use resourceLock: leases"));
}

TEST(LintRuleTest, OtherLockTypesAreRejected) {
  EXPECT_THAT(LintText(V1Beta1With("resourceLock: configmapsleases\n")),
              ElementsAre("f: resourceLock: \"configmapsleases\" is not a lock type; use "
                          "resourceLock: leases"));
}

TEST(LintRuleTest, ResourceLockIsRequiredBeforeV1) {
  EXPECT_THAT(LintText(V1Beta1With("")),
              ElementsAre("f: resourceLock: missing; controllermanager.config.k8s.io/v1beta1 "
                          "requires it and has no default: add resourceLock: leases"));
  std::string alpha = V1Beta1With("");
  alpha.replace(alpha.find("v1beta1"), 7, "v1alpha1");
  EXPECT_THAT(LintText(alpha),
              ElementsAre("f: resourceLock: missing; controllermanager.config.k8s.io/v1alpha1 "
                          "requires it and has no default: add resourceLock: leases"));
  EXPECT_THAT(LintText(V1Beta1With("resourceLock: leases\n")), IsEmpty());
}

TEST(LintRuleTest, LeaderNameIsRequired) {
  EXPECT_THAT(LintText("kind: LeaderMigrationConfiguration\n"
                       "apiVersion: controllermanager.config.k8s.io/v1\n"
                       "controllerLeaders:\n" +
                       std::string(kShortNamesKcm)),
              ElementsAre("f: leaderName: missing; every manager must name the same migration "
                          "lease, usually cloud-provider-extraction-migration"));
  EXPECT_THAT(LintText("kind: LeaderMigrationConfiguration\n"
                       "apiVersion: controllermanager.config.k8s.io/v1\n"
                       "leaderName: \"\"\n"
                       "controllerLeaders:\n" +
                       std::string(kShortNamesKcm)),
              ElementsAre("f: leaderName: missing; every manager must name the same migration "
                          "lease, usually cloud-provider-extraction-migration"));
}

TEST(LintRuleTest, LeaderNameMustNameALease) {
  std::string text = V1With(kShortNamesKcm);
  text.replace(text.find("cloud-provider-extraction-migration"), 35, "Cloud_Migration");
  EXPECT_THAT(LintText(text),
              ElementsAre("f: leaderName: \"Cloud_Migration\" is not a valid Lease name; use "
                          "lowercase letters, digits, '-' and '.', e.g. "
                          "cloud-provider-extraction-migration"));
}

TEST(LintRuleTest, EntryNeedsName) {
  EXPECT_THAT(LintText(V1With("  - component: kube-controller-manager\n")),
              ElementsAre("f: controllerLeaders[0].name: missing; write the name of the controller "
                          "to migrate (e.g. route)"));
}

TEST(LintRuleTest, EntryNeedsComponent) {
  // A complete entry before it: this is a missing field, not the split-entry mistake.
  EXPECT_THAT(LintText(V1With("  - name: route\n"
                              "    component: \"*\"\n"
                              "  - name: service\n")),
              ElementsAre("f: controllerLeaders[1].component: missing; use "
                          "kube-controller-manager, cloud-controller-manager or \"*\""));
}

TEST(LintRuleTest, ComponentMustBeAManagerOrWildcard) {
  EXPECT_THAT(LintText(V1With("  - name: route\n"
                              "    component: controller-manager\n")),
              ElementsAre("f: controllerLeaders[0].component: \"controller-manager\" is not a "
                          "controller manager; use kube-controller-manager, "
                          "cloud-controller-manager or \"*\""));
}

TEST(LintRuleTest, EntryMustBeAMapping) {
  EXPECT_THAT(LintText(V1With("  - route\n")),
              ElementsAre("f: controllerLeaders[0]: is a single value, not a mapping with name and "
                          "component"));
}

TEST(LintRuleTest, ControllerLeadersMustListSomething) {
  const std::string head =
      "kind: LeaderMigrationConfiguration\n"
      "apiVersion: controllermanager.config.k8s.io/v1\n"
      "leaderName: cloud-provider-extraction-migration\n";
  EXPECT_THAT(LintText(head),
              ElementsAre("f: controllerLeaders: missing, so no controller runs under the "
                          "migration lease and two managers can run the same cloud controller at "
                          "once; list the controllers to migrate"));
  EXPECT_THAT(LintText(head + "controllerLeaders: []\n"),
              ElementsAre("f: controllerLeaders: empty, so no controller runs under the migration "
                          "lease and two managers can run the same cloud controller at once; list "
                          "the controllers to migrate"));
  EXPECT_THAT(LintText(head + "controllerLeaders:\n  route: kube-controller-manager\n"),
              ElementsAre("f: controllerLeaders: is a mapping, not a list of entries with name and "
                          "component"));
}

TEST(LintRuleTest, KindMustBeLeaderMigrationConfiguration) {
  std::string text = V1With(kShortNamesKcm);
  text.replace(0, text.find('\n'), "kind: LeaderElectionConfiguration");
  EXPECT_THAT(
      LintText(text),
      ElementsAre("f: kind: \"LeaderElectionConfiguration\" is not "
                  "LeaderMigrationConfiguration; write kind: LeaderMigrationConfiguration"));
  text.erase(0, text.find('\n') + 1);
  EXPECT_THAT(LintText(text), ElementsAre("f: kind: missing; write kind: "
                                          "LeaderMigrationConfiguration"));
}

std::string WithApiVersion(const std::string& api_version_line) {
  return "kind: LeaderMigrationConfiguration\n" + api_version_line +
         "leaderName: cloud-provider-extraction-migration\n"
         "controllerLeaders:\n" +
         kShortNamesKcm;
}

TEST(LintRuleTest, ApiVersionMustBeOneOfOurs) {
  EXPECT_THAT(LintText(WithApiVersion("")), ElementsAre("f: apiVersion: missing; write apiVersion: "
                                                        "controllermanager.config.k8s.io/v1"));
  EXPECT_THAT(LintText(WithApiVersion("apiVersion: controllermanager.config.k8s.io/v2\n")),
              ElementsAre("f: apiVersion: \"controllermanager.config.k8s.io/v2\" is not a version "
                          "of LeaderMigrationConfiguration; use v1 (v1.24+), v1beta1 (v1.22+) or "
                          "v1alpha1 (v1.21+)"));
  EXPECT_THAT(
      LintText(WithApiVersion("apiVersion: kubecontrollermanager.config.k8s.io/v1alpha1\n")),
      ElementsAre("f: apiVersion: \"kubecontrollermanager.config.k8s.io/v1alpha1\" is not "
                  "in group controllermanager.config.k8s.io; write apiVersion: "
                  "controllermanager.config.k8s.io/v1alpha1"));
  EXPECT_THAT(LintText(WithApiVersion("apiVersion: v1\n")),
              ElementsAre("f: apiVersion: \"v1\" is not in group "
                          "controllermanager.config.k8s.io; write apiVersion: "
                          "controllermanager.config.k8s.io/v1"));
}

TEST(LintRuleTest, AnchorsAndAliasesAreRefusedWithTheirLine) {
  const std::vector<std::string> problems =
      LintText(V1With("  - &entry\n    name: route\n    component: \"*\"\n  - *entry\n"));
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_THAT(problems[0], StartsWith("f:5: YAML anchors and aliases are not accepted (&entry"));
  EXPECT_FALSE(Lint(V1With("  - &e {name: route, component: \"*\"}\n"), {}).config.has_value());
}

TEST(LintRuleTest, AliasBombIsRefusedUnexpanded) {
  const std::vector<std::string> problems =
      LintText(V1With(kShortNamesKcm) + "bomb:\n" + testing::AliasBombEntries(9, 2));
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_THAT(problems[0], StartsWith("f:8: YAML anchors and aliases are not accepted (&l0"));
}

TEST(LintRuleTest, TaggedScalarsAreTypedByTheirTag) {
  EXPECT_THAT(LintText(V1With("  - name: !!int \"12\"\n    component: !!str 5\n")),
              ElementsAre("f: controllerLeaders[0].name: YAML reads 12 as a number, not a "
                          "string; quote it: name: \"12\"",
                          "f: controllerLeaders[0].component: \"5\" is not a controller manager; "
                          "use kube-controller-manager, cloud-controller-manager or \"*\""));
}

TEST(LintRuleTest, StringFieldsMustBeStringsInYaml) {
  EXPECT_THAT(LintText(V1With("  - name: 1234\n"
                              "    component: [kube-controller-manager]\n")),
              ElementsAre("f: controllerLeaders[0].name: YAML reads 1234 as a number, not a "
                          "string; quote it: name: \"1234\"",
                          "f: controllerLeaders[0].component: is a list, not a string"));
  std::string text = V1With(kShortNamesKcm);
  text.replace(text.find("cloud-provider-extraction-migration"), 35, "yes");
  EXPECT_THAT(LintText(text), ElementsAre("f: leaderName: YAML reads yes as a boolean, not a "
                                          "string; quote it: leaderName: \"yes\""));
  text.replace(text.find("yes"), 3, "\"yes\"");
  EXPECT_THAT(LintText(text), IsEmpty());
}

// --- Reader-specific rules
// -------------------------------------------------------------------------

TEST(ReaderRuleTest, KubeControllerManager126RegistersTheShortNames) {
  const std::string short_names = V1With(
      "  - name: route\n    component: kube-controller-manager\n"
      "  - name: nodeipam\n    component: kube-controller-manager\n");
  EXPECT_THAT(LintText(short_names, {kKcm, V(26, 5)}), IsEmpty());
  EXPECT_THAT(LintText(V1With("  - name: node-route-controller\n"
                              "    component: kube-controller-manager\n"),
                       {kKcm, V(26, 5)}),
              ElementsAre("f: controllerLeaders[0].name: kube-controller-manager v1.26.5 registers "
                          "no controller named \"node-route-controller\", so this entry matches "
                          "nothing and the controller it meant runs outside the migration lease; "
                          "the names it registers are route, service, cloud-node-lifecycle and "
                          "nodeipam"));
}

TEST(ReaderRuleTest, ManagersFrom128RegisterTheLongNames) {
  EXPECT_THAT(LintText(V1With(kShortNamesKcm), {kKcm, V(28)}),
              ElementsAre("f: controllerLeaders[0].name: kube-controller-manager v1.28 registers "
                          "no controller named \"route\", so this entry matches nothing and the "
                          "controller it meant runs outside the migration lease; the names it "
                          "registers are node-route-controller, service-lb-controller, "
                          "cloud-node-lifecycle-controller and node-ipam-controller"));
  const std::string long_names = V1With(
      "  - name: node-route-controller\n    component: \"*\"\n"
      "  - name: service-lb-controller\n    component: \"*\"\n"
      "  - name: cloud-node-lifecycle-controller\n    component: \"*\"\n"
      "  - name: node-ipam-controller\n    component: \"*\"\n");
  EXPECT_THAT(LintText(long_names, {kKcm, V(28)}), IsEmpty());
  EXPECT_THAT(LintText(long_names, {kCcm, V(29)}), IsEmpty());
  EXPECT_EQ(LintText(long_names, {kCcm, V(27)}).size(), 4u);
}

TEST(ReaderRuleTest, DefaultConfigurationNamesFrom128AreFlagged) {
  EXPECT_THAT(
      LintText(V1With("  - name: route-controller\n    component: \"*\"\n"
                      "  - name: service-controller\n    component: \"*\"\n"
                      "  - name: cloud-node-lifecycle-controller\n    component: \"*\"\n"),
               {kCcm, V(28)}),
      ElementsAre("f: controllerLeaders[0].name: cloud-controller-manager v1.28 registers no "
                  "controller named \"route-controller\" (a name from its built-in default "
                  "configuration, which does not match its own controllers), so this entry matches "
                  "nothing and the controller it meant runs outside the migration lease; the names "
                  "it registers are node-route-controller, service-lb-controller, "
                  "cloud-node-lifecycle-controller and node-ipam-controller",
                  "f: controllerLeaders[1].name: cloud-controller-manager v1.28 registers no "
                  "controller named \"service-controller\" (a name from its built-in default "
                  "configuration, which does not match its own controllers), so this entry matches "
                  "nothing and the controller it meant runs outside the migration lease; the names "
                  "it registers are node-route-controller, service-lb-controller, "
                  "cloud-node-lifecycle-controller and node-ipam-controller"));
}

TEST(ReaderRuleTest, EntriesAssignedToTheOtherManager) {
  EXPECT_THAT(LintFixture("upstream_kube_controller_manager.yaml", {kCcm, V(27)}),
              ElementsAre("upstream_kube_controller_manager.yaml: controllerLeaders[0].component: "
                          "assigned to kube-controller-manager, so cloud-controller-manager never "
                          "runs \"route\", not even while it holds the migration lease; use "
                          "cloud-controller-manager or \"*\"",
                          "upstream_kube_controller_manager.yaml: controllerLeaders[1].component: "
                          "assigned to kube-controller-manager, so cloud-controller-manager never "
                          "runs \"service\", not even while it holds the migration lease; use "
                          "cloud-controller-manager or \"*\"",
                          "upstream_kube_controller_manager.yaml: controllerLeaders[2].component: "
                          "assigned to kube-controller-manager, so cloud-controller-manager never "
                          "runs \"cloud-node-lifecycle\", not even while it holds the migration "
                          "lease; use cloud-controller-manager or \"*\""));
}

TEST(ReaderRuleTest, ComponentWithoutVersionChecksAssignmentButNotNames) {
  LintOptions options;
  options.component = kCcm;
  std::vector<std::string> problems = LintText(V1With(kShortNamesKcm), options);
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_THAT(problems[0], StartsWith("f: controllerLeaders[0].component: assigned to "
                                               "kube-controller-manager"));
}

TEST(ReaderRuleTest, ApiVersionTheReaderCannotDecode) {
  EXPECT_THAT(LintText(V1With(kShortNamesKcm), {kKcm, V(23)}),
              ElementsAre("f: apiVersion: kube-controller-manager v1.23 cannot decode "
                          "controllermanager.config.k8s.io/v1 (first decoded by v1.24); use "
                          "controllermanager.config.k8s.io/v1beta1 with resourceLock: leases"));
  EXPECT_THAT(LintText(V1Beta1With("resourceLock: leases\n"), {kKcm, V(21)}),
              ElementsAre("f: apiVersion: kube-controller-manager v1.21 cannot decode "
                          "controllermanager.config.k8s.io/v1beta1 (first decoded by v1.22); use "
                          "controllermanager.config.k8s.io/v1alpha1 with resourceLock: leases"));
  LintOptions version_only;
  version_only.version = V(23);
  EXPECT_THAT(LintText(V1With(kShortNamesKcm), version_only),
              ElementsAre("f: apiVersion: a v1.23 controller manager cannot decode "
                          "controllermanager.config.k8s.io/v1 (first decoded by v1.24); use "
                          "controllermanager.config.k8s.io/v1beta1 with resourceLock: leases"));
}

TEST(ReaderRuleTest, ReaderWithoutLeaderMigration) {
  EXPECT_THAT(LintFixture("upstream_v1alpha1_kube_controller_manager.yaml", {kKcm, V(20)}),
              ElementsAre("upstream_v1alpha1_kube_controller_manager.yaml: kube-controller-manager "
                          "v1.20 has no Leader Migration (it arrived in v1.21)"));
}

// --- YAML-level findings
// -----------------------------------------------------------------------------

TEST(LintSyntaxTest, SyntaxErrorsCarryLineAndColumn) {
  LintResult result = Lint(V1With("  - name: route\n"
                                  "    component: \"*\"\n"
                                  "   oops: [\n"),
                           {});
  EXPECT_THAT(Formatted("f", result),
              ElementsAre("f:7: YAML syntax error at column 4: end of sequence not found"));
  EXPECT_FALSE(result.config.has_value());
  EXPECT_THAT(LintText("kind: a: b\n"),
              ElementsAre("f:1: YAML syntax error at column 8: illegal map value"));
}

TEST(LintSyntaxTest, OtherAliasesAreLeftToTheParser) {
  // "*name" is a real alias: not the documentation's mistake, so it is reported as YAML reports it.
  EXPECT_THAT(LintText(V1With("  - name: route\n    component: *kcm\n")),
              ElementsAre("f:6: YAML syntax error at column 16: the referenced anchor is not "
                          "defined"));
}

TEST(LintSyntaxTest, UnquotedStarInAnyField) {
  EXPECT_THAT(LintText(V1With("  - name: *\n    component: kube-controller-manager\n")),
              ElementsAre("f:5: \"name: *\" does not parse: an unquoted * starts a YAML alias; "
                          "write name: \"*\""));
}

TEST(LintSyntaxTest, SplitEntryTheOtherWayRound) {
  EXPECT_THAT(LintText(V1With("  - component: \"*\"\n"
                              "  - name: route\n")),
              ElementsAre("f:6: \"- name:\" starts a new list item, so the entry on line 5 has no "
                          "name; remove the \"- \" so that name sits under component"));
}

TEST(LintSyntaxTest, TwoCompleteEntriesAreNotASplit) {
  EXPECT_THAT(LintText(V1With("  - name: route\n"
                              "    component: \"*\"\n"
                              "  - component: \"*\"\n"
                              "    name: service\n")),
              IsEmpty());
}

TEST(LintSyntaxTest, EmptyAndNonMappingDocuments) {
  EXPECT_THAT(LintText(""),
              ElementsAre("f: the file is empty; it must hold a LeaderMigrationConfiguration"));
  EXPECT_THAT(LintText("# only a comment\n"),
              ElementsAre("f: the file is empty; it must hold a LeaderMigrationConfiguration"));
  EXPECT_THAT(LintText("- route\n- service\n"),
              ElementsAre("f: the document is a list, not a mapping; it must hold a "
                          "LeaderMigrationConfiguration"));
  EXPECT_FALSE(Lint("", {}).config.has_value());
}

TEST(LintSyntaxTest, SecondDocumentIsReported) {
  EXPECT_THAT(LintText(V1With(kShortNamesKcm) + "---\nkind: Other\n"),
              ElementsAre("f:8: a second YAML document starts here; a controller manager reads "
                          "only the first, so remove it"));
  EXPECT_THAT(LintText("---\n" + V1With(kShortNamesKcm) + "---\n"), IsEmpty());
}

TEST(LintSyntaxTest, WindowsLineEndings) {
  std::string text = ReadFixture("upstream_wildcard_nodeipam.yaml");
  std::string crlf;
  for (char c : text) {
    if (c == '\n') crlf += '\r';
    crlf += c;
  }
  EXPECT_EQ(LintText(crlf), LintText(text));
}

// --- Output
// ----------------------------------------------------------------------------------------

TEST(FormatProblemTest, LineThenFieldThenMessageOnly) {
  EXPECT_EQ(FormatProblem("/etc/leadermigration.conf", {7, "controllerLeaders[0]", "bad"}),
            "/etc/leadermigration.conf:7: bad");
  EXPECT_EQ(
      FormatProblem("/etc/leadermigration.conf", {0, "controllerLeaders[3].component", "bad"}),
      "/etc/leadermigration.conf: controllerLeaders[3].component: bad");
  EXPECT_EQ(FormatProblem("/etc/leadermigration.conf", {0, "", "bad"}),
            "/etc/leadermigration.conf: bad");
}

TEST(ParseAndValidateTest, ReturnsTheConfigOnlyWhenClean) {
  absl::StatusOr<Config> config =
      ParseAndValidate(ReadFixture("upstream_kube_controller_manager.yaml"), {kKcm, V(26)});
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->leader_name, "cloud-provider-extraction-migration");
  ASSERT_EQ(config->controller_leaders.size(), 3u);
  EXPECT_EQ(config->controller_leaders[2].name, "cloud-node-lifecycle");
  EXPECT_EQ(config->controller_leaders[2].component, "kube-controller-manager");
}

TEST(ParseAndValidateTest, ListsEveryProblemWithoutAFileName) {
  absl::StatusOr<Config> config =
      ParseAndValidate(ReadFixture("upstream_wildcard_nodeipam.yaml"), {kKcm, V(28)});
  ASSERT_FALSE(config.ok());
  EXPECT_EQ(config.status().code(), absl::StatusCode::kInvalidArgument);
  const std::string star =
      ": \"component: *\" does not parse: an unquoted * starts a YAML alias; write component: "
      "\"*\"\n";
  const std::string name_prefix =
      ".name: kube-controller-manager v1.28 registers no controller "
      "named ";
  const std::string name_suffix =
      ", so this entry matches nothing and the controller it meant runs outside the migration "
      "lease; the names it registers are node-route-controller, service-lb-controller, "
      "cloud-node-lifecycle-controller and node-ipam-controller";
  EXPECT_EQ(config.status().message(),
            "invalid LeaderMigrationConfiguration:\n"
            "line 7" +
                star + "line 9" + star + "line 11" + star + "line 13" + star +
                "line 13: \"- component:\" starts a new list item, so the entry for \"nodeipam\" "
                "(line 12) has no component; remove the \"- \" so that component sits under "
                "name\n"
                "controllerLeaders[0]" +
                name_prefix + "\"route\"" + name_suffix + "\n" + "controllerLeaders[1]" +
                name_prefix + "\"service\"" + name_suffix + "\n" + "controllerLeaders[2]" +
                name_prefix + "\"cloud-node-lifecycle\"" + name_suffix + "\n" +
                "controllerLeaders[3]" + name_prefix + "\"nodeipam\"" + name_suffix);
}

}  // namespace
}  // namespace handoff::leadermigration
