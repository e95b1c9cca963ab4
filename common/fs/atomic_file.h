// The one audited way handoff changes a file on a node (leveldb's SetCurrentFile is the model).
#ifndef HANDOFF_COMMON_FS_ATOMIC_FILE_H_
#define HANDOFF_COMMON_FS_ATOMIC_FILE_H_

#include <optional>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "common/fs/file_system.h"

namespace handoff {

// Replaces (or creates) `path` with `content` so that after a crash at any point the file holds
// either its old content or the whole new content, never a mix and never nothing:
//   1. write a temp file in the same directory whose name starts with "." (the kubelet ignores
//      dotfiles, so it never starts a half-written manifest),
//   2. give it `attributes` (by default those of the file it replaces, else 0600 root),
//   3. fsync it, 4. rename it over `path`, 5. fsync the directory.
// A temp file left by an earlier run is unlinked first. The write-side calls, in order:
//   RemoveFile(temp) (NotFound is fine), WriteFile(temp), SyncFile(temp), Rename(temp, path),
//   SyncDirectory(dir).
// On a failure up to the rename the temp file is removed (best effort) and `path` is untouched.
// When only the final directory fsync fails, `path` already holds the new content but a crash
// may still bring back the old one: the error says so, and the caller must not count the
// replacement as durable (retrying AtomicReplace is safe). Every error names the step and both
// paths, and keeps the code of the failing call.
absl::Status AtomicReplace(FileSystem& fs, const std::string& path, std::string_view content,
                           const std::optional<FileInfo>& attributes = std::nullopt);

// Removes `path` durably (unlink, then fsync the directory). OK when already absent; the
// directory is synced then too, in case an earlier unlink was never made durable.
absl::Status DurableRemove(FileSystem& fs, const std::string& path);

// Creates `path` and any missing parents with `mode`, syncing each parent so the new directory
// survives a crash. OK when it already exists as a directory. The parent of every component is
// synced, not only of the ones created here, because an existing one may have been created by
// a run that died before syncing it. FailedPrecondition when a component is not a directory.
absl::Status EnsureDirectory(FileSystem& fs, const std::string& path, unsigned mode = 0700);

// EnsureDirectory(parent of `path`, `directory_mode`), then AtomicReplace with `mode`: a file
// written where its directories may not exist yet (a fresh node's layout).
absl::Status AtomicReplaceCreatingParents(FileSystem& fs, const std::string& path,
                                          std::string_view content, unsigned mode,
                                          unsigned directory_mode = 0755);

// The name of the temp file AtomicReplace uses for `path` (".<name>.handoff-tmp" beside it), so
// that recovery can clean up one left by a crash.
std::string TempPathFor(const std::string& path);

}  // namespace handoff

#endif  // HANDOFF_COMMON_FS_ATOMIC_FILE_H_
