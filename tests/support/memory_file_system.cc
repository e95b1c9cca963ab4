#include "tests/support/memory_file_system.h"

#include <set>
#include <utility>

#include "common/base/strings.h"
#include "common/fs/host_path.h"

namespace handoff {
namespace {

std::string AsDirectory(const std::string& path) { return EndsWith(path, "/") ? path : path + "/"; }

template <typename Map>
bool HasKeyBelow(const Map& map, const std::string& prefix) {
  auto it = map.lower_bound(prefix);
  return it != map.end() && StartsWith(it->first, prefix);
}

}  // namespace

bool MemoryFileSystem::IsDirectory(const std::string& path) const {
  const std::string trimmed = TrimTrailingSlashes(path);
  if (trimmed == "/" || directories_.count(trimmed) != 0) return true;
  const std::string prefix = AsDirectory(trimmed);
  return HasKeyBelow(files_, prefix) || HasKeyBelow(directories_, prefix);
}

absl::Status MemoryFileSystem::CheckParentExists(std::string_view call,
                                                 const std::string& path) const {
  if (IsDirectory(ParentPath(path))) return absl::OkStatus();
  return absl::NotFoundError(StrCat(call, " ", path, ": no such directory ", ParentPath(path)));
}

absl::StatusOr<std::string> MemoryFileSystem::ReadFile(const std::string& path,
                                                       const ReadLimit& limit) const {
  auto it = files_.find(path);
  if (it != files_.end()) {
    if (absl::Status size = CheckReadSize(path, it->second.size(), limit); !size.ok()) return size;
    return it->second;
  }
  // As PosixFileSystem answers for a directory.
  if (IsDirectory(path)) {
    return absl::FailedPreconditionError(StrCat(path, ": is a directory, not a file"));
  }
  return absl::NotFoundError(StrCat(path, ": no such file"));
}

absl::StatusOr<FileInfo> MemoryFileSystem::Stat(const std::string& path) const {
  if (auto it = infos_.find(path); it != infos_.end()) return it->second;
  if (IsDirectory(path)) {
    FileInfo info;
    info.is_directory = true;
    info.type = FileType::kDirectory;
    auto it = directories_.find(TrimTrailingSlashes(path));
    info.mode = it != directories_.end() ? it->second : 0755;
    return info;
  }
  return absl::NotFoundError(StrCat(path, ": no such file or directory"));
}

absl::StatusOr<std::vector<std::string>> MemoryFileSystem::ListDirectory(
    const std::string& path) const {
  if (!IsDirectory(path)) return absl::NotFoundError(StrCat(path, ": no such directory"));
  const std::string prefix = AsDirectory(path);
  std::set<std::string> names;
  auto collect = [&](const auto& map) {
    for (auto it = map.lower_bound(prefix); it != map.end() && StartsWith(it->first, prefix);
         ++it) {
      std::string rest = it->first.substr(prefix.size());
      names.insert(rest.substr(0, rest.find('/')));
    }
  };
  collect(files_);
  collect(directories_);
  return std::vector<std::string>(names.begin(), names.end());
}

absl::Status MemoryFileSystem::WriteFile(const std::string& path, std::string_view data,
                                         const FileInfo& attributes) {
  if (absl::Status parent = CheckParentExists("open", path); !parent.ok()) return parent;
  if (IsDirectory(path)) {
    return absl::FailedPreconditionError(StrCat("open ", path, ": is a directory"));
  }
  files_[path] = std::string(data);
  FileInfo info = attributes;
  info.is_directory = false;
  info.type = FileType::kRegular;
  info.mode &= 07777;
  infos_[path] = info;
  return absl::OkStatus();
}

absl::Status MemoryFileSystem::SyncFile(const std::string& path) {
  if (files_.count(path) == 0) {
    return absl::NotFoundError(StrCat("open ", path, ": no such file"));
  }
  return absl::OkStatus();
}

absl::Status MemoryFileSystem::Rename(const std::string& from, const std::string& to) {
  auto it = files_.find(from);
  if (it == files_.end()) {
    return absl::NotFoundError(StrCat("rename ", from, " to ", to, ": no such file ", from));
  }
  if (absl::Status parent = CheckParentExists("rename", to); !parent.ok()) return parent;
  if (IsDirectory(to)) {
    return absl::FailedPreconditionError(
        StrCat("rename ", from, " to ", to, ": ", to, " is a directory"));
  }
  if (from == to) return absl::OkStatus();
  // The directory `from` was in stays, as after rename(2), even when it held nothing else.
  const std::string from_parent = ParentPath(from);
  if (!directories_.count(from_parent) && from_parent != "/") directories_[from_parent] = 0755;
  files_[to] = std::move(it->second);
  infos_[to] = infos_[from];
  files_.erase(from);
  infos_.erase(from);
  return absl::OkStatus();
}

absl::Status MemoryFileSystem::RemoveFile(const std::string& path) {
  if (files_.count(path) == 0) {
    if (IsDirectory(path)) {
      return absl::FailedPreconditionError(StrCat("unlink ", path, ": is a directory"));
    }
    return absl::NotFoundError(StrCat("unlink ", path, ": no such file"));
  }
  const std::string parent = ParentPath(path);
  if (!directories_.count(parent) && parent != "/") directories_[parent] = 0755;
  DeleteFile(path);
  return absl::OkStatus();
}

absl::Status MemoryFileSystem::SyncDirectory(const std::string& path) {
  if (!IsDirectory(path)) return absl::NotFoundError(StrCat("open ", path, ": no such directory"));
  return absl::OkStatus();
}

absl::Status MemoryFileSystem::CreateDirectory(const std::string& path, unsigned mode) {
  const std::string trimmed = TrimTrailingSlashes(path);
  if (files_.count(trimmed) != 0 || IsDirectory(trimmed)) {
    return absl::AlreadyExistsError(StrCat("mkdir ", trimmed, ": already exists"));
  }
  if (absl::Status parent = CheckParentExists("mkdir", trimmed); !parent.ok()) return parent;
  directories_[trimmed] = mode & 07777;
  return absl::OkStatus();
}

absl::Status MemoryFileSystem::RemoveDirectory(const std::string& path) {
  const std::string directory = TrimTrailingSlashes(path);
  if (files_.count(directory) != 0 || !IsDirectory(directory)) {
    return absl::NotFoundError(StrCat("rmdir ", directory, ": no such directory"));
  }
  const std::string prefix = AsDirectory(directory);
  if (directory == "/" || HasKeyBelow(files_, prefix) || HasKeyBelow(directories_, prefix)) {
    return absl::FailedPreconditionError(StrCat("rmdir ", directory, ": directory not empty"));
  }
  directories_.erase(directory);
  const std::string parent = ParentPath(directory);
  if (!directories_.count(parent) && parent != "/") directories_[parent] = 0755;
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<FileSystem::Lock>> MemoryFileSystem::TryLock(
    const std::string& path) {
  if (files_.count(path) == 0) {
    // As open(O_CREAT) would; a path that is locked exists already.
    FileInfo info;
    info.mode = 0600;
    if (absl::Status created = WriteFile(path, "", info); !created.ok()) return created;
  }
  return locks_.Acquire(path);
}

void MemoryFileSystem::SetFile(const std::string& path, std::string content, unsigned mode) {
  files_[path] = std::move(content);
  FileInfo info;
  info.mode = mode;
  infos_[path] = info;
}

void MemoryFileSystem::DeleteFile(const std::string& path) {
  files_.erase(path);
  infos_.erase(path);
}

}  // namespace handoff
