// Lexical helpers on absolute host paths ("/etc/kubernetes/manifests/kube-apiserver.yaml"), for
// the file system implementations and atomic_file.cc. No file system access.
#ifndef HANDOFF_AGENT_FS_HOST_PATH_H_
#define HANDOFF_AGENT_FS_HOST_PATH_H_

#include <string>
#include <string_view>

namespace handoff {

// `path` without trailing slashes ("/" stays "/").
inline std::string TrimTrailingSlashes(std::string_view path) {
  while (path.size() > 1 && path.back() == '/') path.remove_suffix(1);
  return std::string(path);
}

// The directory holding `path`: "/etc/kubernetes" for "/etc/kubernetes/admin.conf", "/" for
// "/etc" and for "/". "" for a relative name without a slash.
inline std::string ParentPath(std::string_view path) {
  const std::string trimmed = TrimTrailingSlashes(path);
  const size_t slash = trimmed.rfind('/');
  if (slash == std::string::npos) return "";
  if (slash == 0) return "/";
  return trimmed.substr(0, slash);
}

// The last component: "admin.conf" for "/etc/kubernetes/admin.conf".
inline std::string BaseName(std::string_view path) {
  const std::string trimmed = TrimTrailingSlashes(path);
  const size_t slash = trimmed.rfind('/');
  return slash == std::string::npos ? trimmed : trimmed.substr(slash + 1);
}

}  // namespace handoff

#endif  // HANDOFF_AGENT_FS_HOST_PATH_H_
