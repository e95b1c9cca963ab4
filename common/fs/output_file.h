// Writing a file an operator names on the command line (`-o FILE`, `--helm-values FILE`,
// `--port-file FILE`): atomically, and never in the place of something that is not a file.
#ifndef HANDOFF_COMMON_FS_OUTPUT_FILE_H_
#define HANDOFF_COMMON_FS_OUTPUT_FILE_H_

#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "common/fs/file_system.h"

namespace handoff {

// Writes `content` to `path` with AtomicReplace, after resolving it (a relative path from the
// working directory, then every symlink in it, inside `fs`'s root):
//   - nothing there: a new file with `new_file_mode`, owned by this process's user and group;
//   - a regular file: replaced, with its owner and permission bits (set-user-ID, set-group-ID
//     and sticky bits dropped);
//   - a symlink, or a path through symlinks, that names one of those: the file it names is
//     written and the link stays as it was;
//   - anything else (a directory, a device, a FIFO, a socket, or a symlink to one):
//     FailedPrecondition naming `path` and what it is, and nothing is written.
// Errors name `path`, and the resolved path when it differs.
absl::Status WriteOutputFile(FileSystem& fs, const std::string& path, std::string_view content,
                             unsigned new_file_mode);

}  // namespace handoff

#endif  // HANDOFF_COMMON_FS_OUTPUT_FILE_H_
