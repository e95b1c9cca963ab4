#include "rehearsal/sandbox/cluster.h"

#include <map>

#include "rehearsal/sandbox/kubeadm/kubeadm_cluster.h"
#include "rehearsal/sandbox/model_cluster.h"
#include "rehearsal/sandbox/real_cluster.h"

namespace handoff::sandbox {

bool ParseClusterKind(const std::string& name, ClusterKind* kind) {
  static const std::map<std::string, ClusterKind> kKinds = {{"model", ClusterKind::kModel},
                                                            {"real", ClusterKind::kReal},
                                                            {"kubeadm", ClusterKind::kKubeadm}};
  auto found = kKinds.find(name);
  if (found == kKinds.end()) return false;
  *kind = found->second;
  return true;
}

absl::StatusOr<std::unique_ptr<SandboxCluster>> NewSandboxCluster(ClusterKind kind,
                                                                  const ClusterSetup& setup) {
  switch (kind) {
    case ClusterKind::kModel:
      return NewModelCluster(setup);
    case ClusterKind::kReal:
      return NewRealCluster(setup);
    case ClusterKind::kKubeadm:
      return NewKubeadmCluster(setup);
  }
  return absl::InvalidArgumentError("unknown cluster kind");
}

}  // namespace handoff::sandbox
