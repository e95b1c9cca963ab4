#include "agent/manifest/static_pod.h"

#include <algorithm>
#include <set>

#include "agent/manifest/flag_list.h"
#include "common/base/strings.h"
#include "common/base/yaml_util.h"

namespace handoff {
namespace {

std::string ScalarOr(const YAML::Node& node, std::string fallback = "") {
  return node.IsDefined() && node.IsScalar() ? node.Scalar() : fallback;
}

YAML::Node StringNode(std::string_view text) { return YAML::Node(std::string(text)); }

// The value under `key` when `node` is a map that has it, else an undefined node. yaml-cpp's
// operator[] throws on a scalar and on the placeholder it returns for a missing key, so
// root["metadata"]["name"] would throw for a manifest without metadata.
YAML::Node Child(const YAML::Node& node, const char* key) {
  if (!node.IsDefined() || !node.IsMap()) return YAML::Node(YAML::NodeType::Undefined);
  const YAML::Node value = node[key];
  return value.IsDefined() ? value : YAML::Node(YAML::NodeType::Undefined);
}

// Inserts `item` into `sequence` keeping it sorted by `key` when it already is, else appends.
// kubeadm writes volumes and mounts sorted by name; keeping that order keeps diffs small.
void InsertSorted(YAML::Node& parent, const char* field, const YAML::Node& item, const char* key) {
  YAML::Node sequence = parent[field];
  if (!sequence.IsDefined() || !sequence.IsSequence() || sequence.size() == 0) {
    YAML::Node fresh(YAML::NodeType::Sequence);
    fresh.push_back(item);
    parent[field] = fresh;
    return;
  }
  std::vector<YAML::Node> items(sequence.begin(), sequence.end());
  auto key_of = [key](const YAML::Node& n) { return ScalarOr(Child(n, key)); };
  const bool sorted = std::is_sorted(
      items.begin(), items.end(),
      [&](const YAML::Node& a, const YAML::Node& b) { return key_of(a) < key_of(b); });
  auto position = items.end();
  if (sorted) {
    position = std::find_if(items.begin(), items.end(),
                            [&](const YAML::Node& n) { return key_of(item) < key_of(n); });
  }
  items.insert(position, item);
  YAML::Node rebuilt(YAML::NodeType::Sequence);
  for (const YAML::Node& n : items) rebuilt.push_back(n);
  parent[field] = rebuilt;
}

// Removes the items of `parent[field]` for which `drop` holds; drops the field when it empties
// only if it was not there empty before. Returns the number removed.
template <typename Predicate>
size_t RemoveItems(YAML::Node parent, const char* field, Predicate drop) {
  if (!parent.IsMap()) return 0;
  YAML::Node sequence = parent[field];
  if (!sequence.IsDefined() || !sequence.IsSequence()) return 0;
  YAML::Node kept(YAML::NodeType::Sequence);
  size_t removed = 0;
  for (const YAML::Node& item : sequence) {
    if (drop(item)) {
      ++removed;
    } else {
      kept.push_back(item);
    }
  }
  if (removed == 0) return 0;
  if (kept.size() == 0) {
    parent.remove(field);
  } else {
    parent[field] = kept;
  }
  return removed;
}

bool IsAbsolute(std::string_view path) { return StartsWith(path, "/"); }

// The field types the kubelet enforces when it loads a static pod: it converts the file to JSON
// with sigs.k8s.io/yaml (YAML 1.1: a plain 5 becomes the number 5, a plain yes the boolean true)
// and decodes that into a v1.Pod (pkg/kubelet/config/common.go tryDecodeSinglePod), and the
// decoder refuses a value of the wrong JSON type, e.g. a string where the Pod schema has a list
// of strings ("json: cannot unmarshal string into Go struct field Container.args of type
// []string"). It accepts null anywhere (the field keeps its zero value), so null passes here too.
// Checked: every field handoff reads or writes.
class PodShape {
 public:
  // Problems found, at most kMaxProblems of them listed.
  absl::Status Check(const YAML::Node& root, std::string_view source) {
    String(Child(root, "apiVersion"), "apiVersion");
    String(Child(root, "kind"), "kind");
    const YAML::Node metadata = Child(root, "metadata");
    if (Map(metadata, "metadata")) {
      String(Child(metadata, "name"), "metadata.name");
      String(Child(metadata, "namespace"), "metadata.namespace");
      StringMap(Child(metadata, "labels"), "metadata.labels");
      StringMap(Child(metadata, "annotations"), "metadata.annotations");
    }
    const YAML::Node spec = Child(root, "spec");
    if (Map(spec, "spec")) {
      const YAML::Node containers = Child(spec, "containers");
      if (List(containers, "spec.containers")) {
        for (size_t i = 0; i < containers.size(); ++i) {
          Container(containers[i], StrCat("spec.containers[", i, "]"));
        }
      }
      const YAML::Node volumes = Child(spec, "volumes");
      if (List(volumes, "spec.volumes")) {
        for (size_t i = 0; i < volumes.size(); ++i) {
          const std::string field = StrCat("spec.volumes[", i, "]");
          if (!Map(volumes[i], field)) continue;
          String(Child(volumes[i], "name"), field + ".name");
          const YAML::Node host_path = Child(volumes[i], "hostPath");
          if (Map(host_path, field + ".hostPath")) {
            String(Child(host_path, "path"), field + ".hostPath.path");
            String(Child(host_path, "type"), field + ".hostPath.type");
          }
        }
      }
    }
    if (problems_.empty()) return absl::OkStatus();
    std::string message = StrCat(source, ":", problems_.front().line, ": ");
    for (size_t i = 0; i < problems_.size() && i < kMaxProblems; ++i) {
      const Problem& problem = problems_[i];
      if (i > 0) message += StrCat("; ", problem.field, " (line ", problem.line, ")");
      if (i == 0) message += problem.field;
      message += StrCat(": must be ", problem.expected,
                        i == 0 ? " (the kubelet refuses this manifest)" : "", ", found ",
                        problem.found);
    }
    if (problems_.size() > kMaxProblems) {
      message += StrCat("; and ", problems_.size() - kMaxProblems, " more");
    }
    return absl::InvalidArgumentError(message);
  }

 private:
  static constexpr size_t kMaxProblems = 10;

  struct Problem {
    std::string field;
    std::string expected;
    std::string found;
    int line = 0;
  };

  void Add(const YAML::Node& node, std::string field, std::string expected) {
    std::string found(DescribeYamlNode(node));
    // A number or boolean where a string belongs is almost always a value left unquoted.
    if (StartsWith(expected, "a string") && node.IsScalar()) {
      found += StrCat(" (", node.Scalar(), "); quote it: \"", node.Scalar(), "\"");
    }
    problems_.push_back(
        Problem{std::move(field), std::move(expected), std::move(found), node.Mark().line + 1});
  }

  static bool IsNull(const YAML::Node& node) { return !node.IsDefined() || node.IsNull(); }

  // Whether `node` is a map to look into; null is fine and has nothing in it.
  bool Map(const YAML::Node& node, const std::string& field) {
    if (IsNull(node)) return false;
    if (node.IsMap()) return true;
    Add(node, field, "a map");
    return false;
  }
  bool List(const YAML::Node& node, const std::string& field) {
    if (IsNull(node)) return false;
    if (node.IsSequence()) return true;
    Add(node, field, "a list");
    return false;
  }
  void String(const YAML::Node& node, const std::string& field) {
    if (IsNull(node)) return;
    if (!node.IsScalar() || (JsonTypeOf(node) != JsonScalarType::kString &&
                             JsonTypeOf(node) != JsonScalarType::kNull)) {
      Add(node, field, "a string");
    }
  }
  void Bool(const YAML::Node& node, const std::string& field) {
    if (IsNull(node)) return;
    if (!node.IsScalar() || (JsonTypeOf(node) != JsonScalarType::kBool &&
                             JsonTypeOf(node) != JsonScalarType::kNull)) {
      Add(node, field, "true or false");
    }
  }
  void StringList(const YAML::Node& node, const std::string& field) {
    if (IsNull(node)) return;
    if (!node.IsSequence()) {
      Add(node, field, "a list of strings");
      return;
    }
    for (size_t i = 0; i < node.size(); ++i) String(node[i], StrCat(field, "[", i, "]"));
  }
  void StringMap(const YAML::Node& node, const std::string& field) {
    if (IsNull(node)) return;
    if (!node.IsMap()) {
      Add(node, field, "a map of strings to strings");
      return;
    }
    for (const auto& entry : node) {
      // sigs.k8s.io/yaml turns any scalar key into a string; a list or map cannot be one.
      if (!entry.first.IsScalar() && !entry.first.IsNull()) {
        Add(entry.first, StrCat(field, " key"), "a string");
        continue;
      }
      String(entry.second, StrCat(field, "[\"", entry.first.Scalar(), "\"]"));
    }
  }

  void Container(const YAML::Node& container, const std::string& field) {
    if (!Map(container, field)) return;
    String(Child(container, "name"), field + ".name");
    String(Child(container, "image"), field + ".image");
    StringList(Child(container, "command"), field + ".command");
    StringList(Child(container, "args"), field + ".args");
    const YAML::Node env = Child(container, "env");
    if (List(env, field + ".env")) {
      for (size_t i = 0; i < env.size(); ++i) {
        const std::string item = StrCat(field, ".env[", i, "]");
        if (!Map(env[i], item)) continue;
        String(Child(env[i], "name"), item + ".name");
        String(Child(env[i], "value"), item + ".value");
        Map(Child(env[i], "valueFrom"), item + ".valueFrom");
      }
    }
    const YAML::Node mounts = Child(container, "volumeMounts");
    if (List(mounts, field + ".volumeMounts")) {
      for (size_t i = 0; i < mounts.size(); ++i) {
        const std::string item = StrCat(field, ".volumeMounts[", i, "]");
        if (!Map(mounts[i], item)) continue;
        String(Child(mounts[i], "name"), item + ".name");
        String(Child(mounts[i], "mountPath"), item + ".mountPath");
        Bool(Child(mounts[i], "readOnly"), item + ".readOnly");
      }
    }
  }

  std::vector<Problem> problems_;
};

}  // namespace

absl::StatusOr<StaticPod> StaticPod::Parse(std::string_view text, std::string source) {
  absl::StatusOr<YAML::Node> root = LoadYaml(text, source);
  if (!root.ok()) return root.status();
  if (!root->IsMap()) {
    return absl::InvalidArgumentError(StrCat(source, ": not a Pod manifest (a YAML map)"));
  }
  absl::Status shape = PodShape().Check(*root, source);
  if (!shape.ok()) return shape;
  return StaticPod(*root, std::move(source));
}

// YAML::Node has no move, and its operator= does not rebind: it makes the node it held refer to
// the other one's data. reset() only rebinds (it copies a shared_ptr and, for a valid node, an
// empty string, so it does not throw); the moved-from pod is then given an empty tree of its own
// so that editing it cannot change the pod it moved to.
StaticPod::StaticPod(const StaticPod& other)
    : root_(YAML::Clone(other.root_)), source_(other.source_) {}

StaticPod& StaticPod::operator=(const StaticPod& other) {
  if (this != &other) {
    root_.reset(YAML::Clone(other.root_));
    source_ = other.source_;
  }
  return *this;
}

StaticPod::StaticPod(StaticPod&& other) noexcept : source_(std::move(other.source_)) {
  root_.reset(other.root_);
  other.root_.reset();
}

StaticPod& StaticPod::operator=(StaticPod&& other) noexcept {
  if (this != &other) {
    root_.reset(other.root_);
    other.root_.reset();
    source_ = std::move(other.source_);
  }
  return *this;
}

std::string StaticPod::Kind() const { return ScalarOr(Child(root_, "kind")); }

std::string StaticPod::PodName() const { return ScalarOr(Child(Child(root_, "metadata"), "name")); }

std::string StaticPod::Namespace() const {
  return ScalarOr(Child(Child(root_, "metadata"), "namespace"), "default");
}

std::string StaticPod::Emit() const { return EmitYaml(root_); }

bool StaticPod::SemanticallyEquals(const StaticPod& other) const {
  return SemanticallyEqual(root_, other.root_);
}

absl::Status StaticPod::Validate() const {
  std::vector<std::string> problems;
  auto problem = [&](const std::string& field, const std::string& what) {
    problems.push_back(StrCat(field, ": ", what));
  };
  if (ScalarOr(Child(root_, "apiVersion")) != "v1") problem("apiVersion", "must be v1");
  if (ScalarOr(Child(root_, "kind")) != "Pod") problem("kind", "must be Pod");
  if (PodName().empty()) problem("metadata.name", "must be set");
  const YAML::Node spec = Child(root_, "spec");
  if (!spec.IsMap()) {
    problem("spec", "must be a map");
    return absl::InvalidArgumentError(StrCat(source_, ": ", StrJoin(problems, "; ")));
  }
  std::set<std::string> volume_names;
  const YAML::Node volumes = Child(spec, "volumes");
  if (volumes.IsDefined() && volumes.IsSequence()) {
    for (size_t i = 0; i < volumes.size(); ++i) {
      const std::string field = StrCat("spec.volumes[", i, "]");
      const std::string name = ScalarOr(Child(volumes[i], "name"));
      if (name.empty()) problem(field + ".name", "must be set");
      if (!volume_names.insert(name).second) problem(field + ".name", "'" + name + "' is repeated");
      const YAML::Node host_path = Child(volumes[i], "hostPath");
      if (host_path.IsDefined() && !IsAbsolute(ScalarOr(Child(host_path, "path")))) {
        problem(field + ".hostPath.path", "must be an absolute path");
      }
    }
  }
  const YAML::Node containers = Child(spec, "containers");
  if (!containers.IsDefined() || !containers.IsSequence() || containers.size() == 0) {
    problem("spec.containers", "must list at least one container");
  } else {
    std::set<std::string> container_names;
    for (size_t i = 0; i < containers.size(); ++i) {
      const std::string field = StrCat("spec.containers[", i, "]");
      const std::string name = ScalarOr(Child(containers[i], "name"));
      if (name.empty()) problem(field + ".name", "must be set");
      if (!container_names.insert(name).second)
        problem(field + ".name", "'" + name + "' is repeated");
      if (ScalarOr(Child(containers[i], "image")).empty()) problem(field + ".image", "must be set");
      const YAML::Node mounts = Child(containers[i], "volumeMounts");
      if (!mounts.IsDefined() || !mounts.IsSequence()) continue;
      std::set<std::string> mount_paths;
      for (size_t j = 0; j < mounts.size(); ++j) {
        const std::string mount_field = StrCat(field, ".volumeMounts[", j, "]");
        const std::string volume = ScalarOr(Child(mounts[j], "name"));
        const std::string path = ScalarOr(Child(mounts[j], "mountPath"));
        if (volume_names.count(volume) == 0) {
          problem(mount_field + ".name", "no volume named '" + volume + "'");
        }
        if (!IsAbsolute(path)) problem(mount_field + ".mountPath", "must be an absolute path");
        if (!mount_paths.insert(path).second) {
          problem(mount_field + ".mountPath", "'" + path + "' is mounted twice");
        }
      }
    }
  }
  if (problems.empty()) return absl::OkStatus();
  return absl::InvalidArgumentError(StrCat(source_, ": ", StrJoin(problems, "; ")));
}

std::vector<std::string> StaticPod::ContainerNames() const {
  std::vector<std::string> names;
  const YAML::Node containers = Child(Child(root_, "spec"), "containers");
  if (!containers.IsDefined() || !containers.IsSequence()) return names;
  for (const YAML::Node& container : containers)
    names.push_back(ScalarOr(Child(container, "name")));
  return names;
}

absl::StatusOr<size_t> StaticPod::FindContainer(std::string_view container) const {
  std::vector<std::string> names = ContainerNames();
  for (size_t i = 0; i < names.size(); ++i) {
    if (names[i] == container) return i;
  }
  return absl::NotFoundError(
      StrCat(source_, ": spec.containers has no container named '", container,
             "' (it has: ", names.empty() ? "none" : StrJoin(names, ", "), ")"));
}

YAML::Node StaticPod::ContainerNode(size_t container) const {
  return root_["spec"]["containers"][container];
}

std::vector<std::string> StaticPod::Items(size_t container, const char* key) const {
  std::vector<std::string> items;
  const YAML::Node list = ContainerNode(container)[key];
  if (!list.IsDefined() || !list.IsSequence()) return items;
  for (const YAML::Node& item : list) items.push_back(ScalarOr(item));
  return items;
}

void StaticPod::SetItems(size_t container, const char* key, const std::vector<std::string>& items) {
  YAML::Node node = ContainerNode(container);
  const YAML::Node old_list = node[key];
  YAML::Node list(YAML::NodeType::Sequence);
  // Keep the original scalar where the text is unchanged, so its quoting survives.
  for (size_t i = 0; i < items.size(); ++i) {
    bool reused = false;
    if (old_list.IsDefined() && old_list.IsSequence()) {
      for (const YAML::Node& old_item : old_list) {
        if (old_item.IsScalar() && old_item.Scalar() == items[i]) {
          list.push_back(old_item);
          reused = true;
          break;
        }
      }
    }
    if (!reused) list.push_back(StringNode(items[i]));
  }
  node[key] = list;
}

std::vector<std::string> StaticPod::Argv(size_t container) const {
  std::vector<std::string> argv = Items(container, "command");
  std::vector<std::string> args = Items(container, "args");
  argv.insert(argv.end(), args.begin(), args.end());
  return argv;
}

std::optional<std::string> StaticPod::GetFlag(size_t container, std::string_view flag) const {
  return FlagList(Argv(container)).Get(flag);
}

size_t StaticPod::CountFlag(size_t container, std::string_view flag) const {
  return FlagList(Argv(container)).Find(flag).size();
}

void StaticPod::SetFlag(size_t container, std::string_view flag,
                        const std::optional<std::string>& value) {
  FlagList command(Items(container, "command"));
  FlagList args(Items(container, "args"));
  const bool in_command = !command.Find(flag).empty();
  const bool in_args = !args.Find(flag).empty();
  // The runtime appends args to command and pflag keeps the last value: one occurrence, in args
  // when it is there (or when args holds the flags), otherwise in command.
  const bool args_hold_flags = !args.Names().empty() || command.Names().empty();
  if (in_args ||
      (!in_command && args_hold_flags && Child(ContainerNode(container), "args").IsDefined())) {
    if (in_command) {
      command.Remove(flag);
      SetItems(container, "command", command.items());
    }
    args.Set(flag, value);
    SetItems(container, "args", args.items());
  } else {
    command.Set(flag, value);
    SetItems(container, "command", command.items());
  }
}

bool StaticPod::RemoveFlag(size_t container, std::string_view flag) {
  bool removed = false;
  for (const char* key : {"command", "args"}) {
    FlagList list(Items(container, key));
    if (list.Remove(flag)) {
      SetItems(container, key, list.items());
      removed = true;
    }
  }
  return removed;
}

std::string StaticPod::Image(size_t container) const {
  return ScalarOr(Child(ContainerNode(container), "image"));
}

void StaticPod::SetImage(size_t container, std::string_view image) {
  ContainerNode(container)["image"] = StringNode(image);
}

std::optional<HostPathMount> StaticPod::FindHostPathMount(size_t container,
                                                          std::string_view name) const {
  for (const HostPathMount& mount : HostPathMounts(container)) {
    if (mount.name == name) return mount;
  }
  return std::nullopt;
}

std::vector<HostPathMount> StaticPod::HostPathMounts(size_t container) const {
  std::vector<HostPathMount> result;
  const YAML::Node volumes = Child(Child(root_, "spec"), "volumes");
  const YAML::Node mounts = Child(ContainerNode(container), "volumeMounts");
  if (!volumes.IsDefined() || !volumes.IsSequence() || !mounts.IsDefined() ||
      !mounts.IsSequence()) {
    return result;
  }
  for (const YAML::Node& mount : mounts) {
    for (const YAML::Node& volume : volumes) {
      const YAML::Node host_path = Child(volume, "hostPath");
      if (ScalarOr(Child(volume, "name")) != ScalarOr(Child(mount, "name")) ||
          !host_path.IsDefined()) {
        continue;
      }
      HostPathMount found;
      found.name = ScalarOr(Child(volume, "name"));
      found.host_path = ScalarOr(Child(host_path, "path"));
      found.type = ScalarOr(Child(host_path, "type"));
      found.mount_path = ScalarOr(Child(mount, "mountPath"));
      found.read_only = IsYamlTrue(Child(mount, "readOnly"));
      result.push_back(found);
    }
  }
  return result;
}

std::optional<HostPathMount> StaticPod::MountCovering(size_t container,
                                                      std::string_view container_path) const {
  std::optional<HostPathMount> best;
  size_t best_length = 0;
  for (const HostPathMount& mount : HostPathMounts(container)) {
    std::string dir = mount.mount_path;
    while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
    if (dir.empty()) continue;
    const bool covers =
        container_path == dir || (StartsWith(container_path, dir) &&
                                  (dir == "/" || container_path.substr(dir.size(), 1) == "/"));
    // The most specific mount wins, as in the container's mount table.
    if (covers && (!best || dir.size() > best_length)) {
      best = mount;
      best_length = dir.size();
    }
  }
  return best;
}

absl::Status StaticPod::EnsureHostPathMount(size_t container, const HostPathMount& wanted) {
  YAML::Node spec = root_["spec"];
  YAML::Node container_node = ContainerNode(container);
  const std::string container_name = ScalarOr(Child(container_node, "name"));
  const YAML::Node volumes = spec["volumes"];
  bool have_volume = false;
  if (volumes.IsDefined() && volumes.IsSequence()) {
    for (size_t i = 0; i < volumes.size(); ++i) {
      const YAML::Node volume = volumes[i];
      if (ScalarOr(Child(volume, "name")) != wanted.name) continue;
      const YAML::Node host_path = Child(volume, "hostPath");
      if (!host_path.IsDefined() || ScalarOr(Child(host_path, "path")) != wanted.host_path ||
          ScalarOr(Child(host_path, "type")) != wanted.type) {
        return absl::AlreadyExistsError(
            StrCat(source_, ": spec.volumes[", i, "] is already named '", wanted.name,
                   "' but is not hostPath ", wanted.host_path,
                   wanted.type.empty() ? "" : StrCat(" (type ", wanted.type, ")"),
                   "; rename that volume or set a different volume name in the handoff settings"));
      }
      have_volume = true;
    }
  }
  const YAML::Node mounts = Child(container_node, "volumeMounts");
  std::optional<YAML::Node> have_mount;
  if (mounts.IsDefined() && mounts.IsSequence()) {
    for (size_t j = 0; j < mounts.size(); ++j) {
      const YAML::Node mount = mounts[j];
      const bool same_name = ScalarOr(Child(mount, "name")) == wanted.name;
      const bool same_path = ScalarOr(Child(mount, "mountPath")) == wanted.mount_path;
      if (same_name && same_path) {
        have_mount = mount;
      } else if (same_name || same_path) {
        return absl::AlreadyExistsError(
            StrCat(source_, ": container '", container_name, "' volumeMounts[", j, "] already ",
                   same_path ? StrCat("mounts volume '", ScalarOr(Child(mount, "name")), "' at ",
                                      wanted.mount_path)
                             : StrCat("mounts volume '", wanted.name, "' at ",
                                      ScalarOr(Child(mount, "mountPath"))),
                   "; remove that mount or choose another path in the handoff settings"));
      }
    }
  }
  if (!have_volume) {
    YAML::Node volume;
    YAML::Node host_path;
    host_path["path"] = StringNode(wanted.host_path);
    if (!wanted.type.empty()) host_path["type"] = StringNode(wanted.type);
    volume["hostPath"] = host_path;
    volume["name"] = StringNode(wanted.name);
    InsertSorted(spec, "volumes", volume, "name");
  }
  if (!have_mount) {
    YAML::Node mount;
    mount["mountPath"] = StringNode(wanted.mount_path);
    mount["name"] = StringNode(wanted.name);
    if (wanted.read_only) mount["readOnly"] = YAML::Load("true");
    InsertSorted(container_node, "volumeMounts", mount, "name");
  } else if (IsYamlTrue(Child(*have_mount, "readOnly")) != wanted.read_only) {
    // The mount is there "as given" only with the wanted readOnly.
    if (wanted.read_only) {
      (*have_mount)["readOnly"] = YAML::Load("true");
    } else {
      have_mount->remove("readOnly");
    }
  }
  return absl::OkStatus();
}

bool StaticPod::RemoveVolume(std::string_view name) {
  YAML::Node spec = Child(root_, "spec");
  if (!spec.IsMap()) return false;
  size_t removed = RemoveItems(spec, "volumes", [&](const YAML::Node& volume) {
    return ScalarOr(Child(volume, "name")) == name;
  });
  YAML::Node containers = spec["containers"];
  if (containers.IsDefined() && containers.IsSequence()) {
    for (YAML::Node container : containers) {
      removed += RemoveItems(container, "volumeMounts", [&](const YAML::Node& mount) {
        return ScalarOr(Child(mount, "name")) == name;
      });
    }
  }
  return removed > 0;
}

}  // namespace handoff
