// The daemons' logging: JSON lines that parse whatever the message holds, journald entries with
// their fields, and auto choosing the journal only when stderr is the journal's stream.
#include "common/system/log_setup.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sstream>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace handoff {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::MatchesRegex;

class RecordingJournal : public JournalWriter {
 public:
  explicit RecordingJournal(int result = 0, bool available = true)
      : result_(result), available_(available) {}
  int Send(const std::vector<std::string>& fields) override {
    entries.push_back(fields);
    return result_;
  }
  bool Available() override { return available_; }
  std::vector<std::vector<std::string>> entries;

 private:
  int result_;
  bool available_;
};

std::vector<nlohmann::json> JsonLines(const std::string& text) {
  std::vector<nlohmann::json> lines;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) lines.push_back(nlohmann::json::parse(line));
  return lines;
}

TEST(LogSetupTest, JsonIsOneObjectPerLineWhateverTheMessageHolds) {
  std::ostringstream out;
  LogOptions options;
  options.name = "handoff-agent";
  options.format = LogFormat::kJson;
  options.stream = &out;
  options.node = "cp-1";
  std::shared_ptr<spdlog::logger> logger = MakeLogger(options);
  logger->info("moved \"in-tree\" -> prepared");
  logger->warn("two\nlines\tand a \\ and \x01 and {}", std::string("bad \xff byte"));
  logger->error("plain");

  std::vector<nlohmann::json> lines = JsonLines(out.str());
  ASSERT_EQ(lines.size(), 3u) << out.str();
  EXPECT_EQ(lines[0]["msg"], "moved \"in-tree\" -> prepared");
  EXPECT_EQ(lines[0]["level"], "info");
  EXPECT_EQ(lines[0]["logger"], "handoff-agent");
  EXPECT_EQ(lines[0]["node"], "cp-1");
  EXPECT_THAT(lines[0]["time"].get<std::string>(),
              MatchesRegex("[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\\.[0-9]{3}Z"));
  EXPECT_EQ(lines[1]["msg"], "two\nlines\tand a \\ and \x01 and bad \xef\xbf\xbd byte");
  EXPECT_EQ(lines[1]["level"], "warning");
  EXPECT_EQ(lines[2]["level"], "error");
  std::vector<std::string> keys;
  for (const auto& [key, value] : lines[2].items()) keys.push_back(key);
  EXPECT_THAT(keys, ElementsAre("level", "logger", "msg", "node", "time"));
}

TEST(LogSetupTest, JournalEntriesCarryPriorityIdentifierAndNode) {
  auto journal = std::make_shared<RecordingJournal>();
  LogOptions options;
  options.name = "handoff-agent";
  options.format = LogFormat::kJournal;
  options.node = "cp-2";
  options.journal = journal;
  std::shared_ptr<spdlog::logger> logger = MakeLogger(options);
  logger->info("connected");
  logger->error("refused: {}", "bad certificate");
  ASSERT_EQ(journal->entries.size(), 2u);
  EXPECT_THAT(journal->entries[0], ElementsAre("MESSAGE=connected", "PRIORITY=6",
                                               "SYSLOG_IDENTIFIER=handoff-agent",
                                               "HANDOFF_NODE=cp-2"));
  EXPECT_THAT(journal->entries[1], ElementsAre("MESSAGE=refused: bad certificate", "PRIORITY=3",
                                               "SYSLOG_IDENTIFIER=handoff-agent",
                                               "HANDOFF_NODE=cp-2"));

  // Without a node (the coordinator) there is no HANDOFF_NODE.
  options.name = "handoff-coordinator";
  options.node = "";
  MakeLogger(options)->warn("slow");
  EXPECT_THAT(journal->entries[2], ElementsAre("MESSAGE=slow", "PRIORITY=4",
                                               "SYSLOG_IDENTIFIER=handoff-coordinator"));
}

TEST(LogSetupTest, AnEntryJournaldRefusesGoesToTheStream) {
  std::ostringstream out;
  LogOptions options;
  options.name = "handoff-coordinator";
  options.format = LogFormat::kJournal;
  options.stream = &out;
  options.journal = std::make_shared<RecordingJournal>(-ENOENT);
  MakeLogger(options)->info("still here");
  EXPECT_EQ(out.str(), "handoff-coordinator info still here\n");
}

TEST(LogSetupTest, WithoutJournaldTheJournalFormatWritesTextAndSaysSo) {
  std::ostringstream out;
  auto journal = std::make_shared<RecordingJournal>(0, /*available=*/false);
  LogOptions options;
  options.name = "handoff-agent";
  options.format = LogFormat::kJournal;
  options.stream = &out;
  options.text_pattern = "%L %v";
  options.journal = journal;
  MakeLogger(options)->info("hello");
  EXPECT_THAT(journal->entries, IsEmpty());
  EXPECT_EQ(out.str(),
            "W --log-format journal: journald does not listen here "
            "(/run/systemd/journal/socket); logging text on stderr\nI hello\n");
}

TEST(LogSetupTest, TextKeepsTheDaemonsPattern) {
  std::ostringstream out;
  LogOptions options;
  options.name = "handoff-agent";
  options.format = LogFormat::kText;
  options.stream = &out;
  options.text_pattern = "%L %v";
  MakeLogger(options)->info("hello");
  EXPECT_EQ(out.str(), "I hello\n");
}

class JournalStreamTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string path = ::testing::TempDir() + "/journal-stream-XXXXXX";
    fd_ = mkstemp(path.data());
    ASSERT_GE(fd_, 0);
    unlink(path.c_str());
    struct stat opened {};
    ASSERT_EQ(fstat(fd_, &opened), 0);
    value_ = std::to_string(opened.st_dev) + ":" + std::to_string(opened.st_ino);
  }
  void TearDown() override { close(fd_); }
  int fd_ = -1;
  std::string value_;
};

TEST_F(JournalStreamTest, AutoChoosesTheJournalOnlyWhenTheStreamIsTheOneSystemdNamed) {
  EXPECT_TRUE(IsJournalStream(value_.c_str(), fd_));
  EXPECT_FALSE(IsJournalStream(nullptr, fd_));
  EXPECT_FALSE(IsJournalStream(value_.c_str(), -1));
  EXPECT_FALSE(IsJournalStream((value_ + "x").c_str(), fd_));
  EXPECT_FALSE(IsJournalStream("1:2", fd_));
  EXPECT_FALSE(IsJournalStream("", fd_));

  LogOptions options;
  options.stream_fd = fd_;
  options.journal_stream = value_.c_str();
  EXPECT_EQ(ChosenLogFormat(options), LogFormat::kJournal);
  // Inherited by a child whose stderr was redirected elsewhere: text.
  options.journal_stream = "1:2";
  EXPECT_EQ(ChosenLogFormat(options), LogFormat::kText);
  // Asked for, never second-guessed.
  options.format = LogFormat::kJson;
  options.journal_stream = value_.c_str();
  EXPECT_EQ(ChosenLogFormat(options), LogFormat::kJson);
}

TEST(LogSetupTest, OnlyTheFourFormatsParse) {
  EXPECT_EQ(*ParseLogFormat("auto"), LogFormat::kAuto);
  EXPECT_EQ(*ParseLogFormat("text"), LogFormat::kText);
  EXPECT_EQ(*ParseLogFormat("json"), LogFormat::kJson);
  EXPECT_EQ(*ParseLogFormat("journal"), LogFormat::kJournal);
  absl::StatusOr<LogFormat> bad = ParseLogFormat("xml");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("--log-format 'xml' is not one of"));
}

}  // namespace
}  // namespace handoff
