#include "common/fs/atomic_file.h"

#include <vector>

#include "common/base/strings.h"
#include "common/fs/host_path.h"

namespace handoff {
namespace {

// The directory whose entry `path` is: "." for a name without one ("cluster.yaml"), whose
// ParentPath is empty.
std::string DirectoryOf(const std::string& path) {
  std::string parent = ParentPath(path);
  return parent.empty() ? "." : parent;
}

// Keeps the code of `cause` and puts `context` in front of its message.
absl::Status Annotate(const absl::Status& cause, std::string_view context) {
  return absl::Status(cause.code(), StrCat(context, ": ", cause.message()));
}

}  // namespace

absl::Status AtomicReplaceCreatingParents(FileSystem& fs, const std::string& path,
                                          std::string_view content, unsigned mode,
                                          unsigned directory_mode) {
  if (absl::Status made = EnsureDirectory(fs, ParentPath(path), directory_mode); !made.ok()) {
    return made;
  }
  FileInfo info;
  info.mode = mode;
  return AtomicReplace(fs, path, content, info);
}

std::string TempPathFor(const std::string& path) {
  const std::string parent = ParentPath(path);
  const std::string name = StrCat(".", BaseName(path), ".handoff-tmp");
  if (parent.empty()) return name;
  return parent == "/" ? StrCat("/", name) : StrCat(parent, "/", name);
}

absl::Status AtomicReplace(FileSystem& fs, const std::string& path, std::string_view content,
                           const std::optional<FileInfo>& attributes) {
  const std::string temp = TempPathFor(path);
  const std::string directory = DirectoryOf(path);
  const std::string context = StrCat("replacing ", path, " via ", temp);

  FileInfo info;
  absl::StatusOr<FileInfo> existing = fs.Stat(path);
  if (existing.ok() && existing->is_directory) {
    return absl::FailedPreconditionError(StrCat(context, ": ", path, " is a directory"));
  }
  // rename(2) would put a regular file in the place of a device, a FIFO or a socket (root's
  // `-o /dev/null` would replace the host's /dev/null), and the new file would take its mode.
  if (existing.ok() && existing->type != FileType::kRegular) {
    return absl::FailedPreconditionError(
        StrCat(context, ": ", path, " is ", FileTypeName(existing->type),
               ", not a regular file; handoff replaces only regular files"));
  }
  if (!existing.ok() && !absl::IsNotFound(existing.status())) {
    return Annotate(existing.status(), StrCat(context, ": stat of the file failed"));
  }
  if (attributes) {
    info = *attributes;
  } else if (existing.ok()) {
    info = *existing;
  } else {
    info.mode = 0600;
    info.uid = 0;
    info.gid = 0;
  }
  info.is_directory = false;

  // A temp file left by a crashed run holds an unknown part of some content. WriteFile would
  // truncate it, but it would also follow it if it were a symlink (even a dangling one, which
  // Stat cannot see), so it is unlinked first, unconditionally: the temp written below is then
  // a new regular file in this directory.
  if (absl::Status removed = fs.RemoveFile(temp); !removed.ok() && !absl::IsNotFound(removed)) {
    return Annotate(removed, StrCat(context, ": removing a stale temp file failed"));
  }

  // The order is what makes the replacement atomic across a crash:
  // - The data is written to a dotfile beside `path`: the kubelet ignores names starting with
  //   "." (and its periodic re-list would otherwise load, or remove the pod for, a half-written
  //   manifest), and rename(2) is only atomic within one file system.
  // - The temp file is fsynced before the rename. Without it the rename can reach the disk
  //   before the data does (delayed allocation; ext4's auto_da_alloc heuristic is not a
  //   guarantee and other file systems have none), and after a power cut `path` names an empty
  //   or partial file: exactly the outage this function exists to avoid.
  // - rename(2) replaces `path` in one step: any reader, and the directory after a crash, sees
  //   either the old inode or the new one.
  // - The directory is fsynced after the rename: until then the new name is only in memory,
  //   and a crash can bring back the old file after the caller went on as if the new one were
  //   in place (e.g. restarted a component, or journaled the step as done).
  if (absl::Status written = fs.WriteFile(temp, content, info); !written.ok()) {
    // A failed write can leave a partial temp file behind.
    fs.RemoveFile(temp).IgnoreError();
    return Annotate(written, StrCat(context, ": writing the temp file failed"));
  }
  if (absl::Status synced = fs.SyncFile(temp); !synced.ok()) {
    fs.RemoveFile(temp).IgnoreError();
    return Annotate(synced, StrCat(context, ": fsync of the temp file failed"));
  }
  if (absl::Status renamed = fs.Rename(temp, path); !renamed.ok()) {
    fs.RemoveFile(temp).IgnoreError();
    return Annotate(renamed, StrCat(context, ": renaming the temp file over ", path, " failed"));
  }
  if (absl::Status synced = fs.SyncDirectory(directory); !synced.ok()) {
    // Too late to undo: the old content is gone from the directory. `path` holds the new
    // content, but a crash may still bring back the old one; the caller must not count the
    // replacement as durable.
    return Annotate(
        synced, StrCat(context, ": ", path, " holds the new content but fsync of its directory ",
                       directory, " failed, so a crash may undo the replacement"));
  }
  return absl::OkStatus();
}

absl::Status DurableRemove(FileSystem& fs, const std::string& path) {
  const std::string directory = DirectoryOf(path);
  absl::Status removed = fs.RemoveFile(path);
  if (!removed.ok() && !absl::IsNotFound(removed)) {
    return Annotate(removed, StrCat("removing ", path, ": unlink failed"));
  }
  // The directory is synced even when the file was already gone: an earlier run may have
  // unlinked it and died (or failed) before its directory fsync, and then the removal is still
  // only in memory.
  absl::Status synced = fs.SyncDirectory(directory);
  if (absl::IsNotFound(synced) && absl::IsNotFound(removed)) {
    return absl::OkStatus();  // no directory, so certainly no file
  }
  if (!synced.ok()) {
    return Annotate(synced, StrCat("removing ", path, ": fsync of its directory ", directory,
                                   " failed, so a crash may bring the file back"));
  }
  return absl::OkStatus();
}

absl::Status EnsureDirectory(FileSystem& fs, const std::string& path, unsigned mode) {
  if (!StartsWith(path, "/")) {
    return absl::InvalidArgumentError(
        StrCat("creating directory ", path, ": not an absolute path"));
  }
  std::string current = "/";
  for (std::string_view part : StrSplit(path, "/", /*skip_empty=*/true)) {
    const std::string parent = current;
    current = parent == "/" ? StrCat("/", part) : StrCat(parent, "/", part);
    absl::StatusOr<FileInfo> info = fs.Stat(current);
    if (info.ok() && !info->is_directory) {
      return absl::FailedPreconditionError(
          StrCat("creating directory ", path, ": ", current, " exists and is not a directory"));
    }
    if (!info.ok()) {
      if (!absl::IsNotFound(info.status())) {
        return Annotate(info.status(),
                        StrCat("creating directory ", path, ": stat of ", current, " failed"));
      }
      absl::Status created = fs.CreateDirectory(current, mode);
      // AlreadyExists: someone else made it in between; it is synced below all the same.
      if (!created.ok() && !absl::IsAlreadyExists(created)) {
        return Annotate(created,
                        StrCat("creating directory ", path, ": mkdir of ", current, " failed"));
      }
    }
    // The parent is synced for every component, not only for the ones made here: one that
    // exists may have been made by a run that died (or whose fsync failed) before syncing its
    // parent, and it then vanishes in a crash together with everything written into it. An
    // fsync of a directory with nothing unwritten is cheap.
    if (absl::Status synced = fs.SyncDirectory(parent); !synced.ok()) {
      return Annotate(synced, StrCat("creating directory ", path, ": fsync of ", parent,
                                     " failed, so a crash may undo the creation of ", current));
    }
  }
  return absl::OkStatus();
}

}  // namespace handoff
