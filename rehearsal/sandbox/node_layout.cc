#include "rehearsal/sandbox/node_layout.h"

#include <cstdio>
#include <utility>

#include "absl/strings/escaping.h"
#include "common/base/strings.h"
#include "common/fs/atomic_file.h"

namespace handoff::sandbox {

// Generated from templates/ by CMake (sandbox_templates.cc).
std::string SandboxTemplate(const std::string& name);

namespace {

std::string ReplaceAll(std::string text, const std::string& from, const std::string& to) {
  size_t at = 0;
  while ((at = text.find(from, at)) != std::string::npos) {
    text.replace(at, from.size(), to);
    at += to.size();
  }
  return text;
}

absl::Status Write(FileSystem& fs, const std::string& path, const std::string& content,
                   unsigned mode = 0644) {
  size_t slash = path.rfind('/');
  if (slash != std::string::npos && slash > 0) {
    absl::Status made = EnsureDirectory(fs, path.substr(0, slash), 0755);
    if (!made.ok()) return made;
  }
  FileInfo info;
  info.mode = mode;
  return AtomicReplace(fs, path, content, info);
}

// The container's env field, indented as the kube-controller-manager template's container, or
// "" for none. Values are YAML double-quoted scalars.
std::string EnvYaml(const std::vector<std::pair<std::string, std::string>>& env) {
  if (env.empty()) return "";
  std::string yaml = "\n    env:";
  for (const auto& [name, value] : env) {
    std::string quoted;
    for (char c : value) {
      if (c == '"' || c == '\\') quoted += '\\';
      quoted += c;
    }
    StrAppend(&yaml, "\n    - name: ", name, "\n      value: \"", quoted, "\"");
  }
  return yaml;
}

}  // namespace

std::string ManifestTemplate(const std::string& name) { return SandboxTemplate(name); }

namespace {

// Node `index` (1-based) named `name` at `ip`: zones in turn, an instance id from `instance_base`.
SandboxNode SandboxInstance(std::string name, std::string ip, int index,
                            unsigned long long instance_base) {
  static const char* const kZones[] = {"us-east-1a", "us-east-1b", "us-east-1c"};
  SandboxNode node;
  node.name = std::move(name);
  node.ip = std::move(ip);
  node.zone = kZones[(index - 1) % 3];
  char instance[32];
  // EC2 instance ids are i- and 17 hex digits.
  std::snprintf(instance, sizeof(instance), "i-%017llx",
                instance_base + static_cast<unsigned long long>(index));
  node.provider_id = StrCat("aws:///", node.zone, "/", instance);
  return node;
}

}  // namespace

SandboxNode MakeSandboxNode(int index) {
  return SandboxInstance(StrCat("cp-", index), StrCat("127.0.1.", index), index,
                         0x0c0ffee0000000000ULL);
}

SandboxNode MakeSandboxWorker(int index) {
  return SandboxInstance(StrCat("ip-127-0-2-", index, ".ec2.internal"), StrCat("127.0.2.", index),
                         index, 0x0beef000000000000ULL);
}

std::string SandboxWorkerHostName(int index) { return StrCat("w-", index); }

std::string GoDuration(absl::Duration duration) {
  int64_t ms = absl::ToInt64Milliseconds(duration);
  if (ms % 1000 == 0) return StrCat(ms / 1000, "s");
  return StrCat(ms, "ms");
}

std::string KubeconfigYaml(const std::string& server, const std::string& ca_pem,
                           const pki::KeyPair& client, const std::string& user) {
  return StrCat(
      "apiVersion: v1\nkind: Config\nclusters:\n- name: sandbox\n  cluster:\n    server: ", server,
      "\n    certificate-authority-data: ", absl::Base64Escape(ca_pem),
      "\ncontexts:\n- name: ", user, "@sandbox\n  context:\n    cluster: sandbox\n    user: ", user,
      "\ncurrent-context: ", user, "@sandbox\nusers:\n- name: ", user,
      "\n  user:\n    client-certificate-data: ", absl::Base64Escape(client.certificate_pem),
      "\n    client-key-data: ", absl::Base64Escape(client.private_key_pem), "\n");
}

absl::Status WriteNodeLayout(FileSystem& fs, const SandboxNode& node, const LayoutInputs& inputs) {
  const std::string manifests = "/etc/kubernetes/manifests/";
  for (const char* name :
       {"kube-apiserver.yaml", "kube-controller-manager.yaml", "kube-scheduler.yaml"}) {
    std::string text = ReplaceAll(SandboxTemplate(name), "@NODE_IP@", node.ip);
    text = ReplaceAll(text, "@LEASE_DURATION@", GoDuration(inputs.timing.lease_duration));
    text = ReplaceAll(text, "@RENEW_DEADLINE@", GoDuration(inputs.timing.renew_deadline));
    text = ReplaceAll(text, "@RETRY_PERIOD@", GoDuration(inputs.timing.retry_period));
    text = ReplaceAll(text, "@CONTAINER_ENV@", EnvYaml(inputs.controller_manager_env));
    absl::Status written = Write(fs, manifests + name, text);
    if (!written.ok()) return written;
  }
  const std::string kubeconfig =
      KubeconfigYaml(inputs.api_server_url, inputs.kube_ca_pem, inputs.controller_manager_client,
                     "system:kube-controller-manager");
  struct File {
    std::string path;
    std::string content;
  };
  const std::vector<File> files = {
      // The host's name, which a kubelet without the in-tree provider registers under.
      {"/etc/hostname", StrCat(node.name, "\n")},
      {"/etc/kubernetes/controller-manager.conf", kubeconfig},
      {"/etc/kubernetes/scheduler.conf", kubeconfig},
      {"/etc/kubernetes/pki/ca.crt", inputs.kube_ca_pem},
      // The in-tree provider's --cloud-config; the cloud-controller-manager is given it too.
      {"/etc/kubernetes/cloud.conf", inputs.cloud_config},
      {"/var/lib/kubelet/kubeadm-flags.env",
       "KUBELET_KUBEADM_ARGS=\"--cloud-config=/etc/kubernetes/cloud.conf --cloud-provider=aws "
       "--container-runtime-endpoint=unix:///var/run/containerd/containerd.sock "
       "--pod-infra-container-image=registry.k8s.io/pause:3.9\"\n"},
  };
  for (const File& file : files) {
    absl::Status written = Write(fs, file.path, file.content);
    if (!written.ok()) return written;
  }
  for (const auto& [path, content] : inputs.secret_files) {
    absl::Status written = Write(fs, path, content, 0600);
    if (!written.ok()) return written;
  }
  for (const char* dir :
       {"/etc/ssl/certs", "/etc/ca-certificates", "/usr/local/share/ca-certificates",
        "/usr/share/ca-certificates", "/usr/libexec/kubernetes/kubelet-plugins/volume/exec",
        "/etc/kubernetes/pki/etcd", "/var/lib/handoff", "/var/log/pods", "/run"}) {
    absl::Status made = EnsureDirectory(fs, dir, 0755);
    if (!made.ok()) return made;
  }
  return absl::OkStatus();
}

absl::Status WriteWorkerLayout(FileSystem& fs, const SandboxNode& node, const LayoutInputs& inputs,
                               const WorkerLayoutInputs& worker) {
  struct File {
    std::string path;
    std::string content;
    unsigned mode = 0644;
  };
  const std::vector<File> files = {
      {"/etc/hostname", StrCat(worker.host_name, "\n")},
      {"/etc/kubernetes/kubelet.conf",
       KubeconfigYaml(inputs.api_server_url, inputs.kube_ca_pem, worker.kubelet_client,
                      StrCat("system:node:", node.name)),
       0600},
      {"/etc/kubernetes/pki/ca.crt", inputs.kube_ca_pem},
      // kubeadm's nodeRegistration.kubeletExtraArgs {cloud-provider: aws} on a worker.
      {"/var/lib/kubelet/kubeadm-flags.env",
       "KUBELET_KUBEADM_ARGS=\"--cloud-provider=aws "
       "--container-runtime-endpoint=unix:///var/run/containerd/containerd.sock "
       "--pod-infra-container-image=registry.k8s.io/pause:3.9\"\n"},
      // The node's workload, pulled from its account's ECR registry: the kubelet needs the
      // credential provider for it once the in-tree provider is gone.
      {"/etc/kubernetes/manifests/workload.yaml",
       "apiVersion: v1\nkind: Pod\nmetadata:\n  name: workload\n  namespace: default\n"
       "spec:\n  containers:\n  - name: workload\n"
       "    image: 123456789012.dkr.ecr.us-east-1.amazonaws.com/workload:1.0\n"
       "    command:\n    - workload\n"},
      {StrCat(worker.credential_provider_dir, "/ecr-credential-provider"),
       worker.credential_provider_script, 0755},
  };
  for (const File& file : files) {
    absl::Status written = Write(fs, file.path, file.content, file.mode);
    if (!written.ok()) return written;
  }
  for (const char* dir : {"/var/lib/handoff", "/var/log/pods", "/run"}) {
    absl::Status made = EnsureDirectory(fs, dir, 0755);
    if (!made.ok()) return made;
  }
  return absl::OkStatus();
}

std::string RolloutSettingsYaml(const LeaseTiming& timing) {
  return StrCat(
      "# handoffctl sandbox: the rollout's settings, sent with every move.\n"
      "kubernetesVersion: v1.27.6\n"
      "# The downtime path checks each instance's kubernetes.io/cluster/<clusterId> tag.\n"
      "clusterId: handoff-sandbox\n"
      "cloudControllerManager:\n"
      "  image: registry.k8s.io/provider-aws/cloud-controller-manager:v1.27.1\n"
      "  extraArgs:\n"
      "    leader-elect-lease-duration: ",
      GoDuration(timing.lease_duration),
      "\n    leader-elect-renew-deadline: ", GoDuration(timing.renew_deadline),
      "\n    leader-elect-retry-period: ", GoDuration(timing.retry_period),
      "\n    # The sandbox's nodes share one network, where every cloud-controller-manager 1.27\n"
      "    # would listen on 0.0.0.0:10260 for webhooks the AWS provider does not have: off.\n"
      "    webhook-secure-port: \"0\"\n");
}

std::string ClusterSeedYaml(const std::vector<SandboxNode>& nodes,
                            const std::vector<SandboxNode>& workers) {
  // Kubernetes 1.26 bootstraps the kube-controller-manager's leader-locking Role with configmap
  // rules only (plugin/pkg/auth/authorizer/rbac/bootstrappolicy/namespace_policy.go); the
  // migration lease rules are added by `rbac apply`, as on a real cluster.
  std::string seed =
      "kind: Role\napiVersion: rbac.authorization.k8s.io/v1\nmetadata:\n"
      "  name: system::leader-locking-kube-controller-manager\n  namespace: kube-system\n"
      "rules:\n- verbs: [watch]\n  apiGroups: [\"\"]\n  resources: [configmaps]\n"
      "- verbs: [get, update]\n  apiGroups: [\"\"]\n  resources: [configmaps]\n"
      "  resourceNames: [kube-controller-manager]\n"
      "---\nkind: RoleBinding\napiVersion: rbac.authorization.k8s.io/v1\nmetadata:\n"
      "  name: system::leader-locking-kube-controller-manager\n  namespace: kube-system\n"
      "roleRef:\n  apiGroup: rbac.authorization.k8s.io\n  kind: Role\n"
      "  name: system::leader-locking-kube-controller-manager\n"
      "subjects:\n- kind: User\n  apiGroup: rbac.authorization.k8s.io\n"
      "  name: system:kube-controller-manager\n";
  for (const SandboxNode& node : nodes) {
    StrAppend(
        &seed, "---\nkind: Node\napiVersion: v1\nmetadata:\n  name: ", node.name,
        "\n  labels:\n    kubernetes.io/hostname: ", node.name,
        "\n    node-role.kubernetes.io/control-plane: \"\"\n    topology.kubernetes.io/zone: ",
        node.zone, "\nspec:\n  providerID: ", node.provider_id,
        "\n  taints:\n  - key: node-role.kubernetes.io/control-plane\n    effect: NoSchedule\n");
  }
  for (const SandboxNode& node : workers) {
    StrAppend(&seed, "---\nkind: Node\napiVersion: v1\nmetadata:\n  name: ", node.name,
              "\n  labels:\n    kubernetes.io/hostname: ", node.name,
              "\n    topology.kubernetes.io/zone: ", node.zone,
              "\nspec:\n  providerID: ", node.provider_id,
              "\nstatus:\n  conditions:\n  - type: Ready\n    status: \"True\"\n"
              "    reason: KubeletReady\n  nodeInfo:\n    kubeletVersion: v1.26.13\n");
  }
  return seed;
}

}  // namespace handoff::sandbox
