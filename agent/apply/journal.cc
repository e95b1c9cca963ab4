#include "agent/apply/journal.h"

#include <cstdint>
#include <limits>

#include "absl/strings/numbers.h"
#include "common/base/strings.h"
#include "common/base/yaml_util.h"

namespace handoff {
namespace {

constexpr char kKind[] = "HandoffTransaction";

std::string FormatMode(unsigned mode) {
  char buffer[8];
  std::snprintf(buffer, sizeof(buffer), "%04o", mode & 07777);
  return buffer;
}

// Permission bits as Emit writes them: octal digits, nothing else (no sign, no spaces).
std::optional<unsigned> ParseMode(std::string_view text) {
  if (text.empty()) return std::nullopt;
  unsigned mode = 0;
  for (char c : text) {
    if (c < '0' || c > '7') return std::nullopt;
    mode = mode * 8 + static_cast<unsigned>(c - '0');
    if (mode > 07777) return std::nullopt;  // also keeps `mode` from overflowing
  }
  return mode;
}

// A uid or gid in decimal. (uid_t)-1 is not an owner: chown(2) reads it as "leave unchanged".
std::optional<unsigned> ParseOwner(std::string_view text) {
  if (text.empty() || text.find_first_not_of("0123456789") != std::string_view::npos) {
    return std::nullopt;
  }
  uint32_t id = 0;
  if (!absl::SimpleAtoi(absl::string_view(text.data(), text.size()), &id) ||
      id == std::numeric_limits<uint32_t>::max()) {
    return std::nullopt;
  }
  return id;
}

}  // namespace

std::string TransactionsDir(const std::string& state_dir) {
  return StrCat(state_dir, EndsWith(state_dir, "/") ? "" : "/", "transactions");
}
std::string TransactionDir(const std::string& state_dir, const std::string& id) {
  return StrCat(TransactionsDir(state_dir), "/", id);
}
std::string JournalPath(const std::string& state_dir, const std::string& id) {
  return StrCat(TransactionDir(state_dir, id), "/journal.yaml");
}
std::string BackupPath(const std::string& state_dir, const std::string& id, size_t entry) {
  return StrCat(TransactionDir(state_dir, id), "/files/", entry);
}

std::string Journal::Emit() const {
  YAML::Node root;
  root["kind"] = kKind;
  root["id"] = id;
  root["type"] = kind;
  if (!undoes.empty()) root["undoes"] = undoes;
  root["from"] = from;
  root["to"] = to;
  root["phase"] = phase;
  root["startedAt"] = absl::FormatTime(absl::RFC3339_sec, started_at, absl::UTCTimeZone());
  YAML::Node entries_node(YAML::NodeType::Sequence);
  for (const JournalEntry& entry : entries) {
    YAML::Node item;
    item["path"] = entry.path;
    item["component"] = entry.component;
    item["existed"] = YAML::Load(entry.existed ? "true" : "false");
    item["removes"] = YAML::Load(entry.removes ? "true" : "false");
    item["mode"] = FormatMode(entry.attributes.mode);
    item["uid"] = YAML::Load(std::to_string(entry.attributes.uid));
    item["gid"] = YAML::Load(std::to_string(entry.attributes.gid));
    entries_node.push_back(item);
  }
  root["entries"] = entries_node;
  if (!outcome.empty()) root["outcome"] = outcome;
  return EmitYaml(root);
}

absl::StatusOr<Journal> Journal::Parse(std::string_view text, std::string_view source) {
  absl::StatusOr<YAML::Node> root = LoadYaml(text, source);
  if (!root.ok()) return root.status();
  const YAML::Node& doc = *root;
  auto bad = [&](std::string_view what) {
    return absl::DataLossError(StrCat(source, ": ", what, " (a damaged transaction journal)"));
  };
  auto scalar = [&](const YAML::Node& node, const char* key) -> std::optional<std::string> {
    if (!HasField(node, key, YAML::NodeType::Scalar)) return std::nullopt;
    return node[key].Scalar();
  };
  if (scalar(doc, "kind") != std::optional<std::string>(kKind))
    return bad("kind is not HandoffTransaction");
  Journal journal;
  for (auto [field, out] : {std::pair<const char*, std::string*>{"id", &journal.id},
                            {"from", &journal.from},
                            {"to", &journal.to},
                            {"phase", &journal.phase},
                            {"type", &journal.kind}}) {
    std::optional<std::string> value = scalar(doc, field);
    if (!value) return bad(StrCat(field, " is missing"));
    *out = *value;
  }
  journal.undoes = scalar(doc, "undoes").value_or("");
  journal.outcome = scalar(doc, "outcome").value_or("");
  std::string error;
  if (!absl::ParseTime(absl::RFC3339_full, scalar(doc, "startedAt").value_or(""),
                       &journal.started_at, &error)) {
    return bad("startedAt is not a time");
  }
  // Indexing a missing key of a const node gives a node that throws when asked anything;
  // HasField never does.
  if (!HasField(doc, "entries", YAML::NodeType::Sequence)) return bad("entries is not a list");
  const YAML::Node entries = doc["entries"];
  for (size_t i = 0; i < entries.size(); ++i) {
    const YAML::Node item = entries[i];
    const std::string where = StrCat("entries[", i, "]");
    if (!item.IsMap()) return bad(StrCat(where, " is not a map"));
    JournalEntry entry;
    std::optional<std::string> path = scalar(item, "path");
    if (!path || path->empty()) return bad(StrCat(where, ".path is missing"));
    entry.path = *path;
    entry.component = scalar(item, "component").value_or("");
    // Whether a backup exists decides how the file is undone: a value that is neither true nor
    // false is not taken as either.
    for (auto [field, out] : {std::pair<const char*, bool*>{"existed", &entry.existed},
                              {"removes", &entry.removes}}) {
      std::optional<std::string> value = scalar(item, field);
      if (value != "true" && value != "false") {
        return bad(StrCat(where, ".", field, " is not true or false"));
      }
      *out = value == "true";
    }
    std::optional<unsigned> mode = ParseMode(scalar(item, "mode").value_or(""));
    if (!mode) return bad(StrCat(where, ".mode is not a file mode in octal (0000 to 7777)"));
    entry.attributes.mode = *mode;
    for (auto [field, out] : {std::pair<const char*, unsigned*>{"uid", &entry.attributes.uid},
                              {"gid", &entry.attributes.gid}}) {
      if (!item[field].IsDefined()) continue;  // root, as before owners were recorded
      std::optional<unsigned> id = ParseOwner(scalar(item, field).value_or(""));
      if (!id) {
        return bad(StrCat(where, ".", field, " is not a user or group id (0 to 4294967294)"));
      }
      *out = *id;
    }
    journal.entries.push_back(std::move(entry));
  }
  return journal;
}

absl::StatusOr<std::vector<Journal>> ListTransactions(const FileSystem& fs,
                                                      const std::string& state_dir) {
  std::vector<Journal> journals;
  absl::StatusOr<std::vector<std::string>> ids = fs.ListDirectory(TransactionsDir(state_dir));
  if (!ids.ok()) {
    if (absl::IsNotFound(ids.status())) return journals;
    return ids.status();
  }
  for (const std::string& id : *ids) {
    if (StartsWith(id, ".")) continue;
    const std::string path = JournalPath(state_dir, id);
    absl::StatusOr<std::string> text = fs.ReadFile(path, kJournalRead);
    absl::StatusOr<Journal> journal =
        text.ok() ? Journal::Parse(*text, path) : absl::StatusOr<Journal>(text.status());
    if (!journal.ok()) {
      if (!text.ok() && !absl::IsNotFound(text.status())) return text.status();
      Journal unreadable;
      unreadable.id = id;
      // No journal: interrupted before it was durable, so nothing was changed. A journal that
      // does not parse is another matter: what it covered is unknown.
      unreadable.phase = absl::IsNotFound(text.status()) ? "" : std::string(kPhaseDamaged);
      unreadable.outcome = std::string(journal.status().message());
      journals.push_back(std::move(unreadable));
      continue;
    }
    journals.push_back(*std::move(journal));
  }
  return journals;
}

}  // namespace handoff
