#include "rehearsal/monitor/klog_scanner.h"

#include <algorithm>
#include <utility>

#include "absl/time/civil_time.h"
#include "common/base/strings.h"

namespace handoff::sandbox {
namespace {

// The texts, as the upstream sources write them (see the header for where).
constexpr std::string_view kStartedPrefix = "Started \"";
constexpr std::string_view kStartingLeaderMigration = "starting leader migration";
constexpr std::string_view kVersionPrefix = "Version: ";
constexpr std::string_view kAttemptingPrefix = "attempting to acquire leader lease ";
constexpr std::string_view kAttemptingSuffix = "...";
constexpr std::string_view kAcquiredPrefix = "successfully acquired lease ";
constexpr std::string_view kLeaderElectionLost = "leaderelection lost";
constexpr std::string_view kMigrationLeaderElectionLost = "migration leaderelection lost";

// How many of a file's first bytes identify it: with the klog header's time to the microsecond
// and the pid, a replacement file that starts with the same 64 bytes is not a practical concern.
constexpr size_t kHeadBytes = 64;

bool ReadDigits(std::string_view text, size_t at, size_t count, int* out) {
  if (at + count > text.size()) return false;
  int value = 0;
  for (size_t i = at; i < at + count; ++i) {
    if (text[i] < '0' || text[i] > '9') return false;
    value = value * 10 + (text[i] - '0');
  }
  *out = value;
  return true;
}

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// klog.ErrorS/InfoS quote the message (strconv.Quote); Infof does not. Either form matches.
bool MessageIs(std::string_view message, std::string_view text) {
  if (message == text) return true;
  return message.size() == text.size() + 2 && message.front() == '"' && message.back() == '"' &&
         message.substr(1, text.size()) == text;
}

}  // namespace

std::optional<KlogLine> ParseKlogLine(std::string_view line, absl::Time now) {
  // "I0102 15:04:05.123456       1 controllermanager.go:622] Started \"route\""
  //  0    5  8  11 14     21      29
  if (line.size() < 22) return std::nullopt;
  KlogLine out;
  out.severity = line[0];
  if (out.severity != 'I' && out.severity != 'W' && out.severity != 'E' && out.severity != 'F') {
    return std::nullopt;
  }
  int month, day, hour, minute, second, micros;
  if (!ReadDigits(line, 1, 2, &month) || !ReadDigits(line, 3, 2, &day) || line[5] != ' ' ||
      !ReadDigits(line, 6, 2, &hour) || line[8] != ':' || !ReadDigits(line, 9, 2, &minute) ||
      line[11] != ':' || !ReadDigits(line, 12, 2, &second) || line[14] != '.' ||
      !ReadDigits(line, 15, 6, &micros) || line[21] != ' ') {
    return std::nullopt;
  }
  if (month < 1 || month > 12 || day < 1 || day > 31 || hour > 23 || minute > 59 || second > 59) {
    return std::nullopt;
  }

  size_t at = 22;
  while (at < line.size() && line[at] == ' ') ++at;
  const size_t pid_begin = at;
  while (at < line.size() && IsDigit(line[at])) ++at;
  if (at == pid_begin || at - pid_begin > 18 || at >= line.size() || line[at] != ' ') {
    return std::nullopt;
  }
  out.pid = std::stoll(std::string(line.substr(pid_begin, at - pid_begin)));
  ++at;
  const size_t close = line.find("] ", at);
  if (close == std::string_view::npos) return std::nullopt;
  const std::string_view location = line.substr(at, close - at);
  const size_t colon = location.rfind(':');
  if (colon == std::string_view::npos || colon == 0 || colon + 1 == location.size() ||
      location.size() - colon - 1 > 9 || location.find(' ') != std::string_view::npos) {
    return std::nullopt;
  }
  for (size_t i = colon + 1; i < location.size(); ++i) {
    if (!IsDigit(location[i])) return std::nullopt;
  }
  out.file = std::string(location.substr(0, colon));
  out.source_line = std::stoi(std::string(location.substr(colon + 1)));
  out.message = std::string(line.substr(close + 2));

  // The year: the latest candidate no more than a day after now. absl::CivilSecond normalises
  // 29 February of a common year to 1 March, so a candidate whose fields changed does not exist.
  const absl::TimeZone utc = absl::UTCTimeZone();
  const absl::Time latest = now + absl::Hours(24);
  const int64_t now_year = absl::ToCivilYear(now, utc).year();
  std::optional<absl::Time> chosen;
  for (int64_t year = now_year + 1; year >= now_year - 1 && !chosen; --year) {
    const absl::CivilSecond civil(year, month, day, hour, minute, second);
    if (civil.month() != month || civil.day() != day) continue;
    const absl::Time candidate = absl::FromCivil(civil, utc) + absl::Microseconds(micros);
    if (candidate <= latest) chosen = candidate;
  }
  if (!chosen) return std::nullopt;
  out.t_ns = absl::ToUnixNanos(*chosen);
  return out;
}

std::optional<CriLogLine> ParseCriLogLine(std::string_view line) {
  // "2026-11-27T13:15:55.261817187Z stderr F I1127 13:15:55.261602       1 serving.go:348] ..."
  const size_t time_end = line.find(' ');
  if (time_end == std::string_view::npos || time_end < 20 || line[time_end - 1] != 'Z') {
    return std::nullopt;
  }
  const size_t stream_end = line.find(' ', time_end + 1);
  if (stream_end == std::string_view::npos) return std::nullopt;
  const std::string_view stream = line.substr(time_end + 1, stream_end - time_end - 1);
  if (stream != "stdout" && stream != "stderr") return std::nullopt;
  const size_t tags_end = line.find(' ', stream_end + 1);
  const std::string_view tags =
      line.substr(stream_end + 1, tags_end == std::string_view::npos ? std::string_view::npos
                                                                     : tags_end - stream_end - 1);
  const std::string_view first_tag = tags.substr(0, tags.find(':'));
  if (first_tag != "P" && first_tag != "F") return std::nullopt;
  CriLogLine out;
  absl::Time written;
  std::string error;
  if (!absl::ParseTime("%Y-%m-%dT%H:%M:%E*SZ", std::string(line.substr(0, time_end)),
                       absl::UTCTimeZone(), &written, &error)) {
    return std::nullopt;
  }
  out.t_ns = absl::ToUnixNanos(written);
  out.partial = first_tag == "P";
  out.text = tags_end == std::string_view::npos ? std::string_view() : line.substr(tags_end + 1);
  return out;
}

PodLogScanner::PodLogScanner(ManagerLogSource source) : source_(std::move(source)) {
  std::optional<leadermigration::Config> config = source_.migration_config;
  if (!config) {
    // Before 1.22 there is no default, and a manager without a configuration does not migrate.
    absl::StatusOr<leadermigration::Config> fallback =
        leadermigration::DefaultConfig(source_.component, source_.version);
    if (fallback.ok()) config = *std::move(fallback);
  }
  if (config) {
    for (const leadermigration::ControllerLeader& leader : config->controller_leaders) {
      migration_listed_.insert(leader.name);
    }
  }
}

std::vector<RunRecord> PodLogScanner::Scan(std::string_view content, absl::Time now) {
  // The kubelet only appends to a pod log; a file that shrank or starts differently is another
  // file at the same path (a node root wiped and rebuilt), read from its start.
  if (static_cast<int64_t>(content.size()) < offset_ || !StartsWith(content, head_)) {
    offset_ = 0;
    head_.clear();
    partial_.clear();
    pid_.reset();
    processes_.clear();
  }
  if (head_.size() < kHeadBytes) head_ = std::string(content.substr(0, kHeadBytes));

  std::vector<RunRecord> out;
  std::string_view rest = content.substr(static_cast<size_t>(offset_));
  while (true) {
    const size_t end = rest.find('\n');
    if (end == std::string_view::npos) break;
    const std::string_view line = rest.substr(0, end);
    if (!source_.cri) {
      ScanLine(line, now, &out);
    } else if (std::optional<CriLogLine> cri = ParseCriLogLine(line)) {
      if (cri->t_ns > absl::ToUnixNanos(now - source_.hold_back)) break;  // too young yet
      partial_.append(cri->text);
      if (!cri->partial) {
        ScanLine(partial_, now, &out);
        partial_.clear();
      }
    }
    rest.remove_prefix(end + 1);
    offset_ += static_cast<int64_t>(end + 1);
  }
  return out;
}

RunRecord PodLogScanner::Record(const KlogLine& line, const char* event) const {
  RunRecord record;
  record.t_ns = line.t_ns;
  record.node = source_.node;
  record.component = std::string(leadermigration::ComponentName(source_.component));
  record.pid = pid_.value_or(line.pid);
  record.event = event;
  return record;
}

void PodLogScanner::ScanLine(std::string_view text, absl::Time now, std::vector<RunRecord>* out) {
  std::optional<KlogLine> line = ParseKlogLine(text, now);
  if (!line) return;
  const std::string_view message = line->message;

  // A process logs its version first thing (a line or two after start): a new process of the
  // file from here on.
  if (source_.pid_at && (!pid_ || StartsWith(message, kVersionPrefix))) {
    pid_ = source_.pid_at(line->t_ns);
  }
  if (StartsWith(message, kVersionPrefix) || MessageIs(message, kStartingLeaderMigration)) {
    processes_.erase(line->pid);
    if (!StartsWith(message, kVersionPrefix)) processes_[line->pid].migration_enabled = true;
    return;
  }
  ProcessState& process = processes_[line->pid];

  if (StartsWith(message, kAttemptingPrefix) && EndsWith(message, kAttemptingSuffix)) {
    std::string lease(message.substr(
        kAttemptingPrefix.size(),
        message.size() - kAttemptingPrefix.size() - kAttemptingSuffix.size()));
    if (lease == process.main_lease) process = ProcessState{};  // a new process, same pid
    // The migration lease is attempted only after the main lease is held (KEP-2436: both
    // managers wait for MigrationReady), so the first lease a process attempts is its main one.
    if (process.main_lease.empty()) {
      process.main_lease = std::move(lease);
    } else {
      process.migration_lease = std::move(lease);
    }
    return;
  }
  if (StartsWith(message, kAcquiredPrefix)) {
    RunRecord record = Record(*line, kLeaseAcquired);
    record.lease = std::string(message.substr(kAcquiredPrefix.size()));
    out->push_back(std::move(record));
    return;
  }
  if (MessageIs(message, kLeaderElectionLost)) {
    RunRecord record = Record(*line, kLeaseLost);
    record.lease = process.main_lease;
    out->push_back(std::move(record));
    return;
  }
  if (MessageIs(message, kMigrationLeaderElectionLost)) {
    RunRecord record = Record(*line, kLeaseLost);
    record.lease = process.migration_lease;
    out->push_back(std::move(record));
    return;
  }
  // klog.Infof("Started %q", controllerName): controller names never need Go escapes.
  if (line->severity == 'I' && StartsWith(message, kStartedPrefix) && EndsWith(message, "\"") &&
      message.size() > kStartedPrefix.size() + 1) {
    const std::string_view name =
        message.substr(kStartedPrefix.size(), message.size() - kStartedPrefix.size() - 1);
    for (leadermigration::CloudController controller : leadermigration::kCloudControllers) {
      if (leadermigration::ControllerName(source_.component, source_.version, controller) !=
          name) {
        continue;
      }
      RunRecord record = Record(*line, kControllerStart);
      record.controller = std::string(CanonicalControllerName(controller));
      record.lock = process.migration_enabled && migration_listed_.count(std::string(name)) > 0
                        ? kMigrationLock
                        : kMainLock;
      out->push_back(std::move(record));
      return;
    }
  }
}

LogRecordsPump::LogRecordsPump(const FileSystem& fs, std::string records_dir)
    : LogRecordsPump(fs, std::move(records_dir),
                     [](const std::string& path, const RunRecord& record) {
                       return AppendRunRecord(path, record);
                     }) {}

LogRecordsPump::LogRecordsPump(const FileSystem& fs, std::string records_dir,
                               RunRecordAppender append)
    : fs_(fs), records_dir_(std::move(records_dir)), append_(std::move(append)) {}

void LogRecordsPump::AddSource(ManagerLogSource source) {
  PodLogScanner scanner(source);
  followed_.push_back(Followed{std::move(source), std::move(scanner), {}});
}

std::string LogRecordsPump::RecordsPath(const std::string& node) const {
  return StrCat(records_dir_, EndsWith(records_dir_, "/") ? "" : "/", node, ".manager-logs.jsonl");
}

absl::Status LogRecordsPump::Poll(absl::Time now) {
  absl::Status first_error;
  for (Followed& followed : followed_) {
    absl::StatusOr<std::string> content = fs_.ReadFile(followed.source.path);
    if (content.ok()) {
      for (RunRecord& record : followed.scanner.Scan(*content, now)) {
        followed.pending.push_back(std::move(record));
      }
    } else if (!absl::IsNotFound(content.status())) {
      first_error.Update(absl::Status(content.status().code(),
                                      StrCat("reading pod log ", followed.source.path, ": ",
                                             content.status().message())));
    }
    // Queued records go out even when the log could not be read this time: they were scanned
    // on an earlier poll and wait only for their append.
    const std::string path = RecordsPath(followed.source.node);
    while (!followed.pending.empty()) {
      if (absl::Status appended = append_(path, followed.pending.front()); !appended.ok()) {
        first_error.Update(appended);
        break;
      }
      followed.pending.pop_front();
      ++appended_;
    }
  }
  return first_error;
}

}  // namespace handoff::sandbox
