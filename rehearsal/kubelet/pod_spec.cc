#include "rehearsal/kubelet/pod_spec.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <set>

#include "common/base/kube_version.h"
#include "common/base/strings.h"
#include "common/fs/host_path.h"

namespace handoff::sandbox {
namespace {

// FNV-1a, 64 bits: stable across builds and runs (std::hash is not promised to be), which the
// hash needs because it is kept in sandbox-pods.json across kubelet restarts.
class Fnv1a {
 public:
  void Add(std::string_view bytes) {
    for (unsigned char c : bytes) {
      hash_ ^= c;
      hash_ *= 0x100000001b3ULL;
    }
  }
  std::string Hex() const {
    char text[17];
    std::snprintf(text, sizeof(text), "%016" PRIx64, hash_);
    return text;
  }

 private:
  std::uint64_t hash_ = 0xcbf29ce484222325ULL;
};

// The node's meaning without its layout: maps with sorted keys, every piece length-prefixed so
// that no two trees share a text. The real kubelet hashes the decoded Pod object
// (pkg/kubelet/config/common.go applyDefaults: DeepHashObject), so re-indenting or reordering a
// manifest does not restart its pod; this keeps that property.
void Canonical(const YAML::Node& node, std::string& out) {
  switch (node.Type()) {
    case YAML::NodeType::Scalar:
      StrAppend(&out, "s", node.Scalar().size(), ":", node.Scalar());
      return;
    case YAML::NodeType::Sequence:
      StrAppend(&out, "[", node.size(), ":");
      for (const YAML::Node& item : node) Canonical(item, out);
      out.push_back(']');
      return;
    case YAML::NodeType::Map: {
      // Sorted through indices: assigning a YAML::Node (as std::sort would) rebinds the node it
      // refers to inside the tree, changing the manifest being hashed.
      std::vector<std::string> keys;
      std::vector<YAML::Node> values;
      for (const auto& entry : node) {
        keys.push_back(entry.first.IsScalar() ? entry.first.Scalar() : "");
        values.push_back(entry.second);
      }
      std::vector<size_t> order(keys.size());
      for (size_t i = 0; i < order.size(); ++i) order[i] = i;
      std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return keys[a] < keys[b]; });
      StrAppend(&out, "{", keys.size(), ":");
      for (size_t i : order) {
        StrAppend(&out, "k", keys[i].size(), ":", keys[i]);
        Canonical(values[i], out);
      }
      out.push_back('}');
      return;
    }
    default:
      out.push_back('~');
      return;
  }
}

std::vector<std::string> Items(const YAML::Node& container, const char* key) {
  std::vector<std::string> items;
  const YAML::Node list = container[key];
  if (!list.IsDefined() || !list.IsSequence()) return items;
  for (const YAML::Node& item : list) items.push_back(item.IsScalar() ? item.Scalar() : "");
  return items;
}

}  // namespace

absl::StatusOr<std::string> ImageEntrypoint(std::string_view image) {
  if (StrContains(image, "cloud-controller-manager")) return "/bin/aws-cloud-controller-manager";
  return absl::NotFoundError(StrCat(
      "image ", image, " has no entrypoint known to the sandbox; give the container a command"));
}

std::string ComponentOf(std::string_view argv0) {
  std::string name = BaseName(argv0);
  if (name == "aws-cloud-controller-manager") return "cloud-controller-manager";
  return name;
}

absl::StatusOr<PodSpec> PodFromManifest(const StaticPod& pod, std::string_view path,
                                        std::string_view node_name) {
  // The kubelet refuses a pod that fails validation (pkg/kubelet/config/common.go
  // tryDecodeSinglePod → validation.ValidatePodCreate); Validate checks the parts that matter
  // here (name, containers with images, volumes and mounts).
  if (absl::Status valid = pod.Validate(); !valid.ok()) return valid;
  const YAML::Node container = pod.node()["spec"]["containers"][0];
  PodSpec spec;
  spec.name = pod.PodName();
  spec.file = std::string(path);
  spec.image = pod.Image(0);
  std::vector<std::string> command = Items(container, "command");
  const std::vector<std::string> args = Items(container, "args");
  if (command.empty()) {
    absl::StatusOr<std::string> entrypoint = ImageEntrypoint(spec.image);
    if (!entrypoint.ok()) {
      return absl::FailedPreconditionError(
          StrCat(path, ": pod ", spec.name, ": ", entrypoint.status().message()));
    }
    command = {*entrypoint};
  }
  if (command[0].empty()) {
    return absl::InvalidArgumentError(
        StrCat(path, ": pod ", spec.name, ": spec.containers[0].command[0] is empty"));
  }
  spec.argv = command;
  spec.argv.insert(spec.argv.end(), args.begin(), args.end());
  spec.component = ComponentOf(spec.argv[0]);
  if (absl::StatusOr<KubeVersion> version = KubeVersion::FromImage(spec.image); version.ok()) {
    spec.version = version->ToString();
  }
  spec.mounts = pod.HostPathMounts(0);
  if (const YAML::Node env = container["env"]; env.IsDefined() && env.IsSequence()) {
    for (const YAML::Node& item : env) {
      if (!item.IsMap() || !item["name"].IsDefined() || !item["name"].IsScalar()) continue;
      if (item["valueFrom"].IsDefined()) continue;
      const YAML::Node value = item["value"];
      spec.env.emplace_back(item["name"].Scalar(),
                            value.IsDefined() && value.IsScalar() ? value.Scalar() : "");
    }
  }

  std::string canonical;
  Canonical(pod.node(), canonical);
  Fnv1a hash;
  hash.Add(canonical);
  // pkg/kubelet/config/common.go applyDefaults also hashes "host:<node>" and "file:<source>":
  // the same manifest under another name or on another node is another pod.
  hash.Add(StrCat("\nhost:", node_name, "\nfile:", path));
  spec.hash = hash.Hex();
  return spec;
}

DesiredPods PodsFromManifests(std::vector<ManifestFile> files, std::string_view manifest_dir,
                              std::string_view node_name) {
  // file.go extractFromDir globs "[^.]*" and sorts the names; config.go filterInvalidPods then
  // keeps the first pod of each name and rejects the later ones ("duplicate pod name").
  std::sort(files.begin(), files.end(),
            [](const ManifestFile& a, const ManifestFile& b) { return a.name < b.name; });
  DesiredPods desired;
  for (const ManifestFile& file : files) {
    if (file.name.empty() || StartsWith(file.name, ".")) continue;
    const std::string path = StrCat(TrimTrailingSlashes(manifest_dir), "/", file.name);
    absl::StatusOr<StaticPod> pod = StaticPod::Parse(file.content, path);
    if (!pod.ok()) {
      desired.problems.push_back(StrCat("no pod from ", pod.status().message()));
      continue;
    }
    absl::StatusOr<PodSpec> spec = PodFromManifest(*pod, path, node_name);
    if (!spec.ok()) {
      desired.problems.push_back(StrCat("no pod from ", spec.status().message()));
      continue;
    }
    auto [existing, inserted] = desired.pods.emplace(spec->name, *spec);
    if (!inserted) {
      desired.problems.push_back(StrCat("no pod from ", path, ": pod ", spec->name,
                                        " is already defined by ", existing->second.file,
                                        ", which comes first by name"));
    }
  }
  return desired;
}

std::vector<std::string> PodEnvironment(const PodSpec& pod, const PodContext& context,
                                        std::string_view path) {
  std::vector<std::string> env;
  env.push_back(StrCat("PATH=", path));
  env.push_back(StrCat("HANDOFF_SANDBOX_NODE=", context.node));
  env.push_back(StrCat("HANDOFF_SANDBOX_ROOT=", context.root));
  if (!context.records.empty()) env.push_back(StrCat("HANDOFF_SANDBOX_RECORDS=", context.records));
  std::vector<std::string> mounts;
  const std::string root = TrimTrailingSlashes(context.root);
  for (const HostPathMount& mount : pod.mounts) {
    mounts.push_back(StrCat(mount.mount_path, "=", root == "/" ? "" : root, mount.host_path));
  }
  env.push_back(StrCat("HANDOFF_SANDBOX_MOUNTS=", StrJoin(mounts, "\n")));
  if (!pod.version.empty()) env.push_back(StrCat("HANDOFF_SANDBOX_VERSION=", pod.version));
  return env;
}

std::vector<std::string> ContainerEnvironment(const PodSpec& pod, std::string_view node,
                                              std::string_view path) {
  std::vector<std::pair<std::string, std::string>> entries = {
      {"PATH", std::string(path)}, {"HOSTNAME", std::string(node)}, {"HOME", "/root"},
      {"TZ", "UTC"}};
  for (const auto& [name, value] : pod.env) {
    auto same = std::find_if(entries.begin(), entries.end(),
                             [&name = name](const auto& entry) { return entry.first == name; });
    if (same != entries.end()) {
      same->second = value;
    } else {
      entries.emplace_back(name, value);
    }
  }
  std::vector<std::string> env;
  for (const auto& [name, value] : entries) env.push_back(StrCat(name, "=", value));
  return env;
}

}  // namespace handoff::sandbox
