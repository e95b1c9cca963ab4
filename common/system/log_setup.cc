#include "common/system/log_setup.h"

#include <sys/stat.h>
#include <sys/uio.h>
#include <syslog.h>

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <iostream>
#include <mutex>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "nlohmann/json.hpp"
#include "spdlog/sinks/base_sink.h"
#include "spdlog/sinks/ostream_sink.h"
#include "spdlog/sinks/stdout_color_sinks.h"

// Without it sd-journal.h's sd_journal_sendv macro adds CODE_FILE/CODE_LINE of this file, which
// says nothing about the message.
#define SD_JOURNAL_SUPPRESS_LOCATION
#include <systemd/sd-journal.h>

namespace handoff {
namespace {

int SyslogPriority(spdlog::level::level_enum level) {
  switch (level) {
    case spdlog::level::trace:
    case spdlog::level::debug:
      return LOG_DEBUG;
    case spdlog::level::info:
      return LOG_INFO;
    case spdlog::level::warn:
      return LOG_WARNING;
    case spdlog::level::err:
      return LOG_ERR;
    case spdlog::level::critical:
      return LOG_CRIT;
    default:
      return LOG_INFO;
  }
}

std::string Payload(const spdlog::details::log_msg& msg) {
  return std::string(msg.payload.data(), msg.payload.size());
}

// One JSON object per line. Each line is flushed: a reader (journald's stream, a log shipper)
// gets whole lines as they happen.
class JsonLineSink : public spdlog::sinks::base_sink<std::mutex> {
 public:
  JsonLineSink(std::ostream& out, std::string node) : out_(out), node_(std::move(node)) {}

 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    nlohmann::ordered_json line;
    line["time"] = absl::FormatTime("%Y-%m-%dT%H:%M:%E3SZ", absl::FromChrono(msg.time),
                                    absl::UTCTimeZone());
    const spdlog::string_view_t level = spdlog::level::to_string_view(msg.level);
    line["level"] = std::string(level.data(), level.size());
    line["logger"] = std::string(msg.logger_name.data(), msg.logger_name.size());
    line["msg"] = Payload(msg);
    if (!node_.empty()) line["node"] = node_;
    // A message may quote a file's bytes: invalid UTF-8 becomes U+FFFD rather than an exception.
    out_ << line.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace) << "\n";
    out_.flush();
  }
  void flush_() override { out_.flush(); }

 private:
  std::ostream& out_;
  const std::string node_;
};

// journald entries with the daemon's fields; a refused entry goes to `fallback` as a text line,
// so that nothing is lost (under systemd stderr is the journal too, without the fields).
class JournalSink : public spdlog::sinks::base_sink<std::mutex> {
 public:
  JournalSink(std::shared_ptr<JournalWriter> writer, std::string identifier, std::string node,
              std::ostream* fallback)
      : writer_(std::move(writer)),
        identifier_(std::move(identifier)),
        node_(std::move(node)),
        fallback_(fallback) {}

 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    std::vector<std::string> fields = {
        absl::StrCat("MESSAGE=", Payload(msg)),
        absl::StrCat("PRIORITY=", SyslogPriority(msg.level)),
        absl::StrCat("SYSLOG_IDENTIFIER=", identifier_),
    };
    if (!node_.empty()) fields.push_back(absl::StrCat("HANDOFF_NODE=", node_));
    if (writer_->Send(fields) >= 0) return;
    const spdlog::string_view_t level = spdlog::level::to_string_view(msg.level);
    std::ostream& out = fallback_ != nullptr ? *fallback_ : std::cerr;
    out << identifier_ << " " << std::string(level.data(), level.size()) << " " << Payload(msg)
        << "\n";
    out.flush();
  }
  void flush_() override {}

 private:
  std::shared_ptr<JournalWriter> writer_;
  const std::string identifier_;
  const std::string node_;
  std::ostream* fallback_;
};

class SystemJournalWriter : public JournalWriter {
 public:
  int Send(const std::vector<std::string>& fields) override {
    std::vector<iovec> entries;
    entries.reserve(fields.size());
    for (const std::string& field : fields) {
      // sd_journal_sendv only reads the buffers.
      entries.push_back(iovec{const_cast<char*>(field.data()), field.size()});
    }
    return sd_journal_sendv(entries.data(), static_cast<int>(entries.size()));
  }
  bool Available() override { return access("/run/systemd/journal/socket", W_OK) == 0; }
};

}  // namespace

absl::StatusOr<LogFormat> ParseLogFormat(const std::string& value) {
  if (value == "auto") return LogFormat::kAuto;
  if (value == "text") return LogFormat::kText;
  if (value == "json") return LogFormat::kJson;
  if (value == "journal") return LogFormat::kJournal;
  return absl::InvalidArgumentError(
      absl::StrCat("--log-format '", value, "' is not one of auto, text, json, journal"));
}

bool IsJournalStream(const char* journal_stream, int fd) {
  if (journal_stream == nullptr || fd < 0) return false;
  uintmax_t device = 0;
  uintmax_t inode = 0;
  char rest = 0;
  if (std::sscanf(journal_stream, "%" SCNuMAX ":%" SCNuMAX "%c", &device, &inode, &rest) != 2) {
    return false;
  }
  struct stat opened {};
  if (fstat(fd, &opened) != 0) return false;
  return static_cast<uintmax_t>(opened.st_dev) == device &&
         static_cast<uintmax_t>(opened.st_ino) == inode;
}

std::unique_ptr<JournalWriter> NewSystemJournalWriter() {
  return std::make_unique<SystemJournalWriter>();
}

LogFormat ChosenLogFormat(const LogOptions& options) {
  if (options.format != LogFormat::kAuto) return options.format;
  return IsJournalStream(options.journal_stream, options.stream_fd) ? LogFormat::kJournal
                                                                     : LogFormat::kText;
}

std::shared_ptr<spdlog::logger> MakeLogger(const LogOptions& options) {
  std::shared_ptr<spdlog::sinks::sink> sink;
  std::shared_ptr<JournalWriter> journal;
  LogFormat format = ChosenLogFormat(options);
  if (format == LogFormat::kJournal) {
    journal = options.journal != nullptr ? options.journal : NewSystemJournalWriter();
    if (!journal->Available()) format = LogFormat::kText;
  }
  switch (format) {
    case LogFormat::kJournal:
      sink = std::make_shared<JournalSink>(std::move(journal), options.name, options.node,
                                           options.stream);
      break;
    case LogFormat::kJson:
      sink = std::make_shared<JsonLineSink>(
          options.stream != nullptr ? *options.stream : std::cerr, options.node);
      break;
    case LogFormat::kAuto:
    case LogFormat::kText:
      if (options.stream != nullptr) {
        sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(*options.stream, true);
      } else {
        sink = std::make_shared<spdlog::sinks::stderr_color_sink_mt>();
      }
      if (!options.text_pattern.empty()) sink->set_pattern(options.text_pattern);
      break;
  }
  auto logger = std::make_shared<spdlog::logger>(options.name, std::move(sink));
  if (journal != nullptr && format == LogFormat::kText) {
    logger->warn("--log-format journal: journald does not listen here "
                 "(/run/systemd/journal/socket); logging text on stderr");
  }
  return logger;
}

}  // namespace handoff
