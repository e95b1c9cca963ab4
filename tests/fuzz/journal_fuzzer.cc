// Transaction journals (transactions/<id>/journal.yaml): a damaged journal is reported, never a
// crash, and a journal that parses comes back from Emit → Parse with the same content (a journal
// rewritten with its new phase must still say what to undo). ListTransactions reads it through
// the in-memory file system as `recover` and `backups` do.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "agent/apply/journal.h"
#include "tests/fuzz/fuzz_check.h"
#include "tests/support/memory_file_system.h"

namespace handoff {
namespace {

constexpr char kStateDir[] = "/var/lib/handoff";
constexpr char kId[] = "0001-20240101T000000Z-in-tree-to-prepared";

bool SameEntries(const Journal& a, const Journal& b) {
  if (a.entries.size() != b.entries.size()) return false;
  for (size_t i = 0; i < a.entries.size(); ++i) {
    const JournalEntry& x = a.entries[i];
    const JournalEntry& y = b.entries[i];
    if (x.path != y.path || x.component != y.component || x.existed != y.existed ||
        x.removes != y.removes || (x.attributes.mode & 07777) != (y.attributes.mode & 07777) ||
        x.attributes.uid != y.attributes.uid || x.attributes.gid != y.attributes.gid) {
      return false;
    }
  }
  return true;
}

void FuzzOne(std::string_view text) {
  absl::StatusOr<Journal> journal = Journal::Parse(text, "journal.yaml");
  if (journal.ok()) {
    const std::string emitted = journal->Emit();
    absl::StatusOr<Journal> reparsed = Journal::Parse(emitted, "emitted.yaml");
    FUZZ_CHECK(reparsed.ok(), std::string(reparsed.status().message()) + "; emitted:\n" + emitted);
    FUZZ_CHECK(reparsed->id == journal->id && reparsed->from == journal->from &&
                   reparsed->to == journal->to && reparsed->phase == journal->phase &&
                   reparsed->kind == journal->kind && reparsed->undoes == journal->undoes &&
                   reparsed->outcome == journal->outcome,
               "a field changed; emitted:\n" + emitted);
    // Emit writes whole seconds.
    FUZZ_CHECK(absl::ToUnixSeconds(reparsed->started_at) ==
                   absl::ToUnixSeconds(journal->started_at),
               "startedAt changed; emitted:\n" + emitted);
    FUZZ_CHECK(SameEntries(*journal, *reparsed), "an entry changed; emitted:\n" + emitted);
    FUZZ_CHECK(reparsed->Emit() == emitted, "Emit is not a fixed point; emitted:\n" + emitted);
  }

  MemoryFileSystem fs;
  fs.SetFile(JournalPath(kStateDir, kId), std::string(text), 0600);
  absl::StatusOr<std::vector<Journal>> listed = ListTransactions(fs, kStateDir);
  FUZZ_CHECK(listed.ok(), listed.status().message());
  FUZZ_CHECK(listed->size() == 1, "one transaction directory, not one journal listed");
  FUZZ_CHECK(journal.ok() || listed->front().phase == kPhaseDamaged,
             "a journal that does not parse is not listed as damaged");
}

}  // namespace
}  // namespace handoff

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  handoff::FuzzOne(std::string_view(reinterpret_cast<const char*>(data), size));
  return 0;
}
