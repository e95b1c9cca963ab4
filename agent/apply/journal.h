// The transaction journal: what one move of a node is about to change, written durably before
// the first change so that an interrupted move can always be undone.
//
// Layout under the state dir (never inside the kubelet's manifest directory):
//   transactions/<id>/journal.yaml   this record
//   transactions/<id>/files/<n>      the content of entries[n] before the transaction
#ifndef HANDOFF_AGENT_APPLY_JOURNAL_H_
#define HANDOFF_AGENT_APPLY_JOURNAL_H_

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/fs/file_system.h"

namespace handoff {

// Phases, in order. A transaction found "started" was interrupted and must be undone.
inline constexpr std::string_view kPhaseStarted = "started";
inline constexpr std::string_view kPhaseCommitted = "committed";
inline constexpr std::string_view kPhaseRolledBack = "rolled-back";
// Listed for a journal that exists but cannot be read; handoff then refuses to act.
inline constexpr std::string_view kPhaseDamaged = "damaged";

struct JournalEntry {
  std::string path;       // host path the transaction writes or removes
  std::string component;  // as in FileChange::component
  bool existed = false;   // whether the file existed before; if so its backup is files/<n>
  FileInfo attributes;    // mode and owner before (or for a new file, the ones it gets)
  bool removes = false;   // the transaction removes the file
};

struct Journal {
  std::string id;              // "<sequence>-<UTC time>-<from>-to-<to>", sorts in the order made
  std::string from;            // node state before
  std::string to;              // node state after
  std::string phase;           // kPhaseStarted, kPhaseCommitted or kPhaseRolledBack
  std::string kind = "apply";  // "apply" or "rollback" (undoing an earlier transaction)
  std::string undoes;          // for kind rollback: the id it undoes
  absl::Time started_at;
  std::vector<JournalEntry> entries;  // in write order
  std::string outcome;                // what happened, for `backups` and the coordinator

  std::string Emit() const;
  static absl::StatusOr<Journal> Parse(std::string_view text, std::string_view source);
};

// Paths of a transaction's files.
std::string TransactionsDir(const std::string& state_dir);
std::string TransactionDir(const std::string& state_dir, const std::string& id);
std::string JournalPath(const std::string& state_dir, const std::string& id);
std::string BackupPath(const std::string& state_dir, const std::string& id, size_t entry);

// Every transaction in the state dir, oldest first. A directory without a journal (a transaction
// interrupted before its journal was durable, which therefore changed nothing) is listed with
// phase "" so that it can be cleaned up; one whose journal does not parse with kPhaseDamaged.
absl::StatusOr<std::vector<Journal>> ListTransactions(const FileSystem& fs,
                                                      const std::string& state_dir);

}  // namespace handoff

#endif  // HANDOFF_AGENT_APPLY_JOURNAL_H_
