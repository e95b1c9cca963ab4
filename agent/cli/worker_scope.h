// What a worker's move needs beyond the applier's host: the ECR registry its credential provider
// must answer for, a client for its own Node and Lease read with the kubelet's credentials
// (worker.kubeconfig), and the proofs built on them (agent/verify/worker_proof.h).
#ifndef HANDOFF_AGENT_CLI_WORKER_SCOPE_H_
#define HANDOFF_AGENT_CLI_WORKER_SCOPE_H_

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "agent/apply/applier.h"
#include "agent/engine/settings.h"
#include "agent/verify/worker_proof.h"
#include "common/fs/file_system.h"
#include "common/kube/client.h"
#include "common/kube/http_transport.h"
#include "common/system/clock.h"
#include "common/system/command_runner.h"

namespace handoff {

using KubeTransportFactory =
    std::function<absl::StatusOr<std::unique_ptr<kube::HttpTransport>>(
        const kube::ClusterCredentials& credentials)>;

using BeforeMove = std::function<absl::StatusOr<std::vector<std::string>>(
    NodeState from, NodeState to, const Settings& settings)>;

// The ecr-credential-provider call the kubelet's files in `fs` name now (nullopt: they name no
// --image-credential-provider-config), read as the kubelet reads them.
absl::StatusOr<std::optional<CredentialProviderCall>> NamedCredentialProvider(
    const FileSystem& fs, const Settings& settings);

// The call the move to external makes the kubelet use: the one it names already, else the
// configuration the move writes with worker.credentialProviderBinDir.
absl::StatusOr<CredentialProviderCall> CredentialProviderAfterMove(const FileSystem& fs,
                                                                   const Settings& settings);

class WorkerScope {
 public:
  // For a worker: `settings.worker.ecr_registry` filled from the instance metadata when empty,
  // and a client on worker.kubeconfig (read through `fs`). Errors name the kubeconfig or say
  // why the registry is unknown. Borrows `fs`, `commands` and `clock`.
  static absl::StatusOr<std::unique_ptr<WorkerScope>> Open(Settings& settings,
                                                           const FileSystem& fs,
                                                           CommandRunner& commands, Clock& clock,
                                                           const KubeTransportFactory& transport);

  KubeletProof* proof() { return proof_.get(); }

  // `inner` first; then, for a move to external, the credential provider the kubelet will use
  // must answer for the registry and the Node must be readable, or the move is refused with
  // nothing written.
  BeforeMove Guard(BeforeMove inner);

 private:
  WorkerScope(const FileSystem& fs, CommandRunner& commands) : fs_(fs), commands_(commands) {}

  const FileSystem& fs_;
  CommandRunner& commands_;
  std::string registry_;
  std::string node_name_;
  std::unique_ptr<kube::KubeClient> client_;
  std::unique_ptr<WorkerKubeletProof> proof_;
};

}  // namespace handoff

#endif  // HANDOFF_AGENT_CLI_WORKER_SCOPE_H_
