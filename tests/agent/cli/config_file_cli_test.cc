// `handoff-agent run --config FILE`: the file's keys are run's options, the command line wins,
// and a mistake in the file is refused at start naming the file, the line and the key.
#include <stdlib.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/agent/cli/config_examples.h"
#include "tests/agent/cli/run_agent.h"

namespace handoff {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

class ConfigFileCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = std::filesystem::path(::testing::TempDir()) / "agent-config-XXXXXX";
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string Write(const std::string& text) {
    const std::string path = dir_ + "/agent.yaml";
    std::ofstream(path) << text;
    return path;
  }

  std::string dir_;
};

TEST_F(ConfigFileCliTest, AnUnknownKeyIsRefusedWithTheFileLineAndTheKeys) {
  const std::string path = Write("coordinator: cp-0:7450\nsample-intervall: 2s\n");
  Result result = RunAgent({"run", "--config", path});
  EXPECT_EQ(result.code, 2);
  EXPECT_THAT(result.err, HasSubstr(path + ":2: unknown key \"sample-intervall\"; the keys are: "));
  EXPECT_THAT(result.err, HasSubstr("sample-interval"));
}

TEST_F(ConfigFileCliTest, TheFilesOptionsAreUsedAndABadValueNamesItsKey) {
  // --ca from the file: its error names the file and the key.
  const std::string path =
      Write("coordinator: cp-0:7450\nca: " + dir_ + "/no-such-ca.crt\nsample-interval: 1s\n");
  Result result = RunAgent({"run", "--config=" + path});
  EXPECT_EQ(result.code, 2);
  EXPECT_THAT(result.err, HasSubstr(path + ":2: key ca: cannot read --ca: "));
  // A value the option refuses.
  const std::string bad = Write("coordinator: cp-0:7450\nsample-interval: soon\n");
  result = RunAgent({"run", "--config", bad});
  EXPECT_EQ(result.code, 2);
  EXPECT_THAT(result.err, HasSubstr(bad + ":2: key sample-interval: --sample-interval: 'soon'"));
}

TEST_F(ConfigFileCliTest, TheCommandLineOverridesTheFile) {
  const std::string path =
      Write("coordinator: cp-0:7450\nsample-interval: soon\nca: " + dir_ + "/file-ca.crt\n");
  Result result = RunAgent(
      {"run", "--config", path, "--sample-interval", "1s", "--ca", dir_ + "/flag-ca.crt"});
  EXPECT_EQ(result.code, 2);
  // Past the file's bad interval (overridden), stopped at the command line's --ca, not the file's.
  EXPECT_THAT(result.err, HasSubstr("cannot read --ca: " + dir_ + "/flag-ca.crt"));
  EXPECT_THAT(result.err, Not(HasSubstr("file-ca.crt")));
  EXPECT_THAT(result.err, Not(HasSubstr(path)));
}

TEST_F(ConfigFileCliTest, AMissingFileIsRefused) {
  Result result = RunAgent({"run", "--config", dir_ + "/absent.yaml"});
  EXPECT_EQ(result.code, 2);
  EXPECT_THAT(result.err, HasSubstr("--config " + dir_ + "/absent.yaml: cannot be read"));
}

// Only a regular file of at most 1 MiB is read: a FIFO would block the start forever, /dev/zero
// would be read until memory ran out, a directory was once "9223372036854775807 bytes".
TEST_F(ConfigFileCliTest, OnlyARegularFileOfBoundedSizeIsRead) {
  const std::string fifo = dir_ + "/fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  Result result = RunAgent({"run", "--config", fifo});
  EXPECT_EQ(result.code, 2);
  EXPECT_THAT(result.err, HasSubstr("--config " + fifo +
                                    ": is a FIFO (named pipe), not a "
                                    "regular file; handoff reads a configuration file only"));
  result = RunAgent({"run", "--config", "/dev/zero"});
  EXPECT_EQ(result.code, 2);
  EXPECT_THAT(result.err, HasSubstr("--config /dev/zero: is a character device"));
  result = RunAgent({"run", "--config", dir_});
  EXPECT_EQ(result.code, 2);
  EXPECT_THAT(result.err, HasSubstr("--config " + dir_ + ": is a directory"));
  const std::string big = dir_ + "/big.yaml";
  std::ofstream(big) << "# " << std::string(1 << 20, 'x') << "\n";
  result = RunAgent({"run", "--config", big});
  EXPECT_EQ(result.code, 2);
  EXPECT_THAT(result.err, HasSubstr("configuration file"));
  EXPECT_THAT(result.err, HasSubstr(big));
}

// The shipped example documents every option of `run` and nothing else, and each value it shows
// is one the agent takes: with every key uncommented the start gets past every check of a value
// (to the settings file, absent here).
TEST_F(ConfigFileCliTest, TheShippedExampleDocumentsEveryOptionWithAValueTheAgentTakes) {
  const std::string example = testing::ExampleConfig("agent.yaml");
  ASSERT_FALSE(example.empty());
  Result help = RunAgent({"run", "--help"});
  ASSERT_EQ(help.code, 0);
  EXPECT_EQ(testing::ExampleKeys(example), testing::HelpOptions(help.out));
  EXPECT_GT(testing::HelpOptions(help.out).size(), 15u);

  const std::string all = Write(testing::Uncommented(example));
  Result result = RunAgent({"run", "--config", all, "--settings", dir_ + "/node-settings.yaml"});
  EXPECT_EQ(result.code, 2);
  EXPECT_THAT(result.err, HasSubstr(dir_ + "/node-settings.yaml"));
  EXPECT_THAT(result.err, Not(HasSubstr(": key ")));
}

}  // namespace
}  // namespace handoff
