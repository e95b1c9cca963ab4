// The cluster under the sandbox: the API server the nodes' managers, the coordinator and the
// checks talk to, what each node's files and kubelet need to run that cluster's managers, and the
// invariant monitor's view of those managers. The sandbox's bring-up, scenario and report are the
// same for every cluster; only this differs:
//   model  the in-process fake API server and stand-in controller-managers that record what
//          they run (model_cluster.h);
//   real   etcd, kube-apiserver 1.26, kube-controller-manager 1.26 and the
//          aws-cloud-controller-manager 1.27 against a fake AWS (real_cluster.h).
// NewSandboxCluster is the one place that chooses between them.
#ifndef HANDOFF_COORDINATOR_SANDBOX_CLUSTER_H_
#define HANDOFF_COORDINATOR_SANDBOX_CLUSTER_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "coordinator/pki/pki.h"
#include "coordinator/sandbox/lease_holders.h"
#include "coordinator/sandbox/monitor/monitor.h"
#include "coordinator/sandbox/node_layout.h"

namespace handoff::sandbox {

enum class ClusterKind { kModel, kReal };

// "model", "real"; false for anything else.
bool ParseClusterKind(const std::string& name, ClusterKind* kind);

struct ClusterNode {
  SandboxNode spec;
  std::string root;  // the node's root directory (absolute)
};

// What the sandbox has made before it chooses its cluster. Every path is absolute.
struct ClusterSetup {
  std::string dir;      // the sandbox's directory; logs/ and records/ exist under it
  std::string bin_dir;  // where handoff-standin, handoff-sandbox-kubelet, ... are
  LeaseTiming timing;   // every manager's leader-election timing
  std::vector<ClusterNode> nodes;
};

// The API server's credentials, made by the sandbox before the API server starts. Every client
// of the sandbox (admin, controller-manager) has a certificate from `kube_ca`.
struct ApiServerCertificates {
  pki::KeyPair kube_ca;           // with its private key, to issue more
  std::string client_ca_file;     // kube_ca's certificate
  std::string serving_cert_file;  // issued by kube_ca for localhost and 127.0.0.1
  std::string serving_key_file;
};

// Used by the sandbox's main thread only; borrowed by nothing.
class SandboxCluster {
 public:
  virtual ~SandboxCluster() = default;

  // Starts the API server with the cluster's objects (the nodes with their providerIDs, the
  // bootstrap RBAC of a 1.26 control plane) and returns its URL ("https://127.0.0.1:PORT"). An
  // error says what did not start and where its log is.
  virtual absl::StatusOr<std::string> StartApiServer(const ApiServerCertificates& certificates) = 0;

  // Fills in the cluster's part of `node`'s layout: the pod environment and cloud config its
  // managers need. The sandbox has set the API server URL, the CA, the client and the timing.
  virtual absl::Status AddLayoutInputs(const ClusterNode& node, LayoutInputs& inputs) = 0;

  // Extra arguments for `handoff-sandbox-kubelet start` on `node`: what its static pods run as.
  virtual std::vector<std::string> KubeletArgs(const ClusterNode& node) const = 0;

  // The invariant monitor, brought up to `now`: which cloud controller ran in which manager,
  // and whether one ever ran in two at once. The reference stays valid until the next Poll. A
  // read error keeps the previous report (the next poll tries again).
  virtual const MonitorReport& Poll(absl::Time now) = 0;

  // Each change of holder of the leader-election leases so far, in time order, for the timeline:
  // from the same records the monitor reads (the model's stand-ins write lease records; the real
  // managers' are read from their logs), and for the real cluster also the API server's view
  // (kObserved). Empty when the records cannot be read.
  virtual std::vector<LeaseHolderChange> LeaseHolders() const = 0;

  // One line per component the cluster runs, with its version, for the summary.
  virtual std::vector<std::string> ComponentLines() const = 0;

  // Stops what StartApiServer started. Idempotent; the destructor stops too.
  virtual void Stop() = 0;
};

// The cluster of `kind`. UnimplementedError for a kind this build cannot run.
absl::StatusOr<std::unique_ptr<SandboxCluster>> NewSandboxCluster(ClusterKind kind,
                                                                  const ClusterSetup& setup);

}  // namespace handoff::sandbox

#endif  // HANDOFF_COORDINATOR_SANDBOX_CLUSTER_H_
