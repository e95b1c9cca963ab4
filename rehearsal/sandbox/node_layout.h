// The files of one simulated kubeadm 1.26 control-plane node for `handoffctl sandbox`, under the
// node's root: the static pod manifests (kube-apiserver, kube-controller-manager with
// --cloud-provider=aws, kube-scheduler; templates/), the controller-manager's kubeconfig pointing
// at the sandbox's API server, kubeadm-flags.env, and the directories the manifests mount. Also
// the settings the sandbox's coordinator and agents use, and the API objects it seeds.
#ifndef HANDOFF_REHEARSAL_NODE_LAYOUT_H_
#define HANDOFF_REHEARSAL_NODE_LAYOUT_H_

#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "common/fs/file_system.h"
#include "common/pki/pki.h"

namespace handoff::sandbox {

struct SandboxNode {
  std::string name;         // "cp-1": also the hostname in lease identities
  std::string ip;           // "127.0.1.1": the node's components bind here
  std::string provider_id;  // "aws:///us-east-1a/i-0sandbox00000001"
  std::string zone;
};

// Node i (1-based) of the sandbox.
SandboxNode MakeSandboxNode(int index);

// Worker i (1-based) of the model sandbox: its Node named after the instance's private DNS name,
// ip-127-0-2-<i>.ec2.internal, as the in-tree provider names it, while the host is named w-<i>
// (so its move to external needs --hostname-override); address 127.0.2.<i>, zones in turn.
SandboxNode MakeSandboxWorker(int index);
// The worker's host name (/etc/hostname): w-<i>.
std::string SandboxWorkerHostName(int index);

// Leader-election timing of every manager in the sandbox (short, so a handover takes about a
// second): written into the kube-controller-manager manifests and the cloud-controller-manager's
// extraArgs.
struct LeaseTiming {
  absl::Duration lease_duration = absl::Milliseconds(1000);
  absl::Duration renew_deadline = absl::Milliseconds(700);
  absl::Duration retry_period = absl::Milliseconds(200);
};

// "1s", "700ms": the form the managers' flags take.
std::string GoDuration(absl::Duration duration);

struct LayoutInputs {
  std::string api_server_url;  // "https://127.0.0.1:PORT"
  std::string kube_ca_pem;     // the API server's CA
  // The managers' client certificate (CN system:kube-controller-manager).
  pki::KeyPair controller_manager_client;
  LeaseTiming timing;
  // The cluster's part (cluster.h, AddLayoutInputs). The in-tree provider's --cloud-config,
  // /etc/kubernetes/cloud.conf (the cloud-controller-manager is given it too).
  std::string cloud_config = "[Global]\nZone = us-east-1a\n";
  // The kube-controller-manager container's env, in order (the cloud-controller-manager
  // inherits it): e.g. where the AWS APIs and the instance metadata are. Empty: no env field.
  std::vector<std::pair<std::string, std::string>> controller_manager_env;
  // More files of the cluster's, by absolute path on the node, written with mode 0600: e.g. the
  // real kube-controller-manager's signing keys (pki/ca.key, pki/sa.key), which it reads at start.
  std::vector<std::pair<std::string, std::string>> secret_files;
};

// Writes the node's files through `fs` (rooted at the node's root). Fails naming the file.
absl::Status WriteNodeLayout(FileSystem& fs, const SandboxNode& node, const LayoutInputs& inputs);

// What a simulated worker has besides the API server's address and CA (LayoutInputs's).
struct WorkerLayoutInputs {
  std::string host_name;       // /etc/hostname
  pki::KeyPair kubelet_client;  // CN system:node:<name>, O system:nodes
  // ecr-credential-provider, as the node has it in worker.credentialProviderBinDir: a script that
  // runs the stand-in under that name.
  std::string credential_provider_dir;
  std::string credential_provider_script;
};

// The worker's files through `fs` (rooted at its root): /etc/hostname, the kubelet's kubeconfig
// /etc/kubernetes/kubelet.conf, kubeadm-flags.env with --cloud-provider=aws, a workload static
// pod (the stand-in as "workload", its image in the node's ECR registry) and the credential
// provider. Fails naming the file.
absl::Status WriteWorkerLayout(FileSystem& fs, const SandboxNode& node, const LayoutInputs& inputs,
                               const WorkerLayoutInputs& worker);

// The rollout's settings (sent by the coordinator with every move): version 1.27, the AWS
// cloud-controller-manager image, and the sandbox's lease timing as its extraArgs.
std::string RolloutSettingsYaml(const LeaseTiming& timing);

// Seed objects for the fake API server: the 1.26 bootstrap leader-locking Role and RoleBinding
// of the kube-controller-manager, one control-plane Node per sandbox node with its providerID,
// and one Node per worker, Ready, with its providerID.
std::string ClusterSeedYaml(const std::vector<SandboxNode>& nodes,
                            const std::vector<SandboxNode>& workers = {});

// A kubeconfig with embedded CA, client certificate and key.
std::string KubeconfigYaml(const std::string& server, const std::string& ca_pem,
                           const pki::KeyPair& client, const std::string& user);

// The text of a manifest template (generated from templates/ at build time), by file name.
std::string ManifestTemplate(const std::string& name);

}  // namespace handoff::sandbox

#endif  // HANDOFF_REHEARSAL_NODE_LAYOUT_H_
