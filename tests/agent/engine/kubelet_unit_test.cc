// A control-plane node whose kubelet takes its flags from more than kubeadm-flags.env: the
// classification says what the kubelet runs with, a move writes each flag where the kubelet
// reads it (or refuses, naming the file, where handoff does not write), and the way back puts
// each file back as it was.
#include <map>
#include <string>
#include <vector>

#include "agent/engine/classify.h"
#include "agent/engine/planner.h"
#include "common/base/strings.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/agent/engine/node_fixture.h"
#include "tests/common/systemd/kubelet_layouts.h"

namespace handoff {
namespace {

using ::testing::Contains;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using testing::ApplyPlan;
using testing::ClassifyNode;
using testing::KubeadmSettings;
using testing::LoadNode;
using testing::PlanNode;

// The kubeadm fixture with the kubelet's unit as the pkgs.k8s.io deb installs it.
MemoryFileSystem WithUnit(std::string defaults) {
  MemoryFileSystem fs = LoadNode("kubeadm");
  testing::AddDebKubeletUnit(fs);
  fs.SetFile("/etc/default/kubelet", std::move(defaults));
  return fs;
}

MemoryFileSystem MovedTo(MemoryFileSystem fs, NodeState target) {
  for (NodeState step : {NodeState::kPrepared, NodeState::kMigrated}) {
    if (static_cast<int>(step) > static_cast<int>(target)) break;
    absl::StatusOr<Plan> plan = PlanNode(fs, step, KubeadmSettings());
    EXPECT_TRUE(plan.ok()) << plan.status();
    if (plan.ok()) ApplyPlan(*plan, fs);
  }
  return fs;
}

TEST(KubeletUnitTest, AUnitWithNoOverrideMovesAsBefore) {
  MemoryFileSystem fs = MovedTo(WithUnit("KUBELET_EXTRA_ARGS=--v=2\n"), NodeState::kMigrated);
  Classification result = ClassifyNode(fs, NodePaths{});
  EXPECT_EQ(result.state, NodeState::kMigrated) << StrJoin(result.problems, "\n");
  EXPECT_THAT(result.problems, IsEmpty());
}

// Before, the node was reported migrated: only kubeadm-flags.env was read, and it said external.
TEST(KubeletUnitTest, AFlagInEtcDefaultKubeletIsWhatTheKubeletRunsWith) {
  MemoryFileSystem fs = MovedTo(WithUnit(""), NodeState::kMigrated);
  fs.SetFile("/etc/default/kubelet", "KUBELET_EXTRA_ARGS=--cloud-provider=aws\n");
  Classification result = ClassifyNode(fs, NodePaths{});
  EXPECT_EQ(result.state, NodeState::kInconsistent);
  EXPECT_THAT(result.problems,
              Contains(HasSubstr("--cloud-provider=aws (KUBELET_EXTRA_ARGS, /etc/default/kubelet "
                                 "line 1): the kubelet must have --cloud-provider=external")));
}

// The file each change of a plan writes, with its text after.
std::map<std::string, std::string> Written(const Plan& plan) {
  std::map<std::string, std::string> written;
  for (const FileChange& change : plan.changes) {
    if (change.component == kKubelet) written[change.path] = change.after.value_or("<removed>");
  }
  return written;
}

// What the kubelet's unit starts it with on `fs`.
std::string EffectiveFlag(const MemoryFileSystem& fs, const std::string& name) {
  return testing::EffectiveKubeletFlag(fs, Settings(), name);
}

// Before, the move wrote only kubeadm-flags.env and was refused: the unit passes
// KUBELET_EXTRA_ARGS last, so the kubelet kept running aws.
TEST(KubeletUnitTest, AFlagInEtcDefaultKubeletIsMovedWhereItIsAndComesBackAsItWas) {
  const std::string defaults = "# operator's flags\nKUBELET_EXTRA_ARGS=\"--cloud-provider=aws --v=2\"\n";
  MemoryFileSystem fs = MovedTo(WithUnit(defaults), NodeState::kPrepared);
  const std::string flags_before = *fs.ReadFile("/var/lib/kubelet/kubeadm-flags.env");
  absl::StatusOr<Plan> plan = PlanNode(fs, NodeState::kMigrated, KubeadmSettings());
  ASSERT_TRUE(plan.ok()) << plan.status();
  const std::map<std::string, std::string> written = Written(*plan);
  ASSERT_EQ(written.size(), 2u);
  EXPECT_EQ(written.at("/etc/default/kubelet"),
            "# operator's flags\nKUBELET_EXTRA_ARGS=\"--cloud-provider=external --v=2\"\n");
  EXPECT_THAT(written.at("/var/lib/kubelet/kubeadm-flags.env"),
              HasSubstr("KUBELET_KUBEADM_ARGS=\"--cloud-provider=external --container-runtime"));
  // The kubelet's files go last, together.
  ASSERT_GE(plan->changes.size(), 2u);
  EXPECT_EQ(plan->changes[plan->changes.size() - 1].component, kKubelet);
  EXPECT_EQ(plan->changes[plan->changes.size() - 2].component, kKubelet);
  ApplyPlan(*plan, fs);
  EXPECT_EQ(ClassifyNode(fs, NodePaths{}).state, NodeState::kMigrated);
  EXPECT_EQ(EffectiveFlag(fs, "cloud-provider"), "external");
  EXPECT_EQ(EffectiveFlag(fs, "cloud-config"), "<none>");

  plan = PlanNode(fs, NodeState::kPrepared, KubeadmSettings());
  ASSERT_TRUE(plan.ok()) << plan.status();
  ApplyPlan(*plan, fs);
  EXPECT_EQ(*fs.ReadFile("/etc/default/kubelet"), defaults);
  EXPECT_EQ(*fs.ReadFile("/var/lib/kubelet/kubeadm-flags.env"), flags_before);
  EXPECT_EQ(ClassifyNode(fs, NodePaths{}).state, NodeState::kPrepared);
}

// A file the move wrote and someone changed since is not overwritten with the recorded text:
// only the two flags go back.
TEST(KubeletUnitTest, AKubeletFileEditedSinceTheMoveGetsOnlyItsFlagsBack) {
  MemoryFileSystem fs = MovedTo(WithUnit("KUBELET_EXTRA_ARGS=--cloud-provider=aws\n"),
                                NodeState::kMigrated);
  fs.SetFile("/etc/default/kubelet", "KUBELET_EXTRA_ARGS=\"--cloud-provider=external --v=4\"\n");
  absl::StatusOr<Plan> plan = PlanNode(fs, NodeState::kPrepared, KubeadmSettings());
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_THAT(plan->notes, Contains(HasSubstr("/etc/default/kubelet changed since the move")));
  ApplyPlan(*plan, fs);
  EXPECT_EQ(*fs.ReadFile("/etc/default/kubelet"),
            "KUBELET_EXTRA_ARGS=\"--cloud-provider=aws --v=4\"\n");
  EXPECT_EQ(EffectiveFlag(fs, "cloud-provider"), "aws");
  EXPECT_EQ(EffectiveFlag(fs, "cloud-config"), "/etc/kubernetes/cloud.conf");
  EXPECT_EQ(ClassifyNode(fs, NodePaths{}).state, NodeState::kPrepared);
}

// The kubeadm packages' unit layouts (tests/common/systemd/kubelet_layouts.h): where each moves
// the flag, or why it cannot.
TEST(KubeletUnitTest, EachPackagesLayoutMovesWhereTheFlagIsAndBackByteForByte) {
  struct Case {
    size_t layout;
    std::vector<std::string> written;  // the kubelet's files the move writes
    std::string refusal;               // or why it refuses
  };
  const std::vector<Case> cases = {
      {0, {"/var/lib/kubelet/kubeadm-flags.env"}, ""},
      {1, {"/etc/default/kubelet"}, ""},
      {3, {"/var/lib/kubelet/kubeadm-flags.env"}, ""},
      {4, {}, "--cloud-provider=aws (/etc/systemd/system/kubelet.service.d/90-aws.conf line 3) "
              "is written in the unit's ExecStart line"},
      {5, {}, "is written through ${FLAGS}"},
  };
  const std::vector<systemd::testing::KubeletLayout> layouts = systemd::testing::KubeletLayouts();
  for (const Case& c : cases) {
    const systemd::testing::KubeletLayout& layout = layouts.at(c.layout);
    SCOPED_TRACE(layout.name);
    MemoryFileSystem fs = LoadNode("kubeadm");
    fs.DeleteFile("/var/lib/kubelet/kubeadm-flags.env");
    for (const auto& [path, text] : layout.files) fs.SetFile(path, text);
    fs = MovedTo(fs, NodeState::kPrepared);
    std::map<std::string, std::string> before;
    for (const auto& [path, text] : layout.files) before[path] = *fs.ReadFile(path);
    absl::StatusOr<Plan> plan = PlanNode(fs, NodeState::kMigrated, KubeadmSettings());
    if (!c.refusal.empty()) {
      EXPECT_THAT(plan.status().message(), HasSubstr(c.refusal));
      continue;
    }
    ASSERT_TRUE(plan.ok()) << plan.status();
    std::vector<std::string> written;
    for (const auto& [path, text] : Written(*plan)) written.push_back(path);
    EXPECT_EQ(written, c.written);
    ApplyPlan(*plan, fs);
    EXPECT_EQ(EffectiveFlag(fs, "cloud-provider"), "external");
    EXPECT_EQ(ClassifyNode(fs, NodePaths{}).state, NodeState::kMigrated);
    plan = PlanNode(fs, NodeState::kPrepared, KubeadmSettings());
    ASSERT_TRUE(plan.ok()) << plan.status();
    ApplyPlan(*plan, fs);
    for (const auto& [path, text] : before) EXPECT_EQ(*fs.ReadFile(path), text) << path;
  }
}

TEST(KubeletUnitTest, AUnitThatCannotBeReadIsAProblem) {
  MemoryFileSystem fs = WithUnit("");
  fs.SetFile("/etc/systemd/system/kubelet.service.d/30-x.conf",
             "[Service]\nExecStart=/usr/bin/kubelet --v=9\n");
  Classification result = ClassifyNode(fs, NodePaths{});
  EXPECT_EQ(result.state, NodeState::kInconsistent);
  EXPECT_THAT(result.problems,
              Contains(HasSubstr("30-x.conf line 2: a second ExecStart=")));
}

// A unit that reads its flags from /etc/default/kubelet alone: the move writes there, and the
// kubeadm-flags.env it never reads is left alone.
TEST(KubeletUnitTest, AUnitThatDoesNotReadTheFlagsFileIsMovedInTheFileItReads) {
  MemoryFileSystem fs = WithUnit("");
  fs.SetFile("/usr/lib/systemd/system/kubelet.service.d/10-kubeadm.conf",
             "[Service]\nEnvironmentFile=-/etc/default/kubelet\nExecStart=\n"
             "ExecStart=/usr/bin/kubelet $KUBELET_EXTRA_ARGS\n");
  fs.SetFile("/etc/default/kubelet", "KUBELET_EXTRA_ARGS=--cloud-provider=aws\n");
  MemoryFileSystem prepared = MovedTo(fs, NodeState::kPrepared);
  absl::StatusOr<Plan> plan = PlanNode(prepared, NodeState::kMigrated, KubeadmSettings());
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(Written(*plan), (std::map<std::string, std::string>{
                                {"/etc/default/kubelet",
                                 "KUBELET_EXTRA_ARGS=\"--cloud-provider=external\"\n"}}));
}

}  // namespace
}  // namespace handoff
