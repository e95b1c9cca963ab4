// The cluster under the sandbox: its API server and nodes, how the sandbox reaches a node to run
// that node's agent, and the invariant monitor's view of the managers. The sandbox's bring-up of
// the coordinator and agents, its scenario and its report are the same for every cluster; only
// this differs:
//   model    the in-process fake API server and stand-in controller-managers that record what
//            they run, on simulated nodes (model_cluster.h);
//   real     etcd, kube-apiserver 1.26, kube-controller-manager 1.26 and the
//            aws-cloud-controller-manager 1.27 against a fake AWS, on simulated nodes
//            (real_cluster.h);
//   kubeadm  a kubeadm-built HA control plane: every node a set of namespaces with its own
//            containerd and real kubelet, a load balancer in front of the API servers, real
//            1.26 and 1.27 components (kubeadm/kubeadm_cluster.h).
// NewSandboxCluster is the one place that chooses between them.
#ifndef HANDOFF_REHEARSAL_SANDBOX_CLUSTER_H_
#define HANDOFF_REHEARSAL_SANDBOX_CLUSTER_H_

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/base/strings.h"
#include "common/pki/pki.h"
#include "rehearsal/monitor/monitor.h"
#include "rehearsal/sandbox/lease_holders.h"
#include "rehearsal/sandbox/node_layout.h"
#include "rehearsal/sandbox/process.h"

namespace handoff::sandbox {

enum class ClusterKind { kModel, kReal, kKubeadm };

// "model", "real", "kubeadm"; false for anything else.
bool ParseClusterKind(const std::string& name, ClusterKind* kind);

struct ClusterNode {
  SandboxNode spec;
  std::string root;  // the node's directory on the host (absolute)
  // A worker (ClusterSetup::workers): no control-plane role, only its kubelet moves; its agent
  // runs with role: worker.
  bool worker = false;
  // A worker's host name, which is not its Node's name ("" = the Node's).
  std::string host_name;
};

// What the sandbox has made before it chooses its cluster. Every path is absolute.
struct ClusterSetup {
  std::string dir;      // the sandbox's directory; logs/ and records/ exist under it
  std::string bin_dir;  // where handoff-standin, handoff-sandbox-kubelet, ... are
  LeaseTiming timing;   // every manager's leader-election timing
  std::vector<ClusterNode> nodes;
  // Machines launched with the others but not part of the cluster yet: each joins later
  // (SandboxCluster::JoinWithKubeadm). Only the kubeadm cluster has any.
  std::vector<ClusterNode> spares;
  // The worker nodes (--workers), each with a kubelet and a workload; the model and kubeadm
  // clusters have them.
  std::vector<ClusterNode> workers;
  bool keep = false;  // --keep: the directory stays after the run
  // --network: the kubeadm cluster's /24 ("" = kDefaultKubeadmNetwork), already checked.
  std::string network;
  // A progress line for the operator ("[12.3s] ..." is added by the sandbox).
  std::function<void(const std::string&)> say;
  // Starts a process with its output appended to `log`, as the sandbox's own child (it reaps
  // every orphan but its own children).
  std::function<absl::StatusOr<std::unique_ptr<Process>>(const std::vector<std::string>& argv,
                                                         const std::string& log)>
      spawn;
  // True once the operator interrupted the run (SIGINT, SIGTERM): a long bring-up stops early.
  std::function<bool()> interrupted = [] { return false; };
};

// The credentials the sandbox made before the cluster starts (MakeCertificates): the simulated
// clusters' API server is served with them and every client of it has a certificate from
// `kube_ca`. The kubeadm cluster has kubeadm make its own.
// What the sandbox sees of a worker on the worker itself, beside what its agent proves.
struct WorkerKubeletLook {
  // The --cloud-provider its kubelet takes (the last one given wins), "" when none.
  std::string cloud_provider;
  std::string source;  // where that was read, for messages
  // Its workload's process or container, as an id that stays the same while it is never
  // restarted; "" when it is not running.
  std::string workload;
};

struct ApiServerCertificates {
  pki::KeyPair kube_ca;           // with its private key, to issue more
  pki::KeyPair admin;             // CN kubernetes-admin, O system:masters
  pki::KeyPair controller_manager;  // CN system:kube-controller-manager
  std::string client_ca_file;     // kube_ca's certificate
  std::string serving_cert_file;  // issued by kube_ca for localhost and 127.0.0.1
  std::string serving_key_file;
};

// Where and how a node's agent runs, seen from the sandbox.
struct AgentHost {
  // Runs a command on the node: prepended to the command's argv ({} for a node that is a
  // directory on the host).
  std::vector<std::string> prefix;
  // The node's "/" as the host sees it, to write the agent's files (its configuration and
  // certificate) and read what the agent writes.
  std::string files;
  // The agent's own view of a path of its node ("/etc/handoff/agent.yaml"): `files` + path for
  // a node that is a directory on the host, the path itself on a node of its own.
  std::string agent_prefix;
  // handoff-agent run --root ("" for a node of its own: "/"), --proc-root ("" = /proc).
  std::string root;
  std::string proc_root;
  // --kubelet-restart-command: what restarts this node's kubelet.
  std::string kubelet_restart_command;
  // The address the agent's /metrics listens on, which the sandbox can reach.
  std::string metrics_host = "127.0.0.1";
  // --timeout: how long the agent waits for each component to restart healthy.
  std::string timeout = "15s";
  // The node's own settings for the agent (kubelet.healthzUrl, instanceMetadata.endpoint):
  // the YAML body; "" = the defaults, which fit a real node.
  std::string local_settings;
};

// How a spare machine joins with kubeadm (SandboxCluster::JoinWithKubeadm):
//   kNextExternal   at version N+1, its kubelet `cloud-provider: external`: after the move, or
//                   forward in a replacement (kube-system/kubeadm-config applied external);
//   kPreviousInTree at version N, its kubelet with the in-tree provider: back in a rollback by
//                   replacement (kubeadm-config applied --to prepared, /etc/leadermigration.conf
//                   written on the machine first).
enum class KubeadmJoin { kNextExternal, kPreviousInTree };

// What a client of the cluster's etcd needs (the coordinator's --etcd-endpoint and its files).
struct EtcdAccess {
  std::vector<std::string> endpoints;  // "https://172.31.250.10:2379", ...
  std::string ca_file;                 // on the host
  std::string cert_file;
  std::string key_file;
};

// Used by the sandbox's main thread only; borrowed by nothing.
class SandboxCluster {
 public:
  virtual ~SandboxCluster() = default;

  // Brings the cluster up: the API server and every node with its files and kubelet, until the
  // nodes' managers have started. Writes <dir>/admin.conf (the cluster admin's kubeconfig,
  // which the coordinator and the sandbox use) and <dir>/settings.yaml (the rollout's
  // settings). An error says what did not start and where its log is.
  virtual absl::Status Start(const ApiServerCertificates& certificates) = 0;

  // The address the coordinator listens on, which every node's agent can reach.
  virtual std::string CoordinatorHost() const = 0;
  // Where the coordinator's certificate must name it too ("" = only localhost and 127.0.0.1).
  virtual std::string CoordinatorAltIp() const { return ""; }

  virtual AgentHost AgentHostOf(const ClusterNode& node) const = 0;

  // --fault unhealthy: the node's cloud-controller-manager never gets healthy (true) or starts
  // as usual again (false).
  virtual absl::Status SetCloudControllerManagerUnhealthy(const ClusterNode& node,
                                                          bool unhealthy) = 0;
  // --fault preflight: removes (`tagged` false) or puts back the kubernetes.io/cluster/<id> tag
  // of the node's instance in the fake AWS. Unimplemented where no fake AWS runs.
  virtual absl::Status SetInstanceTagged(const ClusterNode& node, bool /*tagged*/) {
    return absl::UnimplementedError(StrCat("--fault preflight needs --cluster real or kubeadm: ",
                                           node.spec.name, "'s instance is not in a fake AWS"));
  }
  // --fault kubelet-kill: kills the node's kubelet with SIGKILL; it starts again as its service
  // manager restarts it. Unimplemented where the kubelet is not a real one.
  // What systemd does for `kubeadm reset` on a real host (`systemctl stop kubelet`): stops the
  // node's kubelet for good (its containers keep running) and returns once it has exited.
  virtual absl::Status StopKubelet(const ClusterNode& node) {
    return absl::UnimplementedError(
        StrCat(node.spec.name, "'s kubelet is a simulated one: only --cluster kubeadm stops it"));
  }
  virtual absl::Status KillKubelet(const ClusterNode& node) {
    return absl::UnimplementedError(
        StrCat("--fault kubelet-kill and worker-kubelet-kill need --cluster kubeadm: ",
               node.spec.name, "'s kubelet is a simulated one"));
  }

  // --fault kubelet-unsynced: `cut` takes the node's route to the API endpoint away, !`cut` gives
  // it back; either way the node's kubelet is restarted, and cut off it never reads all its pod
  // sources.
  // Unimplemented where the kubelet is not a real one.
  virtual absl::Status CutKubeletOff(const ClusterNode& node, bool /*cut*/) {
    return absl::UnimplementedError(StrCat("--fault kubelet-unsynced needs --cluster kubeadm: ",
                                           node.spec.name, "'s kubelet is a simulated one"));
  }

  // --kubeadm-upgrade, after the move and `kubeadm-config apply`: the real `kubeadm upgrade
  // apply` to version N+1 on the first of `members`, then `kubeadm upgrade node` on each other,
  // with version N+1's kubeadm, as the operator runs them. Unimplemented where kubeadm did not
  // build the cluster.
  virtual absl::Status UpgradeWithKubeadm(const std::vector<ClusterNode>& members) {
    return absl::UnimplementedError(StrCat("--kubeadm-upgrade needs --cluster kubeadm: ",
                                           members.size(), " nodes kubeadm did not build"));
  }
  // `kubeadm join --control-plane` of `spare` (ClusterSetup::spares) as `join` says, with that
  // version's kubeadm: what an operator runs to add a node.
  virtual absl::Status JoinWithKubeadm(const ClusterNode& spare, KubeadmJoin /*join*/) {
    return absl::UnimplementedError(
        StrCat("joining ", spare.spec.name, " needs --cluster kubeadm"));
  }
  // `kubeadm reset --force` on `member` with the kubeadm of the version it joined at: its etcd
  // member removed, its static pods stopped, kubeadm's files gone; what an operator runs on a
  // machine before terminating it.
  virtual absl::Status ResetWithKubeadm(const ClusterNode& member) {
    return absl::UnimplementedError(
        StrCat("resetting ", member.spec.name, " needs --cluster kubeadm"));
  }
  // --fault credential-provider: `failing` makes the worker's ecr-credential-provider answer one
  // more request as it did and fail every one after it (as when ECR stops answering mid-move);
  // !`failing` puts the provider back as it was.
  virtual absl::Status SetCredentialProviderFailing(const ClusterNode& worker, bool /*failing*/) {
    return absl::UnimplementedError(
        StrCat("--fault credential-provider needs workers: ", worker.spec.name, " is none"));
  }
  // The worker's kubelet and workload as the node shows them now.
  virtual absl::StatusOr<WorkerKubeletLook> LookAtWorker(const ClusterNode& worker) {
    return absl::UnimplementedError(StrCat(worker.spec.name, ": this cluster has no workers"));
  }
  // Version N+1's real kubelet (1.27) started on `worker` through its unit, as a package upgrade
  // installs it, then version N's again. `moved`: the worker is external, and its Node must stay
  // the same object and Ready under the 1.27 kubelet; otherwise the 1.27 kubelet must refuse its
  // --cloud-provider=aws and exit ("unknown cloud provider"), the negative control. A summary line
  // of what was seen; an error when it is not so. Unimplemented where the kubelets are simulated.
  virtual absl::StatusOr<std::string> TryNextKubelet(const ClusterNode& worker, bool /*moved*/) {
    return absl::UnimplementedError(
        StrCat(worker.spec.name, "'s kubelet is no real one: no 1.27 kubelet to start there"));
  }
  // The cluster's etcd, once Start has run; nullopt where the sandbox cannot reach one.
  virtual std::optional<EtcdAccess> Etcd() const { return std::nullopt; }
  // Before an operator's start: waits until every member's Node is Ready and its static pods
  // Running and Ready, as the coordinator's control-plane check wants them (a rollback or a join
  // that just finished restarted them; their mirror pods catch up seconds later). OK at once
  // where the control plane is no static pods.
  virtual absl::Status AwaitControlPlaneSettled() { return absl::OkStatus(); }

  // The sandbox started `pid` on the host (the coordinator, a command): a cluster that must
  // leave the host as it found it even when the sandbox dies keeps track of it.
  virtual void StartedOnHost(pid_t /*pid*/) {}

  // The invariant monitor, brought up to `now`: which cloud controller ran in which manager,
  // and whether one ever ran in two at once. The reference stays valid until the next Poll. A
  // read error keeps the previous report (the next poll tries again).
  virtual const MonitorReport& Poll(absl::Time now) = 0;

  // From `t` on, the monitor counts the handover gaps; before it the cluster was coming up.
  virtual void CountGapsFrom(absl::Time t) = 0;

  // The longest one move of one node may take on this cluster: the sandbox's waits are built
  // from it.
  virtual absl::Duration MoveBudget() const = 0;

  // Each change of holder of the leader-election leases so far, in time order, for the timeline:
  // from the same records the monitor reads (the model's stand-ins write lease records; the real
  // managers' are read from their logs), and for the real clusters also the API server's view
  // (kObserved). Empty when the records cannot be read.
  virtual std::vector<LeaseHolderChange> LeaseHolders() const = 0;

  // One line per component the cluster runs, with its version, for the summary.
  virtual std::vector<std::string> ComponentLines() const = 0;

  // Extra lines for the summary (the kubeadm cluster: how long each component of each node was
  // down while the kubelet restarted it).
  virtual std::vector<std::string> SummaryLines() const { return {}; }

  // Stops everything Start started and undoes what it changed on the host. Idempotent; the
  // destructor stops too.
  virtual void Stop() = 0;
};

// The cluster of `kind`. UnimplementedError for a kind this build cannot run.
absl::StatusOr<std::unique_ptr<SandboxCluster>> NewSandboxCluster(ClusterKind kind,
                                                                  const ClusterSetup& setup);

}  // namespace handoff::sandbox

#endif  // HANDOFF_REHEARSAL_SANDBOX_CLUSTER_H_
