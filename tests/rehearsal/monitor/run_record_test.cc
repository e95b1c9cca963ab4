// The run record format: every field through Format and Parse, the exact lines of the documented
// events, one error per way a line can be wrong (each naming the field), reading a records
// directory (an incomplete last line skipped, a bad middle line an error naming file and line),
// and appends from several threads and processes at once leaving only whole lines.
#include "rehearsal/monitor/run_record.h"

#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "common/base/strings.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/rehearsal/monitor/run_record_builders.h"
#include "tests/support/memory_file_system.h"

namespace handoff::sandbox {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::StartsWith;

std::string Message(const absl::Status& status) { return std::string(status.message()); }

RunRecord Start(int64_t t_ns, std::string controller, std::string lock) {
  RunRecord record;
  record.t_ns = t_ns;
  record.node = "cp-1";
  record.component = "kube-controller-manager";
  record.pid = 123;
  record.event = kControllerStart;
  record.controller = std::move(controller);
  record.lock = std::move(lock);
  return record;
}

// Every field set, with strings that are easy to mangle: quotes, backslashes, a newline, a tab,
// non-ASCII text.
RunRecord EveryField() {
  RunRecord record;
  record.t_ns = 1'714'567'890'123'456'789;
  record.node = "cp-1.example.internal";
  record.component = "cloud-controller-manager";
  record.pid = 4'194'303;
  record.event = kControllerStop;
  record.controller = "cloud-node-lifecycle";
  record.lock = "migration";
  record.lease = "kube-system/cloud-provider-extraction-migration";
  record.reason = "lease lost: \"renew\" failed\\n";
  record.status = "signal 9";
  record.message = "line one\nline two\ttabbed, ünïcödé ✓";
  return record;
}

TEST(RunRecordFormatTest, EveryFieldSurvivesTheRoundTrip) {
  const RunRecord record = EveryField();
  const std::string line = FormatRunRecord(record);
  EXPECT_EQ(line.find('\n'), std::string::npos) << line;
  absl::StatusOr<RunRecord> parsed = ParseRunRecord(line);
  ASSERT_TRUE(parsed.ok()) << parsed.status() << "\n" << line;
  EXPECT_EQ(parsed->t_ns, record.t_ns);
  EXPECT_EQ(parsed->node, record.node);
  EXPECT_EQ(parsed->component, record.component);
  EXPECT_EQ(parsed->pid, record.pid);
  EXPECT_EQ(parsed->event, record.event);
  EXPECT_EQ(parsed->controller, record.controller);
  EXPECT_EQ(parsed->lock, record.lock);
  EXPECT_EQ(parsed->lease, record.lease);
  EXPECT_EQ(parsed->reason, record.reason);
  EXPECT_EQ(parsed->status, record.status);
  EXPECT_EQ(parsed->message, record.message);
  EXPECT_EQ(*parsed, record);
}

TEST(RunRecordFormatTest, EachFieldOnItsOwnSurvivesTheRoundTrip) {
  // One optional field at a time, so that a field written under another's name would show.
  for (int field = 0; field < 6; ++field) {
    RunRecord record;
    record.t_ns = 1 + field;
    record.node = "cp-2";
    record.component = "kube-controller-manager";
    record.pid = 7;
    record.event = kMonitorNote;
    std::string* fields[] = {&record.controller, &record.lock,   &record.lease,
                             &record.reason,     &record.status, &record.message};
    if (field == 0) {
      record.controller = "node-ipam";
    } else {
      *fields[field] = StrCat("value of field ", field);
    }
    absl::StatusOr<RunRecord> parsed = ParseRunRecord(FormatRunRecord(record));
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    EXPECT_EQ(*parsed, record) << FormatRunRecord(record);
  }
}

TEST(RunRecordFormatTest, TheDocumentedEventsAsExactLines) {
  EXPECT_EQ(FormatRunRecord(Start(1, "route", "main")),
            R"({"t_ns":1,"node":"cp-1","component":"kube-controller-manager","pid":123,)"
            R"("event":"controller-start","controller":"route","lock":"main"})");

  RunRecord stop = Start(2, "route", "");
  stop.event = kControllerStop;
  stop.reason = "lease lost";
  EXPECT_EQ(FormatRunRecord(stop),
            R"({"t_ns":2,"node":"cp-1","component":"kube-controller-manager","pid":123,)"
            R"("event":"controller-stop","controller":"route","reason":"lease lost"})");

  RunRecord lease = Start(3, "", "");
  lease.event = kLeaseAcquired;
  lease.lease = "kube-system/cloud-provider-extraction-migration";
  EXPECT_EQ(
      FormatRunRecord(lease),
      R"({"t_ns":3,"node":"cp-1","component":"kube-controller-manager","pid":123,)"
      R"("event":"lease-acquired","lease":"kube-system/cloud-provider-extraction-migration"})");

  RunRecord exit = Start(4, "", "");
  exit.event = kProcessExit;
  exit.status = "signal 9";
  EXPECT_EQ(FormatRunRecord(exit),
            R"({"t_ns":4,"node":"cp-1","component":"kube-controller-manager","pid":123,)"
            R"("event":"process-exit","status":"signal 9"})");
}

TEST(RunRecordFormatTest, LargestTimeAndPid) {
  RunRecord record = Start(INT64_MAX, "service", "migration");
  record.pid = INT64_MAX;
  absl::StatusOr<RunRecord> parsed = ParseRunRecord(FormatRunRecord(record));
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(*parsed, record);
}

TEST(RunRecordFormatTest, InvalidUtf8IsReplacedNotThrown) {
  RunRecord record = Start(1, "route", "main");
  record.event = kMonitorNote;
  record.message = "bad \xff byte";
  const std::string line = FormatRunRecord(record);
  absl::StatusOr<RunRecord> parsed = ParseRunRecord(line);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->message, "bad \xEF\xBF\xBD byte");
}

TEST(RunRecordFormatTest, ParseAcceptsAnyFieldOrderAndMonitorNotesWithoutANode) {
  absl::StatusOr<RunRecord> parsed =
      ParseRunRecord(R"({"message":"sandbox up","event":"monitor-note","pid":0,"t_ns":5})");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->t_ns, 5);
  EXPECT_EQ(parsed->event, kMonitorNote);
  EXPECT_EQ(parsed->message, "sandbox up");
  EXPECT_EQ(parsed->node, "");
}

struct BadLine {
  std::string line;
  std::string error;  // a substring of the message
};

TEST(RunRecordParseTest, EachMistakeIsAnErrorNamingTheField) {
  const std::string head = R"("node":"cp-1","component":"kube-controller-manager","pid":1,)";
  const BadLine cases[] = {
      {"", "not JSON"},
      {R"({"t_ns":1,)", "not JSON"},
      {R"([1,2])", "expected a JSON object, got array"},
      {R"("controller-start")", "expected a JSON object, got string"},
      {"{" + head + R"("event":"process-start"})", "field \"t_ns\": missing"},
      {R"({"t_ns":"1",)" + head + R"("event":"process-start"})",
       "field \"t_ns\": expected an integer, got string"},
      {R"({"t_ns":1.5,)" + head + R"("event":"process-start"})",
       "field \"t_ns\": expected an integer, got number"},
      {R"({"t_ns":-1,)" + head + R"("event":"process-start"})",
       "field \"t_ns\": must not be negative"},
      {R"({"t_ns":18446744073709551615,)" + head + R"("event":"process-start"})",
       "field \"t_ns\": too large"},
      {R"({"t_ns":1,"node":"cp-1","component":"kcm","event":"process-start"})",
       "field \"pid\": missing"},
      {R"({"t_ns":1,"node":"cp-1","component":"kcm","pid":null,"event":"process-start"})",
       "field \"pid\": expected an integer, got null"},
      {R"({"t_ns":1,"node":"cp-1","component":"kcm","pid":1})", "field \"event\": missing"},
      {R"({"t_ns":1,)" + head + R"("event":"controller-started"})",
       "field \"event\": unknown event \"controller-started\"; expected one of"},
      {R"({"t_ns":1,)" + head + R"("event":7})", "field \"event\": expected a string, got number"},
      {R"({"t_ns":1,"component":"kcm","pid":1,"event":"process-start"})",
       "field \"node\": missing or empty; required on process-start"},
      {R"({"t_ns":1,"node":"cp-1","pid":1,"event":"process-exit"})",
       "field \"component\": missing or empty; required on process-exit"},
      {R"({"t_ns":1,)" + head + R"("event":"controller-start","lock":"main"})",
       "field \"controller\": missing or empty; required on controller-start"},
      {R"({"t_ns":1,)" + head + R"("event":"controller-stop"})",
       "field \"controller\": missing or empty; required on controller-stop"},
      {R"({"t_ns":1,)" + head + R"("event":"controller-start","controller":"route"})",
       "field \"lock\": expected \"main\" or \"migration\" on controller-start, got \"\""},
      {R"({"t_ns":1,)" + head + R"("event":"controller-start","controller":"route","lock":"x"})",
       "field \"lock\": expected \"main\" or \"migration\" on controller-start, got \"x\""},
      {R"({"t_ns":1,)" + head +
           R"("event":"controller-start","controller":"route-controller","lock":"main"})",
       "field \"controller\": unknown controller \"route-controller\"; expected a canonical name"},
      {R"({"t_ns":1,)" + head + R"("event":"process-start","controler":"route"})",
       "field \"controler\": unknown field"},
      {R"({"t_ns":1,)" + head + R"("event":"process-start","t_ns":2})",
       "field \"t_ns\": given more than once"},
      {R"({"t_ns":1,)" + head + R"("event":"process-exit","status":9})",
       "field \"status\": expected a string, got number"},
  };
  for (const BadLine& bad : cases) {
    absl::StatusOr<RunRecord> parsed = ParseRunRecord(bad.line);
    ASSERT_FALSE(parsed.ok()) << bad.line;
    EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument) << bad.line;
    EXPECT_THAT(Message(parsed.status()), HasSubstr(bad.error)) << bad.line;
  }
}

TEST(RunRecordParseTest, NestedObjectsWithRepeatedKeysAreAWrongTypeNotARepeat) {
  // Only the record's own keys count as repeated; the value's type is the error here.
  absl::StatusOr<RunRecord> parsed =
      ParseRunRecord(R"({"t_ns":1,"node":"cp-1","component":"kcm","pid":1,"event":"monitor-note",)"
                     R"("message":{"a":1,"a":2}})");
  ASSERT_FALSE(parsed.ok());
  EXPECT_THAT(Message(parsed.status()), HasSubstr("field \"message\": expected a string"));
}

// ---- Reading a records directory.

std::string Lines(const std::vector<RunRecord>& records) {
  std::string out;
  for (const RunRecord& record : records) out += FormatRunRecord(record) + "\n";
  return out;
}

TEST(ReadRunRecordsTest, EveryJsonlFileInNameOrderLinesInFileOrder) {
  MemoryFileSystem fs;
  fs.SetFile("/records/cp-2.jsonl",
             Lines({Start(30, "route", "main"), Start(10, "service", "main")}));
  fs.SetFile("/records/cp-1.jsonl", Lines({Start(20, "route", "migration")}));
  fs.SetFile("/records/notes.txt", "not a record\n");
  fs.SetFile("/records/cp-3.jsonl.old", "not a record either\n");
  fs.SetFile("/records/cp-4.jsonl", "");
  absl::StatusOr<std::vector<RunRecord>> records = ReadRunRecords(fs, "/records");
  ASSERT_TRUE(records.ok()) << records.status();
  ASSERT_EQ(records->size(), 3u);
  EXPECT_EQ((*records)[0], Start(20, "route", "migration"));
  EXPECT_EQ((*records)[1], Start(30, "route", "main"));
  EXPECT_EQ((*records)[2], Start(10, "service", "main"));
}

TEST(ReadRunRecordsTest, AnIncompleteLastLineIsSkipped) {
  const std::string whole = Lines({Start(1, "route", "main"), Start(2, "service", "main")});
  const std::string next = FormatRunRecord(Start(3, "cloud-node-lifecycle", "main"));
  MemoryFileSystem fs;
  // Cut anywhere: in the middle of the JSON, and just before the '\n' (the JSON is whole, the
  // line is not).
  for (size_t cut : {size_t{1}, next.size() / 2, next.size() - 1, next.size()}) {
    fs.SetFile("/records/cp-1.jsonl", whole + next.substr(0, cut));
    absl::StatusOr<std::vector<RunRecord>> records = ReadRunRecords(fs, "/records");
    ASSERT_TRUE(records.ok()) << "cut at " << cut << ": " << records.status();
    ASSERT_EQ(records->size(), 2u) << "cut at " << cut;
    EXPECT_EQ((*records)[1], Start(2, "service", "main"));
  }
}

TEST(ReadRunRecordsTest, ABadMiddleLineIsAnErrorNamingFileAndLine) {
  MemoryFileSystem fs;
  fs.SetFile("/records/cp-1.jsonl", Lines({Start(1, "route", "main")}));
  const std::string torn = FormatRunRecord(Start(2, "route", "main")).substr(0, 20);
  fs.SetFile("/records/cp-2.jsonl", Lines({Start(1, "route", "main"), Start(2, "route", "main")}) +
                                        torn + "\n" + Lines({Start(3, "route", "main")}));
  absl::StatusOr<std::vector<RunRecord>> records = ReadRunRecords(fs, "/records");
  ASSERT_FALSE(records.ok());
  EXPECT_EQ(records.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(Message(records.status()), StartsWith("/records/cp-2.jsonl:3: not JSON"));
}

TEST(ReadRunRecordsTest, AFieldErrorIsNamedWithFileAndLine) {
  MemoryFileSystem fs;
  fs.SetFile("/records/cp-1.jsonl",
             Lines({Start(1, "route", "main")}) +
                 R"({"t_ns":2,"node":"cp-1","component":"kcm","pid":1,"event":"lease-lost","x":1})"
                 "\n");
  absl::StatusOr<std::vector<RunRecord>> records = ReadRunRecords(fs, "/records/");
  ASSERT_FALSE(records.ok());
  EXPECT_EQ(Message(records.status()), "/records/cp-1.jsonl:2: field \"x\": unknown field");
}

TEST(ReadRunRecordsTest, AnEmptyLineIsAnError) {
  MemoryFileSystem fs;
  fs.SetFile("/records/cp-1.jsonl",
             Lines({Start(1, "route", "main")}) + "\n" + Lines({Start(2, "route", "main")}));
  absl::StatusOr<std::vector<RunRecord>> records = ReadRunRecords(fs, "/records");
  ASSERT_FALSE(records.ok());
  EXPECT_EQ(Message(records.status()), "/records/cp-1.jsonl:2: empty line");
}

TEST(ReadRunRecordsTest, AMissingDirectoryIsNotFound) {
  MemoryFileSystem fs;
  absl::StatusOr<std::vector<RunRecord>> records = ReadRunRecords(fs, "/nowhere");
  ASSERT_FALSE(records.ok());
  EXPECT_EQ(records.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(Message(records.status()), HasSubstr("/nowhere"));
}

// ---- Appending on a real file system.

class AppendRunRecordTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/handoff-monitor-test-XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    dir_ = pattern;
  }
  void TearDown() override {
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }

  std::string ReadWhole(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream content;
    content << in.rdbuf();
    return content.str();
  }

  std::string dir_;
};

TEST_F(AppendRunRecordTest, CreatesThenAppendsWholeLines) {
  const std::string path = dir_ + "/cp-1.jsonl";
  ASSERT_TRUE(AppendRunRecord(path, Start(1, "route", "main")).ok());
  ASSERT_TRUE(AppendRunRecord(path, EveryField()).ok());
  EXPECT_EQ(ReadWhole(path), Lines({Start(1, "route", "main"), EveryField()}));
  absl::StatusOr<std::vector<RunRecord>> records = ReadRunRecords(dir_);
  ASSERT_TRUE(records.ok()) << records.status();
  EXPECT_THAT(*records, ElementsAre(Start(1, "route", "main"), EveryField()));
}

TEST_F(AppendRunRecordTest, AMissingDirectoryIsAnErrorNamingThePath) {
  absl::Status status = AppendRunRecord(dir_ + "/missing/cp-1.jsonl", Start(1, "route", "main"));
  ASSERT_FALSE(status.ok());
  EXPECT_THAT(Message(status), HasSubstr("open " + dir_ + "/missing/cp-1.jsonl: "));
}

// Writer `writer` appends `count` notes numbered by t_ns; the lengths vary from a few bytes to
// over two pages, so that a write split at a page or buffer boundary would show.
absl::Status AppendNotes(const std::string& path, int writer, int count) {
  for (int i = 0; i < count; ++i) {
    RunRecord record;
    record.t_ns = i;
    record.node = "cp-1";
    record.component = "stand-in";
    record.pid = writer;
    record.event = kMonitorNote;
    record.message = std::string(static_cast<size_t>((i * 997 + writer * 131) % 9000),
                                 static_cast<char>('a' + writer % 26));
    if (absl::Status status = AppendRunRecord(path, record); !status.ok()) return status;
  }
  return absl::OkStatus();
}

// Every writer's notes, whole and in its order.
void ExpectAllNotes(const std::vector<RunRecord>& records, int writers, int count) {
  std::map<int64_t, int64_t> next;  // writer -> next expected number
  for (const RunRecord& record : records) {
    ASSERT_GE(record.pid, 0);
    ASSERT_LT(record.pid, writers);
    EXPECT_EQ(record.t_ns, next[record.pid]) << "writer " << record.pid;
    EXPECT_EQ(record.message,
              std::string(static_cast<size_t>((record.t_ns * 997 + record.pid * 131) % 9000),
                          static_cast<char>('a' + record.pid % 26)));
    next[record.pid] = record.t_ns + 1;
  }
  ASSERT_EQ(records.size(), static_cast<size_t>(writers * count));
  for (int writer = 0; writer < writers; ++writer) EXPECT_EQ(next[writer], count);
}

TEST_F(AppendRunRecordTest, ConcurrentThreadsWriteOnlyWholeLines) {
  constexpr int kWriters = 8;
  constexpr int kCount = 300;
  const std::string path = dir_ + "/cp-1.jsonl";
  std::vector<absl::Status> results(kWriters);
  std::vector<std::thread> threads;
  for (int writer = 0; writer < kWriters; ++writer) {
    threads.emplace_back([&, writer] { results[writer] = AppendNotes(path, writer, kCount); });
  }
  for (std::thread& thread : threads) thread.join();
  for (const absl::Status& result : results) ASSERT_TRUE(result.ok()) << result;
  absl::StatusOr<std::vector<RunRecord>> records = ReadRunRecords(dir_);
  ASSERT_TRUE(records.ok()) << records.status();
  ExpectAllNotes(*records, kWriters, kCount);
}

TEST_F(AppendRunRecordTest, ConcurrentProcessesWriteOnlyWholeLines) {
  constexpr int kWriters = 6;
  constexpr int kCount = 300;
  const std::string path = dir_ + "/cp-1.jsonl";
  std::vector<pid_t> children;
  for (int writer = 0; writer < kWriters; ++writer) {
    const pid_t child = fork();
    ASSERT_GE(child, 0) << "fork failed";
    if (child == 0) {
      // No gtest assertions in the child: its verdict is its exit status.
      _exit(AppendNotes(path, writer, kCount).ok() ? 0 : 1);
    }
    children.push_back(child);
  }
  for (pid_t child : children) {
    int status = 0;
    ASSERT_EQ(waitpid(child, &status, 0), child);
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "status " << status;
  }
  absl::StatusOr<std::vector<RunRecord>> records = ReadRunRecords(dir_);
  ASSERT_TRUE(records.ok()) << records.status();
  ExpectAllNotes(*records, kWriters, kCount);
}

}  // namespace
}  // namespace handoff::sandbox
