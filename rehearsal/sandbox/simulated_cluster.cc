#include "rehearsal/sandbox/simulated_cluster.h"

#include <sys/wait.h>

#include <utility>

#include "common/base/strings.h"
#include "common/fs/atomic_file.h"
#include "common/pki/pki.h"
#include "nlohmann/json.hpp"

namespace handoff::sandbox {

SimulatedCluster::SimulatedCluster(const ClusterSetup& setup)
    : setup_(setup), fs_(NewPosixFileSystem("/")) {}

absl::Status SimulatedCluster::WriteFile(const std::string& path, const std::string& content,
                                         unsigned mode) {
  return AtomicReplaceCreatingParents(*fs_, path, content, mode);
}

std::string SimulatedCluster::Kubelet() const {
  return StrCat(setup_.bin_dir, "/handoff-sandbox-kubelet");
}

std::optional<std::string> SimulatedCluster::InstanceMetadataOf(const ClusterNode& /*node*/) const {
  return std::nullopt;
}

absl::Status SimulatedCluster::Start(const ApiServerCertificates& certificates) {
  absl::StatusOr<std::string> url = StartApiServer(certificates);
  if (!url.ok()) return url.status();
  absl::Status written = WriteFile(StrCat(setup_.dir, "/admin.conf"),
                                   KubeconfigYaml(*url, certificates.kube_ca.certificate_pem,
                                                  certificates.admin, "kubernetes-admin"),
                                   0600);
  if (!written.ok()) return written;
  for (const ClusterNode& node : setup_.nodes) {
    absl::Status made = EnsureDirectory(*fs_, node.root, 0755);
    if (!made.ok()) return made;
    LayoutInputs inputs;
    inputs.api_server_url = *url;
    inputs.kube_ca_pem = certificates.kube_ca.certificate_pem;
    inputs.controller_manager_client = certificates.controller_manager;
    inputs.timing = setup_.timing;
    absl::Status added = AddLayoutInputs(node, inputs);
    if (!added.ok()) return added;
    std::unique_ptr<FileSystem> node_fs = NewPosixFileSystem(node.root);
    absl::Status laid = WriteNodeLayout(*node_fs, node.spec, inputs);
    if (!laid.ok()) return laid;
    if (InstanceMetadataOf(node)) continue;
    // Each simulated node is an instance with its own metadata, tagged for the cluster as the
    // AWS procedure asks (kubernetes.io/cluster/<clusterId>=owned); the Node is named after its
    // instance's private DNS name, as the AWS providers expect.
    FakeImdsOptions imds;
    imds.instance_id = node.spec.provider_id.substr(node.spec.provider_id.rfind('/') + 1);
    imds.local_hostname = node.spec.name;
    imds.availability_zone = node.spec.zone;
    imds.tags = std::map<std::string, std::string>{
        {"Name", node.spec.name}, {"kubernetes.io/cluster/handoff-sandbox", "owned"}};
    absl::StatusOr<std::unique_ptr<FakeImds>> started = FakeImds::Start(std::move(imds));
    if (!started.ok()) return started.status();
    imds_[node.spec.name] = *std::move(started);
  }
  written = WriteFile(StrCat(setup_.dir, "/settings.yaml"), RolloutSettingsYaml(setup_.timing));
  if (!written.ok()) return written;
  setup_.say(StrCat("API server on ", *url, " (Leases, Roles, Nodes with providerIDs)"));

  kubelets_started_ = true;
  for (const ClusterNode& node : setup_.nodes) {
    absl::Status started = StartKubelet(node, KubeletArgs(node));
    if (!started.ok()) return started;
  }
  setup_.say(StrCat(
      "kubelets running the static pods of ", setup_.nodes.size(),
      " nodes: kube-apiserver, kube-controller-manager --cloud-provider=aws, kube-scheduler"));
  for (const ClusterNode& worker : setup_.workers) {
    absl::Status started = StartWorker(worker, *url, certificates);
    if (!started.ok()) return started;
  }
  if (!setup_.workers.empty()) {
    setup_.say(StrCat(setup_.workers.size(),
                      " workers: each a kubelet with --cloud-provider=aws renewing its Node's "
                      "Lease, a workload from ECR, ecr-credential-provider installed"));
  }
  return absl::OkStatus();
}

absl::Status SimulatedCluster::StartKubelet(const ClusterNode& node,
                                            std::vector<std::string> extra) {
  std::vector<std::string> argv = {Kubelet(),
                                   "start",
                                   "--root",
                                   node.root,
                                   "--node-name",
                                   node.spec.name,
                                   "--healthz-bind-address",
                                   node.spec.ip,
                                   "--healthz-port",
                                   std::to_string(kSimulatedKubeletHealthzPort)};
  // The real kubelet's retry back-off for a changed pod (10 s), scaled as this cluster scales
  // the managers' leases (15 s by default), so that a restart takes as long against a lease
  // here as on a real node.
  const absl::Duration restart_delay =
      absl::Seconds(10) * absl::FDivDuration(setup_.timing.lease_duration, absl::Seconds(15));
  argv.insert(argv.end(), {"--pod-restart-delay", GoDuration(restart_delay)});
  for (std::string& arg : extra) argv.push_back(std::move(arg));
  const std::string log = StrCat(setup_.dir, "/logs/kubelet-", node.spec.name, ".log");
  absl::StatusOr<std::unique_ptr<Process>> start = setup_.spawn(argv, log);
  if (!start.ok()) return start.status();
  int status = 0;
  if (!(*start)->WaitFor(absl::Seconds(30), &status) || !WIFEXITED(status) ||
      WEXITSTATUS(status) != 0) {
    return absl::UnavailableError(StrCat("the simulated kubelet of ", node.spec.name,
                                         " did not start (", DescribeWaitStatus(status), "); see ",
                                         log));
  }
  return absl::OkStatus();
}

std::string SimulatedCluster::CredentialProviderDir(const ClusterNode& worker) const {
  return StrCat(setup_.dir, "/credential-provider/", worker.spec.name);
}

std::string SimulatedCluster::CredentialProviderScript(const ClusterNode& worker,
                                                       bool failing) const {
  const std::string run = StrCat("exec -a ecr-credential-provider '", setup_.bin_dir,
                                 "/handoff-standin' \"$@\"\n");
  if (!failing) {
    return StrCat("#!/bin/bash\n# The sandbox's ecr-credential-provider: the stand-in under that "
                  "name.\n", run);
  }
  const std::string answered = StrCat(CredentialProviderDir(worker), "/.answered");
  return StrCat("#!/bin/bash\n# The sandbox's --fault credential-provider: one answer, then none.\n"
                "if [ ! -e '", answered, "' ]; then\n  : > '", answered, "'\n  ", run, "fi\n"
                "echo 'error getting credentials: AccessDeniedException: ECR refuses this node "
                "(the sandbox: --fault credential-provider)' >&2\nexit 1\n");
}

absl::Status SimulatedCluster::SetCredentialProviderFailing(const ClusterNode& worker,
                                                            bool failing) {
  absl::Status removed = fs_->RemoveFile(StrCat(CredentialProviderDir(worker), "/.answered"));
  if (!removed.ok() && !absl::IsNotFound(removed)) return removed;
  // The agent runs the host's copy and finds the node's (sandbox_run.h AgentHost).
  for (const std::string& root : {std::string(), worker.root}) {
    absl::Status written =
        WriteFile(StrCat(root, CredentialProviderDir(worker), "/ecr-credential-provider"),
                  CredentialProviderScript(worker, failing), 0755);
    if (!written.ok()) return written;
  }
  return absl::OkStatus();
}

absl::Status SimulatedCluster::StartWorker(const ClusterNode& worker, const std::string& url,
                                           const ApiServerCertificates& certificates) {
  absl::Status made = EnsureDirectory(*fs_, worker.root, 0755);
  if (!made.ok()) return made;
  pki::CertificateRequest request;
  request.common_name = StrCat("system:node:", worker.spec.name);
  request.organizations = {"system:nodes"};
  request.client = true;
  request.validity = absl::Hours(24);
  absl::StatusOr<pki::KeyPair> client =
      pki::IssueCertificate(certificates.kube_ca, request, absl::Now());
  if (!client.ok()) return client.status();
  LayoutInputs inputs;
  inputs.api_server_url = url;
  inputs.kube_ca_pem = certificates.kube_ca.certificate_pem;
  WorkerLayoutInputs layout;
  layout.host_name = worker.host_name.empty() ? worker.spec.name : worker.host_name;
  layout.kubelet_client = *std::move(client);
  // The agent finds the binary through its --root and runs it on the host, as the kubelet
  // would: the model's nodes share the host's processes, so the node has it at the host's path
  // and the host has it too.
  layout.credential_provider_dir = CredentialProviderDir(worker);
  layout.credential_provider_script = CredentialProviderScript(worker, /*failing=*/false);
  absl::Status written =
      WriteFile(StrCat(CredentialProviderDir(worker), "/ecr-credential-provider"),
                layout.credential_provider_script, 0755);
  if (!written.ok()) return written;
  std::unique_ptr<FileSystem> node_fs = NewPosixFileSystem(worker.root);
  absl::Status laid = WriteWorkerLayout(*node_fs, worker.spec, inputs, layout);
  if (!laid.ok()) return laid;
  FakeImdsOptions imds;
  imds.instance_id = worker.spec.provider_id.substr(worker.spec.provider_id.rfind('/') + 1);
  imds.local_hostname = worker.spec.name;
  imds.availability_zone = worker.spec.zone;
  imds.tags = std::map<std::string, std::string>{
      {"Name", layout.host_name}, {"kubernetes.io/cluster/handoff-sandbox", "owned"}};
  absl::StatusOr<std::unique_ptr<FakeImds>> served = FakeImds::Start(std::move(imds));
  if (!served.ok()) return served.status();
  imds_[worker.spec.name] = *std::move(served);
  // Its workload runs the stand-in; its heartbeat is a second, so that the proof after a
  // restart waits a second, not the real kubelet's ten.
  return StartKubelet(worker, {"--standin", StrCat(setup_.bin_dir, "/handoff-standin"),
                               "--kubeconfig", "/etc/kubernetes/kubelet.conf",
                               "--node-lease-renew-interval", "1s"});
}

AgentHost SimulatedCluster::AgentHostOf(const ClusterNode& node) const {
  AgentHost host;
  host.files = node.root;
  host.agent_prefix = node.root;
  host.root = node.root;
  host.proc_root = StrCat(node.root, "/run/sandbox-proc");
  host.kubelet_restart_command = StrCat(Kubelet(), " restart --root ", node.root);
  host.timeout = AgentTimeout();
  auto imds = imds_.find(node.spec.name);
  const std::optional<std::string> served = InstanceMetadataOf(node);
  // Its kubelet answers on the node's address (each simulated node has its own), and its
  // instance metadata on a port of its own.
  // The simulated kubelet takes a static pod's change from its first moment: no settling after
  // its restart (a real kubelet needs kubelet.settle's default).
  host.local_settings = StrCat("kubelet:\n  healthzUrl: http://", node.spec.ip, ":",
                               kSimulatedKubeletHealthzPort, "/healthz\n  settle: 0s\n");
  if (served || imds != imds_.end()) {
    StrAppend(&host.local_settings,
              "instanceMetadata:\n  endpoint: ", served ? *served : imds->second->endpoint(), "\n");
  }
  if (node.worker) {
    // Its Node's name and ECR registry come from its instance metadata, as on EC2; its
    // containers from the simulated kubelet's record of them.
    StrAppend(&host.local_settings, "role: worker\nworker:\n  credentialProviderBinDir: ",
              CredentialProviderDir(node), "\n  crictl: [", Kubelet(), ", crictl, --root, ",
              node.root, "]\n");
  }
  return host;
}

absl::Status SimulatedCluster::SetCloudControllerManagerUnhealthy(const ClusterNode& node,
                                                                  bool unhealthy) {
  const std::string marker =
      StrCat(node.root, "/etc/handoff-sandbox/unhealthy/cloud-controller-manager");
  if (!unhealthy) {
    absl::Status removed = fs_->RemoveFile(marker);
    return absl::IsNotFound(removed) ? absl::OkStatus() : removed;
  }
  return WriteFile(marker,
                   "the sandbox's cloud-controller-manager on this node never gets healthy\n");
}

absl::StatusOr<WorkerKubeletLook> SimulatedCluster::LookAtWorker(const ClusterNode& worker) {
  constexpr char kFlagsFile[] = "/var/lib/kubelet/kubeadm-flags.env";
  constexpr char kPodsFile[] = "/var/lib/kubelet/sandbox-pods.json";
  WorkerKubeletLook look;
  absl::StatusOr<std::string> pods = fs_->ReadFile(StrCat(worker.root, kPodsFile));
  if (!pods.ok()) return pods.status();
  const nlohmann::json state = nlohmann::json::parse(*pods, nullptr, false);
  if (!state.is_discarded() && state.contains("pods") && state["pods"].contains("workload") &&
      state["pods"]["workload"].contains("pid") &&
      state["pods"]["workload"]["pid"].is_number_integer()) {
    look.workload = StrCat("pid ", state["pods"]["workload"]["pid"].get<int64_t>());
  }
  look.source = StrCat(worker.root, kFlagsFile);
  absl::StatusOr<std::string> flags = fs_->ReadFile(look.source);
  if (!flags.ok()) return flags.status();
  // The simulated kubelet takes its flags from this file alone; the last one given wins.
  constexpr std::string_view kFlag = "--cloud-provider=";
  for (size_t at = 0; (at = flags->find(kFlag, at)) != std::string::npos; at += kFlag.size()) {
    const size_t begin = at + kFlag.size();
    const size_t end = flags->find_first_of(" \t\n\"", begin);
    look.cloud_provider = flags->substr(begin, end == std::string::npos ? end : end - begin);
  }
  return look;
}

void SimulatedCluster::StopKubelets() {
  if (!kubelets_started_) return;
  kubelets_started_ = false;
  std::vector<ClusterNode> every = setup_.nodes;
  every.insert(every.end(), setup_.workers.begin(), setup_.workers.end());
  for (const ClusterNode& node : every) {
    absl::StatusOr<std::unique_ptr<Process>> stop =
        setup_.spawn({Kubelet(), "stop", "--root", node.root, "--pods"},
                     StrCat(setup_.dir, "/logs/kubelet-", node.spec.name, ".log"));
    if (stop.ok()) (*stop)->WaitFor(absl::Seconds(15), nullptr);
  }
  imds_.clear();
}

}  // namespace handoff::sandbox
