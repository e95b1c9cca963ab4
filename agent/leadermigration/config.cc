#include "agent/leadermigration/config.h"

#include <array>

#include "common/base/strings.h"
#include "common/base/yaml_util.h"

namespace handoff::leadermigration {
namespace {

constexpr std::string_view kKubeControllerManager = "kube-controller-manager";
constexpr std::string_view kCloudControllerManager = "cloud-controller-manager";

// Leader Migration (KEP-2436) arrived in 1.21; its default configuration in 1.22.
constexpr int kFirstMinorWithMigration = 21;
constexpr int kFirstMinorWithDefault = 22;

// The controller-name table, the one place to correct them: the names under which each manager
// registers the cloud controllers, from the release in `first_minor` on (until the next row for the
// same component). The leader-migration filter compares controllerLeaders[].name with exactly these
// strings, per process. 1.28 renamed them in kube-controller-manager
// (cmd/kube-controller-manager/names) and in k8s.io/cloud-provider v0.28 (which
// cloud-controller-manager 1.28 builds on). Releases before the first row use its names (they did
// not change before Leader Migration existed).
struct ControllerNameRow {
  Component component;
  int first_minor;
  std::array<std::string_view, 4> names;  // indexed by CloudController
};
constexpr ControllerNameRow kControllerNames[] = {
    {Component::kKubeControllerManager,
     21,
     {"route", "service", "cloud-node-lifecycle", "nodeipam"}},
    {Component::kKubeControllerManager,
     28,
     {"node-route-controller", "service-lb-controller", "cloud-node-lifecycle-controller",
      "node-ipam-controller"}},
    {Component::kCloudControllerManager,
     21,
     {"route", "service", "cloud-node-lifecycle", "nodeipam"}},
    {Component::kCloudControllerManager,
     28,
     {"node-route-controller", "service-lb-controller", "cloud-node-lifecycle-controller",
      "node-ipam-controller"}},
};

// The names in k8s.io/controller-manager's built-in default configuration
// (pkg/leadermigration/config/default.go), for route, service and cloud-node-lifecycle. The 1.28
// default was renamed to names that the 1.28 managers do not all register (only
// cloud-node-lifecycle-controller matches): an upstream mismatch that DefaultConfig reproduces on
// purpose, because it describes what a manager really does, and that Lint reports.
struct DefaultNameRow {
  int first_minor;
  std::array<std::string_view, 3> names;
};
constexpr DefaultNameRow kDefaultNames[] = {
    {22, {"route", "service", "cloud-node-lifecycle"}},
    {28, {"route-controller", "service-controller", "cloud-node-lifecycle-controller"}},
};

// v1alpha1 and v1beta1 require resourceLock (there is no default); v1 dropped the field and its
// conversion always sets leases.
constexpr ApiVersionInfo kApiVersions[] = {
    {"controllermanager.config.k8s.io/v1alpha1", 21, true},
    {"controllermanager.config.k8s.io/v1beta1", 22, true},
    {"controllermanager.config.k8s.io/v1", 24, false},
};

constexpr std::string_view kResourceLockLeases = "leases";

size_t Index(CloudController controller) { return static_cast<size_t>(controller); }

}  // namespace

std::string_view ComponentName(Component component) {
  switch (component) {
    case Component::kKubeControllerManager:
      return kKubeControllerManager;
    case Component::kCloudControllerManager:
      return kCloudControllerManager;
  }
  return kKubeControllerManager;
}

absl::StatusOr<Component> ParseComponent(std::string_view name) {
  if (name == kKubeControllerManager) return Component::kKubeControllerManager;
  if (name == kCloudControllerManager) return Component::kCloudControllerManager;
  return absl::InvalidArgumentError(StrCat("'", name, "' is not a controller manager; use ",
                                           kKubeControllerManager, " or ",
                                           kCloudControllerManager));
}

std::string ControllerName(Component component, const KubeVersion& version,
                           CloudController controller) {
  const ControllerNameRow* chosen = nullptr;
  for (const ControllerNameRow& row : kControllerNames) {
    if (row.component != component) continue;
    if (chosen == nullptr || version.AtLeast(1, row.first_minor)) chosen = &row;
  }
  return std::string(chosen->names[Index(controller)]);
}

std::vector<ApiVersionInfo> ApiVersions() {
  return std::vector<ApiVersionInfo>(std::begin(kApiVersions), std::end(kApiVersions));
}

std::optional<ApiVersionInfo> FindApiVersion(std::string_view api_version) {
  for (const ApiVersionInfo& info : kApiVersions) {
    if (info.api_version == api_version) return info;
  }
  return std::nullopt;
}

absl::StatusOr<ApiVersionInfo> NewestApiVersion(const KubeVersion& version) {
  std::optional<ApiVersionInfo> newest;
  for (const ApiVersionInfo& info : kApiVersions) {
    if (version.AtLeast(1, info.first_minor)) newest = info;
  }
  if (!newest) {
    return absl::FailedPreconditionError(StrCat(version.ToString(),
                                                " has no Leader Migration (it arrived in v1.",
                                                kFirstMinorWithMigration, ")"));
  }
  return *newest;
}

bool PlainScalarIsString(std::string_view text) {
  return ResolvePlainScalar(text) == JsonScalarType::kString;
}

bool IsValidLeaseName(std::string_view name) {
  if (name.empty() || name.size() > 253) return false;
  auto alnum = [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); };
  // A subdomain is dot-separated DNS-1123 labels: [a-z0-9]([-a-z0-9]*[a-z0-9])?
  size_t start = 0;
  while (start <= name.size()) {
    size_t dot = name.find('.', start);
    if (dot == std::string_view::npos) dot = name.size();
    const std::string_view label = name.substr(start, dot - start);
    if (label.empty() || !alnum(label.front()) || !alnum(label.back())) return false;
    for (char c : label) {
      if (!alnum(c) && c != '-') return false;
    }
    start = dot + 1;
  }
  return true;
}

absl::StatusOr<Config> DefaultConfig(Component component, const KubeVersion& version) {
  if (!version.AtLeast(1, kFirstMinorWithDefault)) {
    return absl::FailedPreconditionError(
        StrCat(ComponentName(component), " ", version.ToString(),
               " has no default Leader Migration configuration (it arrived in v1.",
               kFirstMinorWithDefault, "); pass --leader-migration-config"));
  }
  const DefaultNameRow* names = &kDefaultNames[0];
  for (const DefaultNameRow& row : kDefaultNames) {
    if (version.AtLeast(1, row.first_minor)) names = &row;
  }
  absl::StatusOr<ApiVersionInfo> api = NewestApiVersion(version);
  if (!api.ok()) return api.status();
  Config config;
  config.api_version = std::string(api->api_version);
  config.leader_name = std::string(kDefaultLeaderName);
  if (api->has_resource_lock) config.resource_lock = std::string(kResourceLockLeases);
  for (std::string_view name : names->names) {
    config.controller_leaders.push_back({std::string(name), std::string(kAnyComponent)});
  }
  return config;
}

absl::StatusOr<std::string> Render(const RenderOptions& options) {
  const std::string reader =
      StrCat(ComponentName(options.reader), " ", options.reader_version.ToString());
  absl::StatusOr<ApiVersionInfo> api = NewestApiVersion(options.reader_version);
  if (!api.ok()) {
    return absl::FailedPreconditionError(StrCat(
        reader, " has no Leader Migration (it arrived in v1.", kFirstMinorWithMigration, ")"));
  }
  if (!IsValidLeaseName(options.leader_name)) {
    return absl::InvalidArgumentError(StrCat(
        "leader name '", options.leader_name,
        "' is not a valid Lease name: use lowercase letters, digits, '-' and '.', starting and "
        "ending with a letter or digit, at most 253 characters"));
  }
  // A valid Lease name can still read as a number or bool ("1234", "yes"): quote those.
  const std::string leader_name = PlainScalarIsString(options.leader_name)
                                      ? options.leader_name
                                      : StrCat("\"", options.leader_name, "\"");
  // "*" must be quoted: unquoted, it starts a YAML alias and the file does not parse.
  const std::string component = options.wildcard ? StrCat("\"", kAnyComponent, "\"")
                                                 : std::string(ComponentName(options.reader));

  std::string text = StrCat("kind: ", kKind, "\napiVersion: ", api->api_version,
                            "\nleaderName: ", leader_name, "\n");
  // v1 has no resourceLock field; 1.32+ decode strictly and would refuse to start on it.
  if (api->has_resource_lock) text += StrCat("resourceLock: ", kResourceLockLeases, "\n");
  text += "controllerLeaders:\n";
  for (CloudController controller : kCloudControllers) {
    if (controller == CloudController::kNodeIpam && !options.include_nodeipam) continue;
    text += StrCat("  - name: ", ControllerName(options.reader, options.reader_version, controller),
                   "\n    component: ", component, "\n");
  }
  return text;
}

std::vector<std::string> ControllersFor(const Config& config, Component component) {
  std::vector<std::string> names;
  for (const ControllerLeader& leader : config.controller_leaders) {
    if (leader.component == ComponentName(component) || leader.component == kAnyComponent) {
      names.push_back(leader.name);
    }
  }
  return names;
}

}  // namespace handoff::leadermigration
