// An in-memory FileSystem for tests and for evaluating plans without touching a node.
#ifndef HANDOFF_AGENT_FS_MEMORY_FILE_SYSTEM_H_
#define HANDOFF_AGENT_FS_MEMORY_FILE_SYSTEM_H_

#include <map>
#include <string>

#include "agent/fs/file_system.h"

namespace handoff {

class MemoryFileSystem : public FileSystem {
 public:
  absl::StatusOr<std::string> ReadFile(const std::string& path) const override;
  absl::StatusOr<FileInfo> Stat(const std::string& path) const override;
  absl::StatusOr<std::vector<std::string>> ListDirectory(const std::string& path) const override;

  // Creates or replaces a file; its parent directories come into being implicitly.
  void SetFile(const std::string& path, std::string content, unsigned mode = 0644);
  void RemoveFile(const std::string& path);
  // Every file, by path.
  const std::map<std::string, std::string>& files() const { return files_; }

 private:
  std::map<std::string, std::string> files_;
  std::map<std::string, unsigned> modes_;
};

}  // namespace handoff

#endif  // HANDOFF_AGENT_FS_MEMORY_FILE_SYSTEM_H_
