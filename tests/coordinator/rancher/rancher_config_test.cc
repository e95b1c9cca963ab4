// Rancher's RKE2 and RKE phases on cluster files in the shapes Rancher produces: golden outputs of
// each phase, idempotence, the end state the guide describes, and the refusals. Golden files live
// in tests/testdata/rancher/golden/; run with HANDOFF_UPDATE_GOLDEN=1 to rewrite them after a
// deliberate change, and read the diff before committing it.
#include "coordinator/rancher/rancher_config.h"

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "common/base/yaml_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/golden.h"

namespace handoff::rancher {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;
using test_support::ExpectGolden;

std::string TestdataPath(const std::string& relative) {
  return std::string(HANDOFF_TESTDATA_DIR) + "/rancher/" + relative;
}

std::string ReadTestdata(const std::string& relative) {
  std::ifstream in(TestdataPath(relative), std::ios::binary);
  std::ostringstream content;
  content << in.rdbuf();
  return content.str();
}

// The cluster with its YAML-in-strings parsed (additionalManifest's documents, each chart's
// valuesContent), so that two files compare by meaning and not by how the strings are laid out.
YAML::Node Normalized(const std::string& text) {
  absl::StatusOr<YAML::Node> doc = LoadYaml(text, "test");
  EXPECT_TRUE(doc.ok()) << doc.status();
  if (!doc.ok()) return YAML::Node();
  YAML::Node rke_config = (*doc)["spec"]["rkeConfig"];
  if (rke_config["additionalManifest"]) {
    absl::StatusOr<std::vector<YAML::Node>> docs =
        LoadYamlDocuments(rke_config["additionalManifest"].Scalar(), "additionalManifest");
    EXPECT_TRUE(docs.ok()) << docs.status();
    YAML::Node list(YAML::NodeType::Sequence);
    for (YAML::Node manifest : *docs) {
      if (manifest["spec"] && manifest["spec"]["valuesContent"]) {
        absl::StatusOr<YAML::Node> values =
            LoadYaml(manifest["spec"]["valuesContent"].Scalar(), "valuesContent");
        EXPECT_TRUE(values.ok()) << values.status();
        manifest["spec"]["valuesContent"] = *values;
      }
      list.push_back(manifest);
    }
    rke_config["additionalManifest"] = list;
  }
  return *doc;
}

struct Rke2Case {
  std::string name;  // tests/testdata/rancher/rke2/<name>.yaml
  std::string kubernetes_version;
  bool has_expected_final;
};

const std::vector<Rke2Case>& Rke2Cases() {
  static const std::vector<Rke2Case> cases = {
      {"cluster", "v1.27.11+rke2r1", true},
      {"cluster-control-plane-entry", "", true},
      {"cluster-minimal", "v1.27.11+rke2r1", false},
  };
  return cases;
}

constexpr Phase kRke2Phases[] = {Phase::kPrepare, Phase::kDeployCcm, Phase::kMigrate,
                                 Phase::kFinalize};
constexpr Phase kRkePhases[] = {Phase::kPrepare, Phase::kMigrate, Phase::kFinalize};

TEST(Rke2PhaseTest, EachPhaseMatchesItsGoldenAndIsIdempotent) {
  for (const Rke2Case& c : Rke2Cases()) {
    SCOPED_TRACE(c.name);
    PhaseOptions options;
    options.source = c.name + ".yaml";
    options.kubernetes_version = c.kubernetes_version;
    std::string text = ReadTestdata("rke2/" + c.name + ".yaml");
    ASSERT_FALSE(text.empty());
    for (Phase phase : kRke2Phases) {
      SCOPED_TRACE(PhaseName(phase));
      absl::StatusOr<std::string> once = Rke2Phase(text, phase, options);
      ASSERT_TRUE(once.ok()) << once.status();
      absl::StatusOr<std::string> twice = Rke2Phase(*once, phase, options);
      ASSERT_TRUE(twice.ok()) << twice.status();
      EXPECT_EQ(*once, *twice) << "applying the phase twice changed the file";
      ExpectGolden(
          TestdataPath("golden/rke2/" + c.name + "." + std::string(PhaseName(phase)) + ".yaml"),
          *once);
      text = *once;
    }
    if (c.has_expected_final) {
      EXPECT_TRUE(SemanticallyEqual(Normalized(text),
                                    Normalized(ReadTestdata("rke2/" + c.name +
                                                            ".expected-final.yaml"))))
          << "the end state is not the guide's:\n"
          << text;
    }
  }
}

TEST(Rke2PhaseTest, PrepareMergesIntoTheControlPlaneEntry) {
  PhaseOptions options;
  absl::StatusOr<std::string> prepared =
      Rke2Phase(ReadTestdata("rke2/cluster-control-plane-entry.yaml"), Phase::kPrepare, options);
  ASSERT_TRUE(prepared.ok()) << prepared.status();
  YAML::Node entries = YAML::Load(*prepared)["spec"]["rkeConfig"]["machineSelectorConfig"];
  ASSERT_EQ(entries.size(), 2u) << "a second control-plane entry was added";
  YAML::Node args = entries[1]["config"]["kube-controller-manager-arg"];
  ASSERT_EQ(args.size(), 2u);
  EXPECT_EQ(args[0].Scalar(), "node-monitor-grace-period=20s");
  EXPECT_EQ(args[1].Scalar(), "enable-leader-migration");
}

TEST(Rke2PhaseTest, PrepareRecognisesAMatchLabelsSelectorAndAnExistingArg) {
  const std::string text =
      "apiVersion: provisioning.cattle.io/v1\n"
      "kind: Cluster\n"
      "metadata:\n"
      "  name: c\n"
      "spec:\n"
      "  rkeConfig:\n"
      "    machineGlobalConfig:\n"
      "      cloud-provider-name: aws\n"
      "    machineSelectorConfig:\n"
      "      - config:\n"
      "          kube-controller-manager-arg:\n"
      "            - --enable-leader-migration=true\n"
      "        machineLabelSelector:\n"
      "          matchLabels:\n"
      "            rke.cattle.io/control-plane-role: \"true\"\n";
  absl::StatusOr<std::string> prepared = Rke2Phase(text, Phase::kPrepare, PhaseOptions());
  ASSERT_TRUE(prepared.ok()) << prepared.status();
  EXPECT_EQ(*prepared, text) << "the argument was already there in another spelling";
  absl::StatusOr<std::string> deployed = Rke2Phase(text, Phase::kDeployCcm, PhaseOptions());
  ASSERT_TRUE(deployed.ok()) << deployed.status();
  absl::StatusOr<std::string> migrated = Rke2Phase(*deployed, Phase::kMigrate, PhaseOptions());
  ASSERT_TRUE(migrated.ok()) << migrated.status();
  EXPECT_THAT(*migrated, AllOf(HasSubstr("cloud-provider-name: external"),
                               Not(HasSubstr("machineSelectorConfig"))))
      << "an entry left with no config selects machines for nothing";
}

TEST(Rke2PhaseTest, DeployCcmKeepsTheOtherManifestsText) {
  PhaseOptions options;
  absl::StatusOr<std::string> prepared =
      Rke2Phase(ReadTestdata("rke2/cluster.yaml"), Phase::kPrepare, options);
  ASSERT_TRUE(prepared.ok()) << prepared.status();
  absl::StatusOr<std::string> deployed = Rke2Phase(*prepared, Phase::kDeployCcm, options);
  ASSERT_TRUE(deployed.ok()) << deployed.status();
  const std::string manifest =
      YAML::Load(*deployed)["spec"]["rkeConfig"]["additionalManifest"].Scalar();
  // The ConfigMap's comment survives: its document is written back as it came.
  EXPECT_THAT(manifest, HasSubstr("\n  owner: platform   # who to page\n"));
  EXPECT_THAT(manifest, HasSubstr("use-forwarded-headers: \"true\""));
  EXPECT_THAT(manifest, HasSubstr("--enable-leader-migration=true"));
}

// The HelmChart deploy-ccm adds, parsed from additionalManifest.
YAML::Node DeployedChart(const std::string& cluster) {
  absl::StatusOr<std::string> prepared = Rke2Phase(cluster, Phase::kPrepare, PhaseOptions());
  EXPECT_TRUE(prepared.ok()) << prepared.status();
  if (!prepared.ok()) return YAML::Node();
  absl::StatusOr<std::string> deployed = Rke2Phase(*prepared, Phase::kDeployCcm, PhaseOptions());
  EXPECT_TRUE(deployed.ok()) << deployed.status();
  if (!deployed.ok()) return YAML::Node();
  for (const YAML::Node& manifest :
       Normalized(*deployed)["spec"]["rkeConfig"]["additionalManifest"]) {
    if (manifest["metadata"]["name"].Scalar() == "aws-cloud-controller-manager") return manifest;
  }
  ADD_FAILURE() << "no aws-cloud-controller-manager chart";
  return YAML::Node();
}

std::vector<std::string> Scalars(const YAML::Node& list) {
  std::vector<std::string> scalars;
  for (const YAML::Node& item : list) scalars.push_back(item.Scalar());
  return scalars;
}

// The facts of Rancher's "Setting up the Amazon Cloud Provider" (RKE2 additionalManifest) and of
// the chart's values.yaml that deploy-ccm relies on (see kRke2Chart).
TEST(Rke2PhaseTest, DeployCcmAddsTheChartRancherDocuments) {
  const YAML::Node chart = DeployedChart(ReadTestdata("rke2/cluster-minimal.yaml"));
  ASSERT_TRUE(chart.IsMap());
  EXPECT_EQ(chart["apiVersion"].Scalar(), "helm.cattle.io/v1");
  EXPECT_EQ(chart["kind"].Scalar(), "HelmChart");
  EXPECT_EQ(chart["metadata"]["namespace"].Scalar(), "kube-system");
  const YAML::Node spec = chart["spec"];
  EXPECT_EQ(spec["chart"].Scalar(), "aws-cloud-controller-manager");
  EXPECT_EQ(spec["repo"].Scalar(), "https://kubernetes.github.io/cloud-provider-aws");
  EXPECT_EQ(spec["targetNamespace"].Scalar(), "kube-system");
  EXPECT_EQ(spec["bootstrap"].as<bool>(), true);
  const YAML::Node values = spec["valuesContent"];
  EXPECT_EQ(values["hostNetworking"].as<bool>(), true);
  EXPECT_EQ(values["nodeSelector"].size(), 1u);
  EXPECT_EQ(values["nodeSelector"]["node-role.kubernetes.io/control-plane"].Scalar(), "true");
  EXPECT_THAT(Scalars(values["args"]),
              ::testing::ElementsAre("--configure-cloud-routes=false", "--v=5",
                                     "--cloud-provider=aws", "--enable-leader-migration=true"));
  // Rancher taints an RKE2 machine without the worker role control-plane:NoSchedule, and
  // etcd:NoExecute when it is an etcd machine too, both without a value.
  std::vector<std::string> tolerated;
  for (const YAML::Node& toleration : values["tolerations"]) {
    const bool exists = toleration["operator"] && toleration["operator"].Scalar() == "Exists";
    tolerated.push_back(toleration["key"].Scalar() + ":" + toleration["effect"].Scalar() +
                        (exists ? " (any value)" : "=" + toleration["value"].Scalar()));
  }
  EXPECT_THAT(tolerated, ::testing::ElementsAre(
                             "node.cloudprovider.kubernetes.io/uninitialized:NoSchedule=true",
                             "node-role.kubernetes.io/control-plane:NoSchedule (any value)",
                             "node-role.kubernetes.io/etcd:NoExecute (any value)"));

  // A chart already in additionalManifest with no tolerations gets the same ones.
  const YAML::Node existing = DeployedChart(ReadTestdata("rke2/cluster-control-plane-entry.yaml"));
  ASSERT_TRUE(existing.IsMap());
  EXPECT_TRUE(SemanticallyEqual(existing["spec"]["valuesContent"]["tolerations"],
                                values["tolerations"]));
}

TEST(Rke2PhaseTest, APhaseWithNothingToChangeKeepsTheTextAndItsComments) {
  const std::string text = ReadTestdata("rke2/cluster.yaml");
  absl::StatusOr<std::string> prepared = Rke2Phase(text, Phase::kPrepare, PhaseOptions());
  ASSERT_TRUE(prepared.ok()) << prepared.status();
  EXPECT_THAT(*prepared, Not(HasSubstr("# A Rancher"))) << "a changed file is re-emitted";
  const std::string commented = "# kept\n" + *prepared;
  absl::StatusOr<std::string> again = Rke2Phase(commented, Phase::kPrepare, PhaseOptions());
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(*again, commented);
}

struct Refusal {
  std::string what;
  std::string text;
  Phase phase;
  absl::StatusCode code;
  std::string message;
};

TEST(Rke2PhaseTest, RefusesWithTheReason) {
  const std::string cluster = ReadTestdata("rke2/cluster.yaml");
  absl::StatusOr<std::string> prepared = Rke2Phase(cluster, Phase::kPrepare, PhaseOptions());
  ASSERT_TRUE(prepared.ok());
  absl::StatusOr<std::string> deployed = Rke2Phase(*prepared, Phase::kDeployCcm, PhaseOptions());
  ASSERT_TRUE(deployed.ok());
  std::string external = cluster;
  external.replace(external.find("cloud-provider-name: aws"), 24, "cloud-provider-name: external");
  const std::vector<Refusal> refusals = {
      {"a Deployment", "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: x\n",
       Phase::kPrepare, absl::StatusCode::kInvalidArgument,
       "c.yaml: apiVersion/kind: not a provisioning.cattle.io/v1 Cluster"},
      {"the management Cluster",
       "apiVersion: management.cattle.io/v3\nkind: Cluster\nmetadata:\n  name: c-m-x\n",
       Phase::kPrepare, absl::StatusCode::kInvalidArgument,
       "not a provisioning.cattle.io/v1 Cluster"},
      {"no rkeConfig",
       "apiVersion: provisioning.cattle.io/v1\nkind: Cluster\nmetadata:\n  name: x\nspec:\n"
       "  kubernetesVersion: v1.26.14+rke2r1\n",
       Phase::kPrepare, absl::StatusCode::kInvalidArgument, "c.yaml: spec.rkeConfig: missing"},
      {"bad YAML", "apiVersion: [\n", Phase::kPrepare, absl::StatusCode::kInvalidArgument,
       "c.yaml:"},
      {"an additionalManifest that is no YAML",
       "apiVersion: provisioning.cattle.io/v1\nkind: Cluster\nspec:\n  rkeConfig:\n"
       "    additionalManifest: \"a: [\"\n    machineGlobalConfig:\n"
       "      cloud-provider-name: external\n",
       Phase::kMigrate, absl::StatusCode::kInvalidArgument,
       "c.yaml: spec.rkeConfig.additionalManifest:"},
      {"prepare on an external cluster", external, Phase::kPrepare,
       absl::StatusCode::kFailedPrecondition,
       "spec.rkeConfig.machineGlobalConfig.cloud-provider-name: is \"external\", not \"aws\""},
      {"deploy-ccm before prepare", cluster, Phase::kDeployCcm,
       absl::StatusCode::kFailedPrecondition, "no enable-leader-migration: run --phase prepare"},
      {"migrate before deploy-ccm", *prepared, Phase::kMigrate,
       absl::StatusCode::kFailedPrecondition,
       "spec.rkeConfig.additionalManifest: no HelmChart aws-cloud-controller-manager"},
      {"finalize before migrate", *deployed, Phase::kFinalize,
       absl::StatusCode::kFailedPrecondition,
       "cloud-provider-name: is \"aws\", not \"external\""},
      {"two charts",
       "apiVersion: provisioning.cattle.io/v1\nkind: Cluster\nspec:\n  rkeConfig:\n"
       "    additionalManifest: |\n      apiVersion: helm.cattle.io/v1\n      kind: HelmChart\n"
       "      metadata:\n        name: aws-cloud-controller-manager\n      ---\n"
       "      apiVersion: helm.cattle.io/v1\n      kind: HelmChart\n"
       "      metadata:\n        name: aws-cloud-controller-manager\n"
       "    machineGlobalConfig:\n      cloud-provider-name: external\n",
       Phase::kFinalize, absl::StatusCode::kInvalidArgument, "two HelmCharts"},
  };
  PhaseOptions options;
  options.source = "c.yaml";
  for (const Refusal& refusal : refusals) {
    SCOPED_TRACE(refusal.what);
    absl::StatusOr<std::string> result = Rke2Phase(refusal.text, refusal.phase, options);
    ASSERT_FALSE(result.ok());
    EXPECT_EQ(result.status().code(), refusal.code) << result.status();
    EXPECT_THAT(std::string(result.status().message()), HasSubstr(refusal.message));
  }
}

struct RkeCase {
  std::string name;  // tests/testdata/rancher/rke/<name>.yml
  std::string kubernetes_version;
  bool use_instance_metadata_hostname;
};

TEST(RkePhaseTest, EachPhaseMatchesItsGoldenIsIdempotentAndEndsAsTheGuideSays) {
  const std::vector<RkeCase> cases = {{"cluster", "v1.27.16-rancher1-1", true},
                                      {"rancher-cluster", "", false}};
  for (const RkeCase& c : cases) {
    SCOPED_TRACE(c.name);
    PhaseOptions options;
    options.source = c.name + ".yml";
    options.kubernetes_version = c.kubernetes_version;
    options.use_instance_metadata_hostname = c.use_instance_metadata_hostname;
    std::string text = ReadTestdata("rke/" + c.name + ".yml");
    ASSERT_FALSE(text.empty());
    for (Phase phase : kRkePhases) {
      SCOPED_TRACE(PhaseName(phase));
      absl::StatusOr<std::string> once = RkePhase(text, phase, options);
      ASSERT_TRUE(once.ok()) << once.status();
      absl::StatusOr<std::string> twice = RkePhase(*once, phase, options);
      ASSERT_TRUE(twice.ok()) << twice.status();
      EXPECT_EQ(*once, *twice);
      ExpectGolden(
          TestdataPath("golden/rke/" + c.name + "." + std::string(PhaseName(phase)) + ".yml"),
          *once);
      if (phase == Phase::kFinalize) {
        EXPECT_EQ(*once, text) << "finalize changes only the chart";
      }
      text = *once;
    }
    absl::StatusOr<YAML::Node> expected =
        LoadYaml(ReadTestdata("rke/" + c.name + ".expected-final.yml"), "expected");
    ASSERT_TRUE(expected.ok()) << expected.status();
    EXPECT_TRUE(SemanticallyEqual(YAML::Load(text), *expected)) << text;
  }
}

TEST(RkePhaseTest, HelmValuesCarryLeaderMigrationUntilFinalize) {
  for (Phase phase : kRkePhases) {
    const std::string values = RkeCcmHelmValues(phase, PhaseOptions());
    ExpectGolden(
        TestdataPath("golden/rke/helm-values." + std::string(PhaseName(phase)) + ".yaml"), values);
    absl::StatusOr<YAML::Node> parsed = LoadYaml(values, "values");
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    EXPECT_EQ((*parsed)["nodeSelector"]["node-role.kubernetes.io/controlplane"].Scalar(), "true");
    // Null deletes the chart's default selector, a label RKE nodes do not carry.
    EXPECT_TRUE((*parsed)["nodeSelector"]["node-role.kubernetes.io/control-plane"].IsNull());
    EXPECT_EQ((*parsed)["tolerations"].size(), 3u);
    EXPECT_THAT(Scalars((*parsed)["args"]),
                ::testing::IsSupersetOf({"--configure-cloud-routes=false",
                                         "--use-service-account-credentials=true", "--v=2",
                                         "--cloud-provider=aws"}));
    // --use-service-account-credentials needs `get` on serviceaccounts (Rancher's guide), and the
    // list replaces the chart's, so the chart's tokenreviews rule must be there too.
    std::vector<std::string> resources;
    for (const YAML::Node& rule : (*parsed)["clusterRoleRules"]) {
      for (const std::string& resource : Scalars(rule["resources"])) {
        resources.push_back(resource);
        if (resource == "serviceaccounts") {
          EXPECT_THAT(Scalars(rule["verbs"]), ::testing::ElementsAre("create", "get"));
        }
      }
    }
    EXPECT_THAT(resources, ::testing::IsSupersetOf({"serviceaccounts", "nodes", "leases",
                                                    "tokenreviews", "subjectaccessreviews"}));
    EXPECT_EQ(values.find("--enable-leader-migration=true") != std::string::npos,
              phase != Phase::kFinalize);
  }
}

TEST(RkePhaseTest, RefusesWithTheReason) {
  const std::string cluster = ReadTestdata("rke/cluster.yml");
  std::string external = cluster;
  external.replace(external.find("name: aws"), 9, "name: external-aws");
  const std::vector<Refusal> refusals = {
      {"an RKE2 Cluster", ReadTestdata("rke2/cluster.yaml"), Phase::kPrepare,
       absl::StatusCode::kInvalidArgument,
       "cluster.yml: apiVersion: \"provisioning.cattle.io/v1\": a Kubernetes object"},
      {"no cloud_provider", "nodes: []\nservices: {}\n", Phase::kPrepare,
       absl::StatusCode::kInvalidArgument, "cluster.yml: cloud_provider: missing"},
      {"bad YAML", "nodes: [\n", Phase::kPrepare, absl::StatusCode::kInvalidArgument,
       "cluster.yml:"},
      {"deploy-ccm", cluster, Phase::kDeployCcm, absl::StatusCode::kInvalidArgument,
       "--phase deploy-ccm is RKE2's"},
      {"migrate before prepare", cluster, Phase::kMigrate, absl::StatusCode::kFailedPrecondition,
       "cluster.yml: services.kube-controller.extra_args: no enable-leader-migration"},
      {"finalize before migrate", cluster, Phase::kFinalize,
       absl::StatusCode::kFailedPrecondition,
       "cluster.yml: cloud_provider.name: is \"aws\", not \"external-aws\""},
      {"prepare after migrate", external, Phase::kPrepare, absl::StatusCode::kFailedPrecondition,
       "cloud_provider.name: is \"external-aws\", not \"aws\""},
      {"the wrapper without cloud_provider",
       "name: x\nrancher_kubernetes_engine_config:\n  services: {}\n", Phase::kPrepare,
       absl::StatusCode::kInvalidArgument,
       "rancher_kubernetes_engine_config.cloud_provider: missing"},
  };
  PhaseOptions options;
  options.source = "cluster.yml";
  for (const Refusal& refusal : refusals) {
    SCOPED_TRACE(refusal.what);
    absl::StatusOr<std::string> result = RkePhase(refusal.text, refusal.phase, options);
    ASSERT_FALSE(result.ok());
    EXPECT_EQ(result.status().code(), refusal.code) << result.status();
    EXPECT_THAT(std::string(result.status().message()), HasSubstr(refusal.message));
  }
}

TEST(PhaseTest, ParsesTheNamesAndRefusesOthers) {
  for (Phase phase : kRke2Phases) {
    absl::StatusOr<Phase> parsed = ParsePhase(PhaseName(phase));
    ASSERT_TRUE(parsed.ok());
    EXPECT_EQ(*parsed, phase);
  }
  absl::StatusOr<Phase> bad = ParsePhase("deploy");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(std::string(bad.status().message()), HasSubstr("--phase \"deploy\""));
}

}  // namespace
}  // namespace handoff::rancher
