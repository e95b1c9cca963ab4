#include "coordinator/kube/cordon.h"

#include <algorithm>

#include "common/base/strings.h"

namespace handoff::kube {
namespace {

const Json* Annotations(const Json& node) {
  if (!node.is_object()) return nullptr;
  auto metadata = node.find("metadata");
  if (metadata == node.end() || !metadata->is_object()) return nullptr;
  auto annotations = metadata->find("annotations");
  if (annotations == metadata->end() || !annotations->is_object()) return nullptr;
  return &*annotations;
}

std::vector<std::string> Names(const std::vector<Json>& nodes) {
  std::vector<std::string> names;
  for (const Json& node : nodes) names.push_back(ObjectName(node));
  std::sort(names.begin(), names.end());
  return names;
}

void SortAll(std::initializer_list<std::vector<std::string>*> lists) {
  for (std::vector<std::string>* list : lists) std::sort(list->begin(), list->end());
}

}  // namespace

absl::StatusOr<RancherDistribution> ParseRancherDistribution(std::string_view text) {
  if (text == "rke2") return RancherDistribution::kRke2;
  if (text == "rke") return RancherDistribution::kRke;
  return absl::InvalidArgumentError(
      StrCat("--distribution: \"", text, "\" is not a Rancher distribution; expected rke2 or rke"));
}

std::string_view RancherDistributionName(RancherDistribution distribution) {
  return distribution == RancherDistribution::kRke2 ? "rke2" : "rke";
}

std::string_view ControlPlaneSelector(RancherDistribution distribution) {
  // RKE2 labels its servers with the upstream role label; RKE1 has its own spelling, without the
  // hyphen. Both set the value "true" (kubeadm's empty value would not match).
  return distribution == RancherDistribution::kRke2 ? "node-role.kubernetes.io/control-plane=true"
                                                    : "node-role.kubernetes.io/controlplane=true";
}

bool IsCordoned(const Json& node) {
  if (!node.is_object()) return false;
  auto spec = node.find("spec");
  if (spec == node.end() || !spec->is_object()) return false;
  auto unschedulable = spec->find("unschedulable");
  return unschedulable != spec->end() && unschedulable->is_boolean() &&
         unschedulable->get<bool>();
}

bool CordonedByHandoff(const Json& node) {
  const Json* annotations = Annotations(node);
  if (annotations == nullptr) return false;
  auto record = annotations->find(std::string(kCordonedByAnnotation));
  return record != annotations->end() && record->is_string() &&
         record->get<std::string>() == kCordonedByHandoff;
}

bool CordonAndRecord(Json& node) {
  if (IsCordoned(node)) return false;
  if (!node["spec"].is_object()) node["spec"] = Json::object();
  node["spec"]["unschedulable"] = true;
  Json& metadata = node["metadata"];
  if (!metadata["annotations"].is_object()) metadata["annotations"] = Json::object();
  metadata["annotations"][std::string(kCordonedByAnnotation)] = kCordonedByHandoff;
  return true;
}

bool UncordonRecorded(Json& node) {
  if (!CordonedByHandoff(node)) return false;
  // The API server omits a false spec.unschedulable, so removing it is what a never-cordoned
  // Node looks like (kubectl uncordon writes false, which reads back the same).
  if (node.contains("spec") && node["spec"].is_object()) node["spec"].erase("unschedulable");
  Json& metadata = node["metadata"];
  metadata["annotations"].erase(std::string(kCordonedByAnnotation));
  if (metadata["annotations"].empty()) metadata.erase("annotations");
  return true;
}

absl::StatusOr<std::vector<Json>> ListRancherControlPlaneNodes(KubeClient& client,
                                                               RancherDistribution distribution) {
  return client.List(kNodes, "", ControlPlaneSelector(distribution));
}

std::vector<std::string> UncordonedNodes(const std::vector<Json>& nodes) {
  std::vector<Json> schedulable;
  for (const Json& node : nodes) {
    if (!IsCordoned(node)) schedulable.push_back(node);
  }
  return Names(schedulable);
}

absl::StatusOr<CordonReport> CordonControlPlane(KubeClient& client,
                                                RancherDistribution distribution) {
  absl::StatusOr<std::vector<Json>> nodes = ListRancherControlPlaneNodes(client, distribution);
  if (!nodes.ok()) return nodes.status();
  CordonReport report;
  for (const std::string& name : Names(*nodes)) {
    enum class Found { kCordoned, kByHandoff, kByOthers } found = Found::kCordoned;
    // Decided again on each attempt: after a conflict the Node may have been cordoned meanwhile.
    const Mutation cordon = [&found](Json& node) -> absl::StatusOr<bool> {
      if (IsCordoned(node)) {
        found = CordonedByHandoff(node) ? Found::kByHandoff : Found::kByOthers;
        return false;
      }
      found = Found::kCordoned;
      return CordonAndRecord(node);
    };
    absl::StatusOr<MutateResult> mutated = client.Mutate(ObjectRef{&kNodes, "", name}, cordon);
    if (!mutated.ok()) return mutated.status();
    report.conflicts += mutated->conflicts;
    switch (found) {
      case Found::kCordoned:
        report.cordoned.push_back(name);
        break;
      case Found::kByHandoff:
        report.already_by_handoff.push_back(name);
        break;
      case Found::kByOthers:
        report.already_by_others.push_back(name);
        break;
    }
  }
  SortAll({&report.cordoned, &report.already_by_handoff, &report.already_by_others});
  return report;
}

absl::StatusOr<UncordonReport> UncordonControlPlane(KubeClient& client,
                                                    RancherDistribution distribution) {
  absl::StatusOr<std::vector<Json>> nodes = ListRancherControlPlaneNodes(client, distribution);
  if (!nodes.ok()) return nodes.status();
  UncordonReport report;
  for (const std::string& name : Names(*nodes)) {
    enum class Found { kUncordoned, kRecordOnly, kByOthers, kNotCordoned } found =
        Found::kNotCordoned;
    const Mutation uncordon = [&found](Json& node) -> absl::StatusOr<bool> {
      const bool cordoned = IsCordoned(node);
      if (!CordonedByHandoff(node)) {
        found = cordoned ? Found::kByOthers : Found::kNotCordoned;
        return false;
      }
      found = cordoned ? Found::kUncordoned : Found::kRecordOnly;
      return UncordonRecorded(node);
    };
    absl::StatusOr<MutateResult> mutated = client.Mutate(ObjectRef{&kNodes, "", name}, uncordon);
    if (!mutated.ok()) return mutated.status();
    report.conflicts += mutated->conflicts;
    switch (found) {
      case Found::kUncordoned:
        report.uncordoned.push_back(name);
        break;
      case Found::kRecordOnly:
        report.record_removed.push_back(name);
        break;
      case Found::kByOthers:
        report.left_cordoned.push_back(name);
        break;
      case Found::kNotCordoned:
        report.not_cordoned.push_back(name);
        break;
    }
  }
  SortAll({&report.uncordoned, &report.record_removed, &report.left_cordoned,
           &report.not_cordoned});
  return report;
}

}  // namespace handoff::kube
