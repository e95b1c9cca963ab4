// Lint for LeaderMigrationConfiguration files: the upstream validation
// (k8s.io/controller-manager pkg/leadermigration/config), the stricter rules a safe migration
// needs, and the mistakes that the upstream documentation page itself contains.
#include <algorithm>
#include <charconv>
#include <map>
#include <regex>
#include <tuple>
#include <utility>

#include "absl/status/status.h"
#include "agent/leadermigration/config.h"
#include "common/base/strings.h"
#include "common/base/yaml_util.h"
#include "yaml-cpp/yaml.h"

namespace handoff::leadermigration {
namespace {

constexpr std::string_view kKindField = "kind";
constexpr std::string_view kApiVersionField = "apiVersion";
constexpr std::string_view kLeaderNameField = "leaderName";
constexpr std::string_view kResourceLockField = "resourceLock";
constexpr std::string_view kControllerLeadersField = "controllerLeaders";
constexpr std::string_view kNameField = "name";
constexpr std::string_view kComponentField = "component";

constexpr std::string_view kLeases = "leases";
constexpr std::string_view kEndpoints = "endpoints";
constexpr std::string_view kComponentChoices =
    "use kube-controller-manager, cloud-controller-manager or \"*\"";
// Decoding became strict in 1.32 (kubernetes/kubernetes#128009).
constexpr std::string_view kUnknownFieldEffect =
    "before 1.32 it is ignored, from 1.32 the manager refuses to start";

std::string Quote(std::string_view text) { return StrCat("\"", text, "\""); }

void AddLineProblem(std::vector<Problem>& problems, int line, std::string_view field,
                    std::string message) {
  problems.push_back(Problem{line, std::string(field), std::move(message)});
}

void AddFieldProblem(std::vector<Problem>& problems, std::string_view field, std::string message) {
  problems.push_back(Problem{0, std::string(field), std::move(message)});
}

// ---------------------------------------------------------------------------------------------
// Text stage: the upstream page's own mistakes, found and repaired before YAML parsing so that
// linting can go on and report everything else too. Repairs never add or remove lines, so every
// later line number still points into the operator's file.

std::vector<std::string> SplitLines(std::string_view text) {
  std::vector<std::string> lines = ToStrings(StrSplit(text, "\n"));
  for (std::string& line : lines) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
  }
  return lines;
}

bool IsBlankOrComment(const std::string& line) {
  const size_t first = line.find_first_not_of(" \t");
  return first == std::string::npos || line[first] == '#';
}

size_t IndentOf(const std::string& line) {
  const size_t first = line.find_first_not_of(' ');
  return first == std::string::npos ? line.size() : first;
}

// The next line after `from` that holds YAML content, or lines.size().
size_t NextContentLine(const std::vector<std::string>& lines, size_t from) {
  size_t next = from + 1;
  while (next < lines.size() && IsBlankOrComment(lines[next])) ++next;
  return next;
}

// The page's wildcard examples write `component: *`. An unquoted `*` starts a YAML alias (here
// with no anchor name), so the whole file fails to parse; "*" must be quoted.
void RepairUnquotedStars(std::vector<std::string>& lines, std::vector<Problem>& problems) {
  // Built once: compiling a std::regex costs far more than matching every line of a file.
  static const std::regex star_value(
      R"(^(\s*(?:-\s+)?)([A-Za-z_][A-Za-z0-9_.-]*)(\s*:\s+)\*(\s*(?:#.*)?)$)");
  for (size_t i = 0; i < lines.size(); ++i) {
    std::smatch match;
    if (!std::regex_match(lines[i], match, star_value)) continue;
    const std::string key = match[2].str();
    AddLineProblem(
        problems, static_cast<int>(i) + 1, "",
        StrCat(Quote(StrCat(key, ": *")),
               " does not parse: an unquoted * starts a YAML alias; write ", key, ": \"*\""));
    lines[i] = StrCat(match[1].str(), key, match[3].str(), "\"*\"", match[4].str());
  }
}

// One `- name: X` / `- component: Y` line of a block sequence.
struct ListItemLine {
  size_t dash_column = 0;
  size_t key_column = 0;
  std::string key;
  std::string value;  // without a trailing comment or surrounding quotes
};

std::optional<ListItemLine> ParseListItemLine(const std::regex& list_item,
                                              const std::string& line) {
  std::smatch match;
  if (!std::regex_match(line, match, list_item)) return std::nullopt;
  ListItemLine item;
  item.dash_column = match[1].length();
  item.key_column = item.dash_column + 1 + match[2].length();
  item.key = match[3].str();
  std::string value_text = match[4].str();
  const size_t comment = value_text.find(" #");
  if (comment != std::string::npos) value_text.resize(comment);
  std::string trimmed(StripWhitespace(value_text));
  if (trimmed.size() >= 2 && (trimmed.front() == '"' || trimmed.front() == '\'') &&
      trimmed.back() == trimmed.front()) {
    trimmed = trimmed.substr(1, trimmed.size() - 2);
  }
  item.value = trimmed;
  return item;
}

// The page's nodeipam example splits one entry over two list items:
//     - name: nodeipam
//     - component: *
// which YAML reads as two half-entries (one without component, one without name). Reported once,
// on the second line, and repaired by turning its "- " into indentation under the first key.
void RepairSplitEntries(std::vector<std::string>& lines, std::vector<Problem>& problems) {
  static const std::regex list_item(R"(^( *)-( +)(name|component)\s*:(.*)$)");
  for (size_t i = 0; i < lines.size(); ++i) {
    const std::optional<ListItemLine> first = ParseListItemLine(list_item, lines[i]);
    if (!first) continue;
    const size_t j = NextContentLine(lines, i);
    if (j >= lines.size()) continue;
    const std::optional<ListItemLine> second = ParseListItemLine(list_item, lines[j]);
    if (!second || second->dash_column != first->dash_column || second->key == first->key) continue;
    // A second item that goes on with keys of its own is a complete entry, not a split one.
    const size_t k = NextContentLine(lines, j);
    if (k < lines.size() && IndentOf(lines[k]) > second->dash_column) continue;

    const std::string entry =
        first->key == kNameField
            ? StrCat("the entry for ", Quote(first->value), " (line ", i + 1, ")")
            : StrCat("the entry on line ", i + 1);
    AddLineProblem(problems, static_cast<int>(j) + 1, "",
                   StrCat(Quote(StrCat("- ", second->key, ":")), " starts a new list item, so ",
                          entry, " has no ", second->key, "; remove the \"- \" so that ",
                          second->key, " sits under ", first->key));
    lines[j] = StrCat(std::string(first->key_column, ' '), lines[j].substr(second->key_column));
    i = j;
  }
}

// ---------------------------------------------------------------------------------------------
// YAML stage.

int LineOf(const YAML::Node& node) {
  const YAML::Mark mark = node.Mark();
  return mark.is_null() ? 0 : mark.line + 1;
}

std::string JoinPath(std::string_view path, std::string_view key) {
  return path.empty() ? std::string(key) : StrCat(path, ".", key);
}

std::string_view NodeKind(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Sequence:
      return "a list";
    case YAML::NodeType::Map:
      return "a mapping";
    case YAML::NodeType::Scalar:
      return "a single value";
    default:
      return "empty";
  }
}

// One key of a mapping. With duplicate keys the value is the last one (what sigs.k8s.io/yaml
// used before 1.32) and `line` the first key's line.
struct MapEntry {
  std::string key;
  int line = 0;
  YAML::Node value;
};

enum class Presence { kAbsent, kInvalid, kPresent };

struct StringValue {
  Presence presence = Presence::kAbsent;
  std::string value;
};

struct LeaderEntry {
  std::string path;  // "controllerLeaders[2]"
  StringValue name;
  StringValue component;
};

class Validator {
 public:
  Validator(const LintOptions& options, std::vector<Problem>& problems)
      : options_(options), problems_(problems) {}

  // Checks one decoded document; returns what it decoded when the document is a mapping.
  std::optional<Config> Check(const YAML::Node& root);

 private:
  std::vector<MapEntry> Entries(const YAML::Node& map, std::string_view path);
  StringValue ReadString(const std::vector<MapEntry>& entries, std::string_view key,
                         const std::string& field);
  void CheckKind(const std::vector<MapEntry>& entries);
  std::optional<ApiVersionInfo> CheckApiVersion(const std::vector<MapEntry>& entries,
                                                Config& config);
  void CheckUnknownTopLevelFields(const std::vector<MapEntry>& entries,
                                  const std::optional<ApiVersionInfo>& api);
  void CheckResourceLock(const std::vector<MapEntry>& entries,
                         const std::optional<ApiVersionInfo>& api, Config& config);
  void CheckControllerLeaders(const std::vector<MapEntry>& entries, Config& config);
  void CheckForReader(const std::optional<ApiVersionInfo>& api);
  std::string Reader() const;

  const LintOptions& options_;
  std::vector<Problem>& problems_;
  std::vector<LeaderEntry> leaders_;
};

std::vector<MapEntry> Validator::Entries(const YAML::Node& map, std::string_view path) {
  std::vector<MapEntry> entries;
  std::map<std::string, size_t> index;
  for (YAML::const_iterator it = map.begin(); it != map.end(); ++it) {
    const int line = LineOf(it->first);
    if (!it->first.IsScalar()) {
      AddLineProblem(problems_, line, path,
                     StrCat("a key in ", path.empty() ? "the document" : path,
                            " is not a plain name; keys must be field names"));
      continue;
    }
    const std::string key = it->first.Scalar();
    auto [found, inserted] = index.emplace(key, entries.size());
    if (inserted) {
      entries.push_back(MapEntry{key, line, it->second});
      continue;
    }
    // yaml-cpp keeps duplicate keys silently; Kubernetes 1.32+ refuse them, older releases take
    // the last one. Either way one of the two is not what the operator meant.
    MapEntry& first = entries[found->second];
    AddLineProblem(
        problems_, line, JoinPath(path, key),
        StrCat("duplicate key ", Quote(key), path.empty() ? "" : " in ", path, " (first on line ",
               first.line,
               "); before 1.32 the last one silently wins, from 1.32 the manager refuses to start: "
               "keep one"));
    first.value = it->second;
  }
  return entries;
}

StringValue Validator::ReadString(const std::vector<MapEntry>& entries, std::string_view key,
                                  const std::string& field) {
  StringValue result;
  auto it = std::find_if(entries.begin(), entries.end(),
                         [&](const MapEntry& entry) { return entry.key == key; });
  if (it == entries.end() || it->value.IsNull()) return result;
  if (!it->value.IsScalar()) {
    result.presence = Presence::kInvalid;
    AddFieldProblem(problems_, field, StrCat("is ", NodeKind(it->value), ", not a string"));
    return result;
  }
  const std::string& text = it->value.Scalar();
  // Kubernetes resolves plain scalars with YAML 1.1 rules, so `name: yes` or `name: 1` fail to
  // decode into a string field (as does `name: !!int "1"`).
  const JsonScalarType type = JsonTypeOf(it->value);
  if (type == JsonScalarType::kNull) return result;
  if (type != JsonScalarType::kString) {
    result.presence = Presence::kInvalid;
    AddFieldProblem(problems_, field,
                    StrCat("YAML reads ", text, " as a ",
                           type == JsonScalarType::kNumber ? "number" : "boolean",
                           ", not a string; quote it: ", key, ": ", Quote(text)));
    return result;
  }
  if (text.empty()) return result;
  result.presence = Presence::kPresent;
  result.value = text;
  return result;
}

std::string Validator::Reader() const {
  std::string version = options_.version ? options_.version->ToString() : "";
  if (options_.component) {
    return version.empty() ? std::string(ComponentName(*options_.component))
                           : StrCat(ComponentName(*options_.component), " ", version);
  }
  return StrCat("a ", version, " controller manager");
}

void Validator::CheckKind(const std::vector<MapEntry>& entries) {
  const StringValue kind = ReadString(entries, kKindField, std::string(kKindField));
  if (kind.presence == Presence::kAbsent) {
    AddFieldProblem(problems_, kKindField, StrCat("missing; write kind: ", kKind));
  } else if (kind.presence == Presence::kPresent && kind.value != kKind) {
    AddFieldProblem(problems_, kKindField,
                    StrCat(Quote(kind.value), " is not ", kKind, "; write kind: ", kKind));
  }
}

std::optional<ApiVersionInfo> Validator::CheckApiVersion(const std::vector<MapEntry>& entries,
                                                         Config& config) {
  const std::vector<ApiVersionInfo> known = ApiVersions();
  const std::string_view newest = known.back().api_version;
  const StringValue api = ReadString(entries, kApiVersionField, std::string(kApiVersionField));
  if (api.presence == Presence::kAbsent) {
    AddFieldProblem(problems_, kApiVersionField, StrCat("missing; write apiVersion: ", newest));
  }
  if (api.presence != Presence::kPresent) return std::nullopt;
  config.api_version = api.value;
  if (std::optional<ApiVersionInfo> info = FindApiVersion(api.value)) return info;

  const size_t slash = api.value.rfind('/');
  const std::string_view group =
      slash == std::string::npos ? "" : std::string_view(api.value).substr(0, slash);
  const std::string_view version = slash == std::string::npos
                                       ? std::string_view(api.value)
                                       : std::string_view(api.value).substr(slash + 1);
  if (group != kGroup) {
    // Keep the operator's version when it is one of ours ("v1beta1" without its group).
    std::optional<ApiVersionInfo> same_version = FindApiVersion(StrCat(kGroup, "/", version));
    AddFieldProblem(problems_, kApiVersionField,
                    StrCat(Quote(api.value), " is not in group ", kGroup, "; write apiVersion: ",
                           same_version ? same_version->api_version : newest));
    return std::nullopt;
  }
  std::vector<std::string> choices;
  for (auto it = known.rbegin(); it != known.rend(); ++it) {
    choices.push_back(
        StrCat(it->api_version.substr(kGroup.size() + 1), " (v1.", it->first_minor, "+)"));
  }
  const std::string last = choices.back();
  choices.pop_back();
  AddFieldProblem(problems_, kApiVersionField,
                  StrCat(Quote(api.value), " is not a version of ", kKind, "; use ",
                         StrJoin(choices, ", "), " or ", last));
  return std::nullopt;
}

void Validator::CheckUnknownTopLevelFields(const std::vector<MapEntry>& entries,
                                           const std::optional<ApiVersionInfo>& api) {
  // Without a usable apiVersion, resourceLock gets the benefit of the doubt.
  const bool has_resource_lock = !api || api->has_resource_lock;
  for (const MapEntry& entry : entries) {
    if (entry.key == kKindField || entry.key == kApiVersionField || entry.key == kLeaderNameField ||
        entry.key == kControllerLeadersField) {
      continue;
    }
    if (entry.key == kResourceLockField) {
      if (has_resource_lock) continue;
      // v1 dropped the field (its conversion always sets leases), but files carried over from
      // v1alpha1/v1beta1, and guides written for them, still have it.
      AddLineProblem(problems_, entry.line, kResourceLockField,
                     StrCat("resourceLock is not a field of ", api->api_version,
                            " (v1 always uses leases); remove it: ", kUnknownFieldEffect));
      continue;
    }
    AddLineProblem(problems_, entry.line, entry.key,
                   StrCat("unknown field ", Quote(entry.key), "; ", kKind,
                          " has only kind, apiVersion, leaderName",
                          has_resource_lock ? ", resourceLock and " : " and ",
                          "controllerLeaders (", kUnknownFieldEffect, ")"));
  }
}

void Validator::CheckResourceLock(const std::vector<MapEntry>& entries,
                                  const std::optional<ApiVersionInfo>& api, Config& config) {
  if (api && !api->has_resource_lock) return;  // reported as a field v1 does not have
  const StringValue lock = ReadString(entries, kResourceLockField, std::string(kResourceLockField));
  if (lock.presence == Presence::kAbsent) {
    // v1alpha1/v1beta1 have no default for it: upstream validation fails on an empty lock.
    if (api) {
      AddFieldProblem(problems_, kResourceLockField,
                      StrCat("missing; ", api->api_version,
                             " requires it and has no default: add resourceLock: ", kLeases));
    }
    return;
  }
  if (lock.presence != Presence::kPresent) return;
  config.resource_lock = lock.value;
  if (lock.value == kEndpoints) {
    // Upstream validation still accepts "endpoints", but client-go removed endpoints-based
    // locks, so a manager with this file cannot take the migration lease.
    AddFieldProblem(problems_, kResourceLockField,
                    StrCat(Quote(kEndpoints),
                           " locks were removed from client-go, so no manager can take the "
                           "migration lease; use resourceLock: ",
                           kLeases));
  } else if (lock.value != kLeases) {
    AddFieldProblem(problems_, kResourceLockField,
                    StrCat(Quote(lock.value), " is not a lock type; use resourceLock: ", kLeases));
  }
}

void Validator::CheckControllerLeaders(const std::vector<MapEntry>& entries, Config& config) {
  auto it = std::find_if(entries.begin(), entries.end(), [](const MapEntry& entry) {
    return entry.key == kControllerLeadersField;
  });
  // Upstream accepts an empty list, but then every controller runs outside the migration lease,
  // in both managers at once.
  constexpr std::string_view kNothingMigrates =
      ", so no controller runs under the migration lease and two managers can run the same "
      "cloud controller at once; list the controllers to migrate";
  if (it == entries.end() || it->value.IsNull()) {
    AddFieldProblem(problems_, kControllerLeadersField, StrCat("missing", kNothingMigrates));
    return;
  }
  if (!it->value.IsSequence()) {
    AddFieldProblem(
        problems_, kControllerLeadersField,
        StrCat("is ", NodeKind(it->value), ", not a list of entries with name and component"));
    return;
  }
  if (it->value.size() == 0) {
    AddFieldProblem(problems_, kControllerLeadersField, StrCat("empty", kNothingMigrates));
    return;
  }

  std::map<std::string, size_t> first_with_name;
  for (size_t i = 0; i < it->value.size(); ++i) {
    const YAML::Node item = it->value[i];
    LeaderEntry leader;
    leader.path = StrCat(kControllerLeadersField, "[", i, "]");
    if (!item.IsMap()) {
      AddFieldProblem(problems_, leader.path,
                      StrCat("is ", NodeKind(item), ", not a mapping with name and component"));
      leaders_.push_back(leader);
      config.controller_leaders.push_back({});
      continue;
    }
    const std::vector<MapEntry> fields = Entries(item, leader.path);
    for (const MapEntry& field : fields) {
      if (field.key == kNameField || field.key == kComponentField) continue;
      AddLineProblem(problems_, field.line, JoinPath(leader.path, field.key),
                     StrCat("unknown field ", Quote(field.key), " in ", leader.path,
                            "; an entry has only name and component (", kUnknownFieldEffect, ")"));
    }
    const std::string name_field = JoinPath(leader.path, kNameField);
    const std::string component_field = JoinPath(leader.path, kComponentField);
    leader.name = ReadString(fields, kNameField, name_field);
    leader.component = ReadString(fields, kComponentField, component_field);

    if (leader.name.presence == Presence::kAbsent) {
      AddFieldProblem(problems_, name_field,
                      "missing; write the name of the controller to migrate (e.g. route)");
    } else if (leader.name.presence == Presence::kPresent) {
      auto [found, inserted] = first_with_name.emplace(leader.name.value, i);
      if (!inserted) {
        // Upstream keeps the entries in a map by name: the later entry silently wins.
        AddFieldProblem(problems_, name_field,
                        StrCat(Quote(leader.name.value), " is also the name of ",
                               kControllerLeadersField, "[", found->second,
                               "]; upstream silently keeps only the later entry, so remove "
                               "one"));
      }
    }
    if (leader.component.presence == Presence::kAbsent) {
      AddFieldProblem(problems_, component_field, StrCat("missing; ", kComponentChoices));
    } else if (leader.component.presence == Presence::kPresent &&
               leader.component.value != kAnyComponent &&
               !ParseComponent(leader.component.value).ok()) {
      AddFieldProblem(problems_, component_field,
                      StrCat(Quote(leader.component.value), " is not a controller manager; ",
                             kComponentChoices));
      leader.component.presence = Presence::kInvalid;
    }
    config.controller_leaders.push_back({leader.name.value, leader.component.value});
    leaders_.push_back(leader);
  }
}

void Validator::CheckForReader(const std::optional<ApiVersionInfo>& api) {
  if (options_.version) {
    const KubeVersion& version = *options_.version;
    absl::StatusOr<ApiVersionInfo> newest = NewestApiVersion(version);
    if (!newest.ok()) {
      AddFieldProblem(problems_, "",
                      StrCat(Reader(), " has no Leader Migration (it arrived in v1.",
                             ApiVersions().front().first_minor, ")"));
      return;  // nothing else about this reader is meaningful
    }
    if (api && !version.AtLeast(1, api->first_minor)) {
      AddFieldProblem(
          problems_, kApiVersionField,
          StrCat(Reader(), " cannot decode ", api->api_version, " (first decoded by v1.",
                 api->first_minor, "); use ", newest->api_version,
                 newest->has_resource_lock ? StrCat(" with resourceLock: ", kLeases) : ""));
    }
  }
  if (!options_.component) return;
  const Component reader = *options_.component;
  const Component other = reader == Component::kKubeControllerManager
                              ? Component::kCloudControllerManager
                              : Component::kKubeControllerManager;

  std::vector<std::string> registered;
  std::vector<std::string> default_names;
  if (options_.version) {
    for (CloudController controller : kCloudControllers) {
      registered.push_back(ControllerName(reader, *options_.version, controller));
    }
    if (absl::StatusOr<Config> defaults = DefaultConfig(reader, *options_.version); defaults.ok()) {
      for (const ControllerLeader& leader : defaults->controller_leaders) {
        default_names.push_back(leader.name);
      }
    }
  }
  for (const LeaderEntry& leader : leaders_) {
    if (options_.version && leader.name.presence == Presence::kPresent &&
        std::find(registered.begin(), registered.end(), leader.name.value) == registered.end()) {
      // The filter matches names exactly, per process: an unmatched entry leaves the real
      // controller outside the migration lease.
      const bool from_default = std::find(default_names.begin(), default_names.end(),
                                          leader.name.value) != default_names.end();
      const std::string last = registered.back();
      const std::vector<std::string> others(registered.begin(), registered.end() - 1);
      AddFieldProblem(
          problems_, JoinPath(leader.path, kNameField),
          StrCat(Reader(), " registers no controller named ", Quote(leader.name.value),
                 from_default ? " (a name from its built-in default configuration, which "
                                "does not match its own controllers)"
                              : "",
                 ", so this entry matches nothing and the controller it meant runs outside the "
                 "migration lease; the names it registers are ",
                 StrJoin(others, ", "), " and ", last));
    }
    if (leader.component.presence == Presence::kPresent &&
        leader.component.value == ComponentName(other)) {
      const std::string what = leader.name.presence == Presence::kPresent
                                   ? Quote(leader.name.value)
                                   : std::string("this controller");
      AddFieldProblem(
          problems_, JoinPath(leader.path, kComponentField),
          StrCat("assigned to ", ComponentName(other), ", so ", ComponentName(reader),
                 " never runs ", what, ", not even while it holds the migration lease; use ",
                 ComponentName(reader), " or \"*\""));
    }
  }
}

std::optional<Config> Validator::Check(const YAML::Node& root) {
  if (!root.IsMap()) {
    AddFieldProblem(problems_, "",
                    root.IsNull() ? StrCat("the file is empty; it must hold a ", kKind)
                                  : StrCat("the document is ", NodeKind(root),
                                           ", not a mapping; it must hold a ", kKind));
    return std::nullopt;
  }
  Config config;
  const std::vector<MapEntry> entries = Entries(root, "");
  CheckKind(entries);
  const std::optional<ApiVersionInfo> api = CheckApiVersion(entries, config);
  CheckUnknownTopLevelFields(entries, api);

  const StringValue leader_name =
      ReadString(entries, kLeaderNameField, std::string(kLeaderNameField));
  if (leader_name.presence == Presence::kAbsent) {
    AddFieldProblem(problems_, kLeaderNameField,
                    StrCat("missing; every manager must name the same migration lease, usually ",
                           kDefaultLeaderName));
  } else if (leader_name.presence == Presence::kPresent) {
    config.leader_name = leader_name.value;
    // The lease is created under this name: an invalid one fails at runtime, on every attempt.
    if (!IsValidLeaseName(leader_name.value)) {
      AddFieldProblem(problems_, kLeaderNameField,
                      StrCat(Quote(leader_name.value),
                             " is not a valid Lease name; use lowercase letters, digits, '-' "
                             "and '.', e.g. ",
                             kDefaultLeaderName));
    }
  }
  CheckResourceLock(entries, api, config);
  CheckControllerLeaders(entries, config);
  CheckForReader(api);
  return config;
}

// Problems sort by line; problems without a line follow, in the order of the fields in a file.
std::tuple<int, size_t, int> FieldRank(std::string_view field) {
  constexpr std::string_view kTopLevel[] = {"",
                                            kKindField,
                                            kApiVersionField,
                                            kLeaderNameField,
                                            kResourceLockField,
                                            kControllerLeadersField};
  for (size_t i = 0; i < std::size(kTopLevel); ++i) {
    if (field == kTopLevel[i]) return {static_cast<int>(i), 0, 0};
  }
  std::string_view rest = field;
  const std::string prefix = StrCat(kControllerLeadersField, "[");
  if (StartsWith(rest, prefix)) {
    rest.remove_prefix(prefix.size());
    const size_t close = rest.find(']');
    size_t index = 0;
    const std::from_chars_result parsed =
        std::from_chars(rest.data(), rest.data() + std::min(close, rest.size()), index);
    if (close != std::string_view::npos && parsed.ec == std::errc() &&
        parsed.ptr == rest.data() + close) {
      rest.remove_prefix(close + 1);
      const int sub = rest.empty() ? 0 : rest == ".name" ? 1 : rest == ".component" ? 2 : 3;
      return {static_cast<int>(std::size(kTopLevel)), index, sub};
    }
  }
  return {static_cast<int>(std::size(kTopLevel)) + 1, 0, 0};
}

}  // namespace

LintResult Lint(std::string_view text, const LintOptions& options) {
  LintResult result;
  std::vector<std::string> lines = SplitLines(text);
  RepairUnquotedStars(lines, result.problems);
  RepairSplitEntries(lines, result.problems);
  const std::string repaired = StrJoin(lines, "\n");

  std::vector<YAML::Node> documents;
  bool parsed = false;
  try {
    // Aliases, deep nesting and huge documents are refused before yaml-cpp builds anything.
    if (std::optional<YamlRefusal> refusal = CheckYamlLimits(repaired, YamlLimits())) {
      AddLineProblem(result.problems, refusal->line, "", refusal->message);
    } else {
      documents = YAML::LoadAll(repaired);
      parsed = true;
    }
  } catch (const YAML::Exception& error) {
    if (error.mark.is_null()) {
      AddLineProblem(result.problems, 0, "", StrCat("YAML syntax error: ", error.msg));
    } else {
      AddLineProblem(
          result.problems, error.mark.line + 1, "",
          StrCat("YAML syntax error at column ", error.mark.column + 1, ": ", error.msg));
    }
  }
  // An unparsable file gets only the text-level findings and the syntax error.
  if (parsed) {
    const YAML::Node root = documents.empty() ? YAML::Node() : documents.front();
    for (size_t i = 1; i < documents.size(); ++i) {
      if (documents[i].IsNull()) continue;
      // sigs.k8s.io/yaml converts only the first document; the rest is silently ignored.
      AddLineProblem(result.problems, LineOf(documents[i]), "",
                     "a second YAML document starts here; a controller manager reads only the "
                     "first, so remove it");
    }
    try {
      Validator validator(options, result.problems);
      result.config = validator.Check(root);
    } catch (const YAML::Exception& error) {
      // Not expected for a parsed tree; never let a yaml-cpp exception escape.
      AddLineProblem(result.problems, 0, "", StrCat("cannot read the YAML: ", error.msg));
    }
  }

  std::stable_sort(result.problems.begin(), result.problems.end(),
                   [](const Problem& a, const Problem& b) {
                     return std::make_tuple(a.line == 0, a.line, FieldRank(a.field)) <
                            std::make_tuple(b.line == 0, b.line, FieldRank(b.field));
                   });
  return result;
}

absl::StatusOr<Config> ParseAndValidate(std::string_view text, const LintOptions& options) {
  LintResult result = Lint(text, options);
  if (result.problems.empty() && result.config) return *std::move(result.config);
  std::vector<std::string> lines;
  for (const Problem& problem : result.problems) {
    if (problem.line > 0) {
      lines.push_back(StrCat("line ", problem.line, ": ", problem.message));
    } else if (!problem.field.empty()) {
      lines.push_back(StrCat(problem.field, ": ", problem.message));
    } else {
      lines.push_back(problem.message);
    }
  }
  return absl::InvalidArgumentError(StrCat("invalid ", kKind, ":\n", StrJoin(lines, "\n")));
}

std::string FormatProblem(std::string_view file_name, const Problem& problem) {
  if (problem.line > 0) return StrCat(file_name, ":", problem.line, ": ", problem.message);
  if (!problem.field.empty()) {
    return StrCat(file_name, ": ", problem.field, ": ", problem.message);
  }
  return StrCat(file_name, ": ", problem.message);
}

}  // namespace handoff::leadermigration
