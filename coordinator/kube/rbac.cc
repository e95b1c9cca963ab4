#include "coordinator/kube/rbac.h"

#include <algorithm>

#include "common/base/strings.h"
#include "common/base/unified_diff.h"
#include "common/kube/json_yaml.h"

namespace handoff::kube {
namespace {

constexpr std::string_view kCoordinationGroup = "coordination.k8s.io";
constexpr std::string_view kRbacGroup = "rbac.authorization.k8s.io";
constexpr std::string_view kManagedByLabel = "app.kubernetes.io/managed-by";

// What client-go's leader election does with its lease (get, create, update), what a manager's
// informers and `kubectl get` need (list, watch), in the order RBAC documents list them.
const std::vector<std::string> kLeaseVerbs = {"create", "get", "list", "update", "watch"};

bool ListHolds(const Json& rule, const char* field, std::string_view value) {
  if (!rule.contains(field) || !rule[field].is_array()) return false;
  for (const Json& item : rule[field]) {
    if (item.is_string() && (item.get<std::string>() == value || item.get<std::string>() == "*")) {
      return true;
    }
  }
  return false;
}

bool RuleAllows(const Json& rule, std::string_view verb, std::string_view group,
                std::string_view resource, std::string_view name) {
  if (!rule.is_object()) return false;
  if (!ListHolds(rule, "apiGroups", group) || !ListHolds(rule, "resources", resource) ||
      !ListHolds(rule, "verbs", verb)) {
    return false;
  }
  const bool restricted = rule.contains("resourceNames") && rule["resourceNames"].is_array() &&
                          !rule["resourceNames"].empty();
  if (!restricted) return true;
  if (name.empty()) return false;  // a rule naming objects never allows a request without a name
  for (const Json& item : rule["resourceNames"]) {
    if (item.is_string() && item.get<std::string>() == name) return true;
  }
  return false;
}

// A rule in the field order the API server writes (rbac/v1 PolicyRule).
Json Rule(const std::vector<std::string>& verbs, const std::vector<std::string>& names) {
  Json rule = Json::object();
  rule["verbs"] = verbs;
  rule["apiGroups"] = Json::array({std::string(kCoordinationGroup)});
  rule["resources"] = Json::array({"leases"});
  if (!names.empty()) rule["resourceNames"] = names;
  return rule;
}

Json Metadata(const std::string& name, const std::string& ns) {
  Json metadata = Json::object();
  metadata["name"] = name;
  metadata["namespace"] = ns;
  metadata["labels"] = Json::object({{std::string(kManagedByLabel), "handoff"}});
  return metadata;
}

// The roleRef problem of an existing binding, "" when it points at `role`.
std::string RoleRefProblem(const Json& binding, const RbacOptions& options) {
  const std::string kind = StringAt(binding, {"roleRef", "kind"});
  const std::string name = StringAt(binding, {"roleRef", "name"});
  if (kind == "Role" && name == options.ccm_role) return "";
  return StrCat("RoleBinding ", options.ns, "/", options.ccm_role, " binds ", kind, " ", name,
                ", not Role ", options.ccm_role,
                "; a RoleBinding's roleRef cannot be changed: delete it (kubectl -n ", options.ns,
                " delete rolebinding ", options.ccm_role, ") and run handoffctl rbac apply again");
}

Json WithoutManagedFields(const Json& object) {
  Json copy = object;
  if (copy.contains("metadata") && copy["metadata"].is_object()) {
    copy["metadata"].erase("managedFields");
  }
  return copy;
}

}  // namespace

std::string Subject::ToString() const {
  return kind == "ServiceAccount" ? StrCat(kind, " ", ns, "/", name) : StrCat(kind, " ", name);
}

Json Subject::ToJson() const {
  Json subject = Json::object();
  subject["kind"] = kind;
  if (kind == "ServiceAccount") {
    subject["name"] = name;
    subject["namespace"] = ns;
  } else {
    subject["apiGroup"] = std::string(kRbacGroup);
    subject["name"] = name;
  }
  return subject;
}

bool Subject::Matches(const Json& subject) const {
  if (StringAt(subject, {"kind"}) != kind || StringAt(subject, {"name"}) != name) return false;
  return kind != "ServiceAccount" || StringAt(subject, {"namespace"}) == ns;
}

absl::StatusOr<Subject> ServiceAccountSubject(std::string_view namespaced_name) {
  const std::vector<std::string_view> parts = StrSplit(namespaced_name, "/");
  if (parts.size() != 2 || parts[0].empty() || parts[1].empty()) {
    return absl::InvalidArgumentError(
        StrCat("service account \"", namespaced_name,
               "\" must be NAMESPACE/NAME, e.g. kube-system/cloud-controller-manager"));
  }
  return Subject{"ServiceAccount", std::string(parts[1]), std::string(parts[0])};
}

std::string RbacChange::Headline() const {
  return StrCat(action == Action::kCreate ? "create " : "update ",
                ObjectRef{type, ns, name}.ToString());
}

std::string RbacChange::Diff() const {
  const std::string path = StrCat(ns, "/", type->plural, "/", name, ".yaml");
  std::optional<std::string> old_text;
  if (before) old_text = JsonToYaml(WithoutManagedFields(*before));
  return UnifiedDiff(path, old_text, JsonToYaml(WithoutManagedFields(after)));
}

bool RoleAllows(const Json& role, std::string_view verb, std::string_view group,
                std::string_view resource, std::string_view name) {
  if (!role.contains("rules") || !role["rules"].is_array()) return false;
  for (const Json& rule : role["rules"]) {
    if (RuleAllows(rule, verb, group, resource, name)) return true;
  }
  return false;
}

std::vector<std::string> EnsureLeaseRules(Json& role, const std::vector<std::string>& lease_names) {
  std::vector<std::string> reasons;
  std::vector<std::string> lacking;
  for (const std::string& lease : lease_names) {
    for (const std::string& verb : kLeaseVerbs) {
      if (!RoleAllows(role, verb, kCoordinationGroup, "leases", lease)) {
        lacking.push_back(lease);
        break;
      }
    }
  }
  if (!role.contains("rules") || !role["rules"].is_array()) role["rules"] = Json::array();
  if (!lacking.empty()) {
    // Appended, never merged into an existing rule: the existing rules go back byte for byte.
    role["rules"].push_back(Rule(kLeaseVerbs, lacking));
    reasons.push_back(StrCat("append a rule allowing ", StrJoin(kLeaseVerbs, ", "), " on lease",
                             lacking.size() > 1 ? "s " : " ", StrJoin(lacking, ", ")));
  }
  // A create request carries no object name (the name is in the body), so RBAC never matches it
  // against a rule with resourceNames: the rule above cannot grant create, and the manager that
  // creates the migration lease first needs create on leases without a name. The kube-controller-
  // manager's user gets it from the ClusterRole system:kube-controller-manager, but not every
  // subject bound to its leader-locking Role does (its service account), and the cloud-controller-
  // manager's identity may have none.
  if (!RoleAllows(role, "create", kCoordinationGroup, "leases", "")) {
    role["rules"].push_back(Rule({"create"}, {}));
    reasons.emplace_back(
        "append a rule allowing create on leases: a create request has no name, so a rule with "
        "resourceNames never allows it");
  }
  return reasons;
}

std::string EnsureSubject(Json& binding, const Subject& subject) {
  if (!binding.contains("subjects") || !binding["subjects"].is_array()) {
    binding["subjects"] = Json::array();
  }
  for (const Json& existing : binding["subjects"]) {
    if (subject.Matches(existing)) return "";
  }
  binding["subjects"].push_back(subject.ToJson());
  return StrCat("bind ", subject.ToString());
}

Json NewCcmRole(const RbacOptions& options) {
  Json role = Json::object();
  role["apiVersion"] = kRoles.ApiVersion();
  role["kind"] = std::string(kRoles.kind);
  role["metadata"] = Metadata(options.ccm_role, options.ns);
  role["rules"] = Json::array();
  EnsureLeaseRules(role, {options.ccm_main_lease, options.migration_lease});
  return role;
}

Json NewCcmRoleBinding(const RbacOptions& options) {
  Json binding = Json::object();
  binding["apiVersion"] = kRoleBindings.ApiVersion();
  binding["kind"] = std::string(kRoleBindings.kind);
  binding["metadata"] = Metadata(options.ccm_role, options.ns);
  binding["roleRef"] = Json::object(
      {{"apiGroup", std::string(kRbacGroup)}, {"kind", "Role"}, {"name", options.ccm_role}});
  binding["subjects"] = Json::array({options.ccm_subject.ToJson()});
  return binding;
}

RbacPlan PlanRbac(const RbacState& state, const RbacOptions& options) {
  RbacPlan plan;
  if (!state.kcm_role) {
    plan.problems.push_back(
        StrCat("Role ", options.ns, "/", options.kcm_role,
               " does not exist; the API server creates it at startup from its RBAC bootstrap "
               "policy, so check that kube-apiserver runs with --authorization-mode including "
               "RBAC (or pass --kcm-role with the Role your kube-controller-manager uses)"));
  } else {
    Json after = *state.kcm_role;
    std::vector<std::string> reasons = EnsureLeaseRules(after, {options.migration_lease});
    if (!reasons.empty()) {
      plan.changes.push_back(RbacChange{RbacChange::Action::kUpdate, &kRoles, options.ns,
                                        options.kcm_role, state.kcm_role, after, reasons});
    }
  }

  const std::vector<std::string> ccm_leases = {options.ccm_main_lease, options.migration_lease};
  if (!state.ccm_role) {
    RbacChange change{
        RbacChange::Action::kCreate, &kRoles, options.ns, options.ccm_role, std::nullopt,
        NewCcmRole(options),         {}};
    change.reasons.push_back(
        StrCat("kubeadm clusters have no cloud-controller-manager leader-locking Role; allow ",
               StrJoin(kLeaseVerbs, ", "), " on leases ", StrJoin(ccm_leases, ", "),
               ", and create on leases"));
    plan.changes.push_back(std::move(change));
  } else {
    Json after = *state.ccm_role;
    std::vector<std::string> reasons = EnsureLeaseRules(after, ccm_leases);
    if (!reasons.empty()) {
      plan.changes.push_back(RbacChange{RbacChange::Action::kUpdate, &kRoles, options.ns,
                                        options.ccm_role, state.ccm_role, after, reasons});
    }
  }

  if (!state.ccm_binding) {
    RbacChange change{RbacChange::Action::kCreate,
                      &kRoleBindings,
                      options.ns,
                      options.ccm_role,
                      std::nullopt,
                      NewCcmRoleBinding(options),
                      {}};
    change.reasons.push_back(StrCat("bind Role ", options.ccm_role, " to ",
                                    options.ccm_subject.ToString(),
                                    ", the cloud-controller-manager's identity"));
    plan.changes.push_back(std::move(change));
  } else if (std::string problem = RoleRefProblem(*state.ccm_binding, options); !problem.empty()) {
    plan.problems.push_back(problem);
  } else {
    Json after = *state.ccm_binding;
    std::string reason = EnsureSubject(after, options.ccm_subject);
    if (!reason.empty()) {
      plan.changes.push_back(RbacChange{RbacChange::Action::kUpdate,
                                        &kRoleBindings,
                                        options.ns,
                                        options.ccm_role,
                                        state.ccm_binding,
                                        after,
                                        {reason}});
    }
  }
  return plan;
}

absl::StatusOr<RbacState> ReadRbac(KubeClient& client, const RbacOptions& options) {
  RbacState state;
  auto read = [&client, &options](const ResourceType& type,
                                  const std::string& name) -> absl::StatusOr<std::optional<Json>> {
    absl::StatusOr<Json> object = client.Get(ObjectRef{&type, options.ns, name});
    if (object.ok()) return std::optional<Json>(*std::move(object));
    if (object.status().code() == absl::StatusCode::kNotFound) return std::optional<Json>();
    return object.status();
  };
  absl::StatusOr<std::optional<Json>> object = read(kRoles, options.kcm_role);
  if (!object.ok()) return object.status();
  state.kcm_role = *std::move(object);
  object = read(kRoles, options.ccm_role);
  if (!object.ok()) return object.status();
  state.ccm_role = *std::move(object);
  object = read(kRoleBindings, options.ccm_role);
  if (!object.ok()) return object.status();
  state.ccm_binding = *std::move(object);
  return state;
}

absl::StatusOr<RbacApplyResult> ApplyRbac(KubeClient& client, const RbacOptions& options) {
  absl::StatusOr<RbacState> state = ReadRbac(client, options);
  if (!state.ok()) return state.status();
  RbacPlan plan = PlanRbac(*state, options);
  if (!plan.problems.empty()) {
    return absl::FailedPreconditionError(StrJoin(plan.problems, "\n"));
  }
  RbacApplyResult result;
  for (RbacChange& change : plan.changes) {
    const ObjectRef ref = change.ref();
    // The edit, as applied to the object on the server at write time.
    Mutation edit;
    if (change.type == &kRoles) {
      std::vector<std::string> leases = {options.migration_lease};
      if (change.name == options.ccm_role)
        leases = {options.ccm_main_lease, options.migration_lease};
      edit = [leases](Json& role) -> absl::StatusOr<bool> {
        return !EnsureLeaseRules(role, leases).empty();
      };
    } else {
      edit = [&options](Json& binding) -> absl::StatusOr<bool> {
        if (std::string problem = RoleRefProblem(binding, options); !problem.empty()) {
          return absl::FailedPreconditionError(problem);
        }
        return !EnsureSubject(binding, options.ccm_subject).empty();
      };
    }
    if (change.action == RbacChange::Action::kCreate) {
      absl::StatusOr<Json> created = client.Create(*change.type, change.ns, change.after);
      if (created.ok()) {
        change.after = *std::move(created);
        result.applied.push_back(change);
        continue;
      }
      if (created.status().code() != absl::StatusCode::kAlreadyExists) return created.status();
      // Created by someone else since it was read: make sure it allows what it must.
    }
    absl::StatusOr<MutateResult> mutated = client.Mutate(ref, edit);
    if (!mutated.ok()) return mutated.status();
    result.conflicts += mutated->conflicts;
    if (mutated->changed) {
      change.after = mutated->object;
      result.applied.push_back(change);
    }
  }
  return result;
}

}  // namespace handoff::kube
