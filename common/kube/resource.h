// The Kubernetes resources handoff reads and writes, their REST paths, and the JSON type objects
// travel in. Objects stay nlohmann::ordered_json so that whatever handoff does not change is sent
// back exactly as it was read, keys in the server's order.
#ifndef HANDOFF_COMMON_KUBE_RESOURCE_H_
#define HANDOFF_COMMON_KUBE_RESOURCE_H_

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "nlohmann/json.hpp"

namespace handoff::kube {

using Json = nlohmann::ordered_json;

// One REST resource: where it lives and what it is called.
struct ResourceType {
  std::string_view group;    // "" for the core group
  std::string_view version;  // "v1"
  std::string_view plural;   // "leases"
  std::string_view kind;     // "Lease"
  bool namespaced = true;

  // "leases.coordination.k8s.io", or "pods" for the core group: how the API server names the
  // resource in its messages.
  std::string QualifiedName() const;
  // "coordination.k8s.io/v1", or "v1".
  std::string ApiVersion() const;
};

inline constexpr ResourceType kLeases{"coordination.k8s.io", "v1", "leases", "Lease", true};
inline constexpr ResourceType kRoles{"rbac.authorization.k8s.io", "v1", "roles", "Role", true};
inline constexpr ResourceType kRoleBindings{"rbac.authorization.k8s.io", "v1", "rolebindings",
                                            "RoleBinding", true};
inline constexpr ResourceType kNodes{"", "v1", "nodes", "Node", false};
inline constexpr ResourceType kPods{"", "v1", "pods", "Pod", true};
inline constexpr ResourceType kServiceAccounts{"", "v1", "serviceaccounts", "ServiceAccount", true};
inline constexpr ResourceType kConfigMaps{"", "v1", "configmaps", "ConfigMap", true};
inline constexpr ResourceType kDaemonSets{"apps", "v1", "daemonsets", "DaemonSet", true};
inline constexpr ResourceType kClusterRoles{"rbac.authorization.k8s.io", "v1", "clusterroles",
                                            "ClusterRole", false};
inline constexpr ResourceType kClusterRoleBindings{
    "rbac.authorization.k8s.io", "v1", "clusterrolebindings", "ClusterRoleBinding", false};
inline constexpr ResourceType kPersistentVolumes{"", "v1", "persistentvolumes", "PersistentVolume",
                                                 false};
inline constexpr ResourceType kStorageClasses{"storage.k8s.io", "v1", "storageclasses",
                                              "StorageClass", false};
inline constexpr ResourceType kCsiDrivers{"storage.k8s.io", "v1", "csidrivers", "CSIDriver", false};
// Created only, never stored: the API server answers whether a user may do something.
inline constexpr ResourceType kSubjectAccessReviews{
    "authorization.k8s.io", "v1", "subjectaccessreviews", "SubjectAccessReview", false};

// Every type above.
const std::vector<const ResourceType*>& KnownResourceTypes();
// The known type of an object's apiVersion and kind ("rbac.authorization.k8s.io/v1", "Role").
const ResourceType* FindResourceTypeByKind(std::string_view api_version, std::string_view kind);
// The known type served at /api[s]/<group>/<version>/.../<plural>.
const ResourceType* FindResourceTypeByPath(std::string_view group, std::string_view version,
                                           std::string_view plural);

// One object: its type, namespace ("" for cluster-scoped types) and name.
struct ObjectRef {
  const ResourceType* type = nullptr;
  std::string ns;
  std::string name;

  // "Role kube-system/system::leader-locking-kube-controller-manager", "Node ip-10-0-1-5".
  std::string ToString() const;
};

// "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases": the collection (namespace "" for
// a cluster-scoped type, or all namespaces).
std::string CollectionPath(const ResourceType& type, std::string_view ns);
// The collection path plus "/<name>". Names are escaped for the URL path ("system::x" stays).
std::string ObjectPath(const ObjectRef& ref);

// Percent-encodes everything but RFC 3986 unreserved characters and ':' / '@' (allowed in a path
// segment), so a name like "system::leader-locking-x" stays readable.
std::string EscapePathSegment(std::string_view segment);
// For query values (label selectors): also escapes '/', '=', ',' and '!'.
std::string EscapeQueryValue(std::string_view value);
// The inverse of both; std::nullopt on a malformed escape.
std::optional<std::string> Unescape(std::string_view text);

// metadata.name / metadata.namespace / metadata.resourceVersion, "" when absent or not a string.
std::string ObjectName(const Json& object);
std::string ObjectNamespace(const Json& object);
std::string ResourceVersion(const Json& object);

// A string field at a JSON pointer-like path of keys, "" when absent or not a string.
std::string StringAt(const Json& object, std::initializer_list<std::string_view> keys);

}  // namespace handoff::kube

#endif  // HANDOFF_COMMON_KUBE_RESOURCE_H_
