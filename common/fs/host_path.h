// Lexical helpers on absolute host paths ("/etc/kubernetes/manifests/kube-apiserver.yaml"), for
// the file system implementations and atomic_file.cc. No file system access.
#ifndef HANDOFF_COMMON_FS_HOST_PATH_H_
#define HANDOFF_COMMON_FS_HOST_PATH_H_

#include <string>
#include <string_view>
#include <vector>

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

// `name` under `dir`: "/etc/kubernetes/admin.conf" for "/etc/kubernetes" or "/etc/kubernetes/".
inline std::string JoinPath(std::string_view dir, std::string_view name) {
  std::string joined(dir);
  if (joined.empty() || joined.back() != '/') joined += '/';
  joined.append(name);
  return joined;
}

// The components of `path`, without empty ones: {"etc", "kubernetes"} for "/etc//kubernetes/".
inline std::vector<std::string> PathComponents(std::string_view path) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (start <= path.size()) {
    size_t slash = path.find('/', start);
    if (slash == std::string_view::npos) slash = path.size();
    if (slash > start) parts.emplace_back(path.substr(start, slash - start));
    start = slash + 1;
  }
  return parts;
}

// `path` with empty and "." components dropped and ".." taken lexically, as on a host where
// "/.." is "/": "/etc/kubernetes/manifests" for "/etc/./kubernetes/../kubernetes/manifests/".
// An absolute path stays absolute; a relative one keeps its leading "..".
inline std::string LexicallyNormal(std::string_view path) {
  const bool absolute = !path.empty() && path.front() == '/';
  std::vector<std::string> parts;
  for (std::string& part : PathComponents(path)) {
    if (part == ".") continue;
    if (part == ".." && !parts.empty() && parts.back() != "..") {
      parts.pop_back();
    } else if (part != ".." || !absolute) {
      parts.push_back(std::move(part));
    }
  }
  std::string normal = absolute ? "/" : "";
  for (size_t i = 0; i < parts.size(); ++i) {
    if (i > 0) normal += '/';
    normal += parts[i];
  }
  return normal.empty() ? "." : normal;
}

// Whether `path` is `dir` or lies below it; both lexically normal.
inline bool IsSameOrBelow(std::string_view path, std::string_view dir) {
  if (path == dir || dir == "/") return true;
  return path.size() > dir.size() && path.substr(0, dir.size()) == dir && path[dir.size()] == '/';
}

}  // namespace handoff

#endif  // HANDOFF_COMMON_FS_HOST_PATH_H_
