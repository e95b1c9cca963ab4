// An in-memory FileSystem for tests and for evaluating plans without touching a node.
#ifndef HANDOFF_TESTS_SUPPORT_MEMORY_FILE_SYSTEM_H_
#define HANDOFF_TESTS_SUPPORT_MEMORY_FILE_SYSTEM_H_

#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "common/fs/file_system.h"
#include "tests/support/lock_table.h"

namespace handoff {

// Every write takes effect at once and nothing is ever lost (FaultInjectionFileSystem models
// durability). "/" always exists; a directory exists when it was created with CreateDirectory
// or when a file lies below it.
//
// Copyable, as a fixture; a copy starts with no locks held. A Lock points back at the file
// system that made it, which must outlive it.
class MemoryFileSystem : public FileSystem {
 public:
  using FileSystem::ReadFile;
  // Only files and directories exist here; the size limit is checked as on the real one.
  absl::StatusOr<std::string> ReadFile(const std::string& path,
                                       const ReadLimit& limit) const override;
  absl::StatusOr<FileInfo> Stat(const std::string& path) const override;
  absl::StatusOr<std::vector<std::string>> ListDirectory(const std::string& path) const override;

  absl::Status WriteFile(const std::string& path, std::string_view data,
                         const FileInfo& attributes) override;
  absl::Status SyncFile(const std::string& path) override;
  absl::Status Rename(const std::string& from, const std::string& to) override;
  // Unlike DeleteFile, leaves the parent directories in place, as unlink(2) does.
  absl::Status RemoveFile(const std::string& path) override;
  absl::Status SyncDirectory(const std::string& path) override;
  absl::Status CreateDirectory(const std::string& path, unsigned mode) override;
  absl::Status RemoveDirectory(const std::string& path) override;
  // Unavailable while a Lock on `path` from this file system is alive.
  absl::StatusOr<std::unique_ptr<Lock>> TryLock(const std::string& path) override;

  // Fixture helpers.
  // Creates or replaces a file; its parent directories come into being implicitly.
  void SetFile(const std::string& path, std::string content, unsigned mode = 0644);
  // Removes a file if present; a directory that only existed because of it goes too.
  void DeleteFile(const std::string& path);
  // Every file, by path.
  const std::map<std::string, std::string>& files() const { return files_; }
  // Directories made with CreateDirectory (or kept by RemoveFile and Rename), with their modes.
  const std::map<std::string, unsigned>& directories() const { return directories_; }

 private:
  bool IsDirectory(const std::string& path) const;
  // NotFound unless the parent of `path` is a directory.
  absl::Status CheckParentExists(std::string_view call, const std::string& path) const;

  std::map<std::string, std::string> files_;
  std::map<std::string, FileInfo> infos_;
  std::map<std::string, unsigned> directories_;
  LockTable locks_;
};

}  // namespace handoff

#endif  // HANDOFF_TESTS_SUPPORT_MEMORY_FILE_SYSTEM_H_
