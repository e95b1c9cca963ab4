#include "agent/apply/journal.h"

#include <string>

#include "absl/status/status.h"
#include "common/base/strings.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/memory_file_system.h"

namespace handoff {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

constexpr char kStateDir[] = "/var/lib/handoff";
constexpr char kId[] = "0001-20240101T000000Z-in-tree-to-prepared";

constexpr char kHeader[] =
    "kind: HandoffTransaction\n"
    "id: 0001-20240101T000000Z-in-tree-to-prepared\n"
    "type: apply\n"
    "from: in-tree\n"
    "to: prepared\n"
    "phase: started\n"
    "startedAt: 2024-01-01T00:00:00Z\n";

// A journal with one entry whose fields are `entry` (flow-style map content).
std::string WithEntry(std::string_view entry) {
  return StrCat(kHeader, "entries:\n  - {", entry, "}\n");
}

constexpr char kGoodEntry[] =
    "path: /etc/kubernetes/manifests/kube-controller-manager.yaml, component: "
    "kube-controller-manager, existed: true, removes: false, mode: \"0600\", uid: 0, gid: 0";

TEST(JournalTest, EmitParseKeepsEveryField) {
  Journal journal;
  journal.id = kId;
  journal.from = "in-tree";
  journal.to = "prepared";
  journal.phase = std::string(kPhaseCommitted);
  journal.started_at = absl::FromUnixSeconds(1704067200);
  journal.outcome = "moved to prepared";
  journal.entries.push_back(JournalEntry{"/a", "kube-controller-manager", true,
                                         FileInfo{false, 07755, 0, 4294967294u}, false});
  journal.entries.push_back(JournalEntry{"/b", "leader-migration", false, FileInfo{}, true});
  absl::StatusOr<Journal> parsed = Journal::Parse(journal.Emit(), "journal.yaml");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  ASSERT_EQ(parsed->entries.size(), 2u);
  EXPECT_EQ(parsed->entries[0].attributes.mode, 07755u);
  EXPECT_EQ(parsed->entries[0].attributes.gid, 4294967294u);
  EXPECT_TRUE(parsed->entries[0].existed);
  EXPECT_TRUE(parsed->entries[1].removes);
  EXPECT_EQ(parsed->Emit(), journal.Emit());
}

TEST(JournalTest, AcceptsAModeWithoutLeadingZeroAndAbsentOwners) {
  absl::StatusOr<Journal> parsed = Journal::Parse(
      WithEntry("path: /a, existed: false, removes: false, mode: 644"), "journal.yaml");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->entries[0].attributes.mode, 0644u);
  EXPECT_EQ(parsed->entries[0].attributes.uid, 0u);
}

TEST(JournalTest, MissingEntriesIsDamagedNotACrash) {
  absl::StatusOr<Journal> parsed = Journal::Parse(StrCat(kHeader, "entrigs: []\n"), "j.yaml");
  EXPECT_EQ(parsed.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(parsed.status().message(), AllOf(HasSubstr("j.yaml"), HasSubstr("entries")));
}

TEST(JournalTest, EveryMalformedEntryFieldIsNamed) {
  struct Case {
    std::string entry;
    std::string field;
  };
  const std::string base = "path: /a, existed: true, removes: false";
  for (const Case& c : std::vector<Case>{
           {base + ", mode: x", "entries[0].mode"},
           {base + ", mode: \"07777777777777777777777\"", "entries[0].mode"},
           {base + ", mode: \"10000\"", "entries[0].mode"},
           {base + ", mode: \"0689\"", "entries[0].mode"},
           {base + ", mode: -644", "entries[0].mode"},
           {base + ", mode: [644]", "entries[0].mode"},
           {base, "entries[0].mode"},
           {base + ", mode: \"644\", uid: root", "entries[0].uid"},
           {base + ", mode: \"644\", uid: -1", "entries[0].uid"},
           {base + ", mode: \"644\", uid: \" 1\"", "entries[0].uid"},
           {base + ", mode: \"644\", uid: 4294967295", "entries[0].uid"},
           {base + ", mode: \"644\", gid: 99999999999999999999", "entries[0].gid"},
           {base + ", mode: \"644\", gid: 0x10", "entries[0].gid"},
           {base + ", mode: \"644\", gid: {a: 1}", "entries[0].gid"},
           {"path: /a, existed: yes, removes: false, mode: \"644\"", "entries[0].existed"},
           {"path: /a, existed: true, mode: \"644\"", "entries[0].removes"},
           {"existed: true, removes: false, mode: \"644\"", "entries[0].path"},
       }) {
    SCOPED_TRACE(c.entry);
    absl::StatusOr<Journal> parsed = Journal::Parse(WithEntry(c.entry), "/s/journal.yaml");
    EXPECT_EQ(parsed.status().code(), absl::StatusCode::kDataLoss);
    EXPECT_THAT(parsed.status().message(),
                AllOf(HasSubstr("/s/journal.yaml"), HasSubstr(c.field), HasSubstr("damaged")));
  }
  absl::StatusOr<Journal> not_a_map =
      Journal::Parse(StrCat(kHeader, "entries: [/a]\n"), "/s/journal.yaml");
  EXPECT_THAT(not_a_map.status().message(), HasSubstr("entries[0] is not a map"));
}

TEST(JournalTest, ListTransactionsListsAJournalThatDoesNotParseAsDamaged) {
  ASSERT_TRUE(Journal::Parse(WithEntry(kGoodEntry), "j").ok());
  MemoryFileSystem fs;
  fs.SetFile(JournalPath(kStateDir, kId), WithEntry("path: /a, mode: \"x\""), 0600);
  absl::StatusOr<std::vector<Journal>> listed = ListTransactions(fs, kStateDir);
  ASSERT_TRUE(listed.ok()) << listed.status();
  ASSERT_EQ(listed->size(), 1u);
  EXPECT_EQ(listed->front().phase, kPhaseDamaged);
  EXPECT_EQ(listed->front().id, kId);
  EXPECT_THAT(listed->front().outcome, HasSubstr(JournalPath(kStateDir, kId)));
}

}  // namespace
}  // namespace handoff
