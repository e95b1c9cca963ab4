#include "rehearsal/kubelet/pod_binaries.h"

#include "common/base/kube_version.h"
#include "common/base/strings.h"
#include "common/fs/host_path.h"

namespace handoff::sandbox {
namespace {

// The repository's path without its registry: "registry.k8s.io/provider-aws/x" →
// "provider-aws/x".
// A first element with a dot or a port is a registry (the Docker reference grammar's rule).
std::string RepositoryPath(std::string_view repository) {
  const size_t slash = repository.find('/');
  if (slash == std::string_view::npos) return std::string(repository);
  const std::string_view first = repository.substr(0, slash);
  if (StrContains(first, ".") || StrContains(first, ":") || first == "localhost") {
    return std::string(repository.substr(slash + 1));
  }
  return std::string(repository);
}

}  // namespace

PodBinary PodBinaryFor(std::string_view image, std::string_view standin,
                       std::string_view real_bin_dir) {
  PodBinary standin_binary{std::string(standin), false, ""};
  if (real_bin_dir.empty()) return standin_binary;
  const ImageRef ref = ImageRef::Parse(image);
  absl::StatusOr<KubeVersion> version = KubeVersion::FromImage(image);
  if (!version.ok() || version->major != 1) return standin_binary;
  const std::string path = RepositoryPath(ref.repository);
  const std::string dir = TrimTrailingSlashes(real_bin_dir);
  if (BaseName(path) == "kube-controller-manager") {
    if (version->minor == 26) return {StrCat(dir, "/kube-controller-manager"), true, ""};
    if (version->minor == 27) {
      return {StrCat(dir, "/kube-controller-manager"), true,
              StrCat("image ", image,
                     " runs ", dir,
                     "/kube-controller-manager (1.26): no 1.27 kube-controller-manager is built")};
    }
    return standin_binary;
  }
  if ((path == "provider-aws/cloud-controller-manager" ||
       EndsWith(path, "/provider-aws/cloud-controller-manager")) &&
      version->minor == 27) {
    return {StrCat(dir, "/aws-cloud-controller-manager"), true, ""};
  }
  return standin_binary;
}

}  // namespace handoff::sandbox
