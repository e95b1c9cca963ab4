#include "agent/engine/settings.h"

#include <functional>
#include <vector>

#include "agent/base/strings.h"
#include "agent/base/yaml_util.h"

namespace handoff {
namespace {

// Reads a map of known keys, collecting every problem with its path.
class Reader {
 public:
  explicit Reader(std::string_view source) : source_(source) {}

  using Handler = std::function<void(const YAML::Node&, const std::string&)>;

  void Map(const YAML::Node& node, const std::string& path,
           const std::vector<std::pair<std::string, Handler>>& fields) {
    if (!node.IsMap()) {
      Problem(path, "must be a map");
      return;
    }
    for (const auto& entry : node) {
      const std::string key = entry.first.Scalar();
      const std::string field = path.empty() ? key : StrCat(path, ".", key);
      bool known = false;
      for (const auto& [name, handler] : fields) {
        if (name == key) {
          handler(entry.second, field);
          known = true;
        }
      }
      if (!known) {
        std::vector<std::string> names;
        for (const auto& field_entry : fields) names.push_back(field_entry.first);
        Problem(field, StrCat("unknown setting (known here: ", StrJoin(names, ", "), ")"));
      }
    }
  }

  Handler String(std::string& out) {
    return [this, &out](const YAML::Node& node, const std::string& path) {
      if (!node.IsScalar()) return Problem(path, "must be a string");
      out = node.Scalar();
    };
  }
  Handler Bool(bool& out) {
    return [this, &out](const YAML::Node& node, const std::string& path) {
      if (!node.IsScalar() || (node.Scalar() != "true" && node.Scalar() != "false")) {
        return Problem(path, "must be true or false");
      }
      out = node.Scalar() == "true";
    };
  }
  Handler StringMap(std::map<std::string, std::string>& out) {
    return [this, &out](const YAML::Node& node, const std::string& path) {
      if (!node.IsMap()) return Problem(path, "must be a map of strings");
      for (const auto& entry : node) {
        if (!entry.second.IsScalar() && !entry.second.IsNull()) {
          Problem(StrCat(path, ".", entry.first.Scalar()), "must be a string");
          continue;
        }
        out[entry.first.Scalar()] = entry.second.IsNull() ? "" : entry.second.Scalar();
      }
    };
  }

  void Problem(const std::string& path, const std::string& what) {
    problems_.push_back(StrCat(source_, ": ", path, ": ", what));
  }
  const std::vector<std::string>& problems() const { return problems_; }

 private:
  std::string source_;
  std::vector<std::string> problems_;
};

}  // namespace

absl::StatusOr<Settings> ParseSettings(std::string_view text, std::string_view source) {
  absl::StatusOr<YAML::Node> root = LoadYaml(text, source);
  if (!root.ok()) return root.status();
  Settings settings;
  Reader reader(source);
  std::string version;
  reader.Map(
      *root, "",
      {
          {"paths",
           [&](const YAML::Node& node, const std::string& path) {
             reader.Map(node, path,
                        {
                            {"manifestDir", reader.String(settings.paths.manifest_dir)},
                            {"kubeletFlagsFile", reader.String(settings.paths.kubelet_flags_file)},
                            {"leaderMigrationConfig",
                             reader.String(settings.paths.leader_migration_config)},
                            {"stateDir", reader.String(settings.paths.state_dir)},
                        });
           }},
          {"kubernetesVersion", reader.String(version)},
          {"leaderMigration",
           [&](const YAML::Node& node, const std::string& path) {
             reader.Map(node, path,
                        {
                            {"leaderName", reader.String(settings.leader_name)},
                            {"wildcard", reader.Bool(settings.wildcard)},
                            {"nodeipam", reader.Bool(settings.migrate_nodeipam)},
                        });
           }},
          {"kubeControllerManager",
           [&](const YAML::Node& node, const std::string& path) {
             reader.Map(node, path,
                        {
                            {"externalCloudVolumePlugin",
                             reader.String(settings.external_cloud_volume_plugin)},
                        });
           }},
          {"cloudControllerManager",
           [&](const YAML::Node& node, const std::string& path) {
             reader.Map(
                 node, path,
                 {
                     {"image", reader.String(settings.ccm.image)},
                     {"cloudProvider", reader.String(settings.ccm.cloud_provider)},
                     {"kubeconfig", reader.String(settings.ccm.kubeconfig)},
                     {"clusterCIDR", reader.String(settings.ccm.cluster_cidr)},
                     {"configureCloudRoutes", reader.Bool(settings.ccm.configure_cloud_routes)},
                     {"extraArgs", reader.StringMap(settings.ccm.extra_args)},
                 });
           }},
          {"images", reader.StringMap(settings.images)},
      });
  if (!version.empty()) {
    absl::StatusOr<KubeVersion> parsed = KubeVersion::Parse(version);
    if (!parsed.ok()) {
      reader.Problem("kubernetesVersion", std::string(parsed.status().message()));
    } else {
      settings.k8s_version = *parsed;
    }
  }
  for (const auto& [component, image] : settings.images) {
    if (component != "kube-apiserver" && component != "kube-controller-manager" &&
        component != "kube-scheduler") {
      reader.Problem(
          StrCat("images.", component),
          "only kube-apiserver, kube-controller-manager and kube-scheduler are re-imaged");
    }
  }
  if (settings.ccm.configure_cloud_routes && settings.ccm.cluster_cidr.empty()) {
    reader.Problem("cloudControllerManager.clusterCIDR",
                   "must be set when configureCloudRoutes is true (the route controller needs it)");
  }
  if (settings.ccm.cloud_provider != "aws" && settings.ccm.cloud_provider != "aws/v2") {
    reader.Problem("cloudControllerManager.cloudProvider", "must be aws or aws/v2");
  }
  if (!reader.problems().empty()) {
    return absl::InvalidArgumentError(StrJoin(reader.problems(), "\n"));
  }
  return settings;
}

}  // namespace handoff
