// The advisory locks of an in-memory file system (MemoryFileSystem, FaultInjectionFileSystem).
#ifndef HANDOFF_TESTS_SUPPORT_LOCK_TABLE_H_
#define HANDOFF_TESTS_SUPPORT_LOCK_TABLE_H_

#include <memory>
#include <set>
#include <string>
#include <utility>

#include "absl/status/statusor.h"
#include "common/base/strings.h"
#include "common/fs/file_system.h"

namespace handoff {

// The paths locked through one file system object. Locks belong to the object that handed them
// out, not to its value: a copy starts with none, and assignment keeps the target's own, so
// that a file system copied as a test fixture never holds a lock nobody can release.
class LockTable {
 public:
  LockTable() = default;
  LockTable(const LockTable&) {}
  LockTable& operator=(const LockTable&) { return *this; }

  // A lock on `path` that points back at this table, which must outlive it. Unavailable when
  // `path` is locked.
  absl::StatusOr<std::unique_ptr<FileSystem::Lock>> Acquire(const std::string& path) {
    if (paths_.count(path) != 0) {
      return absl::UnavailableError(StrCat(path, " is locked by another holder"));
    }
    paths_.insert(path);
    return std::make_unique<Held>(this, path, epoch_);
  }

  // Releases every lock, as the death of the process would. A Lock from before becomes inert:
  // its destruction does not release a lock taken on its path since.
  void Clear() {
    paths_.clear();
    ++epoch_;
  }

 private:
  class Held : public FileSystem::Lock {
   public:
    Held(LockTable* table, std::string path, int epoch)
        : table_(table), path_(std::move(path)), epoch_(epoch) {}
    Held(const Held&) = delete;
    Held& operator=(const Held&) = delete;
    ~Held() override {
      if (table_->epoch_ == epoch_) table_->paths_.erase(path_);
    }

   private:
    LockTable* table_;
    std::string path_;
    int epoch_;
  };

  std::set<std::string> paths_;
  int epoch_ = 0;
};

}  // namespace handoff

#endif  // HANDOFF_TESTS_SUPPORT_LOCK_TABLE_H_
