// A systemd EnvironmentFile (systemd.exec(5) EnvironmentFile=), read as systemd reads it
// (src/basic/env-file.c parse_env_file_internal, as of v254), and one assignment rewritten in
// place with every other byte of the file kept. Pure.
#ifndef HANDOFF_COMMON_SYSTEMD_ENVIRONMENT_FILE_H_
#define HANDOFF_COMMON_SYSTEMD_ENVIRONMENT_FILE_H_

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace handoff::systemd {

struct EnvironmentAssignment {
  std::string key;
  std::string value;  // quotes removed and escapes resolved, as the process sees it
  int line = 0;       // 1-based line of the key
  // The bytes of the assignment in the file, from the key's first character to the end of its
  // value (the newline not included), continuation lines and quotes included.
  size_t begin = 0;
  size_t end = 0;
};

// An assignment systemd drops.
struct IgnoredAssignment {
  std::string key;      // as written: "export KUBELET_EXTRA_ARGS"
  std::string message;  // naming the file, the line and why
};

struct EnvironmentFile {
  // Every assignment systemd keeps, in file order; a key set twice appears twice (the process
  // sees the later one).
  std::vector<EnvironmentAssignment> assignments;
  // Assignments systemd drops, each naming the file, the line and why: a key that is no valid
  // variable name ("export KUBELET_EXTRA_ARGS=…" among them: the file is no shell script) or a
  // value that is not UTF-8. What the operator wrote there does not reach the process.
  std::vector<IgnoredAssignment> ignored;

  // The value the process sees for `key` (the last assignment's), nullptr when unset.
  const EnvironmentAssignment* Find(std::string_view key) const;
};

// Reads `text` as systemd does: blank lines and lines whose first non-blank character is # or ;
// are comments; KEY=VALUE with white space around the key and the value dropped; a value in
// '…' kept verbatim, in "…" with \" \\ \` \$ and a backslash-newline resolved; unquoted, a
// backslash keeps the next character and a backslash-newline continues the line. Errors name
// `source` and the line: a NUL byte, and a comment ending in a backslash that is followed by an
// assignment (systemd before v254 takes that line as part of the comment, later ones read it:
// what the kubelet runs with would depend on the systemd version).
absl::StatusOr<EnvironmentFile> ParseEnvironmentFile(std::string_view text,
                                                     std::string_view source);

// `value` written so that ParseEnvironmentFile reads it back unchanged: in double quotes, with
// " \ ` $ escaped.
std::string QuoteEnvironmentValue(std::string_view value);

// `text` with `assignment` (one of ParseEnvironmentFile(text).assignments) replaced by
// KEY="value" (QuoteEnvironmentValue); every other byte kept.
std::string ReplaceAssignment(std::string_view text, const EnvironmentAssignment& assignment,
                              std::string_view value);

// `text` with KEY="value" appended as a line of its own (after a newline if `text` does not end
// with one).
std::string AppendAssignment(std::string_view text, std::string_view key, std::string_view value);

// Whether `name` is a variable name systemd keeps: letters, digits and '_', not starting with a
// digit.
bool IsEnvironmentName(std::string_view name);

}  // namespace handoff::systemd

#endif  // HANDOFF_COMMON_SYSTEMD_ENVIRONMENT_FILE_H_
