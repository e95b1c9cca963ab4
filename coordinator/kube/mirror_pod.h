// The mirror pod the kubelet publishes for a static pod, and its kubernetes.io/config.hash: the
// hash of the manifest the kubelet runs (a hash of the decoded pod, the node name and the file
// path). A changed hash says the kubelet picked up a new manifest: a restart signal that adds to
// the agent's own proof (new process, new argv, healthy).
#ifndef HANDOFF_COORDINATOR_KUBE_MIRROR_POD_H_
#define HANDOFF_COORDINATOR_KUBE_MIRROR_POD_H_

#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "common/kube/client.h"

namespace handoff::kube {

inline constexpr std::string_view kConfigHashAnnotation = "kubernetes.io/config.hash";
inline constexpr std::string_view kConfigMirrorAnnotation = "kubernetes.io/config.mirror";

struct MirrorPod {
  std::string name;         // "<component>-<node>"
  std::string config_hash;  // kubernetes.io/config.hash
  std::string uid;
  std::string phase;  // status.phase, "" when not reported
};

// The static pod's name for `component` on `node`: "kube-controller-manager-ip-10-0-1-5".
std::string MirrorPodName(std::string_view node, std::string_view component);

// Reads kube-system/<component>-<node>. NotFound when the kubelet has not published it;
// FailedPrecondition when the pod is not a mirror pod (no config.mirror annotation).
absl::StatusOr<MirrorPod> GetMirrorPod(KubeClient& client, std::string_view node,
                                       std::string_view component);

// GetMirrorPod's config hash.
absl::StatusOr<std::string> MirrorPodHash(KubeClient& client, std::string_view node,
                                          std::string_view component);

}  // namespace handoff::kube

#endif  // HANDOFF_COORDINATOR_KUBE_MIRROR_POD_H_
