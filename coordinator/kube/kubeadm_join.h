// A worker's `kubeadm join` configuration (kubeadm.k8s.io/v1beta3 JoinConfiguration, which kubeadm
// 1.26 and 1.27 read) for a machine that joins after the move: its kubelet external from its first
// start, with the ECR credential provider the in-tree provider's credentials gave way to, or, for
// a machine that joins during a rollback, with the in-tree provider. kubeadm writes
// nodeRegistration.kubeletExtraArgs into /var/lib/kubelet/kubeadm-flags.env, and a
// nodeRegistration.name other than the machine's host name as --hostname-override; kubeadm join
// refuses a --config mixed with --token or --discovery-token-ca-cert-hash, so the discovery is in
// the file too. Pure.
#ifndef HANDOFF_COORDINATOR_KUBE_KUBEADM_JOIN_H_
#define HANDOFF_COORDINATOR_KUBE_KUBEADM_JOIN_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace handoff::kube {

// What the joining kubelet's cloud provider is: external (after the move) or aws (a machine
// joining while the rollback to the in-tree provider is under way, or after it).
enum class WorkerJoinTarget { kExternal, kInTree };

struct WorkerJoinOptions {
  WorkerJoinTarget target = WorkerJoinTarget::kExternal;
  // discovery.bootstrapToken: what `kubeadm token create --print-join-command` prints.
  std::string api_server_endpoint;          // HOST:PORT, the control plane's endpoint
  std::string token;                        // [a-z0-9]{6}.[a-z0-9]{16}
  std::vector<std::string> ca_cert_hashes;  // sha256:<64 hex digits>, at least one
  bool unsafe_skip_ca_verification = false;  // instead of ca_cert_hashes
  // discovery.file.kubeConfigPath instead of the token: a kubeconfig on the machine (kubeadm
  // checks that it exists there) or at an https:// URL.
  std::string discovery_file;
  // nodeRegistration.name: the Node's name ("" = the machine's host name). On AWS the external
  // cloud-controller-manager finds the instance of a Node without a providerID by its private
  // DNS name, which the in-tree provider gave every Node.
  std::string node_name;
  std::string cri_socket;  // nodeRegistration.criSocket; "" = kubeadm finds it
  // Towards external: the CredentialProviderConfig's path on the machine and the directory where
  // ecr-credential-provider is installed (the agent's worker.credentialProviderConfig and
  // worker.credentialProviderBinDir).
  std::string credential_provider_config;
  std::string credential_provider_bin_dir;
};

// The JoinConfiguration, YAML. InvalidArgument naming the option (its flag's name, --token, ...)
// when the discovery is missing or malformed, both discovery kinds are given, or a path is not
// absolute.
absl::StatusOr<std::string> RenderWorkerJoinConfiguration(const WorkerJoinOptions& options);

}  // namespace handoff::kube

#endif  // HANDOFF_COORDINATOR_KUBE_KUBEADM_JOIN_H_
