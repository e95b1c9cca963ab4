// The real upstream components handoff is tested and rehearsed against, as
// tests/real/components.sh builds them: a directory with bin/<name> executables and versions.txt
// (one "name<TAB>version<TAB>source" line per component). Finding them reads the environment and
// the file system only; nothing is built or downloaded here.
#ifndef HANDOFF_COORDINATOR_SANDBOX_REAL_COMPONENTS_H_
#define HANDOFF_COORDINATOR_SANDBOX_REAL_COMPONENTS_H_

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace handoff::sandbox::real {

// The executables' names under <dir>/bin.
inline constexpr std::string_view kEtcd = "etcd";
inline constexpr std::string_view kKubeApiserver = "kube-apiserver";
inline constexpr std::string_view kKubeControllerManager = "kube-controller-manager";
inline constexpr std::string_view kAwsCloudControllerManager = "aws-cloud-controller-manager";
inline constexpr std::string_view kFakeAws = "handoff-fake-aws";

// What an operator runs to build them; every error about a missing component says it.
inline constexpr std::string_view kBuildCommand = "bash tests/real/components.sh";

// One line of versions.txt.
struct ComponentVersion {
  std::string name;     // "kube-apiserver"
  std::string version;  // "v1.26.13"
  std::string source;   // "k8s.io/kubernetes", "debian etcd-server"
};

struct Components {
  std::string dir;
  std::vector<ComponentVersion> versions;

  // "<dir>/bin/<name>".
  std::string Binary(std::string_view name) const;
  // The version recorded for `name`, "" when versions.txt has no line for it.
  std::string VersionOf(std::string_view name) const;
};

// Reads an environment variable; std::nullopt when unset.
using EnvironmentReader = std::function<std::optional<std::string>(const std::string& name)>;

// $HANDOFF_COMPONENTS_DIR when set and not empty, else $XDG_CACHE_HOME/handoff/components, else
// $HOME/.cache/handoff/components. FailedPrecondition when none of the three is set.
absl::StatusOr<std::string> ComponentsDir(const EnvironmentReader& get_env);

// Parses versions.txt (`path` for messages). Blank lines and lines starting with '#' are skipped;
// any other line must have three non-empty tab-separated fields (InvalidArgument naming the file
// and the line otherwise). Pure.
absl::StatusOr<std::vector<ComponentVersion>> ParseVersions(std::string_view text,
                                                            const std::string& path);

// Checks that <dir>/bin/<name> is an executable regular file for each of `required`, and reads
// <dir>/versions.txt. FailedPrecondition naming the first missing or non-executable file (or a
// missing versions.txt) and saying to run `bash tests/real/components.sh`; InvalidArgument for a
// malformed versions.txt.
absl::StatusOr<Components> LoadComponents(const std::string& dir,
                                          const std::vector<std::string_view>& required);

// ComponentsDir then LoadComponents.
absl::StatusOr<Components> FindComponents(const EnvironmentReader& get_env,
                                          const std::vector<std::string_view>& required);

// The process environment (getenv), for callers outside tests.
EnvironmentReader ProcessEnvironment();

}  // namespace handoff::sandbox::real

#endif  // HANDOFF_COORDINATOR_SANDBOX_REAL_COMPONENTS_H_
