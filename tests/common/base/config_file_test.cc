#include "common/base/config_file.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace handoff {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

const std::vector<ConfigOption> kKnown = {
    {"coordinator", false}, {"sample-interval", false}, {"no-verify", true}, {"key", false}};

absl::StatusOr<ConfigArgs> Parse(const std::string& text,
                                 const std::vector<std::string>& command_line = {}) {
  return ParseConfigFile("/etc/handoff/agent.yaml", text, kKnown, command_line);
}

std::string Message(const absl::StatusOr<ConfigArgs>& parsed) {
  return std::string(parsed.status().message());
}

TEST(ConfigFileTest, EachKeyStandsForItsOptionInTheFilesOrder) {
  absl::StatusOr<ConfigArgs> parsed =
      Parse("# the agent\ncoordinator: cp-0:7450\nno-verify: true\nsample-interval: 2s\n");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_THAT(parsed->args,
              ElementsAre("--coordinator=cp-0:7450", "--no-verify", "--sample-interval=2s"));
  EXPECT_EQ(parsed->sources.at("sample-interval"), "/etc/handoff/agent.yaml:4");
}

TEST(ConfigFileTest, TheCommandLineWinsOverTheFile) {
  absl::StatusOr<ConfigArgs> parsed = Parse("coordinator: cp-0:7450\nsample-interval: 2s\n",
                                            {"run", "--sample-interval=0s", "--", "--coordinator"});
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  // "--coordinator" after "--" is no option.
  EXPECT_THAT(parsed->args, ElementsAre("--coordinator=cp-0:7450"));
  parsed = Parse("coordinator: cp-0:7450\n", {"--coordinator", "cp-9:7450"});
  ASSERT_TRUE(parsed.ok());
  EXPECT_THAT(parsed->args, IsEmpty());
}

TEST(ConfigFileTest, AFalseFlagIsAsIfNotGivenAndAnEmptyFileIsEveryDefault) {
  absl::StatusOr<ConfigArgs> parsed = Parse("no-verify: false\n");
  ASSERT_TRUE(parsed.ok());
  EXPECT_THAT(parsed->args, IsEmpty());
  parsed = Parse("# nothing set\n\n");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_THAT(parsed->args, IsEmpty());
}

TEST(ConfigFileTest, MistakesNameTheFileTheLineAndTheKey) {
  EXPECT_THAT(Message(Parse("coordinator: a:1\nsample-intervall: 2s\n")),
              HasSubstr("/etc/handoff/agent.yaml:2: unknown key \"sample-intervall\"; the keys "
                        "are: coordinator, key, no-verify, sample-interval"));
  EXPECT_THAT(Message(Parse("no-verify: maybe\n")),
              HasSubstr("/etc/handoff/agent.yaml:1: key no-verify: true or false expected, found "
                        "\"maybe\""));
  EXPECT_THAT(Message(Parse("coordinator:\n  - a:1\n")),
              HasSubstr("/etc/handoff/agent.yaml:2: key coordinator: one value expected, found a "
                        "list"));
  EXPECT_THAT(Message(Parse("coordinator:\n")),
              HasSubstr("/etc/handoff/agent.yaml:1: key coordinator: no value"));
  EXPECT_THAT(Message(Parse("- coordinator\n")),
              HasSubstr("/etc/handoff/agent.yaml:1: a map of option: value expected, found a list"));
  EXPECT_THAT(Message(Parse("coordinator: a:1\ncoordinator: b:2\n")), HasSubstr("agent.yaml:2"));
  EXPECT_THAT(Message(Parse("coordinator: [\n")), HasSubstr("/etc/handoff/agent.yaml:"));
}

TEST(ConfigFileTest, AnErrorAboutAKeysOptionNamesTheFileAndKey) {
  absl::StatusOr<ConfigArgs> parsed = Parse("sample-interval: soon\nkey: /k\n");
  ASSERT_TRUE(parsed.ok());
  const absl::Status bad =
      absl::InvalidArgumentError("--sample-interval \"soon\" is not a duration such as 2s");
  const absl::Status named = AttributeToConfigFile(bad, *parsed);
  EXPECT_EQ(named.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(named.message(),
            "/etc/handoff/agent.yaml:1: key sample-interval: --sample-interval \"soon\" is not a "
            "duration such as 2s");
  // "--key" inside "--key-file" is another option; one the command line gave is its own.
  const absl::Status other = absl::InvalidArgumentError("--key-file: missing");
  EXPECT_EQ(AttributeToConfigFile(other, *parsed), other);
  EXPECT_TRUE(AttributeToConfigFile(absl::OkStatus(), *parsed).ok());
}

}  // namespace
}  // namespace handoff
