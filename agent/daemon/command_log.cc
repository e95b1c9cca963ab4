#include "agent/daemon/command_log.h"

#include <algorithm>

#include "common/base/strings.h"
#include "common/fs/atomic_file.h"
#include "google/protobuf/util/json_util.h"
#include "nlohmann/json.hpp"

namespace handoff {
namespace {

constexpr std::string_view kSuffix = ".json";
constexpr std::string_view kStarted = "started";
constexpr std::string_view kFinished = "finished";

std::string StateName(v1::NodeState state) { return v1::NodeState_Name(state); }

v1::NodeState StateFromName(const std::string& name) {
  v1::NodeState state = v1::NODE_STATE_UNSPECIFIED;
  if (!v1::NodeState_Parse(name, &state)) return v1::NODE_STATE_UNSPECIFIED;
  return state;
}

std::string Emit(const CommandRecord& record) {
  nlohmann::json json;
  json["id"] = record.id;
  json["sequence"] = record.sequence;
  json["phase"] = std::string(record.finished ? kFinished : kStarted);
  json["from"] = StateName(record.from);
  json["to"] = StateName(record.to);
  json["startedUnixMs"] = record.started_unix_ms;
  if (record.finished) {
    std::string result;
    google::protobuf::util::JsonPrintOptions options;
    options.preserve_proto_field_names = true;
    if (google::protobuf::util::MessageToJsonString(record.result, &result, options).ok()) {
      json["result"] = nlohmann::json::parse(result, nullptr, false);
    }
  }
  return json.dump(2) + "\n";
}

absl::StatusOr<CommandRecord> Parse(const std::string& text, const std::string& path) {
  auto damaged = [&](std::string_view why) {
    return absl::DataLossError(StrCat(
        path, ": ", why,
        "; the agent cannot tell whether this command was a move in progress. Check the node "
        "(handoff-agent status, backups), then remove the file"));
  };
  nlohmann::json json = nlohmann::json::parse(text, nullptr, false);
  if (json.is_discarded() || !json.is_object()) return damaged("not a JSON object");
  CommandRecord record;
  if (!json.contains("id") || !json["id"].is_string()) return damaged("no \"id\"");
  if (!json.contains("sequence") || !json["sequence"].is_number_integer()) {
    return damaged("no \"sequence\"");
  }
  // nlohmann reads a non-negative integer as unsigned, and get<int64_t> would wrap one past
  // INT64_MAX; a sequence past kMaxCommandSequence would leave the next one no room.
  const nlohmann::json& sequence = json["sequence"];
  const bool in_range =
      sequence.is_number_unsigned()
          ? sequence.get<uint64_t>() >= 1 &&
                sequence.get<uint64_t>() <= static_cast<uint64_t>(kMaxCommandSequence)
          : sequence.get<int64_t>() >= 1 && sequence.get<int64_t>() <= kMaxCommandSequence;
  if (!in_range) {
    return damaged(StrCat("\"sequence\" ", sequence.dump(), " is not between 1 and ",
                          kMaxCommandSequence));
  }
  if (!json.contains("phase") || !json["phase"].is_string()) return damaged("no \"phase\"");
  record.id = json["id"].get<std::string>();
  record.sequence = sequence.get<int64_t>();
  const std::string phase = json["phase"].get<std::string>();
  if (phase != kStarted && phase != kFinished) return damaged(StrCat("unknown phase ", phase));
  record.finished = phase == kFinished;
  if (json.contains("from") && json["from"].is_string()) {
    record.from = StateFromName(json["from"].get<std::string>());
  }
  if (json.contains("to") && json["to"].is_string()) {
    record.to = StateFromName(json["to"].get<std::string>());
  }
  if (json.contains("startedUnixMs") && json["startedUnixMs"].is_number_integer()) {
    record.started_unix_ms = json["startedUnixMs"].get<int64_t>();
  }
  if (record.finished) {
    if (!json.contains("result") || !json["result"].is_object()) return damaged("no \"result\"");
    google::protobuf::util::JsonParseOptions options;
    options.ignore_unknown_fields = true;  // a newer agent may have written more fields
    if (!google::protobuf::util::JsonStringToMessage(json["result"].dump(), &record.result, options)
             .ok()) {
      return damaged("\"result\" is not a CommandResult");
    }
  }
  return record;
}

}  // namespace

bool CommandLog::IsValidId(std::string_view id) {
  if (id.empty() || id.size() > 200 || id.front() == '.') return false;
  return std::all_of(id.begin(), id.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
           c == '_' || c == '-';
  });
}

absl::StatusOr<CommandLog> CommandLog::Open(FileSystem& fs, const std::string& state_dir) {
  CommandLog log(fs, StrCat(state_dir == "/" ? "" : state_dir, "/commands"));
  absl::StatusOr<std::vector<std::string>> names = fs.ListDirectory(log.directory_);
  if (!names.ok()) {
    if (absl::IsNotFound(names.status())) return log;
    return names.status();
  }
  for (const std::string& name : *names) {
    // AtomicReplace's temp files are dotfiles; a crash may leave one behind.
    if (StartsWith(name, ".") || !EndsWith(name, kSuffix)) continue;
    const std::string path = StrCat(log.directory_, "/", name);
    absl::StatusOr<std::string> text = fs.ReadFile(path, kCommandRecordRead);
    if (!text.ok()) return text.status();
    absl::StatusOr<CommandRecord> record = Parse(*text, path);
    if (!record.ok()) return record.status();
    if (StrCat(record->id, kSuffix) != name) {
      return absl::DataLossError(StrCat(path, ": names command ", record->id,
                                        ", not the one its file name says; remove the file"));
    }
    log.last_sequence_ = std::max(log.last_sequence_, record->sequence);
    const std::string id = record->id;
    log.records_[id] = *std::move(record);
  }
  return log;
}

std::vector<CommandRecord> CommandLog::Records() const {
  std::vector<CommandRecord> records;
  for (const auto& [id, record] : records_) records.push_back(record);
  std::sort(records.begin(), records.end(),
            [](const CommandRecord& a, const CommandRecord& b) { return a.sequence < b.sequence; });
  return records;
}

std::string CommandLog::PathOf(const std::string& id) const {
  return StrCat(directory_, "/", id, kSuffix);
}

absl::Status CommandLog::Write(const CommandRecord& record) {
  if (!IsValidId(record.id)) {
    return absl::InvalidArgumentError(StrCat("command id '", record.id, "' cannot name a record"));
  }
  absl::Status directory = EnsureDirectory(*fs_, directory_, 0700);
  if (!directory.ok()) return directory;
  return AtomicReplace(*fs_, PathOf(record.id), Emit(record), FileInfo{false, 0600, 0, 0});
}

absl::Status CommandLog::NextSequenceLeft() const {
  if (last_sequence_ < kMaxCommandSequence) return absl::OkStatus();
  return absl::FailedPreconditionError(
      StrCat(directory_, ": a record has sequence ", last_sequence_,
             ", the last one the log can number; the agent made no such number of moves, so a "
             "record was edited. Check the node (handoff-agent status, backups), then remove the "
             "records in that directory"));
}

absl::Status CommandLog::RecordStarted(const std::string& id, const v1::MoveRequest& move,
                                       absl::Time now) {
  absl::Status left = NextSequenceLeft();
  if (!left.ok()) return left;
  CommandRecord record;
  record.id = id;
  record.sequence = last_sequence_ + 1;
  record.from = move.from();
  record.to = move.to();
  record.started_unix_ms = absl::ToUnixMillis(now);
  absl::Status written = Write(record);
  if (!written.ok()) return written;
  last_sequence_ = record.sequence;
  records_[id] = record;
  return absl::OkStatus();
}

absl::Status CommandLog::RecordFinished(const std::string& id, const v1::CommandResult& result) {
  CommandRecord record;
  auto it = records_.find(id);
  if (it != records_.end()) {
    record = it->second;
  } else {
    absl::Status left = NextSequenceLeft();
    if (!left.ok()) return left;
    record.id = id;
    record.sequence = last_sequence_ + 1;
  }
  record.finished = true;
  record.result = result;
  absl::Status written = Write(record);
  if (!written.ok()) return written;
  last_sequence_ = std::max(last_sequence_, record.sequence);
  records_[id] = record;
  return absl::OkStatus();
}

absl::Status CommandLog::Prune(size_t keep) {
  std::vector<CommandRecord> records = Records();
  auto finished = static_cast<size_t>(std::count_if(
      records.begin(), records.end(), [](const CommandRecord& r) { return r.finished; }));
  for (const CommandRecord& record : records) {
    if (finished <= keep) break;
    if (!record.finished) continue;
    absl::Status removed = DurableRemove(*fs_, PathOf(record.id));
    if (!removed.ok()) return removed;
    records_.erase(record.id);
    --finished;
  }
  return absl::OkStatus();
}

}  // namespace handoff
