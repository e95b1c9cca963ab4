// The cloud-controller-manager static pod handoff creates on a kubeadm-style node.
#ifndef HANDOFF_AGENT_ENGINE_CCM_TEMPLATE_H_
#define HANDOFF_AGENT_ENGINE_CCM_TEMPLATE_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "agent/engine/classify.h"
#include "agent/engine/settings.h"
#include "agent/manifest/static_pod.h"

namespace handoff {

inline constexpr int kCloudControllerManagerPort = 10258;
inline constexpr std::string_view kLeaderMigrationVolume = "leader-migration-config";

// Builds the cloud-controller-manager pod for the node whose kube-controller-manager is `kcm`
// (as it is in state prepared, before it goes external): the AWS CCM image from settings, its
// flags (leader election, Leader Migration with `leader_migration` mounted, secure port 10258,
// routes off unless configured, the kube-controller-manager's kubeconfigs and --cloud-config),
// HTTPS liveness and startup probes on /healthz:10258, kubeadm's labels, priority class, host
// network and seccomp profile, and the hostPath mounts the kube-controller-manager has (its
// kubeconfig, certificates and CA bundles), less the flexvolume plugin dir. Settings'
// extraArgs are applied last and win. Error when no image is set.
//
// The kube-controller-manager container's env entries with a value (name/value, in its order)
// are copied to the cloud-controller-manager's: it now makes the cloud calls the
// kube-controller-manager made, so it needs the same proxy and AWS_* variables (kubeadm copies
// the host's proxy variables into its control-plane pods). Entries with valueFrom are skipped,
// each with a line in `notes` (when given) naming it: a downward-API field of the
// kube-controller-manager's pod does not mean the same in another pod. Without env, no env key
// is written.
absl::StatusOr<StaticPod> BuildCloudControllerManager(const ComponentView& kcm,
                                                      const Settings& settings,
                                                      const std::string& manifest_path,
                                                      bool leader_migration,
                                                      std::vector<std::string>* notes = nullptr);

}  // namespace handoff

#endif  // HANDOFF_AGENT_ENGINE_CCM_TEMPLATE_H_
