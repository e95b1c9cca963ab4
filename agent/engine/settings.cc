#include "agent/engine/settings.h"

#include <charconv>
#include <functional>
#include <vector>

#include "common/base/strings.h"
#include "common/base/yaml_util.h"
#include "common/fs/host_path.h"

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
  Handler StringList(std::vector<std::string>& out) {
    return [this, &out](const YAML::Node& node, const std::string& path) {
      if (!node.IsSequence()) return Problem(path, "must be a list of strings");
      std::vector<std::string> items;
      for (size_t i = 0; i < node.size(); ++i) {
        if (!node[i].IsScalar()) return Problem(StrCat(path, "[", i, "]"), "must be a string");
        items.push_back(node[i].Scalar());
      }
      out = std::move(items);
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

std::string_view NodeRoleName(NodeRole role) {
  return role == NodeRole::kWorker ? "worker" : "control-plane";
}

absl::Status CheckClusterId(std::string_view id) {
  // EC2 tag keys are at most 128 characters, and "kubernetes.io/cluster/" takes 22. No '/' or
  // ',' either: a ',' would split the aws CLI's filter values, a '/' makes another key's prefix.
  constexpr size_t kMaxClusterId = 128 - 22;
  if (id.size() > kMaxClusterId) {
    return absl::InvalidArgumentError(StrCat("\"", id, "\" is longer than ", kMaxClusterId,
                                             " characters (the tag key kubernetes.io/cluster/<id> "
                                             "is at most 128)"));
  }
  for (char c : id) {
    const bool alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
    if (!alnum && std::string_view("-_.:=+@").find(c) == std::string_view::npos) {
      return absl::InvalidArgumentError(StrCat("\"", id, "\" is not a cluster id: use letters, "
                                               "digits and - _ . : = + @"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<HealthUrl> ParseHealthUrl(std::string_view url) {
  auto invalid = [&](std::string_view what) {
    return absl::InvalidArgumentError(StrCat("\"", url, "\" is not an http(s) URL: ", what));
  };
  HealthUrl parsed;
  const size_t scheme_end = url.find("://");
  if (scheme_end == std::string_view::npos)
    return invalid("it lacks a scheme (http:// or https://)");
  parsed.scheme = std::string(url.substr(0, scheme_end));
  if (parsed.scheme != "http" && parsed.scheme != "https") {
    return invalid("the scheme must be http or https");
  }
  std::string_view rest = url.substr(scheme_end + 3);
  if (rest.find_first_of("?#") != std::string_view::npos) {
    return invalid("a query or fragment is not supported");
  }
  const size_t path_start = rest.find('/');
  std::string_view authority = rest.substr(0, path_start);
  parsed.path = path_start == std::string_view::npos ? "/" : std::string(rest.substr(path_start));
  if (authority.find('@') != std::string_view::npos) return invalid("user info is not supported");
  std::string_view port;
  if (StartsWith(authority, "[")) {
    const size_t close = authority.find(']');
    if (close == std::string_view::npos) return invalid("the IPv6 address lacks its ']'");
    parsed.host = std::string(authority.substr(1, close - 1));
    std::string_view after = authority.substr(close + 1);
    if (!after.empty() && !StartsWith(after, ":")) return invalid("junk after the IPv6 address");
    port = StripPrefix(after, ":");
    if (after == ":") return invalid("the port is empty");
  } else {
    const size_t colon = authority.find(':');
    parsed.host = std::string(authority.substr(0, colon));
    if (colon != std::string_view::npos) {
      port = authority.substr(colon + 1);
      if (port.empty()) return invalid("the port is empty");
    }
  }
  if (parsed.host.empty()) return invalid("the host is empty");
  if (parsed.host.find_first_of(" \t/") != std::string::npos) {
    return invalid("the host holds a space or a slash");
  }
  if (port.empty()) {
    parsed.port = parsed.scheme == "https" ? 443 : 80;
  } else {
    int value = 0;
    auto [end, error] = std::from_chars(port.data(), port.data() + port.size(), value);
    if (error != std::errc() || end != port.data() + port.size() || value < 1 || value > 65535) {
      return invalid("the port must be a number from 1 to 65535");
    }
    parsed.port = value;
  }
  return parsed;
}

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
          {"kubelet",
           [&](const YAML::Node& node, const std::string& path) {
             reader.Map(node, path,
                        {
                            {"healthzUrl",
                             [&](const YAML::Node& url, const std::string& url_path) {
                               if (!url.IsScalar())
                                 return reader.Problem(url_path, "must be a string");
                               absl::StatusOr<HealthUrl> parsed = ParseHealthUrl(url.Scalar());
                               if (!parsed.ok()) {
                                 return reader.Problem(url_path,
                                                       std::string(parsed.status().message()));
                               }
                               settings.kubelet.healthz = *parsed;
                             }},
                            {"settle",
                             [&](const YAML::Node& value, const std::string& value_path) {
                               absl::Duration settle;
                               if (!value.IsScalar() ||
                                   !absl::ParseDuration(value.Scalar(), &settle) ||
                                   settle < absl::ZeroDuration() || settle > absl::Minutes(5)) {
                                 return reader.Problem(
                                     value_path, "must be a duration from 0s to 5m, such as 5s");
                               }
                               settings.kubelet.settle = settle;
                             }},
                        });
           }},
          {"role",
           [&](const YAML::Node& node, const std::string& path) {
             if (!node.IsScalar() ||
                 (node.Scalar() != "control-plane" && node.Scalar() != "worker")) {
               return reader.Problem(path, "must be control-plane or worker");
             }
             settings.role = node.Scalar() == "worker" ? NodeRole::kWorker : NodeRole::kControlPlane;
           }},
          {"worker",
           [&](const YAML::Node& node, const std::string& path) {
             reader.Map(node, path,
                        {
                            {"credentialProviderConfig",
                             reader.String(settings.worker.credential_provider_config)},
                            {"credentialProviderBinDir",
                             reader.String(settings.worker.credential_provider_bin_dir)},
                            {"nodeName", reader.String(settings.worker.node_name)},
                            {"kubeconfig", reader.String(settings.worker.kubeconfig)},
                            {"ecrRegistry", reader.String(settings.worker.ecr_registry)},
                            {"crictl", reader.StringList(settings.worker.crictl)},
                        });
           }},
          {"clusterId", reader.String(settings.cluster_id)},
          {"instanceMetadata",
           [&](const YAML::Node& node, const std::string& path) {
             reader.Map(node, path,
                        {
                            {"endpoint", reader.String(settings.instance_metadata_endpoint)},
                        });
           }},
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
  for (const auto& [key, value] :
       {std::pair<const char*, const std::string*>{"worker.credentialProviderConfig",
                                                   &settings.worker.credential_provider_config},
        {"worker.credentialProviderBinDir", &settings.worker.credential_provider_bin_dir},
        {"worker.kubeconfig", &settings.worker.kubeconfig}}) {
    if (value->empty() || value->front() != '/') {
      reader.Problem(key, StrCat("\"", *value, "\" is not an absolute path"));
    }
  }
  if (settings.worker.crictl.empty() || settings.worker.crictl.front().empty()) {
    reader.Problem("worker.crictl", "must name the crictl command (e.g. [crictl], or [crictl, "
                                    "--runtime-endpoint, unix:///run/containerd/containerd.sock])");
  }
  if (absl::Status id = CheckClusterId(settings.cluster_id); !id.ok()) {
    reader.Problem("clusterId", std::string(id.message()));
  }
  if (!settings.instance_metadata_endpoint.empty()) {
    // scheme://host[:port] only: the metadata paths (latest/api/token, ...) are appended to it.
    absl::StatusOr<HealthUrl> parsed = ParseHealthUrl(settings.instance_metadata_endpoint);
    if (!parsed.ok()) {
      reader.Problem("instanceMetadata.endpoint", std::string(parsed.status().message()));
    } else if (parsed->path != "/") {
      reader.Problem("instanceMetadata.endpoint",
                     StrCat("\"", settings.instance_metadata_endpoint,
                            "\" has a path; write scheme://host[:port], e.g. "
                            "http://169.254.169.254, or \"\" to leave the tag check to you"));
    }
  }
  if (!reader.problems().empty()) {
    return absl::InvalidArgumentError(StrJoin(reader.problems(), "\n"));
  }
  return settings;
}

absl::Status CheckStateDir(const NodePaths& paths, std::string_view source,
                           const FileSystem* fs) {
  const std::string& state_dir = paths.state_dir;
  auto refuse = [&](std::string_view what) {
    return absl::InvalidArgumentError(
        StrCat(source, ": paths.stateDir: ", state_dir, " ", what,
               "; give handoff a directory of its own, e.g. /var/lib/handoff"));
  };
  if (state_dir.empty() || state_dir.front() != '/') return refuse("is not an absolute path");
  struct KubeletDir {
    std::string path;
    std::string_view what;
  };
  std::vector<KubeletDir> kubelet_dirs;
  if (!paths.manifest_dir.empty()) {
    kubelet_dirs.push_back(
        {paths.manifest_dir,
         "the static pod manifest directory (paths.manifestDir), where the kubelet loads every "
         "file: handoff's lock, journal and backups would be taken for broken manifests"});
  }
  if (!paths.kubelet_flags_file.empty()) {
    kubelet_dirs.push_back(
        {ParentPath(paths.kubelet_flags_file),
         "the kubelet's own directory, which holds its flags file (paths.kubeletFlagsFile)"});
  }
  const std::string normal_state = LexicallyNormal(state_dir);
  for (const KubeletDir& dir : kubelet_dirs) {
    if (dir.path.empty() || dir.path.front() != '/') continue;
    const std::string normal_dir = LexicallyNormal(dir.path);
    // "/" would hold every state dir: a flags file at the top is no kubelet directory.
    if (normal_dir == "/") continue;
    if (IsSameOrBelow(normal_state, normal_dir)) {
      return refuse(StrCat(normal_state == normal_dir ? "is " : "is inside ", normal_dir, ", ",
                           dir.what));
    }
    if (fs == nullptr) continue;
    // The same after symlinks: a state dir reached through a link into the manifest dir (or a
    // manifest dir that is itself a link) puts the files in the same place.
    absl::StatusOr<std::string> real_state = fs->RealPath(normal_state);
    absl::StatusOr<std::string> real_dir = fs->RealPath(normal_dir);
    if (!real_state.ok() || !real_dir.ok() || *real_dir == "/") continue;
    if (IsSameOrBelow(*real_state, *real_dir)) {
      return refuse(StrCat("resolves to ", *real_state, ", ",
                           *real_state == *real_dir ? "which is " : "inside ", normal_dir,
                           *real_dir == normal_dir ? "" : StrCat(" (", *real_dir, ")"), ", ",
                           dir.what));
    }
  }
  return absl::OkStatus();
}

}  // namespace handoff
