// Cordoning the control-plane nodes of a Rancher cluster before the aws-cloud-controller-manager
// chart goes in (so its pods start only on nodes already moved to the external provider), and
// uncordoning afterwards. handoff records on each Node that it was the one to cordon it, so that
// uncordon never releases a node an operator (or a drain) cordoned for a reason of its own. The
// decisions are pure and work on Node objects; CordonControlPlane and UncordonControlPlane write
// each Node with a PUT carrying the resourceVersion read, re-read and retried on a conflict
// (KubeClient::Mutate).
#ifndef HANDOFF_COORDINATOR_KUBE_CORDON_H_
#define HANDOFF_COORDINATOR_KUBE_CORDON_H_

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "common/kube/client.h"
#include "common/kube/resource.h"

namespace handoff::kube {

// Which Rancher distribution provisioned the cluster: it decides the control-plane label.
enum class RancherDistribution { kRke2, kRke };

// "rke2" or "rke"; InvalidArgument naming --distribution otherwise.
absl::StatusOr<RancherDistribution> ParseRancherDistribution(std::string_view text);
std::string_view RancherDistributionName(RancherDistribution distribution);
// The selector the Rancher guide cordons with: node-role.kubernetes.io/control-plane=true (RKE2)
// or node-role.kubernetes.io/controlplane=true (RKE).
std::string_view ControlPlaneSelector(RancherDistribution distribution);

// The annotation handoff leaves on a Node it cordoned, and its value.
inline constexpr std::string_view kCordonedByAnnotation = "handoff.io/cordoned-by";
inline constexpr std::string_view kCordonedByHandoff = "handoffctl";

// spec.unschedulable is true. Pure.
bool IsCordoned(const Json& node);
// The Node carries handoff's cordon record. Pure.
bool CordonedByHandoff(const Json& node);

// Cordons a schedulable Node and records that handoff did; returns whether it changed anything
// (false for a Node already cordoned, by anyone). Pure.
bool CordonAndRecord(Json& node);
// For a Node carrying handoff's record: removes spec.unschedulable and the record (and an
// annotations map left empty), so the Node is as it was before CordonAndRecord. Returns whether
// it changed anything (false for a Node without the record). Pure.
bool UncordonRecorded(Json& node);

struct CordonReport {
  std::vector<std::string> cordoned;            // cordoned now, by handoff
  std::vector<std::string> already_by_handoff;  // an earlier run cordoned them
  std::vector<std::string> already_by_others;   // cordoned, not by handoff: uncordon leaves them
  int conflicts = 0;                            // 409s met and retried
  size_t nodes() const {
    return cordoned.size() + already_by_handoff.size() + already_by_others.size();
  }
};

struct UncordonReport {
  std::vector<std::string> uncordoned;      // handoff's cordon lifted, record removed
  std::vector<std::string> record_removed;  // handoff's record on a Node someone already uncordoned
  std::vector<std::string> left_cordoned;   // cordoned by someone else: left as they are
  std::vector<std::string> not_cordoned;    // schedulable, no record: nothing to do
  int conflicts = 0;
  size_t nodes() const {
    return uncordoned.size() + record_removed.size() + left_cordoned.size() + not_cordoned.size();
  }
};

// The Nodes matching ControlPlaneSelector(distribution).
absl::StatusOr<std::vector<Json>> ListRancherControlPlaneNodes(KubeClient& client,
                                                               RancherDistribution distribution);
// The names of the Nodes among `nodes` that are not cordoned, sorted. Pure.
std::vector<std::string> UncordonedNodes(const std::vector<Json>& nodes);

// Each write re-reads the Node, so a Node changed between the list and the write is judged as it
// is then. Names in each list are sorted.
absl::StatusOr<CordonReport> CordonControlPlane(KubeClient& client,
                                                RancherDistribution distribution);
absl::StatusOr<UncordonReport> UncordonControlPlane(KubeClient& client,
                                                    RancherDistribution distribution);

}  // namespace handoff::kube

#endif  // HANDOFF_COORDINATOR_KUBE_CORDON_H_
