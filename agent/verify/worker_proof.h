// What must hold on a worker once its kubelet restarted with new flags, beyond its process and
// health (verifier.h): the same Node object (name and UID) posts a fresh heartbeat and is Ready,
// the pods' containers were not restarted, and the credential provider it now names answers. A
// kubelet that registered under another name would leave the old Node NotReady and its pods to be
// evicted (kops#13358, cloud-provider-aws#384); one that recreated its pods would be an outage of
// every workload on the node.
#ifndef HANDOFF_AGENT_VERIFY_WORKER_PROOF_H_
#define HANDOFF_AGENT_VERIFY_WORKER_PROOF_H_

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "agent/engine/credential_provider.h"
#include "common/kube/client.h"
#include "common/system/clock.h"
#include "common/system/command_runner.h"

namespace handoff {

// A proof of the kubelet's restart beyond its process, borrowed by the applier
// (ApplyOptions::kubelet_proof). Before() is called once the kubelet's files are written and
// just before it is restarted; After() once the new kubelet runs with its flags and is healthy.
// An error from either fails the step, and the move is undone.
class KubeletProof {
 public:
  virtual ~KubeletProof() = default;
  virtual absl::Status Before() = 0;
  // What was proven, for the report ("Node w1 (uid …) Ready, heartbeat 2s after the restart; 3
  // containers not restarted; ecr-credential-provider answered for …").
  virtual absl::StatusOr<std::string> After() = 0;
};

// A container as `crictl ps -o json` lists it (CRI ListContainers).
struct CriContainer {
  std::string id;
  std::string pod_sandbox_id;
  std::string name;           // metadata.name
  std::string pod;            // namespace/name, from the kubelet's io.kubernetes.pod.* labels
  std::string created_at;     // nanoseconds since the epoch, as crictl prints it
};

// The containers of `crictl ps -o json`'s answer. InvalidArgument when it is not that shape.
absl::StatusOr<std::vector<CriContainer>> ParseCriContainers(std::string_view json);

// Every container of `before` that `after` shows restarted: gone, and its pod (by sandbox or by
// namespace/name) running a container of the same name with another id. A container gone with its
// pod (deleted meanwhile) is not one. One line each, naming pod, container and both ids. Pure.
std::vector<std::string> RestartedContainers(const std::vector<CriContainer>& before,
                                             const std::vector<CriContainer>& after);

// What a Node object says of its kubelet.
struct NodeReadiness {
  std::string uid;
  bool ready = false;  // condition Ready is "True"
};
// From a Node object. InvalidArgument when it has no metadata.uid. Pure.
absl::StatusOr<NodeReadiness> ReadNodeReadiness(const kube::Json& node);
// The kubelet's heartbeat: its Lease's spec.renewTime (kube-node-lease/<node>, renewed every
// 10 s, in microseconds; the Node's lastHeartbeatTime has whole seconds and is posted only every
// 5 minutes when nothing changed), when the Lease is held by `node_name`. Pure.
std::optional<absl::Time> LeaseRenewTime(const kube::Json& lease, std::string_view node_name);

struct WorkerProofOptions {
  std::string node_name;                 // the Node this kubelet must keep
  std::vector<std::string> crictl = {"crictl", "ps", "-o", "json"};
  absl::Duration timeout = absl::Minutes(2);      // for the heartbeat after the restart
  absl::Duration poll_interval = absl::Seconds(1);
  absl::Duration command_timeout = absl::Seconds(30);
  // The registry the credential provider must answer for (<account>.dkr.ecr.<region>...).
  std::string ecr_registry;
};

// The proof on a worker. `client` reads the Node (with the kubelet's own credentials, which may
// read their Node); `credential_call` gives the credential provider the kubelet's files name now
// (nullopt: they name none, as on the way back to the in-tree provider). All borrowed.
class WorkerKubeletProof : public KubeletProof {
 public:
  using CredentialCall =
      std::function<absl::StatusOr<std::optional<CredentialProviderCall>>()>;
  WorkerKubeletProof(WorkerProofOptions options, kube::KubeClient& client,
                     CommandRunner& commands, Clock& clock, CredentialCall credential_call);

  absl::Status Before() override;
  absl::StatusOr<std::string> After() override;

 private:
  absl::StatusOr<std::vector<CriContainer>> Containers();

  WorkerProofOptions options_;
  kube::KubeClient& client_;
  CommandRunner& commands_;
  Clock& clock_;
  CredentialCall credential_call_;
  // From Before(), which runs just before the restart.
  std::string uid_;
  absl::Time restarted_at_;
  std::vector<CriContainer> containers_;
};

}  // namespace handoff

#endif  // HANDOFF_AGENT_VERIFY_WORKER_PROOF_H_
