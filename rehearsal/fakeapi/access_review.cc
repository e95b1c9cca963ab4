#include "rehearsal/fakeapi/access_review.h"

#include <optional>
#include <string>
#include <string_view>

#include "common/base/strings.h"
#include "coordinator/kube/rbac.h"

namespace handoff::fakeapi {
namespace {

using kube::Json;
using kube::StringAt;

struct Requester {
  std::string user;
  std::vector<std::string> groups;
};

// Whether one of a binding's subjects is the requester (rbac.appliesTo).
std::optional<std::string> MatchingSubject(const Json& binding, const Requester& who) {
  if (!binding.contains("subjects") || !binding["subjects"].is_array()) return std::nullopt;
  for (const Json& subject : binding["subjects"]) {
    const std::string kind = StringAt(subject, {"kind"});
    const std::string name = StringAt(subject, {"name"});
    if (kind == "User" && name == who.user) return StrCat("User \"", name, "\"");
    if (kind == "Group") {
      for (const std::string& group : who.groups) {
        if (group == name) return StrCat("Group \"", name, "\"");
      }
    }
    if (kind == "ServiceAccount" &&
        who.user == StrCat("system:serviceaccount:", StringAt(subject, {"namespace"}), ":", name)) {
      return StrCat("ServiceAccount \"", name, "/", StringAt(subject, {"namespace"}), "\"");
    }
  }
  return std::nullopt;
}

const Json* FindObject(const std::vector<Json>& objects, std::string_view ns,
                       std::string_view name) {
  for (const Json& object : objects) {
    if (kube::ObjectName(object) == name && kube::ObjectNamespace(object) == ns) return &object;
  }
  return nullptr;
}

}  // namespace

Json ReviewAccess(const Json& review, const ListObjects& list) {
  Json answer = review;
  answer["kind"] = "SubjectAccessReview";
  answer["apiVersion"] = "authorization.k8s.io/v1";
  if (!answer.contains("metadata") || !answer["metadata"].is_object()) {
    answer["metadata"] = Json::object();
  }
  answer["metadata"]["creationTimestamp"] = nullptr;
  const Json spec = review.value("spec", Json::object());
  Requester who{StringAt(spec, {"user"}), {}};
  if (spec.contains("groups") && spec["groups"].is_array()) {
    for (const Json& group : spec["groups"]) {
      if (group.is_string()) who.groups.push_back(group.get<std::string>());
    }
  }
  const Json attributes = spec.value("resourceAttributes", Json::object());
  const std::string ns = StringAt(attributes, {"namespace"});
  const std::string verb = StringAt(attributes, {"verb"});
  const std::string group = StringAt(attributes, {"group"});
  const std::string resource = StringAt(attributes, {"resource"});
  const std::string name = StringAt(attributes, {"name"});

  Json status = Json::object();
  status["allowed"] = false;
  auto allow = [&](std::string reason) {
    status["allowed"] = true;
    status["reason"] = std::move(reason);
  };
  for (const std::string& g : who.groups) {
    if (g == "system:masters") allow("");
  }
  const std::vector<Json> cluster_roles = list(kube::kClusterRoles);
  if (!status["allowed"].get<bool>()) {
    for (const Json& binding : list(kube::kClusterRoleBindings)) {
      const std::optional<std::string> subject = MatchingSubject(binding, who);
      if (!subject || StringAt(binding, {"roleRef", "kind"}) != "ClusterRole") continue;
      const std::string role_name = StringAt(binding, {"roleRef", "name"});
      const Json* role = FindObject(cluster_roles, "", role_name);
      if (role != nullptr && kube::RoleAllows(*role, verb, group, resource, name)) {
        allow(StrCat("RBAC: allowed by ClusterRoleBinding \"", kube::ObjectName(binding),
                     "\" of ClusterRole \"", role_name, "\" to ", *subject));
        break;
      }
    }
  }
  if (!status["allowed"].get<bool>() && !ns.empty()) {
    const std::vector<Json> roles = list(kube::kRoles);
    for (const Json& binding : list(kube::kRoleBindings)) {
      if (kube::ObjectNamespace(binding) != ns) continue;
      const std::optional<std::string> subject = MatchingSubject(binding, who);
      if (!subject) continue;
      const std::string kind = StringAt(binding, {"roleRef", "kind"});
      const std::string role_name = StringAt(binding, {"roleRef", "name"});
      const Json* role = kind == "Role"          ? FindObject(roles, ns, role_name)
                         : kind == "ClusterRole" ? FindObject(cluster_roles, "", role_name)
                                                 : nullptr;
      if (role != nullptr && kube::RoleAllows(*role, verb, group, resource, name)) {
        allow(StrCat("RBAC: allowed by RoleBinding \"", kube::ObjectName(binding), "/", ns,
                     "\" of ", kind, " \"", role_name, "\" to ", *subject));
        break;
      }
    }
  }
  answer["status"] = std::move(status);
  return answer;
}

}  // namespace handoff::fakeapi
