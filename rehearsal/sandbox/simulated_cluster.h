// The clusters whose nodes are directories on the host (cluster.h: model and real): each node's
// files are written from handoff's templates (node_layout.h) and a simulated kubelet
// (handoff-sandbox-kubelet) runs its static pods; each node's instance metadata is a FakeImds of
// its own for the agent's cluster-tag check. The agents run on the host with --root at the node's
// directory. What differs between the two is the API server and what the static pods run: the
// subclass's StartApiServer, AddLayoutInputs and KubeletArgs.
#ifndef HANDOFF_REHEARSAL_SANDBOX_SIMULATED_CLUSTER_H_
#define HANDOFF_REHEARSAL_SANDBOX_SIMULATED_CLUSTER_H_

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/fs/file_system.h"
#include "rehearsal/imds/fake_imds.h"
#include "rehearsal/sandbox/cluster.h"
#include "rehearsal/sandbox/node_layout.h"

namespace handoff::sandbox {

// The port every simulated kubelet serves /healthz on, at its node's address.
inline constexpr int kSimulatedKubeletHealthzPort = 10248;

class SimulatedCluster : public SandboxCluster {
 public:
  // The API server, admin.conf, each node's files, settings.yaml, the kubelets.
  absl::Status Start(const ApiServerCertificates& certificates) final;
  std::string CoordinatorHost() const override { return "127.0.0.1"; }
  AgentHost AgentHostOf(const ClusterNode& node) const override;
  // A marker file the simulated kubelet reads: the node's cloud-controller-manager never answers
  // its health check while it is there.
  absl::Status SetCloudControllerManagerUnhealthy(const ClusterNode& node, bool unhealthy) override;
  // The cloud provider its kubeadm-flags.env gives, the workload's pid from the simulated
  // kubelet's record of its pods.
  absl::StatusOr<WorkerKubeletLook> LookAtWorker(const ClusterNode& worker) override;
  // The worker's provider script rewritten: one more run of the stand-in, then failures.
  absl::Status SetCredentialProviderFailing(const ClusterNode& worker, bool failing) override;

 protected:
  explicit SimulatedCluster(const ClusterSetup& setup);

  // Starts the API server with the cluster's objects; its URL ("https://127.0.0.1:PORT").
  virtual absl::StatusOr<std::string> StartApiServer(const ApiServerCertificates& certificates) = 0;
  // The cluster's part of `node`'s layout (the pod environment and cloud config its managers
  // need). The API server URL, the CA, the client and the timing are set already.
  virtual absl::Status AddLayoutInputs(const ClusterNode& node, LayoutInputs& inputs) = 0;
  // Extra arguments for `handoff-sandbox-kubelet start` on `node`: what its static pods run as.
  virtual std::vector<std::string> KubeletArgs(const ClusterNode& node) const = 0;
  // The agents' --timeout: how long a manager of this cluster may take to restart healthy.
  virtual std::string AgentTimeout() const = 0;
  // Where `node`'s agent finds its instance metadata when the cluster serves it (after
  // StartApiServer): the real clusters' fake AWS serves each node's, with the instance profile's
  // credentials. nullopt (the default): a FakeImds of the node's providerID, named after the
  // node and tagged for the cluster, without an instance profile.
  virtual std::optional<std::string> InstanceMetadataOf(const ClusterNode& node) const;

  // Stops every node's pods and kubelet. Idempotent; subclasses call it first in Stop().
  void StopKubelets();

  const ClusterSetup setup_;
  std::unique_ptr<FileSystem> fs_;  // rooted at "/"

 private:
  absl::Status WriteFile(const std::string& path, const std::string& content, unsigned mode = 0644);
  std::string Kubelet() const;
  // `handoff-sandbox-kubelet start` for `node`, with `extra` after the common flags.
  absl::Status StartKubelet(const ClusterNode& node, std::vector<std::string> extra);
  // A worker's files, its instance metadata and its kubelet (ClusterSetup::workers).
  absl::Status StartWorker(const ClusterNode& worker, const std::string& url,
                           const ApiServerCertificates& certificates);
  // Where the worker's ecr-credential-provider is (its worker.credentialProviderBinDir), on the
  // host and at the same path under the worker's root.
  std::string CredentialProviderDir(const ClusterNode& worker) const;
  // That provider: a script running the stand-in under its name, or (`failing`) one that runs it
  // once more and fails from then on.
  std::string CredentialProviderScript(const ClusterNode& worker, bool failing) const;

  std::map<std::string, std::unique_ptr<FakeImds>> imds_;  // by node name
  bool kubelets_started_ = false;
};

}  // namespace handoff::sandbox

#endif  // HANDOFF_REHEARSAL_SANDBOX_SIMULATED_CLUSTER_H_
