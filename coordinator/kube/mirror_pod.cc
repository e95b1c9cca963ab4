#include "coordinator/kube/mirror_pod.h"

#include "common/base/strings.h"

namespace handoff::kube {

std::string MirrorPodName(std::string_view node, std::string_view component) {
  return StrCat(component, "-", node);
}

absl::StatusOr<MirrorPod> GetMirrorPod(KubeClient& client, std::string_view node,
                                       std::string_view component) {
  const ObjectRef ref{&kPods, "kube-system", MirrorPodName(node, component)};
  absl::StatusOr<Json> pod = client.Get(ref);
  if (!pod.ok()) return pod.status();
  MirrorPod mirror;
  mirror.name = ref.name;
  mirror.uid = StringAt(*pod, {"metadata", "uid"});
  mirror.phase = StringAt(*pod, {"status", "phase"});
  if (StringAt(*pod, {"metadata", "annotations", kConfigMirrorAnnotation}).empty()) {
    return absl::FailedPreconditionError(
        StrCat(ref.ToString(), " is not a mirror pod (no ", kConfigMirrorAnnotation,
               " annotation): it was not created by the kubelet from a static pod manifest"));
  }
  mirror.config_hash = StringAt(*pod, {"metadata", "annotations", kConfigHashAnnotation});
  if (mirror.config_hash.empty()) {
    return absl::FailedPreconditionError(
        StrCat(ref.ToString(), " has no ", kConfigHashAnnotation, " annotation"));
  }
  return mirror;
}

absl::StatusOr<std::string> MirrorPodHash(KubeClient& client, std::string_view node,
                                          std::string_view component) {
  absl::StatusOr<MirrorPod> pod = GetMirrorPod(client, node, component);
  if (!pod.ok()) return pod.status();
  return pod->config_hash;
}

}  // namespace handoff::kube
