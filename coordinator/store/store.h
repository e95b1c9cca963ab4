// The coordinator's durable memory: the rollout (goal, pause/halt, the move in flight, each node's
// last known state) and an append-only audit history, in one SQLite database in the coordinator's
// state dir. Every Commit is one SQLite transaction (WAL, synchronous=FULL): after a crash the
// database holds the last committed rollout and every history entry committed with it, or nothing
// of a commit that did not finish.
//
// Thread safety: a Store is used by one thread at a time (the coordinator serialises its calls).
#ifndef HANDOFF_COORDINATOR_STORE_STORE_H_
#define HANDOFF_COORDINATOR_STORE_STORE_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "proto/vocabulary/node_state.h"
#include "proto/vocabulary/strategy.h"

namespace handoff::store {

// A move sent to an agent whose result has not been recorded.
struct InFlight {
  std::string command_id;
  std::string node;
  NodeState from = NodeState::kInconsistent;
  NodeState to = NodeState::kInconsistent;
  int64_t sent_unix_ms = 0;
};

// What the coordinator remembers of one node between runs, and only that: its connection,
// health and facts are its agent's to say again after a restart. The controller's record of a
// node (RolloutController::Node) extends it with those; the engine reads a third shape of its
// own (rollout::NodeStatus).
struct StoredNode {
  std::string name;
  NodeState state = NodeState::kInconsistent;  // as last reported
  // The state the node was in when the current goal was set (progress is counted from it).
  NodeState goal_start = NodeState::kInconsistent;
  std::string last_result;  // one line, "" before any
};

// What the coordinator remembers of one worker (a Node without the control-plane role whose
// agent said hello), one row each: a commit writes only the workers it is given, so that what it
// costs grows with what changed, never with the fleet.
struct StoredWorker : StoredNode {
  std::string zone;                   // its instance's availability zone; "" when not known
  std::optional<InFlight> in_flight;  // its move sent and not answered (node == name)
  std::string failure;                // why its last move failed since the goal; "" when none
  // A replacement asked it to leave (rollout/worker_replacement.h: asked for good).
  bool leaving = false;
};

// The workers a commit changes; the others stay as stored.
struct WorkerChanges {
  std::vector<StoredWorker> write;
  std::vector<std::string> forget;  // by name
};

// How the rollout moves the nodes (proto/vocabulary/strategy.h), stored by its name:
// "leader-migration", "downtime" or "replace".
using ::handoff::Strategy;

// When the downtime path's outage began and when each part of it ended, as the coordinator
// measured them (Unix milliseconds; 0 = not yet).
struct DowntimeMarks {
  int64_t all_stopped_unix_ms = 0;              // every kube-controller-manager stopped
  int64_t controller_manager_back_unix_ms = 0;  // kube-controller-manager running again
  int64_t cloud_controllers_back_unix_ms = 0;   // the cloud-controller-manager running
};

struct StoredRollout {
  std::string rollout_id;         // "" until the first Start
  std::optional<NodeState> goal;  // unset before the first Start
  Strategy strategy = Strategy::kLeaderMigration;
  DowntimeMarks downtime;  // set by the downtime strategy only
  bool paused = false;
  bool halted = false;
  std::string halt_reason;
  std::optional<InFlight> in_flight;
  int64_t next_command_sequence = 1;  // for "<rollout_id>-<sequence>" command ids
  int64_t revision = 0;               // the status revision last shown
  std::string settings_yaml;          // the settings the rollout was started with
  std::vector<StoredNode> nodes;      // in rollout order: the members now
  // The nodes the membership began as (the coordinator's --nodes), once operators have added or
  // removed one since; empty while it never changed. One name per line in the database.
  std::vector<std::string> launch_nodes;
  // The replace strategy's control-plane size (the members when its goal was set); 0 otherwise.
  size_t replace_size = 0;
  // The member the replace strategy asked to leave, until it has left; "" when none
  // (rollout/replacement.h: it is the replacement's next step whatever its agent reports).
  std::string replace_leaving;
  // The workers' batches (rollout/worker_rollout.h): --max-unavailable as given ("3", "10%")
  // and the failed workers that pause the rollout.
  std::string worker_max_unavailable = "1";
  int64_t worker_failure_budget = 1;
  // The replace strategy's worker count to keep (the workers when its goal was set); 0 otherwise.
  size_t worker_replace_size = 0;
};

struct HistoryEntry {
  int64_t sequence = 0;  // assigned by the store on commit (1, 2, ...); ignored on input
  int64_t unix_ms = 0;
  std::string actor;  // operator CN, node name, or "coordinator"
  std::string kind;   // "start", "pause", "command", "result", "connect", ...
  std::string node;
  std::string command_id;
  std::string message;
  std::string detail_json;
};

struct StoreOptions {
  // How long a statement waits for a lock held by another connection to the same file (an
  // operator's sqlite3 shell, say) before failing with kUnavailable; 0 fails at once.
  int busy_timeout_ms = 5000;
};

// Errors name the database file, what failed and SQLite's message. Codes: kNotFound (the directory
// does not exist), kPermissionDenied, kUnavailable (locked by another connection), kDataLoss (not
// a handoff database, or damaged), kFailedPrecondition (newer schema, or not a regular file),
// kResourceExhausted (disk full), kInternal (anything else).
class Store {
 public:
  // Opens the database at `path` (its directory must exist).
  //
  // A missing file is created whole: the schema is built in a temporary file beside it, which is
  // then linked into place, so that a crash while creating leaves no database or a complete empty
  // one, never an empty or half-made file that a later start would take for a damaged one.
  //
  // An existing file must be a whole handoff database, because the rollout's goal, pause, the
  // move in flight and the history live nowhere else: it is checked before anything is written
  // to it and refused with kDataLoss, naming the file and the damage, when it is empty (a bad
  // restore, a truncating copy), not a SQLite file, fails SQLite's integrity check (a truncated
  // or overwritten file), holds no handoff schema, or holds a row that does not decode (the
  // rollout, a node, or a history entry: named by its sequence). The file is left as it was.
  // A database written by a newer schema version is refused with kFailedPrecondition (naming
  // both versions). A write-ahead log <path>-wal without the database is refused with kDataLoss
  // too: a new database beside it would take the old log's pages for its own.
  //
  // A database of an older schema version is upgraded in place to version 6 once the checks of
  // its file and schema pass: version 1 (a coordinator that knew only Leader Migration) gains the
  // strategy (leader-migration) and the downtime marks (0), versions 1 and 2 the launch nodes
  // (none: their membership never changed), versions 1 to 3 the replacement's size (0: none
  // replaced nodes), versions 1 to 4 the node a replacement asked to leave (none), versions 1 to 5
  // the workers (none) and the rollout's worker policy (one at a time, a failure budget of 1);
  // the schema version becomes 6 and the rows are decoded, all in one SQLite transaction, so
  // that a crash or a row that does not decode leaves the database as it was. A version 6
  // database is not touched.
  static absl::StatusOr<std::unique_ptr<Store>> Open(const std::string& path);
  static absl::StatusOr<std::unique_ptr<Store>> Open(const std::string& path,
                                                     const StoreOptions& options);

  virtual ~Store() = default;

  // The rollout as last committed; std::nullopt on a new database.
  virtual absl::StatusOr<std::optional<StoredRollout>> Load() = 0;

  // The workers as last committed, by name.
  virtual absl::StatusOr<std::vector<StoredWorker>> LoadWorkers() = 0;

  // Replaces the stored rollout with `rollout`, writes each worker of `workers.write` (a new one
  // added, a known one replaced), deletes those named in `workers.forget`, leaves every other
  // worker as it is, and appends `history`, in one transaction. Returns the entries as stored
  // (sequence numbers set). On error nothing of this commit is stored.
  virtual absl::StatusOr<std::vector<HistoryEntry>> Commit(
      const StoredRollout& rollout, const std::vector<HistoryEntry>& history,
      const WorkerChanges& workers = {}) = 0;

  // History entries with sequence > after_sequence, oldest first, at most `limit`
  // (limit > 0, else kInvalidArgument).
  virtual absl::StatusOr<std::vector<HistoryEntry>> History(int64_t after_sequence, int limit) = 0;

  // Deletes the history entries with sequence <= `through` (the coordinator's retention); the
  // others keep their numbers, and a number is never given again.
  virtual absl::Status ForgetHistoryThrough(int64_t through) = 0;
};

// Keeps a database Open refused beside it: renames `path`, then its -wal, -shm and -journal files
// when present, to "<path>.damaged-<UTC time>" (and that name with -wal, -shm, -journal), so
// that sqlite3 can still open the kept copy to save what it can; nothing is deleted. The
// database goes first: a crash part way leaves a log without a database, which Open refuses,
// never a database without its log, which Open might take for a sound, older one. The directory
// is fsynced. Returns the new name of the database file (or of its log, when there was only a
// log). kNotFound when none of the files exists. Call it only while no Store has the file open.
absl::StatusOr<std::string> SetAside(const std::string& path, absl::Time now);

}  // namespace handoff::store

#endif  // HANDOFF_COORDINATOR_STORE_STORE_H_
