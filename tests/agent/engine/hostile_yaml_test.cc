// Manifests, settings and migration records that the kubelet would refuse or that would expand
// without end: the node is inconsistent with the reason, nothing is planned, nothing is expanded.
#include <string>

#include "agent/engine/classify.h"
#include "agent/engine/migration_record.h"
#include "agent/engine/settings.h"
#include "common/base/strings.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/agent/engine/node_fixture.h"
#include "tests/common/base/yaml_bomb.h"

namespace handoff {
namespace {

using ::testing::AllOf;
using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;
using testing::AliasBombEntries;
using testing::ClassifyNode;
using testing::KubeadmSettings;
using testing::LoadNode;
using testing::PlanNode;

constexpr char kKcm[] = "/etc/kubernetes/manifests/kube-controller-manager.yaml";
constexpr char kAliasRefusal[] = "YAML anchors and aliases are not accepted (";

// The kubeadm fixture with `from` replaced by `to` in the kube-controller-manager manifest.
MemoryFileSystem NodeWithKcmEdit(const std::string& from, const std::string& to) {
  MemoryFileSystem fs = LoadNode("kubeadm");
  std::string content = *fs.ReadFile(kKcm);
  const size_t at = content.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) content.replace(at, from.size(), to);
  fs.SetFile(kKcm, content);
  return fs;
}

TEST(HostileYamlTest, ArgsAsOneStringMakeTheNodeInconsistent) {
  const MemoryFileSystem fs = NodeWithKcmEdit(
      "    name: kube-controller-manager\n",
      "    name: kube-controller-manager\n    args: \"--v=2 --enable-leader-migration=false\"\n");
  Classification result = ClassifyNode(fs, NodePaths{});
  EXPECT_EQ(result.state, NodeState::kInconsistent);
  // One reason, the real one: not also "no kube-controller-manager manifest".
  EXPECT_THAT(result.problems,
              ElementsAre(AllOf(StartsWith(StrCat(kKcm, ":47: spec.containers[0].args: must be "
                                                        "a list of strings (the kubelet refuses "
                                                        "this manifest), found a string")),
                                HasSubstr("fix or move this one"))));

  absl::StatusOr<Plan> plan = PlanNode(fs, NodeState::kPrepared, KubeadmSettings());
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(plan.status().message()),
              AllOf(HasSubstr("the node is inconsistent"),
                    HasSubstr("spec.containers[0].args: must be a list of strings")));
}

TEST(HostileYamlTest, UnquotedNumberInAnotherManifestMakesTheNodeInconsistent) {
  MemoryFileSystem fs = LoadNode("kubeadm");
  fs.SetFile("/etc/kubernetes/manifests/extra.yaml",
             "apiVersion: v1\nkind: Pod\nmetadata:\n  name: extra\n  labels:\n    version: 2\n"
             "spec:\n  containers:\n  - name: c\n    image: i\n");
  Classification result = ClassifyNode(fs, NodePaths{});
  EXPECT_EQ(result.state, NodeState::kInconsistent);
  EXPECT_THAT(result.problems,
              Contains(StartsWith("/etc/kubernetes/manifests/extra.yaml:6: metadata.labels["
                                  "\"version\"]: must be a string (the kubelet refuses this "
                                  "manifest), found a number (2); quote it: \"2\"")));
}

TEST(HostileYamlTest, AliasBombInAnnotationsIsRefusedUnexpanded) {
  for (int levels : {6, 7}) {
    const MemoryFileSystem fs =
        NodeWithKcmEdit("  creationTimestamp: null\n",
                        "  creationTimestamp: null\n  annotations:\n" +
                            AliasBombEntries(levels, 4));
    Classification result = ClassifyNode(fs, NodePaths{});
    EXPECT_EQ(result.state, NodeState::kInconsistent);
    EXPECT_THAT(result.problems,
                ElementsAre(StartsWith(StrCat(kKcm, ":6:9: ", kAliasRefusal, "&l0"))));
    absl::StatusOr<Plan> plan = PlanNode(fs, NodeState::kPrepared, KubeadmSettings());
    EXPECT_EQ(plan.status().code(), absl::StatusCode::kFailedPrecondition);
  }
}

TEST(HostileYamlTest, SettingsWithAliasesAreRefused) {
  const std::string text = "kubernetesVersion: v1.27.6\nbomb:\n" + AliasBombEntries(9, 2);
  absl::StatusOr<Settings> settings = ParseSettings(text, "/etc/handoff/settings.yaml");
  EXPECT_EQ(settings.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(settings.status().message()),
              StartsWith(StrCat("/etc/handoff/settings.yaml:3:7: ", kAliasRefusal, "&l0")));
}

TEST(HostileYamlTest, MigrationRecordWithAliasesIsRefused) {
  absl::StatusOr<MigrationRecord> record = MigrationRecord::Parse(
      "kind: HandoffMigrationRecord\ncomponents: &c []\nagain: *c\n", "record.yaml");
  EXPECT_THAT(std::string(record.status().message()),
              StartsWith(StrCat("record.yaml:2:13: ", kAliasRefusal, "&c")));
}

TEST(HostileYamlTest, MigrationRecordKubeletFlagsMustBeStrings) {
  MemoryFileSystem fs = LoadNode("kubeadm");
  absl::StatusOr<NodeSnapshot> snapshot = ReadNodeSnapshot(fs, NodePaths{});
  ASSERT_TRUE(snapshot.ok());
  const std::string emitted =
      MigrationRecord::Capture(Classify(*snapshot).view, std::vector<std::string>{"--a=b"},
                               std::nullopt)
          .Emit();
  ASSERT_TRUE(MigrationRecord::Parse(emitted, "record.yaml").ok());
  const std::string bad = emitted.substr(0, emitted.find("kubeletFlags:")) +
                          "kubeletFlags:\n- [--a=b]\n";
  EXPECT_THAT(std::string(MigrationRecord::Parse(bad, "record.yaml").status().message()),
              HasSubstr("record.yaml: kubeletFlags[0] must be a string"));
}

}  // namespace
}  // namespace handoff
