#include "common/base/kube_version.h"

#include <charconv>
#include <vector>

#include "common/base/strings.h"

namespace handoff {
namespace {

bool ParseInt(std::string_view text, int& out) {
  if (text.empty()) return false;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, out);
  return ec == std::errc() && ptr == end && out >= 0;
}

}  // namespace

absl::StatusOr<KubeVersion> KubeVersion::Parse(std::string_view text) {
  std::string_view rest = text;
  if (!rest.empty() && (rest.front() == 'v' || rest.front() == 'V')) rest.remove_prefix(1);
  // Distribution suffixes ("-rke2r1", "+k3s1", "-eks-...") follow the patch number.
  size_t suffix = rest.find_first_of("-+");
  if (suffix != std::string_view::npos) rest = rest.substr(0, suffix);
  std::vector<std::string_view> parts = StrSplit(rest, ".");
  KubeVersion version;
  bool ok = (parts.size() == 2 || parts.size() == 3) && ParseInt(parts[0], version.major) &&
            ParseInt(parts[1], version.minor);
  if (ok && parts.size() == 3) ok = ParseInt(parts[2], version.patch);
  if (!ok) {
    return absl::InvalidArgumentError(
        StrCat("'", text, "' is not a Kubernetes version; write it as v1.27.3 or v1.27"));
  }
  return version;
}

absl::StatusOr<KubeVersion> KubeVersion::FromImage(std::string_view image) {
  ImageRef ref = ImageRef::Parse(image);
  if (ref.tag.empty()) {
    return absl::InvalidArgumentError(
        StrCat("image '", image, "' has no tag, so its Kubernetes version is unknown"));
  }
  absl::StatusOr<KubeVersion> version = Parse(ref.tag);
  if (!version.ok()) {
    return absl::InvalidArgumentError(StrCat("image '", image, "' has tag '", ref.tag,
                                             "', which does not name a Kubernetes version"));
  }
  return version;
}

std::string KubeVersion::ToString() const {
  if (patch < 0) return StrCat("v", major, ".", minor);
  return StrCat("v", major, ".", minor, ".", patch);
}

ImageRef ImageRef::Parse(std::string_view image) {
  ImageRef ref;
  // A digest ("@sha256:...") pins the image and stays in `repository`; a tag written before it
  // ("name:v1.26.5@sha256:...", as pinned manifests have it) still names the release.
  const size_t at = image.find('@');
  const std::string_view name = image.substr(0, at);
  const std::string_view digest = at == std::string_view::npos ? "" : image.substr(at);
  // The tag separator is the last ':' after the last '/', so "host:5000/name" has no tag.
  size_t slash = name.rfind('/');
  size_t colon = name.rfind(':');
  if (colon != std::string_view::npos && (slash == std::string_view::npos || colon > slash)) {
    ref.repository = StrCat(name.substr(0, colon), digest);
    ref.tag = std::string(name.substr(colon + 1));
  } else {
    ref.repository = std::string(image);
  }
  return ref;
}

std::string ImageRef::WithTag(std::string_view new_tag) const {
  // The runtime pulls by digest when there is one, so keeping it would keep the old image; and
  // "name@sha256:...:tag" is no reference at all.
  const std::string_view name = std::string_view(repository).substr(0, repository.find('@'));
  return StrCat(name, ":", new_tag);
}

}  // namespace handoff
