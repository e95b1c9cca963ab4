// Internal to the sandbox: one rehearsal, from bring-up (bring_up.cc: directories,
// certificates, the cluster's API server, kubelets, coordinator, agents) through the scenario
// (scenario.cc: rollout, faults, rollback, or the unsafe order) to the summary (report.h) and
// the teardown. sandbox.cc runs it. Not thread-safe: one thread drives it; the status feed and
// the orphan reaper have threads of their own.
#ifndef HANDOFF_REHEARSAL_SANDBOX_SANDBOX_RUN_H_
#define HANDOFF_REHEARSAL_SANDBOX_SANDBOX_RUN_H_

#include <sys/types.h>

#include <algorithm>
#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <ostream>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/fs/file_system.h"
#include "common/pki/pki.h"
#include "common/system/clock.h"
#include "coordinator/client/coordinator_client.h"
#include "common/kube/client.h"
#include "handoff/v1/handoff.pb.h"
#include "nlohmann/json.hpp"
#include "rehearsal/sandbox/cluster.h"
#include "rehearsal/sandbox/node_layout.h"
#include "rehearsal/sandbox/process.h"
#include "rehearsal/sandbox/sandbox.h"
#include "rehearsal/sandbox/status_feed.h"

namespace handoff::sandbox {

// The coordinator's gRPC server name in its certificate.
inline constexpr char kCoordinatorServerName[] = "localhost";

// Whether the rollout has members and every one is at `state` (scenario.cc).
bool AllAt(const v1::RolloutStatus& status, v1::NodeState state);

class SandboxRun {
 public:
  SandboxRun(const SandboxOptions& options, std::ostream& out, std::ostream& err,
             const std::function<bool()>& interrupted)
      : options_(options), out_(out), err_(err), interrupted_(interrupted) {}
  ~SandboxRun() { TearDown(); }
  SandboxRun(const SandboxRun&) = delete;
  SandboxRun& operator=(const SandboxRun&) = delete;

  // The whole rehearsal; the exit code (sandbox.h).
  int Run();

 private:
  struct NodeRun {
    ClusterNode node;
    std::unique_ptr<Process> agent;
    int metrics_port = 0;  // its agent's --metrics-listen port, kept across restarts
    const SandboxNode& spec() const { return node.spec; }
    const std::string& root() const { return node.root; }
  };

  // --- bring_up.cc
  std::string Path(const std::string& relative) const;
  std::string Bin(const std::string& name) const;
  // handoffctl, whose `sandbox` command this is.
  std::string Handoffctl() const;
  absl::Status WriteFile(const std::string& path, const std::string& content,
                         unsigned mode = 0644);
  // Writes `path` of a node as the node sees it (`host` tells where its "/" is).
  absl::Status WriteNodeFile(const AgentHost& host, const std::string& path,
                             const std::string& content, unsigned mode = 0644);
  // The directories, the nodes, the binaries' presence; then the cluster of options_.cluster.
  absl::Status Setup();
  absl::Status MakeCertificates();
  // The cluster (cluster.h Start): its API server, nodes and kubelets, admin.conf, the
  // rollout's settings.
  absl::Status StartCluster();
  absl::Status WaitForCloudControllers(absl::Duration timeout);
  // A client of the API server as the cluster's admin (admin.conf).
  absl::StatusOr<std::unique_ptr<kube::KubeClient>> AdminClient();
  absl::Status ApplyRbac();
  absl::Status StartCoordinator();
  absl::Status StartAgent(NodeRun& node);
  absl::Status RestartAgent(NodeRun& node, bool kill);
  // Where the coordinator is and the operator's certificate, as handoffctl resolves them.
  absl::Status ResolveOperatorEndpoint();
  // A client of the coordinator, as handoffctl makes one: a new channel each time, so that a
  // restarted coordinator is dialled afresh.
  std::unique_ptr<ctl::OperatorClient> ConnectOperator() const;
  void TearDown();
  // Process::Spawn, remembering the pid so that the reaper leaves it to its Process.
  absl::StatusOr<std::unique_ptr<Process>> SpawnOwned(const std::vector<std::string>& argv,
                                                      const std::string& log);
  // The sandbox is the subreaper of everything it starts (pods outlive the kubelet that started
  // them): this reaps the orphans that become its children, leaving its own to their Process.
  void ReapOrphans();

  // --- scenario.cc
  // How long `moves` moves one after another may take on this cluster (at least a minute).
  absl::Duration ForMoves(int moves) const {
    return std::max(absl::Seconds(60), moves * cluster_->MoveBudget());
  }
  int RunRollout();
  int RunUnsafeOrder();
  // --kubeadm-upgrade: the move, finalize, kubeadm's upgrade and a join after it.
  int RunKubeadmUpgrade();
  // --strategy replace: the rollout and the rollback by replacement (replacement_run.cc).
  int RunReplacement();
  absl::Status ReplaceForwardAndBack();
  // Does what the coordinator's replacement asks for (a machine to join, a node to reset and
  // delete), as an operator's automation would, until every member is at `goal`.
  absl::Status ServeReplacement(v1::NodeState goal);
  absl::Status JoinSpare(NodeRun& spare, v1::NodeState join_state);
  absl::Status RemoveMember(const std::string& name);
  // The node of that name, a member or a spare; null when there is none.
  NodeRun* FindNode(const std::string& name);
  absl::Status UpgradeAndJoinAfterTheMove();
  // Runs `handoffctl <args>` as the operator runs it, to its end; its output in logs/<log>.log.
  absl::Status RunHandoffctl(const std::vector<std::string>& args, const std::string& log);
  // That every one of `nodes` runs kube-controller-manager `version` with --cloud-provider=external
  // and a cloud-controller-manager, as the API server's mirror pods show them.
  absl::Status CheckExternalControlPlanes(const std::vector<std::string>& nodes,
                                          const std::string& version);
  // Prints what `handoffctl status` says now (the CLI run as an operator runs it).
  void ShowOperatorStatus();
  // Each daemon's /metrics, saved in metrics/ (coordinator.prom, agent-<node>.prom); the
  // summary's lines about them.
  std::vector<std::string> ScrapeMetrics();
  // The state each rollout goes to (SandboxOptions::goal; finalized on the downtime path).
  v1::NodeState Goal() const;
  // One scenario: the rollout with `fault` injected on the way, the check of the nodes'
  // providerIDs, and the rollback to in-tree, until a kube-controller-manager runs the cloud
  // controllers again.
  absl::Status RunScenario(Fault fault);
  // `settle`: false when the scenario waited for the control plane before planting its fault.
  absl::Status StartRollout(v1::NodeState goal, bool settle = true);
  // An operator's start (Call) once the cluster's control plane settled (cluster.h
  // AwaitControlPlaneSettled; not waited for with `settle` false); on the kubeadm cluster asked
  // again for up to 30 s while only the control-plane check refuses it (a mirror pod the kubelet
  // replaced may be Pending again for a moment).
  absl::Status StartSettled(const std::string& what,
                            const std::function<absl::Status(ctl::OperatorClient&)>& start,
                            bool settle = true);

  // --- preflight_run.cc
  // `handoffctl preflight` against the cluster (admin.conf, `settings` or "" for the rollout's)
  // and the coordinator, as an operator runs it.
  std::vector<std::string> PreflightArgv(const std::string& settings, bool json) const;
  // Before a fault-free rollout on the real components: its table in
  // logs/handoffctl-preflight.txt. FailedPrecondition with the table when a check fails.
  absl::Status RunPreflight();
  // One run with -o json: its table.
  absl::StatusOr<nlohmann::json> PreflightTable(const std::string& settings);
  // Runs preflight until its table is `done` (what the checks read follows the cluster within
  // seconds), or DeadlineExceeded with the last table after `timeout`.
  absl::Status AwaitPreflight(const std::string& what, const std::string& settings,
                              const std::function<bool(const nlohmann::json&)>& done,
                              absl::Duration timeout);
  // --fault preflight: no check fails on the healthy cluster; each failure of the field planted
  // on `target` in turn (its host renamed, its instance's cluster tag removed in the fake AWS, a
  // pod from ECR on it, an in-tree EBS volume, leader election off in the settings, a .bak in
  // its manifest directory, the cloud-controller-manager's RoleBinding deleted) fails exactly
  // its check, naming the object; removed, no check fails again.
  absl::Status RehearsePreflight(NodeRun& target);
  absl::Status InjectStrayBackup(NodeRun& target);
  // kubelet-unsynced: the target's kubelet restarted with no route to the API server before the
  // rollout; once the rollout is done, the proof that the agent stopped the process that kubelet
  // left running, and the route back.
  absl::Status CutKubeletOff(NodeRun& target);
  absl::Status ReconnectKubelet(NodeRun& target);
  // The node whose move to `goal` the coordinator's plan sends first (the second node if the plan
  // cannot be had).
  NodeRun& FirstToMove(v1::NodeState goal);
  // Waits for the rollout to be done with every node at `goal`, then checks what it must show
  // there (the measured outage of a downtime rollout, the providerIDs after a cloud-controller-
  // manager ran).
  absl::Status AwaitAllDone(v1::NodeState goal);
  // Waits for the rollout to be done with every node at `goal` (`what` names it in a timeout),
  // or to halt on the way there: then Aborted with the halt's reason, at once.
  absl::StatusOr<v1::RolloutStatus> AwaitGoal(v1::NodeState goal, const std::string& what);
  absl::Status RunUnhealthyScenario();
  absl::Status NoteDowntime(const v1::RolloutStatus& done);
  absl::Status RollBackToInTree();
  // Waits until `node`'s move to `to` is under way on the node; the move's command id.
  absl::StatusOr<std::string> AwaitMoveUnderWay(NodeRun& node, v1::NodeState to);
  // agent-kill, kubelet-kill, coordinator-kill: kill -9 the process during `node`'s move to `to`
  // (and start the agent or the coordinator again; the kubelet's service manager restarts it).
  absl::Status KillMidMove(Fault fault, NodeRun& node, v1::NodeState to);
  absl::Status CheckProviderIds();
  // An operator call, "handoffctl <what>", said when it succeeds; its error names `what`.
  absl::Status Call(const std::string& what,
                    const std::function<absl::Status(ctl::OperatorClient&)>& call);
  // Waits for `done`, printing progress; an error naming what it waited for on timeout.
  absl::StatusOr<v1::RolloutStatus> Await(
      const std::string& what, const std::function<bool(const v1::RolloutStatus&)>& done,
      absl::Duration timeout);

  // --- worker_checks.cc
  // What the sandbox sees of a worker, beside its agent's proofs.
  struct WorkerLook {
    std::string uid;          // its Node's
    std::string provider_id;  // its Node's
    WorkerKubeletLook kubelet;
  };
  absl::StatusOr<WorkerLook> LookAtWorker(kube::KubeClient& client, const NodeRun& worker);
  // How `look` differs from `worker`'s baseline for a kubelet that should take
  // --cloud-provider=`cloud_provider`: its flag, its Node's uid and providerID, its workload; one
  // line each, none when it is as it should be.
  std::vector<std::string> WorkerDifferences(const NodeRun& worker, const WorkerLook& look,
                                             const std::string& cloud_provider);
  // Before the first rollout: each worker as it is (its workload running).
  absl::Status RecordWorkerBaseline();
  // After a rollout (`external`: its goal takes the workers external) or a rollback: every
  // worker's kubelet flags say so, each Node is the same object with its providerID, and no
  // workload was restarted; the summary gets a line.
  absl::Status CheckWorkers(bool external);
  // On a cluster of real kubelets, once per run each way: version N+1's kubelet on an unmoved
  // worker (it must refuse --cloud-provider=aws: the negative control) or on a moved one (its
  // Node must stay Ready), then version N's again; the summary gets the line. OK at once
  // elsewhere.
  absl::Status TryNextKubelet(bool moved);

  // --- worker_faults.cc
  // The scenario of the worker faults (sandbox.h), together in one rollout, each on a worker of
  // its own in the order given: the preflight on the real clusters, the rollout with each fault
  // striking its worker, each pause for a failed worker checked (CheckFailedWorkersAsTheyWere),
  // its fault lifted and the rollout resumed; the 1.27 kubelet on a moved worker, the rollback.
  absl::Status RunWorkerScenario(const std::vector<Fault>& faults);
  // Waits until `worker`'s agent has recorded a move to external that is not among `before`
  // (the ids it had recorded) and not finished; its id.
  absl::StatusOr<std::string> AwaitWorkerMoveUnderWay(NodeRun& worker,
                                                      const std::set<std::string>& before);
  // Every worker a paused rollout names as failed runs its kubelet as before the rollout: aws,
  // the same Node, its workload never restarted.
  absl::Status CheckFailedWorkersAsTheyWere(const v1::RolloutStatus& paused);

  // --- sandbox.cc (report.h does the text)
  void Say(const std::string& line);
  void ShowProgress(const v1::RolloutStatus& status);
  int Summarise(bool completed, const std::string& outcome);

  const SandboxOptions& options_;
  std::ostream& out_;
  std::ostream& err_;
  std::function<bool()> interrupted_;

  std::string dir_;
  std::string bin_dir_;
  std::unique_ptr<FileSystem> fs_;  // rooted at "/"
  absl::Time started_;
  LeaseTiming timing_;
  std::vector<NodeRun> nodes_;
  // Machines that join later (ClusterSetup::spares), with their agents once they have joined.
  std::vector<NodeRun> spares_;
  // The worker nodes (ClusterSetup::workers), each with its agent.
  std::vector<NodeRun> workers_;
  std::map<std::string, WorkerLook> worker_baseline_;  // by Node name
  std::vector<std::string> worker_lines_;              // for the summary
  std::set<bool> next_kubelet_tried_;                  // TryNextKubelet's `moved`, once each
  size_t spares_used_ = 0;
  // The kubeadm-config applies done so far ("external", "prepared"): each once per direction.
  std::set<std::string> kubeadm_config_applied_;
  std::unique_ptr<SandboxCluster> cluster_;

  ApiServerCertificates certificates_;
  std::unique_ptr<Clock> clock_;
  std::unique_ptr<Process> coordinator_;
  int coordinator_port_ = 0;
  int coordinator_metrics_port_ = 0;  // kept across restarts, like the agents'
  ctl::CoordinatorEndpoint operator_endpoint_;
  std::unique_ptr<StatusFeed> feed_;
  // The downtime strategy's outage, as the coordinator reported it when the rollout was done.
  std::string downtime_;
  std::string last_progress_;
  bool operator_status_shown_ = false;  // ShowOperatorStatus ran (a failed run shows it once)
  bool torn_down_ = false;
  std::mutex owned_mu_;
  std::set<pid_t> owned_;
  std::atomic<bool> reaping_{false};
  std::thread reaper_;
};

}  // namespace handoff::sandbox

#endif  // HANDOFF_REHEARSAL_SANDBOX_SANDBOX_RUN_H_
