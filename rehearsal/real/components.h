// The real upstream components handoff is tested and rehearsed against, as
// tests/real/components.sh builds them: a directory with bin/<name> executables and versions.txt
// (one "name<TAB>version<TAB>source" line per component). Finding them reads the environment and
// the file system only; nothing is built or downloaded here.
#ifndef HANDOFF_REHEARSAL_REAL_COMPONENTS_H_
#define HANDOFF_REHEARSAL_REAL_COMPONENTS_H_

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
// The kubeadm sandbox's: the node's kubelet and kubeadm (v1.26), crictl (kubeadm runs it), and
// the images archive every node imports.
inline constexpr std::string_view kKubelet = "kubelet";
inline constexpr std::string_view kKubeadm = "kubeadm";
inline constexpr std::string_view kKubeScheduler = "kube-scheduler";
inline constexpr std::string_view kCrictl = "crictl";
inline constexpr std::string_view kImagesArchive = "images/kubeadm-images.tar";
// What a kubeadm sandbox worker imports: the pause image and its workload, an ECR image
// (kWorkloadImage); and the credential provider a moved worker's kubelet runs for it.
inline constexpr std::string_view kWorkerImagesArchive = "images/worker-images.tar";
inline constexpr std::string_view kWorkloadImage =
    "123456789012.dkr.ecr.us-east-1.amazonaws.com/handoff-sandbox/workload:v1";
inline constexpr std::string_view kEcrCredentialProvider = "ecr-credential-provider";
// Version N+1 of the control plane, built into <dir>/kube127/bin/.
inline constexpr std::string_view kNextDir = "kube127";
// Version N+1's kubeadm: `kubeadm upgrade` and `kubeadm join` after the move.
inline constexpr std::string_view kNextKubeadm = "kube127/bin/kubeadm";
// Version N+1's kubelet: a moved worker runs it; an unmoved one's refuses --cloud-provider=aws.
inline constexpr std::string_view kNextKubelet = "kube127/bin/kubelet";

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
  // "<dir>/<relative>": a file the components' build writes besides the binaries.
  std::string File(std::string_view relative) const;
  // The version recorded first for `name`, "" when versions.txt has no line for it.
  std::string VersionOf(std::string_view name) const;
  // Every version recorded for `name`, in versions.txt's order (a component built at N and N+1
  // has two lines).
  std::vector<std::string> VersionsOf(std::string_view name) const;
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

// Checks that <dir>/bin/<name> (or <dir>/<name> for a name with a '/': "kube127/bin/kubelet",
// "images/kubeadm-images.tar") is a regular file, executable unless it is under images/, for each
// of `required`, and reads
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

#endif  // HANDOFF_REHEARSAL_REAL_COMPONENTS_H_
