// STUB: the real cluster is not built yet. This file is to be replaced by the implementation
// (coordinator/sandbox/real/ holds its parts); until then `--cluster real` says so.
#include "coordinator/sandbox/real_cluster.h"

namespace handoff::sandbox {

absl::StatusOr<std::unique_ptr<SandboxCluster>> NewRealCluster(const ClusterSetup& /*setup*/) {
  return absl::UnimplementedError(
      "--cluster real is not built yet: this handoffctl rehearses with the model cluster only "
      "(--cluster model)");
}

}  // namespace handoff::sandbox
