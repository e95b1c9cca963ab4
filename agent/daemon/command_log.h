// The agent's record of the moves the coordinator asked of it, kept in the node's state dir so
// that a move is carried out at most once and its outcome survives the agent:
//   <state_dir>/commands/<command id>.json
// A move is recorded "started", durably, before it begins, and "finished" with its
// CommandResult once it is done; a record still "started" when the agent starts means the agent
// died mid-move. The newest kCommandLogKeep records are kept.
#ifndef HANDOFF_AGENT_DAEMON_COMMAND_LOG_H_
#define HANDOFF_AGENT_DAEMON_COMMAND_LOG_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/fs/file_system.h"
#include "handoff/v1/handoff.pb.h"

namespace handoff {

inline constexpr size_t kCommandLogKeep = 64;

// The largest sequence a record may have: 2^53 - 1, the largest integer every JSON reader holds
// exactly. The agent numbers one record per move, so a record near it was edited by hand; Open
// refuses one beyond it as damaged rather than wrap round.
inline constexpr int64_t kMaxCommandSequence = (int64_t{1} << 53) - 1;

struct CommandRecord {
  std::string id;
  int64_t sequence = 0;  // the order records were made in, from 1
  bool finished = false;
  v1::NodeState from = v1::NODE_STATE_UNSPECIFIED;
  v1::NodeState to = v1::NODE_STATE_UNSPECIFIED;
  int64_t started_unix_ms = 0;
  v1::CommandResult result;  // set when finished
};

// Not thread-safe. Borrows the file system, which must outlive the log.
class CommandLog {
 public:
  // Reads every record under `state_dir`. DataLoss, naming the file, for a record that does not
  // parse or whose sequence is not between 1 and kMaxCommandSequence (records are written with
  // AtomicReplace, so only a hand edit makes one): the agent cannot tell whether it was a move in
  // progress and will not guess.
  static absl::StatusOr<CommandLog> Open(FileSystem& fs, const std::string& state_dir);

  // Whether `id` can name a record: 1 to 200 of [A-Za-z0-9._-], not starting with ".". Ids are
  // "<rollout>-<sequence>"; anything else would let a command name a path.
  static bool IsValidId(std::string_view id);

  // Every record, oldest first.
  std::vector<CommandRecord> Records() const;

  // Records that the move `id` is about to begin; durable when OK. FailedPrecondition, naming
  // the directory, when a record already holds kMaxCommandSequence (RecordFinished likewise for a
  // record it has to create).
  absl::Status RecordStarted(const std::string& id, const v1::MoveRequest& move, absl::Time now);
  // Replaces the record of `id` (started or not) with its result; durable when OK.
  absl::Status RecordFinished(const std::string& id, const v1::CommandResult& result);
  // Removes the oldest finished records beyond `keep`. Records of moves not finished stay.
  absl::Status Prune(size_t keep = kCommandLogKeep);

  std::string PathOf(const std::string& id) const;

 private:
  CommandLog(FileSystem& fs, std::string directory) : fs_(&fs), directory_(std::move(directory)) {}
  absl::Status Write(const CommandRecord& record);
  // OK when last_sequence_ + 1 is still a sequence.
  absl::Status NextSequenceLeft() const;

  FileSystem* fs_;
  std::string directory_;
  std::map<std::string, CommandRecord> records_;  // by id
  int64_t last_sequence_ = 0;
};

}  // namespace handoff

#endif  // HANDOFF_AGENT_DAEMON_COMMAND_LOG_H_
