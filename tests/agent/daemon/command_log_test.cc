#include "agent/daemon/command_log.h"

#include "common/base/strings.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/fault_injection_file_system.h"
#include "tests/support/memory_file_system.h"

namespace handoff {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

constexpr char kStateDir[] = "/var/lib/handoff";

v1::MoveRequest Move() {
  v1::MoveRequest move;
  move.set_from(v1::NODE_STATE_PREPARED);
  move.set_to(v1::NODE_STATE_MIGRATED);
  return move;
}

v1::CommandResult Result(const std::string& id) {
  v1::CommandResult result;
  result.set_command_id(id);
  result.set_outcome(v1::CommandResult::SUCCEEDED);
  result.set_message("moved");
  result.mutable_move()->set_transaction("000001-x");
  result.mutable_report()->set_state(v1::NODE_STATE_MIGRATED);
  return result;
}

TEST(CommandLogTest, StartedIsDurableBeforeItReturns) {
  FaultInjectionFileSystem fs;
  absl::StatusOr<CommandLog> log = CommandLog::Open(fs, kStateDir);
  ASSERT_TRUE(log.ok());
  ASSERT_TRUE(log->RecordStarted("r1-1", Move(), absl::FromUnixMillis(1234)).ok());
  fs.Crash();  // only what was made durable survives
  absl::StatusOr<CommandLog> reopened = CommandLog::Open(fs, kStateDir);
  ASSERT_TRUE(reopened.ok()) << reopened.status();
  ASSERT_EQ(reopened->Records().size(), 1u);
  const CommandRecord record = reopened->Records()[0];
  EXPECT_EQ(record.id, "r1-1");
  EXPECT_FALSE(record.finished);
  EXPECT_EQ(record.from, v1::NODE_STATE_PREPARED);
  EXPECT_EQ(record.to, v1::NODE_STATE_MIGRATED);
  EXPECT_EQ(record.started_unix_ms, 1234);
  EXPECT_EQ(log->PathOf("r1-1"), "/var/lib/handoff/commands/r1-1.json");
}

TEST(CommandLogTest, FinishedKeepsTheResultAndTheStart) {
  MemoryFileSystem fs;
  absl::StatusOr<CommandLog> log = CommandLog::Open(fs, kStateDir);
  ASSERT_TRUE(log.ok());
  ASSERT_TRUE(log->RecordStarted("r1-1", Move(), absl::FromUnixMillis(1234)).ok());
  ASSERT_TRUE(log->RecordFinished("r1-1", Result("r1-1")).ok());
  EXPECT_THAT(*fs.ReadFile("/var/lib/handoff/commands/r1-1.json"),
              AllOf(HasSubstr("\"phase\": \"finished\""), HasSubstr("\"outcome\": \"SUCCEEDED\"")));
  absl::StatusOr<CommandLog> reopened = CommandLog::Open(fs, kStateDir);
  ASSERT_TRUE(reopened.ok()) << reopened.status();
  const CommandRecord record = reopened->Records().at(0);
  EXPECT_TRUE(record.finished);
  EXPECT_EQ(record.started_unix_ms, 1234);
  EXPECT_EQ(record.result.move().transaction(), "000001-x");
  EXPECT_EQ(record.result.report().state(), v1::NODE_STATE_MIGRATED);
}

TEST(CommandLogTest, KeepsTheNewestFinishedRecordsAndEveryUnfinishedOne) {
  MemoryFileSystem fs;
  absl::StatusOr<CommandLog> log = CommandLog::Open(fs, kStateDir);
  ASSERT_TRUE(log.ok());
  ASSERT_TRUE(log->RecordStarted("r1-0", Move(), absl::FromUnixMillis(1)).ok());
  for (int i = 1; i <= 70; ++i) {
    const std::string id = StrCat("r1-", i);
    ASSERT_TRUE(log->RecordStarted(id, Move(), absl::FromUnixMillis(i)).ok());
    ASSERT_TRUE(log->RecordFinished(id, Result(id)).ok());
    ASSERT_TRUE(log->Prune().ok());
  }
  absl::StatusOr<CommandLog> reopened = CommandLog::Open(fs, kStateDir);
  ASSERT_TRUE(reopened.ok());
  const std::vector<CommandRecord> records = reopened->Records();
  ASSERT_EQ(records.size(), kCommandLogKeep + 1);
  EXPECT_EQ(records.front().id, "r1-0");
  EXPECT_FALSE(records.front().finished);
  EXPECT_EQ(records[1].id, "r1-7");
  EXPECT_EQ(records.back().id, "r1-70");
  EXPECT_FALSE(fs.Exists("/var/lib/handoff/commands/r1-6.json"));
}

TEST(CommandLogTest, ADamagedRecordStopsTheAgentAndNamesTheFile) {
  MemoryFileSystem fs;
  fs.SetFile("/var/lib/handoff/commands/r1-1.json", "{\"id\": \"r1-1\", \"seq");
  absl::StatusOr<CommandLog> log = CommandLog::Open(fs, kStateDir);
  ASSERT_FALSE(log.ok());
  EXPECT_TRUE(absl::IsDataLoss(log.status()));
  EXPECT_THAT(std::string(log.status().message()),
              AllOf(HasSubstr("/var/lib/handoff/commands/r1-1.json"),
                    HasSubstr("cannot tell whether this command was a move in progress")));
}

TEST(CommandLogTest, ASequenceOutOfRangeIsADamagedRecordNamed) {
  for (const std::string sequence :
       {"0", "-1", "-9223372036854775808", "9007199254740992", "9223372036854775807",
        "18446744073709551615"}) {
    SCOPED_TRACE(sequence);
    MemoryFileSystem fs;
    fs.SetFile("/var/lib/handoff/commands/r1-1.json",
               StrCat("{\"id\": \"r1-1\", \"sequence\": ", sequence, ", \"phase\": \"started\"}"));
    absl::StatusOr<CommandLog> log = CommandLog::Open(fs, kStateDir);
    ASSERT_FALSE(log.ok());
    EXPECT_TRUE(absl::IsDataLoss(log.status()));
    EXPECT_THAT(std::string(log.status().message()),
                AllOf(HasSubstr("/var/lib/handoff/commands/r1-1.json"),
                      HasSubstr(StrCat("\"sequence\" ", sequence, " is not between 1 and "))));
  }
}

TEST(CommandLogTest, TheLastSequenceRefusesANewMoveAndWritesNothing) {
  MemoryFileSystem fs;
  const std::string record =
      StrCat("{\"id\": \"r1-1\", \"sequence\": ", kMaxCommandSequence, ", \"phase\": \"started\"}");
  fs.SetFile("/var/lib/handoff/commands/r1-1.json", record);
  absl::StatusOr<CommandLog> log = CommandLog::Open(fs, kStateDir);
  ASSERT_TRUE(log.ok()) << log.status();
  EXPECT_EQ(log->Records().front().sequence, kMaxCommandSequence);
  for (const absl::Status& status :
       {log->RecordStarted("r1-2", Move(), absl::FromUnixMillis(1)),
        log->RecordFinished("r1-3", Result("r1-3"))}) {
    EXPECT_TRUE(absl::IsFailedPrecondition(status)) << status;
    EXPECT_THAT(std::string(status.message()),
                AllOf(HasSubstr("/var/lib/handoff/commands"), HasSubstr("was edited")));
  }
  EXPECT_FALSE(fs.Exists("/var/lib/handoff/commands/r1-2.json"));
  EXPECT_FALSE(fs.Exists("/var/lib/handoff/commands/r1-3.json"));
  // The record it holds can still be finished.
  EXPECT_TRUE(log->RecordFinished("r1-1", Result("r1-1")).ok());
}

TEST(CommandLogTest, IgnoresTempFilesLeftByACrash) {
  MemoryFileSystem fs;
  fs.SetFile("/var/lib/handoff/commands/.r1-1.json.handoff-tmp", "{\"id\"");
  absl::StatusOr<CommandLog> log = CommandLog::Open(fs, kStateDir);
  ASSERT_TRUE(log.ok()) << log.status();
  EXPECT_TRUE(log->Records().empty());
}

TEST(CommandLogTest, IdsThatCouldNameAPathAreRejected) {
  EXPECT_TRUE(CommandLog::IsValidId("3f2a9c-17"));
  EXPECT_TRUE(CommandLog::IsValidId("rollout_1.step-2"));
  EXPECT_FALSE(CommandLog::IsValidId(""));
  EXPECT_FALSE(CommandLog::IsValidId(".hidden"));
  EXPECT_FALSE(CommandLog::IsValidId("a/b"));
  EXPECT_FALSE(CommandLog::IsValidId(".."));
  EXPECT_FALSE(CommandLog::IsValidId(std::string(201, 'a')));
  MemoryFileSystem fs;
  absl::StatusOr<CommandLog> log = CommandLog::Open(fs, kStateDir);
  ASSERT_TRUE(log.ok());
  EXPECT_FALSE(log->RecordStarted("../x", Move(), absl::UnixEpoch()).ok());
  EXPECT_TRUE(fs.files().empty());
}

}  // namespace
}  // namespace handoff
