// Internal to the kubeadm cluster (kubeadm_cluster.h): its class, which two sources share:
// kubeadm_cluster.cc (the machines, their network, kubeadm on the control plane, the fake AWS, the
// monitor) and kubeadm_workers.cc (the workers: their join, credential provider and kubelets,
// and what the sandbox does to them).
#ifndef HANDOFF_REHEARSAL_SANDBOX_KUBEADM_KUBEADM_CLUSTER_INTERNAL_H_
#define HANDOFF_REHEARSAL_SANDBOX_KUBEADM_KUBEADM_CLUSTER_INTERNAL_H_

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/base/strings.h"
#include "common/fs/file_system.h"
#include "common/kube/client.h"
#include "common/system/clock.h"
#include "rehearsal/monitor/process_watcher.h"
#include "rehearsal/node/node_enter.h"
#include "rehearsal/node/node_spec.h"
#include "rehearsal/real/components.h"
#include "rehearsal/real/fake_aws.h"
#include "rehearsal/sandbox/cluster.h"
#include "rehearsal/sandbox/kubeadm/host_changes.h"
#include "rehearsal/sandbox/kubeadm/kubeadm_cluster.h"
#include "rehearsal/sandbox/kubeadm/node_files.h"
#include "rehearsal/sandbox/manager_monitor.h"
#include "rehearsal/sandbox/process.h"

namespace handoff::sandbox::kubeadm {

// The versions the rehearsal moves between.
inline constexpr const char* kVersionN = kKubeadmVersionN;
inline constexpr const char* kVersionNext = kKubeadmVersionNext;

// Whether `object` has the condition `type` with status True.
bool ConditionTrue(const kube::Json& object, std::string_view type);

struct Node {
  std::string name;
  std::string ip;
  std::string dir;  // on the host
  std::unique_ptr<Process> boot;
  int64_t init_pid = 0;  // the host pid of the node's first process
  std::string netns;     // readlink /proc/<init>/ns/net
  node::BootSpec spec;
};

class KubeadmCluster : public SandboxCluster {
 public:
  KubeadmCluster(const ClusterSetup& setup, real::Components components);
  ~KubeadmCluster() override { Stop(); }

  absl::Status Start(const ApiServerCertificates& certificates) override;

  std::string CoordinatorHost() const override { return network_.BridgeIp(); }
  std::string CoordinatorAltIp() const override { return network_.BridgeIp(); }

  AgentHost AgentHostOf(const ClusterNode& cluster_node) const override {
    AgentHost host;
    const Node* node = Find(cluster_node.spec.name);
    const int64_t pid = node != nullptr ? node->init_pid : 0;
    host.prefix = EnterPrefix(pid);
    host.files = StrCat("/proc/", pid, "/root");
    host.agent_prefix = "";
    host.kubelet_restart_command = StrCat(NodeBinary(), " restart-kubelet");
    host.metrics_host = cluster_node.spec.ip;
    // A real kube-apiserver restart leaves its node without one for up to 45 s; the kubelet
    // restarts every other pod 11-15 s after its manifest changed, but holds back one whose pod
    // comes back unchanged within minutes (the same manifest, so the same pod UID, with its old
    // exited container still there) under a CrashLoopBackOff that doubles each time up to 5 min:
    // the fifth rollback to in-tree in one run waited 2m13s. The agent's own default covers it.
    host.timeout = "6m";
    // A worker's agent takes every other setting's default: the Node's name and the ECR registry
    // from the instance metadata, crictl as /etc/crictl.yaml sets it up, the credential
    // provider where it is installed (InstallCredentialProvider).
    if (cluster_node.worker) host.local_settings = "role: worker\n";
    return host;
  }

  absl::Status AwaitControlPlaneSettled() override {
    absl::StatusOr<std::unique_ptr<kube::KubeClient>> admin = AdminClient();
    if (!admin.ok()) return admin.status();
    return AwaitControlPlaneReady(**admin, joined_);
  }

  absl::Status SetInstanceTagged(const ClusterNode& node, bool tagged) override {
    return real::TagInstance(aws_, node.spec.name, tagged);
  }

  absl::Status SetCloudControllerManagerUnhealthy(const ClusterNode& cluster_node,
                                                  bool unhealthy) override;

  absl::Status KillKubelet(const ClusterNode& cluster_node) override {
    return ControlNode(cluster_node, "kill-kubelet", absl::Seconds(10));
  }

  absl::Status StopKubelet(const ClusterNode& cluster_node) override {
    return ControlNode(cluster_node, "stop-kubelet", absl::Seconds(30));
  }

  absl::Status CutKubeletOff(const ClusterNode& cluster_node, bool cut) override;

  const MonitorReport& Poll(absl::Time now) override {
    // The watcher looks at /proc on its own thread.
    if (watcher_) FollowNewPodLogs(now);
    return monitor_.Poll(now);
  }

  void CountGapsFrom(absl::Time t) override { monitor_.CountGapsFrom(t); }
  // A move that restarts the kube-apiserver (up to 45 s without one), three other components
  // (11-15 s each: the kubelet's backoff) and the kubelet (with its settle).
  // A move may wait out the kubelet's CrashLoopBackOff (AgentHostOf).
  absl::Duration MoveBudget() const override { return absl::Minutes(7); }

  std::vector<LeaseHolderChange> LeaseHolders() const override { return monitor_.LeaseHolders(); }

  absl::StatusOr<WorkerKubeletLook> LookAtWorker(const ClusterNode& worker) override;
  absl::StatusOr<std::string> TryNextKubelet(const ClusterNode& worker, bool moved) override;
  absl::Status SetCredentialProviderFailing(const ClusterNode& worker, bool failing) override;

  absl::Status UpgradeWithKubeadm(const std::vector<ClusterNode>& members) override;
  absl::Status JoinWithKubeadm(const ClusterNode& spare, KubeadmJoin join) override;
  absl::Status ResetWithKubeadm(const ClusterNode& member) override;
  std::optional<EtcdAccess> Etcd() const override { return etcd_; }

  void StartedOnHost(pid_t pid) override {
    if (changes_) (void)changes_->Started(kubeadm::CurrentProcess(pid));
  }

  std::vector<std::string> ComponentLines() const override;
  std::vector<std::string> SummaryLines() const override;

  void Stop() override;

 private:
  const Node* Find(const std::string& name) const {
    for (const Node& node : nodes_) {
      if (node.name == name) return &node;
    }
    return nullptr;
  }
  // Sends `command` to the node's service manager (node_init.h); an error unless it answers "ok".
  absl::Status ControlNode(const ClusterNode& cluster_node, const std::string& command,
                           absl::Duration timeout) const {
    const Node* node = Find(cluster_node.spec.name);
    if (node == nullptr) return absl::NotFoundError(cluster_node.spec.name);
    return ControlNode(*node, command, timeout);
  }
  absl::Status ControlNode(const Node& node, const std::string& command,
                           absl::Duration timeout) const {
    absl::StatusOr<std::string> answer = AskNode(node, command, timeout);
    if (!answer.ok()) return answer.status();
    if (!StartsWith(*answer, "ok")) return absl::UnavailableError(*answer);
    return absl::OkStatus();
  }
  // The service manager's answer to `command`, whatever it is.
  absl::StatusOr<std::string> AskNode(const Node& node, const std::string& command,
                                      absl::Duration timeout) const {
    return node::SendControl(StrCat("/proc/", node.init_pid, "/root", node::kControlSocket),
                             command, timeout);
  }
  std::string NodeBinary() const { return StrCat(setup_.bin_dir, "/handoff-sandbox-node"); }
  std::string NodePath() const {
    return StrCat(components_.dir,
                  "/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin");
  }
  std::vector<std::string> EnterPrefix(int64_t pid) const {
    return {
        NodeBinary(), "enter", "--pid", std::to_string(pid), "--env", StrCat("PATH=", NodePath()),
        "--"};
  }
  std::string Log(const std::string& name) const {
    return StrCat(setup_.dir, "/logs/", name, ".log");
  }
  // Runs `argv` on `node` to its end; an error with the log's last lines unless it exits 0.
  absl::Status RunOnNode(const Node& node, const std::vector<std::string>& argv,
                         const std::string& log_name, absl::Duration timeout);
  // RunOnNode in two halves, for commands that run on several nodes at once: the start, then the
  // wait for its end (`argv` and `log_name` as started, for the messages).
  absl::StatusOr<std::unique_ptr<Process>> StartOnNode(const Node& node,
                                                       const std::vector<std::string>& argv,
                                                       const std::string& log_name);
  absl::Status AwaitOnNode(Process& run, const Node& node, const std::vector<std::string>& argv,
                           const std::string& log_name, absl::Duration timeout);
  // Runs `command` on the host to its end (ip); an error naming it unless it exits 0.
  absl::Status RunOnHost(const std::vector<std::string>& argv);
  absl::Status WriteNodeFile(const Node& node, const std::string& path, const std::string& text,
                             unsigned mode = 0644);

  absl::Status CheckHost();
  absl::Status MakeBridge();
  absl::StatusOr<Node> BootNode(const std::string& name, const std::string& dir, bool services);
  absl::Status Connect(Node& node, const std::string& ip, int index);
  absl::Status StartFakeAws();
  absl::Status StartLoadBalancer();
  absl::Status ImportImages();
  // The fake AWS's HTTPS certificate, from a CA of the run's own (pki/aws-https-*.pem).
  absl::Status MakeAwsHttpsCertificate();
  absl::Status RunKubeadm();
  // `kubeadm join` of every worker, its workload, its credential provider; waits until each
  // worker's Node is Ready and its workload runs.
  absl::Status JoinWorkers(kube::KubeClient& client);
  // ecr-credential-provider (the components') where the agent's settings look for it: the
  // operator's install.
  absl::Status InstallCredentialProvider(const Node& node);
  // Where the node's ecr-credential-provider is, as the host reaches it.
  static std::string CredentialProviderPath(const Node& node);
  // The node's kubelet unit starting `program` from now on (as a package upgrade replaces the
  // binary), and the kubelet restarted.
  absl::Status RestartKubeletAs(const Node& node, const std::string& program);
  // The pid (in the node) of its kubelet now, 0 when none runs.
  int64_t KubeletPid(const Node& node) const;
  // Waits until the worker's Node reports `version` of the kubelet, Ready, with a heartbeat and
  // `renewals` renewals of its Lease after `since`; a line of what was seen.
  absl::StatusOr<std::string> AwaitKubeletServing(kube::KubeClient& client, const Node& node,
                                                  const std::string& version, absl::Time since,
                                                  int renewals, absl::Duration timeout);
  // Cancelled once the operator interrupted the run.
  absl::Status Interrupted() const;
  // Asks `waiting` every half second (the API server's objects change without telling) until it
  // names nothing: DeadlineExceeded after 3 minutes, naming what `waiting` named last and `what`.
  absl::Status AwaitNothingWaiting(const std::string& what,
                                   const std::function<std::vector<std::string>()>& waiting) const;
  // A client of the API server as the cluster's admin (admin.conf, once kubeadm init wrote it).
  absl::StatusOr<std::unique_ptr<kube::KubeClient>> AdminClient() const;
  // Waits until the etcd mirror pods of `nodes` carry their client URL.
  absl::Status AwaitEtcdMirrorPods(kube::KubeClient& client,
                                   const std::vector<std::string>& nodes) const;
  // Waits until every one of `nodes` is Ready and its static pods (etcd, kube-apiserver,
  // kube-controller-manager, kube-scheduler) are Running and Ready, as the preflight's
  // control-plane check wants them before a start: a node just joined is neither for seconds.
  absl::Status AwaitControlPlaneReady(kube::KubeClient& client,
                                      const std::vector<std::string>& nodes) const;
  absl::Status WriteSettings();
  // Follows each manager's pod log that appeared since the last poll, once the process that
  // wrote it is known.
  void FollowNewPodLogs(absl::Time now);

  // Runs kubeadm of version N+1 (`next`) or N with `args` on the node named `name`.
  absl::Status RunKubeadmOn(const std::string& name, bool next,
                            const std::vector<std::string>& args, absl::Duration timeout);
  // The etcd client files kubeadm made on the first node, copied beside the run (etcd_).
  absl::Status KeepEtcdAccess();

  const ClusterSetup setup_;
  // setup_.nodes, then setup_.spares, then setup_.workers: nodes_[i] and plan_.nodes[i] are
  // machines_[i].
  std::vector<ClusterNode> machines_;
  size_t first_worker_ = 0;
  // "sha256:<hex>" of the cluster CA's public key, once kubeadm init made it.
  std::string ca_pin_;
  // The nodes joined and not reset, in the order they joined, and whether each joined with
  // version N+1's kubeadm (which then also resets it).
  std::vector<std::string> joined_;
  std::map<std::string, bool> joined_next_;
  std::optional<EtcdAccess> etcd_;
  const real::Components components_;
  std::unique_ptr<FileSystem> fs_;  // rooted at "/"
  std::unique_ptr<Clock> clock_;
  // FailedPrecondition: `user` ("name (address)") has an address in the run's network.
  absl::Status NetworkInUse(const std::string& user) const {
    return absl::FailedPreconditionError(
        StrCat("the kubeadm sandbox's network ", network_.Cidr(), " is in use here (", user,
               "): another kubeadm sandbox runs on it, or it is someone else's; give another "
               "with --network"));
  }

  KubeadmNetwork network_;
  kubeadm::ClusterPlan plan_;
  std::string run_id_;
  std::string bridge_;
  std::optional<kubeadm::HostChanges> changes_;
  Node lb_;
  std::vector<Node> nodes_;
  std::unique_ptr<Process> haproxy_;
  std::unique_ptr<Process> fake_aws_;
  real::FakeAws aws_;
  std::unique_ptr<ManagerProcessWatcher> watcher_;
  ManagerMonitor monitor_;
  std::set<std::string> followed_logs_;  // the managers' pod logs the pump follows
  int64_t unknown_pids_ = 0;
  std::vector<std::string> versions_;  // containerd, runc, haproxy
  bool stopped_ = false;
};

}  // namespace handoff::sandbox::kubeadm

#endif  // HANDOFF_REHEARSAL_SANDBOX_KUBEADM_KUBEADM_CLUSTER_INTERNAL_H_
