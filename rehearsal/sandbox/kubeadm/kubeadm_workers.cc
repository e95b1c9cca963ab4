// The kubeadm cluster's workers (kubeadm_cluster_internal.h): the fake AWS's HTTPS endpoint
// they reach ECR on, their `kubeadm join`, workload and credential provider, the sandbox's look
// at their kubelets, version N+1's kubelet on them, and the credential provider's fault.
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <set>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "common/base/strings.h"
#include "common/fs/atomic_file.h"
#include "common/kube/resource.h"
#include "common/pki/pki.h"
#include "rehearsal/node/kubelet_unit.h"
#include "rehearsal/node/text_file.h"
#include "rehearsal/sandbox/kubeadm/kubeadm_cluster_internal.h"

namespace handoff::sandbox::kubeadm {

absl::Status KubeadmCluster::MakeAwsHttpsCertificate() {
  const absl::Time now = absl::Now();
  absl::StatusOr<pki::KeyPair> ca =
      pki::CreateCertificateAuthority("handoff-sandbox-aws-https-ca", now, absl::Hours(24));
  if (!ca.ok()) return ca.status();
  pki::CertificateRequest request;
  request.common_name = kubeadm::AwsHttpsNames(plan_).front();
  request.dns_names = kubeadm::AwsHttpsNames(plan_);
  request.ip_addresses = {plan_.aws_https_ip};
  request.server = true;
  request.validity = absl::Hours(24);
  absl::StatusOr<pki::KeyPair> server = pki::IssueCertificate(*ca, request, now);
  if (!server.ok()) return server.status();
  for (const auto& [name, text, mode] :
       {std::tuple{"aws-https-ca.crt", ca->certificate_pem, 0644u},
        std::tuple{"aws-https.crt", server->certificate_pem, 0644u},
        std::tuple{"aws-https.key", server->private_key_pem, 0600u}}) {
    FileInfo info;
    info.mode = mode;
    absl::Status written = AtomicReplace(*fs_, StrCat(setup_.dir, "/pki/", name), text, info);
    if (!written.ok()) return written;
  }
  return absl::OkStatus();
}

namespace {

// The agent's default worker.credentialProviderBinDir, where the operator installs the provider.
constexpr char kCredentialProviderDir[] = "/usr/libexec/kubelet-image-credential-provider-plugins";
// Beside it while --fault credential-provider is armed: there once the provider answered.
constexpr char kCredentialProviderAnswered[] = ".handoff-sandbox-answered";

}  // namespace

std::string KubeadmCluster::CredentialProviderPath(const Node& node) {
  return StrCat("/proc/", node.init_pid, "/root", kCredentialProviderDir, "/",
                real::kEcrCredentialProvider);
}

absl::Status KubeadmCluster::InstallCredentialProvider(const Node& node) {
  const std::filesystem::path path = CredentialProviderPath(node);
  std::error_code error;
  std::filesystem::create_directories(path.parent_path(), error);
  if (!error) {
    std::filesystem::create_symlink(components_.Binary(real::kEcrCredentialProvider), path, error);
  }
  if (error) {
    return absl::InternalError(StrCat("cannot install ecr-credential-provider on ", node.name,
                                      " (", path.string(), "): ", error.message()));
  }
  return absl::OkStatus();
}

absl::Status KubeadmCluster::SetCredentialProviderFailing(const ClusterNode& worker,
                                                          bool failing) {
  const Node* node = Find(worker.spec.name);
  if (node == nullptr) return absl::NotFoundError(worker.spec.name);
  const std::filesystem::path path = CredentialProviderPath(*node);
  const std::filesystem::path next = path.string() + ".handoff-sandbox-next";
  const std::filesystem::path answered = path.parent_path() / kCredentialProviderAnswered;
  std::error_code error;
  std::filesystem::remove(answered, error);
  std::filesystem::remove(next, error);
  error.clear();
  // The real provider answers the first request (the agent's check before it writes anything);
  // every later one, the agent's proof after the kubelet's restart among them, fails as the
  // provider does when ECR refuses it. Put in place by a rename, so the kubelet and the agent
  // only ever run one whole provider or the other.
  const std::string binary = components_.Binary(real::kEcrCredentialProvider);
  if (failing) {
    const std::string marker = StrCat(kCredentialProviderDir, "/", kCredentialProviderAnswered);
    FileInfo info;
    info.mode = 0755;
    absl::Status written = AtomicReplace(
        *fs_, next.string(),
        StrCat("#!/bin/sh\n# The sandbox's --fault credential-provider: one answer, then none.\n"
               "if [ ! -e ", marker, " ]; then\n  : > ", marker, "\n  exec ", binary,
               " \"$@\"\nfi\n"
               "echo 'error getting credentials: AccessDeniedException: ECR refuses this node "
               "(the sandbox: --fault credential-provider)' >&2\nexit 1\n"),
        info);
    if (!written.ok()) return written;
  } else {
    std::filesystem::create_symlink(binary, next, error);
  }
  if (!error) std::filesystem::rename(next, path, error);
  if (error) {
    return absl::InternalError(StrCat("cannot ", failing ? "break" : "put back",
                                      " ecr-credential-provider on ", node->name, " (",
                                      path.string(), "): ", error.message()));
  }
  return absl::OkStatus();
}

absl::Status KubeadmCluster::JoinWorkers(kube::KubeClient& client) {
  // Every worker's `kubeadm join` at once: each waits most of its time for its own kubelet.
  struct Join {
    const Node* node;
    bool defaults;
    std::unique_ptr<Process> run;
  };
  const std::vector<std::string> argv = {components_.Binary(real::kKubeadm), "join", "--config",
                                         kubeadm::kKubeadmConfigPath};
  std::vector<Join> joins;
  const absl::Time join_started = absl::Now();
  for (size_t i = first_worker_; i < machines_.size(); ++i) {
    if (absl::Status interrupted = Interrupted(); !interrupted.ok()) return interrupted;
    const Node& node = nodes_[i];
    // The first worker's kubelet has its cloud provider where an operator adds it beside kubeadm
    // (/etc/default/kubelet), as one control-plane node's has.
    const bool defaults = i == first_worker_;
    if (defaults) {
      absl::Status written =
          WriteNodeFile(node, kubeadm::kKubeletDefaultsPath, kubeadm::KubeletDefaults(), 0644);
      if (!written.ok()) return written;
    }
    absl::Status written = WriteNodeFile(
        node, kubeadm::kKubeadmConfigPath,
        kubeadm::WorkerJoinConfiguration(plan_, i, ca_pin_,
                                         defaults ? kubeadm::KubeletCloud::kInTreeExtraArgs
                                                  : kubeadm::KubeletCloud::kInTree),
        0600);
    if (!written.ok()) return written;
    absl::StatusOr<std::unique_ptr<Process>> run =
        StartOnNode(node, argv, StrCat("kubeadm-", node.name));
    if (!run.ok()) return run.status();
    joins.push_back({&node, defaults, *std::move(run)});
  }
  std::vector<std::string> names;
  for (Join& join : joins) {
    const Node& node = *join.node;
    absl::Status ran =
        AwaitOnNode(*join.run, node, argv, StrCat("kubeadm-", node.name), absl::Minutes(5));
    if (!ran.ok()) return ran;
    // After the join: its preflight wants /etc/kubernetes/manifests empty.
    absl::Status written = WriteNodeFile(node, kubeadm::kWorkloadManifestPath,
                                         kubeadm::WorkloadManifest(std::string(real::kWorkloadImage)));
    if (!written.ok()) return written;
    absl::Status installed = InstallCredentialProvider(node);
    if (!installed.ok()) return installed;
    setup_.say(StrCat(
        "kubeadm join (worker) on ", node.name, ": ",
        absl::FormatDuration(absl::Trunc(absl::Now() - join_started, absl::Milliseconds(100))),
        join.defaults ? StrCat("; its kubelet's --cloud-provider=aws is in ",
                               kubeadm::kKubeletDefaultsPath)
                      : std::string()));
    names.push_back(node.name);
  }
  if (names.empty()) return absl::OkStatus();
  absl::Status up = AwaitNothingWaiting("the workers are not up", [&] {
    std::vector<std::string> waiting;
    for (const std::string& name : names) {
      absl::StatusOr<kube::Json> object = client.Get(kube::ObjectRef{&kube::kNodes, "", name});
      if (!object.ok() || !ConditionTrue(*object, "Ready")) waiting.push_back(StrCat("Node ", name));
      absl::StatusOr<kube::Json> pod = client.Get(
          kube::ObjectRef{&kube::kPods, "default", StrCat(kubeadm::kWorkloadName, "-", name)});
      if (!pod.ok() || kube::StringAt(*pod, {"status", "phase"}) != "Running") {
        waiting.push_back(StrCat("default/", kubeadm::kWorkloadName, "-", name));
      }
    }
    return waiting;
  });
  if (!up.ok()) return up;
  setup_.say(StrCat(names.size(), " workers Ready, each running its workload (",
                    real::kWorkloadImage, ", imported, never pulled)"));
  return absl::OkStatus();
}

int64_t KubeadmCluster::KubeletPid(const Node& node) const {
  absl::StatusOr<std::string> answer = AskNode(node, "status", absl::Seconds(10));
  // "kubelet <pid|-> containerd <pid|->"
  if (!answer.ok()) return 0;
  std::vector<std::string_view> words = StrSplit(*answer, " ", true);
  if (words.size() < 2 || words[0] != "kubelet") return 0;
  return std::strtoll(std::string(words[1]).c_str(), nullptr, 10);
}

absl::StatusOr<WorkerKubeletLook> KubeadmCluster::LookAtWorker(const ClusterNode& worker) {
  const Node* node = Find(worker.spec.name);
  if (node == nullptr) return absl::NotFoundError(worker.spec.name);
  WorkerKubeletLook look;
  // The running kubelet's own command line, whichever files gave it.
  const int64_t pid = KubeletPid(*node);
  look.source = StrCat(node->name, "'s kubelet process (pid ", pid, " in the node)");
  if (pid > 0) {
    absl::StatusOr<std::string> cmdline =
        fs_->ReadFile(StrCat("/proc/", node->init_pid, "/root/proc/", pid, "/cmdline"));
    if (!cmdline.ok()) return cmdline.status();
    for (std::string_view arg : StrSplit(*cmdline, std::string_view("\0", 1), true)) {
      if (StartsWith(arg, "--cloud-provider=")) {
        look.cloud_provider = std::string(arg.substr(sizeof("--cloud-provider=") - 1));
      }
    }
  }
  // The workload's container as containerd has it: its id and start.
  const std::string output = Log(StrCat("crictl-", node->name));
  std::filesystem::remove(output);
  absl::Status listed = RunOnNode(*node,
                                  {"crictl", "ps", "-o", "json", "--state", "running", "--name",
                                   StrCat("^", kubeadm::kWorkloadName, "$")},
                                  StrCat("crictl-", node->name), absl::Seconds(30));
  if (!listed.ok()) return listed;
  std::optional<std::string> text = node::ReadText(output);
  const kube::Json listing =
      kube::Json::parse(text ? *text : std::string(), nullptr, /*allow_exceptions=*/false);
  if (listing.is_object() && listing.contains("containers") && listing["containers"].is_array()) {
    std::vector<std::string> running;
    for (const kube::Json& container : listing["containers"]) {
      running.push_back(StrCat("container ", container.value("id", "").substr(0, 13), " created ",
                               container.value("createdAt", "")));
    }
    // One workload: two at once (a pod being replaced) is no state to compare.
    look.workload = running.size() <= 1 ? StrJoin(running, "")
                                        : StrCat(running.size(), " running: ",
                                                 StrJoin(running, ", "));
  }
  return look;
}

absl::Status KubeadmCluster::RestartKubeletAs(const Node& node, const std::string& program) {
  for (const auto& [path, text] : node::KubeletPackageFiles(program)) {
    absl::Status written = WriteNodeFile(node, path, text);
    if (!written.ok()) return written;
  }
  return ControlNode(node, "restart-kubelet", absl::Seconds(30));
}

absl::StatusOr<std::string> KubeadmCluster::AwaitKubeletServing(kube::KubeClient& client,
                                                                const Node& node,
                                                                const std::string& version,
                                                                absl::Time since, int renewals,
                                                                absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  std::set<std::string> renew_times;
  std::string seen = "nothing yet";
  while (true) {
    absl::StatusOr<kube::Json> object = client.Get(kube::ObjectRef{&kube::kNodes, "", node.name});
    absl::StatusOr<kube::Json> lease =
        client.Get(kube::ObjectRef{&kube::kLeases, "kube-node-lease", node.name});
    if (object.ok() && lease.ok()) {
      const std::string reported = kube::StringAt(*object, {"status", "nodeInfo", "kubeletVersion"});
      std::string heartbeat;
      if (ConditionTrue(*object, "Ready")) {
        for (const kube::Json& condition : (*object)["status"]["conditions"]) {
          if (condition.value("type", "") == "Ready") {
            heartbeat = condition.value("lastHeartbeatTime", "");
          }
        }
      }
      absl::Time beat = absl::InfinitePast();
      std::string error;
      if (!heartbeat.empty()) absl::ParseTime(absl::RFC3339_full, heartbeat, &beat, &error);
      absl::Time renewed = absl::InfinitePast();
      const std::string renew_time = kube::StringAt(*lease, {"spec", "renewTime"});
      absl::ParseTime(absl::RFC3339_full, renew_time, &renewed, &error);
      // The API's times are whole seconds (heartbeats) or microseconds (the Lease).
      if (renewed >= since) renew_times.insert(renew_time);
      seen = StrCat("kubelet ", reported.empty() ? "?" : reported,
                    heartbeat.empty() ? ", not Ready" : StrCat(", Ready (heartbeat ", heartbeat, ")"),
                    ", Lease renewed ", renew_times.size(), " time(s) since");
      if (reported == version && beat >= absl::FromUnixSeconds(absl::ToUnixSeconds(since)) &&
          static_cast<int>(renew_times.size()) >= renewals) {
        return StrCat("Node ", node.name, " (uid ", kube::StringAt(*object, {"metadata", "uid"}),
                      ") Ready under kubelet ", reported, ", its Lease renewed ",
                      renew_times.size(), " times in ",
                      absl::FormatDuration(absl::Trunc(absl::Now() - since, absl::Seconds(1))));
      }
    }
    if (absl::Status interrupted = Interrupted(); !interrupted.ok()) return interrupted;
    if (absl::Now() >= deadline) {
      return absl::DeadlineExceededError(
          StrCat(node.name, "'s Node did not serve under kubelet ", version, " within ",
                 absl::FormatDuration(timeout), ": ", seen, " (its kubelet's log: ",
                 Log(StrCat("kubelet-", node.name)), ")"));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
}

absl::StatusOr<std::string> KubeadmCluster::TryNextKubelet(const ClusterNode& worker, bool moved) {
  const Node* node = Find(worker.spec.name);
  if (node == nullptr || !worker.worker) return absl::NotFoundError(worker.spec.name);
  absl::StatusOr<std::unique_ptr<kube::KubeClient>> client = AdminClient();
  if (!client.ok()) return client.status();
  absl::StatusOr<kube::Json> before = (*client)->Get(kube::ObjectRef{&kube::kNodes, "", node->name});
  if (!before.ok()) return before.status();
  const std::string uid = kube::StringAt(*before, {"metadata", "uid"});
  // The kubelet names a static pod by a hash of its defaulted manifest (the mirror pod's
  // kubernetes.io/config.hash): version N's hash, to know its workload back once it is.
  const kube::ObjectRef workload{&kube::kPods, "default",
                                 StrCat(kubeadm::kWorkloadName, "-", node->name)};
  absl::StatusOr<kube::Json> pod = (*client)->Get(workload);
  if (!pod.ok()) return pod.status();
  const std::string hash =
      kube::StringAt(*pod, {"metadata", "annotations", "kubernetes.io/config.hash"});
  const std::string log = Log(StrCat("kubelet-", node->name));
  std::error_code error;
  const uintmax_t log_size = std::filesystem::file_size(log, error);
  const absl::Time started = absl::Now();
  absl::Status restarted = RestartKubeletAs(*node, components_.File(real::kNextKubelet));
  if (!restarted.ok()) return restarted;
  std::string line;
  if (moved) {
    // Three renewals: the kubelet runs its Node for half a minute (renewInterval 10 s).
    absl::StatusOr<std::string> serving =
        AwaitKubeletServing(**client, *node, kVersionNext, started, 3, absl::Minutes(2));
    if (!serving.ok()) return serving.status();
    line = StrCat("kubelet ", kVersionNext, " on ", node->name, " (moved, --cloud-provider=external): ",
                  *serving);
  } else {
    // The refusal is in the kubelet's log ("failed to run Kubelet: unknown cloud provider").
    constexpr char kRefusal[] = "unknown cloud provider";
    const absl::Time deadline = absl::Now() + absl::Minutes(1);
    std::string refusal;
    while (refusal.empty()) {
      std::optional<std::string> text = node::ReadText(log);
      if (text && text->size() > log_size) {
        const std::string_view added = std::string_view(*text).substr(log_size);
        const size_t at = added.find(kRefusal);
        if (at != std::string_view::npos) {
          // The whole line that says it.
          const size_t newline = added.rfind('\n', at);
          const size_t begin = newline == std::string_view::npos ? 0 : newline + 1;
          const size_t end = added.find('\n', at);
          refusal = std::string(StripWhitespace(
              added.substr(begin, end == std::string_view::npos ? end : end - begin)));
        }
      }
      if (!refusal.empty()) break;
      if (absl::Status interrupted = Interrupted(); !interrupted.ok()) return interrupted;
      if (absl::Now() >= deadline) {
        return absl::FailedPreconditionError(
            StrCat("kubelet ", kVersionNext, " on ", node->name,
                   " (not moved, --cloud-provider=aws) did not refuse its cloud provider within a "
                   "minute: the negative control failed (its log: ",
                   log, ")"));
      }
      // The kubelet's log is the only sign, and a file says nothing when it grows.
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    line = StrCat("kubelet ", kVersionNext, " on ", node->name,
                  " (not moved, --cloud-provider=aws) exits, as it must: ", refusal);
  }
  // Version N back, as the operator would put it back.
  const absl::Time back = absl::Now();
  restarted = RestartKubeletAs(*node, components_.Binary(real::kKubelet));
  if (!restarted.ok()) return restarted;
  absl::StatusOr<std::string> again =
      AwaitKubeletServing(**client, *node, kVersionN, back, 1, absl::Minutes(2));
  if (!again.ok()) return again.status();
  // Until version N's kubelet has its own workload pod again, running one container: a restart
  // of the kubelet meanwhile (the next move's) would find the pod half replaced.
  absl::Status settled = AwaitNothingWaiting(
      StrCat(node->name, "'s workload is not back under kubelet ", kVersionN), [&] {
        absl::StatusOr<kube::Json> now = (*client)->Get(workload);
        const std::string now_hash =
            now.ok() ? kube::StringAt(*now, {"metadata", "annotations", "kubernetes.io/config.hash"})
                     : std::string();
        std::string container;
        if (now.ok() && (*now)["status"].contains("containerStatuses") &&
            (*now)["status"]["containerStatuses"].is_array() &&
            !(*now)["status"]["containerStatuses"].empty()) {
          container = (*now)["status"]["containerStatuses"][0].value("containerID", "");
        }
        constexpr std::string_view kScheme = "containerd://";
        if (StartsWith(container, kScheme)) container = container.substr(kScheme.size(), 13);
        absl::StatusOr<WorkerKubeletLook> look = LookAtWorker(worker);
        if (now_hash == hash && !container.empty() && ConditionTrue(*now, "Ready") && look.ok() &&
            StartsWith(look->workload, StrCat("container ", container, " "))) {
          return std::vector<std::string>{};
        }
        return std::vector<std::string>{
            StrCat(workload.ToString(), " (config hash ",
                   now_hash.empty() ? "?" : now_hash, ", want ", hash, "; container ",
                   container.empty() ? "?" : container, "; on the node ",
                   look.ok() ? look->workload : std::string(look.status().message()), ")")};
      });
  if (!settled.ok()) return settled;
  absl::StatusOr<kube::Json> after = (*client)->Get(kube::ObjectRef{&kube::kNodes, "", node->name});
  if (!after.ok()) return after.status();
  if (kube::StringAt(*after, {"metadata", "uid"}) != uid) {
    return absl::FailedPreconditionError(StrCat(node->name, "'s Node is another object (uid ", uid,
                                                " then ",
                                                kube::StringAt(*after, {"metadata", "uid"}), ")"));
  }
  return StrCat(line, "; ", kVersionN, " put back, Ready again");
}

}  // namespace handoff::sandbox::kubeadm
