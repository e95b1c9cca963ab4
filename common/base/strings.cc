#include "common/base/strings.h"

namespace handoff {

std::vector<std::string_view> StrSplit(std::string_view text, std::string_view separators,
                                       bool skip_empty) {
  std::vector<std::string_view> pieces;
  size_t start = 0;
  while (true) {
    size_t end = text.find_first_of(separators, start);
    std::string_view piece = text.substr(start, end == std::string_view::npos ? end : end - start);
    if (!skip_empty || !piece.empty()) pieces.push_back(piece);
    if (end == std::string_view::npos) break;
    start = end + 1;
  }
  return pieces;
}

std::string_view StripLeadingWhitespace(std::string_view text) {
  size_t start = text.find_first_not_of(" \t\r\n");
  return start == std::string_view::npos ? std::string_view() : text.substr(start);
}

std::string_view StripWhitespace(std::string_view text) {
  text = StripLeadingWhitespace(text);
  size_t end = text.find_last_not_of(" \t\r\n");
  return end == std::string_view::npos ? std::string_view() : text.substr(0, end + 1);
}

}  // namespace handoff
