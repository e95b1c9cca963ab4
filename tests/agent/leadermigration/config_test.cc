#include "agent/leadermigration/config.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace handoff::leadermigration {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

constexpr Component kKcm = Component::kKubeControllerManager;
constexpr Component kCcm = Component::kCloudControllerManager;

KubeVersion V(int minor, int patch = -1) { return KubeVersion{1, minor, patch}; }

// Problems as an operator sees them, so a failing expectation prints them readably.
std::vector<std::string> Formatted(const LintResult& result) {
  std::vector<std::string> lines;
  for (const Problem& problem : result.problems) lines.push_back(FormatProblem("f", problem));
  return lines;
}

std::vector<std::string> Names(const Config& config) {
  std::vector<std::string> names;
  for (const ControllerLeader& leader : config.controller_leaders) names.push_back(leader.name);
  return names;
}

std::vector<std::string> Components(const Config& config) {
  std::vector<std::string> components;
  for (const ControllerLeader& leader : config.controller_leaders) {
    components.push_back(leader.component);
  }
  return components;
}

TEST(ComponentTest, NamesRoundTrip) {
  EXPECT_EQ(ComponentName(kKcm), "kube-controller-manager");
  EXPECT_EQ(ComponentName(kCcm), "cloud-controller-manager");
  for (Component component : {kKcm, kCcm}) {
    absl::StatusOr<Component> parsed = ParseComponent(ComponentName(component));
    ASSERT_TRUE(parsed.ok());
    EXPECT_EQ(*parsed, component);
  }
}

TEST(ComponentTest, WildcardAndUnknownAreNotComponents) {
  EXPECT_EQ(ParseComponent("*").status().code(), absl::StatusCode::kInvalidArgument);
  absl::Status status = ParseComponent("kcm").status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message(),
            "'kcm' is not a controller manager; use kube-controller-manager or "
            "cloud-controller-manager");
}

// The whole controller-name table, so a correction to it shows up here.
TEST(ControllerNameTest, BeforeTheRenameBothManagersUseTheShortNames) {
  for (Component component : {kKcm, kCcm}) {
    for (int minor = 21; minor <= 27; ++minor) {
      SCOPED_TRACE(minor);
      EXPECT_EQ(ControllerName(component, V(minor), CloudController::kRoute), "route");
      EXPECT_EQ(ControllerName(component, V(minor), CloudController::kService), "service");
      EXPECT_EQ(ControllerName(component, V(minor), CloudController::kCloudNodeLifecycle),
                "cloud-node-lifecycle");
      EXPECT_EQ(ControllerName(component, V(minor), CloudController::kNodeIpam), "nodeipam");
    }
  }
}

TEST(ControllerNameTest, From128BothManagersUseTheLongNames) {
  for (Component component : {kKcm, kCcm}) {
    for (int minor : {28, 29, 30, 33}) {
      SCOPED_TRACE(minor);
      EXPECT_EQ(ControllerName(component, V(minor, 2), CloudController::kRoute),
                "node-route-controller");
      EXPECT_EQ(ControllerName(component, V(minor), CloudController::kService),
                "service-lb-controller");
      EXPECT_EQ(ControllerName(component, V(minor), CloudController::kCloudNodeLifecycle),
                "cloud-node-lifecycle-controller");
      EXPECT_EQ(ControllerName(component, V(minor), CloudController::kNodeIpam),
                "node-ipam-controller");
    }
  }
}

TEST(ControllerNameTest, ReleasesBeforeLeaderMigrationUseTheOldestNames) {
  EXPECT_EQ(ControllerName(kKcm, V(20), CloudController::kRoute), "route");
  EXPECT_EQ(ControllerName(kCcm, V(19), CloudController::kNodeIpam), "nodeipam");
}

TEST(ApiVersionTest, TableAndLookups) {
  std::vector<ApiVersionInfo> versions = ApiVersions();
  ASSERT_EQ(versions.size(), 3u);
  EXPECT_EQ(versions[0].api_version, "controllermanager.config.k8s.io/v1alpha1");
  EXPECT_EQ(versions[0].first_minor, 21);
  EXPECT_TRUE(versions[0].has_resource_lock);
  EXPECT_EQ(versions[1].api_version, "controllermanager.config.k8s.io/v1beta1");
  EXPECT_EQ(versions[1].first_minor, 22);
  EXPECT_TRUE(versions[1].has_resource_lock);
  EXPECT_EQ(versions[2].api_version, "controllermanager.config.k8s.io/v1");
  EXPECT_EQ(versions[2].first_minor, 24);
  EXPECT_FALSE(versions[2].has_resource_lock);

  EXPECT_FALSE(FindApiVersion("controllermanager.config.k8s.io/v2").has_value());
  EXPECT_FALSE(FindApiVersion("v1").has_value());
  ASSERT_TRUE(FindApiVersion("controllermanager.config.k8s.io/v1beta1").has_value());

  EXPECT_EQ(NewestApiVersion(V(20)).status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(NewestApiVersion(V(21))->api_version, "controllermanager.config.k8s.io/v1alpha1");
  EXPECT_EQ(NewestApiVersion(V(22))->api_version, "controllermanager.config.k8s.io/v1beta1");
  EXPECT_EQ(NewestApiVersion(V(23, 17))->api_version, "controllermanager.config.k8s.io/v1beta1");
  EXPECT_EQ(NewestApiVersion(V(24))->api_version, "controllermanager.config.k8s.io/v1");
  EXPECT_EQ(NewestApiVersion(V(32))->api_version, "controllermanager.config.k8s.io/v1");
}

TEST(PlainScalarTest, Yaml11ResolutionAsKubernetesReadsIt) {
  for (const char* text :
       {"route", "kube-controller-manager", "cloud-provider-extraction-migration", "1.2.3", "0x",
        "yesterday", "_1", "v1"}) {
    EXPECT_TRUE(PlainScalarIsString(text)) << text;
  }
  for (const char* text :
       {"",      "~",    "null", "yes",   "No",  "ON", "off", "y",  "TRUE", "1234",  "-1",  "+12",
        "1_000", "0x1f", "0o17", "0b101", "1.5", ".5", "1e3", "1.", ".inf", "-.Inf", ".nan"}) {
    EXPECT_FALSE(PlainScalarIsString(text)) << text;
  }
}

TEST(LeaseNameTest, Dns1123Subdomains) {
  EXPECT_TRUE(IsValidLeaseName("cloud-provider-extraction-migration"));
  EXPECT_TRUE(IsValidLeaseName("a.b-c.d1"));
  EXPECT_TRUE(IsValidLeaseName("1234"));
  EXPECT_FALSE(IsValidLeaseName(""));
  EXPECT_FALSE(IsValidLeaseName("Upper"));
  EXPECT_FALSE(IsValidLeaseName("under_score"));
  EXPECT_FALSE(IsValidLeaseName("-leading"));
  EXPECT_FALSE(IsValidLeaseName("trailing-"));
  EXPECT_FALSE(IsValidLeaseName("double..dot"));
  EXPECT_FALSE(IsValidLeaseName(".dot"));
  EXPECT_FALSE(IsValidLeaseName(std::string(254, 'a')));
  EXPECT_TRUE(IsValidLeaseName(std::string(253, 'a')));
}

TEST(DefaultConfigTest, NoDefaultBefore122) {
  absl::StatusOr<Config> config = DefaultConfig(kKcm, V(21, 14));
  ASSERT_FALSE(config.ok());
  EXPECT_EQ(config.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(config.status().message(),
            "kube-controller-manager v1.21.14 has no default Leader Migration configuration (it "
            "arrived in v1.22); pass --leader-migration-config");
  EXPECT_FALSE(DefaultConfig(kCcm, V(20)).ok());
}

TEST(DefaultConfigTest, From122ToTheRenameEveryCloudControllerIsWildcard) {
  for (Component component : {kKcm, kCcm}) {
    for (int minor = 22; minor <= 27; ++minor) {
      SCOPED_TRACE(minor);
      absl::StatusOr<Config> config = DefaultConfig(component, V(minor));
      ASSERT_TRUE(config.ok()) << config.status();
      EXPECT_EQ(config->leader_name, "cloud-provider-extraction-migration");
      EXPECT_THAT(Names(*config), ElementsAre("route", "service", "cloud-node-lifecycle"));
      EXPECT_THAT(Components(*config), ElementsAre("*", "*", "*"));
    }
  }
  absl::StatusOr<Config> beta = DefaultConfig(kKcm, V(23));
  EXPECT_EQ(beta->api_version, "controllermanager.config.k8s.io/v1beta1");
  EXPECT_EQ(beta->resource_lock, "leases");
  absl::StatusOr<Config> v1 = DefaultConfig(kKcm, V(24));
  EXPECT_EQ(v1->api_version, "controllermanager.config.k8s.io/v1");
  EXPECT_EQ(v1->resource_lock, "");
}

// Upstream's 1.28 default renamed the entries to names that the 1.28 managers do not all register;
// DefaultConfig keeps that, because it is what a manager without a config file really does.
TEST(DefaultConfigTest, From128TheDefaultUsesItsOwnNamesAndNeverNodeIpam) {
  for (Component component : {kKcm, kCcm}) {
    absl::StatusOr<Config> config = DefaultConfig(component, V(28));
    ASSERT_TRUE(config.ok());
    EXPECT_THAT(Names(*config), ElementsAre("route-controller", "service-controller",
                                            "cloud-node-lifecycle-controller"));
    EXPECT_THAT(Components(*config), ElementsAre("*", "*", "*"));
    // Only one of the three matches what the 1.28 manager registers.
    int matching = 0;
    for (const std::string& name : Names(*config)) {
      for (CloudController controller : kCloudControllers) {
        if (ControllerName(component, V(28), controller) == name) ++matching;
      }
    }
    EXPECT_EQ(matching, 1);
  }
}

TEST(DefaultConfigTest, DefaultRenderedAsTextLintsWithTheMismatchReported) {
  absl::StatusOr<Config> config = DefaultConfig(kKcm, V(28));
  ASSERT_TRUE(config.ok());
  std::string text = "kind: LeaderMigrationConfiguration\napiVersion: " + config->api_version +
                     "\nleaderName: " + config->leader_name + "\ncontrollerLeaders:\n";
  for (const ControllerLeader& leader : config->controller_leaders) {
    text += "  - name: " + leader.name + "\n    component: \"" + leader.component + "\"\n";
  }
  EXPECT_THAT(Formatted(Lint(text, {})), IsEmpty());
  LintResult result = Lint(text, {kKcm, V(28)});
  ASSERT_EQ(result.problems.size(), 2u);
  EXPECT_EQ(result.problems[0].field, "controllerLeaders[0].name");
  EXPECT_EQ(result.problems[1].field, "controllerLeaders[1].name");
}

TEST(RenderTest, V1ForKubeControllerManager126) {
  RenderOptions options;
  options.reader = kKcm;
  options.reader_version = V(26, 5);
  absl::StatusOr<std::string> text = Render(options);
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_EQ(*text,
            "kind: LeaderMigrationConfiguration\n"
            "apiVersion: controllermanager.config.k8s.io/v1\n"
            "leaderName: cloud-provider-extraction-migration\n"
            "controllerLeaders:\n"
            "  - name: route\n"
            "    component: kube-controller-manager\n"
            "  - name: service\n"
            "    component: kube-controller-manager\n"
            "  - name: cloud-node-lifecycle\n"
            "    component: kube-controller-manager\n");
}

TEST(RenderTest, WildcardWithNodeIpamForCloudControllerManager127) {
  RenderOptions options;
  options.reader = kCcm;
  options.reader_version = V(27);
  options.wildcard = true;
  options.include_nodeipam = true;
  EXPECT_EQ(*Render(options),
            "kind: LeaderMigrationConfiguration\n"
            "apiVersion: controllermanager.config.k8s.io/v1\n"
            "leaderName: cloud-provider-extraction-migration\n"
            "controllerLeaders:\n"
            "  - name: route\n"
            "    component: \"*\"\n"
            "  - name: service\n"
            "    component: \"*\"\n"
            "  - name: cloud-node-lifecycle\n"
            "    component: \"*\"\n"
            "  - name: nodeipam\n"
            "    component: \"*\"\n");
}

TEST(RenderTest, NamesFollowTheReadersVersion) {
  RenderOptions options;
  options.reader = kCcm;
  options.reader_version = V(28);
  options.include_nodeipam = true;
  EXPECT_EQ(*Render(options),
            "kind: LeaderMigrationConfiguration\n"
            "apiVersion: controllermanager.config.k8s.io/v1\n"
            "leaderName: cloud-provider-extraction-migration\n"
            "controllerLeaders:\n"
            "  - name: node-route-controller\n"
            "    component: cloud-controller-manager\n"
            "  - name: service-lb-controller\n"
            "    component: cloud-controller-manager\n"
            "  - name: cloud-node-lifecycle-controller\n"
            "    component: cloud-controller-manager\n"
            "  - name: node-ipam-controller\n"
            "    component: cloud-controller-manager\n");
}

TEST(RenderTest, BeforeV1TheOlderApiVersionsCarryResourceLock) {
  RenderOptions options;
  options.reader_version = V(23);
  options.leader_name = "my-migration";
  EXPECT_EQ(*Render(options),
            "kind: LeaderMigrationConfiguration\n"
            "apiVersion: controllermanager.config.k8s.io/v1beta1\n"
            "leaderName: my-migration\n"
            "resourceLock: leases\n"
            "controllerLeaders:\n"
            "  - name: route\n"
            "    component: kube-controller-manager\n"
            "  - name: service\n"
            "    component: kube-controller-manager\n"
            "  - name: cloud-node-lifecycle\n"
            "    component: kube-controller-manager\n");
  options.reader_version = V(21);
  EXPECT_THAT(*Render(options), HasSubstr("apiVersion: controllermanager.config.k8s.io/v1alpha1\n"
                                          "leaderName: my-migration\n"
                                          "resourceLock: leases\n"));
}

TEST(RenderTest, NoLeaderMigrationBefore121) {
  RenderOptions options;
  options.reader = kCcm;
  options.reader_version = V(20, 15);
  absl::StatusOr<std::string> text = Render(options);
  ASSERT_FALSE(text.ok());
  EXPECT_EQ(text.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(text.status().message(),
            "cloud-controller-manager v1.20.15 has no Leader Migration (it arrived in v1.21)");
}

TEST(RenderTest, RejectsALeaderNameThatCannotNameALease) {
  RenderOptions options;
  options.reader_version = V(26);
  options.leader_name = "Not A Lease";
  absl::StatusOr<std::string> text = Render(options);
  ASSERT_FALSE(text.ok());
  EXPECT_EQ(text.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(text.status().message(), HasSubstr("'Not A Lease' is not a valid Lease name"));
}

TEST(RenderTest, QuotesALeaderNameYamlWouldReadAsANumberOrBoolean) {
  RenderOptions options;
  options.reader_version = V(26);
  options.leader_name = "1234";
  EXPECT_THAT(*Render(options), HasSubstr("\nleaderName: \"1234\"\n"));
  options.leader_name = "yes";
  EXPECT_THAT(*Render(options), HasSubstr("\nleaderName: \"yes\"\n"));
}

// Whatever Render writes, the same reader at the same version must accept without a problem, and
// decode to exactly what was asked for.
TEST(RenderTest, RoundTripsThroughLintForEveryReaderVersionAndOption) {
  for (int minor = 21; minor <= 30; ++minor) {
    for (Component reader : {kKcm, kCcm}) {
      for (bool wildcard : {false, true}) {
        for (bool nodeipam : {false, true}) {
          SCOPED_TRACE(testing::Message() << ComponentName(reader) << " v1." << minor
                                          << " wildcard=" << wildcard << " nodeipam=" << nodeipam);
          RenderOptions options;
          options.reader = reader;
          options.reader_version = V(minor);
          options.wildcard = wildcard;
          options.include_nodeipam = nodeipam;
          absl::StatusOr<std::string> text = Render(options);
          ASSERT_TRUE(text.ok()) << text.status();
          LintResult result = Lint(*text, {reader, V(minor)});
          EXPECT_THAT(Formatted(result), IsEmpty()) << *text;
          ASSERT_TRUE(result.config.has_value());
          EXPECT_EQ(result.config->leader_name, "cloud-provider-extraction-migration");
          EXPECT_EQ(result.config->api_version, NewestApiVersion(V(minor))->api_version);
          EXPECT_EQ(result.config->resource_lock, minor < 24 ? "leases" : "");
          std::vector<std::string> expected;
          for (CloudController controller : kCloudControllers) {
            if (controller == CloudController::kNodeIpam && !nodeipam) continue;
            expected.push_back(ControllerName(reader, V(minor), controller));
          }
          EXPECT_EQ(Names(*result.config), expected);
          EXPECT_EQ(ControllersFor(*result.config, reader), expected);
          Component other = reader == kKcm ? kCcm : kKcm;
          EXPECT_EQ(ControllersFor(*result.config, other).size(), wildcard ? expected.size() : 0u);
          EXPECT_TRUE(ParseAndValidate(*text, {reader, V(minor)}).ok());
        }
      }
    }
  }
}

TEST(ControllersForTest, OwnComponentAndWildcardOnly) {
  Config config;
  config.controller_leaders = {{"route", "kube-controller-manager"},
                               {"service", "*"},
                               {"cloud-node-lifecycle", "cloud-controller-manager"},
                               {"nodeipam", "other"}};
  EXPECT_THAT(ControllersFor(config, kKcm), ElementsAre("route", "service"));
  EXPECT_THAT(ControllersFor(config, kCcm), ElementsAre("service", "cloud-node-lifecycle"));
  EXPECT_THAT(ControllersFor(Config{}, kKcm), IsEmpty());
}

}  // namespace
}  // namespace handoff::leadermigration
