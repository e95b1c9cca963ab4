// LeaderMigrationConfiguration (group controllermanager.config.k8s.io): the file that tells each
// controller manager which cloud controllers run under the shared migration lease.
//
// Everything here is pure: text in, values and problems out. Thread-compatible.
#ifndef HANDOFF_AGENT_LEADERMIGRATION_CONFIG_H_
#define HANDOFF_AGENT_LEADERMIGRATION_CONFIG_H_

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "common/base/kube_version.h"

namespace handoff::leadermigration {

inline constexpr std::string_view kDefaultLeaderName = "cloud-provider-extraction-migration";
inline constexpr std::string_view kGroup = "controllermanager.config.k8s.io";
inline constexpr std::string_view kKind = "LeaderMigrationConfiguration";
inline constexpr std::string_view kAnyComponent = "*";

// The two managers that take part in a migration.
enum class Component { kKubeControllerManager, kCloudControllerManager };
// "kube-controller-manager" / "cloud-controller-manager".
std::string_view ComponentName(Component component);
absl::StatusOr<Component> ParseComponent(std::string_view name);

// The controllers that move from kube-controller-manager to cloud-controller-manager.
enum class CloudController { kRoute, kService, kCloudNodeLifecycle, kNodeIpam };

// Every CloudController, in the order configuration files list them.
inline constexpr CloudController kCloudControllers[] = {
    CloudController::kRoute, CloudController::kService, CloudController::kCloudNodeLifecycle,
    CloudController::kNodeIpam};

// The exact name under which `component` at `version` registers `controller`: the leader-migration
// filter compares controllerLeaders[].name with this string, per process, so a file must be
// rendered with the names of the component (and version) that reads it. Names changed with 1.28.
std::string ControllerName(Component component, const KubeVersion& version,
                           CloudController controller);

// One apiVersion of LeaderMigrationConfiguration.
struct ApiVersionInfo {
  std::string_view api_version;    // "controllermanager.config.k8s.io/v1beta1"
  int first_minor = 0;             // the first 1.x release whose managers decode it
  bool has_resource_lock = false;  // v1alpha1/v1beta1 carry (and require) resourceLock; v1 has none
};
// Every apiVersion, oldest first.
std::vector<ApiVersionInfo> ApiVersions();
// The entry for a full apiVersion ("group/version"); nullopt when it is not one of the above.
std::optional<ApiVersionInfo> FindApiVersion(std::string_view api_version);
// The newest apiVersion that managers of `version` decode. Error before 1.21.
absl::StatusOr<ApiVersionInfo> NewestApiVersion(const KubeVersion& version);

// Whether sigs.k8s.io/yaml (YAML 1.1, as Kubernetes reads these files) reads the plain (unquoted)
// scalar `text` as a string rather than a null, bool or number. A string field given a value for
// which this is false fails to decode. Shared by Render (to quote) and Lint (to report).
bool PlainScalarIsString(std::string_view text);

// Whether `name` can name the migration Lease: a DNS-1123 subdomain (lowercase letters, digits,
// '-' and '.', starting and ending with a letter or digit, at most 253 characters).
bool IsValidLeaseName(std::string_view name);

struct ControllerLeader {
  std::string name;
  std::string component;  // a component name or "*"
};

struct Config {
  std::string api_version;  // e.g. "controllermanager.config.k8s.io/v1"
  std::string leader_name;
  std::string resource_lock;  // only v1alpha1/v1beta1 carry it
  std::vector<ControllerLeader> controller_leaders;
};

// The configuration a manager uses when --enable-leader-migration is given without
// --leader-migration-config (1.22+): leaderName kDefaultLeaderName, every cloud controller "*",
// names as that manager's version spells them in its default. Error before 1.22 (no default).
absl::StatusOr<Config> DefaultConfig(Component component, const KubeVersion& version);

struct RenderOptions {
  Component reader = Component::kKubeControllerManager;  // the manager that reads this file
  KubeVersion reader_version;
  bool wildcard = false;          // component "*" instead of the reader's name
  bool include_nodeipam = false;  // migrate the Node IPAM controller too
  std::string leader_name = std::string(kDefaultLeaderName);
};

// The file's exact text for `options.reader`: the newest apiVersion that reader's version decodes
// (v1 from 1.24: no resourceLock, because 1.32+ decodes strictly and rejects it; older versions
// get `resourceLock: leases`), controller names for that reader, "*" always double-quoted.
// Error when the reader's version has no Leader Migration (before 1.21).
absl::StatusOr<std::string> Render(const RenderOptions& options);

// One finding. `line` is 1-based, 0 when the finding is not tied to a line. `field` is a path such
// as "controllerLeaders[3].component", empty for whole-document findings.
struct Problem {
  int line = 0;
  std::string field;
  std::string message;
};

// "FILE:LINE: message" when a line is known, else "FILE: FIELD: message" (or "FILE: message").
std::string FormatProblem(std::string_view file_name, const Problem& problem);

struct LintOptions {
  std::optional<Component> component;  // the manager that will read the file
  std::optional<KubeVersion> version;  // that manager's version
};

struct LintResult {
  std::optional<Config> config;   // set when the text decoded (possibly after lint repairs)
  std::vector<Problem> problems;  // every problem, in line order then field order; empty = valid
};

// Decodes and validates every apiVersion (v1alpha1, v1beta1, v1) with the upstream rules plus
// stricter ones (unknown or duplicate fields, duplicate controller names, resourceLock other than
// leases, resourceLock under v1), and with `options` the reader-specific ones (names that reader
// does not register, entries assigned to the other manager, apiVersion that reader cannot decode).
// Recognises the known documentation mistakes (unquoted `*`, a `- component:` list item split from
// its `- name:`) and reports each with its line and the fix, then keeps linting the repaired text.
LintResult Lint(std::string_view text, const LintOptions& options);

// Lint, returning the config only when there are no problems; otherwise an InvalidArgument error
// whose message lists every problem (without a file name).
absl::StatusOr<Config> ParseAndValidate(std::string_view text, const LintOptions& options);

// The names in `config` that `component` may run while holding the migration lease: entries whose
// component is `component` or "*".
std::vector<std::string> ControllersFor(const Config& config, Component component);

}  // namespace handoff::leadermigration

#endif  // HANDOFF_AGENT_LEADERMIGRATION_CONFIG_H_
