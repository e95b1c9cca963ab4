// After the move every Node must carry an AWS providerID and have lost the "uninitialized" taint,
// or the cloud-controller-manager leaves it tainted and the route and load-balancer controllers
// skip it (cloud-provider-aws issues #604, #724, #746). The checks are pure; listing is not.
#ifndef HANDOFF_COORDINATOR_KUBE_NODES_H_
#define HANDOFF_COORDINATOR_KUBE_NODES_H_

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "common/kube/client.h"
#include "common/kube/resource.h"

namespace handoff::kube {

inline constexpr std::string_view kControlPlaneLabel = "node-role.kubernetes.io/control-plane";
inline constexpr std::string_view kUninitializedTaint =
    "node.cloudprovider.kubernetes.io/uninitialized";

// Why `provider_id` is not of the form aws:///<zone>/<instance-id> (e.g.
// aws:///us-east-1a/i-0123456789abcdef0), or std::nullopt when it is. Pure.
std::optional<std::string> AwsProviderIdProblem(std::string_view provider_id);

struct NodeCheck {
  std::string name;
  std::string provider_id;
  bool control_plane = false;
  std::vector<std::string> problems;  // empty: the node is fine
  bool ok() const { return problems.empty(); }
};

// Checks every Node: providerID present and well-formed, no uninitialized taint, and no two Nodes
// claiming the same instance (a stale Node object left behind). Sorted by name. Pure.
std::vector<NodeCheck> CheckNodes(const std::vector<Json>& nodes);

// All Nodes, or only those labelled node-role.kubernetes.io/control-plane.
absl::StatusOr<std::vector<Json>> ListNodes(KubeClient& client, bool control_plane_only);

}  // namespace handoff::kube

#endif  // HANDOFF_COORDINATOR_KUBE_NODES_H_
