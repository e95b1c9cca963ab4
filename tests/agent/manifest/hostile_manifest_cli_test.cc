// handoff-agent against copies of the kubeadm fixture node whose manifests or settings the
// kubelet would refuse or that hold YAML alias bombs: exit 2 with the file, line and reason, and
// nothing written.
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "agent/cli/agent_cli.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/agent/cli/run_agent.h"
#include "tests/common/base/yaml_bomb.h"

namespace handoff {
namespace {

namespace fs = std::filesystem;
using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

constexpr char kKcm[] = "/etc/kubernetes/manifests/kube-controller-manager.yaml";


std::string ReadFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream content;
  content << in.rdbuf();
  return content.str();
}

// Every file under `root` with its content, to prove a command wrote nothing.
std::map<std::string, std::string> Tree(const fs::path& root) {
  std::map<std::string, std::string> files;
  for (const auto& entry : fs::recursive_directory_iterator(root)) {
    if (entry.is_regular_file()) files[entry.path().string()] = ReadFile(entry.path());
  }
  return files;
}

class HostileManifestCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/handoff-hostile-manifest-XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    temp_ = pattern;
    root_ = (temp_ / "node").string();
    FreshCopy();
  }
  void TearDown() override { fs::remove_all(temp_); }

  // The copy of the fixture node, as it is in tests/testdata.
  void FreshCopy() {
    fs::remove_all(root_);
    fs::copy(fs::path(HANDOFF_TESTDATA_DIR) / "nodes" / "kubeadm", root_,
             fs::copy_options::recursive);
  }

  // Replaces the one occurrence of `from` in the copy's kube-controller-manager manifest.
  void EditKcm(const std::string& from, const std::string& to) {
    const fs::path path = root_ + kKcm;
    std::string content = ReadFile(path);
    const size_t at = content.find(from);
    ASSERT_NE(at, std::string::npos) << from;
    content.replace(at, from.size(), to);
    std::ofstream(path, std::ios::binary | std::ios::trunc) << content;
  }

  // plan and apply to prepared both refuse with exit 2, say `reason`, and write nothing.
  void ExpectRefusedUntouched(const std::string& reason) {
    const auto before = Tree(root_);
    Result plan = RunAgent({"plan", "--to", "prepared", "--root", root_});
    EXPECT_EQ(plan.code, kExitRefused) << plan.err;
    EXPECT_THAT(plan.out, IsEmpty());
    EXPECT_THAT(plan.err, AllOf(HasSubstr("the node is inconsistent"), HasSubstr(reason)));
    // The refusal quotes the file's problem, not the file: no expanded tree in the output.
    EXPECT_LT(plan.err.size(), 4096u);
    Result apply = RunAgent({"apply", "--to", "prepared", "--root", root_, "--no-verify",
                             "--kubelet-restart-command", "true"});
    EXPECT_EQ(apply.code, kExitRefused) << apply.err;
    EXPECT_THAT(apply.err, HasSubstr(reason));
    EXPECT_LT(apply.out.size() + apply.err.size(), 4096u);
    EXPECT_EQ(Tree(root_), before);
  }

  fs::path temp_;
  std::string root_;
};

TEST_F(HostileManifestCliTest, ArgsAsOneStringIsRefused) {
  EditKcm(
      "    name: kube-controller-manager\n",
      "    name: kube-controller-manager\n    args: \"--v=2 --enable-leader-migration=false\"\n");
  ExpectRefusedUntouched(std::string(kKcm) +
                         ":47: spec.containers[0].args: must be a list of strings (the kubelet "
                         "refuses this manifest), found a string");
}

TEST_F(HostileManifestCliTest, AliasBombInAnnotationsIsRefused) {
  for (int levels : {6, 7}) {
    SCOPED_TRACE(levels);
    FreshCopy();
    EditKcm("  creationTimestamp: null\n",
            "  creationTimestamp: null\n  annotations:\n" + testing::AliasBombEntries(levels, 4));
    ExpectRefusedUntouched(std::string(kKcm) +
                           ":6:9: YAML anchors and aliases are not accepted (&l0");
  }
}

TEST_F(HostileManifestCliTest, SettingsWithAnAliasBombAreRefused) {
  const std::string settings = (temp_ / "settings.yaml").string();
  std::ofstream(settings) << "kubernetesVersion: v1.27.6\nbomb:\n"
                          << testing::AliasBombEntries(9, 2);
  const auto before = Tree(root_);
  Result result =
      RunAgent({"plan", "--to", "prepared", "--root", root_, "--settings", settings});
  EXPECT_EQ(result.code, kExitRefused);
  EXPECT_THAT(result.err,
              HasSubstr(settings + ":3:7: YAML anchors and aliases are not accepted (&l0"));
  EXPECT_EQ(Tree(root_), before);
}

}  // namespace
}  // namespace handoff
