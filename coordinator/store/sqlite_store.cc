#include <fcntl.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/cleanup/cleanup.h"
#include "common/base/strings.h"
#include "coordinator/store/store.h"

namespace handoff::store {
namespace {

// A file written by a newer coordinator is refused outright: only its writer knows whether this
// code could read it without losing anything. An older one is upgraded on open (kUpgradeFrom1
// to kUpgradeFrom6). Version 1: the released coordinator's schema. Version 2: the rollout's
// strategy and the downtime strategy's measured outage. Version 3: the nodes the membership began
// as (launch_nodes), once operators can add and remove nodes. Version 4: the control-plane size a
// replacement keeps (replace_size), with the strategy 'replace'. Version 5: the node a
// replacement asked to leave (replace_leaving). Version 6: the workers (their own table, one row
// each, written only when one changes) and the rollout's worker policy. Version 7: the workers a
// replacement asked to leave (workers.leaving) and the workers it keeps (worker_replace_size).
constexpr int64_t kSchemaVersion = 7;
constexpr int64_t kOldestSchemaVersion = 1;

// Constant SQL only; every value goes in through a bound parameter.
constexpr char kCreateSchema[] = R"sql(
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
  settings_yaml TEXT NOT NULL,
  strategy TEXT NOT NULL DEFAULT 'leader-migration',
  downtime_all_stopped_unix_ms INTEGER NOT NULL DEFAULT 0,
  downtime_controller_manager_back_unix_ms INTEGER NOT NULL DEFAULT 0,
  downtime_cloud_controllers_back_unix_ms INTEGER NOT NULL DEFAULT 0,
  launch_nodes TEXT NOT NULL DEFAULT '',
  replace_size INTEGER NOT NULL DEFAULT 0,
  replace_leaving TEXT NOT NULL DEFAULT '',
  worker_max_unavailable TEXT NOT NULL DEFAULT '1',
  worker_failure_budget INTEGER NOT NULL DEFAULT 1,
  worker_replace_size INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE workers (
  name TEXT PRIMARY KEY NOT NULL,
  state TEXT NOT NULL,
  goal_start TEXT NOT NULL,
  last_result TEXT NOT NULL,
  zone TEXT NOT NULL,
  in_flight_command_id TEXT,
  in_flight_from TEXT,
  in_flight_to TEXT,
  in_flight_sent_unix_ms INTEGER,
  failure TEXT NOT NULL,
  leaving INTEGER NOT NULL DEFAULT 0
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
)sql";

// Version 1 to 2, the columns exactly as kCreateSchema declares them (the defaults too), so that
// an upgraded database and a new one have the same shape. A version 1 rollout was always Leader
// Migration, and had no outage to measure. SQLite's ALTER TABLE is transactional: the caller
// runs this with the schema version update in one transaction.
constexpr char kUpgradeFrom1[] = R"sql(
ALTER TABLE rollout ADD COLUMN strategy TEXT NOT NULL DEFAULT 'leader-migration';
ALTER TABLE rollout ADD COLUMN downtime_all_stopped_unix_ms INTEGER NOT NULL DEFAULT 0;
ALTER TABLE rollout ADD COLUMN downtime_controller_manager_back_unix_ms INTEGER NOT NULL DEFAULT 0;
ALTER TABLE rollout ADD COLUMN downtime_cloud_controllers_back_unix_ms INTEGER NOT NULL DEFAULT 0;
UPDATE meta SET value = 2 WHERE key = 'schema_version';
)sql";

// Version 2 to 3, likewise. A version 2 membership never changed: '' reads as the nodes' own.
constexpr char kUpgradeFrom2[] = R"sql(
ALTER TABLE rollout ADD COLUMN launch_nodes TEXT NOT NULL DEFAULT '';
UPDATE meta SET value = 3 WHERE key = 'schema_version';
)sql";

// Version 3 to 4, likewise. No version 3 rollout replaced nodes.
constexpr char kUpgradeFrom3[] = R"sql(
ALTER TABLE rollout ADD COLUMN replace_size INTEGER NOT NULL DEFAULT 0;
UPDATE meta SET value = 4 WHERE key = 'schema_version';
)sql";

// Version 4 to 5, likewise. A version 4 replacement that asked a node to leave asks again (its
// planner picks the node again from the states, as that coordinator did).
constexpr char kUpgradeFrom4[] = R"sql(
ALTER TABLE rollout ADD COLUMN replace_leaving TEXT NOT NULL DEFAULT '';
UPDATE meta SET value = 5 WHERE key = 'schema_version';
)sql";

// Version 5 to 6, likewise. A version 5 coordinator moved no worker: the table starts empty, and
// the policy is a new rollout's.
constexpr char kUpgradeFrom5[] = R"sql(
ALTER TABLE rollout ADD COLUMN worker_max_unavailable TEXT NOT NULL DEFAULT '1';
ALTER TABLE rollout ADD COLUMN worker_failure_budget INTEGER NOT NULL DEFAULT 1;
CREATE TABLE workers (
  name TEXT PRIMARY KEY NOT NULL,
  state TEXT NOT NULL,
  goal_start TEXT NOT NULL,
  last_result TEXT NOT NULL,
  zone TEXT NOT NULL,
  in_flight_command_id TEXT,
  in_flight_from TEXT,
  in_flight_to TEXT,
  in_flight_sent_unix_ms INTEGER,
  failure TEXT NOT NULL
);
UPDATE meta SET value = 6 WHERE key = 'schema_version';
)sql";

// Version 6 to 7, likewise. A version 6 coordinator replaced no worker.
constexpr char kUpgradeFrom6[] = R"sql(
ALTER TABLE rollout ADD COLUMN worker_replace_size INTEGER NOT NULL DEFAULT 0;
ALTER TABLE workers ADD COLUMN leaving INTEGER NOT NULL DEFAULT 0;
UPDATE meta SET value = 7 WHERE key = 'schema_version';
)sql";

struct DatabaseCloser {
  void operator()(sqlite3* db) const { sqlite3_close_v2(db); }
};
using DatabasePtr = std::unique_ptr<sqlite3, DatabaseCloser>;

struct StatementFinalizer {
  void operator()(sqlite3_stmt* statement) const { sqlite3_finalize(statement); }
};
using StatementPtr = std::unique_ptr<sqlite3_stmt, StatementFinalizer>;

absl::StatusCode CodeFor(int result, int system_errno) {
  switch (result & 0xff) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
      return absl::StatusCode::kUnavailable;
    case SQLITE_CANTOPEN:
      if (system_errno == ENOENT || system_errno == ENOTDIR) return absl::StatusCode::kNotFound;
      if (system_errno == EACCES || system_errno == EPERM) {
        return absl::StatusCode::kPermissionDenied;
      }
      return absl::StatusCode::kInternal;
    case SQLITE_PERM:
    case SQLITE_READONLY:
    case SQLITE_AUTH:
      return absl::StatusCode::kPermissionDenied;
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB:
      return absl::StatusCode::kDataLoss;
    case SQLITE_FULL:
      return absl::StatusCode::kResourceExhausted;
    default:
      return absl::StatusCode::kInternal;
  }
}

absl::Status WithContext(const absl::Status& status, std::string_view context) {
  return absl::Status(status.code(), StrCat(status.message(), " (", context, ")"));
}

// The wire contract (proto3 strings) carries UTF-8 only: a history entry that is not would break
// every `handoffctl history` that reaches it.
bool IsUtf8(std::string_view text) {
  size_t i = 0;
  while (i < text.size()) {
    const auto byte = static_cast<unsigned char>(text[i]);
    size_t length = 0;
    uint32_t code_point = 0;
    if (byte < 0x80) {
      ++i;
      continue;
    } else if ((byte & 0xe0) == 0xc0) {
      length = 2;
      code_point = byte & 0x1f;
    } else if ((byte & 0xf0) == 0xe0) {
      length = 3;
      code_point = byte & 0x0f;
    } else if ((byte & 0xf8) == 0xf0) {
      length = 4;
      code_point = byte & 0x07;
    } else {
      return false;
    }
    if (i + length > text.size()) return false;
    for (size_t k = 1; k < length; ++k) {
      const auto next = static_cast<unsigned char>(text[i + k]);
      if ((next & 0xc0) != 0x80) return false;
      code_point = (code_point << 6) | (next & 0x3f);
    }
    // Overlong forms, UTF-16 surrogates and code points past Unicode's last.
    constexpr std::array<uint32_t, 5> kSmallest = {0, 0, 0x80, 0x800, 0x10000};
    if (code_point < kSmallest[length] || (code_point >= 0xd800 && code_point <= 0xdfff) ||
        code_point > 0x10ffff) {
      return false;
    }
    i += length;
  }
  return true;
}

// `text` with every byte that does not begin a valid UTF-8 sequence replaced by U+FFFD.
std::string ToUtf8(std::string_view text) {
  if (IsUtf8(text)) return std::string(text);
  std::string out;
  out.reserve(text.size() + 8);
  size_t i = 0;
  while (i < text.size()) {
    // The longest valid sequence starting here, if any: try each length.
    size_t length = 0;
    for (size_t candidate = 1; candidate <= 4 && i + candidate <= text.size(); ++candidate) {
      if (IsUtf8(text.substr(i, candidate))) {
        length = candidate;
        break;
      }
    }
    if (length == 0) {
      out += "\xEF\xBF\xBD";
      ++i;
    } else {
      out.append(text.substr(i, length));
      i += length;
    }
  }
  return out;
}

class Connection;

// A prepared statement; parameters are bound in order.
class Statement {
 public:
  Statement(const Connection& connection, StatementPtr statement, std::string what)
      : connection_(&connection), statement_(std::move(statement)), what_(std::move(what)) {}

  Statement& BindText(std::string_view value);
  Statement& BindInt(int64_t value);
  Statement& BindNull();
  Statement& BindState(NodeState state) { return BindText(NodeStateName(state)); }

  // True when a row is ready to read, false when the statement is done.
  absl::StatusOr<bool> Step();
  // Runs a statement that returns no rows.
  absl::Status Run();
  // Makes the statement ready to be bound and run again.
  void Reset() {
    sqlite3_reset(statement_.get());
    sqlite3_clear_bindings(statement_.get());
    next_parameter_ = 1;
    bind_error_ = absl::OkStatus();
  }

  // SQLITE_INTEGER, SQLITE_TEXT, ..., as stored.
  int Type(int column) const { return sqlite3_column_type(statement_.get(), column); }
  bool IsNull(int column) const { return Type(column) == SQLITE_NULL; }
  int64_t Int(int column) const { return sqlite3_column_int64(statement_.get(), column); }
  std::string Text(int column) const { return std::string(TextView(column)); }
  // Valid until the next Step or Reset.
  std::string_view TextView(int column) const {
    // Text before bytes: sqlite3_column_bytes then measures the text as returned.
    const unsigned char* text = sqlite3_column_text(statement_.get(), column);
    const int size = sqlite3_column_bytes(statement_.get(), column);
    if (text == nullptr) return "";
    return std::string_view(reinterpret_cast<const char*>(text), static_cast<size_t>(size));
  }

 private:
  void CheckBind(int result);

  const Connection* connection_;
  StatementPtr statement_;
  std::string what_;
  int next_parameter_ = 1;
  absl::Status bind_error_;
};

class Connection {
 public:
  Connection(std::string path, DatabasePtr db) : path_(std::move(path)), db_(std::move(db)) {}

  const std::string& path() const { return path_; }
  sqlite3* db() const { return db_.get(); }

  // The error of the call that just failed on this connection. Build it before any other call on
  // the connection (a ROLLBACK, say), which would replace SQLite's message.
  absl::Status Error(std::string_view what) const {
    const int result = sqlite3_extended_errcode(db_.get());
    // The OS error is only meaningful for a failed OS call; otherwise it may be stale.
    const bool os_error = (result & 0xff) == SQLITE_CANTOPEN || (result & 0xff) == SQLITE_IOERR;
    const int system_errno = os_error ? sqlite3_system_errno(db_.get()) : 0;
    std::string message = StrCat(path_, ": ", what, ": ", sqlite3_errmsg(db_.get()));
    if (system_errno != 0) StrAppend(&message, " (", std::strerror(system_errno), ")");
    return absl::Status(CodeFor(result, system_errno), message);
  }

  absl::StatusOr<Statement> Prepare(std::string_view sql, std::string_view what) const {
    sqlite3_stmt* raw = nullptr;
    const int result =
        sqlite3_prepare_v2(db_.get(), sql.data(), static_cast<int>(sql.size()), &raw, nullptr);
    StatementPtr statement(raw);
    if (result != SQLITE_OK) return Error(what);
    return Statement(*this, std::move(statement), std::string(what));
  }

  // Runs constant SQL that returns no rows (one or more statements).
  absl::Status Execute(const char* sql, std::string_view what) const {
    if (sqlite3_exec(db_.get(), sql, nullptr, nullptr, nullptr) != SQLITE_OK) return Error(what);
    return absl::OkStatus();
  }

  // Runs `body` between `begin` and COMMIT. If anything fails, rolls back, so that none of the
  // body's writes stay, and returns the first error.
  template <typename Body>
  absl::Status InTransaction(const char* begin, std::string_view what, Body body) const {
    if (absl::Status status = Execute(begin, StrCat(what, ": begin the transaction"));
        !status.ok()) {
      return status;
    }
    absl::Status status = body();
    if (status.ok()) status = Execute("COMMIT", StrCat(what, ": commit"));
    // A failed COMMIT (SQLITE_BUSY, say) leaves the transaction open; some errors end it
    // themselves, and a second ROLLBACK would fail.
    if (!status.ok() && sqlite3_get_autocommit(db_.get()) == 0) {
      if (absl::Status rollback = Execute("ROLLBACK", StrCat(what, ": roll back"));
          !rollback.ok()) {
        return absl::Status(status.code(), StrCat(status.message(), "; ", rollback.message()));
      }
    }
    return status;
  }

 private:
  std::string path_;
  DatabasePtr db_;
};

void Statement::CheckBind(int result) {
  if (result != SQLITE_OK && bind_error_.ok()) {
    bind_error_ = connection_->Error(StrCat(what_, ": bind parameter ", next_parameter_));
  }
  ++next_parameter_;
}

Statement& Statement::BindText(std::string_view value) {
  CheckBind(sqlite3_bind_text64(statement_.get(), next_parameter_, value.data(), value.size(),
                                SQLITE_TRANSIENT, SQLITE_UTF8));
  return *this;
}

Statement& Statement::BindInt(int64_t value) {
  CheckBind(sqlite3_bind_int64(statement_.get(), next_parameter_, value));
  return *this;
}

Statement& Statement::BindNull() {
  CheckBind(sqlite3_bind_null(statement_.get(), next_parameter_));
  return *this;
}

absl::StatusOr<bool> Statement::Step() {
  if (!bind_error_.ok()) return bind_error_;
  switch (sqlite3_step(statement_.get())) {
    case SQLITE_ROW:
      return true;
    case SQLITE_DONE:
      return false;
    default:
      return connection_->Error(what_);
  }
}

absl::Status Statement::Run() {
  absl::StatusOr<bool> row = Step();
  if (!row.ok()) return row.status();
  if (*row) {
    return absl::InternalError(StrCat(connection_->path(), ": ", what_, ": returned a row"));
  }
  return absl::OkStatus();
}

absl::StatusOr<int64_t> ReadSchemaVersion(const Connection& connection) {
  absl::StatusOr<Statement> select = connection.Prepare(
      "SELECT value FROM meta WHERE key = 'schema_version'", "read the schema version");
  if (!select.ok()) return select.status();
  absl::StatusOr<bool> row = select->Step();
  if (!row.ok()) return row.status();
  if (!*row) {
    return absl::DataLossError(
        StrCat(connection.path(), ": the meta table has no schema_version (damaged database)"));
  }
  return select->Int(0);
}

class SqliteStore : public Store {
 public:
  explicit SqliteStore(Connection connection) : connection_(std::move(connection)) {}

  absl::StatusOr<std::optional<StoredRollout>> Load() override;
  absl::StatusOr<std::vector<StoredWorker>> LoadWorkers() override;
  absl::StatusOr<std::vector<HistoryEntry>> Commit(
      const StoredRollout& rollout, const std::vector<HistoryEntry>& history,
      const WorkerChanges& workers) override;
  absl::StatusOr<std::vector<HistoryEntry>> History(int64_t after_sequence, int limit) override;
  absl::Status ForgetHistoryThrough(int64_t through) override;

  // Decodes every stored row as Load and History would, and checks what History's readers need:
  // kDataLoss naming the first row that does not decode.
  absl::Status VerifyRows() const;
  // Upgrades a version 1 to 6 database to kSchemaVersion and verifies its rows, in one
  // transaction: on any error nothing of the upgrade stays. Nothing to do when another process
  // upgraded the file since `CheckSchema` read its version.
  absl::Status Upgrade() const;

  const Connection& connection() const { return connection_; }

 private:
  absl::Status VerifyHistory() const;
  // VerifyRows' checks, inside the caller's transaction.
  absl::Status CheckRows() const;
  absl::Status ReadRollout(std::optional<StoredRollout>& out) const;
  absl::Status ReadWorkers(std::vector<StoredWorker>& out) const;
  absl::Status WriteWorkers(const WorkerChanges& workers) const;
  absl::Status ReadState(const Statement& row, int column, std::string_view what,
                         NodeState& out) const;
  absl::Status WriteRollout(const StoredRollout& rollout) const;
  absl::Status AppendHistory(const std::vector<HistoryEntry>& history,
                             std::vector<HistoryEntry>& stored) const;
  absl::Status Damaged(std::string_view what) const {
    return absl::DataLossError(
        StrCat(connection_.path(), ": ", what, " (the handoff state database is damaged)"));
  }

  Connection connection_;
};

absl::Status SqliteStore::ReadState(const Statement& row, int column, std::string_view what,
                                    NodeState& out) const {
  const std::string name = row.Text(column);
  std::optional<NodeState> state = row.IsNull(column) ? std::nullopt : NodeStateNamed(name);
  if (!state) return Damaged(StrCat(what, " is '", name, "', not a node state"));
  out = *state;
  return absl::OkStatus();
}

absl::Status SqliteStore::ReadRollout(std::optional<StoredRollout>& out) const {
  absl::StatusOr<Statement> select = connection_.Prepare(
      "SELECT rollout_id, goal, paused, halted, halt_reason, in_flight_command_id, "
      "in_flight_node, in_flight_from, in_flight_to, in_flight_sent_unix_ms, "
      "next_command_sequence, revision, settings_yaml, strategy, downtime_all_stopped_unix_ms, "
      "downtime_controller_manager_back_unix_ms, downtime_cloud_controllers_back_unix_ms, "
      "launch_nodes, replace_size, replace_leaving, worker_max_unavailable, "
      "worker_failure_budget, worker_replace_size FROM rollout WHERE id = 1",
      "load the rollout");
  if (!select.ok()) return select.status();
  absl::StatusOr<bool> row = select->Step();
  if (!row.ok()) return row.status();
  if (!*row) {
    out.reset();
    return absl::OkStatus();
  }
  StoredRollout rollout;
  rollout.rollout_id = select->Text(0);
  if (!select->IsNull(1)) {
    NodeState goal;
    if (absl::Status status = ReadState(*select, 1, "the rollout's goal", goal); !status.ok()) {
      return status;
    }
    rollout.goal = goal;
  }
  rollout.paused = select->Int(2) != 0;
  rollout.halted = select->Int(3) != 0;
  rollout.halt_reason = select->Text(4);
  if (!select->IsNull(5)) {
    InFlight in_flight;
    in_flight.command_id = select->Text(5);
    if (select->IsNull(6) || select->IsNull(9)) {
      return Damaged("the move in flight has a command id but no node or send time");
    }
    in_flight.node = select->Text(6);
    if (absl::Status status = ReadState(*select, 7, "the move in flight's from", in_flight.from);
        !status.ok()) {
      return status;
    }
    if (absl::Status status = ReadState(*select, 8, "the move in flight's to", in_flight.to);
        !status.ok()) {
      return status;
    }
    in_flight.sent_unix_ms = select->Int(9);
    rollout.in_flight = std::move(in_flight);
  }
  rollout.next_command_sequence = select->Int(10);
  rollout.revision = select->Int(11);
  rollout.settings_yaml = select->Text(12);
  const std::string strategy = select->Text(13);
  std::optional<Strategy> parsed = StrategyNamed(strategy);
  if (!parsed) {
    return Damaged(StrCat("the rollout's strategy (column strategy) is '", strategy,
                          "', not 'leader-migration', 'downtime' or 'replace'"));
  }
  rollout.strategy = *parsed;
  rollout.downtime.all_stopped_unix_ms = select->Int(14);
  rollout.downtime.controller_manager_back_unix_ms = select->Int(15);
  rollout.downtime.cloud_controllers_back_unix_ms = select->Int(16);
  rollout.launch_nodes = ToStrings(StrSplit(select->Text(17), "\n", /*skip_empty=*/true));
  if (select->Int(18) < 0) {
    return Damaged(StrCat("the replacement's size (column replace_size) is ", select->Int(18)));
  }
  rollout.replace_size = static_cast<size_t>(select->Int(18));
  rollout.replace_leaving = select->Text(19);
  rollout.worker_max_unavailable = select->Text(20);
  if (rollout.worker_max_unavailable.empty()) {
    return Damaged("the workers' max-unavailable (column worker_max_unavailable) is empty");
  }
  rollout.worker_failure_budget = select->Int(21);
  if (rollout.worker_failure_budget < 1) {
    return Damaged(StrCat("the workers' failure budget (column worker_failure_budget) is ",
                          rollout.worker_failure_budget, ", not at least 1"));
  }
  if (select->Int(22) < 0) {
    return Damaged(StrCat("the workers a replacement keeps (column worker_replace_size) is ",
                          select->Int(22)));
  }
  rollout.worker_replace_size = static_cast<size_t>(select->Int(22));

  absl::StatusOr<Statement> nodes = connection_.Prepare(
      "SELECT name, state, goal_start, last_result FROM nodes ORDER BY position", "load the nodes");
  if (!nodes.ok()) return nodes.status();
  while (true) {
    absl::StatusOr<bool> node_row = nodes->Step();
    if (!node_row.ok()) return node_row.status();
    if (!*node_row) break;
    StoredNode node;
    node.name = nodes->Text(0);
    if (absl::Status status =
            ReadState(*nodes, 1, StrCat("node ", node.name, "'s state"), node.state);
        !status.ok()) {
      return status;
    }
    if (absl::Status status =
            ReadState(*nodes, 2, StrCat("node ", node.name, "'s goal start"), node.goal_start);
        !status.ok()) {
      return status;
    }
    node.last_result = nodes->Text(3);
    rollout.nodes.push_back(std::move(node));
  }
  out = std::move(rollout);
  return absl::OkStatus();
}

absl::Status SqliteStore::ReadWorkers(std::vector<StoredWorker>& out) const {
  absl::StatusOr<Statement> select = connection_.Prepare(
      "SELECT name, state, goal_start, last_result, zone, in_flight_command_id, in_flight_from, "
      "in_flight_to, in_flight_sent_unix_ms, failure, leaving FROM workers ORDER BY name",
      "load the workers");
  if (!select.ok()) return select.status();
  out.clear();
  while (true) {
    absl::StatusOr<bool> row = select->Step();
    if (!row.ok()) return row.status();
    if (!*row) return absl::OkStatus();
    StoredWorker worker;
    worker.name = select->Text(0);
    const std::string whose = StrCat("worker ", worker.name, "'s ");
    if (absl::Status status = ReadState(*select, 1, StrCat(whose, "state"), worker.state);
        !status.ok()) {
      return status;
    }
    if (absl::Status status =
            ReadState(*select, 2, StrCat(whose, "goal start"), worker.goal_start);
        !status.ok()) {
      return status;
    }
    worker.last_result = select->Text(3);
    worker.zone = select->Text(4);
    if (!select->IsNull(5)) {
      InFlight move;
      move.command_id = select->Text(5);
      move.node = worker.name;
      if (select->IsNull(8)) return Damaged(StrCat(whose, "move in flight has no send time"));
      if (absl::Status status = ReadState(*select, 6, StrCat(whose, "move's from"), move.from);
          !status.ok()) {
        return status;
      }
      if (absl::Status status = ReadState(*select, 7, StrCat(whose, "move's to"), move.to);
          !status.ok()) {
        return status;
      }
      move.sent_unix_ms = select->Int(8);
      worker.in_flight = std::move(move);
    }
    worker.failure = select->Text(9);
    worker.leaving = select->Int(10) != 0;
    out.push_back(std::move(worker));
  }
}

absl::StatusOr<std::vector<StoredWorker>> SqliteStore::LoadWorkers() {
  std::vector<StoredWorker> workers;
  absl::Status status = connection_.InTransaction("BEGIN", "load the workers",
                                                  [&] { return ReadWorkers(workers); });
  if (!status.ok()) return status;
  return workers;
}

absl::Status SqliteStore::WriteWorkers(const WorkerChanges& changes) const {
  if (!changes.forget.empty()) {
    absl::StatusOr<Statement> forget =
        connection_.Prepare("DELETE FROM workers WHERE name = ?", "commit: forget workers");
    if (!forget.ok()) return forget.status();
    for (const std::string& name : changes.forget) {
      forget->Reset();
      forget->BindText(ToUtf8(name));
      if (absl::Status status = forget->Run(); !status.ok()) {
        return WithContext(status, StrCat("worker '", name, "'"));
      }
    }
  }
  if (changes.write.empty()) return absl::OkStatus();
  absl::StatusOr<Statement> insert = connection_.Prepare(
      "INSERT OR REPLACE INTO workers (name, state, goal_start, last_result, zone, "
      "in_flight_command_id, in_flight_from, in_flight_to, in_flight_sent_unix_ms, failure, "
      "leaving) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
      "commit: write the workers");
  if (!insert.ok()) return insert.status();
  for (const StoredWorker& worker : changes.write) {
    insert->Reset();
    insert->BindText(ToUtf8(worker.name))
        .BindState(worker.state)
        .BindState(worker.goal_start)
        .BindText(ToUtf8(worker.last_result))
        .BindText(ToUtf8(worker.zone));
    if (worker.in_flight) {
      insert->BindText(worker.in_flight->command_id)
          .BindState(worker.in_flight->from)
          .BindState(worker.in_flight->to)
          .BindInt(worker.in_flight->sent_unix_ms);
    } else {
      insert->BindNull().BindNull().BindNull().BindNull();
    }
    insert->BindText(ToUtf8(worker.failure)).BindInt(worker.leaving ? 1 : 0);
    if (absl::Status status = insert->Run(); !status.ok()) {
      return WithContext(status, StrCat("worker '", worker.name, "'"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::optional<StoredRollout>> SqliteStore::Load() {
  std::optional<StoredRollout> rollout;
  // One read transaction, so that the rollout and its nodes come from the same commit even if
  // another process writes the file in between.
  absl::Status status =
      connection_.InTransaction("BEGIN", "load the rollout", [&] { return ReadRollout(rollout); });
  if (!status.ok()) return status;
  return rollout;
}

absl::Status SqliteStore::WriteRollout(const StoredRollout& rollout) const {
  const std::string_view strategy = StrategyName(rollout.strategy);
  if (strategy.empty()) {
    return absl::InvalidArgumentError(
        StrCat(connection_.path(), ": commit: the rollout's strategy (",
               static_cast<int>(rollout.strategy), ") is not one the store can write"));
  }
  absl::StatusOr<Statement> insert = connection_.Prepare(
      "INSERT OR REPLACE INTO rollout (id, rollout_id, goal, paused, halted, halt_reason, "
      "in_flight_command_id, in_flight_node, in_flight_from, in_flight_to, "
      "in_flight_sent_unix_ms, next_command_sequence, revision, settings_yaml, strategy, "
      "downtime_all_stopped_unix_ms, downtime_controller_manager_back_unix_ms, "
      "downtime_cloud_controllers_back_unix_ms, launch_nodes, replace_size, replace_leaving, "
      "worker_max_unavailable, worker_failure_budget, worker_replace_size) "
      "VALUES (1, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
      "commit: write the rollout");
  if (!insert.ok()) return insert.status();
  insert->BindText(rollout.rollout_id);
  if (rollout.goal) {
    insert->BindState(*rollout.goal);
  } else {
    insert->BindNull();
  }
  insert->BindInt(rollout.paused ? 1 : 0).BindInt(rollout.halted ? 1 : 0);
  insert->BindText(rollout.halt_reason);
  if (rollout.in_flight) {
    const InFlight& in_flight = *rollout.in_flight;
    insert->BindText(in_flight.command_id)
        .BindText(in_flight.node)
        .BindState(in_flight.from)
        .BindState(in_flight.to)
        .BindInt(in_flight.sent_unix_ms);
  } else {
    insert->BindNull().BindNull().BindNull().BindNull().BindNull();
  }
  insert->BindInt(rollout.next_command_sequence)
      .BindInt(rollout.revision)
      .BindText(rollout.settings_yaml)
      .BindText(strategy)
      .BindInt(rollout.downtime.all_stopped_unix_ms)
      .BindInt(rollout.downtime.controller_manager_back_unix_ms)
      .BindInt(rollout.downtime.cloud_controllers_back_unix_ms)
      .BindText(StrJoin(rollout.launch_nodes, "\n"))
      .BindInt(static_cast<int64_t>(rollout.replace_size))
      .BindText(rollout.replace_leaving)
      .BindText(rollout.worker_max_unavailable)
      .BindInt(rollout.worker_failure_budget)
      .BindInt(static_cast<int64_t>(rollout.worker_replace_size));
  if (absl::Status status = insert->Run(); !status.ok()) return status;

  if (absl::Status status = connection_.Execute("DELETE FROM nodes", "commit: clear the nodes");
      !status.ok()) {
    return status;
  }
  absl::StatusOr<Statement> insert_node = connection_.Prepare(
      "INSERT INTO nodes (position, name, state, goal_start, last_result) VALUES (?, ?, ?, ?, ?)",
      "commit: write the nodes");
  if (!insert_node.ok()) return insert_node.status();
  for (size_t position = 0; position < rollout.nodes.size(); ++position) {
    const StoredNode& node = rollout.nodes[position];
    insert_node->Reset();
    insert_node->BindInt(static_cast<int64_t>(position))
        .BindText(node.name)
        .BindState(node.state)
        .BindState(node.goal_start)
        .BindText(node.last_result);
    if (absl::Status status = insert_node->Run(); !status.ok()) {
      return WithContext(status, StrCat("node '", node.name, "'"));
    }
  }
  return absl::OkStatus();
}

absl::Status SqliteStore::AppendHistory(const std::vector<HistoryEntry>& history,
                                        std::vector<HistoryEntry>& stored) const {
  absl::StatusOr<Statement> insert = connection_.Prepare(
      "INSERT INTO history (unix_ms, actor, kind, node, command_id, message, detail_json) "
      "VALUES (?, ?, ?, ?, ?, ?, ?)",
      "commit: append to the history");
  if (!insert.ok()) return insert.status();
  for (const HistoryEntry& entry : history) {
    // Stored as UTF-8 whatever came in (a certificate's name, an error text), so that the check
    // at open never refuses what this store wrote.
    HistoryEntry copy = entry;
    for (std::string* text : {&copy.actor, &copy.kind, &copy.node, &copy.command_id,
                              &copy.message, &copy.detail_json}) {
      *text = ToUtf8(*text);
    }
    insert->Reset();
    insert->BindInt(copy.unix_ms)
        .BindText(copy.actor)
        .BindText(copy.kind)
        .BindText(copy.node)
        .BindText(copy.command_id)
        .BindText(copy.message)
        .BindText(copy.detail_json);
    if (absl::Status status = insert->Run(); !status.ok()) {
      return WithContext(status, StrCat("entry of kind '", copy.kind, "'"));
    }
    copy.sequence = sqlite3_last_insert_rowid(connection_.db());
    stored.push_back(std::move(copy));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<HistoryEntry>> SqliteStore::Commit(
    const StoredRollout& rollout, const std::vector<HistoryEntry>& history,
    const WorkerChanges& workers) {
  std::vector<HistoryEntry> stored;
  stored.reserve(history.size());
  // IMMEDIATE takes the write lock up front, so a busy database fails the commit before anything
  // is written rather than part way through.
  absl::Status status =
      connection_.InTransaction("BEGIN IMMEDIATE", "commit", [&]() -> absl::Status {
        if (absl::Status written = WriteRollout(rollout); !written.ok()) return written;
        if (absl::Status written = WriteWorkers(workers); !written.ok()) return written;
        return AppendHistory(history, stored);
      });
  if (!status.ok()) return status;
  return stored;
}

absl::StatusOr<std::vector<HistoryEntry>> SqliteStore::History(int64_t after_sequence, int limit) {
  if (limit <= 0) {
    return absl::InvalidArgumentError(
        StrCat(connection_.path(), ": history: limit must be positive, got ", limit));
  }
  absl::StatusOr<Statement> select = connection_.Prepare(
      "SELECT sequence, unix_ms, actor, kind, node, command_id, message, detail_json "
      "FROM history WHERE sequence > ? ORDER BY sequence LIMIT ?",
      "read the history");
  if (!select.ok()) return select.status();
  select->BindInt(after_sequence).BindInt(limit);
  std::vector<HistoryEntry> entries;
  while (true) {
    absl::StatusOr<bool> row = select->Step();
    if (!row.ok()) return row.status();
    if (!*row) break;
    HistoryEntry& entry = entries.emplace_back();
    entry.sequence = select->Int(0);
    entry.unix_ms = select->Int(1);
    entry.actor = select->Text(2);
    entry.kind = select->Text(3);
    entry.node = select->Text(4);
    entry.command_id = select->Text(5);
    entry.message = select->Text(6);
    entry.detail_json = select->Text(7);
  }
  return entries;
}

absl::Status SqliteStore::ForgetHistoryThrough(int64_t through) {
  return connection_.InTransaction("BEGIN IMMEDIATE", "forget old history", [&]() -> absl::Status {
    absl::StatusOr<Statement> forget =
        connection_.Prepare("DELETE FROM history WHERE sequence <= ?", "forget old history");
    if (!forget.ok()) return forget.status();
    forget->BindInt(through);
    return forget->Run();
  });
}

absl::Status SqliteStore::VerifyHistory() const {
  // One pass over the table: the types and the UTF-8 checked here, the JSON by SQLite's parser.
  // About 1.5 s of CPU for 1,000,000 entries (342 MB) on this project's build machine, a third of
  // it SQLite's JSON check; a coordinator writes a few entries per move and per agent connection.
  absl::StatusOr<Statement> select = connection_.Prepare(
      "SELECT sequence, detail_json = '' OR json_valid(detail_json), unix_ms, actor, kind, node, "
      "command_id, message, detail_json FROM history ORDER BY sequence",
      "check the history");
  if (!select.ok()) return select.status();
  constexpr std::array<const char*, 6> kTexts = {"actor",      "kind",    "node",
                                                 "command id", "message", "detail"};
  while (true) {
    absl::StatusOr<bool> row = select->Step();
    if (!row.ok()) return row.status();
    if (!*row) return absl::OkStatus();
    const int64_t sequence = select->Int(0);
    // Types before texts: reading a column as text converts it.
    if (select->Type(2) != SQLITE_INTEGER) {
      return Damaged(StrCat("history entry ", sequence, "'s time is not a number"));
    }
    for (int column = 3; column < 9; ++column) {
      if (select->Type(column) != SQLITE_TEXT) {
        return Damaged(StrCat("history entry ", sequence, "'s ", kTexts[column - 3],
                              " is not text"));
      }
      if (!IsUtf8(select->TextView(column))) {
        return Damaged(
            StrCat("history entry ", sequence, "'s ", kTexts[column - 3], " is not UTF-8"));
      }
    }
    if (select->Int(1) == 0) {
      return Damaged(StrCat("history entry ", sequence, "'s detail is not JSON"));
    }
  }
}

absl::Status SqliteStore::CheckRows() const {
  std::optional<StoredRollout> rollout;
  if (absl::Status status = ReadRollout(rollout); !status.ok()) return status;
  std::vector<StoredWorker> workers;
  if (absl::Status status = ReadWorkers(workers); !status.ok()) return status;
  return VerifyHistory();
}

absl::Status SqliteStore::VerifyRows() const {
  // One read transaction: the rows checked are those of one commit.
  return connection_.InTransaction("BEGIN", "check the stored rows", [&] { return CheckRows(); });
}

absl::Status SqliteStore::Upgrade() const {
  // FULL, so that the upgrade is on disk before the coordinator commits anything on top of it
  // (SetDurability, which sets it for good, runs only once the rows are known to decode).
  if (absl::Status status =
          connection_.Execute("PRAGMA synchronous = FULL", "set synchronous = FULL");
      !status.ok()) {
    return status;
  }
  // IMMEDIATE: a second coordinator opening the same file waits here, then finds the version
  // it upgraded to.
  return connection_.InTransaction(
      "BEGIN IMMEDIATE", "upgrade the schema", [&]() -> absl::Status {
        absl::StatusOr<int64_t> version = ReadSchemaVersion(connection_);
        if (!version.ok()) return version.status();
        if (*version == 1) {
          if (absl::Status status =
                  connection_.Execute(kUpgradeFrom1, "upgrade the schema from version 1");
              !status.ok()) {
            return status;
          }
        }
        if (*version <= 2) {
          if (absl::Status status =
                  connection_.Execute(kUpgradeFrom2, "upgrade the schema from version 2");
              !status.ok()) {
            return status;
          }
        }
        if (*version <= 3) {
          if (absl::Status status =
                  connection_.Execute(kUpgradeFrom3, "upgrade the schema from version 3");
              !status.ok()) {
            return status;
          }
        }
        if (*version <= 4) {
          if (absl::Status status =
                  connection_.Execute(kUpgradeFrom4, "upgrade the schema from version 4");
              !status.ok()) {
            return status;
          }
        }
        if (*version <= 5) {
          if (absl::Status status =
                  connection_.Execute(kUpgradeFrom5, "upgrade the schema from version 5");
              !status.ok()) {
            return status;
          }
        }
        if (*version <= 6) {
          if (absl::Status status =
                  connection_.Execute(kUpgradeFrom6, "upgrade the schema from version 6");
              !status.ok()) {
            return status;
          }
        }
        return CheckRows();
      });
}

// WAL so that readers (handoffctl, an operator's sqlite3 shell) do not block commits. In WAL mode
// synchronous=NORMAL may lose the last commits on power loss; the coordinator records a move as
// in flight before sending it, so every commit must be on disk when Commit returns.
absl::Status SetDurability(const Connection& connection) {
  absl::StatusOr<Statement> journal_mode =
      connection.Prepare("PRAGMA journal_mode = WAL", "set WAL journal mode");
  if (!journal_mode.ok()) return journal_mode.status();
  absl::StatusOr<bool> row = journal_mode->Step();
  if (!row.ok()) return row.status();
  // The pragma answers with the mode in force, which stays the old one if WAL is not possible.
  const std::string mode = *row ? journal_mode->Text(0) : "";
  if (mode != "wal") {
    return absl::InternalError(
        StrCat(connection.path(), ": cannot switch to WAL journal mode (it stays '", mode, "')"));
  }
  return connection.Execute("PRAGMA synchronous = FULL", "set synchronous = FULL");
}

// Refuses a database this coordinator must not use: no handoff schema, or a version it does not
// know. Returns the version. Reads only.
absl::StatusOr<int64_t> CheckSchema(const Connection& connection) {
  int64_t table_count = 0;
  bool has_meta = false;
  {
    absl::StatusOr<Statement> tables = connection.Prepare(
        "SELECT count(*), count(CASE WHEN name = 'meta' THEN 1 END) FROM sqlite_master "
        "WHERE type = 'table'",
        "read the schema");
    if (!tables.ok()) return tables.status();
    absl::StatusOr<bool> row = tables->Step();
    if (!row.ok()) return row.status();
    table_count = tables->Int(0);
    has_meta = tables->Int(1) != 0;
  }
  if (table_count == 0) {
    // Open creates a database whole, so an existing one without tables was not made by it.
    return absl::DataLossError(
        StrCat(connection.path(), ": a SQLite database without any table, not a handoff state "
                                  "database (a new one is created whole, never empty)"));
  }
  if (!has_meta) {
    return absl::DataLossError(
        StrCat(connection.path(),
               ": holds tables but no handoff schema version; it is not a handoff state database "
               "(move it away or point the coordinator at another file)"));
  }

  absl::StatusOr<int64_t> read = ReadSchemaVersion(connection);
  if (!read.ok()) return read.status();
  const int64_t version = *read;
  if (version > kSchemaVersion) {
    return absl::FailedPreconditionError(
        StrCat(connection.path(), ": written with schema version ", version,
               ", but this coordinator reads schema version ", kSchemaVersion,
               "; run the coordinator that wrote it, or a newer one"));
  }
  if (version < kOldestSchemaVersion) {
    return absl::DataLossError(StrCat(connection.path(), ": schema version ", version,
                                      " is unknown (this coordinator writes version ",
                                      kSchemaVersion, ")"));
  }
  return version;
}

// SQLite's own check of the file: every page of every table and index reachable once, the
// b-trees in order, the free list whole. A file cut short (a truncating copy, a full disk during
// a restore) or overwritten in place fails it, where a read of the damaged pages would otherwise
// fail only when something reads them (the history, say, weeks later).
//
// integrity_check rather than quick_check: quick_check leaves out only the check of each index
// against its table, and this schema's one index is meta's primary key, so both cost the same:
// 0.40 s for 1,000,000 history entries (342 MB), measured with sqlite3 3.40.1 on this project's
// build machine; a coordinator's history holds a few entries per move.
absl::Status CheckIntegrity(const Connection& connection) {
  // At most 5 problems: the first names the damage, the rest only confirm it.
  // A file cut short may fail the check itself (reading the schema, say) rather than make it
  // report.
  auto damaged = [](const absl::Status& status) {
    if (!absl::IsDataLoss(status)) return status;
    return absl::DataLossError(StrCat(status.message(), ": the file is damaged or cut short"));
  };
  absl::StatusOr<Statement> check =
      connection.Prepare("PRAGMA integrity_check(5)", "check the database's integrity");
  if (!check.ok()) return damaged(check.status());
  std::vector<std::string> problems;
  while (true) {
    absl::StatusOr<bool> row = check->Step();
    if (!row.ok()) return damaged(row.status());
    if (!*row) break;
    problems.push_back(check->Text(0));
  }
  if (problems.size() == 1 && problems.front() == "ok") return absl::OkStatus();
  return absl::DataLossError(StrCat(connection.path(), ": fails SQLite's integrity check (",
                                    StrJoin(problems, "; "),
                                    "): the file is damaged or cut short"));
}

absl::Status ErrnoError(int error, std::string_view path, std::string_view what) {
  absl::StatusCode code = absl::StatusCode::kInternal;
  if (error == ENOENT || error == ENOTDIR) code = absl::StatusCode::kNotFound;
  if (error == EACCES || error == EPERM || error == EROFS) {
    code = absl::StatusCode::kPermissionDenied;
  }
  if (error == ENOSPC || error == EDQUOT) code = absl::StatusCode::kResourceExhausted;
  return absl::Status(code, StrCat(path, ": ", what, ": ", std::strerror(error)));
}

// The first 16 bytes of every SQLite 3 database (https://www.sqlite.org/fileformat.html).
constexpr std::string_view kSqliteHeader("SQLite format 3\0", 16);

// Logs and journals SQLite keeps beside a database, named by appending these to its path.
constexpr std::array<std::string_view, 3> kSidecars = {"-wal", "-shm", "-journal"};

// Whether `path` exists. Refuses, before SQLite opens it, an existing file that cannot be a
// handoff database (SQLite would take an empty file for a new database), and a missing one whose
// log or journal is still there (SQLite would apply it to the new database).
absl::StatusOr<bool> CheckFileBeforeOpening(const std::string& path) {
  struct stat info {};
  if (lstat(path.c_str(), &info) != 0) {
    if (errno != ENOENT) return ErrnoError(errno, path, "cannot inspect the database");
    for (std::string_view suffix : {kSidecars[0], kSidecars[2]}) {
      const std::string sidecar = StrCat(path, suffix);
      struct stat sidecar_info {};
      if (lstat(sidecar.c_str(), &sidecar_info) == 0 && sidecar_info.st_size > 0) {
        return absl::DataLossError(
            StrCat(path, ": missing, but its ", suffix.substr(1), " ", sidecar, " (",
                   sidecar_info.st_size,
                   " bytes) is there: the database was moved or deleted without it"));
      }
    }
    return false;
  }
  if (!S_ISREG(info.st_mode)) {
    return absl::FailedPreconditionError(
        StrCat(path, ": not a regular file; the state database must be one"));
  }
  if (info.st_size == 0) {
    return absl::DataLossError(
        StrCat(path, ": the file is empty (0 bytes), not a handoff state database: a bad "
                     "restore or a truncating copy? (a new database is created whole, never "
                     "empty)"));
  }
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return ErrnoError(errno, path, "cannot open the database");
  std::array<char, kSqliteHeader.size()> header{};
  const ssize_t read_bytes = pread(fd, header.data(), header.size(), 0);
  const int read_error = errno;
  close(fd);
  if (read_bytes < 0) return ErrnoError(read_error, path, "cannot read the database");
  if (std::string_view(header.data(), static_cast<size_t>(read_bytes)) != kSqliteHeader) {
    return absl::DataLossError(StrCat(path, ": not a SQLite database (", info.st_size,
                                      " bytes that do not start with \"SQLite format 3\")"));
  }
  return true;
}

absl::Status SyncDirectory(const std::string& dir) {
  const int fd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return ErrnoError(errno, dir, "cannot open the directory to sync it");
  const int result = fsync(fd);
  const int sync_error = errno;
  close(fd);
  if (result != 0) return ErrnoError(sync_error, dir, "cannot sync the directory");
  return absl::OkStatus();
}

std::string DirectoryOf(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

// Builds a new, empty database in a temporary file beside `path` and links it into place: the
// name appears only once the schema is on disk. If `path` appeared meanwhile (another process
// created it), that one is kept and checked by the caller.
absl::Status CreateDatabase(const std::string& path) {
  const std::string dir = DirectoryOf(path);
  const size_t slash = path.rfind('/');
  // A dotfile, so that a listing of the state dir shows what it is only to those who look.
  std::string temp = StrCat(dir, "/.", slash == std::string::npos ? path : path.substr(slash + 1),
                            ".new-XXXXXX");
  const int fd = mkstemp(temp.data());
  if (fd < 0) {
    absl::Status status = ErrnoError(errno, path, "cannot create the database");
    if (absl::IsNotFound(status)) {
      return absl::NotFoundError(StrCat(status.message(), "; the directory it is in must exist"));
    }
    return status;
  }
  close(fd);
  absl::Cleanup remove_temp = [&temp] {
    unlink(temp.c_str());
    unlink(StrCat(temp, "-journal").c_str());
  };
  {
    sqlite3* raw = nullptr;
    const int result = sqlite3_open_v2(temp.c_str(), &raw, SQLITE_OPEN_READWRITE, nullptr);
    Connection connection(temp, DatabasePtr(raw));
    if (raw == nullptr) return absl::ResourceExhaustedError(StrCat(path, ": out of memory"));
    sqlite3_extended_result_codes(raw, 1);
    if (result != SQLITE_OK) return connection.Error("create the database");
    // The commit syncs the file before the link makes it the database.
    if (absl::Status status =
            connection.Execute("PRAGMA synchronous = FULL", "set synchronous = FULL");
        !status.ok()) {
      return status;
    }
    absl::Status created =
        connection.InTransaction("BEGIN IMMEDIATE", "create the schema", [&]() -> absl::Status {
          if (absl::Status status = connection.Execute(kCreateSchema, "create the schema");
              !status.ok()) {
            return status;
          }
          absl::StatusOr<Statement> insert =
              connection.Prepare("INSERT INTO meta (key, value) VALUES ('schema_version', ?)",
                                 "record the schema version");
          if (!insert.ok()) return insert.status();
          insert->BindInt(kSchemaVersion);
          return insert->Run();
        });
    if (!created.ok()) return created;
  }
  // link, not rename: it never replaces a file another process put there meanwhile.
  if (link(temp.c_str(), path.c_str()) != 0 && errno != EEXIST) {
    return ErrnoError(errno, path, "cannot put the new database in place");
  }
  std::move(remove_temp).Invoke();
  return SyncDirectory(dir);
}

}  // namespace

absl::StatusOr<std::unique_ptr<Store>> Store::Open(const std::string& path) {
  return Open(path, StoreOptions{});
}

absl::StatusOr<std::unique_ptr<Store>> Store::Open(const std::string& path,
                                                   const StoreOptions& options) {
  absl::StatusOr<bool> exists = CheckFileBeforeOpening(path);
  if (!exists.ok()) return exists.status();
  if (!*exists) {
    if (absl::Status created = CreateDatabase(path); !created.ok()) return created;
  }

  sqlite3* raw = nullptr;
  // FULLMUTEX although the caller serialises its calls: a caller's mistake then cannot corrupt
  // SQLite's own structures. No SQLITE_OPEN_CREATE: the file exists by now, and if it vanished
  // meanwhile an empty one must not take its place.
  const int result =
      sqlite3_open_v2(path.c_str(), &raw, SQLITE_OPEN_READWRITE | SQLITE_OPEN_FULLMUTEX, nullptr);
  // sqlite3_open_v2 returns a handle even when it fails; it carries the error message.
  Connection connection(path, DatabasePtr(raw));
  if (raw == nullptr) return absl::ResourceExhaustedError(StrCat(path, ": out of memory"));
  sqlite3_extended_result_codes(raw, 1);
  if (result != SQLITE_OK) return connection.Error("cannot open the database");
  // SQLite opens a write-protected file read-only without an error; the first commit would fail.
  if (sqlite3_db_readonly(raw, "main") == 1) {
    return absl::PermissionDeniedError(
        StrCat(path, ": the database is read-only; the coordinator must be able to write it"));
  }
  if (sqlite3_busy_timeout(raw, options.busy_timeout_ms) != SQLITE_OK) {
    return connection.Error("set the busy timeout");
  }

  // Every check reads only, so that a refused file is left exactly as it was.
  if (absl::Status status = CheckIntegrity(connection); !status.ok()) return status;
  absl::StatusOr<int64_t> version = CheckSchema(connection);
  if (!version.ok()) return version.status();
  auto store = std::make_unique<SqliteStore>(std::move(connection));
  // The upgrade verifies the rows in its own transaction, and takes back its writes when they
  // do not decode.
  absl::Status rows = *version < kSchemaVersion ? store->Upgrade() : store->VerifyRows();
  if (!rows.ok()) return rows;
  if (absl::Status status = SetDurability(store->connection()); !status.ok()) return status;
  return store;
}

absl::StatusOr<std::string> SetAside(const std::string& path, absl::Time now) {
  std::vector<std::string> present;
  for (std::string_view suffix : {std::string_view(), kSidecars[0], kSidecars[1], kSidecars[2]}) {
    struct stat info {};
    if (lstat(StrCat(path, suffix).c_str(), &info) == 0) {
      present.emplace_back(suffix);
    } else if (errno != ENOENT) {
      return ErrnoError(errno, StrCat(path, suffix), "cannot inspect");
    }
  }
  if (present.empty()) return absl::NotFoundError(StrCat(path, ": no database to keep aside"));

  // A name no file has yet, for the database and each of its sidecars: two resets within one
  // second get "-2" and so on.
  const std::string stamp = absl::FormatTime("%Y%m%dT%H%M%SZ", now, absl::UTCTimeZone());
  std::string kept;
  for (int attempt = 1; kept.empty(); ++attempt) {
    const std::string candidate =
        StrCat(path, ".damaged-", stamp, attempt == 1 ? "" : StrCat("-", attempt));
    bool taken = false;
    for (std::string_view suffix : {std::string_view(), kSidecars[0], kSidecars[1], kSidecars[2]}) {
      struct stat info {};
      if (lstat(StrCat(candidate, suffix).c_str(), &info) == 0) taken = true;
    }
    if (!taken) kept = candidate;
  }
  // present[] is in order: the database first (see the header).
  for (const std::string& suffix : present) {
    const std::string from = StrCat(path, suffix);
    const std::string to = StrCat(kept, suffix);
    if (rename(from.c_str(), to.c_str()) != 0) {
      return ErrnoError(errno, from, StrCat("cannot rename it to ", to));
    }
  }
  if (absl::Status synced = SyncDirectory(DirectoryOf(path)); !synced.ok()) return synced;
  return StrCat(kept, present.front());
}

}  // namespace handoff::store
