#include "tests/support/fault_injection_file_system.h"

#include <iterator>
#include <utility>

#include "common/base/strings.h"
#include "common/fs/host_path.h"

namespace handoff {

FaultInjectionFileSystem::FaultInjectionFileSystem(const MemoryFileSystem& initial) {
  for (const auto& [directory, mode] : initial.directories()) {
    for (std::string dir = directory; dir != "/" && !dir.empty(); dir = ParentPath(dir)) {
      live_directories_.insert(dir);
      durable_directories_.insert(dir);
      directory_modes_.emplace(dir, 0755);
    }
    directory_modes_[directory] = mode;
  }
  for (const auto& [path, content] : initial.files()) {
    absl::StatusOr<FileInfo> info = initial.Stat(path);
    SetFile(path, content, info.ok() ? info->mode : 0644);
    if (info.ok()) {
      live_[path].info.uid = durable_info_[path].uid = info->uid;
      live_[path].info.gid = durable_info_[path].gid = info->gid;
    }
  }
}

std::optional<absl::Status> FaultInjectionFileSystem::Inject(std::string_view op,
                                                             const std::string& path) {
  const int call = ++write_calls_;
  call_log_.push_back(StrCat(op, " ", path));
  if (stop_at_ > 0 && call >= stop_at_) return absl::OkStatus();
  if (fail_at_ > 0 && (call == fail_at_ || (fail_sticky_ && call > fail_at_))) {
    return absl::InternalError(StrCat("injected fault at call ", call, " (", op, " ", path, ")"));
  }
  return std::nullopt;
}

bool FaultInjectionFileSystem::IsLiveDirectory(const std::string& path) const {
  const std::string trimmed = TrimTrailingSlashes(path);
  return trimmed == "/" || live_directories_.count(trimmed) != 0;
}

absl::Status FaultInjectionFileSystem::CheckParentExists(std::string_view call,
                                                         const std::string& path) const {
  if (IsLiveDirectory(ParentPath(path))) return absl::OkStatus();
  return absl::NotFoundError(StrCat(call, " ", path, ": no such directory ", ParentPath(path)));
}

absl::StatusOr<std::string> FaultInjectionFileSystem::ReadFile(const std::string& path,
                                                               const ReadLimit& limit) const {
  if (auto it = live_.find(path); it != live_.end()) {
    const std::string& data = it->second.data;
    if (absl::Status size = CheckReadSize(path, data.size(), limit); !size.ok()) return size;
    return data;
  }
  if (IsLiveDirectory(path)) {
    return absl::FailedPreconditionError(StrCat(path, ": is a directory, not a file"));
  }
  return absl::NotFoundError(StrCat(path, ": no such file"));
}

absl::StatusOr<FileInfo> FaultInjectionFileSystem::Stat(const std::string& path) const {
  if (auto it = live_.find(path); it != live_.end()) return it->second.info;
  if (IsLiveDirectory(path)) {
    FileInfo info;
    info.is_directory = true;
    auto mode = directory_modes_.find(TrimTrailingSlashes(path));
    info.mode = mode != directory_modes_.end() ? mode->second : 0755;
    return info;
  }
  return absl::NotFoundError(StrCat(path, ": no such file or directory"));
}

absl::StatusOr<std::vector<std::string>> FaultInjectionFileSystem::ListDirectory(
    const std::string& path) const {
  const std::string directory = TrimTrailingSlashes(path);
  if (!IsLiveDirectory(directory)) {
    return absl::NotFoundError(StrCat(path, ": no such directory"));
  }
  std::set<std::string> names;
  for (const auto& entry : live_) {
    if (ParentPath(entry.first) == directory) names.insert(BaseName(entry.first));
  }
  for (const std::string& dir : live_directories_) {
    if (ParentPath(dir) == directory) names.insert(BaseName(dir));
  }
  return std::vector<std::string>(names.begin(), names.end());
}

absl::Status FaultInjectionFileSystem::WriteFile(const std::string& path, std::string_view data,
                                                 const FileInfo& attributes) {
  if (auto injected = Inject("WriteFile", path)) return *injected;
  if (absl::Status parent = CheckParentExists("open", path); !parent.ok()) return parent;
  if (IsLiveDirectory(path)) {
    return absl::FailedPreconditionError(StrCat("open ", path, ": is a directory"));
  }
  FileInfo info = attributes;
  info.is_directory = false;
  info.mode &= 07777;
  auto it = live_.find(path);
  if (it == live_.end()) {
    live_[path] = File{std::string(data), std::nullopt, info, next_inode_++};
    return absl::OkStatus();
  }
  // O_TRUNC on the same inode: the truncation may be on disk before the new data is, so every
  // durable name of this file now holds nothing until it is synced again.
  File& file = it->second;
  file.data = std::string(data);
  file.synced_data.reset();
  file.info = info;
  for (const auto& [durable_path, inode] : durable_inodes_) {
    if (inode == file.inode) durable_[durable_path].clear();
  }
  return absl::OkStatus();
}

absl::Status FaultInjectionFileSystem::SyncFile(const std::string& path) {
  if (auto injected = Inject("SyncFile", path)) return *injected;
  auto it = live_.find(path);
  if (it == live_.end()) return absl::NotFoundError(StrCat("open ", path, ": no such file"));
  File& file = it->second;
  file.synced_data = file.data;
  // The data belongs to the inode: a durable name that still refers to it (say, the name it
  // had before a rename whose directory is not yet synced) now has this data after a crash.
  for (const auto& [durable_path, inode] : durable_inodes_) {
    if (inode == file.inode) {
      durable_[durable_path] = file.data;
      durable_info_[durable_path] = file.info;
    }
  }
  return absl::OkStatus();
}

absl::Status FaultInjectionFileSystem::Rename(const std::string& from, const std::string& to) {
  if (auto injected = Inject("Rename", StrCat(from, " ", to))) return *injected;
  auto it = live_.find(from);
  if (it == live_.end()) {
    if (IsLiveDirectory(from)) {
      return absl::UnimplementedError(
          StrCat("rename ", from, " to ", to, ": renaming directories is not modelled"));
    }
    return absl::NotFoundError(StrCat("rename ", from, " to ", to, ": no such file ", from));
  }
  if (absl::Status parent = CheckParentExists("rename", to); !parent.ok()) return parent;
  if (IsLiveDirectory(to)) {
    return absl::FailedPreconditionError(
        StrCat("rename ", from, " to ", to, ": ", to, " is a directory"));
  }
  if (from == to) return absl::OkStatus();
  File file = std::move(it->second);
  live_.erase(it);
  live_[to] = std::move(file);
  return absl::OkStatus();
}

absl::Status FaultInjectionFileSystem::RemoveFile(const std::string& path) {
  if (auto injected = Inject("RemoveFile", path)) return *injected;
  auto it = live_.find(path);
  if (it == live_.end()) {
    if (IsLiveDirectory(path)) {
      return absl::FailedPreconditionError(StrCat("unlink ", path, ": is a directory"));
    }
    return absl::NotFoundError(StrCat("unlink ", path, ": no such file"));
  }
  live_.erase(it);
  return absl::OkStatus();
}

absl::Status FaultInjectionFileSystem::SyncDirectory(const std::string& path) {
  if (auto injected = Inject("SyncDirectory", path)) return *injected;
  const std::string directory = TrimTrailingSlashes(path);
  if (!IsLiveDirectory(directory)) {
    return absl::NotFoundError(StrCat("open ", path, ": no such directory"));
  }
  // Names removed (or renamed away) since the last sync.
  for (auto it = durable_.begin(); it != durable_.end();) {
    if (ParentPath(it->first) == directory && live_.count(it->first) == 0) {
      durable_info_.erase(it->first);
      durable_inodes_.erase(it->first);
      it = durable_.erase(it);
    } else {
      ++it;
    }
  }
  // Names created or renamed here: each now refers to its current file, with whatever data of
  // it was synced.
  for (const auto& [file_path, file] : live_) {
    if (ParentPath(file_path) != directory) continue;
    durable_[file_path] = file.synced_data.value_or("");
    durable_info_[file_path] = file.info;
    durable_inodes_[file_path] = file.inode;
  }
  // Directories created or removed here.
  for (auto it = durable_directories_.begin(); it != durable_directories_.end();) {
    const bool removed = ParentPath(*it) == directory && live_directories_.count(*it) == 0;
    it = removed ? durable_directories_.erase(it) : std::next(it);
  }
  for (const std::string& dir : live_directories_) {
    if (ParentPath(dir) == directory) durable_directories_.insert(dir);
  }
  return absl::OkStatus();
}

absl::Status FaultInjectionFileSystem::CreateDirectory(const std::string& path, unsigned mode) {
  if (auto injected = Inject("CreateDirectory", path)) return *injected;
  const std::string directory = TrimTrailingSlashes(path);
  if (live_.count(directory) != 0 || IsLiveDirectory(directory)) {
    return absl::AlreadyExistsError(StrCat("mkdir ", directory, ": already exists"));
  }
  if (absl::Status parent = CheckParentExists("mkdir", directory); !parent.ok()) return parent;
  live_directories_.insert(directory);
  directory_modes_[directory] = mode & 07777;
  return absl::OkStatus();
}

absl::Status FaultInjectionFileSystem::RemoveDirectory(const std::string& path) {
  if (auto injected = Inject("RemoveDirectory", path)) return *injected;
  const std::string directory = TrimTrailingSlashes(path);
  if (live_.count(directory) != 0 || !IsLiveDirectory(directory)) {
    return absl::NotFoundError(StrCat("rmdir ", directory, ": no such directory"));
  }
  bool empty = directory != "/";
  for (const auto& entry : live_) empty = empty && ParentPath(entry.first) != directory;
  for (const std::string& dir : live_directories_) empty = empty && ParentPath(dir) != directory;
  if (!empty) {
    return absl::FailedPreconditionError(StrCat("rmdir ", directory, ": directory not empty"));
  }
  live_directories_.erase(directory);
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<FileSystem::Lock>> FaultInjectionFileSystem::TryLock(
    const std::string& path) {
  if (live_.count(path) == 0) {
    // Created like any new file: live only, until its directory is synced.
    if (IsLiveDirectory(path)) {
      return absl::FailedPreconditionError(StrCat("open ", path, ": is a directory"));
    }
    if (absl::Status parent = CheckParentExists("open", path); !parent.ok()) return parent;
    FileInfo info;
    info.mode = 0600;
    live_[path] = File{"", std::nullopt, info, next_inode_++};
  }
  return locks_.Acquire(path);
}

void FaultInjectionFileSystem::SetFile(const std::string& path, std::string content,
                                       unsigned mode) {
  for (std::string dir = ParentPath(path); dir != "/" && !dir.empty(); dir = ParentPath(dir)) {
    live_directories_.insert(dir);
    durable_directories_.insert(dir);
    directory_modes_.emplace(dir, 0755);
  }
  FileInfo info;
  info.mode = mode;
  const uint64_t inode = next_inode_++;
  live_[path] = File{content, content, info, inode};
  durable_[path] = std::move(content);
  durable_info_[path] = info;
  durable_inodes_[path] = inode;
}

void FaultInjectionFileSystem::FailAtCall(int n, bool sticky) {
  fail_at_ = n;
  fail_sticky_ = sticky;
}

void FaultInjectionFileSystem::StopAtCall(int n) { stop_at_ = n; }

void FaultInjectionFileSystem::ClearFaults() {
  fail_at_ = 0;
  fail_sticky_ = false;
  stop_at_ = 0;
}

void FaultInjectionFileSystem::Crash() {
  // A directory survives only when its own name and those of all its ancestors are durable.
  std::set<std::string> directories;
  for (const std::string& dir : durable_directories_) {
    bool reachable = true;
    for (std::string parent = ParentPath(dir); parent != "/" && !parent.empty();
         parent = ParentPath(parent)) {
      if (durable_directories_.count(parent) == 0) {
        reachable = false;
        break;
      }
    }
    if (reachable) directories.insert(dir);
  }
  durable_directories_ = directories;
  live_directories_ = directories;
  for (auto it = directory_modes_.begin(); it != directory_modes_.end();) {
    it = directories.count(it->first) != 0 ? std::next(it) : directory_modes_.erase(it);
  }

  live_.clear();
  for (auto it = durable_.begin(); it != durable_.end();) {
    const std::string parent = ParentPath(it->first);
    if (parent != "/" && directories.count(parent) == 0) {
      durable_info_.erase(it->first);
      durable_inodes_.erase(it->first);
      it = durable_.erase(it);
      continue;
    }
    live_[it->first] =
        File{it->second, it->second, durable_info_[it->first], durable_inodes_[it->first]};
    ++it;
  }

  locks_.Clear();
  ClearFaults();
}

std::map<std::string, std::string> FaultInjectionFileSystem::Files() const {
  std::map<std::string, std::string> files;
  for (const auto& [path, file] : live_) files[path] = file.data;
  return files;
}

}  // namespace handoff
