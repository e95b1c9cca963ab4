// handoffctl rancher rke2|rke, run in-process on files in a temp directory: stdout, -o (atomic,
// nothing written on a refusal), --diff, and RKE's Helm values.
#include <stdlib.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "common/fs/file_system.h"
#include "ctl/ctl_cli.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/ctl/rollout_test_support.h"

namespace handoff::ctl {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::StartsWith;
using test_support::Result;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream content;
  content << in.rdbuf();
  return content.str();
}

class RancherCommandsTest : public ::testing::Test {
 protected:
  RancherCommandsTest() {
    char pattern[] = "/tmp/handoff-rancher-test-XXXXXX";
    if (mkdtemp(pattern) != nullptr) dir_ = pattern;
    environment_.open_files = [] { return NewPosixFileSystem(""); };
    environment_.get_env = [](const std::string&) -> std::optional<std::string> {
      return std::nullopt;
    };
    environment_.interrupted = [] { return false; };
    environment_.standard_input = [this]() -> std::istream& { return NoInput(); };
  }
  ~RancherCommandsTest() override {
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }

  std::string Copy(const std::string& testdata, const std::string& name) {
    const std::string path = dir_ + "/" + name;
    std::ofstream(path, std::ios::binary)
        << ReadFile(std::string(HANDOFF_TESTDATA_DIR) + "/rancher/" + testdata);
    return path;
  }

  Result Run(std::vector<std::string> args) {
    return test_support::Run(std::move(args), environment_);
  }

  // Runs with `input` as the standard input.
  Result RunWithInput(std::vector<std::string> args, const std::string& input) {
    std::istringstream stream(input);
    environment_.standard_input = [&stream]() -> std::istream& { return stream; };
    Result result = Run(std::move(args));
    environment_.standard_input = [this]() -> std::istream& { return NoInput(); };
    return result;
  }

  // Standard input for a run that gives none: a command that reads it fails the test.
  std::istream& NoInput() {
    ADD_FAILURE() << "the command read standard input, which the test did not give";
    return no_input_;
  }

  std::string dir_;
  std::istringstream no_input_;
  CtlEnvironment environment_;
};

TEST_F(RancherCommandsTest, Rke2PrintsThePhaseOnStdoutAndLeavesTheFile) {
  const std::string cluster = Copy("rke2/cluster.yaml", "cluster.yaml");
  const std::string before = ReadFile(cluster);
  Result result = Run({"rancher", "rke2", "--phase", "prepare", "-f", cluster});
  ASSERT_EQ(result.code, 0) << result.err;
  EXPECT_EQ(result.out, ReadFile(std::string(HANDOFF_TESTDATA_DIR) +
                                 "/rancher/golden/rke2/cluster.prepare.yaml"));
  EXPECT_EQ(ReadFile(cluster), before);
}

TEST_F(RancherCommandsTest, OutputFileIsWrittenAndNothingIsWrittenOnARefusal) {
  const std::string cluster = Copy("rke2/cluster.yaml", "cluster.yaml");
  const std::string output = dir_ + "/out.yaml";
  // migrate before deploy-ccm: refused, no file, no temp file left.
  Result refused = Run({"rancher", "rke2", "--phase", "migrate", "-f", cluster, "-o", output});
  EXPECT_EQ(refused.code, 2);
  EXPECT_THAT(refused.err, AllOf(StartsWith("handoffctl: "),
                                 HasSubstr("spec.rkeConfig.additionalManifest: no HelmChart")));
  EXPECT_FALSE(std::filesystem::exists(output));
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/.out.yaml.handoff-tmp"));

  Result prepared = Run({"rancher", "rke2", "--phase", "prepare", "-f", cluster, "-o", output});
  ASSERT_EQ(prepared.code, 0) << prepared.err;
  EXPECT_THAT(prepared.out, IsEmpty());
  EXPECT_THAT(ReadFile(output), HasSubstr("- enable-leader-migration"));
  EXPECT_EQ(std::filesystem::status(output).permissions() & std::filesystem::perms::all,
            std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);

  // In place, phase by phase; a refused phase leaves the file as it was.
  for (const char* phase : {"deploy-ccm", "migrate"}) {
    Result step = Run({"rancher", "rke2", "--phase", phase, "-f", output, "-o", output,
                       "--kubernetes-version", "v1.27.11+rke2r1"});
    ASSERT_EQ(step.code, 0) << phase << ": " << step.err;
  }
  const std::string migrated = ReadFile(output);
  Result again = Run({"rancher", "rke2", "--phase", "prepare", "-f", output, "-o", output});
  EXPECT_EQ(again.code, 2);
  EXPECT_THAT(again.err, HasSubstr("cloud-provider-name: is \"external\""));
  EXPECT_EQ(ReadFile(output), migrated);
}

// `-o` naming something that is not a regular file: refused by name (exit 2), and nothing there
// is replaced; through a symlink to a file, that file is written and the link stays.
TEST_F(RancherCommandsTest, OutputToAnythingButARegularFileIsRefusedAndLeftAsItWas) {
  const std::string cluster = Copy("rke2/cluster.yaml", "cluster.yaml");
  const std::string device_link = dir_ + "/null";
  std::filesystem::create_symlink("/dev/null", device_link);
  const std::string fifo = dir_ + "/fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  for (const std::string& output : {device_link, fifo, dir_}) {
    Result refused = Run({"rancher", "rke2", "--phase", "prepare", "-f", cluster, "-o", output});
    EXPECT_EQ(refused.code, 2) << output;
    EXPECT_THAT(refused.err, AllOf(HasSubstr("-o " + output), HasSubstr("not a regular file")));
  }
  EXPECT_TRUE(std::filesystem::is_symlink(device_link));
  EXPECT_TRUE(std::filesystem::is_character_file("/dev/null"));
  EXPECT_TRUE(std::filesystem::is_fifo(fifo));
  Result helm = Run({"rancher", "rke", "--phase", "prepare", "-f",
                     Copy("rke/cluster.yml", "rke.yml"), "--helm-values", fifo});
  EXPECT_EQ(helm.code, 2);
  EXPECT_THAT(helm.err, HasSubstr("--helm-values " + fifo));
  EXPECT_TRUE(std::filesystem::is_fifo(fifo));

  const std::string target = dir_ + "/target.yaml";
  std::ofstream(target) << "old";
  std::filesystem::create_symlink(target, dir_ + "/link.yaml");
  Result through =
      Run({"rancher", "rke2", "--phase", "prepare", "-f", cluster, "-o", dir_ + "/link.yaml"});
  ASSERT_EQ(through.code, 0) << through.err;
  EXPECT_TRUE(std::filesystem::is_symlink(dir_ + "/link.yaml"));
  EXPECT_THAT(ReadFile(target), HasSubstr("- enable-leader-migration"));
}

// `-o cluster.yaml`: a name without a directory part is written in the working directory, and
// the exit code says so (it once said "refused, nothing written" after writing it).
TEST_F(RancherCommandsTest, OutputWithoutADirectoryPartIsWrittenAndSucceeds) {
  const std::string cluster = Copy("rke2/cluster.yaml", "cluster.yaml");
  const std::filesystem::path before = std::filesystem::current_path();
  std::filesystem::current_path(dir_);
  Result result = Run({"rancher", "rke2", "--phase", "prepare", "-f", cluster, "-o", "out.yaml"});
  std::filesystem::current_path(before);
  EXPECT_EQ(result.code, 0) << result.err;
  EXPECT_THAT(ReadFile(dir_ + "/out.yaml"), HasSubstr("- enable-leader-migration"));
}

TEST_F(RancherCommandsTest, DiffPrintsTheUnifiedDiff) {
  const std::string cluster = Copy("rke2/cluster.yaml", "cluster.yaml");
  Result result = Run({"rancher", "rke2", "--phase", "prepare", "-f", cluster, "--diff"});
  ASSERT_EQ(result.code, 0) << result.err;
  EXPECT_THAT(result.out, AllOf(StartsWith("--- "), HasSubstr("+        - enable-leader-migration"),
                                HasSubstr("+        - key: rke.cattle.io/control-plane-role")));
  Result both = Run({"rancher", "rke2", "--phase", "prepare", "-f", cluster, "--diff", "-o",
                     dir_ + "/x.yaml"});
  EXPECT_EQ(both.code, 2);
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/x.yaml"));
}

TEST_F(RancherCommandsTest, RkePrintsTheHelmValuesOnStderrOrToAFile) {
  const std::string cluster = Copy("rke/cluster.yml", "cluster.yml");
  Result prepared = Run({"rancher", "rke", "--phase", "prepare", "-f", cluster});
  ASSERT_EQ(prepared.code, 0) << prepared.err;
  EXPECT_THAT(prepared.out, HasSubstr("enable-leader-migration: \"true\""));
  EXPECT_THAT(prepared.err, AllOf(HasSubstr("# Helm values"),
                                  HasSubstr("  - --enable-leader-migration=true\n")));

  const std::string prepared_file = dir_ + "/prepared.yml";
  std::ofstream(prepared_file, std::ios::binary) << prepared.out;
  const std::string values = dir_ + "/values.yaml";
  Result migrated = Run({"rancher", "rke", "--phase", "migrate", "-f", prepared_file,
                         "--use-instance-metadata-hostname=false", "--helm-values", values});
  ASSERT_EQ(migrated.code, 0) << migrated.err;
  EXPECT_THAT(migrated.out, AllOf(HasSubstr("name: external-aws"),
                                  HasSubstr("useInstanceMetadataHostname: false")));
  EXPECT_THAT(ReadFile(values), HasSubstr("--enable-leader-migration=true"));

  Result bad = Run({"rancher", "rke", "--phase", "migrate", "-f", prepared_file,
                    "--use-instance-metadata-hostname=maybe"});
  EXPECT_EQ(bad.code, 2);
  EXPECT_THAT(bad.err, HasSubstr("--use-instance-metadata-hostname \"maybe\""));
}

TEST_F(RancherCommandsTest, DashFileReadsTheClusterFromStandardInput) {
  const std::string testdata = std::string(HANDOFF_TESTDATA_DIR) + "/rancher/";
  const std::string cluster = ReadFile(testdata + "rke2/cluster.yaml");
  Result printed = RunWithInput({"rancher", "rke2", "--phase", "prepare", "-f", "-"}, cluster);
  ASSERT_EQ(printed.code, 0) << printed.err;
  EXPECT_EQ(printed.out, ReadFile(testdata + "golden/rke2/cluster.prepare.yaml"));

  const std::string output = dir_ + "/out.yaml";
  Result written =
      RunWithInput({"rancher", "rke2", "--phase", "prepare", "-f", "-", "-o", output}, cluster);
  ASSERT_EQ(written.code, 0) << written.err;
  EXPECT_EQ(ReadFile(output), printed.out);

  Result diff =
      RunWithInput({"rancher", "rke2", "--phase", "prepare", "--diff", "--file", "-"}, cluster);
  ASSERT_EQ(diff.code, 0) << diff.err;
  EXPECT_THAT(diff.out, AllOf(StartsWith("--- a/<stdin>\n+++ b/<stdin>\n"),
                              HasSubstr("+        - enable-leader-migration")));

  Result rke = RunWithInput({"rancher", "rke", "--phase", "prepare", "-f", "-"},
                            ReadFile(testdata + "rke/cluster.yml"));
  ASSERT_EQ(rke.code, 0) << rke.err;
  EXPECT_EQ(rke.out, ReadFile(testdata + "golden/rke/cluster.prepare.yml"));
  EXPECT_THAT(rke.err, HasSubstr("  - --enable-leader-migration=true\n"));
}

TEST_F(RancherCommandsTest, DashFileRefusalsNameStandardInput) {
  Result deployment = RunWithInput({"rancher", "rke2", "--phase", "prepare", "-f", "-"},
                                   "apiVersion: apps/v1\nkind: Deployment\n");
  EXPECT_EQ(deployment.code, 2);
  EXPECT_THAT(deployment.err,
              HasSubstr("<stdin>: apiVersion/kind: not a provisioning.cattle.io/v1"));
  EXPECT_THAT(deployment.out, IsEmpty());

  Result empty = RunWithInput({"rancher", "rke", "--phase", "prepare", "-f", "-"}, "");
  EXPECT_EQ(empty.code, 2);
  EXPECT_THAT(empty.err, HasSubstr("<stdin>: the file holds no YAML document"));

  // More than a cluster file can hold is refused with the limit, not read to its end.
  const std::string output = dir_ + "/out.yaml";
  Result huge = RunWithInput({"rancher", "rke2", "--phase", "prepare", "-f", "-", "-o", output},
                             std::string(4 * 1024 * 1024 + 1, '#'));
  EXPECT_EQ(huge.code, 2);
  EXPECT_THAT(huge.err,
              AllOf(HasSubstr("-f: <stdin>: "),
                    HasSubstr("larger than the 4 MiB (4194304 bytes) limit for a cluster file")));
  EXPECT_FALSE(std::filesystem::exists(output));
}

TEST_F(RancherCommandsTest, AMissingFileIsRefused) {
  Result result = Run({"rancher", "rke2", "--phase", "prepare", "-f", dir_ + "/absent.yaml"});
  EXPECT_EQ(result.code, 2);
  EXPECT_THAT(result.err, HasSubstr("-f: "));
}

}  // namespace
}  // namespace handoff::ctl
