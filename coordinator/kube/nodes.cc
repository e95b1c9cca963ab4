#include "coordinator/kube/nodes.h"

#include <algorithm>
#include <map>
#include <regex>

#include "common/base/strings.h"

namespace handoff::kube {
namespace {

constexpr std::string_view kExample = "aws:///us-east-1a/i-0123456789abcdef0";

}  // namespace

std::optional<std::string> AwsProviderIdProblem(std::string_view provider_id) {
  // A zone: "us-east-1a", "us-gov-west-1b", "us-west-2-lax-1a", "us-east-1-wl1-bos-wlz-1".
  static const std::regex kZone("[a-z]{2}(-[a-z0-9]+)+");
  // EC2 ids are "i-" and 8 or 17 hex digits; Fargate nodes carry "fargate-<name>"
  // (cloud-provider-aws IsFargateNode).
  static const std::regex kInstance("i-([0-9a-f]{8}|[0-9a-f]{17})|fargate-[a-z0-9.-]+");
  const std::string expected = StrCat("; expected aws:///<zone>/<instance-id>, e.g. ", kExample);
  if (provider_id.empty()) return std::string("spec.providerID is empty");
  constexpr std::string_view kPrefix = "aws:///";
  if (!StartsWith(provider_id, kPrefix)) {
    return StrCat("spec.providerID \"", provider_id, "\" does not start with aws:///", expected);
  }
  const std::vector<std::string_view> parts = StrSplit(provider_id.substr(kPrefix.size()), "/");
  if (parts.size() != 2) {
    return StrCat("spec.providerID \"", provider_id, "\" is malformed: ",
                  parts.size() == 1 ? "no availability zone" : "too many path segments", expected);
  }
  if (!std::regex_match(parts[0].begin(), parts[0].end(), kZone)) {
    return StrCat("spec.providerID \"", provider_id, "\" is malformed: \"", parts[0],
                  "\" is not an availability zone", expected);
  }
  if (!std::regex_match(parts[1].begin(), parts[1].end(), kInstance)) {
    return StrCat("spec.providerID \"", provider_id, "\" is malformed: \"", parts[1],
                  "\" is not an EC2 instance id (i- and 8 or 17 hex digits)", expected);
  }
  return std::nullopt;
}

std::vector<NodeCheck> CheckNodes(const std::vector<Json>& nodes) {
  std::vector<NodeCheck> checks;
  std::map<std::string, std::vector<std::string>> by_instance;
  for (const Json& node : nodes) {
    NodeCheck check;
    check.name = ObjectName(node);
    check.provider_id = StringAt(node, {"spec", "providerID"});
    const Json* labels = nullptr;
    if (node.contains("metadata") && node["metadata"].contains("labels") &&
        node["metadata"]["labels"].is_object()) {
      labels = &node["metadata"]["labels"];
    }
    check.control_plane = labels != nullptr && labels->contains(std::string(kControlPlaneLabel));
    if (std::optional<std::string> problem = AwsProviderIdProblem(check.provider_id)) {
      check.problems.push_back(*problem);
    } else {
      by_instance[check.provider_id].push_back(check.name);
    }
    if (node.contains("spec") && node["spec"].contains("taints") &&
        node["spec"]["taints"].is_array()) {
      for (const Json& taint : node["spec"]["taints"]) {
        if (StringAt(taint, {"key"}) == kUninitializedTaint) {
          check.problems.push_back(
              StrCat("has the ", kUninitializedTaint,
                     " taint: no cloud-controller-manager has initialised it yet (is one running "
                     "and holding the migration lease, and can it find the instance?)"));
          break;
        }
      }
    }
    checks.push_back(std::move(check));
  }
  for (NodeCheck& check : checks) {
    auto same = by_instance.find(check.provider_id);
    if (same == by_instance.end() || same->second.size() < 2) continue;
    std::vector<std::string> others;
    for (const std::string& name : same->second) {
      if (name != check.name) others.push_back(name);
    }
    check.problems.push_back(StrCat("has the same providerID as ", StrJoin(others, ", "),
                                    ": one of them is a stale Node object for an instance that "
                                    "was replaced; delete the stale one"));
  }
  std::sort(checks.begin(), checks.end(),
            [](const NodeCheck& a, const NodeCheck& b) { return a.name < b.name; });
  return checks;
}

absl::StatusOr<std::vector<Json>> ListNodes(KubeClient& client, bool control_plane_only) {
  return client.List(kNodes, "", control_plane_only ? kControlPlaneLabel : std::string_view());
}

}  // namespace handoff::kube
