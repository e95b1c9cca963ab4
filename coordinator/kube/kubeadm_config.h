// kubeadm keeps the control plane's configuration in the ConfigMap kube-system/kubeadm-config
// (data.ClusterConfiguration, YAML) and regenerates the static pod manifests from it on
// `kubeadm upgrade`, and builds the control plane of a node joined with
// `kubeadm join --control-plane` from it. Unless it says cloud-provider: external too, the next
// upgrade silently puts kube-apiserver and kube-controller-manager back on the in-tree provider,
// and unless its kubernetesVersion is the version the nodes run, a joined node gets the old
// version's images. This plans (purely) and applies that edit for the migrated and finalized
// states, and the way back for a rollback: the configuration as it was before the first edit,
// which the first apply keeps in its own ConfigMap (kubeadm replaces kubeadm-config whole when
// it writes it, so nothing of handoff's survives there).
#ifndef HANDOFF_COORDINATOR_KUBE_KUBEADM_CONFIG_H_
#define HANDOFF_COORDINATOR_KUBE_KUBEADM_CONFIG_H_

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "common/kube/client.h"
#include "common/kube/resource.h"

namespace handoff::kube {

inline constexpr std::string_view kKubeadmConfigNamespace = "kube-system";
inline constexpr std::string_view kKubeadmConfigName = "kubeadm-config";
inline constexpr std::string_view kClusterConfigurationKey = "ClusterConfiguration";
// kube-system/handoff-kubeadm-config-in-tree data.ClusterConfiguration: the ClusterConfiguration
// as it was before ApplyKubeadmConfig first made it external.
inline constexpr std::string_view kInTreeCopyName = "handoff-kubeadm-config-in-tree";

// Where the ClusterConfiguration goes: external (after the move), back to the saved in-tree one
// (after a rollback to in-tree), or that one with Leader Migration (prepared: what a node of
// version N joins with while cloud-controller-managers run, in a rollback by replacement).
enum class KubeadmConfigTarget { kExternal, kInTree, kPrepared };

struct KubeadmConfigOptions {
  // controllerManager --external-cloud-volume-plugin ("aws" when volumes are not on CSI
  // migration), as the agent sets it; "" leaves the argument alone.
  std::string external_cloud_volume_plugin;
  // Add -nodeipam to controllerManager --controllers (the cloud-controller-manager runs Node IPAM).
  bool disable_nodeipam = false;
  // kubernetesVersion: the version the nodes' control planes run ("v1.27.16" after the move,
  // version N after a rollback); "" leaves it as it is.
  std::string kubernetes_version;
  KubeadmConfigTarget target = KubeadmConfigTarget::kExternal;
  // kPrepared: the Leader Migration file the kube-controller-manager reads, on the node.
  std::string leader_migration_config = "/etc/leadermigration.conf";
};

struct KubeadmConfigPlan {
  std::string api_version;  // kubeadm.k8s.io/v1beta3 or v1beta4
  std::string before;       // data.ClusterConfiguration as stored
  std::string after;        // as it would be stored; equal to `before` when nothing changes
  std::vector<std::string> changes;  // one line per edit
  std::vector<std::string> notes;    // what the operator should know besides
  bool empty() const { return changes.empty(); }
  // Unified diff of the ClusterConfiguration, "" when nothing changes.
  std::string Diff() const;
};

// The edit of a ClusterConfiguration for the external cloud provider:
//   apiServer.extraArgs          cloud-provider: external, no cloud-config
//   controllerManager.extraArgs  cloud-provider: external, no cloud-config, no Leader Migration
//                                (enable-leader-migration, leader-migration-config, the
//                                ControllerManagerLeaderMigration feature gate), plus `options`
//   controllerManager.extraVolumes  without the volume that mounted the Leader Migration file
//   kubernetesVersion            options.kubernetes_version, when given
// Handles v1beta3 (extraArgs a map) and v1beta4 (extraArgs a list of {name, value}); new keys go
// where kubeadm would sort them, and everything else is kept. Pure. (options.target is not read.)
absl::StatusOr<KubeadmConfigPlan> PlanClusterConfiguration(std::string_view text,
                                                           const KubeadmConfigOptions& options);

// The way back: from `current` to the `saved` in-tree ClusterConfiguration, with its
// kubernetesVersion set to options.kubernetes_version when given. For kPrepared also
//   controllerManager.extraArgs     enable-leader-migration: "true", leader-migration-config:
//                                   options.leader_migration_config
//   controllerManager.extraVolumes  that file, hostPath and mountPath alike, pathType File,
//                                   read-only (named leadermigration, as the agent names it)
// so that a node of version N joined with it comes up prepared: its kube-controller-manager
// takes part in Leader Migration from its first start, never running the cloud controllers
// beside a cloud-controller-manager. The file must be on the node before kubeadm join. Pure.
absl::StatusOr<KubeadmConfigPlan> PlanInTreeConfiguration(std::string_view current,
                                                          std::string_view saved,
                                                          const KubeadmConfigOptions& options);

// The same for the kubeadm-config ConfigMap object.
absl::StatusOr<KubeadmConfigPlan> PlanKubeadmConfigMap(const Json& config_map,
                                                       const KubeadmConfigOptions& options);

// Reads kube-system/kubeadm-config (and for the way back the saved copy: FailedPrecondition when
// there is none) and plans towards options.target.
absl::StatusOr<KubeadmConfigPlan> ReadKubeadmConfigPlan(KubeClient& client,
                                                        const KubeadmConfigOptions& options);

struct KubeadmConfigApplyResult {
  KubeadmConfigPlan plan;  // as applied to the ConfigMap written (empty: nothing was written)
  int conflicts = 0;
  // Towards external: the in-tree copy was created now (the first apply); false when it existed,
  // or when the ClusterConfiguration was already external (nothing in-tree to keep).
  bool saved_in_tree_copy = false;
};

// Read-modify-write of the ConfigMap with its resourceVersion; on a conflict the edit is planned
// again on the fresh ConfigMap. Idempotent. Towards external, first keeps the ClusterConfiguration
// in kube-system/handoff-kubeadm-config-in-tree unless that exists or it is already external.
absl::StatusOr<KubeadmConfigApplyResult> ApplyKubeadmConfig(KubeClient& client,
                                                            const KubeadmConfigOptions& options);

}  // namespace handoff::kube

#endif  // HANDOFF_COORDINATOR_KUBE_KUBEADM_CONFIG_H_
