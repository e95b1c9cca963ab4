#include "agent/daemon/log_stream.h"

namespace handoff {

LogStream::LogStream(std::shared_ptr<spdlog::logger> logger)
    : std::ostream(nullptr), buffer_(std::move(logger)) {
  rdbuf(&buffer_);
}

LogStream::~LogStream() { buffer_.Flush(); }

void LogStream::Buffer::Flush() {
  if (line_.empty()) return;
  logger_->info("{}", line_);
  line_.clear();
}

LogStream::Buffer::int_type LogStream::Buffer::overflow(int_type c) {
  if (traits_type::eq_int_type(c, traits_type::eof())) return traits_type::not_eof(c);
  const char character = traits_type::to_char_type(c);
  if (character == '\n') {
    logger_->info("{}", line_);
    line_.clear();
  } else {
    line_.push_back(character);
  }
  return c;
}

std::streamsize LogStream::Buffer::xsputn(const char* data, std::streamsize size) {
  for (std::streamsize i = 0; i < size; ++i) overflow(traits_type::to_int_type(data[i]));
  return size;
}

}  // namespace handoff
