// How the daemons log (handoff-agent run, handoff-coordinator): one spdlog logger whose sink is
// chosen by --log-format:
//   text     one line per message on stderr, in the daemon's own pattern;
//   json     one JSON object per line on stderr: {"time","level","logger","msg"} and "node" when
//            the daemon knows its node;
//   journal  straight to journald with structured fields: MESSAGE, PRIORITY (syslog levels),
//            SYSLOG_IDENTIFIER (the daemon), HANDOFF_NODE (when known);
//   auto     journal when stderr is the journal (run by systemd: JOURNAL_STREAM names stderr's
//            device and inode, as systemd.exec(5) documents), text otherwise.
#ifndef HANDOFF_COMMON_SYSTEM_LOG_SETUP_H_
#define HANDOFF_COMMON_SYSTEM_LOG_SETUP_H_

#include <unistd.h>

#include <iosfwd>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "spdlog/logger.h"

namespace handoff {

enum class LogFormat { kAuto, kText, kJson, kJournal };

// The values --log-format takes, for CLI11's IsMember and the help.
inline const std::vector<std::string>& LogFormatNames() {
  static const std::vector<std::string> kNames = {"auto", "text", "json", "journal"};
  return kNames;
}
inline constexpr char kLogFormatHelp[] =
    "Where and how to log: text (lines on stderr), json (one JSON object per line on stderr: "
    "time, level, logger, msg), journal (journald, with PRIORITY, SYSLOG_IDENTIFIER and "
    "HANDOFF_NODE fields), auto (journal when stderr is the journal, as under systemd; text "
    "otherwise)";

// "auto", "text", "json" or "journal"; anything else is InvalidArgument naming the flag.
absl::StatusOr<LogFormat> ParseLogFormat(const std::string& value);

// Whether `journal_stream` (JOURNAL_STREAM's value, "<device>:<inode>"; null when unset) names
// the file open on `fd`. A child whose stderr was redirected inherits the variable but not the
// stream, hence the comparison. False for a bad fd or value.
bool IsJournalStream(const char* journal_stream, int fd);

// One journald entry's fields ("MESSAGE=...", "PRIORITY=6", ...). The real one is libsystemd's
// sd_journal_sendv; tests record the fields.
class JournalWriter {
 public:
  virtual ~JournalWriter() = default;
  // 0 when sent; a negative errno otherwise (then the line goes to stderr instead).
  virtual int Send(const std::vector<std::string>& fields) = 0;
  // Whether journald listens. libsystemd drops entries silently when its socket is absent (a
  // container, a host without systemd): the logger then writes text instead.
  virtual bool Available() = 0;
};
std::unique_ptr<JournalWriter> NewSystemJournalWriter();

struct LogOptions {
  std::string name;  // the logger's name; SYSLOG_IDENTIFIER and "logger" too
  LogFormat format = LogFormat::kAuto;
  // Where text and json lines go, and where journal entries go that journald refused. Null: the
  // process's stderr (text in colour on a terminal).
  std::ostream* stream = nullptr;
  // The descriptor behind `stream` (auto compares it with JOURNAL_STREAM); -1: none.
  int stream_fd = STDERR_FILENO;
  // JOURNAL_STREAM's value (getenv); null when unset.
  const char* journal_stream = nullptr;
  // spdlog pattern of text lines; "" keeps spdlog's default ("[time] [name] [level] message").
  std::string text_pattern;
  // The node the daemon works for (HANDOFF_NODE, "node"); "" when it has none.
  std::string node;
  // Null: the system journal (NewSystemJournalWriter).
  std::shared_ptr<JournalWriter> journal;
};

// The daemon's logger, as `options` say. The format chosen for kAuto: see ChosenLogFormat. A
// journal that is not available gives text lines, the first of them saying so.
std::shared_ptr<spdlog::logger> MakeLogger(const LogOptions& options);
// kText, kJson or kJournal: what kAuto resolves to for `options`.
LogFormat ChosenLogFormat(const LogOptions& options);

}  // namespace handoff

#endif  // HANDOFF_COMMON_SYSTEM_LOG_SETUP_H_
