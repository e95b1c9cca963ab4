#include "coordinator/kube/kubeadm_config.h"

#include <optional>
#include <regex>

#include "agent/manifest/feature_gates.h"
#include "common/base/strings.h"
#include "common/base/unified_diff.h"
#include "common/base/yaml_util.h"

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

  // Adds a controllerManager.extraVolumes entry mounting the file `path` read-only, unless one
  // mounts it already.
  absl::Status AddFileVolume(YAML::Node component, const std::string& name,
                             const std::string& path) {
    const YAML::Node& lookup = component;
    if (lookup["extraVolumes"].IsDefined() && !lookup["extraVolumes"].IsNull()) {
      if (!lookup["extraVolumes"].IsSequence()) {
        return absl::InvalidArgumentError(
            "ClusterConfiguration: controllerManager.extraVolumes is not a list");
      }
      for (const YAML::Node& volume : lookup["extraVolumes"]) {
        if (HasField(volume, "mountPath", YAML::NodeType::Scalar) &&
            volume["mountPath"].Scalar() == path) {
          return absl::OkStatus();
        }
      }
    } else {
      SetSorted(component, "extraVolumes", YAML::Node(YAML::NodeType::Sequence));
    }
    // Keys in the order kubeadm writes them (sorted); readOnly a plain boolean, as kubeadm
    // decodes it.
    YAML::Node read_only("true");
    read_only.SetTag("?");
    YAML::Node volume(YAML::NodeType::Map);
    volume["hostPath"] = path;
    volume["mountPath"] = path;
    volume["name"] = name;
    volume["pathType"] = "File";
    volume["readOnly"] = read_only;
    YAML::Node volumes = component["extraVolumes"];
    volumes.push_back(volume);
    plan_.changes.push_back(StrCat("controllerManager.extraVolumes: add ", name, " (", path,
                                   ", the Leader Migration file, read-only)"));
    return absl::OkStatus();
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

// kubeadm's kubernetesVersion as handoff writes it: a release version, "v" optional.
absl::Status CheckKubernetesVersion(const std::string& version) {
  static const std::regex kRelease(R"(v?[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?)");
  if (std::regex_match(version, kRelease)) return absl::OkStatus();
  return absl::InvalidArgumentError(
      StrCat("kubernetesVersion \"", version, "\" is not a release version such as v1.27.16"));
}

// Sets root.kubernetesVersion to `version` unless it is "" or already that.
void SetKubernetesVersion(YAML::Node root, const std::string& version,
                          std::vector<std::string>& changes) {
  if (version.empty()) return;
  const std::string current = HasField(root, "kubernetesVersion", YAML::NodeType::Scalar)
                                  ? root["kubernetesVersion"].Scalar()
                                  : std::string();
  if (current == version) return;
  SetSorted(root, "kubernetesVersion", YAML::Node(version));
  changes.push_back(current.empty() ? StrCat("kubernetesVersion: add ", version)
                                    : StrCat("kubernetesVersion: ", current, " -> ", version));
}

// `text` as a ClusterConfiguration map, or why not.
absl::StatusOr<YAML::Node> LoadClusterConfiguration(std::string_view text,
                                                    const std::string& source) {
  absl::StatusOr<YAML::Node> parsed = LoadYaml(text, source);
  if (!parsed.ok()) return parsed.status();
  if (!parsed->IsMap()) return absl::InvalidArgumentError(StrCat(source, ": not a map"));
  const std::string kind =
      HasField(*parsed, "kind", YAML::NodeType::Scalar) ? (*parsed)["kind"].Scalar() : "";
  if (kind != "ClusterConfiguration") {
    return absl::InvalidArgumentError(
        StrCat(source, ": kind is \"", kind, "\", expected ClusterConfiguration"));
  }
  return parsed;
}

std::string InTreeCopySource() {
  return StrCat(kKubeadmConfigNamespace, "/", kInTreeCopyName, " data.", kClusterConfigurationKey);
}

ObjectRef KubeadmConfigRef() {
  return ObjectRef{&kConfigMaps, std::string(kKubeadmConfigNamespace),
                   std::string(kKubeadmConfigName)};
}

ObjectRef InTreeCopyRef() {
  return ObjectRef{&kConfigMaps, std::string(kKubeadmConfigNamespace),
                   std::string(kInTreeCopyName)};
}

// The saved in-tree ClusterConfiguration; FailedPrecondition when there is none.
absl::StatusOr<std::string> ReadInTreeCopy(KubeClient& client) {
  absl::StatusOr<Json> copy = client.Get(InTreeCopyRef());
  if (!copy.ok()) {
    if (copy.status().code() == absl::StatusCode::kNotFound) {
      return absl::FailedPreconditionError(
          StrCat("there is no ", kKubeadmConfigNamespace, "/", kInTreeCopyName,
                 ": handoffctl kubeadm-config apply keeps the in-tree ClusterConfiguration there "
                 "when it first makes it external, and this cluster's was not made external by "
                 "it; edit kube-system/kubeadm-config by hand (kubectl -n kube-system edit "
                 "configmap kubeadm-config)"));
    }
    return copy.status();
  }
  std::string text = StringAt(*copy, {"data", kClusterConfigurationKey});
  if (text.empty()) {
    return absl::FailedPreconditionError(StrCat(InTreeCopySource(), " is empty"));
  }
  return text;
}

// Keeps `text` (kubeadm-config's ClusterConfiguration before the first edit) in the in-tree copy,
// unless it is already external or the copy exists. True when it created the copy.
absl::StatusOr<bool> SaveInTreeCopy(KubeClient& client, const std::string& text) {
  absl::StatusOr<KubeadmConfigPlan> external = PlanClusterConfiguration(text, {});
  if (!external.ok()) return external.status();
  if (external->empty()) return false;  // already external: nothing in-tree to keep
  Json copy = {{"apiVersion", "v1"},
               {"kind", "ConfigMap"},
               {"metadata",
                {{"name", std::string(kInTreeCopyName)},
                 {"namespace", std::string(kKubeadmConfigNamespace)},
                 {"labels", {{"app.kubernetes.io/managed-by", "handoff"}}},
                 {"annotations",
                  {{"handoff.io/what",
                    "kube-system/kubeadm-config's ClusterConfiguration before handoffctl "
                    "kubeadm-config apply made it external; `apply --to in-tree` restores it"}}}}},
               {"data", {{std::string(kClusterConfigurationKey), text}}}};
  absl::StatusOr<Json> created = client.Create(kConfigMaps, kKubeadmConfigNamespace, copy);
  if (created.ok()) return true;
  // Made by another apply in between: the first one's copy stands.
  if (created.status().code() == absl::StatusCode::kAlreadyExists) return false;
  return created.status();
}

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
  if (!options.kubernetes_version.empty()) {
    if (absl::Status version = CheckKubernetesVersion(options.kubernetes_version); !version.ok()) {
      return version;
    }
  }
  absl::StatusOr<YAML::Node> parsed = LoadClusterConfiguration(text, source);
  if (!parsed.ok()) return parsed.status();
  YAML::Node root = YAML::Clone(*parsed);
  KubeadmConfigPlan plan;
  plan.before = std::string(text);
  plan.api_version = HasField(root, "apiVersion", YAML::NodeType::Scalar)
                         ? root["apiVersion"].Scalar()
                         : std::string();
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

  SetKubernetesVersion(root, options.kubernetes_version, plan.changes);

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
  plan.notes.emplace_back(
      "kubeadm writes no cloud-controller-manager: a node joined with kubeadm join "
      "--control-plane after the move comes up external, and handoffctl nodes add brings it to "
      "the others' state (its agent adds the cloud-controller-manager)");
  return plan;
}

absl::StatusOr<KubeadmConfigPlan> PlanInTreeConfiguration(std::string_view current,
                                                          std::string_view saved,
                                                          const KubeadmConfigOptions& options) {
  if (!options.kubernetes_version.empty()) {
    if (absl::Status version = CheckKubernetesVersion(options.kubernetes_version); !version.ok()) {
      return version;
    }
  }
  absl::StatusOr<YAML::Node> parsed = LoadClusterConfiguration(saved, InTreeCopySource());
  if (!parsed.ok()) return parsed.status();
  KubeadmConfigPlan plan;
  plan.before = std::string(current);
  plan.api_version = HasField(*parsed, "apiVersion", YAML::NodeType::Scalar)
                         ? (*parsed)["apiVersion"].Scalar()
                         : std::string();
  YAML::Node root = YAML::Clone(*parsed);
  std::vector<std::string> edits;
  SetKubernetesVersion(root, options.kubernetes_version, edits);
  const bool prepared = options.target == KubeadmConfigTarget::kPrepared;
  if (prepared) {
    KubeadmConfigPlan lm_plan;
    Editor editor(lm_plan);
    absl::StatusOr<YAML::Node> kcm = ChildMap(root, "controllerManager", "controllerManager");
    if (!kcm.ok()) return kcm.status();
    ExtraArgs kcm_args(*kcm, "controllerManager", plan.api_version == "kubeadm.k8s.io/v1beta4");
    if (absl::Status valid = kcm_args.Validate(); !valid.ok()) return valid;
    if (kcm_args.Get("cloud-provider").value_or("") == "external") {
      return absl::FailedPreconditionError(
          StrCat(InTreeCopySource(),
                 " has controllerManager cloud-provider: external; a node of version N with "
                 "Leader Migration needs the in-tree provider"));
    }
    editor.SetArg(kcm_args, "controllerManager", "enable-leader-migration", "true");
    editor.SetArg(kcm_args, "controllerManager", "leader-migration-config",
                  options.leader_migration_config);
    if (absl::Status added =
            editor.AddFileVolume(*kcm, "leadermigration", options.leader_migration_config);
        !added.ok()) {
      return added;
    }
    for (std::string& change : lm_plan.changes) edits.push_back(std::move(change));
  }
  plan.after = edits.empty() ? std::string(saved) : EmitYaml(root);
  if (plan.after != plan.before) {
    plan.changes.push_back(StrCat("ClusterConfiguration: back to the in-tree one kept in ",
                                  kKubeadmConfigNamespace, "/", kInTreeCopyName, " before the move",
                                  prepared ? ", with Leader Migration" : ""));
    for (std::string& change : edits) plan.changes.push_back(std::move(change));
  }
  plan.notes.emplace_back(
      "kubelets: handoff-agent puts each node's kubelet back on the in-tree provider; nodes "
      "joined later need nodeRegistration.kubeletExtraArgs cloud-provider: aws in their "
      "JoinConfiguration");
  if (prepared) {
    plan.notes.emplace_back(StrCat(
        "a node joining with this configuration needs ", options.leader_migration_config,
        " before kubeadm join (handoffctl kubeadm-config leader-migration-file writes it); once "
        "the rollback is done, apply --to in-tree"));
  }
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
  absl::StatusOr<Json> config_map = client.Get(KubeadmConfigRef());
  if (!config_map.ok()) {
    if (config_map.status().code() == absl::StatusCode::kNotFound) {
      return absl::NotFoundError(StrCat(config_map.status().message(),
                                        ": this cluster was not set up by kubeadm, so there is "
                                        "no kubeadm configuration to update"));
    }
    return config_map.status();
  }
  if (options.target != KubeadmConfigTarget::kExternal) {
    absl::StatusOr<std::string> saved = ReadInTreeCopy(client);
    if (!saved.ok()) return saved.status();
    return PlanInTreeConfiguration(StringAt(*config_map, {"data", kClusterConfigurationKey}),
                                   *saved, options);
  }
  return PlanKubeadmConfigMap(*config_map, options);
}

absl::StatusOr<KubeadmConfigApplyResult> ApplyKubeadmConfig(KubeClient& client,
                                                            const KubeadmConfigOptions& options) {
  KubeadmConfigApplyResult result;
  std::optional<std::string> saved;
  if (options.target != KubeadmConfigTarget::kExternal) {
    absl::StatusOr<std::string> copy = ReadInTreeCopy(client);
    if (!copy.ok()) return copy.status();
    saved = *std::move(copy);
  } else {
    // The in-tree configuration is kept before it is first changed.
    absl::StatusOr<Json> config_map = client.Get(KubeadmConfigRef());
    if (!config_map.ok()) return config_map.status();
    const std::string text = StringAt(*config_map, {"data", kClusterConfigurationKey});
    if (!text.empty()) {
      absl::StatusOr<Json> existing = client.Get(InTreeCopyRef());
      if (!existing.ok() && existing.status().code() != absl::StatusCode::kNotFound) {
        return existing.status();
      }
      if (!existing.ok()) {
        absl::StatusOr<bool> created = SaveInTreeCopy(client, text);
        if (!created.ok()) return created.status();
        result.saved_in_tree_copy = *created;
      }
    }
  }
  absl::StatusOr<MutateResult> mutated = client.Mutate(
      KubeadmConfigRef(), [&options, &result, &saved](Json& config_map) -> absl::StatusOr<bool> {
        absl::StatusOr<KubeadmConfigPlan> plan =
            saved ? PlanInTreeConfiguration(
                        StringAt(config_map, {"data", kClusterConfigurationKey}), *saved, options)
                  : PlanKubeadmConfigMap(config_map, options);
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
