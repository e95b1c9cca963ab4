// A FileSystem for tests that fails any write-side call on demand and can simulate a crash that
// loses everything not yet made durable (leveldb's fault_injection_test.cc is the model).
#ifndef HANDOFF_TESTS_SUPPORT_FAULT_INJECTION_FILE_SYSTEM_H_
#define HANDOFF_TESTS_SUPPORT_FAULT_INJECTION_FILE_SYSTEM_H_

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "tests/support/lock_table.h"
#include "tests/support/memory_file_system.h"

namespace handoff {

// Durability model (pessimistic, as on a file system without data=ordered guarantees):
// - a file's data is durable only after SyncFile; a name (creation, rename, removal) only after
//   SyncDirectory of its directory;
// - Crash() replaces the live state with the durable one: a file whose name is durable but whose
//   data never was comes back empty; an unsynced rename or removal is undone; locks are released.
// Files set up with SetFile (the fixture helper, as on MemoryFileSystem) are durable, and so are
// their parent directories. A directory made with CreateDirectory exists durably once its parent
// is synced (and a crash takes with it everything below a directory that was not durable).
// WriteFile over an existing file truncates it in place: until the next SyncFile a crash leaves
// it empty, even under a durable name (the truncation may reach the disk before the data).
// RemoveDirectory is undone by a crash unless the parent was synced after it (a directory
// removed and created again under the same name before that sync is not modelled).
// Reads (ReadFile, Stat, ListDirectory) see the live state. "/" always exists. Rename moves
// files only.
//
// Copyable, so that a test can run every fault from one starting state; a copy has everything
// but the locks (it starts with none). A Lock points back at the file system that made it,
// which must outlive it. Not thread-safe.
class FaultInjectionFileSystem : public FileSystem {
 public:
  FaultInjectionFileSystem() = default;
  // Every file and directory of `initial` is durable.
  explicit FaultInjectionFileSystem(const MemoryFileSystem& initial);

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
  absl::Status RemoveFile(const std::string& path) override;
  absl::Status SyncDirectory(const std::string& path) override;
  absl::Status CreateDirectory(const std::string& path, unsigned mode) override;
  absl::Status RemoveDirectory(const std::string& path) override;
  absl::StatusOr<std::unique_ptr<Lock>> TryLock(const std::string& path) override;

  // Fixture helpers: durable at once.
  void SetFile(const std::string& path, std::string content, unsigned mode = 0644);

  // Write-side calls (WriteFile, SyncFile, Rename, RemoveFile, SyncDirectory, CreateDirectory,
  // RemoveDirectory; not TryLock) made so far, counted from 1.
  int write_calls() const { return write_calls_; }
  // Those calls, in order, as "<Op> <path>" ("Rename <from> <to>"), whether they ran, failed or
  // were stopped.
  const std::vector<std::string>& call_log() const { return call_log_; }
  // Makes write-side call number `n` (and every later one, when `sticky`) fail with an
  // Internal error "injected fault at call n (<Op> <path>)" without doing anything.
  void FailAtCall(int n, bool sticky = true);
  // Makes every write-side call from number `n` on do nothing and report success, as if the
  // process had been killed just before it; call Crash() afterwards.
  void StopAtCall(int n);
  void ClearFaults();
  // Loses everything not durable, as a power cut or kill -9 plus page-cache loss would. The
  // process is gone with it: every lock is released (a Lock object from before becomes inert)
  // and the faults are cleared; write_calls() keeps counting.
  void Crash();

  // The live files, by path.
  std::map<std::string, std::string> Files() const;

 private:
  struct File {
    std::string data;
    std::optional<std::string> synced_data;  // what SyncFile last made durable
    FileInfo info;
    // Identifies the file across renames, so that SyncFile through its new name also makes
    // the data durable under an old name that is still the durable one.
    uint64_t inode = 0;
  };
  // Returns the injected error for the call about to be made, if any; counts it. An OK status
  // means "stopped": the call must do nothing and report success.
  std::optional<absl::Status> Inject(std::string_view op, const std::string& path);
  bool IsLiveDirectory(const std::string& path) const;
  // NotFound, naming `call`, unless the parent of `path` is a live directory.
  absl::Status CheckParentExists(std::string_view call, const std::string& path) const;

  std::map<std::string, File> live_;
  std::set<std::string> live_directories_;
  std::map<std::string, std::string> durable_;  // path → durable data
  std::map<std::string, FileInfo> durable_info_;
  std::set<std::string> durable_directories_;
  std::map<std::string, uint64_t> durable_inodes_;  // path → inode its durable name refers to
  std::map<std::string, unsigned> directory_modes_;
  LockTable locks_;
  uint64_t next_inode_ = 1;
  int write_calls_ = 0;
  std::vector<std::string> call_log_;
  int fail_at_ = 0;
  bool fail_sticky_ = false;
  int stop_at_ = 0;
};

}  // namespace handoff

#endif  // HANDOFF_TESTS_SUPPORT_FAULT_INJECTION_FILE_SYSTEM_H_
