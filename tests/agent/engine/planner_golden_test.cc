// Golden tests: every transition of every fixture node, in both directions, against the exact
// diffs in tests/testdata/golden/<node>/. Run with HANDOFF_UPDATE_GOLDEN=1 to rewrite them after
// an intended change, then review the diff of the golden files.
#include <filesystem>
#include <vector>

#include "agent/engine/settings.h"
#include "common/base/strings.h"
#include "common/base/unified_diff.h"
#include "common/base/yaml_util.h"
#include "gtest/gtest.h"
#include "tests/agent/engine/node_fixture.h"
#include "tests/support/golden.h"

namespace handoff {
namespace {

using testing::ApplyPlan;
using testing::ClassifyNode;
using testing::LoadNode;
using testing::PlanNode;
using testing::ReadTestdata;
using testing::TestdataPath;
using test_support::ExpectGolden;

struct GoldenCase {
  std::string node;                // tests/testdata/nodes/<node>
  NodeState start;                 // the state the fixture is in
  std::vector<NodeState> forward;  // walked first
  std::vector<NodeState> back;     // then walked back to `start`
};

// Names the case in test output (and in ctest's test names) by its node.
void PrintTo(const GoldenCase& golden_case, std::ostream* os) { *os << golden_case.node; }

std::string Name(const ::testing::TestParamInfo<GoldenCase>& info) {
  std::string name = info.param.node;
  for (char& c : name) {
    if (c == '-') c = '_';
  }
  return name;
}

Settings LoadSettings(const std::string& node) {
  const std::string path = "nodes/" + node + ".settings.yaml";
  if (!std::filesystem::exists(TestdataPath(path))) {
    ADD_FAILURE() << "no settings for " << node;
    return Settings{};
  }
  absl::StatusOr<Settings> settings = ParseSettings(ReadTestdata(path), path);
  EXPECT_TRUE(settings.ok()) << settings.status();
  return settings.ok() ? *settings : Settings{};
}

std::string PlanText(const Plan& plan) {
  std::string text;
  for (const FileChange& change : plan.changes) {
    StrAppend(&text, "# ", change.component.empty() ? "(file)" : change.component, "\n",
              UnifiedDiff(change.path, change.before, change.after));
  }
  return text;
}

// The pods and files of a node, for comparing a node with itself after a round trip.
void ExpectSameNode(const MemoryFileSystem& original, const MemoryFileSystem& now,
                    const Settings& settings) {
  for (const auto& [path, content] : original.files()) {
    absl::StatusOr<std::string> current = now.ReadFile(path);
    ASSERT_TRUE(current.ok()) << path << " is gone after the round trip";
    if (StartsWith(path, settings.paths.manifest_dir + "/")) {
      absl::StatusOr<YAML::Node> before = LoadYaml(content, path);
      absl::StatusOr<YAML::Node> after = LoadYaml(*current, path);
      ASSERT_TRUE(before.ok() && after.ok());
      EXPECT_TRUE(SemanticallyEqual(*before, *after))
          << path << " differs in meaning after the round trip:\n"
          << UnifiedDiff(path, content, *current);
    } else {
      EXPECT_EQ(content, *current) << path << " differs after the round trip";
    }
  }
  for (const auto& [path, content] : now.files()) {
    EXPECT_TRUE(original.files().count(path)) << path << " was left behind by the round trip";
  }
}

class PlannerGoldenTest : public ::testing::TestWithParam<GoldenCase> {};

TEST_P(PlannerGoldenTest, EveryTransitionBothWaysMatchesGoldenAndRoundTrips) {
  const GoldenCase& param = GetParam();
  const Settings settings = LoadSettings(param.node);
  MemoryFileSystem fs = LoadNode(param.node);
  const MemoryFileSystem original = fs;
  ASSERT_EQ(ClassifyNode(fs, settings.paths).state, param.start)
      << StrJoin(ClassifyNode(fs, settings.paths).problems, "\n");

  std::vector<NodeState> walk = param.forward;
  walk.insert(walk.end(), param.back.begin(), param.back.end());
  NodeState from = param.start;
  int step = 0;
  for (NodeState to : walk) {
    ++step;
    SCOPED_TRACE(StrCat("step ", step, ": ", NodeStateName(from), " -> ", NodeStateName(to)));
    absl::StatusOr<Plan> plan = PlanNode(fs, to, settings);
    ASSERT_TRUE(plan.ok()) << plan.status();
    ASSERT_FALSE(plan->empty());
    EXPECT_EQ(plan->from, from);
    EXPECT_EQ(plan->to, to);
    ExpectGolden(TestdataPath(StrCat("golden/", param.node, "/", step < 10 ? "0" : "", step, "-",
                                     NodeStateName(from), "-to-", NodeStateName(to), ".diff")),
                 PlanText(*plan));
    // Every manifest a plan writes is a valid Pod.
    for (const FileChange& change : plan->changes) {
      if (!change.after || !StartsWith(change.path, settings.paths.manifest_dir + "/")) continue;
      absl::StatusOr<StaticPod> pod = StaticPod::Parse(*change.after, change.path);
      ASSERT_TRUE(pod.ok()) << pod.status();
      EXPECT_TRUE(pod->Validate().ok()) << pod->Validate();
    }
    ApplyPlan(*plan, fs);
    Classification reached = ClassifyNode(fs, settings.paths);
    EXPECT_EQ(reached.state, to) << StrJoin(reached.problems, "\n");
    // Planning the state just reached is a no-op.
    absl::StatusOr<Plan> again = PlanNode(fs, to, settings);
    ASSERT_TRUE(again.ok()) << again.status();
    EXPECT_TRUE(again->empty()) << PlanText(*again);
    from = to;
  }
  ASSERT_EQ(from, param.start);
  ExpectSameNode(original, fs, settings);
}

const NodeState kInTree = NodeState::kInTree;
const NodeState kPrepared = NodeState::kPrepared;
const NodeState kMigrated = NodeState::kMigrated;
const NodeState kFinalized = NodeState::kFinalized;
const NodeState kStopped = NodeState::kStopped;
const NodeState kExternal = NodeState::kExternal;

INSTANTIATE_TEST_SUITE_P(
    Nodes, PlannerGoldenTest,
    ::testing::Values(
        // kubeadm 1.26, flags in command, --cloud-config on apiserver, KCM and kubelet.
        GoldenCase{"kubeadm",
                   kInTree,
                   {kPrepared, kMigrated, kFinalized},
                   {kMigrated, kPrepared, kInTree}},
        // Flags in args with command [kube-controller-manager], wildcard config with nodeipam.
        GoldenCase{"args-style",
                   kInTree,
                   {kPrepared, kMigrated, kFinalized},
                   {kMigrated, kPrepared, kInTree}},
        // Flags split over two items ("--cloud-provider", "aws"), unsorted.
        GoldenCase{"split-flags",
                   kInTree,
                   {kPrepared, kMigrated, kFinalized},
                   {kMigrated, kPrepared, kInTree}},
        // RKE2 layout: pod-manifests dir, args, image overrides, kubelet not managed.
        GoldenCase{
            "rke2", kInTree, {kPrepared, kMigrated, kFinalized}, {kMigrated, kPrepared, kInTree}},
        // A kube-controller-manager that already carries Leader Migration flags and its own file.
        GoldenCase{"already-prepared", kPrepared, {kMigrated, kFinalized}, {kMigrated, kPrepared}},
        // The kubeadm node (a link to it) along the downtime path: the kube-controller-manager
        // parked, everything external, then the cloud-controller-manager; and back.
        GoldenCase{"kubeadm-downtime",
                   kInTree,
                   {kStopped, kExternal, kFinalized},
                   {kExternal, kStopped, kInTree}}),
    Name);

}  // namespace
}  // namespace handoff
