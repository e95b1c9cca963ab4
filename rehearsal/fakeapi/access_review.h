// SubjectAccessReview as kube-apiserver answers it with the RBAC authorizer
// (k8s.io/kubernetes plugin/pkg/auth/authorizer/rbac): may this user, with these groups, do this
// verb on this resource? The rules visited are those of every ClusterRoleBinding's ClusterRole
// and, for a namespaced request, of every RoleBinding in the namespace (its Role, or the
// ClusterRole it names), whose subjects name the user, one of its groups, or (for
// "system:serviceaccount:<ns>:<name>") the ServiceAccount. A member of system:masters may do
// anything, as kube-apiserver's privileged-group authorizer answers before RBAC.
// Not modelled: non-resource requests, aggregated ClusterRoles, other authorizers (Node, webhook).
#ifndef HANDOFF_REHEARSAL_FAKEAPI_ACCESS_REVIEW_H_
#define HANDOFF_REHEARSAL_FAKEAPI_ACCESS_REVIEW_H_

#include <functional>
#include <vector>

#include "common/kube/resource.h"

namespace handoff::fakeapi {

// The stored objects of a type (Roles, RoleBindings, ClusterRoles, ClusterRoleBindings).
using ListObjects = std::function<std::vector<kube::Json>(const kube::ResourceType&)>;

// The review as the server returns it: `review` with status.allowed and, when allowed, the
// authorizer's reason ("RBAC: allowed by RoleBinding \"b/ns\" of Role \"r\" to User \"u\"").
// `review` is a SubjectAccessReview with spec.user (or spec.groups) and spec.resourceAttributes.
kube::Json ReviewAccess(const kube::Json& review, const ListObjects& list);

}  // namespace handoff::fakeapi

#endif  // HANDOFF_REHEARSAL_FAKEAPI_ACCESS_REVIEW_H_
