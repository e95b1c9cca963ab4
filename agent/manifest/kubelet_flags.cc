#include "agent/manifest/kubelet_flags.h"

#include "common/base/strings.h"

namespace handoff {

absl::StatusOr<KubeletFlagsFile> KubeletFlagsFile::Parse(std::string_view text,
                                                         std::string source) {
  KubeletFlagsFile file;
  std::vector<std::string_view> lines = StrSplit(text, "\n");
  // A final newline leaves an empty last piece; it is not a line.
  if (!lines.empty() && lines.back().empty()) lines.pop_back();
  int found_line = 0;
  const std::string prefix = StrCat(kKubeletArgsVariable, "=");
  for (size_t i = 0; i < lines.size(); ++i) {
    std::string_view line = lines[i];
    std::string_view stripped = StripLeadingWhitespace(line);
    if (!StartsWith(stripped, prefix)) {
      StrAppend(found_line ? &file.after_ : &file.before_, line, "\n");
      continue;
    }
    const int line_number = static_cast<int>(i) + 1;
    if (found_line) {
      return absl::InvalidArgumentError(StrCat(source, ":", line_number, ": ", kKubeletArgsVariable,
                                               " is set again (first on line ", found_line,
                                               "); keep one line"));
    }
    found_line = line_number;
    std::string_view value = StripWhitespace(stripped.substr(prefix.size()));
    if (value.size() < 2 || value.front() != '"' || value.back() != '"') {
      return absl::InvalidArgumentError(
          StrCat(source, ":", line_number, ": expected ", kKubeletArgsVariable,
                 "=\"--flag=value ...\" (one double-quoted value, as kubeadm writes it)"));
    }
    value = value.substr(1, value.size() - 2);
    if (StrContains(value, "\"") || StrContains(value, "\\") || StrContains(value, "'")) {
      return absl::InvalidArgumentError(StrCat(
          source, ":", line_number,
          ": quotes or backslashes inside the value are not supported; edit this file by hand"));
    }
    file.flags_ = FlagList(ToStrings(StrSplit(value, " \t", /*skip_empty=*/true)));
  }
  if (!found_line) {
    return absl::InvalidArgumentError(StrCat(source, ": no ", kKubeletArgsVariable,
                                             "=\"...\" line; is this kubeadm's flags file?"));
  }
  return file;
}

std::string KubeletFlagsFile::Emit() const {
  return StrCat(before_, kKubeletArgsVariable, "=\"", StrJoin(flags_.items(), " "), "\"\n", after_);
}

}  // namespace handoff
