// RBAC for the migration lease (domain.md §5). Both managers must be allowed to get, list, watch,
// update and create the migration lease; the cloud-controller-manager also its main lease.
//
// The upstream guide's `kubectl patch role ... --type=merge` REPLACES a Role's rules (a JSON merge
// patch replaces lists), dropping the rules the manager needs for its main lock. handoff appends
// rules instead, re-sending every existing rule exactly as the server returned it. kubeadm
// clusters have no cloud-controller-manager leader-locking Role or RoleBinding: they are created.
//
// Planning is pure (current objects in, changes out); applying re-runs the same edits on the
// objects as they are at write time, with resourceVersion preconditions.
#ifndef HANDOFF_COORDINATOR_KUBE_RBAC_H_
#define HANDOFF_COORDINATOR_KUBE_RBAC_H_

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "common/kube/client.h"
#include "coordinator/kube/lease.h"
#include "common/kube/resource.h"

namespace handoff::kube {

// Who a RoleBinding grants to.
struct Subject {
  std::string kind = "User";  // User, Group or ServiceAccount
  std::string name;
  std::string ns;  // ServiceAccount only

  // "User system:kube-controller-manager", "ServiceAccount kube-system/cloud-controller-manager".
  std::string ToString() const;
  // As it appears in RoleBinding.subjects.
  Json ToJson() const;
  // Whether a subjects[] entry names this subject.
  bool Matches(const Json& subject) const;
};

// Parses "namespace/name" into a ServiceAccount subject.
absl::StatusOr<Subject> ServiceAccountSubject(std::string_view namespaced_name);

struct RbacOptions {
  std::string ns = "kube-system";
  std::string migration_lease = std::string(kMigrationLeaseName);
  std::string kcm_role = "system::leader-locking-kube-controller-manager";
  // The cloud-controller-manager's Role and its RoleBinding share this name.
  std::string ccm_role = "system::leader-locking-cloud-controller-manager";
  std::string ccm_main_lease = "cloud-controller-manager";
  // handoff's cloud-controller-manager manifest reuses the kube-controller-manager's kubeconfig,
  // so by default it is this user.
  Subject ccm_subject{"User", "system:kube-controller-manager", ""};
};

// The objects as read; std::nullopt for a missing one.
struct RbacState {
  std::optional<Json> kcm_role;
  std::optional<Json> ccm_role;
  std::optional<Json> ccm_binding;
};

struct RbacChange {
  enum class Action { kCreate, kUpdate };
  Action action = Action::kUpdate;
  const ResourceType* type = nullptr;  // &kRoles or &kRoleBindings
  std::string ns;
  std::string name;
  std::optional<Json> before;  // std::nullopt for a create
  Json after;
  std::vector<std::string> reasons;  // what changes and why, one line each

  ObjectRef ref() const { return ObjectRef{type, ns, name}; }
  // "create Role kube-system/x", "update RoleBinding kube-system/y".
  std::string Headline() const;
  // The unified diff of the object as YAML (metadata.managedFields left out).
  std::string Diff() const;
};

struct RbacPlan {
  std::vector<RbacChange> changes;
  // Reasons handoff will not apply the plan (the kube-controller-manager's Role is missing, the
  // RoleBinding points at another role); each says what to do.
  std::vector<std::string> problems;
  bool empty() const { return changes.empty(); }
};

// Whether `role` allows `verb` on `resource` in `group` for the object `name` ("" for a request
// without a name, such as create or an unfiltered list), as the RBAC authorizer decides: a rule
// matches when its apiGroups, resources and verbs hold the value or "*", and its resourceNames are
// empty or (for a named request) hold the name. Pure.
bool RoleAllows(const Json& role, std::string_view verb, std::string_view group,
                std::string_view resource, std::string_view name);

// Appends to `role`'s rules what it lacks so that it allows create, get, list, update and watch on
// each lease in `lease_names` (one rule naming the leases that lack any verb) and create on leases
// without a name. Existing rules are not touched. Returns one line per appended rule; empty when
// nothing was missing. Pure.
std::vector<std::string> EnsureLeaseRules(Json& role, const std::vector<std::string>& lease_names);

// Appends `subject` to `binding`'s subjects unless one matches. Returns the line for it, or "".
std::string EnsureSubject(Json& binding, const Subject& subject);

// The cloud-controller-manager's Role and RoleBinding as handoff creates them.
Json NewCcmRole(const RbacOptions& options);
Json NewCcmRoleBinding(const RbacOptions& options);

// What would make the cluster's RBAC right. Pure.
RbacPlan PlanRbac(const RbacState& state, const RbacOptions& options);

// Reads the three objects (missing ones are std::nullopt).
absl::StatusOr<RbacState> ReadRbac(KubeClient& client, const RbacOptions& options);

struct RbacApplyResult {
  std::vector<RbacChange> applied;  // what was written (empty: nothing to do)
  int conflicts = 0;                // 409s met and retried
};

// Reads, plans, and writes the plan: updates by read-modify-write with resourceVersion (the edit
// re-applied to the fresh object after a conflict), creates falling back to an update when
// someone created the object meanwhile. FailedPrecondition, writing nothing, when the plan has
// problems. Idempotent: a second run writes nothing.
absl::StatusOr<RbacApplyResult> ApplyRbac(KubeClient& client, const RbacOptions& options);

}  // namespace handoff::kube

#endif  // HANDOFF_COORDINATOR_KUBE_RBAC_H_
