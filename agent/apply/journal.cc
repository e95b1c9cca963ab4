#include "agent/apply/journal.h"

#include "agent/base/strings.h"
#include "agent/base/yaml_util.h"

namespace handoff {
namespace {

constexpr char kKind[] = "HandoffTransaction";

std::string FormatMode(unsigned mode) {
  char buffer[8];
  std::snprintf(buffer, sizeof(buffer), "%04o", mode & 07777);
  return buffer;
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
  const YAML::Node entries = doc["entries"];
  if (!entries.IsSequence()) return bad("entries is not a list");
  for (const YAML::Node& item : entries) {
    JournalEntry entry;
    std::optional<std::string> path = scalar(item, "path");
    std::optional<std::string> mode = scalar(item, "mode");
    if (!path || !mode) return bad("an entry lacks path or mode");
    entry.path = *path;
    entry.component = scalar(item, "component").value_or("");
    entry.existed = scalar(item, "existed") == std::optional<std::string>("true");
    entry.removes = scalar(item, "removes") == std::optional<std::string>("true");
    entry.attributes.mode = static_cast<unsigned>(std::stoul(*mode, nullptr, 8));
    entry.attributes.uid = static_cast<unsigned>(std::stoul(scalar(item, "uid").value_or("0")));
    entry.attributes.gid = static_cast<unsigned>(std::stoul(scalar(item, "gid").value_or("0")));
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
