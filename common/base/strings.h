// String helpers on std::string_view. Debian's abseil is built with its own absl::string_view
// (ABSL_OPTION_USE_STD_STRING_VIEW 0), which does not accept std::string_view, so handoff uses
// these instead of absl's string functions. absl::Status stays the error type.
#ifndef HANDOFF_COMMON_BASE_STRINGS_H_
#define HANDOFF_COMMON_BASE_STRINGS_H_

#include <sstream>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "absl/strings/string_view.h"

namespace handoff {

namespace strings_internal {
inline void Append(std::string& out, std::string_view piece) { out.append(piece); }
inline void Append(std::string& out, const std::string& piece) { out.append(piece); }
inline void Append(std::string& out, const char* piece) { out.append(piece); }
inline void Append(std::string& out, char piece) { out.push_back(piece); }
// absl::Status::message() is an absl::string_view.
inline void Append(std::string& out, absl::string_view piece) {
  out.append(piece.data(), piece.size());
}
template <typename T, typename = std::enable_if_t<std::is_arithmetic_v<T>>>
void Append(std::string& out, T number) {
  out.append(std::to_string(number));
}
}  // namespace strings_internal

// Concatenates strings, string views, characters and numbers.
template <typename... Pieces>
std::string StrCat(const Pieces&... pieces) {
  std::string out;
  (strings_internal::Append(out, pieces), ...);
  return out;
}

template <typename... Pieces>
void StrAppend(std::string* out, const Pieces&... pieces) {
  (strings_internal::Append(*out, pieces), ...);
}

// Joins the elements of a container of strings (or string views) with `separator`.
template <typename Container>
std::string StrJoin(const Container& items, std::string_view separator) {
  std::string out;
  bool first = true;
  for (const auto& item : items) {
    if (!first) out.append(separator);
    first = false;
    strings_internal::Append(out, item);
  }
  return out;
}

// Copies views into strings.
inline std::vector<std::string> ToStrings(const std::vector<std::string_view>& views) {
  return std::vector<std::string>(views.begin(), views.end());
}

// Splits at every character of `separators`; `skip_empty` drops empty pieces.
std::vector<std::string_view> StrSplit(std::string_view text, std::string_view separators,
                                       bool skip_empty = false);

inline bool StartsWith(std::string_view text, std::string_view prefix) {
  return text.substr(0, prefix.size()) == prefix;
}
inline bool EndsWith(std::string_view text, std::string_view suffix) {
  return text.size() >= suffix.size() && text.substr(text.size() - suffix.size()) == suffix;
}
inline bool StrContains(std::string_view text, std::string_view needle) {
  return text.find(needle) != std::string_view::npos;
}
inline std::string_view StripPrefix(std::string_view text, std::string_view prefix) {
  return StartsWith(text, prefix) ? text.substr(prefix.size()) : text;
}
// Without leading and trailing spaces, tabs, CRs and newlines.
std::string_view StripWhitespace(std::string_view text);
std::string_view StripLeadingWhitespace(std::string_view text);

}  // namespace handoff

#endif  // HANDOFF_COMMON_BASE_STRINGS_H_
