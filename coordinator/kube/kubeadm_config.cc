#include "coordinator/kube/kubeadm_config.h"

#include <optional>

#include "agent/base/strings.h"
#include "agent/base/unified_diff.h"
#include "agent/base/yaml_util.h"
#include "agent/manifest/feature_gates.h"

namespace handoff::kube {
namespace {

// Locked on in 1.24-1.26 and removed in 1.27, where setting it is a startup error.
constexpr std::string_view kLeaderMigrationGate = "ControllerManagerLeaderMigration";

bool KeysSorted(const YAML::Node& map) {
  std::string previous;
  bool first = true;
  for (const auto& entry : map) {
    if (!entry.first.IsScalar()) return false;
    if (!first && entry.first.Scalar() < previous) return false;
    previous = entry.first.Scalar();
    first = false;
  }
  return true;
}

// Sets map[key] = value. A new key goes where it sorts when the map's keys are sorted (as
// sigs.k8s.io/yaml writes them), else at the end.
void SetSorted(YAML::Node map, const std::string& key, const YAML::Node& value) {
  // Looked up through a const reference: yaml-cpp's non-const operator[] adds a pending entry.
  const YAML::Node& lookup = map;
  if (lookup[key].IsDefined()) {
    map[key] = value;
    return;
  }
  if (!KeysSorted(map)) {
    map[key] = value;
    return;
  }
  YAML::Node rebuilt(YAML::NodeType::Map);
  bool inserted = false;
  for (const auto& entry : map) {
    if (!inserted && key < entry.first.Scalar()) {
      rebuilt[key] = value;
      inserted = true;
    }
    rebuilt[entry.first] = entry.second;
  }
  if (!inserted) rebuilt[key] = value;
  map = rebuilt;  // yaml-cpp: replaces the contents of the node `map` refers to, in the tree
}

// The map at root[key], created (sorted) when missing or null.
absl::StatusOr<YAML::Node> ChildMap(YAML::Node parent, const std::string& key,
                                    const std::string& path) {
  const YAML::Node& lookup = parent;
  if (!lookup[key].IsDefined() || lookup[key].IsNull()) {
    SetSorted(parent, key, YAML::Node(YAML::NodeType::Map));
    return YAML::Node(parent[key]);
  }
  if (!lookup[key].IsMap()) {
    return absl::InvalidArgumentError(StrCat("ClusterConfiguration: ", path, " is not a map"));
  }
  return YAML::Node(parent[key]);
}

// OK when `node` is absent, null or what the decoder takes for a string.
absl::Status CheckString(const YAML::Node& node, const std::string& path) {
  if (!node.IsDefined() || node.IsNull()) return absl::OkStatus();
  const JsonScalarType type = JsonTypeOf(node);
  if (node.IsScalar() && (type == JsonScalarType::kString || type == JsonScalarType::kNull)) {
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(
      StrCat("ClusterConfiguration: ", path, " must be a string, found ", DescribeYamlNode(node),
             node.IsScalar() ? StrCat("; quote it: \"", node.Scalar(), "\"") : std::string()));
}

// extraArgs of one component, in either form.
class ExtraArgs {
 public:
  // `component` refers into the tree being edited (yaml-cpp nodes are handles).
  ExtraArgs(const YAML::Node& component, std::string path, bool list_form)
      : component_(component), path_(std::move(path)), list_form_(list_form) {}

  absl::Status Validate() const {
    const YAML::Node args = component_["extraArgs"];
    if (!args.IsDefined() || args.IsNull()) return absl::OkStatus();
    if (list_form_ ? !args.IsSequence() : !args.IsMap()) {
      return absl::InvalidArgumentError(
          StrCat("ClusterConfiguration: ", path_, ".extraArgs must be ",
                 list_form_ ? "a list of {name, value} (v1beta4)" : "a map (v1beta3)"));
    }
    // kubeadm decodes the values into strings (YAML 1.1 to JSON first): an unquoted 2 or true is
    // a number or a boolean there, and kubeadm refuses the whole ClusterConfiguration.
    if (!list_form_) {
      for (const auto& entry : args) {
        absl::Status value =
            CheckString(entry.second, StrCat(path_, ".extraArgs[\"", entry.first.Scalar(), "\"]"));
        if (!value.ok()) return value;
      }
      return absl::OkStatus();
    }
    for (size_t i = 0; i < args.size(); ++i) {
      const std::string item = StrCat(path_, ".extraArgs[", i, "]");
      if (!args[i].IsMap()) {
        return absl::InvalidArgumentError(StrCat("ClusterConfiguration: ", item,
                                                 " must be a map with name and value, found ",
                                                 DescribeYamlNode(args[i])));
      }
      for (const char* key : {"name", "value"}) {
        const YAML::Node& map = args[i];
        absl::Status field = CheckString(map[key], StrCat(item, ".", key));
        if (!field.ok()) return field;
      }
    }
    return absl::OkStatus();
  }

  std::optional<std::string> Get(const std::string& name) const {
    const YAML::Node args = component_["extraArgs"];
    if (!args.IsDefined() || args.IsNull()) return std::nullopt;
    if (!list_form_) {
      if (!HasField(args, name.c_str(), YAML::NodeType::Scalar)) {
        if (args[name].IsDefined() && args[name].IsNull()) return std::string();
        return std::nullopt;
      }
      return args[name].Scalar();
    }
    for (const YAML::Node& item : args) {
      if (HasField(item, "name", YAML::NodeType::Scalar) && item["name"].Scalar() == name) {
        return HasField(item, "value", YAML::NodeType::Scalar) ? item["value"].Scalar() : "";
      }
    }
    return std::nullopt;
  }

  void Set(const std::string& name, const std::string& value) {
    if (!Present()) {
      SetSorted(component_, "extraArgs",
                YAML::Node(list_form_ ? YAML::NodeType::Sequence : YAML::NodeType::Map));
    }
    YAML::Node args = component_["extraArgs"];
    if (!list_form_) {
      SetSorted(args, name, YAML::Node(value));
      return;
    }
    // v1beta4 allows a name more than once (repeated flags); the first one is set, the others
    // dropped, so the flag has exactly this value.
    YAML::Node rebuilt(YAML::NodeType::Sequence);
    bool set = false;
    for (const YAML::Node& item : args) {
      const bool same =
          HasField(item, "name", YAML::NodeType::Scalar) && item["name"].Scalar() == name;
      if (!same) {
        rebuilt.push_back(item);
      } else if (!set) {
        YAML::Node copy = YAML::Clone(item);
        copy["value"] = YAML::Node(value);
        rebuilt.push_back(copy);
        set = true;
      }
    }
    if (!set) {
      YAML::Node item(YAML::NodeType::Map);
      item["name"] = YAML::Node(name);
      item["value"] = YAML::Node(value);
      rebuilt.push_back(item);
    }
    args = rebuilt;
  }

  void Remove(const std::string& name) {
    if (!Present()) return;
    YAML::Node args = component_["extraArgs"];
    if (!list_form_) {
      args.remove(name);
      return;
    }
    YAML::Node rebuilt(YAML::NodeType::Sequence);
    for (const YAML::Node& item : args) {
      if (!(HasField(item, "name", YAML::NodeType::Scalar) && item["name"].Scalar() == name)) {
        rebuilt.push_back(item);
      }
    }
    args = rebuilt;
  }

 private:
  bool Present() const {
    const YAML::Node& component = component_;
    return component["extraArgs"].IsDefined() && !component["extraArgs"].IsNull();
  }

  YAML::Node component_;
  std::string path_;
  bool list_form_;
};

class Editor {
 public:
  explicit Editor(KubeadmConfigPlan& plan) : plan_(plan) {}

  void SetArg(ExtraArgs& args, const std::string& component, const std::string& name,
              const std::string& value) {
    std::optional<std::string> current = args.Get(name);
    if (current && *current == value) return;
    args.Set(name, value);
    plan_.changes.push_back(
        current ? StrCat(component, ".extraArgs: ", name, " ", *current, " -> ", value)
                : StrCat(component, ".extraArgs: add ", name, ": ", value));
  }

  void RemoveArg(ExtraArgs& args, const std::string& component, const std::string& name) {
    std::optional<std::string> current = args.Get(name);
    if (!current) return;
    args.Remove(name);
    plan_.changes.push_back(StrCat(component, ".extraArgs: remove ", name,
                                   current->empty() ? "" : StrCat(" (", *current, ")")));
  }

  // Drops controllerManager.extraVolumes entries that mount `path` (the Leader Migration file).
  absl::Status RemoveVolumeAt(YAML::Node component, const std::string& path) {
    const YAML::Node& lookup = component;
    if (!lookup["extraVolumes"].IsDefined() || lookup["extraVolumes"].IsNull()) {
      return absl::OkStatus();
    }
    YAML::Node volumes = component["extraVolumes"];
    if (!volumes.IsSequence()) {
      return absl::InvalidArgumentError(
          "ClusterConfiguration: controllerManager.extraVolumes is not a list");
    }
    YAML::Node rebuilt(YAML::NodeType::Sequence);
    bool removed = false;
    for (const YAML::Node& volume : volumes) {
      if (HasField(volume, "mountPath", YAML::NodeType::Scalar) &&
          volume["mountPath"].Scalar() == path) {
        const std::string name =
            HasField(volume, "name", YAML::NodeType::Scalar) ? volume["name"].Scalar() : "";
        plan_.changes.push_back(StrCat("controllerManager.extraVolumes: remove ", name, " (", path,
                                       ", the Leader Migration file)"));
        removed = true;
      } else {
        rebuilt.push_back(volume);
      }
    }
    if (!removed) return absl::OkStatus();
    if (rebuilt.size() == 0) {
      component.remove("extraVolumes");
    } else {
      volumes = rebuilt;
    }
    return absl::OkStatus();
  }

 private:
  KubeadmConfigPlan& plan_;
};

}  // namespace

std::string KubeadmConfigPlan::Diff() const {
  if (before == after) return "";
  return UnifiedDiff(StrCat(kKubeadmConfigNamespace, "/configmaps/", kKubeadmConfigName, "/",
                            kClusterConfigurationKey),
                     before, after);
}

absl::StatusOr<KubeadmConfigPlan> PlanClusterConfiguration(std::string_view text,
                                                           const KubeadmConfigOptions& options) {
  const std::string source =
      StrCat(kKubeadmConfigNamespace, "/", kKubeadmConfigName, " data.", kClusterConfigurationKey);
  absl::StatusOr<YAML::Node> parsed = LoadYaml(text, source);
  if (!parsed.ok()) return parsed.status();
  if (!parsed->IsMap()) {
    return absl::InvalidArgumentError(StrCat(source, ": not a map"));
  }
  YAML::Node root = YAML::Clone(*parsed);
  KubeadmConfigPlan plan;
  plan.before = std::string(text);
  plan.api_version = HasField(root, "apiVersion", YAML::NodeType::Scalar)
                         ? root["apiVersion"].Scalar()
                         : std::string();
  const std::string kind =
      HasField(root, "kind", YAML::NodeType::Scalar) ? root["kind"].Scalar() : std::string();
  if (kind != "ClusterConfiguration") {
    return absl::InvalidArgumentError(
        StrCat(source, ": kind is \"", kind, "\", expected ClusterConfiguration"));
  }
  bool list_form;
  if (plan.api_version == "kubeadm.k8s.io/v1beta4") {
    list_form = true;
  } else if (plan.api_version == "kubeadm.k8s.io/v1beta3" ||
             plan.api_version == "kubeadm.k8s.io/v1beta2") {
    list_form = false;
  } else {
    return absl::InvalidArgumentError(
        StrCat(source, ": apiVersion \"", plan.api_version,
               "\" is not one handoff knows (kubeadm.k8s.io/v1beta3 or v1beta4); edit it by hand "
               "with kubectl -n kube-system edit configmap kubeadm-config"));
  }

  Editor editor(plan);
  absl::StatusOr<YAML::Node> apiserver = ChildMap(root, "apiServer", "apiServer");
  if (!apiserver.ok()) return apiserver.status();
  ExtraArgs apiserver_args(*apiserver, "apiServer", list_form);
  if (absl::Status valid = apiserver_args.Validate(); !valid.ok()) return valid;
  editor.SetArg(apiserver_args, "apiServer", "cloud-provider", "external");
  editor.RemoveArg(apiserver_args, "apiServer", "cloud-config");

  absl::StatusOr<YAML::Node> kcm = ChildMap(root, "controllerManager", "controllerManager");
  if (!kcm.ok()) return kcm.status();
  ExtraArgs kcm_args(*kcm, "controllerManager", list_form);
  if (absl::Status valid = kcm_args.Validate(); !valid.ok()) return valid;
  editor.SetArg(kcm_args, "controllerManager", "cloud-provider", "external");
  editor.RemoveArg(kcm_args, "controllerManager", "cloud-config");
  // An external kube-controller-manager must not run Leader Migration (domain.md §2).
  const std::optional<std::string> config_path = kcm_args.Get("leader-migration-config");
  editor.RemoveArg(kcm_args, "controllerManager", "enable-leader-migration");
  editor.RemoveArg(kcm_args, "controllerManager", "leader-migration-config");
  if (config_path && !config_path->empty()) {
    if (absl::Status removed = editor.RemoveVolumeAt(*kcm, *config_path); !removed.ok()) {
      return removed;
    }
  }
  if (std::optional<std::string> gates = kcm_args.Get("feature-gates")) {
    FeatureGates parsed_gates(*gates);
    if (parsed_gates.Remove(kLeaderMigrationGate)) {
      if (parsed_gates.empty()) {
        editor.RemoveArg(kcm_args, "controllerManager", "feature-gates");
      } else {
        editor.SetArg(kcm_args, "controllerManager", "feature-gates", parsed_gates.ToString());
      }
    }
  }
  if (!options.external_cloud_volume_plugin.empty()) {
    editor.SetArg(kcm_args, "controllerManager", "external-cloud-volume-plugin",
                  options.external_cloud_volume_plugin);
  }
  if (options.disable_nodeipam) {
    std::string controllers = kcm_args.Get("controllers").value_or("*");
    if (controllers.find("-nodeipam") == std::string::npos) {
      editor.SetArg(kcm_args, "controllerManager", "controllers",
                    StrCat(controllers, ",-nodeipam"));
    }
  }

  plan.after = plan.changes.empty() ? plan.before : EmitYaml(root);
  if (!plan.changes.empty() && EmitYaml(*parsed) != plan.before) {
    plan.notes.emplace_back(
        "the stored text is not in the layout kubeadm writes; it is rewritten in that layout, so "
        "the diff also shows lines that only moved");
  }
  plan.notes.emplace_back(
      "kubelets: the kubelet's --cloud-provider is not in the ClusterConfiguration; handoff-agent "
      "sets it in each node's /var/lib/kubelet/kubeadm-flags.env, and nodes joined later need "
      "nodeRegistration.kubeletExtraArgs cloud-provider: external in their JoinConfiguration");
  return plan;
}

absl::StatusOr<KubeadmConfigPlan> PlanKubeadmConfigMap(const Json& config_map,
                                                       const KubeadmConfigOptions& options) {
  const std::string text = StringAt(config_map, {"data", kClusterConfigurationKey});
  if (text.empty()) {
    return absl::FailedPreconditionError(
        StrCat("ConfigMap ", kKubeadmConfigNamespace, "/", kKubeadmConfigName, " has no data.",
               kClusterConfigurationKey, "; is this a kubeadm cluster?"));
  }
  return PlanClusterConfiguration(text, options);
}

absl::StatusOr<KubeadmConfigPlan> ReadKubeadmConfigPlan(KubeClient& client,
                                                        const KubeadmConfigOptions& options) {
  absl::StatusOr<Json> config_map = client.Get(ObjectRef{
      &kConfigMaps, std::string(kKubeadmConfigNamespace), std::string(kKubeadmConfigName)});
  if (!config_map.ok()) {
    if (config_map.status().code() == absl::StatusCode::kNotFound) {
      return absl::NotFoundError(StrCat(config_map.status().message(),
                                        ": this cluster was not set up by kubeadm, so there is "
                                        "no kubeadm configuration to update"));
    }
    return config_map.status();
  }
  return PlanKubeadmConfigMap(*config_map, options);
}

absl::StatusOr<KubeadmConfigApplyResult> ApplyKubeadmConfig(KubeClient& client,
                                                            const KubeadmConfigOptions& options) {
  KubeadmConfigApplyResult result;
  const ObjectRef ref{&kConfigMaps, std::string(kKubeadmConfigNamespace),
                      std::string(kKubeadmConfigName)};
  absl::StatusOr<MutateResult> mutated =
      client.Mutate(ref, [&options, &result](Json& config_map) -> absl::StatusOr<bool> {
        absl::StatusOr<KubeadmConfigPlan> plan = PlanKubeadmConfigMap(config_map, options);
        if (!plan.ok()) return plan.status();
        result.plan = *std::move(plan);
        if (result.plan.empty()) return false;
        config_map["data"][std::string(kClusterConfigurationKey)] = result.plan.after;
        return true;
      });
  if (!mutated.ok()) return mutated.status();
  result.conflicts = mutated->conflicts;
  if (!mutated->changed) result.plan.changes.clear();
  return result;
}

}  // namespace handoff::kube
