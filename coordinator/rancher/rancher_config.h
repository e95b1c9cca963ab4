// Rancher's ways of moving a cluster from the in-tree AWS provider to the out-of-tree
// aws-cloud-controller-manager with Leader Migration, as edits of the cluster's configuration
// (Rancher's "Migrating Amazon In-tree to Out-of-tree", RKE2 and RKE tabs). Pure functions of
// their inputs: they read and return text, and never touch a file or the cluster.
//
// Each phase is idempotent (applying it to its own output returns that output unchanged, byte for
// byte), refuses a file that is not in the state the phase starts from (naming the field), and
// keeps what it does not change: keys keep their order, and a phase with nothing to change returns
// the text as it came, comments included. A phase that changes something re-emits the document,
// which loses its comments (yaml-cpp does not keep them).
#ifndef HANDOFF_COORDINATOR_RANCHER_RANCHER_CONFIG_H_
#define HANDOFF_COORDINATOR_RANCHER_RANCHER_CONFIG_H_

#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace handoff::rancher {

// The phases, in order. RKE has no kDeployCcm: there the chart is installed by hand (with the
// values RkeCcmHelmValues gives) between prepare and migrate.
enum class Phase { kPrepare, kDeployCcm, kMigrate, kFinalize };

// "prepare", "deploy-ccm", "migrate", "finalize".
absl::StatusOr<Phase> ParsePhase(std::string_view name);
std::string_view PhaseName(Phase phase);

struct PhaseOptions {
  // How messages name the file.
  std::string source = "cluster.yaml";
  // migrate: spec.kubernetesVersion (RKE2) or kubernetes_version (RKE) when not empty.
  std::string kubernetes_version;
  // RKE migrate: cloud_provider.useInstanceMetadataHostname. Rancher requires it for node-driver
  // clusters and for custom clusters that do not pass --node-name.
  bool use_instance_metadata_hostname = true;
};

// The provisioning.cattle.io/v1 Cluster `text` changed for `phase`:
//   prepare:    the machineSelectorConfig entry selecting rke.cattle.io/control-plane-role In
//               ['true'] gets kube-controller-manager-arg enable-leader-migration (merged into an
//               existing entry with that selector, never a second entry or a second arg);
//               machineGlobalConfig.cloud-provider-name must be, and stays, aws.
//   deploy-ccm: the helm.cattle.io/v1 HelmChart aws-cloud-controller-manager in
//               spec.rkeConfig.additionalManifest (created when absent) runs with
//               --enable-leader-migration=true on control-plane nodes; every other document of
//               additionalManifest keeps its text.
//   migrate:    cloud-provider-name external, enable-leader-migration gone from every
//               kube-controller-manager-arg (an entry left with no config is removed),
//               spec.kubernetesVersion when given.
//   finalize:   --enable-leader-migration=true gone from the chart's args.
// InvalidArgument for bad YAML or a document that is not such a Cluster; FailedPrecondition for a
// phase out of order (e.g. migrate with no chart in additionalManifest).
absl::StatusOr<std::string> Rke2Phase(std::string_view text, Phase phase,
                                      const PhaseOptions& options);

// The RKE cluster.yml `text` (plain, or wrapped in Rancher's rancher_kubernetes_engine_config)
// changed for `phase`:
//   prepare:  services.kube-controller.extra_args.enable-leader-migration: "true";
//             cloud_provider.name must be, and stays, aws.
//   migrate:  cloud_provider.name external-aws with useInstanceMetadataHostname, the argument
//             removed (and extra_args, kube-controller when left empty), kubernetes_version when
//             given.
//   finalize: nothing changes in the file (the chart's values change, see RkeCcmHelmValues); it
//             is refused unless migrate was applied.
// kDeployCcm is refused (InvalidArgument).
absl::StatusOr<std::string> RkePhase(std::string_view text, Phase phase,
                                     const PhaseOptions& options);

// The Helm values for the aws-cloud-controller-manager chart that the RKE tab installs by hand,
// for the state after `phase`: with --enable-leader-migration=true through prepare and migrate,
// without it from finalize on; on control-plane nodes (nodeSelector
// node-role.kubernetes.io/controlplane "true", tolerating RKE's controlplane and etcd taints and
// the uninitialized taint).
std::string RkeCcmHelmValues(Phase phase, const PhaseOptions& options);

}  // namespace handoff::rancher

#endif  // HANDOFF_COORDINATOR_RANCHER_RANCHER_CONFIG_H_
