#include "common/fs/read_limit.h"

#include <cstdio>

#include "common/base/strings.h"

namespace handoff {

std::string FormatByteSize(uint64_t bytes) {
  if (bytes < kKiB) return StrCat(bytes, bytes == 1 ? " byte" : " bytes");
  const char* units[] = {"KiB", "MiB", "GiB", "TiB"};
  uint64_t unit = kKiB;
  size_t index = 0;
  while (index + 1 < sizeof(units) / sizeof(units[0]) && bytes >= unit * 1024) {
    unit *= 1024;
    ++index;
  }
  if (bytes % unit == 0) return StrCat(bytes / unit, " ", units[index]);
  char text[32];
  std::snprintf(text, sizeof(text), "%.1f %s", static_cast<double>(bytes) / unit, units[index]);
  return text;
}

absl::Status CheckReadSize(std::string_view path, uint64_t size, const ReadLimit& limit) {
  if (size <= limit.max_bytes) return absl::OkStatus();
  // Just over the limit, rounded sizes would read "1.0 MiB is larger than 1 MiB": bytes then.
  const bool close = size - limit.max_bytes < limit.max_bytes / 10 + 1;
  const std::string size_text = close ? StrCat(size, " bytes") : FormatByteSize(size);
  const std::string limit_text =
      close ? StrCat(FormatByteSize(limit.max_bytes), " (", limit.max_bytes, " bytes)")
            : FormatByteSize(limit.max_bytes);
  return absl::FailedPreconditionError(StrCat(path, ": ", size_text, " is larger than the ",
                                              limit_text, " limit for a ", limit.kind));
}

}  // namespace handoff
