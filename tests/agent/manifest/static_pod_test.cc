#include "agent/manifest/static_pod.h"

#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/common/base/yaml_bomb.h"

namespace handoff {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Optional;

constexpr char kKcmPath[] = "nodes/kubeadm/etc/kubernetes/manifests/kube-controller-manager.yaml";
constexpr char kApiserverPath[] = "nodes/kubeadm/etc/kubernetes/manifests/kube-apiserver.yaml";
constexpr char kSchedulerPath[] = "nodes/kubeadm/etc/kubernetes/manifests/kube-scheduler.yaml";
constexpr char kArgsPath[] = "manifests/kube-controller-manager-args.yaml";
constexpr char kSplitPath[] = "manifests/kube-controller-manager-split.yaml";

std::string ReadTestData(const std::string& relative) {
  std::ifstream in(std::string(HANDOFF_TESTDATA_DIR) + "/" + relative, std::ios::binary);
  EXPECT_TRUE(in) << "cannot open testdata " << relative;
  std::ostringstream content;
  content << in.rdbuf();
  return content.str();
}

StaticPod ParseOrDie(const std::string& text, const std::string& source = "pod.yaml") {
  absl::StatusOr<StaticPod> pod = StaticPod::Parse(text, source);
  EXPECT_TRUE(pod.ok()) << pod.status();
  if (!pod.ok()) return *StaticPod::Parse("apiVersion: v1\n", source);
  return *std::move(pod);
}

StaticPod LoadFixture(const std::string& relative) {
  return ParseOrDie(ReadTestData(relative), "/etc/kubernetes/manifests/" + relative);
}

// `text` with the one occurrence of `from` replaced by `to`; fails the test when `from` is not
// there exactly once, so that an expectation cannot silently match nothing.
std::string ReplaceOnce(const std::string& text, const std::string& from, const std::string& to) {
  const size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << "missing: " << from;
  EXPECT_EQ(text.find(from, at + 1), std::string::npos) << "repeated: " << from;
  if (at == std::string::npos) return text;
  std::string out = text;
  out.replace(at, from.size(), to);
  return out;
}

size_t ContainerOrDie(const StaticPod& pod, const std::string& name) {
  absl::StatusOr<size_t> index = pod.FindContainer(name);
  EXPECT_TRUE(index.ok()) << index.status();
  return index.ok() ? *index : 0;
}

HostPathMount LeaderMigrationMount() {
  HostPathMount mount;
  mount.name = "leader-migration";
  mount.host_path = "/etc/kubernetes/leader-migration.yaml";
  mount.type = "FileOrCreate";
  mount.mount_path = "/etc/kubernetes/leader-migration.yaml";
  mount.read_only = true;
  return mount;
}

// --- Parse, names, Emit -----------------------------------------------------------------------

TEST(StaticPodParseTest, NonMapIsNotAPod) {
  absl::Status status = StaticPod::Parse("- a\n- b\n", "list.yaml").status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message(), "list.yaml: not a Pod manifest (a YAML map)");
}

TEST(StaticPodParseTest, YamlErrorsNameTheFile) {
  absl::Status status = StaticPod::Parse("a: b: c\n", "/m/kcm.yaml").status();
  EXPECT_EQ(status.message(), "/m/kcm.yaml:1:5: illegal map value");
  EXPECT_EQ(StaticPod::Parse("", "/m/kcm.yaml").status().message(),
            "/m/kcm.yaml: the file holds no YAML document");
}

TEST(StaticPodParseTest, NamesAndSource) {
  StaticPod pod = LoadFixture(kKcmPath);
  EXPECT_EQ(pod.source(), std::string("/etc/kubernetes/manifests/") + kKcmPath);
  EXPECT_EQ(pod.PodName(), "kube-controller-manager");
  EXPECT_EQ(pod.Namespace(), "kube-system");
  EXPECT_THAT(pod.ContainerNames(), ElementsAre("kube-controller-manager"));
}

TEST(StaticPodParseTest, NamespaceDefaultsToDefault) {
  StaticPod pod = ParseOrDie("apiVersion: v1\nkind: Pod\nmetadata:\n  name: x\n");
  EXPECT_EQ(pod.Namespace(), "default");
}

TEST(StaticPodParseTest, PodWithoutMetadataOrSpecDoesNotThrow) {
  StaticPod pod = ParseOrDie("apiVersion: v1\nkind: Pod\n", "bare.yaml");
  EXPECT_EQ(pod.PodName(), "");
  EXPECT_EQ(pod.Namespace(), "default");
  EXPECT_THAT(pod.ContainerNames(), IsEmpty());
  EXPECT_EQ(pod.FindContainer("kcm").status().message(),
            "bare.yaml: spec.containers has no container named 'kcm' (it has: none)");
  EXPECT_EQ(pod.Validate().message(), "bare.yaml: metadata.name: must be set; spec: must be a map");
  EXPECT_FALSE(pod.RemoveVolume("x"));
  EXPECT_EQ(pod.Emit(), "apiVersion: v1\nkind: Pod\n");
}

TEST(StaticPodParseTest, ScalarWhereAMapBelongsDoesNotThrow) {
  // Parse refuses these shapes (below); a tree changed through node() can still have them.
  StaticPod pod = ParseOrDie("apiVersion: v1\nkind: Pod\n", "odd.yaml");
  pod.node()["metadata"] = "oops";
  pod.node()["spec"]["containers"].push_back("just-a-string");
  pod.node()["spec"]["volumes"].push_back(7);
  EXPECT_EQ(pod.PodName(), "");
  EXPECT_THAT(pod.ContainerNames(), ElementsAre(""));
  EXPECT_EQ(pod.Validate().message(),
            "odd.yaml: metadata.name: must be set; spec.volumes[0].name: must be set; "
            "spec.containers[0].name: must be set; spec.containers[0].image: must be set");
  EXPECT_FALSE(pod.RemoveVolume("x"));
}

// --- Shapes the kubelet's decoder refuses -------------------------------------------------------

constexpr char kKcmSource[] = "/etc/kubernetes/manifests/kube-controller-manager.yaml";

// Why the kubeadm kube-controller-manager manifest with `from` replaced by `to` does not parse.
std::string ParseEditedKcm(const std::string& from, const std::string& to) {
  const std::string text = ReplaceOnce(ReadTestData(kKcmPath), from, to);
  return std::string(StaticPod::Parse(text, kKcmSource).status().message());
}

TEST(StaticPodShapeTest, ArgsAsOneStringIsRefused) {
  const std::string message = ParseEditedKcm(
      "    name: kube-controller-manager\n",
      "    name: kube-controller-manager\n    args: \"--v=2 --enable-leader-migration=false\"\n");
  EXPECT_EQ(message,
            std::string(kKcmSource) +
                ":47: spec.containers[0].args: must be a list of strings (the kubelet refuses "
                "this manifest), found a string");
}

TEST(StaticPodShapeTest, CommandAsOneStringIsRefused) {
  EXPECT_EQ(ParseEditedKcm("  - command:\n    - kube-controller-manager\n",
                           "  - command: kube-controller-manager\n    args:\n"),
            std::string(kKcmSource) +
                ":12: spec.containers[0].command: must be a list of strings (the kubelet refuses "
                "this manifest), found a string");
}

TEST(StaticPodShapeTest, NumbersAndBooleansInAListOfStringsAreRefused) {
  // sigs.k8s.io/yaml makes them JSON numbers and booleans, which []string does not take.
  const std::string message =
      ParseEditedKcm("    - --use-service-account-credentials=true\n",
                     "    - --use-service-account-credentials=true\n    - --v\n    - 2\n"
                     "    - true\n");
  EXPECT_EQ(message,
            std::string(kKcmSource) +
                ":35: spec.containers[0].command[22]: must be a string (the kubelet refuses this "
                "manifest), found a number (2); quote it: \"2\"; spec.containers[0].command[23] "
                "(line 36): must be a string, found a boolean (true); quote it: \"true\"");
}

TEST(StaticPodShapeTest, WhatTheKubeletAcceptsIsAccepted) {
  // Quoted numbers, text that only looks special, dates (go-yaml v2 keeps them strings), null
  // items and fields (the decoder leaves the zero value), readOnly as any YAML 1.1 boolean.
  std::string text = ReplaceOnce(ReadTestData(kKcmPath),
                                 "    - --use-service-account-credentials=true\n",
                                 "    - --use-service-account-credentials=true\n    - \"2\"\n"
                                 "    - 2024-01-02\n    - 12:30\n    - 1e400\n    -\n");
  text = ReplaceOnce(text, "    name: kube-controller-manager\n",
                     "    name: kube-controller-manager\n    env:\n    args: ~\n");
  text = ReplaceOnce(text, "      name: ca-certs\n      readOnly: true\n",
                     "      name: ca-certs\n      readOnly: yes\n");
  absl::StatusOr<StaticPod> pod = StaticPod::Parse(text, kKcmSource);
  ASSERT_TRUE(pod.ok()) << pod.status();
  EXPECT_EQ(pod->FindHostPathMount(0, "ca-certs")->read_only, true);
  EXPECT_EQ(pod->Argv(0).back(), "");
}

TEST(StaticPodShapeTest, LabelsAndAnnotationsAreMapsOfStrings) {
  const std::string message =
      ParseEditedKcm("    tier: control-plane\n",
                     "    tier: control-plane\n    enabled: true\n    replicas: 3\n"
                     "  annotations:\n    note: [a, b]\n    ok: \"3\"\n");
  EXPECT_EQ(message,
            std::string(kKcmSource) +
                ":8: metadata.labels[\"enabled\"]: must be a string (the kubelet refuses this "
                "manifest), found a boolean (true); quote it: \"true\"; "
                "metadata.labels[\"replicas\"] (line 9): must be a string, found a number (3); "
                "quote it: \"3\"; metadata.annotations[\"note\"] (line 11): must be a string, "
                "found a list");
}

TEST(StaticPodShapeTest, EveryFieldHandoffReadsIsChecked) {
  absl::Status status = StaticPod::Parse(
      "apiVersion: v1\n"
      "kind: Pod\n"
      "metadata:\n"
      "  name: [x]\n"
      "  namespace: 5\n"
      "spec:\n"
      "  containers:\n"
      "  - name: {a: b}\n"
      "    image: 1.27\n"
      "    env:\n"
      "    - name: HTTP_PROXY\n"
      "      value: 8080\n"
      "    - name: X\n"
      "      valueFrom: secret\n"
      "    - just-text\n"
      "    volumeMounts:\n"
      "    - mountPath: [/a]\n"
      "      name: a\n"
      "      readOnly: \"true\"\n"
      "  - not-a-container\n"
      "  volumes:\n"
      "  - name: a\n"
      "    hostPath: /a\n"
      "  - name: b\n"
      "    hostPath:\n"
      "      path: /b\n"
      "      type: 1\n",
      "pod.yaml")
                             .status();
  EXPECT_EQ(status.message(),
            "pod.yaml:4: metadata.name: must be a string (the kubelet refuses this manifest), "
            "found a list; metadata.namespace (line 5): must be a string, found a number (5); "
            "quote it: \"5\"; spec.containers[0].name (line 8): must be a string, found a map; "
            "spec.containers[0].image (line 9): must be a string, found a number (1.27); quote "
            "it: \"1.27\"; spec.containers[0].env[0].value (line 12): must be a string, found a "
            "number (8080); quote it: \"8080\"; spec.containers[0].env[1].valueFrom (line 14): "
            "must be a map, found a string; spec.containers[0].env[2] (line 15): must be a map, "
            "found a string; spec.containers[0].volumeMounts[0].mountPath (line 17): must be a "
            "string, found a list; spec.containers[0].volumeMounts[0].readOnly (line 19): must "
            "be true or false, found a string; spec.containers[1] (line 20): must be a map, "
            "found a string; and 2 more");
}

TEST(StaticPodShapeTest, TopLevelShapes) {
  EXPECT_EQ(StaticPod::Parse("apiVersion: v1\nkind: Pod\nmetadata: oops\nspec: []\n", "p.yaml")
                .status()
                .message(),
            "p.yaml:3: metadata: must be a map (the kubelet refuses this manifest), found a "
            "string; spec (line 4): must be a map, found a list");
  EXPECT_EQ(StaticPod::Parse("apiVersion: v1\nkind: Pod\nspec:\n  containers: {}\n", "p.yaml")
                .status()
                .message(),
            "p.yaml:4: spec.containers: must be a list (the kubelet refuses this manifest), "
            "found a map");
}

TEST(StaticPodShapeTest, AliasBombIsRefusedBeforeItExpands) {
  const std::string text = ReplaceOnce(ReadTestData(kKcmPath), "  creationTimestamp: null\n",
                                       "  creationTimestamp: null\n  annotations:\n" +
                                           testing::AliasBombEntries(7, 4));
  absl::Status status = StaticPod::Parse(text, kKcmSource).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(status.message()),
              ::testing::StartsWith(std::string(kKcmSource) +
                                    ":6:9: YAML anchors and aliases are not accepted (&l0"));
}

TEST(StaticPodEmitTest, KubeadmManifestsComeBackByteForByte) {
  for (const char* path : {kKcmPath, kApiserverPath, kSchedulerPath, kArgsPath, kSplitPath}) {
    const std::string text = ReadTestData(path);
    EXPECT_EQ(LoadFixture(path).Emit(), text) << path;
  }
}

TEST(StaticPodEmitTest, SemanticallyEqualsIgnoresFormattingOnly) {
  StaticPod pod = LoadFixture(kKcmPath);
  StaticPod reordered = ParseOrDie("kind: Pod\napiVersion: \"v1\"\nmetadata: {name: x}\n");
  StaticPod same = ParseOrDie("apiVersion: v1\nkind: Pod\nmetadata:\n  name: 'x'\n");
  EXPECT_TRUE(reordered.SemanticallyEquals(same));
  EXPECT_TRUE(pod.SemanticallyEquals(ParseOrDie(pod.Emit())));
  StaticPod changed = pod;
  changed.SetFlag(0, "v", "2");
  EXPECT_FALSE(pod.SemanticallyEquals(changed));
}

// --- Containers and flags ---------------------------------------------------------------------

TEST(StaticPodValueTest, CopiesAreDeepAndMovesLeaveAnEmptyPod) {
  // A vector of pods moves them when it grows only if the move cannot throw.
  static_assert(std::is_nothrow_move_constructible_v<StaticPod>);
  static_assert(std::is_nothrow_move_assignable_v<StaticPod>);
  const StaticPod original = ParseOrDie(ReadTestData(kKcmPath), "kcm.yaml");
  StaticPod copy = original;
  copy.SetFlag(0, "cloud-provider", std::string("9"));
  EXPECT_EQ(original.GetFlag(0, "cloud-provider"), "aws");
  EXPECT_EQ(copy.GetFlag(0, "cloud-provider"), "9");

  StaticPod moved = std::move(copy);
  EXPECT_EQ(moved.GetFlag(0, "cloud-provider"), "9");
  EXPECT_EQ(moved.source(), "kcm.yaml");
  EXPECT_THAT(copy.ContainerNames(), IsEmpty());  // NOLINT(bugprone-use-after-move)

  StaticPod assigned = ParseOrDie("apiVersion: v1\nkind: Pod\n");
  assigned = std::move(moved);
  EXPECT_EQ(assigned.GetFlag(0, "cloud-provider"), "9");
  // Reusing a moved-from pod does not touch the pod it moved to.
  moved = original;  // NOLINT(bugprone-use-after-move)
  moved.SetFlag(0, "cloud-provider", std::string("5"));
  EXPECT_EQ(assigned.GetFlag(0, "cloud-provider"), "9");
  EXPECT_EQ(original.GetFlag(0, "cloud-provider"), "aws");

  std::vector<StaticPod> pods;
  for (int i = 0; i < 20; ++i) pods.push_back(original);
  pods.front().SetFlag(0, "cloud-provider", std::string("7"));
  EXPECT_EQ(pods.front().GetFlag(0, "cloud-provider"), "7");
  EXPECT_EQ(pods.back().GetFlag(0, "cloud-provider"), "aws");
}

TEST(StaticPodContainerTest, FindContainerNamesTheFileAndTheContainersPresent) {
  StaticPod pod = LoadFixture(kSplitPath);
  EXPECT_EQ(pod.FindContainer("sidecar").value_or(99), 1u);
  EXPECT_EQ(pod.FindContainer("kube-controller-manager").value_or(99), 0u);
  absl::Status status = pod.FindContainer("cloud-controller-manager").status();
  EXPECT_EQ(status.code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(status.message(),
            "/etc/kubernetes/manifests/manifests/kube-controller-manager-split.yaml: "
            "spec.containers has no container named 'cloud-controller-manager' (it has: "
            "kube-controller-manager, sidecar)");
}

TEST(StaticPodFlagTest, KubeadmFlagsInCommand) {
  StaticPod pod = LoadFixture(kKcmPath);
  const size_t kcm = ContainerOrDie(pod, "kube-controller-manager");
  EXPECT_THAT(pod.GetFlag(kcm, "cloud-provider"), Optional(std::string("aws")));
  EXPECT_THAT(pod.GetFlag(kcm, "controllers"),
              Optional(std::string("*,bootstrapsigner,tokencleaner")));
  EXPECT_EQ(pod.GetFlag(kcm, "leader-migration-config"), std::nullopt);
  EXPECT_EQ(pod.CountFlag(kcm, "cloud-provider"), 1u);
  EXPECT_EQ(pod.CountFlag(kcm, "external-cloud-volume-plugin"), 0u);
  const std::vector<std::string> argv = pod.Argv(kcm);
  ASSERT_EQ(argv.size(), 21u);
  EXPECT_EQ(argv.front(), "kube-controller-manager");
  EXPECT_EQ(argv.back(), "--use-service-account-credentials=true");
}

TEST(StaticPodFlagTest, FlagsInArgsWithCommandNamingTheBinary) {
  StaticPod pod = LoadFixture(kArgsPath);
  const size_t kcm = ContainerOrDie(pod, "kube-controller-manager");
  EXPECT_THAT(pod.Argv(kcm),
              ElementsAre("kube-controller-manager", "--allocate-node-cidrs=true",
                          "--cloud-provider", "aws", "--cluster-cidr=192.168.0.0/16",
                          "--kubeconfig=/etc/kubernetes/controller-manager.conf", "--leader-elect",
                          "--use-service-account-credentials=true"));
  EXPECT_THAT(pod.GetFlag(kcm, "cloud-provider"), Optional(std::string("aws")));
  EXPECT_THAT(pod.GetFlag(kcm, "leader-elect"), Optional(std::string("true")));
  EXPECT_EQ(pod.CountFlag(kcm, "cloud-provider"), 1u);
}

TEST(StaticPodFlagTest, SplitFlagsInCommand) {
  StaticPod pod = LoadFixture(kSplitPath);
  EXPECT_THAT(pod.GetFlag(0, "cloud-provider"), Optional(std::string("aws")));
  EXPECT_THAT(pod.GetFlag(0, "leader-elect"), Optional(std::string("true")));
  EXPECT_THAT(pod.GetFlag(1, "interval"), Optional(std::string("10s")));
  EXPECT_EQ(pod.GetFlag(1, "cloud-provider"), std::nullopt);
}

TEST(StaticPodFlagTest, CommandAndArgsAreOneArgv) {
  StaticPod pod = ParseOrDie(
      "spec:\n  containers:\n  - name: c\n    command: [kcm, --cloud-provider=aws]\n"
      "    args: [--cloud-provider=external, --v=2]\n");
  EXPECT_THAT(pod.Argv(0),
              ElementsAre("kcm", "--cloud-provider=aws", "--cloud-provider=external", "--v=2"));
  EXPECT_THAT(pod.GetFlag(0, "cloud-provider"), Optional(std::string("external")));
  EXPECT_EQ(pod.CountFlag(0, "cloud-provider"), 2u);
}

TEST(StaticPodFlagTest, SetFlagRewritesKubeadmCommandInPlace) {
  const std::string text = ReadTestData(kKcmPath);
  StaticPod pod = LoadFixture(kKcmPath);
  pod.SetFlag(0, "cloud-provider", "external");
  EXPECT_EQ(pod.Emit(),
            ReplaceOnce(text, "    - --cloud-provider=aws\n", "    - --cloud-provider=external\n"));
}

TEST(StaticPodFlagTest, SetFlagAddsNewFlagInKubeadmOrder) {
  const std::string text = ReadTestData(kKcmPath);
  StaticPod pod = LoadFixture(kKcmPath);
  pod.SetFlag(0, "enable-leader-migration", std::nullopt);
  pod.SetFlag(0, "leader-migration-config", "/etc/kubernetes/leader-migration.yaml");
  std::string want = ReplaceOnce(text, "    - --controllers=*,bootstrapsigner,tokencleaner\n",
                                 "    - --controllers=*,bootstrapsigner,tokencleaner\n"
                                 "    - --enable-leader-migration\n");
  want = ReplaceOnce(want, "    - --leader-elect=true\n",
                     "    - --leader-elect=true\n"
                     "    - --leader-migration-config=/etc/kubernetes/leader-migration.yaml\n");
  EXPECT_EQ(pod.Emit(), want);
}

TEST(StaticPodFlagTest, SetFlagInArgsKeepsSplitFormAndAddsToArgs) {
  const std::string text = ReadTestData(kArgsPath);
  StaticPod pod = LoadFixture(kArgsPath);
  pod.SetFlag(0, "cloud-provider", "external");
  pod.SetFlag(0, "leader-migration-config", "/etc/kubernetes/lm.yaml");
  std::string want = ReplaceOnce(text, "    - --cloud-provider\n    - aws\n",
                                 "    - --cloud-provider\n    - external\n");
  want = ReplaceOnce(
      want, "    - --leader-elect\n",
      "    - --leader-elect\n    - --leader-migration-config=/etc/kubernetes/lm.yaml\n");
  EXPECT_EQ(pod.Emit(), want);
  EXPECT_THAT(pod.GetFlag(0, "cloud-provider"), Optional(std::string("external")));
}

TEST(StaticPodFlagTest, SetFlagKeepsSplitFormInCommand) {
  const std::string text = ReadTestData(kSplitPath);
  StaticPod pod = LoadFixture(kSplitPath);
  pod.SetFlag(0, "cloud-provider", "external");
  EXPECT_EQ(pod.Emit(), ReplaceOnce(text, "    - --cloud-provider\n    - aws\n",
                                    "    - --cloud-provider\n    - external\n"));
}

TEST(StaticPodFlagTest, SplitValueThatLooksLikeANumberIsQuoted) {
  // command is a []string: a plain 40 would not decode.
  StaticPod pod = LoadFixture(kSplitPath);
  pod.SetFlag(0, "cloud-provider", "40");
  EXPECT_THAT(pod.Emit(), HasSubstr("    - --cloud-provider\n    - \"40\"\n"));
  EXPECT_THAT(ParseOrDie(pod.Emit()).GetFlag(0, "cloud-provider"), Optional(std::string("40")));
}

TEST(StaticPodFlagTest, SetFlagMovesAFlagFromCommandToArgs) {
  StaticPod pod = ParseOrDie(
      "spec:\n  containers:\n  - args:\n    - --cloud-provider=aws\n    - --v=2\n"
      "    command:\n    - kcm\n    - --cloud-provider=gce\n    name: c\n");
  pod.SetFlag(0, "cloud-provider", "external");
  EXPECT_EQ(pod.Emit(),
            "spec:\n  containers:\n  - args:\n    - --cloud-provider=external\n    - --v=2\n"
            "    command:\n    - kcm\n    name: c\n");
  EXPECT_EQ(pod.CountFlag(0, "cloud-provider"), 1u);
}

TEST(StaticPodFlagTest, SetFlagOnlyInCommandStaysInCommand) {
  StaticPod pod = ParseOrDie(
      "spec:\n  containers:\n  - args:\n    - --v=2\n"
      "    command:\n    - kcm\n    - --cloud-provider=gce\n    name: c\n");
  pod.SetFlag(0, "cloud-provider", "external");
  EXPECT_EQ(pod.Emit(),
            "spec:\n  containers:\n  - args:\n    - --v=2\n"
            "    command:\n    - kcm\n    - --cloud-provider=external\n    name: c\n");
}

TEST(StaticPodFlagTest, SetFlagWithoutCommandOrArgsCreatesCommand) {
  StaticPod pod = ParseOrDie("spec:\n  containers:\n  - image: x\n    name: c\n");
  pod.SetFlag(0, "v", "2");
  EXPECT_EQ(pod.Emit(),
            "spec:\n  containers:\n  - image: x\n    name: c\n    command:\n    - --v=2\n");
}

TEST(StaticPodFlagTest, RemoveFlagFromKubeadmCommand) {
  const std::string text = ReadTestData(kKcmPath);
  StaticPod pod = LoadFixture(kKcmPath);
  EXPECT_TRUE(pod.RemoveFlag(0, "cloud-provider"));
  EXPECT_TRUE(pod.RemoveFlag(0, "cloud-config"));
  std::string want = ReplaceOnce(text, "    - --cloud-provider=aws\n", "");
  want = ReplaceOnce(want, "    - --cloud-config=/etc/kubernetes/cloud.conf\n", "");
  EXPECT_EQ(pod.Emit(), want);
  EXPECT_FALSE(pod.RemoveFlag(0, "cloud-provider"));
  EXPECT_EQ(pod.Emit(), want);
}

TEST(StaticPodFlagTest, RemoveFlagTakesItsSplitValueAndEveryCopy) {
  StaticPod pod = ParseOrDie(
      "spec:\n  containers:\n  - args:\n    - --cloud-provider\n    - aws\n    - --v=2\n"
      "    command:\n    - kcm\n    - --cloud-provider=gce\n    name: c\n");
  EXPECT_TRUE(pod.RemoveFlag(0, "cloud-provider"));
  EXPECT_EQ(pod.Emit(),
            "spec:\n  containers:\n  - args:\n    - --v=2\n"
            "    command:\n    - kcm\n    name: c\n");
}

TEST(StaticPodFlagTest, AbsentFlagLeavesTheManifestAlone) {
  const std::string text = ReadTestData(kArgsPath);
  StaticPod pod = LoadFixture(kArgsPath);
  EXPECT_FALSE(pod.RemoveFlag(0, "external-cloud-volume-plugin"));
  EXPECT_EQ(pod.Emit(), text);
}

TEST(StaticPodFlagTest, ItemsNotEditedKeepTheirForm) {
  // A quoted 4 stays quoted (plain, it would be a number, which the kubelet refuses in a
  // command); handoff only edits what it is asked to.
  StaticPod pod = ParseOrDie(
      "spec:\n  containers:\n  - command:\n    - kcm\n    - --v\n    - \"4\"\n"
      "    - --cloud-provider=aws\n    name: c\n");
  pod.SetFlag(0, "cloud-provider", "external");
  EXPECT_EQ(pod.Emit(),
            "spec:\n  containers:\n  - command:\n    - kcm\n    - --v\n    - \"4\"\n"
            "    - --cloud-provider=external\n    name: c\n");
}

TEST(StaticPodFlagTest, QuotedLabelAndEnvValuesSurviveEdits) {
  StaticPod pod = LoadFixture(kArgsPath);
  pod.SetFlag(0, "cloud-provider", "external");
  pod.RemoveFlag(0, "leader-elect");
  pod.SetImage(0, "registry.k8s.io/kube-controller-manager:v1.27.4");
  const std::string emitted = pod.Emit();
  EXPECT_THAT(emitted, HasSubstr("    handoff.example.com/managed: \"true\"\n"));
  EXPECT_THAT(emitted, HasSubstr("      value: \"2\"\n"));
  StaticPod reloaded = ParseOrDie(emitted);
  EXPECT_TRUE(reloaded.SemanticallyEquals(pod));
  EXPECT_THAT(reloaded.Emit(), HasSubstr("    handoff.example.com/managed: \"true\"\n"));
}

// --- Images -----------------------------------------------------------------------------------

TEST(StaticPodImageTest, SetImageRewritesOneLine) {
  const std::string text = ReadTestData(kKcmPath);
  StaticPod pod = LoadFixture(kKcmPath);
  EXPECT_EQ(pod.Image(0), "registry.k8s.io/kube-controller-manager:v1.26.9");
  pod.SetImage(0, "registry.k8s.io/kube-controller-manager:v1.27.6");
  EXPECT_EQ(pod.Image(0), "registry.k8s.io/kube-controller-manager:v1.27.6");
  EXPECT_EQ(pod.Emit(),
            ReplaceOnce(text, "    image: registry.k8s.io/kube-controller-manager:v1.26.9\n",
                        "    image: registry.k8s.io/kube-controller-manager:v1.27.6\n"));
}

TEST(StaticPodImageTest, ImageOfSecondContainer) {
  StaticPod pod = LoadFixture(kSplitPath);
  EXPECT_EQ(pod.Image(1), "registry.example.com/sidecar:1.0");
  pod.SetImage(1, "registry.example.com/sidecar:2.0");
  EXPECT_EQ(pod.Image(0), "registry.k8s.io/kube-controller-manager:v1.26.9");
  EXPECT_EQ(pod.Image(1), "registry.example.com/sidecar:2.0");
}

// --- hostPath volumes and mounts --------------------------------------------------------------

TEST(StaticPodMountTest, FindHostPathMountAndList) {
  StaticPod pod = LoadFixture(kKcmPath);
  std::optional<HostPathMount> kubeconfig = pod.FindHostPathMount(0, "kubeconfig");
  ASSERT_TRUE(kubeconfig.has_value());
  EXPECT_EQ(kubeconfig->name, "kubeconfig");
  EXPECT_EQ(kubeconfig->host_path, "/etc/kubernetes/controller-manager.conf");
  EXPECT_EQ(kubeconfig->type, "FileOrCreate");
  EXPECT_EQ(kubeconfig->mount_path, "/etc/kubernetes/controller-manager.conf");
  EXPECT_TRUE(kubeconfig->read_only);
  std::optional<HostPathMount> flexvolume = pod.FindHostPathMount(0, "flexvolume-dir");
  ASSERT_TRUE(flexvolume.has_value());
  EXPECT_FALSE(flexvolume->read_only);
  EXPECT_EQ(pod.FindHostPathMount(0, "missing"), std::nullopt);
  std::vector<std::string> names;
  for (const HostPathMount& mount : pod.HostPathMounts(0)) names.push_back(mount.name);
  EXPECT_THAT(names, ElementsAre("ca-certs", "etc-ca-certificates", "cloud-config",
                                 "flexvolume-dir", "k8s-certs", "kubeconfig",
                                 "usr-local-share-ca-certificates", "usr-share-ca-certificates"));
}

TEST(StaticPodMountTest, OtherVolumeKindsAreNotHostPathMounts) {
  StaticPod pod = ParseOrDie(
      "spec:\n  containers:\n  - name: c\n    volumeMounts:\n    - mountPath: /tmp\n"
      "      name: scratch\n    - mountPath: /etc/x\n      name: x\n  volumes:\n"
      "  - emptyDir: {}\n    name: scratch\n  - hostPath:\n      path: /etc/x\n    name: x\n");
  std::vector<HostPathMount> mounts = pod.HostPathMounts(0);
  ASSERT_EQ(mounts.size(), 1u);
  EXPECT_EQ(mounts[0].name, "x");
  EXPECT_EQ(mounts[0].type, "");
  EXPECT_FALSE(mounts[0].read_only);
  EXPECT_EQ(pod.FindHostPathMount(0, "scratch"), std::nullopt);
}

TEST(StaticPodMountTest, EnsureHostPathMountAddsVolumeAndMountInKubeadmOrder) {
  // The apiserver's mounts are sorted by name, as kubeadm writes them: the new one goes between.
  const std::string text = ReadTestData(kApiserverPath);
  StaticPod pod = LoadFixture(kApiserverPath);
  HostPathMount mount;
  mount.name = "etc-pki";
  mount.host_path = "/etc/pki";
  mount.type = "DirectoryOrCreate";
  mount.mount_path = "/etc/pki";
  ASSERT_TRUE(pod.EnsureHostPathMount(0, mount).ok());
  std::string want = ReplaceOnce(text,
                                 "      name: cloud-config\n"
                                 "      readOnly: true\n",
                                 "      name: cloud-config\n"
                                 "      readOnly: true\n"
                                 "    - mountPath: /etc/pki\n"
                                 "      name: etc-pki\n"
                                 "      readOnly: true\n");
  want = ReplaceOnce(want, "\n    name: cloud-config\n",
                     "\n    name: cloud-config\n"
                     "  - hostPath:\n"
                     "      path: /etc/pki\n"
                     "      type: DirectoryOrCreate\n"
                     "    name: etc-pki\n");
  EXPECT_EQ(pod.Emit(), want);
  EXPECT_TRUE(pod.Validate().ok()) << pod.Validate();
}

TEST(StaticPodMountTest, EnsureHostPathMountAppendsToUnsortedMounts) {
  const std::string text = ReadTestData(kKcmPath);
  StaticPod pod = LoadFixture(kKcmPath);
  ASSERT_TRUE(pod.EnsureHostPathMount(0, LeaderMigrationMount()).ok());
  std::string want = ReplaceOnce(text,
                                 "      name: usr-share-ca-certificates\n"
                                 "      readOnly: true\n",
                                 "      name: usr-share-ca-certificates\n"
                                 "      readOnly: true\n"
                                 "    - mountPath: /etc/kubernetes/leader-migration.yaml\n"
                                 "      name: leader-migration\n"
                                 "      readOnly: true\n");
  want = ReplaceOnce(want, "\n    name: kubeconfig\n",
                     "\n    name: kubeconfig\n"
                     "  - hostPath:\n"
                     "      path: /etc/kubernetes/leader-migration.yaml\n"
                     "      type: FileOrCreate\n"
                     "    name: leader-migration\n");
  EXPECT_EQ(pod.Emit(), want);
  std::optional<HostPathMount> found = pod.FindHostPathMount(0, "leader-migration");
  ASSERT_TRUE(found.has_value());
  EXPECT_EQ(found->host_path, "/etc/kubernetes/leader-migration.yaml");
  EXPECT_EQ(found->type, "FileOrCreate");
  EXPECT_TRUE(found->read_only);
}

TEST(StaticPodMountTest, EnsureHostPathMountIsIdempotent) {
  StaticPod pod = LoadFixture(kKcmPath);
  ASSERT_TRUE(pod.EnsureHostPathMount(0, LeaderMigrationMount()).ok());
  const std::string once = pod.Emit();
  absl::Status again = pod.EnsureHostPathMount(0, LeaderMigrationMount());
  EXPECT_TRUE(again.ok()) << again;
  EXPECT_EQ(pod.Emit(), once);
}

TEST(StaticPodMountTest, EnsureExistingKubeadmMountChangesNothing) {
  const std::string text = ReadTestData(kKcmPath);
  StaticPod pod = LoadFixture(kKcmPath);
  HostPathMount kubeconfig = *pod.FindHostPathMount(0, "kubeconfig");
  ASSERT_TRUE(pod.EnsureHostPathMount(0, kubeconfig).ok());
  EXPECT_EQ(pod.Emit(), text);
}

TEST(StaticPodMountTest, ReadWriteMountHasNoReadOnlyField) {
  StaticPod pod = ParseOrDie("spec:\n  containers:\n  - name: c\n");
  HostPathMount mount;
  mount.name = "data";
  mount.host_path = "/var/lib/data";
  mount.mount_path = "/data";
  mount.read_only = false;
  ASSERT_TRUE(pod.EnsureHostPathMount(0, mount).ok());
  EXPECT_EQ(pod.Emit(),
            "spec:\n  containers:\n  - name: c\n    volumeMounts:\n    - mountPath: /data\n"
            "      name: data\n  volumes:\n  - hostPath:\n      path: /var/lib/data\n"
            "    name: data\n");
}

TEST(StaticPodMountTest, EnsureHostPathMountFixesReadOnly) {
  StaticPod pod = LoadFixture(kKcmPath);
  HostPathMount flexvolume = *pod.FindHostPathMount(0, "flexvolume-dir");
  ASSERT_FALSE(flexvolume.read_only);
  flexvolume.read_only = true;
  ASSERT_TRUE(pod.EnsureHostPathMount(0, flexvolume).ok());
  EXPECT_TRUE(pod.FindHostPathMount(0, "flexvolume-dir")->read_only);
  EXPECT_THAT(pod.Emit(),
              HasSubstr("    - mountPath: /usr/libexec/kubernetes/kubelet-plugins/volume/exec\n"
                        "      name: flexvolume-dir\n      readOnly: true\n"));
  flexvolume.read_only = false;
  ASSERT_TRUE(pod.EnsureHostPathMount(0, flexvolume).ok());
  EXPECT_EQ(pod.Emit(), ReadTestData(kKcmPath));
}

TEST(StaticPodMountTest, VolumeNameClashIsRejectedAndNothingChanges) {
  const std::string text = ReadTestData(kKcmPath);
  StaticPod pod = LoadFixture(kKcmPath);
  HostPathMount mount = LeaderMigrationMount();
  mount.name = "kubeconfig";  // taken by /etc/kubernetes/controller-manager.conf
  absl::Status status = pod.EnsureHostPathMount(0, mount);
  EXPECT_EQ(status.code(), absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(status.message(),
            "/etc/kubernetes/manifests/" + std::string(kKcmPath) +
                ": spec.volumes[5] is already named 'kubeconfig' but is not hostPath "
                "/etc/kubernetes/leader-migration.yaml (type FileOrCreate); rename that volume or "
                "set a different volume name in the handoff settings");
  EXPECT_EQ(pod.Emit(), text);
}

TEST(StaticPodMountTest, VolumeWithSamePathButOtherTypeClashes) {
  StaticPod pod = LoadFixture(kKcmPath);
  HostPathMount kubeconfig = *pod.FindHostPathMount(0, "kubeconfig");
  kubeconfig.type = "File";
  absl::Status status = pod.EnsureHostPathMount(0, kubeconfig);
  EXPECT_EQ(status.code(), absl::StatusCode::kAlreadyExists);
  EXPECT_THAT(std::string(status.message()),
              HasSubstr(": spec.volumes[5] is already named 'kubeconfig' but is not hostPath "
                        "/etc/kubernetes/controller-manager.conf (type File); "));
}

TEST(StaticPodMountTest, MountPathClashIsRejectedAndNothingChanges) {
  const std::string text = ReadTestData(kKcmPath);
  StaticPod pod = LoadFixture(kKcmPath);
  HostPathMount mount;
  mount.name = "pki";
  mount.host_path = "/srv/pki";
  mount.type = "Directory";
  mount.mount_path = "/etc/kubernetes/pki";  // where k8s-certs is mounted
  absl::Status status = pod.EnsureHostPathMount(0, mount);
  EXPECT_EQ(status.code(), absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(status.message(),
            "/etc/kubernetes/manifests/" + std::string(kKcmPath) +
                ": container 'kube-controller-manager' volumeMounts[4] already mounts volume "
                "'k8s-certs' at /etc/kubernetes/pki; remove that mount or choose another path in "
                "the handoff settings");
  // Not even the volume was added.
  EXPECT_EQ(pod.Emit(), text);
}

TEST(StaticPodMountTest, VolumeMountedElsewhereIsRejected) {
  const std::string text = ReadTestData(kKcmPath);
  StaticPod pod = LoadFixture(kKcmPath);
  HostPathMount kubeconfig = *pod.FindHostPathMount(0, "kubeconfig");
  kubeconfig.mount_path = "/etc/kubernetes/kcm.conf";
  absl::Status status = pod.EnsureHostPathMount(0, kubeconfig);
  EXPECT_EQ(status.code(), absl::StatusCode::kAlreadyExists);
  EXPECT_THAT(std::string(status.message()),
              HasSubstr(": container 'kube-controller-manager' volumeMounts[5] already mounts "
                        "volume 'kubeconfig' at /etc/kubernetes/controller-manager.conf; "));
  EXPECT_EQ(pod.Emit(), text);
}

TEST(StaticPodMountTest, RemoveVolumeRemovesMountsFromAllContainers) {
  StaticPod pod = ParseOrDie(
      "spec:\n"
      "  containers:\n"
      "  - name: a\n"
      "    volumeMounts:\n"
      "    - mountPath: /etc/cloud.conf\n"
      "      name: cloud-config\n"
      "    - mountPath: /etc/x\n"
      "      name: x\n"
      "  - name: b\n"
      "    volumeMounts:\n"
      "    - mountPath: /cloud.conf\n"
      "      name: cloud-config\n"
      "  volumes:\n"
      "  - hostPath:\n"
      "      path: /etc/kubernetes/cloud.conf\n"
      "    name: cloud-config\n"
      "  - hostPath:\n"
      "      path: /etc/x\n"
      "    name: x\n");
  EXPECT_TRUE(pod.RemoveVolume("cloud-config"));
  EXPECT_EQ(pod.Emit(),
            "spec:\n"
            "  containers:\n"
            "  - name: a\n"
            "    volumeMounts:\n"
            "    - mountPath: /etc/x\n"
            "      name: x\n"
            "  - name: b\n"
            "  volumes:\n"
            "  - hostPath:\n"
            "      path: /etc/x\n"
            "    name: x\n");
  EXPECT_FALSE(pod.RemoveVolume("cloud-config"));
  EXPECT_TRUE(pod.RemoveVolume("x"));
  EXPECT_EQ(pod.Emit(), "spec:\n  containers:\n  - name: a\n  - name: b\n");
}

TEST(StaticPodMountTest, RemoveVolumeFromKubeadmManifest) {
  const std::string text = ReadTestData(kKcmPath);
  StaticPod pod = LoadFixture(kKcmPath);
  EXPECT_TRUE(pod.RemoveVolume("cloud-config"));
  std::string want = ReplaceOnce(text,
                                 "    - mountPath: /etc/kubernetes/cloud.conf\n"
                                 "      name: cloud-config\n"
                                 "      readOnly: true\n",
                                 "");
  want = ReplaceOnce(want,
                     "  - hostPath:\n"
                     "      path: /etc/kubernetes/cloud.conf\n"
                     "      type: FileOrCreate\n"
                     "    name: cloud-config\n",
                     "");
  EXPECT_EQ(pod.Emit(), want);
  EXPECT_TRUE(pod.Validate().ok()) << pod.Validate();
}

TEST(StaticPodMountTest, MountCoveringPicksTheMostSpecificMount) {
  StaticPod pod = LoadFixture(kArgsPath);
  auto covering = [&](const char* path) -> std::string {
    std::optional<HostPathMount> mount = pod.MountCovering(0, path);
    return mount ? mount->name : "none";
  };
  EXPECT_EQ(covering("/etc/kubernetes/pki/ca.crt"), "k8s-certs");
  EXPECT_EQ(covering("/etc/kubernetes/pki"), "k8s-certs");
  EXPECT_EQ(covering("/etc/kubernetes/pki/"), "k8s-certs");
  EXPECT_EQ(covering("/etc/kubernetes/controller-manager.conf"), "etc-kubernetes");
  EXPECT_EQ(covering("/etc/kubernetes"), "etc-kubernetes");
  EXPECT_EQ(covering("/etc/kubernetes/pkiX/ca.crt"), "etc-kubernetes");
  EXPECT_EQ(covering("/etc/kubernetesX/cloud.conf"), "none");
  EXPECT_EQ(covering("/etc/kube"), "none");
  EXPECT_EQ(covering("/etc/ssl/certs/ca.pem"), "ca-certs");
  EXPECT_EQ(covering("/var/lib/x"), "none");
}

TEST(StaticPodMountTest, MountCoveringDoesNotDependOnOrderOrTrailingSlashes) {
  StaticPod pod = ParseOrDie(
      "spec:\n  containers:\n  - name: c\n    volumeMounts:\n"
      "    - mountPath: /etc/kubernetes/pki/\n      name: pki\n"
      "    - mountPath: /etc/kubernetes/\n      name: etc\n"
      "    - mountPath: /\n      name: root\n"
      "  volumes:\n"
      "  - hostPath:\n      path: /\n    name: root\n"
      "  - hostPath:\n      path: /etc/kubernetes/pki\n    name: pki\n"
      "  - hostPath:\n      path: /etc/kubernetes\n    name: etc\n");
  EXPECT_EQ(pod.MountCovering(0, "/etc/kubernetes/pki/ca.crt")->name, "pki");
  EXPECT_EQ(pod.MountCovering(0, "/etc/kubernetes/admin.conf")->name, "etc");
  EXPECT_EQ(pod.MountCovering(0, "/etc/kubernetesX")->name, "root");
  EXPECT_EQ(pod.MountCovering(0, "/var/lib/x")->name, "root");
}

// --- Validate ---------------------------------------------------------------------------------

TEST(StaticPodValidateTest, KubeadmManifestsAreValid) {
  for (const char* path : {kKcmPath, kApiserverPath, kSchedulerPath, kArgsPath, kSplitPath}) {
    absl::Status status = LoadFixture(path).Validate();
    EXPECT_TRUE(status.ok()) << path << ": " << status;
  }
}

TEST(StaticPodValidateTest, ListsEveryProblemWithItsFieldPath) {
  StaticPod pod = ParseOrDie(
      "apiVersion: v2\n"
      "kind: Deployment\n"
      "metadata:\n"
      "  labels:\n"
      "    a: b\n"
      "spec:\n"
      "  containers:\n"
      "  - image: x\n"
      "    name: c\n"
      "    volumeMounts:\n"
      "    - mountPath: /a\n"
      "      name: a\n"
      "    - mountPath: relative\n"
      "      name: missing\n"
      "    - mountPath: /a\n"
      "      name: a\n"
      "  - name: c\n"
      "  - image: z\n"
      "  volumes:\n"
      "  - hostPath:\n"
      "      path: /a\n"
      "    name: a\n"
      "  - emptyDir: {}\n"
      "    name: a\n"
      "  - hostPath:\n"
      "      path: rel\n"
      "    name: b\n"
      "  - hostPath:\n"
      "      path: /x\n",
      "bad.yaml");
  absl::Status status = pod.Validate();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message(),
            "bad.yaml: apiVersion: must be v1; kind: must be Pod; metadata.name: must be set; "
            "spec.volumes[1].name: 'a' is repeated; "
            "spec.volumes[2].hostPath.path: must be an absolute path; "
            "spec.volumes[3].name: must be set; "
            "spec.containers[0].volumeMounts[1].name: no volume named 'missing'; "
            "spec.containers[0].volumeMounts[1].mountPath: must be an absolute path; "
            "spec.containers[0].volumeMounts[2].mountPath: '/a' is mounted twice; "
            "spec.containers[1].name: 'c' is repeated; "
            "spec.containers[1].image: must be set; "
            "spec.containers[2].name: must be set");
}

TEST(StaticPodValidateTest, NoContainers) {
  StaticPod pod = ParseOrDie(
      "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\nspec:\n  containers: []\n", "empty.yaml");
  EXPECT_EQ(pod.Validate().message(),
            "empty.yaml: spec.containers: must list at least one container");
}

// --- Copies -----------------------------------------------------------------------------------

TEST(StaticPodCopyTest, CopiesAreDeep) {
  const std::string text = ReadTestData(kArgsPath);
  StaticPod original = LoadFixture(kArgsPath);
  StaticPod copy = original;
  copy.SetFlag(0, "cloud-provider", "external");
  copy.SetImage(0, "registry.k8s.io/kube-controller-manager:v1.28.0");
  ASSERT_TRUE(copy.EnsureHostPathMount(0, LeaderMigrationMount()).ok());
  copy.RemoveVolume("ca-certs");
  copy.node()["metadata"]["labels"]["tier"] = "edited";
  EXPECT_EQ(original.Emit(), text);
  EXPECT_NE(copy.Emit(), text);
  EXPECT_THAT(original.GetFlag(0, "cloud-provider"), Optional(std::string("aws")));

  StaticPod assigned = LoadFixture(kKcmPath);
  assigned = original;
  assigned.RemoveFlag(0, "cloud-provider");
  EXPECT_EQ(original.Emit(), text);
  EXPECT_EQ(assigned.source(), original.source());
  // And the other way: editing the original leaves an earlier copy alone.
  StaticPod before = original;
  original.SetFlag(0, "v", "4");
  EXPECT_EQ(before.Emit(), text);
}

TEST(StaticPodCopyTest, CopyKeepsQuoting) {
  StaticPod original = LoadFixture(kArgsPath);
  StaticPod copy = original;
  EXPECT_EQ(copy.Emit(), ReadTestData(kArgsPath));
}

}  // namespace
}  // namespace handoff
