// The cloud-controller-manager pod built from a kube-controller-manager: its env. The rest of the
// template is pinned by the golden files (planner_golden_test.cc), which also show that a
// kube-controller-manager without env gives the same bytes as before env was copied.
#include "agent/engine/ccm_template.h"

#include "common/base/strings.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/agent/engine/node_fixture.h"

namespace handoff {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;
using ::testing::SizeIs;
using testing::ApplyPlan;
using testing::ClassifyNode;
using testing::KubeadmSettings;
using testing::LoadNode;
using testing::PlanNode;

constexpr char kKcm[] = "/etc/kubernetes/manifests/kube-controller-manager.yaml";
constexpr char kCcm[] = "/etc/kubernetes/manifests/cloud-controller-manager.yaml";

constexpr char kEnv[] =
    "    env:\n"
    "    - name: HTTPS_PROXY\n"
    "      value: http://proxy.internal:3128\n"
    "    - name: NO_PROXY\n"
    "      value: 10.0.0.0/8,127.0.0.1,localhost,.internal\n"
    "    - name: POD_NAME\n"
    "      valueFrom:\n"
    "        fieldRef:\n"
    "          fieldPath: metadata.name\n"
    "    - name: AWS_EC2_METADATA_SERVICE_ENDPOINT\n"
    "      value: http://127.0.1.100:1338\n"
    "    - name: EMPTY\n";

// The kubeadm fixture with `env` added to the kube-controller-manager's container.
MemoryFileSystem KubeadmNodeWithEnv(const std::string& env) {
  MemoryFileSystem fs = LoadNode("kubeadm");
  std::string kcm = *fs.ReadFile(kKcm);
  const std::string image = "    image: registry.k8s.io/kube-controller-manager:v1.26.9\n";
  kcm.insert(kcm.find(image), env);
  fs.SetFile(kKcm, kcm);
  return fs;
}

std::vector<std::string> EnvNames(const StaticPod& pod) {
  std::vector<std::string> names;
  for (const YAML::Node& item : pod.node()["spec"]["containers"][0]["env"]) {
    names.push_back(item["name"].Scalar());
  }
  return names;
}

TEST(CcmTemplateTest, KubeControllerManagerEnvWithValuesIsCopiedInOrder) {
  MemoryFileSystem fs = KubeadmNodeWithEnv(kEnv);
  const Classification classified = ClassifyNode(fs, KubeadmSettings().paths);
  ASSERT_TRUE(classified.view.controller_manager);
  std::vector<std::string> notes;
  absl::StatusOr<StaticPod> ccm = BuildCloudControllerManager(
      *classified.view.controller_manager, KubeadmSettings(), kCcm, true, &notes);
  ASSERT_TRUE(ccm.ok()) << ccm.status();
  EXPECT_THAT(EnvNames(*ccm),
              ElementsAre("HTTPS_PROXY", "NO_PROXY", "AWS_EC2_METADATA_SERVICE_ENDPOINT", "EMPTY"));
  const YAML::Node env = ccm->node()["spec"]["containers"][0]["env"];
  EXPECT_EQ(env[0]["value"].Scalar(), "http://proxy.internal:3128");
  EXPECT_EQ(env[1]["value"].Scalar(), "10.0.0.0/8,127.0.0.1,localhost,.internal");
  EXPECT_EQ(env[2]["value"].Scalar(), "http://127.0.1.100:1338");
  EXPECT_FALSE(env[3]["value"].IsDefined());
  ASSERT_THAT(notes, SizeIs(1));
  EXPECT_THAT(notes[0], HasSubstr("the kube-controller-manager's env POD_NAME (" +
                                  std::string(kKcm) + ") comes from valueFrom and is not copied"));
  // Where kubeadm puts it: after args, before image.
  const std::string text = ccm->Emit();
  EXPECT_THAT(text, HasSubstr("    - --v=2\n    env:\n    - name: HTTPS_PROXY\n      value: "
                              "http://proxy.internal:3128\n"));
  EXPECT_LT(text.find("    env:\n"), text.find("    image: "));
  EXPECT_TRUE(ccm->Validate().ok()) << ccm->Validate();
}

TEST(CcmTemplateTest, WithoutEnvNoEnvKeyAndNoNotes) {
  MemoryFileSystem fs = LoadNode("kubeadm");
  const Classification classified = ClassifyNode(fs, KubeadmSettings().paths);
  std::vector<std::string> notes;
  absl::StatusOr<StaticPod> ccm = BuildCloudControllerManager(
      *classified.view.controller_manager, KubeadmSettings(), kCcm, true, &notes);
  ASSERT_TRUE(ccm.ok()) << ccm.status();
  EXPECT_THAT(ccm->Emit(), Not(HasSubstr("env")));
  EXPECT_THAT(notes, IsEmpty());
  // Only valueFrom entries: nothing to copy, no empty env list.
  MemoryFileSystem only_value_from = KubeadmNodeWithEnv(
      "    env:\n    - name: POD_IP\n      valueFrom:\n        fieldRef:\n"
      "          fieldPath: status.podIP\n");
  const Classification other = ClassifyNode(only_value_from, KubeadmSettings().paths);
  ccm = BuildCloudControllerManager(*other.view.controller_manager, KubeadmSettings(), kCcm, true,
                                    &notes);
  ASSERT_TRUE(ccm.ok()) << ccm.status();
  EXPECT_THAT(ccm->Emit(), Not(HasSubstr("env:")));
  EXPECT_THAT(notes, SizeIs(1));
}

TEST(CcmTemplateTest, MigrationPlanCarriesTheEnvAndMovingBackRestoresTheKubeControllerManager) {
  MemoryFileSystem fs = KubeadmNodeWithEnv(kEnv);
  const std::string original_kcm = *fs.ReadFile(kKcm);
  const Settings settings = KubeadmSettings();
  auto step = [&](NodeState to) -> absl::StatusOr<Plan> {
    absl::StatusOr<Plan> plan = PlanNode(fs, to, settings);
    if (plan.ok()) ApplyPlan(*plan, fs);
    return plan;
  };
  ASSERT_TRUE(step(NodeState::kPrepared).ok());
  absl::StatusOr<Plan> migrate = step(NodeState::kMigrated);
  ASSERT_TRUE(migrate.ok()) << migrate.status();
  EXPECT_THAT(StrJoin(migrate->notes, "\n"), HasSubstr("env POD_NAME"));
  absl::StatusOr<StaticPod> ccm = StaticPod::Parse(*fs.ReadFile(kCcm), kCcm);
  ASSERT_TRUE(ccm.ok()) << ccm.status();
  EXPECT_THAT(EnvNames(*ccm),
              ElementsAre("HTTPS_PROXY", "NO_PROXY", "AWS_EC2_METADATA_SERVICE_ENDPOINT", "EMPTY"));

  // Back through the migration record: the kube-controller-manager is as it was, env included
  // (valueFrom too), and the cloud-controller-manager is gone.
  ASSERT_TRUE(step(NodeState::kPrepared).ok());
  ASSERT_TRUE(step(NodeState::kInTree).ok());
  EXPECT_EQ(ClassifyNode(fs, settings.paths).state, NodeState::kInTree);
  EXPECT_FALSE(fs.ReadFile(kCcm).ok());
  absl::StatusOr<StaticPod> before = StaticPod::Parse(original_kcm, kKcm);
  absl::StatusOr<StaticPod> after = StaticPod::Parse(*fs.ReadFile(kKcm), kKcm);
  ASSERT_TRUE(before.ok() && after.ok());
  EXPECT_TRUE(before->SemanticallyEquals(*after)) << *fs.ReadFile(kKcm);
  EXPECT_THAT(EnvNames(*after), ElementsAre("HTTPS_PROXY", "NO_PROXY", "POD_NAME",
                                            "AWS_EC2_METADATA_SERVICE_ENDPOINT", "EMPTY"));
}

}  // namespace
}  // namespace handoff
