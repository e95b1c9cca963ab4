#include "common/fs/output_file.h"

#include <unistd.h>

#include <filesystem>
#include <system_error>

#include "common/base/strings.h"
#include "common/fs/atomic_file.h"

namespace handoff {

absl::Status WriteOutputFile(FileSystem& fs, const std::string& path, std::string_view content,
                             unsigned new_file_mode) {
  if (path.empty()) return absl::InvalidArgumentError("an empty path names no file");
  std::error_code error;
  const std::filesystem::path absolute = std::filesystem::absolute(path, error);
  if (error) {
    return absl::FailedPreconditionError(
        StrCat(path, ": cannot resolve it from the working directory: ", error.message()));
  }
  // The file a symlink names is the one written: renaming over the link would replace it, and
  // a link such as /dev/stdout -> /proc/self/fd/1 would be gone.
  absl::StatusOr<std::string> resolved = fs.RealPath(absolute.string());
  if (!resolved.ok()) {
    return absl::Status(resolved.status().code(), StrCat(path, ": ", resolved.status().message()));
  }
  const std::string named =
      *resolved == absolute.string() ? path : StrCat(path, " (", *resolved, ")");

  FileInfo attributes;
  absl::StatusOr<FileInfo> existing = fs.Stat(*resolved);
  if (existing.ok()) {
    if (existing->type != FileType::kRegular) {
      return absl::FailedPreconditionError(
          StrCat(named, " is ", FileTypeName(existing->type),
                 ", not a regular file: name a regular file, or a new one, to write to"));
    }
    attributes = *existing;
    attributes.mode &= 0777;
  } else if (absl::IsNotFound(existing.status())) {
    attributes.mode = new_file_mode & 0777;
    attributes.uid = static_cast<unsigned>(::geteuid());
    attributes.gid = static_cast<unsigned>(::getegid());
  } else {
    return absl::Status(
        existing.status().code(),
        StrCat(named, ": cannot tell what is there: ", existing.status().message()));
  }
  absl::Status written = AtomicReplace(fs, *resolved, content, attributes);
  if (!written.ok()) {
    return absl::Status(written.code(), StrCat(named, ": ", written.message()));
  }
  return absl::OkStatus();
}

}  // namespace handoff
