// `handoff-agent apply` on the downtime path: the cluster-tag step before stopped -> external,
// against the fake instance metadata.
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "rehearsal/imds/fake_imds.h"
#include "tests/agent/cli/run_agent.h"

namespace handoff {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;

class ClusterTagCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/handoff-cluster-tag-cli-XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    temp_ = pattern;
    root_ = (temp_ / "kubeadm").string();
    fs::copy(fs::path(HANDOFF_TESTDATA_DIR) / "nodes" / "kubeadm", root_,
             fs::copy_options::recursive);
  }
  void TearDown() override { fs::remove_all(temp_); }

  std::unique_ptr<sandbox::FakeImds> StartImds(const std::string& value) {
    sandbox::FakeImdsOptions options;
    options.instance_id = "i-0abc";
    options.tags = std::map<std::string, std::string>{{"kubernetes.io/cluster/prod", value}};
    absl::StatusOr<std::unique_ptr<sandbox::FakeImds>> imds = sandbox::FakeImds::Start(options);
    EXPECT_TRUE(imds.ok()) << imds.status();
    return imds.ok() ? *std::move(imds) : nullptr;
  }

  std::string WriteSettings(const std::string& text) {
    const std::string path = (temp_ / "settings.yaml").string();
    std::ofstream(path) << text;
    return path;
  }

  Result Apply(const std::string& target, const std::string& settings) {
    return RunAgent({"apply", "--to", target, "--root", root_, "--settings", settings,
                     "--k8s-version", "v1.27.6", "--no-verify", "--kubelet-restart-command",
                     "true"});
  }

  // Every file under the node's root with its content.
  std::map<std::string, std::string> Tree() {
    std::map<std::string, std::string> files;
    for (const auto& entry : fs::recursive_directory_iterator(root_)) {
      if (!entry.is_regular_file()) continue;
      std::ifstream in(entry.path());
      files[entry.path().string()] = std::string(std::istreambuf_iterator<char>(in), {});
    }
    return files;
  }

  fs::path temp_;
  std::string root_;
};

TEST_F(ClusterTagCliTest, ConfirmedTagIsANoteOfTheMoveToExternal) {
  auto imds = StartImds("owned");
  const std::string settings = WriteSettings("clusterId: prod\ninstanceMetadata:\n  endpoint: " +
                                             imds->endpoint() + "\n");
  Result stopped = Apply("stopped", settings);
  ASSERT_EQ(stopped.code, 0) << stopped.err;
  EXPECT_THAT(stopped.out, Not(HasSubstr("note:")));
  EXPECT_EQ(imds->tokens_issued(), 0);  // only stopped -> external asks

  Result external = Apply("external", settings);
  ASSERT_EQ(external.code, 0) << external.err;
  EXPECT_THAT(external.out,
              HasSubstr("note: instance i-0abc carries kubernetes.io/cluster/prod=owned\n"));
  EXPECT_THAT(external.out, HasSubstr("the node is now external"));
}

TEST_F(ClusterTagCliTest, WrongTagRefusesTheMoveWithNothingWritten) {
  auto imds = StartImds("yes");
  const std::string settings = WriteSettings("clusterId: prod\ninstanceMetadata:\n  endpoint: " +
                                             imds->endpoint() + "\n");
  ASSERT_EQ(Apply("stopped", settings).code, 0);
  const auto before = Tree();
  Result external = Apply("external", settings);
  EXPECT_EQ(external.code, 2) << external.out;
  EXPECT_THAT(external.err, HasSubstr("kubernetes.io/cluster/prod=yes"));
  EXPECT_EQ(Tree(), before);
  Result status = RunAgent({"status", "--root", root_, "--settings", settings});
  EXPECT_THAT(status.out, HasSubstr("stopped"));
}

TEST_F(ClusterTagCliTest, NoClusterIdLeavesTheCheckToTheOperator) {
  const std::string settings = WriteSettings("instanceMetadata:\n  endpoint: \"\"\n");
  ASSERT_EQ(Apply("stopped", settings).code, 0);
  Result external = Apply("external", settings);
  ASSERT_EQ(external.code, 0) << external.err;
  EXPECT_THAT(external.out, HasSubstr("note: set clusterId in the settings so handoff can check"));
  EXPECT_THAT(external.out, HasSubstr("aws ec2 describe-tags --filters"));
}

}  // namespace
}  // namespace handoff
