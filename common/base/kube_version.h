// Kubernetes release numbers as they appear in flags, image tags and settings.
#ifndef HANDOFF_COMMON_BASE_KUBE_VERSION_H_
#define HANDOFF_COMMON_BASE_KUBE_VERSION_H_

#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace handoff {

// A Kubernetes version. `patch` is -1 when the text named only major.minor ("v1.27").
struct KubeVersion {
  int major = 0;
  int minor = 0;
  int patch = -1;

  // "v1.27.3", "1.27.3", "v1.27" (the leading "v" is optional).
  static absl::StatusOr<KubeVersion> Parse(std::string_view text);
  // The version an image tag names: "registry.k8s.io/kube-controller-manager:v1.26.5" → 1.26.5,
  // also with distribution suffixes ("v1.26.5-rke2r1", "v1.26.5-eks-1-26"). Digests are not
  // versions.
  static absl::StatusOr<KubeVersion> FromImage(std::string_view image);

  // Orders by major.minor only: release behaviour (flags, names) changes by minor version.
  bool AtLeast(int want_major, int want_minor) const {
    return major > want_major || (major == want_major && minor >= want_minor);
  }
  // "v1.27.3", or "v1.27" when no patch is known.
  std::string ToString() const;
  bool operator==(const KubeVersion& other) const {
    return major == other.major && minor == other.minor && patch == other.patch;
  }
};

// Splits "repo/name:tag" (or "repo/name@sha256:..." / "repo:5000/name:tag") into repository and
// tag. `tag` is empty when the image has none. A digest reference keeps its "@..." in `repository`.
struct ImageRef {
  std::string repository;
  std::string tag;
  static ImageRef Parse(std::string_view image);
  std::string WithTag(std::string_view new_tag) const;
};

}  // namespace handoff

#endif  // HANDOFF_COMMON_BASE_KUBE_VERSION_H_
