#include "rehearsal/node/text_file.h"

#include <stdio.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "common/base/strings.h"

namespace handoff::sandbox::node {

std::optional<std::string> ReadText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

absl::Status WriteText(const std::string& path, const std::string& text) {
  const std::string tmp = StrCat(path, ".tmp");
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << text;
    if (!out.flush()) return absl::InternalError(StrCat("cannot write ", tmp));
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    return absl::InternalError(StrCat("cannot rename ", tmp, ": ", std::strerror(errno)));
  }
  return absl::OkStatus();
}

}  // namespace handoff::sandbox::node
