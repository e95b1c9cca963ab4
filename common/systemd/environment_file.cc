#include "common/systemd/environment_file.h"

#include <string>
#include <utility>

#include "common/base/strings.h"
#include "common/base/yaml_util.h"

namespace handoff::systemd {
namespace {

constexpr std::string_view kWhitespace = " \t\r";  // systemd's WHITESPACE less the newline
constexpr std::string_view kComments = "#;";
constexpr std::string_view kShellNeedEscape = "\"\\`$";

bool IsIn(char c, std::string_view set) { return set.find(c) != std::string_view::npos; }

// The state machine of systemd's parse_env_file_internal; one character at a time.
class Parser {
 public:
  Parser(std::string_view text, std::string_view source) : text_(text), source_(source) {}

  absl::StatusOr<EnvironmentFile> Run() {
    if (text_.find('\0') != std::string_view::npos) {
      return absl::InvalidArgumentError(
          StrCat(source_, " line ", LineAt(text_.find('\0')), ": a NUL byte"));
    }
    for (size_t i = 0; i < text_.size(); ++i) {
      const char c = text_[i];
      switch (state_) {
        case State::kPreKey:
          if (IsIn(c, kComments)) {
            state_ = State::kComment;
          } else if (c == '\n') {
            ++line_;
          } else if (!IsIn(c, kWhitespace)) {
            state_ = State::kKey;
            begin_ = i;
            key_line_ = line_;
            key_.assign(1, c);
            key_trailing_ = std::string::npos;
          }
          break;
        case State::kKey:
          if (c == '\n') {
            // A line without '=': systemd skips it.
            state_ = State::kPreKey;
            ++line_;
          } else if (c == '=') {
            state_ = State::kPreValue;
            value_.clear();
            value_trailing_ = std::string::npos;
            end_ = i + 1;
          } else {
            if (!IsIn(c, kWhitespace)) {
              key_trailing_ = std::string::npos;
            } else if (key_trailing_ == std::string::npos) {
              key_trailing_ = key_.size();
            }
            key_.push_back(c);
          }
          break;
        case State::kPreValue:
          if (c == '\n') {
            Push();
            ++line_;
            state_ = State::kPreKey;
          } else if (c == '\'') {
            state_ = State::kSingleQuote;
          } else if (c == '"') {
            state_ = State::kDoubleQuote;
          } else if (c == '\\') {
            state_ = State::kValueEscape;
          } else if (!IsIn(c, kWhitespace)) {
            state_ = State::kValue;
            value_.push_back(c);
            end_ = i + 1;
          }
          break;
        case State::kValue:
          if (c == '\n') {
            if (value_trailing_ != std::string::npos) value_.resize(value_trailing_);
            Push();
            ++line_;
            state_ = State::kPreKey;
          } else if (c == '\\') {
            state_ = State::kValueEscape;
            value_trailing_ = std::string::npos;
          } else {
            if (!IsIn(c, kWhitespace)) {
              value_trailing_ = std::string::npos;
              end_ = i + 1;
            } else if (value_trailing_ == std::string::npos) {
              value_trailing_ = value_.size();
            }
            value_.push_back(c);
          }
          break;
        case State::kValueEscape:
          state_ = State::kValue;
          if (c == '\n') {
            ++line_;  // a continuation: the newline is eaten
          } else {
            value_.push_back(c);
          }
          end_ = i + 1;
          break;
        case State::kSingleQuote:
          if (c == '\'') {
            state_ = State::kPreValue;
            end_ = i + 1;
          } else {
            if (c == '\n') ++line_;
            value_.push_back(c);
          }
          break;
        case State::kDoubleQuote:
          if (c == '"') {
            state_ = State::kPreValue;
            end_ = i + 1;
          } else if (c == '\\') {
            state_ = State::kDoubleQuoteEscape;
          } else {
            if (c == '\n') ++line_;
            value_.push_back(c);
          }
          break;
        case State::kDoubleQuoteEscape:
          state_ = State::kDoubleQuote;
          if (IsIn(c, kShellNeedEscape)) {
            value_.push_back(c);
          } else if (c == '\n') {
            ++line_;
          } else {
            // Any other character keeps its backslash, as a shell does.
            value_.push_back('\\');
            value_.push_back(c);
          }
          break;
        case State::kComment:
          if (c == '\\') {
            state_ = State::kCommentEscape;
          } else if (c == '\n') {
            state_ = State::kPreKey;
            ++line_;
          }
          break;
        case State::kCommentEscape:
          if (c == '\n') {
            ++line_;
            if (absl::Status ambiguous = RefuseIfAssignmentFollows(i + 1); !ambiguous.ok()) {
              return ambiguous;
            }
            state_ = State::kPreKey;
          } else {
            state_ = State::kComment;
          }
          break;
      }
    }
    switch (state_) {
      case State::kPreValue:
      case State::kValueEscape:
      case State::kSingleQuote:
      case State::kDoubleQuote:
      case State::kDoubleQuoteEscape:
        Push();
        break;
      case State::kValue:
        if (value_trailing_ != std::string::npos) value_.resize(value_trailing_);
        Push();
        break;
      default:
        break;
    }
    return std::move(file_);
  }

 private:
  enum class State {
    kPreKey,
    kKey,
    kPreValue,
    kValue,
    kValueEscape,
    kSingleQuote,
    kDoubleQuote,
    kDoubleQuoteEscape,
    kComment,
    kCommentEscape,
  };

  void Push() {
    if (key_trailing_ != std::string::npos) key_.resize(key_trailing_);
    if (!IsEnvironmentName(key_)) {
      file_.ignored.push_back(IgnoredAssignment{
          key_, StrCat(source_, " line ", key_line_, ": \"", key_,
                       "\" is no variable name, so systemd ignores the line")});
      return;
    }
    if (FirstInvalidUtf8(value_) != std::string::npos) {
      file_.ignored.push_back(IgnoredAssignment{
          key_, StrCat(source_, " line ", key_line_, ": the value of ", key_,
                       " is not UTF-8, so systemd ignores the line")});
      return;
    }
    file_.assignments.push_back(EnvironmentAssignment{
        key_, value_, key_line_, begin_, end_});
  }

  // After a comment that ends in a backslash: an error when the next line holds an assignment.
  absl::Status RefuseIfAssignmentFollows(size_t from) const {
    size_t stop = text_.find('\n', from);
    std::string_view next = text_.substr(from, stop == std::string_view::npos ? stop : stop - from);
    const size_t first = next.find_first_not_of(kWhitespace);
    if (first == std::string_view::npos || IsIn(next[first], kComments)) return absl::OkStatus();
    if (next.find('=') == std::string_view::npos) return absl::OkStatus();
    return absl::InvalidArgumentError(
        StrCat(source_, " line ", line_ - 1,
               ": a comment ends with a backslash before an assignment on line ", line_,
               "; systemd before v254 takes that line as part of the comment and later ones read "
               "it: remove the backslash"));
  }

  int LineAt(size_t offset) const {
    int line = 1;
    for (size_t i = 0; i < offset && i < text_.size(); ++i) line += text_[i] == '\n';
    return line;
  }

  std::string_view text_;
  std::string_view source_;
  EnvironmentFile file_;
  State state_ = State::kPreKey;
  int line_ = 1;
  int key_line_ = 1;
  std::string key_;
  std::string value_;
  size_t key_trailing_ = std::string::npos;
  size_t value_trailing_ = std::string::npos;
  size_t begin_ = 0;
  size_t end_ = 0;
};

}  // namespace

const EnvironmentAssignment* EnvironmentFile::Find(std::string_view key) const {
  for (auto it = assignments.rbegin(); it != assignments.rend(); ++it) {
    if (it->key == key) return &*it;
  }
  return nullptr;
}

absl::StatusOr<EnvironmentFile> ParseEnvironmentFile(std::string_view text,
                                                     std::string_view source) {
  return Parser(text, source).Run();
}

bool IsEnvironmentName(std::string_view name) {
  if (name.empty() || (name.front() >= '0' && name.front() <= '9')) return false;
  for (char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '_';
    if (!ok) return false;
  }
  return true;
}

std::string QuoteEnvironmentValue(std::string_view value) {
  std::string quoted = "\"";
  for (char c : value) {
    if (IsIn(c, kShellNeedEscape)) quoted.push_back('\\');
    quoted.push_back(c);
  }
  quoted.push_back('"');
  return quoted;
}

std::string ReplaceAssignment(std::string_view text, const EnvironmentAssignment& assignment,
                              std::string_view value) {
  return StrCat(text.substr(0, assignment.begin), assignment.key, "=",
                QuoteEnvironmentValue(value), text.substr(assignment.end));
}

std::string AppendAssignment(std::string_view text, std::string_view key, std::string_view value) {
  const bool needs_newline = !text.empty() && text.back() != '\n';
  return StrCat(text, needs_newline ? "\n" : "", key, "=", QuoteEnvironmentValue(value), "\n");
}

}  // namespace handoff::systemd
