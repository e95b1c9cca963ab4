// The SQLite store on real files under a temp dir. Failures are made by a second, raw SQLite
// connection to the same file: one holding the write lock, or a trigger that aborts an insert
// part way through a commit.
#include <sqlite3.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "coordinator/store/store.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace handoff::store {
namespace {

using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;
using ::testing::SizeIs;

std::string Message(const absl::Status& status) { return std::string(status.message()); }

auto Fields(const InFlight& in_flight) {
  return std::tie(in_flight.command_id, in_flight.node, in_flight.from, in_flight.to,
                  in_flight.sent_unix_ms);
}
auto Fields(const StoredNode& node) {
  return std::tie(node.name, node.state, node.goal_start, node.last_result);
}
auto Fields(const DowntimeMarks& marks) {
  return std::tie(marks.all_stopped_unix_ms, marks.controller_manager_back_unix_ms,
                  marks.cloud_controllers_back_unix_ms);
}
auto Fields(const HistoryEntry& entry) {
  return std::tie(entry.sequence, entry.unix_ms, entry.actor, entry.kind, entry.node,
                  entry.command_id, entry.message, entry.detail_json);
}

void ExpectSameRollout(const StoredRollout& actual, const StoredRollout& expected) {
  EXPECT_EQ(actual.rollout_id, expected.rollout_id);
  EXPECT_EQ(actual.goal, expected.goal);
  EXPECT_EQ(actual.strategy, expected.strategy);
  EXPECT_EQ(Fields(actual.downtime), Fields(expected.downtime));
  EXPECT_EQ(actual.paused, expected.paused);
  EXPECT_EQ(actual.halted, expected.halted);
  EXPECT_EQ(actual.halt_reason, expected.halt_reason);
  ASSERT_EQ(actual.in_flight.has_value(), expected.in_flight.has_value());
  if (expected.in_flight) {
    EXPECT_EQ(Fields(*actual.in_flight), Fields(*expected.in_flight));
  }
  EXPECT_EQ(actual.next_command_sequence, expected.next_command_sequence);
  EXPECT_EQ(actual.revision, expected.revision);
  EXPECT_EQ(actual.settings_yaml, expected.settings_yaml);
  EXPECT_EQ(actual.launch_nodes, expected.launch_nodes);
  EXPECT_EQ(actual.replace_size, expected.replace_size);
  EXPECT_EQ(actual.replace_leaving, expected.replace_leaving);
  EXPECT_EQ(actual.worker_max_unavailable, expected.worker_max_unavailable);
  EXPECT_EQ(actual.worker_failure_budget, expected.worker_failure_budget);
  EXPECT_EQ(actual.worker_replace_size, expected.worker_replace_size);
  ASSERT_EQ(actual.nodes.size(), expected.nodes.size());
  for (size_t i = 0; i < expected.nodes.size(); ++i) {
    EXPECT_EQ(Fields(actual.nodes[i]), Fields(expected.nodes[i])) << "node " << i;
  }
}

void ExpectSameHistory(const std::vector<HistoryEntry>& actual,
                       const std::vector<HistoryEntry>& expected) {
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(Fields(actual[i]), Fields(expected[i])) << "entry " << i;
  }
}

// Every field set, every node state used, strings that are easy to mangle.
StoredRollout FullRollout() {
  StoredRollout rollout;
  rollout.rollout_id = "r-20240501-a";
  rollout.goal = NodeState::kMigrated;
  rollout.strategy = Strategy::kDowntime;
  rollout.downtime = {1714567800001, 1714567861002, 1714567922003};
  rollout.paused = true;
  rollout.halted = true;
  rollout.halt_reason = "node cp-2: kube-apiserver not ready after 300s; 'quoted' \"too\"";
  rollout.in_flight =
      InFlight{"r-20240501-a-7", "cp-2", NodeState::kPrepared, NodeState::kMigrated, 1714567890123};
  rollout.next_command_sequence = 8;
  rollout.revision = std::numeric_limits<int64_t>::max();
  rollout.settings_yaml = "cluster:\n  name: prod\n# ünïcödé ✓\n" + std::string("nul\0byte", 8);
  // Not in name order: the store must keep the rollout order.
  rollout.nodes = {
      {"cp-3", NodeState::kInTree, NodeState::kInTree, ""},
      {"cp-1", NodeState::kFinalized, NodeState::kInTree, "moved to finalized"},
      {"cp-2", NodeState::kInconsistent, NodeState::kPrepared, "failed: kubelet; rolled back"},
      {"cp-0", NodeState::kPrepared, NodeState::kMigrated, "0"},
      {"cp-4", NodeState::kMigrated, NodeState::kFinalized, "NULL"},
      {"cp-5", NodeState::kStopped, NodeState::kExternal, "stopped"},
      {"cp-6", NodeState::kExternal, NodeState::kStopped, ""},
  };
  rollout.launch_nodes = {"cp-1", "cp-2", "cp-9"};
  rollout.replace_leaving = "cp-4";
  rollout.worker_max_unavailable = "10%";
  rollout.worker_failure_budget = 3;
  rollout.worker_replace_size = 2000;
  return rollout;
}

StoredWorker Worker(std::string name, NodeState state, std::string zone) {
  StoredWorker worker;
  worker.name = std::move(name);
  worker.state = state;
  worker.goal_start = NodeState::kInTree;
  worker.zone = std::move(zone);
  return worker;
}

// By value: a worker without a move compares its empty InFlight's fields.
auto Fields(const StoredWorker& worker) {
  const InFlight move = worker.in_flight.value_or(InFlight{});
  return std::make_tuple(worker.name, worker.state, worker.goal_start, worker.last_result,
                         worker.zone, worker.in_flight.has_value(), move.command_id, move.node,
                         move.from, move.to, move.sent_unix_ms, worker.failure, worker.leaving);
}

HistoryEntry Entry(std::string kind, std::string message, int64_t unix_ms = 1000) {
  HistoryEntry entry;
  entry.unix_ms = unix_ms;
  entry.actor = "coordinator";
  entry.kind = std::move(kind);
  entry.node = "cp-1";
  entry.command_id = "r-1";
  entry.message = std::move(message);
  entry.detail_json = R"({"from":"in-tree","to":"prepared"})";
  return entry;
}

// The schema of version 1, as the released coordinator created it (sqlite_store.cc before the
// downtime strategy), and the rows it wrote for a rollout part way through, in WAL mode as it
// left its files.
constexpr char kVersion1Schema[] = R"sql(
PRAGMA journal_mode = WAL;
CREATE TABLE meta (
  key TEXT PRIMARY KEY NOT NULL,
  value INTEGER NOT NULL
);
CREATE TABLE rollout (
  id INTEGER PRIMARY KEY CHECK (id = 1),
  rollout_id TEXT NOT NULL,
  goal TEXT,
  paused INTEGER NOT NULL,
  halted INTEGER NOT NULL,
  halt_reason TEXT NOT NULL,
  in_flight_command_id TEXT,
  in_flight_node TEXT,
  in_flight_from TEXT,
  in_flight_to TEXT,
  in_flight_sent_unix_ms INTEGER,
  next_command_sequence INTEGER NOT NULL,
  revision INTEGER NOT NULL,
  settings_yaml TEXT NOT NULL
);
CREATE TABLE nodes (
  position INTEGER PRIMARY KEY NOT NULL,
  name TEXT NOT NULL,
  state TEXT NOT NULL,
  goal_start TEXT NOT NULL,
  last_result TEXT NOT NULL
);
CREATE TABLE history (
  sequence INTEGER PRIMARY KEY AUTOINCREMENT,
  unix_ms INTEGER NOT NULL,
  actor TEXT NOT NULL,
  kind TEXT NOT NULL,
  node TEXT NOT NULL,
  command_id TEXT NOT NULL,
  message TEXT NOT NULL,
  detail_json TEXT NOT NULL
);
INSERT INTO meta (key, value) VALUES ('schema_version', 1);
)sql";

// The columns version 2 (the downtime strategy) added to version 1's rollout table, as it added
// them.
constexpr char kVersion2Columns[] =
    "ALTER TABLE rollout ADD COLUMN strategy TEXT NOT NULL DEFAULT 'leader-migration';"
    "ALTER TABLE rollout ADD COLUMN downtime_all_stopped_unix_ms INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE rollout ADD COLUMN downtime_controller_manager_back_unix_ms INTEGER NOT NULL "
    "DEFAULT 0;"
    "ALTER TABLE rollout ADD COLUMN downtime_cloud_controllers_back_unix_ms INTEGER NOT NULL "
    "DEFAULT 0;";

constexpr char kVersion1Rows[] = R"sql(
INSERT INTO rollout (id, rollout_id, goal, paused, halted, halt_reason, in_flight_command_id,
                     in_flight_node, in_flight_from, in_flight_to, in_flight_sent_unix_ms,
                     next_command_sequence, revision, settings_yaml)
VALUES (1, 'r-20240501-a', 'migrated', 1, 0, '', 'r-20240501-a-4', 'cp-2', 'prepared',
        'migrated', 1714567890123, 5, 17, 'cluster:
  name: prod
');
INSERT INTO nodes (position, name, state, goal_start, last_result) VALUES
  (0, 'cp-1', 'migrated', 'in-tree', 'moved to migrated'),
  (1, 'cp-2', 'prepared', 'in-tree', 'moved to prepared'),
  (2, 'cp-3', 'in-tree', 'in-tree', '');
INSERT INTO history (unix_ms, actor, kind, node, command_id, message, detail_json) VALUES
  (1714567800000, 'CN=alice', 'start', '', '', 'goal migrated', ''),
  (1714567890123, 'coordinator', 'command', 'cp-2', 'r-20240501-a-4', 'prepared -> migrated',
   '{"from":"prepared","to":"migrated"}');
)sql";

// What the released coordinator would load from kVersion1Rows, with this version's defaults.
StoredRollout Version1Rollout() {
  StoredRollout rollout;
  rollout.rollout_id = "r-20240501-a";
  rollout.goal = NodeState::kMigrated;
  rollout.paused = true;
  rollout.in_flight =
      InFlight{"r-20240501-a-4", "cp-2", NodeState::kPrepared, NodeState::kMigrated, 1714567890123};
  rollout.next_command_sequence = 5;
  rollout.revision = 17;
  rollout.settings_yaml = "cluster:\n  name: prod\n";
  rollout.nodes = {
      {"cp-1", NodeState::kMigrated, NodeState::kInTree, "moved to migrated"},
      {"cp-2", NodeState::kPrepared, NodeState::kInTree, "moved to prepared"},
      {"cp-3", NodeState::kInTree, NodeState::kInTree, ""},
  };
  return rollout;
}

// A second connection to the same file, as another process would have.
class RawDatabase {
 public:
  explicit RawDatabase(const std::string& path, int flags = SQLITE_OPEN_READWRITE) {
    sqlite3* raw = nullptr;
    result_ = sqlite3_open_v2(path.c_str(), &raw, flags, nullptr);
    db_.reset(raw);
    EXPECT_EQ(result_, SQLITE_OK) << path << ": " << sqlite3_errstr(result_);
  }

  // Runs constant SQL; the error message on failure.
  std::string Execute(const std::string& sql) {
    if (sqlite3_exec(db_.get(), sql.c_str(), nullptr, nullptr, nullptr) == SQLITE_OK) return "";
    return sqlite3_errmsg(db_.get());
  }

  // The first column of the first row, as text.
  std::string Query(const std::string& sql) {
    sqlite3_stmt* raw = nullptr;
    EXPECT_EQ(sqlite3_prepare_v2(db_.get(), sql.c_str(), -1, &raw, nullptr), SQLITE_OK)
        << sqlite3_errmsg(db_.get());
    std::unique_ptr<sqlite3_stmt, decltype(&sqlite3_finalize)> statement(raw, &sqlite3_finalize);
    if (sqlite3_step(statement.get()) != SQLITE_ROW) return "<no row>";
    const unsigned char* text = sqlite3_column_text(statement.get(), 0);
    return text == nullptr ? "<null>" : reinterpret_cast<const char*>(text);
  }

 private:
  int result_ = SQLITE_OK;
  std::unique_ptr<sqlite3, decltype(&sqlite3_close_v2)> db_{nullptr, &sqlite3_close_v2};
};

class SqliteStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = ::testing::TempDir() + "handoff-store-test-XXXXXX";
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr) << "mkdtemp " << pattern << " failed";
    dir_ = pattern;
    path_ = dir_ + "/coordinator.db";
  }

  void TearDown() override {
    if (dir_.empty()) return;
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
    EXPECT_FALSE(ec) << "cannot remove " << dir_ << ": " << ec.message();
  }

  std::unique_ptr<Store> OpenStore(const StoreOptions& options = {}) {
    absl::StatusOr<std::unique_ptr<Store>> store = Store::Open(path_, options);
    EXPECT_TRUE(store.ok()) << store.status();
    return store.ok() ? *std::move(store) : nullptr;
  }

  // `store` loads a rollout, and it is `expected`.
  static void ExpectLoads(Store& store, const StoredRollout& expected) {
    absl::StatusOr<std::optional<StoredRollout>> loaded = store.Load();
    ASSERT_TRUE(loaded.ok()) << loaded.status();
    ASSERT_TRUE(loaded->has_value());
    ExpectSameRollout(**loaded, expected);
  }

  std::vector<HistoryEntry> AllHistory(Store& store) {
    absl::StatusOr<std::vector<HistoryEntry>> history = store.History(0, 1000);
    EXPECT_TRUE(history.ok()) << history.status();
    return history.ok() ? *history : std::vector<HistoryEntry>{};
  }

  // A version 1 database as the released coordinator left it, closed.
  void WriteVersion1Database(bool with_rows = true) {
    RawDatabase raw(path_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
    ASSERT_EQ(raw.Execute(kVersion1Schema), "");
    if (with_rows) {
      ASSERT_EQ(raw.Execute(kVersion1Rows), "");
    }
  }

  // A closed database holding FullRollout() and no history.
  void WriteFullRollout() {
    std::unique_ptr<Store> store = OpenStore();
    ASSERT_NE(store, nullptr);
    ASSERT_TRUE(store->Commit(FullRollout(), {}).ok());
  }

  // Runs `sql` on the closed database, behind the store's back.
  void Tamper(const std::string& sql) {
    RawDatabase raw(path_);
    ASSERT_EQ(raw.Execute(sql), "");
  }

  // Store::Open refuses the database with `code` and a message that names the file and holds
  // each of `parts`, and leaves the file byte for byte as it was.
  void ExpectOpenRefused(absl::StatusCode code, const std::vector<std::string>& parts) {
    const std::string before = ReadFile();
    absl::StatusOr<std::unique_ptr<Store>> store = Store::Open(path_);
    EXPECT_EQ(store.status().code(), code) << store.status();
    const std::string message = Message(store.status());
    EXPECT_THAT(message, HasSubstr(path_));
    for (const std::string& part : parts) EXPECT_THAT(message, HasSubstr(part));
    EXPECT_EQ(ReadFile(), before);
  }

  // A table's columns as SQLite describes them: name, type, NOT NULL, default, key.
  std::string RolloutColumns(const std::string& table = "rollout") {
    RawDatabase raw(path_);
    return raw.Query(
        "SELECT group_concat(name || ' ' || type || ' ' || \"notnull\" || ' ' || "
        "ifnull(dflt_value, '-') || ' ' || pk, ', ') FROM pragma_table_info('" +
        table + "')");
  }

  std::string SchemaVersion() {
    RawDatabase raw(path_);
    return raw.Query("SELECT value FROM meta WHERE key = 'schema_version'");
  }

  void WriteFile(const std::string& content) { std::ofstream(path_, std::ios::binary) << content; }

  // A closed database (its log checkpointed into the file) holding `entries` history entries,
  // entry n's detail carrying the text "entry-<n>-payload" once.
  void WriteLongHistory(int entries) {
    std::unique_ptr<Store> store = OpenStore();
    ASSERT_NE(store, nullptr);
    std::vector<HistoryEntry> history;
    for (int n = 1; n <= entries; ++n) {
      HistoryEntry entry = Entry("result", std::string(300, 'm'), n);
      entry.detail_json = "{\"marker\":\"entry-" + std::to_string(n) + "-payload\"}";
      history.push_back(entry);
    }
    ASSERT_TRUE(store->Commit(FullRollout(), history).ok());
  }

  // The names in the test's directory, sorted.
  std::vector<std::string> DirectoryListing() const {
    std::vector<std::string> names;
    for (const auto& entry : std::filesystem::directory_iterator(dir_)) {
      names.push_back(entry.path().filename().string());
    }
    std::sort(names.begin(), names.end());
    return names;
  }
  std::string ReadFile() {
    std::ifstream in(path_, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }

  std::string dir_;
  std::string path_;
};

TEST_F(SqliteStoreTest, NewDatabaseHasNoRolloutAndNoHistory) {
  std::unique_ptr<Store> store = OpenStore();
  ASSERT_NE(store, nullptr);
  absl::StatusOr<std::optional<StoredRollout>> loaded = store->Load();
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_FALSE(loaded->has_value());
  EXPECT_THAT(AllHistory(*store), IsEmpty());
}

TEST_F(SqliteStoreTest, RoundTripsEveryField) {
  std::unique_ptr<Store> store = OpenStore();
  ASSERT_NE(store, nullptr);
  const StoredRollout rollout = FullRollout();
  ASSERT_TRUE(store->Commit(rollout, {}).ok());

  ASSERT_NO_FATAL_FAILURE(ExpectLoads(*store, rollout));
}

TEST_F(SqliteStoreTest, RoundTripsEmptyStringsAndUnsetOptionals) {
  std::unique_ptr<Store> store = OpenStore();
  ASSERT_NE(store, nullptr);
  const StoredRollout defaults;  // rollout_id "", goal and in_flight unset, no nodes
  ASSERT_TRUE(store->Commit(defaults, {}).ok());
  absl::StatusOr<std::optional<StoredRollout>> loaded = store->Load();
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  ASSERT_TRUE(loaded->has_value());
  ExpectSameRollout(**loaded, defaults);
  EXPECT_FALSE((*loaded)->goal.has_value());
  EXPECT_FALSE((*loaded)->in_flight.has_value());

  // A move in flight whose strings are all empty is still a move in flight.
  StoredRollout empty_strings;
  empty_strings.in_flight = InFlight{"", "", NodeState::kInconsistent, NodeState::kInTree,
                                     std::numeric_limits<int64_t>::min()};
  empty_strings.goal = NodeState::kInTree;
  empty_strings.nodes = {{"", NodeState::kInTree, NodeState::kInTree, ""}};
  empty_strings.next_command_sequence = 0;
  ASSERT_TRUE(store->Commit(empty_strings, {}).ok());
  loaded = store->Load();
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  ASSERT_TRUE(loaded->has_value());
  ExpectSameRollout(**loaded, empty_strings);
}

TEST_F(SqliteStoreTest, CommitReplacesTheWholeRollout) {
  std::unique_ptr<Store> store = OpenStore();
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(store->Commit(FullRollout(), {}).ok());

  StoredRollout smaller;
  smaller.rollout_id = "r-2";
  smaller.nodes = {{"cp-9", NodeState::kMigrated, NodeState::kMigrated, "done"}};
  ASSERT_TRUE(store->Commit(smaller, {}).ok());

  ASSERT_NO_FATAL_FAILURE(ExpectLoads(*store, smaller));
}

// The retention's delete: the older entries go, the rest keep their numbers, numbers are never
// given again (not even after every entry went), and the database still opens as sound.
TEST_F(SqliteStoreTest, ForgettingOldHistoryKeepsTheNumbers) {
  ASSERT_NO_FATAL_FAILURE(WriteLongHistory(20));
  {
    std::unique_ptr<Store> store = OpenStore();
    ASSERT_NE(store, nullptr);
    ASSERT_TRUE(store->ForgetHistoryThrough(15).ok());
    std::vector<HistoryEntry> kept = AllHistory(*store);
    ASSERT_EQ(kept.size(), 5u);
    EXPECT_EQ(kept.front().sequence, 16);
    EXPECT_EQ(kept.back().detail_json, "{\"marker\":\"entry-20-payload\"}");
    ASSERT_TRUE(store->ForgetHistoryThrough(20).ok());
    EXPECT_THAT(AllHistory(*store), IsEmpty());
    absl::StatusOr<std::vector<HistoryEntry>> next =
        store->Commit(FullRollout(), {Entry("start", "again")});
    ASSERT_TRUE(next.ok()) << next.status();
    EXPECT_EQ(next->front().sequence, 21);
  }
  std::unique_ptr<Store> reopened = OpenStore();
  ASSERT_NE(reopened, nullptr);
  EXPECT_THAT(AllHistory(*reopened), SizeIs(1));
}

TEST_F(SqliteStoreTest, SurvivesClosingAndReopening) {
  const StoredRollout rollout = FullRollout();
  std::vector<HistoryEntry> committed;
  {
    std::unique_ptr<Store> store = OpenStore();
    ASSERT_NE(store, nullptr);
    absl::StatusOr<std::vector<HistoryEntry>> stored =
        store->Commit(rollout, {Entry("start", "goal migrated"), Entry("command", "prepare")});
    ASSERT_TRUE(stored.ok()) << stored.status();
    committed = *stored;
  }

  std::unique_ptr<Store> reopened = OpenStore();
  ASSERT_NE(reopened, nullptr);
  ASSERT_NO_FATAL_FAILURE(ExpectLoads(*reopened, rollout));
  ExpectSameHistory(AllHistory(*reopened), committed);

  // Sequence numbers carry on after a reopen.
  absl::StatusOr<std::vector<HistoryEntry>> more = reopened->Commit(rollout, {Entry("pause", "")});
  ASSERT_TRUE(more.ok()) << more.status();
  ASSERT_EQ(more->size(), 1u);
  EXPECT_EQ((*more)[0].sequence, 3);
}

TEST_F(SqliteStoreTest, UsesWalJournalMode) {
  ASSERT_NE(OpenStore(), nullptr);
  RawDatabase raw(path_);
  EXPECT_EQ(raw.Query("PRAGMA journal_mode"), "wal");
  EXPECT_EQ(raw.Query("SELECT value FROM meta WHERE key = 'schema_version'"), "7");
}

TEST_F(SqliteStoreTest, CommitAppendsHistoryWithIncreasingSequences) {
  std::unique_ptr<Store> store = OpenStore();
  ASSERT_NE(store, nullptr);
  HistoryEntry start = Entry("start", "goal migrated", 1714567890000);
  start.sequence = 42;  // ignored on input
  start.actor = "CN=alice";
  HistoryEntry empty;  // every string empty
  absl::StatusOr<std::vector<HistoryEntry>> first = store->Commit(FullRollout(), {start, empty});
  ASSERT_TRUE(first.ok()) << first.status();
  HistoryEntry expected_start = start;
  expected_start.sequence = 1;
  HistoryEntry expected_empty = empty;
  expected_empty.sequence = 2;
  ExpectSameHistory(*first, {expected_start, expected_empty});

  absl::StatusOr<std::vector<HistoryEntry>> none = store->Commit(FullRollout(), {});
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_THAT(*none, IsEmpty());

  absl::StatusOr<std::vector<HistoryEntry>> third =
      store->Commit(FullRollout(), {Entry("result", "prepared")});
  ASSERT_TRUE(third.ok()) << third.status();
  ASSERT_EQ(third->size(), 1u);
  EXPECT_EQ((*third)[0].sequence, 3);

  std::vector<HistoryEntry> all = *first;
  all.push_back((*third)[0]);
  ExpectSameHistory(AllHistory(*store), all);
}

TEST_F(SqliteStoreTest, HistoryPagesOldestFirst) {
  std::unique_ptr<Store> store = OpenStore();
  ASSERT_NE(store, nullptr);
  std::vector<HistoryEntry> input;
  for (int i = 1; i <= 5; ++i) input.push_back(Entry("command", "move " + std::to_string(i), i));
  absl::StatusOr<std::vector<HistoryEntry>> stored = store->Commit(FullRollout(), input);
  ASSERT_TRUE(stored.ok()) << stored.status();

  auto page = [&](int64_t after, int limit) {
    absl::StatusOr<std::vector<HistoryEntry>> entries = store->History(after, limit);
    EXPECT_TRUE(entries.ok()) << entries.status();
    std::vector<int64_t> sequences;
    if (entries.ok()) {
      for (const HistoryEntry& entry : *entries) {
        EXPECT_EQ(entry.message, "move " + std::to_string(entry.sequence));
        EXPECT_EQ(entry.unix_ms, entry.sequence);
        sequences.push_back(entry.sequence);
      }
    }
    return sequences;
  };
  EXPECT_EQ(page(0, 2), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(page(2, 2), (std::vector<int64_t>{3, 4}));
  EXPECT_EQ(page(4, 2), (std::vector<int64_t>{5}));
  EXPECT_EQ(page(5, 2), (std::vector<int64_t>{}));
  EXPECT_EQ(page(-1, 100), (std::vector<int64_t>{1, 2, 3, 4, 5}));
  EXPECT_EQ(page(3, 1), (std::vector<int64_t>{4}));
}

TEST_F(SqliteStoreTest, HistoryRejectsANonPositiveLimit) {
  std::unique_ptr<Store> store = OpenStore();
  ASSERT_NE(store, nullptr);
  for (int limit : {0, -1}) {
    absl::StatusOr<std::vector<HistoryEntry>> entries = store->History(0, limit);
    EXPECT_EQ(entries.status().code(), absl::StatusCode::kInvalidArgument) << limit;
    EXPECT_THAT(Message(entries.status()), HasSubstr("limit")) << limit;
  }
}

TEST_F(SqliteStoreTest, CommitBlockedByAnotherWriterStoresNothing) {
  StoreOptions no_waiting;
  no_waiting.busy_timeout_ms = 0;
  std::unique_ptr<Store> store = OpenStore(no_waiting);
  ASSERT_NE(store, nullptr);
  const StoredRollout before = FullRollout();
  absl::StatusOr<std::vector<HistoryEntry>> committed =
      store->Commit(before, {Entry("start", "goal migrated")});
  ASSERT_TRUE(committed.ok()) << committed.status();

  RawDatabase other(path_);
  ASSERT_EQ(other.Execute("BEGIN EXCLUSIVE"), "");
  StoredRollout after;
  after.rollout_id = "r-other";
  absl::StatusOr<std::vector<HistoryEntry>> blocked =
      store->Commit(after, {Entry("pause", "paused by operator")});
  EXPECT_EQ(blocked.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(Message(blocked.status()), AllOf(HasSubstr(path_), HasSubstr("locked")));
  ASSERT_EQ(other.Execute("ROLLBACK"), "");

  ASSERT_NO_FATAL_FAILURE(ExpectLoads(*store, before));
  ExpectSameHistory(AllHistory(*store), *committed);

  // The store is usable again once the lock is gone.
  absl::StatusOr<std::vector<HistoryEntry>> retried =
      store->Commit(after, {Entry("pause", "paused by operator")});
  ASSERT_TRUE(retried.ok()) << retried.status();
  EXPECT_EQ((*retried)[0].sequence, 2);
}

TEST_F(SqliteStoreTest, CommitFailingPartWayStoresNothing) {
  std::unique_ptr<Store> store = OpenStore();
  ASSERT_NE(store, nullptr);
  const StoredRollout before = FullRollout();
  absl::StatusOr<std::vector<HistoryEntry>> committed =
      store->Commit(before, {Entry("start", "goal migrated")});
  ASSERT_TRUE(committed.ok()) << committed.status();

  // The rollout, the nodes and the first entry are written before the second entry fails.
  RawDatabase other(path_);
  ASSERT_EQ(other.Execute("CREATE TRIGGER poison BEFORE INSERT ON history "
                          "WHEN NEW.kind = 'poison' BEGIN SELECT RAISE(ABORT, 'injected'); END"),
            "");
  StoredRollout after;
  after.rollout_id = "r-after";
  after.goal = NodeState::kFinalized;
  after.nodes = {{"cp-7", NodeState::kFinalized, NodeState::kFinalized, "x"}};
  absl::StatusOr<std::vector<HistoryEntry>> failed =
      store->Commit(after, {Entry("result", "fine"), Entry("poison", "fails")});
  EXPECT_EQ(failed.status().code(), absl::StatusCode::kInternal);
  EXPECT_THAT(Message(failed.status()),
              AllOf(HasSubstr(path_), HasSubstr("poison"), HasSubstr("injected")));

  ASSERT_NO_FATAL_FAILURE(ExpectLoads(*store, before));
  ExpectSameHistory(AllHistory(*store), *committed);

  // No sequence number was used up by the failed commit.
  absl::StatusOr<std::vector<HistoryEntry>> next = store->Commit(after, {Entry("result", "ok")});
  ASSERT_TRUE(next.ok()) << next.status();
  EXPECT_EQ((*next)[0].sequence, 2);
}

TEST_F(SqliteStoreTest, RefusesANewerSchemaVersion) {
  ASSERT_NE(OpenStore(), nullptr);
  for (int version : {8, 99}) {
    ASSERT_NO_FATAL_FAILURE(Tamper("UPDATE meta SET value = " + std::to_string(version) +
                                   " WHERE key = 'schema_version'"));
    SCOPED_TRACE(version);
    ExpectOpenRefused(absl::StatusCode::kFailedPrecondition,
                      {"schema version " + std::to_string(version), "reads schema version 7"});
  }
}

TEST_F(SqliteStoreTest, RefusesAnOlderUnknownSchemaVersion) {
  ASSERT_NE(OpenStore(), nullptr);
  ASSERT_NO_FATAL_FAILURE(Tamper("UPDATE meta SET value = 0 WHERE key = 'schema_version'"));
  ExpectOpenRefused(absl::StatusCode::kDataLoss, {"schema version 0 is unknown"});
}

TEST_F(SqliteStoreTest, RefusesADatabaseOfAnotherProgram) {
  {
    sqlite3* raw = nullptr;
    ASSERT_EQ(sqlite3_open(path_.c_str(), &raw), SQLITE_OK);
    std::unique_ptr<sqlite3, decltype(&sqlite3_close_v2)> db(raw, &sqlite3_close_v2);
    ASSERT_EQ(sqlite3_exec(raw, "CREATE TABLE things (x)", nullptr, nullptr, nullptr), SQLITE_OK);
  }
  ExpectOpenRefused(absl::StatusCode::kDataLoss, {"not a handoff state database"});
}

TEST_F(SqliteStoreTest, RefusesAFileThatIsNotADatabase) {
  WriteFile(std::string(4096, 'x'));
  ExpectOpenRefused(absl::StatusCode::kDataLoss, {"not a SQLite database", "4096 bytes"});
}

TEST_F(SqliteStoreTest, RefusesATextFileNamedAsTheDatabase) {
  WriteFile("rollout: r-1\ngoal: migrated\n");
  ExpectOpenRefused(absl::StatusCode::kDataLoss, {"not a SQLite database"});
  EXPECT_THAT(DirectoryListing(), ElementsAre("coordinator.db"));
}

// A bad restore or a truncating copy: SQLite alone would take the empty file for a new database
// and the rollout would start over without a word.
TEST_F(SqliteStoreTest, RefusesAnEmptyFile) {
  WriteFile("");
  ExpectOpenRefused(absl::StatusCode::kDataLoss, {"empty (0 bytes)"});
  EXPECT_THAT(DirectoryListing(), ElementsAre("coordinator.db"));
}

TEST_F(SqliteStoreTest, RefusesADatabaseCutInHalf) {
  WriteLongHistory(200);
  const std::string whole = ReadFile();
  ASSERT_GT(whole.size(), 16u * 4096u) << "the history must span many pages";
  WriteFile(whole.substr(0, whole.size() / 2));
  ExpectOpenRefused(absl::StatusCode::kDataLoss, {"the file is damaged or cut short"});
}

TEST_F(SqliteStoreTest, RefusesAHistoryEntryOfTheWrongType) {
  WriteLongHistory(5);
  ASSERT_NO_FATAL_FAILURE(Tamper("UPDATE history SET unix_ms = 'yesterday' WHERE sequence = 4"));
  ExpectOpenRefused(absl::StatusCode::kDataLoss, {"history entry 4's time is not a number"});
}

// Bytes overwritten inside a history entry leave SQLite's pages well formed; only decoding the
// entry finds them, and that is done at open, not when `handoffctl history` reaches the entry.
TEST_F(SqliteStoreTest, RefusesHistoryBytesOverwrittenInTheFile) {
  WriteLongHistory(20);
  std::string bytes = ReadFile();
  const std::string marker = "entry-7-payload";
  const size_t at = bytes.find(marker);
  ASSERT_NE(at, std::string::npos);
  ASSERT_EQ(bytes.find(marker, at + 1), std::string::npos);
  bytes.replace(at + 8, 7, "\xff\xfe\xfd\x80\x81\x82\x83");
  WriteFile(bytes);
  ExpectOpenRefused(absl::StatusCode::kDataLoss, {"history entry 7's detail is not UTF-8"});

  bytes.replace(at + 8, 7, "\"}]{!:,");  // still UTF-8, no longer JSON
  WriteFile(bytes);
  ExpectOpenRefused(absl::StatusCode::kDataLoss, {"history entry 7's detail is not JSON"});
}

TEST_F(SqliteStoreTest, RefusesASqliteDatabaseWithoutTables) {
  {
    RawDatabase raw(path_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
    ASSERT_EQ(raw.Execute("PRAGMA user_version = 7"), "");
  }
  ASSERT_FALSE(ReadFile().empty());
  ExpectOpenRefused(absl::StatusCode::kDataLoss, {"without any table"});
}

TEST_F(SqliteStoreTest, RefusesALogWithoutItsDatabase) {
  std::ofstream(path_ + "-wal", std::ios::binary) << std::string(100, 'w');
  absl::StatusOr<std::unique_ptr<Store>> store = Store::Open(path_);
  EXPECT_EQ(store.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(Message(store.status()),
              AllOf(HasSubstr(path_ + "-wal"), HasSubstr("moved or deleted without it")));
  EXPECT_THAT(DirectoryListing(), ElementsAre("coordinator.db-wal"));
}

TEST_F(SqliteStoreTest, CreatesTheDatabaseWholeAndLeavesNoTemporaryFile) {
  ASSERT_NE(OpenStore(), nullptr);
  // The store was closed: SQLite removed its log; the temporary file was linked and removed.
  EXPECT_THAT(DirectoryListing(), ElementsAre("coordinator.db"));
  struct stat info {};
  ASSERT_EQ(::stat(path_.c_str(), &info), 0);
  EXPECT_EQ(info.st_mode & 0777, 0600u);
  RawDatabase raw(path_);
  EXPECT_EQ(raw.Query("SELECT value FROM meta WHERE key = 'schema_version'"), "7");
}

TEST_F(SqliteStoreTest, StoresHistoryTextAsUtf8) {
  std::unique_ptr<Store> store = OpenStore();
  ASSERT_NE(store, nullptr);
  HistoryEntry entry = Entry("result", "bad \xff byte, ok \xc3\xa9, cut \xe2\x82");
  entry.actor = "CN=\xc0\x80";  // an overlong NUL
  absl::StatusOr<std::vector<HistoryEntry>> stored = store->Commit(FullRollout(), {entry});
  ASSERT_TRUE(stored.ok()) << stored.status();
  ASSERT_EQ(stored->size(), 1u);
  EXPECT_EQ((*stored)[0].message,
            "bad \xef\xbf\xbd byte, ok \xc3\xa9, cut \xef\xbf\xbd\xef\xbf\xbd");
  EXPECT_EQ((*stored)[0].actor, "CN=\xef\xbf\xbd\xef\xbf\xbd");
  store.reset();

  // What the store wrote, it opens again.
  std::unique_ptr<Store> reopened = OpenStore();
  ASSERT_NE(reopened, nullptr);
  ExpectSameHistory(AllHistory(*reopened), *stored);
}

TEST_F(SqliteStoreTest, SetAsideKeepsTheDatabaseAndItsLogsUnderOneName) {
  const absl::Time now = absl::FromUnixSeconds(1714564800);  // 2024-05-01T12:00:00Z
  for (const char* suffix : {"", "-wal", "-shm"}) {
    std::ofstream(path_ + suffix, std::ios::binary) << "content of" << suffix;
  }
  absl::StatusOr<std::string> kept = SetAside(path_, now);
  ASSERT_TRUE(kept.ok()) << kept.status();
  const std::string expected = path_ + ".damaged-20240501T120000Z";
  EXPECT_EQ(*kept, expected);
  EXPECT_THAT(DirectoryListing(), ElementsAre("coordinator.db.damaged-20240501T120000Z",
                                              "coordinator.db.damaged-20240501T120000Z-shm",
                                              "coordinator.db.damaged-20240501T120000Z-wal"));
  path_ = expected;
  EXPECT_EQ(ReadFile(), "content of");

  // A second reset within the same second keeps both.
  path_ = dir_ + "/coordinator.db";
  WriteFile("second");
  kept = SetAside(path_, now);
  ASSERT_TRUE(kept.ok()) << kept.status();
  EXPECT_EQ(*kept, expected + "-2");
  path_ = *kept;
  EXPECT_EQ(ReadFile(), "second");

  path_ = dir_ + "/coordinator.db";
  EXPECT_EQ(SetAside(path_, now).status().code(), absl::StatusCode::kNotFound);
}

TEST_F(SqliteStoreTest, AfterSetAsideANewDatabaseStarts) {
  WriteFile("");
  ASSERT_EQ(Store::Open(path_).status().code(), absl::StatusCode::kDataLoss);
  absl::StatusOr<std::string> kept = SetAside(path_, absl::FromUnixSeconds(0));
  ASSERT_TRUE(kept.ok()) << kept.status();
  std::unique_ptr<Store> store = OpenStore();
  ASSERT_NE(store, nullptr);
  absl::StatusOr<std::optional<StoredRollout>> loaded = store->Load();
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_FALSE(loaded->has_value());
  struct stat info {};
  ASSERT_EQ(::stat(kept->c_str(), &info), 0);
  EXPECT_EQ(info.st_size, 0);
}

TEST_F(SqliteStoreTest, ReportsAMissingDirectory) {
  path_ = dir_ + "/missing/coordinator.db";
  absl::StatusOr<std::unique_ptr<Store>> store = Store::Open(path_);
  EXPECT_EQ(store.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(Message(store.status()),
              AllOf(HasSubstr(path_), HasSubstr("No such file or directory"),
                    HasSubstr("directory it is in must exist")));
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/missing"));
}

TEST_F(SqliteStoreTest, OpenReportsAnUnknownNodeState) {
  ASSERT_NO_FATAL_FAILURE(WriteFullRollout());
  ASSERT_NO_FATAL_FAILURE(Tamper("UPDATE nodes SET state = 'sideways' WHERE name = 'cp-1'"));
  ExpectOpenRefused(absl::StatusCode::kDataLoss, {"cp-1", "'sideways'"});
}

// A commit writes the workers it is given and leaves every other row as it was: what it costs
// grows with what changed, not with the fleet.
TEST_F(SqliteStoreTest, CommitsOnlyTheWorkersGivenAndLoadsThemAll) {
  std::unique_ptr<Store> store = OpenStore();
  ASSERT_NE(store, nullptr);
  StoredWorker a = Worker("w-a", NodeState::kInTree, "us-east-1a");
  StoredWorker b = Worker("w-b", NodeState::kExternal, "");
  b.last_result = "in-tree → external SUCCEEDED: 'quoted' ünïcödé";
  StoredWorker c = Worker("w-c", NodeState::kInconsistent, "us-east-1b");
  c.failure = "in-tree → external ROLLED_BACK: the credential provider did not answer";
  c.leaving = true;
  ASSERT_TRUE(store->Commit(FullRollout(), {Entry("start", "goal migrated")}, {{c, a, b}, {}}).ok());

  a.in_flight = InFlight{"r-9", "w-a", NodeState::kInTree, NodeState::kExternal, 1714567890123};
  ASSERT_TRUE(store->Commit(FullRollout(), {Entry("command", "move")}, {{a}, {}}).ok());
  // A commit without workers leaves them too.
  ASSERT_TRUE(store->Commit(FullRollout(), {}).ok());

  std::unique_ptr<Store> reopened;
  store.reset();
  reopened = OpenStore();
  ASSERT_NE(reopened, nullptr);
  absl::StatusOr<std::vector<StoredWorker>> loaded = reopened->LoadWorkers();
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  ASSERT_THAT(*loaded, SizeIs(3));
  EXPECT_EQ(Fields((*loaded)[0]), Fields(a));
  EXPECT_EQ(Fields((*loaded)[1]), Fields(b));
  EXPECT_EQ(Fields((*loaded)[2]), Fields(c));
  ASSERT_NO_FATAL_FAILURE(ExpectLoads(*reopened, FullRollout()));

  // Its result: the row replaced, the move no longer in flight.
  a.in_flight.reset();
  a.state = NodeState::kExternal;
  ASSERT_TRUE(reopened->Commit(FullRollout(), {}, {{a}, {}}).ok());
  loaded = reopened->LoadWorkers();
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(Fields((*loaded)[0]), Fields(a));
  // A worker whose Node is gone is forgotten, the others kept.
  ASSERT_TRUE(reopened->Commit(FullRollout(), {}, {{}, {"w-b"}}).ok());
  loaded = reopened->LoadWorkers();
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  ASSERT_THAT(*loaded, SizeIs(2));
  EXPECT_EQ((*loaded)[1].name, "w-c");
}

TEST_F(SqliteStoreTest, OpenReportsAWorkerRowThatDoesNotDecode) {
  {
    std::unique_ptr<Store> store = OpenStore();
    ASSERT_NE(store, nullptr);
    StoredWorker moving = Worker("w-7", NodeState::kInTree, "us-east-1a");
    moving.in_flight = InFlight{"r-1", "w-7", NodeState::kInTree, NodeState::kExternal, 5};
    ASSERT_TRUE(store->Commit(FullRollout(), {}, {{moving}, {}}).ok());
  }
  ASSERT_NO_FATAL_FAILURE(Tamper("UPDATE workers SET state = 'sideways'"));
  ExpectOpenRefused(absl::StatusCode::kDataLoss, {"worker w-7's state", "'sideways'"});
  ASSERT_NO_FATAL_FAILURE(
      Tamper("UPDATE workers SET state = 'in-tree', in_flight_sent_unix_ms = NULL"));
  ExpectOpenRefused(absl::StatusCode::kDataLoss, {"worker w-7's move in flight has no send time"});
  ASSERT_NO_FATAL_FAILURE(
      Tamper("UPDATE workers SET in_flight_sent_unix_ms = 5; "
             "UPDATE rollout SET worker_failure_budget = 0"));
  ExpectOpenRefused(absl::StatusCode::kDataLoss, {"column worker_failure_budget", "0"});
}

TEST_F(SqliteStoreTest, RoundTripsBothStrategiesAndTheDowntimeMarks) {
  std::unique_ptr<Store> store = OpenStore();
  ASSERT_NE(store, nullptr);
  StoredRollout downtime;
  downtime.rollout_id = "r-downtime";
  downtime.goal = NodeState::kFinalized;
  downtime.strategy = Strategy::kDowntime;
  downtime.downtime.all_stopped_unix_ms = 1714567800000;
  downtime.downtime.controller_manager_back_unix_ms = 1714567831500;
  // Not yet: the cloud-controller-manager is still to come.
  StoredRollout leader_migration = downtime;
  leader_migration.rollout_id = "r-leader-migration";
  leader_migration.strategy = Strategy::kLeaderMigration;
  leader_migration.downtime = {};

  for (const StoredRollout& rollout : {downtime, leader_migration, downtime}) {
    ASSERT_TRUE(store->Commit(rollout, {}).ok());
    ASSERT_NO_FATAL_FAILURE(ExpectLoads(*store, rollout));
  }
  RawDatabase raw(path_);
  EXPECT_EQ(raw.Query("SELECT strategy FROM rollout"), "downtime");
  EXPECT_EQ(raw.Query("SELECT downtime_controller_manager_back_unix_ms FROM rollout"),
            "1714567831500");
  EXPECT_EQ(raw.Query("SELECT downtime_cloud_controllers_back_unix_ms FROM rollout"), "0");
}

TEST_F(SqliteStoreTest, RoundTripsTheDowntimeStatesInNodesAndTheMoveInFlight) {
  const std::vector<std::pair<NodeState, NodeState>> moves = {
      {NodeState::kInTree, NodeState::kStopped},
      {NodeState::kStopped, NodeState::kExternal},
      {NodeState::kExternal, NodeState::kFinalized},
      {NodeState::kExternal, NodeState::kStopped},
  };
  for (const auto& [from, to] : moves) {
    StoredRollout rollout;
    rollout.rollout_id = "r-1";
    rollout.strategy = Strategy::kDowntime;
    rollout.goal = NodeState::kFinalized;
    rollout.in_flight = InFlight{"r-1-3", "cp-1", from, to, 1714567800000};
    rollout.nodes = {{"cp-1", from, NodeState::kStopped, ""},
                     {"cp-2", to, NodeState::kExternal, "moved"}};
    {
      std::unique_ptr<Store> store = OpenStore();
      ASSERT_NE(store, nullptr);
      ASSERT_TRUE(store->Commit(rollout, {}).ok());
    }
    // Reopened: the check at open decodes them too.
    std::unique_ptr<Store> reopened = OpenStore();
    ASSERT_NE(reopened, nullptr);
    ASSERT_NO_FATAL_FAILURE(ExpectLoads(*reopened, rollout));
  }
  RawDatabase raw(path_);
  EXPECT_EQ(raw.Query("SELECT in_flight_from || ' ' || in_flight_to FROM rollout"),
            "external stopped");
}

TEST_F(SqliteStoreTest, UpgradesAVersion1DatabaseKeepingEveryValue) {
  WriteVersion1Database();
  ASSERT_EQ(SchemaVersion(), "1");
  std::vector<HistoryEntry> history;
  {
    std::unique_ptr<Store> store = OpenStore();
    ASSERT_NE(store, nullptr);
    absl::StatusOr<std::optional<StoredRollout>> loaded = store->Load();
    ASSERT_TRUE(loaded.ok()) << loaded.status();
    ASSERT_TRUE(loaded->has_value());
    ExpectSameRollout(**loaded, Version1Rollout());
    EXPECT_EQ((*loaded)->strategy, Strategy::kLeaderMigration);
    EXPECT_EQ(Fields((*loaded)->downtime), Fields(DowntimeMarks{0, 0, 0}));
    history = AllHistory(*store);
  }
  ASSERT_EQ(history.size(), 2u);
  EXPECT_EQ(Fields(history[1]),
            std::make_tuple(2, 1714567890123, "coordinator", "command", "cp-2", "r-20240501-a-4",
                            "prepared -> migrated", R"({"from":"prepared","to":"migrated"})"));
  EXPECT_EQ(history[0].actor, "CN=alice");
  EXPECT_EQ(SchemaVersion(), "7");

  // The upgraded file has the shape of a new one (the columns, their types and defaults).
  const std::string upgraded_columns = RolloutColumns();
  const std::string upgraded_workers = RolloutColumns("workers");
  ASSERT_TRUE(std::filesystem::remove(path_));
  ASSERT_NE(OpenStore(), nullptr);
  EXPECT_EQ(upgraded_columns, RolloutColumns());
  EXPECT_EQ(upgraded_workers, RolloutColumns("workers"));
  EXPECT_THAT(upgraded_workers, HasSubstr("name TEXT 1 - 1"));
  EXPECT_THAT(upgraded_columns,
              AllOf(HasSubstr("strategy TEXT 1 'leader-migration'"),
                    HasSubstr("downtime_all_stopped_unix_ms INTEGER 1 0"),
                    HasSubstr("downtime_controller_manager_back_unix_ms INTEGER 1 0"),
                    HasSubstr("downtime_cloud_controllers_back_unix_ms INTEGER 1 0"),
                    HasSubstr("launch_nodes TEXT 1 ''"), HasSubstr("replace_size INTEGER 1 0"),
                    HasSubstr("replace_leaving TEXT 1 ''")));
}

// A version 2 database (before operators could change the membership) is upgraded too: its
// membership never changed, so it began as it is (no launch nodes).
TEST_F(SqliteStoreTest, UpgradesAVersion2DatabaseKeepingEveryValue) {
  WriteVersion1Database();
  ASSERT_NO_FATAL_FAILURE(
      Tamper(std::string(kVersion2Columns) +
             "UPDATE rollout SET strategy = 'downtime', downtime_all_stopped_unix_ms = 17;"
             "UPDATE meta SET value = 2 WHERE key = 'schema_version';"));
  ASSERT_EQ(SchemaVersion(), "2");
  StoredRollout expected = Version1Rollout();
  expected.strategy = Strategy::kDowntime;
  expected.downtime.all_stopped_unix_ms = 17;
  {
    std::unique_ptr<Store> store = OpenStore();
    ASSERT_NE(store, nullptr);
    ASSERT_NO_FATAL_FAILURE(ExpectLoads(*store, expected));
    EXPECT_THAT(AllHistory(*store), SizeIs(2));
  }
  EXPECT_EQ(SchemaVersion(), "7");
  EXPECT_THAT(RolloutColumns(), HasSubstr("launch_nodes TEXT 1 ''"));
}

// A version 3 database (before the replace strategy) gains the replacement's size, 0; the
// strategy 'replace' and its size then round-trip.
TEST_F(SqliteStoreTest, UpgradesAVersion3DatabaseAndKeepsAReplacement) {
  WriteVersion1Database();
  ASSERT_NO_FATAL_FAILURE(
      Tamper(std::string(kVersion2Columns) +
             "ALTER TABLE rollout ADD COLUMN launch_nodes TEXT NOT NULL DEFAULT '';"
             "UPDATE rollout SET launch_nodes = 'cp-1' || char(10) || 'cp-2';"
             "UPDATE meta SET value = 3 WHERE key = 'schema_version';"));
  StoredRollout expected = Version1Rollout();
  expected.launch_nodes = {"cp-1", "cp-2"};
  {
    std::unique_ptr<Store> store = OpenStore();
    ASSERT_NE(store, nullptr);
    ASSERT_NO_FATAL_FAILURE(ExpectLoads(*store, expected));
    expected.strategy = Strategy::kReplace;
    expected.replace_size = 3;
    ASSERT_TRUE(store->Commit(expected, {}).ok());
  }
  EXPECT_EQ(SchemaVersion(), "7");
  std::unique_ptr<Store> store = OpenStore();
  ASSERT_NE(store, nullptr);
  ASSERT_NO_FATAL_FAILURE(ExpectLoads(*store, expected));
}

// A version 4 database (before a replacement remembered the node it asked to leave) gains
// replace_leaving, '' (the planner asks again); a node asked to leave then round-trips.
TEST_F(SqliteStoreTest, UpgradesAVersion4DatabaseAndKeepsTheLeavingNode) {
  WriteVersion1Database();
  ASSERT_NO_FATAL_FAILURE(
      Tamper(std::string(kVersion2Columns) +
             "ALTER TABLE rollout ADD COLUMN launch_nodes TEXT NOT NULL DEFAULT '';"
             "ALTER TABLE rollout ADD COLUMN replace_size INTEGER NOT NULL DEFAULT 0;"
             "UPDATE rollout SET strategy = 'replace', replace_size = 3;"
             "UPDATE meta SET value = 4 WHERE key = 'schema_version';"));
  StoredRollout expected = Version1Rollout();
  expected.strategy = Strategy::kReplace;
  expected.replace_size = 3;
  {
    std::unique_ptr<Store> store = OpenStore();
    ASSERT_NE(store, nullptr);
    ASSERT_NO_FATAL_FAILURE(ExpectLoads(*store, expected));
    expected.replace_leaving = "cp-2";
    ASSERT_TRUE(store->Commit(expected, {}).ok());
  }
  EXPECT_EQ(SchemaVersion(), "7");
  EXPECT_THAT(RolloutColumns(), HasSubstr("replace_leaving TEXT 1 ''"));
  std::unique_ptr<Store> store = OpenStore();
  ASSERT_NE(store, nullptr);
  ASSERT_NO_FATAL_FAILURE(ExpectLoads(*store, expected));
}

// A version 5 database (before the workers) gains the workers' table, empty, and the policy of a
// new rollout (one at a time, a budget of 1); workers then round-trip.
TEST_F(SqliteStoreTest, UpgradesAVersion5DatabaseWithNoWorkers) {
  WriteVersion1Database();
  ASSERT_NO_FATAL_FAILURE(
      Tamper(std::string(kVersion2Columns) +
             "ALTER TABLE rollout ADD COLUMN launch_nodes TEXT NOT NULL DEFAULT '';"
             "ALTER TABLE rollout ADD COLUMN replace_size INTEGER NOT NULL DEFAULT 0;"
             "ALTER TABLE rollout ADD COLUMN replace_leaving TEXT NOT NULL DEFAULT '';"
             "UPDATE rollout SET replace_leaving = 'cp-2';"
             "UPDATE meta SET value = 5 WHERE key = 'schema_version';"));
  StoredRollout expected = Version1Rollout();
  expected.replace_leaving = "cp-2";
  {
    std::unique_ptr<Store> store = OpenStore();
    ASSERT_NE(store, nullptr);
    ASSERT_NO_FATAL_FAILURE(ExpectLoads(*store, expected));
    absl::StatusOr<std::vector<StoredWorker>> workers = store->LoadWorkers();
    ASSERT_TRUE(workers.ok()) << workers.status();
    EXPECT_THAT(*workers, SizeIs(0));
    expected.worker_max_unavailable = "25%";
    expected.worker_failure_budget = 4;
    ASSERT_TRUE(
        store->Commit(expected, {}, {{Worker("w-1", NodeState::kExternal, "us-east-1c")}, {}})
            .ok());
  }
  EXPECT_EQ(SchemaVersion(), "7");
  const std::string upgraded_columns = RolloutColumns();
  EXPECT_THAT(upgraded_columns, AllOf(HasSubstr("worker_max_unavailable TEXT 1 '1'"),
                                      HasSubstr("worker_failure_budget INTEGER 1 1")));
  std::unique_ptr<Store> store = OpenStore();
  ASSERT_NE(store, nullptr);
  ASSERT_NO_FATAL_FAILURE(ExpectLoads(*store, expected));
  absl::StatusOr<std::vector<StoredWorker>> workers = store->LoadWorkers();
  ASSERT_TRUE(workers.ok()) << workers.status();
  ASSERT_THAT(*workers, SizeIs(1));
  EXPECT_EQ(Fields((*workers)[0]), Fields(Worker("w-1", NodeState::kExternal, "us-east-1c")));
}

// A version 6 database (before workers were replaced): its workers stay, none leaving, and no
// replacement of the workers under way.
TEST_F(SqliteStoreTest, UpgradesAVersion6DatabaseKeepingItsWorkers) {
  StoredRollout expected = FullRollout();
  expected.worker_replace_size = 0;
  StoredWorker worker = Worker("w-1", NodeState::kExternal, "us-east-1c");
  worker.failure = "timed out";
  {
    std::unique_ptr<Store> store = OpenStore();
    ASSERT_NE(store, nullptr);
    ASSERT_TRUE(store->Commit(expected, {}, {{worker}, {}}).ok());
  }
  // Back to version 6's shape: SQLite 3.35 and later drop a column.
  ASSERT_NO_FATAL_FAILURE(
      Tamper("ALTER TABLE rollout DROP COLUMN worker_replace_size;"
             "ALTER TABLE workers DROP COLUMN leaving;"
             "UPDATE meta SET value = 6 WHERE key = 'schema_version';"));
  EXPECT_THAT(RolloutColumns(), Not(HasSubstr("worker_replace_size")));
  {
    std::unique_ptr<Store> store = OpenStore();
    ASSERT_NE(store, nullptr);
    ASSERT_NO_FATAL_FAILURE(ExpectLoads(*store, expected));
    absl::StatusOr<std::vector<StoredWorker>> workers = store->LoadWorkers();
    ASSERT_TRUE(workers.ok()) << workers.status();
    ASSERT_THAT(*workers, SizeIs(1));
    EXPECT_EQ(Fields((*workers)[0]), Fields(worker));
    worker.leaving = true;
    expected.worker_replace_size = 40;
    ASSERT_TRUE(store->Commit(expected, {}, {{worker}, {}}).ok());
  }
  EXPECT_EQ(SchemaVersion(), "7");
  EXPECT_THAT(RolloutColumns(), HasSubstr("worker_replace_size INTEGER 1 0"));
  std::unique_ptr<Store> store = OpenStore();
  ASSERT_NE(store, nullptr);
  ASSERT_NO_FATAL_FAILURE(ExpectLoads(*store, expected));
  absl::StatusOr<std::vector<StoredWorker>> workers = store->LoadWorkers();
  ASSERT_TRUE(workers.ok()) << workers.status();
  ASSERT_THAT(*workers, SizeIs(1));
  EXPECT_EQ(Fields((*workers)[0]), Fields(worker));
}

TEST_F(SqliteStoreTest, UpgradesAnEmptyVersion1Database) {
  WriteVersion1Database(/*with_rows=*/false);
  std::unique_ptr<Store> store = OpenStore();
  ASSERT_NE(store, nullptr);
  absl::StatusOr<std::optional<StoredRollout>> loaded = store->Load();
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_FALSE(loaded->has_value());
  EXPECT_EQ(SchemaVersion(), "7");
}

TEST_F(SqliteStoreTest, UpgradeHappensOnceAndCommitsCarryOn) {
  WriteVersion1Database();
  ASSERT_NE(OpenStore(), nullptr);
  const std::string columns = RolloutColumns();
  StoredRollout rollout = Version1Rollout();
  {
    // Opened again: already version 7, nothing to add (a second ALTER would fail).
    std::unique_ptr<Store> store = OpenStore();
    ASSERT_NE(store, nullptr);
    ASSERT_NO_FATAL_FAILURE(ExpectLoads(*store, rollout));
    EXPECT_EQ(RolloutColumns(), columns);

    rollout.strategy = Strategy::kDowntime;
    rollout.downtime.all_stopped_unix_ms = 1714567900000;
    absl::StatusOr<std::vector<HistoryEntry>> stored =
        store->Commit(rollout, {Entry("result", "stopped")});
    ASSERT_TRUE(stored.ok()) << stored.status();
    EXPECT_EQ((*stored)[0].sequence, 3);
  }
  std::unique_ptr<Store> store = OpenStore();
  ASSERT_NE(store, nullptr);
  ASSERT_NO_FATAL_FAILURE(ExpectLoads(*store, rollout));
  EXPECT_EQ(SchemaVersion(), "7");
}

// The upgrade is one transaction: the columns added before the schema version's update fails
// are taken back with it.
TEST_F(SqliteStoreTest, UpgradeFailingPartWayLeavesVersion1) {
  WriteVersion1Database();
  ASSERT_NO_FATAL_FAILURE(Tamper(
      "CREATE TRIGGER poison BEFORE UPDATE ON meta BEGIN SELECT RAISE(ABORT, 'injected'); END"));
  const std::string columns = RolloutColumns();
  absl::StatusOr<std::unique_ptr<Store>> store = Store::Open(path_);
  EXPECT_EQ(store.status().code(), absl::StatusCode::kInternal);
  EXPECT_THAT(Message(store.status()),
              AllOf(HasSubstr(path_), HasSubstr("upgrade the schema from version 1"),
                    HasSubstr("injected")));
  EXPECT_EQ(SchemaVersion(), "1");
  EXPECT_EQ(RolloutColumns(), columns);
  EXPECT_THAT(columns, Not(HasSubstr("strategy")));

  ASSERT_NO_FATAL_FAILURE(Tamper("DROP TRIGGER poison"));
  std::unique_ptr<Store> reopened = OpenStore();
  ASSERT_NE(reopened, nullptr);
  ASSERT_NO_FATAL_FAILURE(ExpectLoads(*reopened, Version1Rollout()));
}

// A version 1 row that does not decode is refused as in any database, and the file stays the
// version 1 database it was: the upgrade is taken back.
TEST_F(SqliteStoreTest, RefusesAVersion1DatabaseWithAnUndecodableRowAndLeavesItAsItWas) {
  ASSERT_NO_FATAL_FAILURE(WriteVersion1Database());
  ASSERT_NO_FATAL_FAILURE(Tamper("UPDATE nodes SET goal_start = 'sideways' WHERE name = 'cp-3'"));
  ExpectOpenRefused(absl::StatusCode::kDataLoss, {"cp-3", "'sideways'"});
  EXPECT_EQ(SchemaVersion(), "1");
}

TEST_F(SqliteStoreTest, OpenReportsAnUnknownStrategy) {
  ASSERT_NO_FATAL_FAILURE(WriteFullRollout());
  ASSERT_NO_FATAL_FAILURE(Tamper("UPDATE rollout SET strategy = 'Downtime'"));
  ExpectOpenRefused(absl::StatusCode::kDataLoss, {"column strategy", "'Downtime'", "damaged"});
}

}  // namespace
}  // namespace handoff::store
