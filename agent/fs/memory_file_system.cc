#include "agent/fs/memory_file_system.h"

#include <set>

#include "agent/base/strings.h"

namespace handoff {
namespace {

std::string AsDirectory(const std::string& path) { return EndsWith(path, "/") ? path : path + "/"; }

}  // namespace

absl::StatusOr<std::string> MemoryFileSystem::ReadFile(const std::string& path) const {
  auto it = files_.find(path);
  if (it != files_.end()) return it->second;
  // As PosixFileSystem answers for a directory.
  absl::StatusOr<FileInfo> info = Stat(path);
  if (info.ok() && info->is_directory) {
    return absl::FailedPreconditionError(StrCat(path, ": is a directory, not a file"));
  }
  return absl::NotFoundError(StrCat(path, ": no such file"));
}

absl::StatusOr<FileInfo> MemoryFileSystem::Stat(const std::string& path) const {
  FileInfo info;
  if (auto it = modes_.find(path); it != modes_.end()) {
    info.mode = it->second;
    return info;
  }
  const std::string prefix = AsDirectory(path);
  auto it = files_.lower_bound(prefix);
  if (it != files_.end() && StartsWith(it->first, prefix)) {
    info.is_directory = true;
    info.mode = 0755;
    return info;
  }
  return absl::NotFoundError(StrCat(path, ": no such file or directory"));
}

absl::StatusOr<std::vector<std::string>> MemoryFileSystem::ListDirectory(
    const std::string& path) const {
  const std::string prefix = AsDirectory(path);
  std::set<std::string> names;
  for (auto it = files_.lower_bound(prefix); it != files_.end() && StartsWith(it->first, prefix);
       ++it) {
    std::string rest = it->first.substr(prefix.size());
    names.insert(rest.substr(0, rest.find('/')));
  }
  if (names.empty()) return absl::NotFoundError(StrCat(path, ": no such directory"));
  return std::vector<std::string>(names.begin(), names.end());
}

void MemoryFileSystem::SetFile(const std::string& path, std::string content, unsigned mode) {
  files_[path] = std::move(content);
  modes_[path] = mode;
}

void MemoryFileSystem::RemoveFile(const std::string& path) {
  files_.erase(path);
  modes_.erase(path);
}

}  // namespace handoff
