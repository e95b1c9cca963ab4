#include "rehearsal/monitor/run_record.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <iterator>
#include <memory>
#include <set>
#include <string_view>
#include <tuple>
#include <utility>

#include "common/base/strings.h"
#include "nlohmann/json.hpp"

namespace handoff::sandbox {
namespace {

constexpr const char* kEvents[] = {kControllerStart, kControllerStop, kLeaseAcquired, kLeaseLost,
                                   kProcessStart,    kProcessExit,    kMonitorNote};
// The canonical controller names, indexed by leadermigration::CloudController.
constexpr const char* kControllers[] = {"route", "service", "cloud-node-lifecycle", "node-ipam"};
static_assert(std::size(kControllers) == std::size(leadermigration::kCloudControllers));

template <size_t N>
bool OneOf(const std::string& value, const char* const (&allowed)[N]) {
  for (const char* candidate : allowed) {
    if (value == candidate) return true;
  }
  return false;
}

template <size_t N>
std::string Quoted(const char* const (&allowed)[N]) {
  std::string out;
  for (const char* candidate : allowed) {
    StrAppend(&out, out.empty() ? "" : ", ", "\"", candidate, "\"");
  }
  return out;
}

absl::Status FieldError(std::string_view field, std::string_view problem) {
  return absl::InvalidArgumentError(StrCat("field \"", field, "\": ", problem));
}

std::string TypeName(const nlohmann::json& value) { return value.type_name(); }

absl::Status ReadInteger(const nlohmann::json& object, const char* field, int64_t* out) {
  const auto it = object.find(field);
  if (it == object.end()) return FieldError(field, "missing");
  // A JSON number with a fraction or exponent ("1.5", "1e9") is a float here, not an integer;
  // t_ns must be exact to the nanosecond, so it is refused rather than rounded.
  if (it->is_number_unsigned()) {
    if (it->get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)) {
      return FieldError(field, "too large for a 64-bit integer");
    }
  } else if (!it->is_number_integer()) {
    return FieldError(field, StrCat("expected an integer, got ", TypeName(*it)));
  }
  *out = it->get<int64_t>();
  if (*out < 0) return FieldError(field, StrCat("must not be negative, got ", *out));
  return absl::OkStatus();
}

// Absent is "".
absl::Status ReadString(const nlohmann::json& object, const char* field, std::string* out) {
  const auto it = object.find(field);
  if (it == object.end()) return absl::OkStatus();
  if (!it->is_string()) {
    return FieldError(field, StrCat("expected a string, got ", TypeName(*it)));
  }
  *out = it->get<std::string>();
  return absl::OkStatus();
}

absl::Status RequireNonEmpty(std::string_view field, const std::string& value,
                             std::string_view why) {
  if (value.empty()) return FieldError(field, StrCat("missing or empty; required ", why));
  return absl::OkStatus();
}

absl::Status ValidateRecord(const RunRecord& record) {
  if (record.event.empty()) return FieldError("event", "missing or empty");
  if (!OneOf(record.event, kEvents)) {
    return FieldError(
        "event", StrCat("unknown event \"", record.event, "\"; expected one of ", Quoted(kEvents)));
  }
  if (record.event != kMonitorNote) {
    const std::string why = StrCat("on ", record.event);
    if (absl::Status s = RequireNonEmpty("node", record.node, why); !s.ok()) return s;
    if (absl::Status s = RequireNonEmpty("component", record.component, why); !s.ok()) return s;
  }
  const bool controller_event = record.event == kControllerStart || record.event == kControllerStop;
  if (controller_event) {
    if (absl::Status s =
            RequireNonEmpty("controller", record.controller, StrCat("on ", record.event));
        !s.ok()) {
      return s;
    }
  }
  // A per-version name ("route-controller", "node-route-controller") from one component and the
  // canonical one from another would be two different controllers to the monitor, which would
  // then miss exactly the overlap it exists to find.
  if (!record.controller.empty() && !OneOf(record.controller, kControllers)) {
    return FieldError("controller", StrCat("unknown controller \"", record.controller,
                                           "\"; expected a canonical name: ", Quoted(kControllers),
                                           " (map per-version names with ControllerName)"));
  }
  if (record.event == kControllerStart && record.lock != kMainLock &&
      record.lock != kMigrationLock) {
    return FieldError("lock", StrCat("expected \"", kMainLock, "\" or \"", kMigrationLock, "\" on ",
                                     kControllerStart, ", got \"", record.lock, "\""));
  }
  return absl::OkStatus();
}

}  // namespace

std::string_view CanonicalControllerName(leadermigration::CloudController controller) {
  return kControllers[static_cast<size_t>(controller)];
}

bool operator==(const RunRecord& a, const RunRecord& b) {
  auto fields = [](const RunRecord& r) {
    return std::tie(r.t_ns, r.node, r.component, r.pid, r.event, r.controller, r.lock, r.lease,
                    r.reason, r.status, r.message);
  };
  return fields(a) == fields(b);
}

std::string FormatRunRecord(const RunRecord& record) {
  // ordered_json keeps the documented field order, so that the files read well with `cat`.
  nlohmann::ordered_json line;
  line["t_ns"] = record.t_ns;
  line["node"] = record.node;
  line["component"] = record.component;
  line["pid"] = record.pid;
  line["event"] = record.event;
  const std::pair<const char*, const std::string*> optional_fields[] = {
      {"controller", &record.controller}, {"lock", &record.lock},     {"lease", &record.lease},
      {"reason", &record.reason},         {"status", &record.status}, {"message", &record.message}};
  for (const auto& [name, value] : optional_fields) {
    if (!value->empty()) line[name] = *value;
  }
  // dump() escapes control characters, so the line never contains a '\n' of its own; `replace`
  // instead of the default `strict` because a monitor-note carrying stray bytes must not throw.
  return line.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

absl::StatusOr<RunRecord> ParseRunRecord(const std::string& line) {
  // nlohmann keeps the last of repeated keys without a word; the callback sees every key of the
  // top-level object (depth 1) as it is parsed.
  std::set<std::string> seen_keys;
  std::string repeated_key;
  const nlohmann::json::parser_callback_t note_keys =
      [&](int depth, nlohmann::json::parse_event_t event, nlohmann::json& parsed) {
        if (event == nlohmann::json::parse_event_t::key && depth == 1 && parsed.is_string()) {
          if (!seen_keys.insert(parsed.get<std::string>()).second && repeated_key.empty()) {
            repeated_key = parsed.get<std::string>();
          }
        }
        return true;
      };
  nlohmann::json object;
  try {
    object = nlohmann::json::parse(line, note_keys);
  } catch (const nlohmann::json::exception& e) {
    return absl::InvalidArgumentError(StrCat("not JSON: ", e.what()));
  }
  if (!object.is_object()) {
    return absl::InvalidArgumentError(StrCat("expected a JSON object, got ", TypeName(object)));
  }
  if (!repeated_key.empty()) return FieldError(repeated_key, "given more than once");
  static constexpr const char* kKnownFields[] = {"t_ns",   "node",       "component", "pid",
                                                 "event",  "controller", "lock",      "lease",
                                                 "reason", "status",     "message"};
  for (const auto& item : object.items()) {
    if (!OneOf(item.key(), kKnownFields)) return FieldError(item.key(), "unknown field");
  }

  RunRecord record;
  if (absl::Status s = ReadInteger(object, "t_ns", &record.t_ns); !s.ok()) return s;
  if (absl::Status s = ReadInteger(object, "pid", &record.pid); !s.ok()) return s;
  const std::pair<const char*, std::string*> string_fields[] = {
      {"node", &record.node},      {"component", &record.component},
      {"event", &record.event},    {"controller", &record.controller},
      {"lock", &record.lock},      {"lease", &record.lease},
      {"reason", &record.reason},  {"status", &record.status},
      {"message", &record.message}};
  for (const auto& [name, value] : string_fields) {
    if (absl::Status s = ReadString(object, name, value); !s.ok()) return s;
  }
  if (absl::Status s = ValidateRecord(record); !s.ok()) return s;
  return record;
}

absl::Status AppendRunRecord(const std::string& path, const RunRecord& record) {
  const std::string line = FormatRunRecord(record) + "\n";
  const int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return absl::InternalError(StrCat("open ", path, ": ", std::strerror(errno)));
  // The whole line, newline included, in ONE write(2). With O_APPEND the kernel moves to the end
  // of the file and writes as one step, and Linux holds the inode lock for the whole of a
  // regular-file write, so lines from concurrent writers (the stand-ins and the kubelet share a
  // node's file) land one after another, never inside each other. Writing the text and the '\n'
  // separately, or through a stdio buffer that flushes at its own boundaries, would let another
  // writer's line in between; and a writer killed between two writes would leave a line without
  // its '\n' for the next writer to glue its own line onto, corrupting a line in the middle.
  ssize_t written;
  do {
    written = ::write(fd, line.data(), line.size());
  } while (written < 0 && errno == EINTR);  // EINTR means nothing was written: retry whole.
  const int write_errno = errno;
  if (written < 0) {
    ::close(fd);
    return absl::InternalError(StrCat("write ", path, ": ", std::strerror(write_errno)));
  }
  if (static_cast<size_t>(written) != line.size()) {
    // The rest cannot be written after the fact: another writer's line may already follow.
    ::close(fd);
    return absl::DataLossError(StrCat("write ", path, ": short write, ", written, " of ",
                                      line.size(), " bytes; the file now ends in a torn line"));
  }
  if (::close(fd) != 0) {
    return absl::InternalError(StrCat("close ", path, ": ", std::strerror(errno)));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<RunRecord>> ReadRunRecords(const FileSystem& fs,
                                                      const std::string& dir) {
  absl::StatusOr<std::vector<std::string>> names = fs.ListDirectory(dir);
  if (!names.ok()) return names.status();
  std::vector<RunRecord> records;
  for (const std::string& name : *names) {
    if (!EndsWith(name, ".jsonl")) continue;
    const std::string path = EndsWith(dir, "/") ? dir + name : StrCat(dir, "/", name);
    absl::StatusOr<std::string> content = fs.ReadFile(path);
    if (!content.ok()) return content.status();
    std::string_view rest = *content;
    int line_number = 0;
    // Only text up to the last '\n': the remainder is a line still being written (a reader can
    // see part of a concurrent write) or the stub of a writer that died mid-write.
    while (true) {
      const size_t end = rest.find('\n');
      if (end == std::string_view::npos) break;
      ++line_number;
      const std::string line(rest.substr(0, end));
      rest.remove_prefix(end + 1);
      if (StripWhitespace(line).empty()) {
        return absl::InvalidArgumentError(StrCat(path, ":", line_number, ": empty line"));
      }
      absl::StatusOr<RunRecord> record = ParseRunRecord(line);
      if (!record.ok()) {
        return absl::Status(record.status().code(),
                            StrCat(path, ":", line_number, ": ", record.status().message()));
      }
      records.push_back(*std::move(record));
    }
  }
  return records;
}

absl::StatusOr<std::vector<RunRecord>> ReadRunRecords(const std::string& dir) {
  const std::unique_ptr<FileSystem> fs = NewPosixFileSystem("/");
  return ReadRunRecords(*fs, dir);
}

}  // namespace handoff::sandbox
