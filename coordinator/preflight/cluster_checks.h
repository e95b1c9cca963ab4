// The preflight checks that read the cluster through its API server: what operators have hit
// when moving to the external cloud provider (README "Preflight"). Read once (ReadClusterView),
// judged by pure functions (RunClusterChecks), so that the same judgement serves
// `handoffctl preflight` and the coordinator's start. Nothing is changed: the only requests
// besides reads are SubjectAccessReviews, which the API server answers without storing.
//
//  rbac             both managers' identities may get and update the migration lease (and the
//                   cloud-controller-manager its own main lease), asked of the API server's
//                   authorizer as a SubjectAccessReview for each identity, not read from the
//                   rules' shape;
//  ebs-csi          no PersistentVolume with awsElasticBlockStore and no StorageClass with the
//                   provisioner kubernetes.io/aws-ebs, unless the CSIDriver ebs.csi.aws.com is
//                   installed (with --cloud-provider=external the in-tree EBS plugin is gone; CSI
//                   migration serves those volumes through the driver);
//  ecr-credentials  no pod's image comes from ECR (<account>.dkr.ecr.<region>.amazonaws.com) on a
//                   node whose kubelet lacks --image-credential-provider-config and
//                   --image-credential-provider-bin-dir (the in-tree ECR credentials go with
//                   --cloud-provider=aws); a node whose kubelet flags are not known warns;
//  cloud-routes     the cloud-controller-manager writes VPC routes exactly when the
//                   kube-controller-manager does (--allocate-node-cidrs with
//                   --configure-cloud-routes, not false) and for the same --cluster-cidr: the
//                   manifests handoff writes (from the settings) and the ones running;
//  leader-elect     no kube-controller-manager or cloud-controller-manager runs with
//                   --leader-elect=false (Leader Migration is then silently off);
//  control-plane    every control-plane Node Ready and its static pods (kube-apiserver,
//                   kube-controller-manager, kube-scheduler, etcd where etcd runs stacked, and
//                   a cloud-controller-manager where one runs) Running and Ready, as Cluster
//                   API's KubeadmControlPlane gates a change on them.
#ifndef HANDOFF_COORDINATOR_PREFLIGHT_CLUSTER_CHECKS_H_
#define HANDOFF_COORDINATOR_PREFLIGHT_CLUSTER_CHECKS_H_

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "agent/engine/settings.h"
#include "common/kube/client.h"
#include "coordinator/kube/rbac.h"
#include "coordinator/preflight/check_report.h"

namespace handoff::preflight {

inline constexpr char kCheckRbac[] = "rbac";
inline constexpr char kCheckEbsCsi[] = "ebs-csi";
inline constexpr char kCheckEcrCredentials[] = "ecr-credentials";
inline constexpr char kCheckCloudRoutes[] = "cloud-routes";
inline constexpr char kCheckLeaderElect[] = "leader-elect";
inline constexpr char kCheckControlPlane[] = "control-plane";

// One question asked of the authorizer, and its answer.
struct AccessAnswer {
  std::string identity;  // "User system:kube-controller-manager"
  std::string verb;      // get, update
  std::string lease;     // the lease's name, in kube-system
  bool allowed = false;
  std::string error;  // the request failed (then `allowed` says nothing)
};

// What the checks read of the cluster. A list that could not be read is absent from its
// optional, with the reason in `unread` under the resource's name ("pods"); the checks that
// need it warn and say why.
struct ClusterView {
  std::optional<std::vector<kube::Json>> nodes;
  std::optional<std::vector<kube::Json>> pods;  // every namespace
  std::optional<std::vector<kube::Json>> persistent_volumes;
  std::optional<std::vector<kube::Json>> storage_classes;
  std::optional<std::vector<kube::Json>> csi_drivers;
  std::vector<AccessAnswer> access;
  std::map<std::string, std::string> unread;
};

// What a node's kubelet runs with, as its agent reads the kubelet's flags.
struct KubeletFacts {
  bool credential_provider_config = false;   // --image-credential-provider-config set
  bool credential_provider_bin_dir = false;  // --image-credential-provider-bin-dir set
  // A worker's agent: its move writes both flags once ecr-credential-provider is installed in
  // `provider_dir` (provider_installed).
  bool move_writes_flags = false;
  bool provider_installed = false;
  std::string provider_dir;
};

struct ClusterCheckOptions {
  Settings settings;       // the rollout's (defaults when none is given)
  kube::RbacOptions rbac;  // the identities and lease names
  bool downtime = false;   // the downtime strategy: no Leader Migration, rbac not checked
  // The kubelets whose flags are known, by node name (from the agents, through the coordinator).
  std::map<std::string, KubeletFacts> kubelets;
};

// Reads what the checks need: Nodes, Pods, PersistentVolumes, StorageClasses, CSIDrivers, and
// the SubjectAccessReviews for options.rbac's identities (none with options.downtime). Never
// fails as a whole: what cannot be read is recorded in `unread`.
ClusterView ReadClusterView(kube::KubeClient& client, const ClusterCheckOptions& options);

// The checks above, in that order. Pure.
std::vector<CheckResult> RunClusterChecks(const ClusterView& view,
                                          const ClusterCheckOptions& options);

// Whether `image` is pulled from Amazon ECR: "<12 digits>.dkr.ecr[-fips].<region>.amazonaws.com"
// (".com.cn" in China) as its registry host. Pure.
bool IsEcrImage(std::string_view image);

}  // namespace handoff::preflight

#endif  // HANDOFF_COORDINATOR_PREFLIGHT_CLUSTER_CHECKS_H_
