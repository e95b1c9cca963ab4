// The agent's command log (<state dir>/commands/<id>.json): a record that does not parse stops the
// agent with DataLoss, never a crash; a record that parses is written back unchanged (the agent
// rewrites records as moves finish) and a new move can be recorded after it, unless the record
// holds the last sequence (then the move is refused and nothing written).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "agent/daemon/command_log.h"
#include "google/protobuf/util/message_differencer.h"
#include "tests/fuzz/fuzz_check.h"
#include "tests/support/memory_file_system.h"

namespace handoff {
namespace {

constexpr char kStateDir[] = "/var/lib/handoff";

bool SameRecord(const CommandRecord& a, const CommandRecord& b) {
  return a.id == b.id && a.sequence == b.sequence && a.finished == b.finished && a.from == b.from &&
         a.to == b.to && a.started_unix_ms == b.started_unix_ms &&
         google::protobuf::util::MessageDifferencer::Equals(a.result, b.result);
}

void FuzzOne(std::string_view text) {
  MemoryFileSystem fs;
  // Seeds name "rollout-1"; any other id in the file is refused as not matching its name.
  fs.SetFile(std::string(kStateDir) + "/commands/rollout-1.json", std::string(text), 0600);
  absl::StatusOr<CommandLog> log = CommandLog::Open(fs, kStateDir);
  if (!log.ok()) {
    FUZZ_CHECK(absl::IsDataLoss(log.status()), log.status().ToString());
    return;
  }
  const std::vector<CommandRecord> records = log->Records();
  FUZZ_CHECK(records.size() == 1, "one file, not one record");
  const CommandRecord& record = records.front();
  if (record.finished) {
    FUZZ_CHECK(log->RecordFinished(record.id, record.result).ok(), "rewrite failed");
    absl::StatusOr<CommandLog> reopened = CommandLog::Open(fs, kStateDir);
    FUZZ_CHECK(reopened.ok(), reopened.status().ToString() + "\nwritten:\n" +
                                  fs.files().at(log->PathOf(record.id)));
    FUZZ_CHECK(reopened->Records().size() == 1 && SameRecord(reopened->Records().front(), record),
               "the record changed when written back:\n" + fs.files().at(log->PathOf(record.id)));
  }
  v1::MoveRequest move;
  move.set_from(v1::NODE_STATE_IN_TREE);
  move.set_to(v1::NODE_STATE_PREPARED);
  const absl::Status started =
      log->RecordStarted("rollout-2", move, absl::FromUnixSeconds(1'700'000'000));
  if (record.sequence == kMaxCommandSequence) {
    // No sequence left for the new move: refused, and the log is left as it was.
    FUZZ_CHECK(absl::IsFailedPrecondition(started), started.ToString());
    FUZZ_CHECK(!fs.Exists(log->PathOf("rollout-2")), "a refused move was recorded");
    return;
  }
  FUZZ_CHECK(started.ok(), "recording a new move failed: " + started.ToString());
  absl::StatusOr<CommandLog> reopened = CommandLog::Open(fs, kStateDir);
  FUZZ_CHECK(reopened.ok(), reopened.status().ToString());
  const std::vector<CommandRecord> after = reopened->Records();
  FUZZ_CHECK(after.size() == 2 && after.back().id == "rollout-2" &&
                 after.back().sequence > record.sequence,
             "the new move is not the newest record");
  FUZZ_CHECK(reopened->Prune(0).ok(), "prune failed");
}

}  // namespace
}  // namespace handoff

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  handoff::FuzzOne(std::string_view(reinterpret_cast<const char*>(data), size));
  return 0;
}
