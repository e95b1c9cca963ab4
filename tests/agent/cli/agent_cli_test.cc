// The handoff-agent commands run in-process against copies of the fixture nodes on disk.
#include "agent/cli/agent_cli.h"

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/agent/cli/file_tree.h"
#include "tests/agent/cli/run_agent.h"

namespace handoff {
namespace {

namespace fs = std::filesystem;
using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::StartsWith;

class AgentCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/handoff-agent-cli-XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    temp_ = pattern;
  }
  void TearDown() override { fs::remove_all(temp_); }

  // A copy of tests/testdata/nodes/<name> to work on.
  std::string CopyNode(const std::string& name) {
    fs::path root = temp_ / name;
    fs::copy(fs::path(HANDOFF_TESTDATA_DIR) / "nodes" / name, root, fs::copy_options::recursive);
    return root.string();
  }
  std::string Settings(const std::string& name) {
    return (fs::path(HANDOFF_TESTDATA_DIR) / "nodes" / (name + ".settings.yaml")).string();
  }
  std::string Testdata(const std::string& relative) {
    return (fs::path(HANDOFF_TESTDATA_DIR) / relative).string();
  }

  fs::path temp_;
};

TEST_F(AgentCliTest, StatusJsonHasStateAndProblems) {
  const std::string root = CopyNode("kubeadm");
  Result result = RunAgent({"status", "--root", root, "-o", "json"});
  ASSERT_EQ(result.code, 0) << result.err;
  nlohmann::json json = nlohmann::json::parse(result.out);
  EXPECT_EQ(json["state"], "in-tree");
  EXPECT_TRUE(json["problems"].is_array());
  EXPECT_TRUE(json["problems"].empty());
  EXPECT_EQ(json["components"]["kube-controller-manager"]["cloudProvider"], "aws");
  EXPECT_EQ(json["components"]["kube-controller-manager"]["version"], "v1.26.9");
  EXPECT_TRUE(json["components"]["cloud-controller-manager"].is_null());
  EXPECT_EQ(json["kubelet"]["cloudProvider"], "aws");
}

TEST_F(AgentCliTest, StatusOfAnInconsistentNodeListsProblemsAndExitsOne) {
  const std::string root = CopyNode("kubeadm");
  fs::copy_file(root + "/etc/kubernetes/manifests/kube-controller-manager.yaml",
                root + "/etc/kubernetes/manifests/kube-controller-manager.yaml.bak");
  Result json_result = RunAgent({"status", "--root", root, "-o", "json"});
  EXPECT_EQ(json_result.code, kExitProblems);
  nlohmann::json json = nlohmann::json::parse(json_result.out);
  EXPECT_EQ(json["state"], "inconsistent");
  ASSERT_EQ(json["problems"].size(), 1u);
  EXPECT_THAT(json["problems"][0].get<std::string>(),
              HasSubstr("kube-controller-manager.yaml.bak"));

  Result text = RunAgent({"status", "--root", root});
  EXPECT_EQ(text.code, kExitProblems);
  EXPECT_THAT(
      text.out,
      AllOf(StartsWith("state: inconsistent\n"),
            HasSubstr("problem: pod kube-system/kube-controller-manager is defined by 2 files")));
}

TEST_F(AgentCliTest, StatusOfADirectoryWithoutManifestsIsRefused) {
  Result result = RunAgent({"status", "--root", temp_.string()});
  EXPECT_EQ(result.code, kExitRefused);
  EXPECT_THAT(result.err,
              HasSubstr("cannot list the static pod manifest directory /etc/kubernetes/manifests"));
}

TEST_F(AgentCliTest, PlanPrintsDiffsAndWritesNothing) {
  const std::string root = CopyNode("kubeadm");
  const auto before = Tree(root);
  Result result =
      RunAgent({"plan", "--to", "prepared", "--root", root, "--k8s-version", "v1.27.6",
                "--ccm-image", "registry.k8s.io/provider-aws/cloud-controller-manager:v1.27.1"});
  ASSERT_EQ(result.code, 0) << result.err;
  EXPECT_THAT(result.out,
              AllOf(HasSubstr("--- /dev/null\n+++ b/etc/leadermigration.conf\n"),
                    HasSubstr("--- a/etc/kubernetes/manifests/kube-controller-manager.yaml\n"
                              "+++ b/etc/kubernetes/manifests/kube-controller-manager.yaml\n"),
                    HasSubstr("+    - --enable-leader-migration\n")));
  EXPECT_THAT(result.err, HasSubstr("plan: in-tree -> prepared, 2 file(s)"));
  EXPECT_EQ(Tree(root), before);
}

TEST_F(AgentCliTest, PlanOutputIsThePatchTheGoldenTestChecks) {
  const std::string root = CopyNode("rke2");
  Result result =
      RunAgent({"plan", "--to", "prepared", "--root", root, "--settings", Settings("rke2")});
  ASSERT_EQ(result.code, 0) << result.err;
  std::ifstream golden(Testdata("golden/rke2/01-in-tree-to-prepared.diff"));
  std::ostringstream expected;
  std::string line;
  // The golden file marks each file's component with a "# ..." line; the CLI prints plain diffs.
  while (std::getline(golden, line)) {
    if (line.rfind("# ", 0) != 0) expected << line << "\n";
  }
  EXPECT_EQ(result.out, expected.str());
}

TEST_F(AgentCliTest, PlanRefusesANonAdjacentTargetWithExitTwo) {
  const std::string root = CopyNode("kubeadm");
  Result result = RunAgent({"plan", "--to", "finalized", "--root", root});
  EXPECT_EQ(result.code, kExitRefused);
  EXPECT_THAT(result.err, HasSubstr("the node is in-tree and finalized is not one step away"));
  EXPECT_THAT(result.out, IsEmpty());
}

TEST_F(AgentCliTest, PlanRefusesAnInconsistentNodeWithExitTwo) {
  const std::string root = CopyNode("kubeadm");
  fs::copy_file(root + "/etc/kubernetes/manifests/kube-controller-manager.yaml",
                root + "/etc/kubernetes/manifests/kube-controller-manager.yaml.bak");
  const auto before = Tree(root);
  Result result = RunAgent({"plan", "--to", "prepared", "--root", root});
  EXPECT_EQ(result.code, kExitRefused);
  EXPECT_THAT(result.err,
              AllOf(HasSubstr("the node is inconsistent"),
                    HasSubstr("/etc/kubernetes/manifests/kube-controller-manager.yaml.bak")));
  EXPECT_EQ(Tree(root), before);
}

TEST_F(AgentCliTest, PlanOfTheCurrentStateSaysNothingToDo) {
  const std::string root = CopyNode("kubeadm");
  Result result = RunAgent({"plan", "--to", "in-tree", "--root", root});
  EXPECT_EQ(result.code, 0);
  EXPECT_THAT(result.out, IsEmpty());
  EXPECT_THAT(result.err, HasSubstr("the node is already in-tree; nothing to do"));
}

TEST_F(AgentCliTest, PlanRejectsAnUnknownStateAndBadVersion) {
  const std::string root = CopyNode("kubeadm");
  Result state = RunAgent({"plan", "--to", "done", "--root", root});
  EXPECT_EQ(state.code, kExitRefused);
  EXPECT_THAT(
      state.err,
      HasSubstr("'done' is not a node state; use one of in-tree, prepared, migrated, finalized"));
  Result version =
      RunAgent({"plan", "--to", "prepared", "--root", root, "--k8s-version", "latest"});
  EXPECT_EQ(version.code, kExitRefused);
  EXPECT_THAT(version.err, HasSubstr("--k8s-version: 'latest' is not a Kubernetes version"));
}

TEST_F(AgentCliTest, PlanReportsSettingsProblemsWithTheFileName) {
  const std::string root = CopyNode("kubeadm");
  const std::string settings = (temp_ / "bad.yaml").string();
  std::ofstream(settings) << "paths:\n  manifestDirectory: /x\n";
  Result result = RunAgent({"plan", "--to", "prepared", "--root", root, "--settings", settings});
  EXPECT_EQ(result.code, kExitRefused);
  EXPECT_THAT(result.err, HasSubstr(settings + ": paths.manifestDirectory: unknown setting"));
}

TEST_F(AgentCliTest, LintConfigAcceptsAValidFile) {
  Result result = RunAgent({"lint-config", Testdata("leadermigration/wildcard_fixed.yaml")});
  EXPECT_EQ(result.code, kExitOk) << result.out << result.err;
  EXPECT_THAT(result.out, HasSubstr("valid LeaderMigrationConfiguration"));
}

TEST_F(AgentCliTest, LintConfigReportsTheDocumentationMistakesWithLines) {
  const std::string file = Testdata("leadermigration/upstream_wildcard_nodeipam.yaml");
  Result result = RunAgent({"lint-config", file});
  EXPECT_EQ(result.code, kExitProblems);
  EXPECT_THAT(result.out,
              AllOf(HasSubstr(file + ":7: \"component: *\" does not parse"),
                    HasSubstr("starts a new list item, so the entry for \"nodeipam\"")));
}

TEST_F(AgentCliTest, LintConfigChecksNamesForTheReader) {
  const std::string file = Testdata("leadermigration/wildcard_fixed.yaml");
  Result result = RunAgent(
      {"lint-config", file, "--component", "cloud-controller-manager", "--k8s-version", "v1.28"});
  EXPECT_EQ(result.code, kExitProblems);
  EXPECT_THAT(result.out,
              HasSubstr("cloud-controller-manager v1.28 registers no controller named \"route\""));
  Result ok = RunAgent(
      {"lint-config", file, "--component", "cloud-controller-manager", "--k8s-version", "v1.27"});
  EXPECT_EQ(ok.code, kExitOk) << ok.out;
}

TEST_F(AgentCliTest, LintConfigOfAMissingFileIsRefused) {
  Result result = RunAgent({"lint-config", (temp_ / "nope.yaml").string()});
  EXPECT_EQ(result.code, kExitRefused);
  EXPECT_THAT(result.err, HasSubstr("nope.yaml"));
}

TEST_F(AgentCliTest, ApplyWalksTheNodeAndBackupsListTheMoves) {
  const std::string root = CopyNode("kubeadm");
  const std::vector<std::string> common = {
      "--root",        root,
      "--k8s-version", "v1.27.6",
      "--ccm-image",   "registry.k8s.io/provider-aws/cloud-controller-manager:v1.27.1",
      "--no-verify",   "--kubelet-restart-command",
      "true"};
  for (const char* target : {"prepared", "migrated", "finalized"}) {
    std::vector<std::string> args = {"apply", "--to", target};
    args.insert(args.end(), common.begin(), common.end());
    Result result = RunAgent(args);
    ASSERT_EQ(result.code, kExitOk) << result.err;
    EXPECT_THAT(result.out, HasSubstr(std::string("the node is now ") + target));
  }
  Result status = RunAgent({"status", "--root", root, "-o", "json"});
  EXPECT_EQ(nlohmann::json::parse(status.out)["state"], "finalized");
  EXPECT_TRUE(nlohmann::json::parse(status.out)["unfinishedTransaction"].is_null());

  // Again to the same state: nothing written.
  const auto before = Tree(root);
  std::vector<std::string> again = {"apply", "--to", "finalized"};
  again.insert(again.end(), common.begin(), common.end());
  Result same = RunAgent(again);
  EXPECT_EQ(same.code, kExitOk);
  EXPECT_THAT(same.out, HasSubstr("the node is already finalized; nothing written"));
  EXPECT_EQ(Tree(root), before);

  Result backups = RunAgent({"backups", "--root", root, "-o", "json"});
  ASSERT_EQ(backups.code, kExitOk) << backups.err;
  nlohmann::json list = nlohmann::json::parse(backups.out);
  ASSERT_EQ(list.size(), 3u);
  EXPECT_EQ(list[2]["from"], "migrated");
  EXPECT_EQ(list[2]["to"], "finalized");
  EXPECT_EQ(list[2]["phase"], "committed");

  Result rollback =
      RunAgent({"rollback", "--root", root, "--no-verify", "--kubelet-restart-command", "true"});
  ASSERT_EQ(rollback.code, kExitOk) << rollback.err;
  EXPECT_THAT(rollback.out, HasSubstr("the node is now migrated"));
}

TEST_F(AgentCliTest, ApplyRefusesAStrayCopyWithExitTwoAndWritesNothing) {
  const std::string root = CopyNode("kubeadm");
  fs::copy_file(root + "/etc/kubernetes/manifests/kube-controller-manager.yaml",
                root + "/etc/kubernetes/manifests/kube-controller-manager.yaml.bak");
  const auto before = Tree(root);
  Result result = RunAgent({"apply", "--to", "prepared", "--root", root, "--no-verify"});
  EXPECT_EQ(result.code, kExitRefused);
  EXPECT_THAT(result.err, HasSubstr("kube-controller-manager.yaml.bak"));
  EXPECT_EQ(Tree(root), before);
}

TEST_F(AgentCliTest, ApplyRejectsABadTimeout) {
  const std::string root = CopyNode("kubeadm");
  Result result = RunAgent({"apply", "--to", "prepared", "--root", root, "--timeout", "soon"});
  EXPECT_EQ(result.code, kExitRefused);
  EXPECT_THAT(result.err, HasSubstr("--timeout: 'soon' is not a duration"));
}

TEST_F(AgentCliTest, RecoverWithNothingToDo) {
  const std::string root = CopyNode("kubeadm");
  Result result = RunAgent({"recover", "--root", root});
  EXPECT_EQ(result.code, kExitOk) << result.err;
  EXPECT_THAT(result.out, HasSubstr("no unfinished transaction"));
}

TEST_F(AgentCliTest, HelpExplainsTheStatesAndExitCodes) {
  Result result = RunAgent({"--help"});
  EXPECT_EQ(result.code, 0);
  EXPECT_THAT(result.out, AllOf(HasSubstr("in-tree  ->  prepared  ->  migrated  ->  finalized"),
                                HasSubstr("Exit codes"), HasSubstr("lint-config")));
  Result plan_help = RunAgent({"plan", "--help"});
  EXPECT_EQ(plan_help.code, 0);
  EXPECT_THAT(plan_help.out,
              AllOf(HasSubstr("--to"), HasSubstr("--k8s-version"), HasSubstr("--ccm-image")));
}

TEST_F(AgentCliTest, MissingSubcommandOrArgumentIsUsageError) {
  EXPECT_EQ(RunAgent({}).code, kExitRefused);
  Result result = RunAgent({"plan"});
  EXPECT_EQ(result.code, kExitRefused);
  EXPECT_THAT(result.err, HasSubstr("--to is required"));
}

}  // namespace
}  // namespace handoff
