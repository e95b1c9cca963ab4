// An std::ostream whose lines go to a spdlog logger, for code that logs to a stream (the
// applier) when it runs inside the agent daemon.
#ifndef HANDOFF_AGENT_DAEMON_LOG_STREAM_H_
#define HANDOFF_AGENT_DAEMON_LOG_STREAM_H_

#include <memory>
#include <ostream>
#include <streambuf>
#include <string>

#include "spdlog/logger.h"

namespace handoff {

// Each complete line is logged at info level, without its newline; a partial line waits for its
// end (or for destruction). Not thread-safe: one writer at a time, as for any ostream.
class LogStream : public std::ostream {
 public:
  explicit LogStream(std::shared_ptr<spdlog::logger> logger);
  ~LogStream() override;

 private:
  class Buffer : public std::streambuf {
   public:
    explicit Buffer(std::shared_ptr<spdlog::logger> logger) : logger_(std::move(logger)) {}
    void Flush();

   protected:
    int_type overflow(int_type c) override;
    std::streamsize xsputn(const char* data, std::streamsize size) override;

   private:
    std::shared_ptr<spdlog::logger> logger_;
    std::string line_;
  };
  Buffer buffer_;
};

}  // namespace handoff

#endif  // HANDOFF_AGENT_DAEMON_LOG_STREAM_H_
