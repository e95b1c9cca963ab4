// `handoff-coordinator --config FILE`: the file's keys are the daemon's options, the command line
// wins, and a mistake in the file stops the start (exit 2) naming the file, the line and the key.
// Only refusals run here: they all come before the coordinator serves.
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/agent/cli/config_examples.h"
#include "tests/coordinator/server/coordinator_run_fixture.h"

namespace handoff::server {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

class CoordinatorConfigTest : public testing::CoordinatorRunTest {
 protected:
  CoordinatorConfigTest() : CoordinatorRunTest("coordinator-config") {}

  std::string Write(const std::string& text) {
    const std::string path = dir_ + "/coordinator.yaml";
    std::ofstream(path) << text;
    return path;
  }
};

TEST_F(CoordinatorConfigTest, AnUnknownKeyIsRefusedWithTheFileLineAndTheKeys) {
  const std::string path = Write("nodes: cp-1\nlease-relase: on\n");
  std::string err;
  EXPECT_EQ(Run({"--config", path}, &err), 2);
  EXPECT_THAT(err, HasSubstr(path + ":2: unknown key \"lease-relase\"; the keys are: "));
  EXPECT_THAT(err, HasSubstr("lease-release"));
}

TEST_F(CoordinatorConfigTest, ABadValueNamesItsKeyWhetherTheOptionOrTheDaemonRefusesIt) {
  std::string err;
  const std::string member = Write("no-cluster-checks: true\nnodes: cp-1\nlease-release: maybe\n");
  EXPECT_EQ(Run({"--config", member}, &err), 2);
  EXPECT_THAT(err, HasSubstr(member + ":3: key lease-release: --lease-release: maybe not in"));
  const std::string duration = Write("no-cluster-checks: true\nnodes: cp-1\ngap-limit: soon\n");
  EXPECT_EQ(Run({"--config", duration}, &err), 2);
  EXPECT_THAT(err, HasSubstr(duration + ":3: key gap-limit: --gap-limit \"soon\" is not a "
                             "positive duration"));
}

TEST_F(CoordinatorConfigTest, TheCommandLineOverridesTheFile) {
  const std::string path = Write("no-cluster-checks: true\nnodes: cp-1\ngap-limit: soon\n");
  std::string err;
  // Past the file's bad limit (overridden), refused for the command line's own bad grace.
  EXPECT_EQ(Run({"--config", path, "--gap-limit", "30s", "--shutdown-grace", "never"}, &err), 2);
  EXPECT_THAT(err, HasSubstr("--shutdown-grace \"never\""));
  EXPECT_THAT(err, Not(HasSubstr("gap-limit")));
}

// The shipped example documents every option and nothing else, and each value it shows is one the
// coordinator takes: with every key uncommented the start gets past every check of a value (to
// the settings file, absent here).
// The same bounded reader as the agent's: a FIFO never blocks the start, /dev/zero is not read.
TEST_F(CoordinatorConfigTest, OnlyARegularFileIsRead) {
  const std::string fifo = dir_ + "/fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  std::string err;
  EXPECT_EQ(Run({"--config", fifo}, &err), 2);
  EXPECT_THAT(err, HasSubstr("--config " + fifo + ": is a FIFO (named pipe)"));
  EXPECT_EQ(Run({"--config", "/dev/zero"}, &err), 2);
  EXPECT_THAT(err, HasSubstr("--config /dev/zero: is a character device"));
}

TEST_F(CoordinatorConfigTest, TheShippedExampleDocumentsEveryOptionWithAValueTheCoordinatorTakes) {
  const std::string example = handoff::testing::ExampleConfig("coordinator.yaml");
  ASSERT_FALSE(example.empty());
  std::string err;
  ::testing::internal::CaptureStdout();
  EXPECT_EQ(Run({"--help"}, &err), 0);
  const std::string help = ::testing::internal::GetCapturedStdout();
  EXPECT_EQ(handoff::testing::ExampleKeys(example), handoff::testing::HelpOptions(help));
  EXPECT_GT(handoff::testing::HelpOptions(help).size(), 15u);

  const std::string all = Write(handoff::testing::Uncommented(example));
  EXPECT_EQ(Run({"--config", all, "--settings", dir_ + "/settings.yaml", "--state-dir",
                 dir_ + "/state"},
                &err),
            2);
  EXPECT_THAT(err, HasSubstr(dir_ + "/settings.yaml"));
  EXPECT_THAT(err, Not(HasSubstr(": key ")));
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/state"));
}

}  // namespace
}  // namespace handoff::server
