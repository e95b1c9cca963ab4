// The node side of the agent daemon, without the network: what the agent tells the coordinator
// about its node (AgentHello, NodeReport) and how it carries out the coordinator's commands
// (handoff.v1.Command) with the same transactions as `handoff-agent apply`. The gRPC stream
// lives in AgentClient; this class is tested in-process.
#ifndef HANDOFF_AGENT_DAEMON_NODE_AGENT_H_
#define HANDOFF_AGENT_DAEMON_NODE_AGENT_H_

#include <deque>
#include <functional>
#include <iosfwd>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "agent/apply/applier.h"
#include "agent/daemon/command_log.h"
#include "agent/engine/node_snapshot.h"
#include "agent/engine/settings.h"
#include "handoff/v1/handoff.pb.h"
#include "proto/vocabulary/node_state.h"

namespace handoff {

// The agent's build version, as sent in AgentHello.
extern const char kAgentVersion[];
// AgentHello.recent_results holds at most this many (handoff.proto).
inline constexpr int kHelloRecentResults = 16;

struct NodeAgentOptions {
  // This node; must be the CN of the agent's client certificate.
  std::string node_name;
  std::string agent_version = kAgentVersion;
  // The node's own layout (from the agent's --settings, or kubeadm's defaults). Every command's
  // settings keep these paths and this kubelet: the coordinator sends versions, images and
  // controllers, the same for every node, while paths and the kubelet's health address belong
  // to the node.
  NodePaths paths;
  KubeletSettings kubelet;
  // The node's role and, on a worker, its kubelet's credential provider and Node name: the
  // node's own too (its settings file's role and worker keys). A worker's agent reads and moves
  // the kubelet alone, in-tree <-> external, and says so in its hello.
  NodeRole role = NodeRole::kControlPlane;
  WorkerSettings worker;
  // How moves are carried out: verification, timeouts, the kubelet restart, backups kept.
  ApplyOptions apply;
  // The instance's identity for the reports' facts (instance_id, local_hostname,
  // availability_zone, or metadata_error saying why not), asked once per agent process, at its
  // first report. Null: not asked. handoff-agent run asks the EC2 instance metadata of its
  // settings (agent/cloud/instance_tags.h ReadInstanceIdentity).
  std::function<v1::NodeFacts()> read_instance_identity;
  // The instance's cluster tags for the reports' facts (cluster_tags, cluster_tags_known,
  // cluster_tags_error, cloud_config_cluster_id; other fields are ignored), given the identity
  // and the managers' cloud config: the kube-controller-manager's --cloud-config (else the
  // cloud-controller-manager's) and the file's text, or why it could not be read ("" and OK
  // when the managers name none). Asked at the first report once the identity has an instance
  // id, then again at the first report every cluster_tags_refresh. Null: not asked.
  // handoff-agent run asks EC2 (agent/cloud/ec2_tags.h).
  std::function<v1::NodeFacts(const v1::NodeFacts& identity, const std::string& cloud_config_path,
                              const absl::StatusOr<std::string>& cloud_config)>
      read_cluster_tags;
  absl::Duration cluster_tags_refresh = absl::Minutes(1);
  // For rehearsals and tests: how long to wait after recording a move as started and before
  // applying it, which widens the window in which a move is in progress.
  absl::Duration move_delay = absl::ZeroDuration();
};

// Thread safety: Execute and Report run one at a time (a second caller waits); Hello,
// FinishedResult and RunningCommandId may be called from any thread at any time, also while
// Execute runs. Every file-system and host access happens under one lock, so the borrowed Host
// need only be thread-compatible. Borrows the Host's parts and `log`; they must outlive it.
class NodeAgent {
 public:
  // Opens the command log under options.paths.state_dir. When it holds a move recorded as
  // started and never finished (the agent died mid-move), runs the applier's recovery (which
  // undoes the interrupted transaction, if any, as `handoff-agent recover` does) and records that
  // command as INTERRUPTED, with the node as recovery left it. Errors: the command log cannot be
  // read (DataLoss naming a damaged record).
  static absl::StatusOr<std::unique_ptr<NodeAgent>> Open(const Host& host, NodeAgentOptions options,
                                                         std::ostream& log);

  // The first message of every stream: the node name and version, the node as it is now, the
  // newest results (at most 16, oldest first), the command running now and whether moves are
  // verified. While a command runs the node is not read again (it is mid-transaction); the
  // report is the last one made.
  v1::AgentHello Hello();

  // Reads the node now: its state, the reasons it is inconsistent, and, with verification on,
  // one look (no waiting) at whether each of its components runs its manifest's argv and answers
  // its health endpoint. With verification off, healthy exactly when consistent.
  v1::NodeReport Report();

  // While the last report found the node unhealthy or inconsistent, reads it again (as Report)
  // unless a command holds it, and when its state or health changed calls `send` with the new
  // report, with the node still held, so that no command's result can overtake it. A failed
  // health probe is one look; without this, a component that answered a moment later would keep
  // the node "not healthy" until the next command or reconnect. True when `send` was called.
  bool RecheckUnhealthy(const std::function<void(const v1::NodeReport&)>& send);

  // Unless a command holds the node, reads its facts again (the manifest directory's stray
  // files, the kubelet's flags and name, the cluster tags when their refresh is due; no health
  // probe) and, when they differ from the last report's, reads the whole report and calls `send`
  // with it: what `handoffctl preflight` reads through the coordinator follows the node without
  // a command or reconnect. True when `send` was called.
  bool RecheckFacts(const std::function<void(const v1::NodeReport&)>& send);

  // Carries out `command` and returns its result. A command whose id already finished returns
  // the stored result and does nothing. MoveRequest: refused (nothing written) unless the node
  // is at `from`; otherwise recorded as started, applied as one transaction, recorded finished.
  // PlanRequest: pure planning of the chain. ReportRequest: Report(). Never fails: every problem
  // is an outcome in the result. `progress`, when given, receives what the agent proves during a
  // move before its result (ProcessesGone), from the executing thread.
  using ProgressSink = std::function<void(const v1::AgentMessage&)>;
  v1::CommandResult Execute(const v1::Command& command, const ProgressSink& progress = nullptr);

  // The stored result of a finished command, if it is among those kept.
  std::optional<v1::CommandResult> FinishedResult(const std::string& id) const;
  // The id of the command Execute is carrying out; "" when idle.
  std::string RunningCommandId() const;

  const NodeAgentOptions& options() const { return options_; }

 private:
  NodeAgent(const Host& host, NodeAgentOptions options, std::ostream& log, CommandLog commands);

  // Everything below runs with node_mutex_ held.
  void RecoverInterrupted();
  v1::NodeReport ReadReport();
  v1::CommandResult Dispatch(const v1::Command& command, const ProgressSink& progress,
                             bool* recorded);
  v1::CommandResult Move(const std::string& id, const v1::MoveRequest& move,
                         const ProgressSink& progress, bool* recorded);
  v1::CommandResult PlanMoves(const v1::PlanRequest& request);
  absl::StatusOr<Settings> CommandSettings(const std::string& yaml);
  // The node's own part of the settings (paths, kubelet, role, worker), for reading the node.
  Settings LocalSettings() const;
  void Finish(v1::CommandResult& result, bool recorded);

  // Results kept in memory: every result the command log keeps, and as many again of commands
  // that are not recorded on disk (plans, reports, refusals made before anything was written).
  struct Finished {
    v1::CommandResult result;
    bool recorded = false;
  };
  void Remember(const v1::CommandResult& result, bool recorded);
  // The report's facts: the instance's identity (read once), its cluster tags (read every
  // options_.cluster_tags_refresh) and, from `snapshot` (null when the node could not be read),
  // the stray manifest files and the kubelet's credential-provider flags. `cloud_config_path`
  // is the managers' --cloud-config ("" when none).
  v1::NodeFacts ReadFacts(const NodeSnapshot* snapshot, const std::string& cloud_config_path);
  // ReadFacts of `snapshot` with the managers' --cloud-config (the kube-controller-manager's,
  // else the parked one's or the cloud-controller-manager's) and whether the node is
  // inconsistent only for its stray files.
  v1::NodeFacts FactsOf(const absl::StatusOr<NodeSnapshot>& snapshot);
  // The name the kubelet registers under once external: `hostname_override` (its flag), else
  // the node's /etc/hostname; "" when neither is known.
  std::string KubeletNodeName(const std::string& hostname_override);

  Host host_;
  NodeAgentOptions options_;
  std::ostream& log_;

  std::mutex node_mutex_;  // held while the node or the command log is read or written
  CommandLog commands_;    // guarded by node_mutex_
  std::optional<v1::NodeFacts> identity_;  // guarded by node_mutex_; read once
  v1::NodeFacts cluster_tags_;             // guarded by node_mutex_
  std::optional<absl::Time> cluster_tags_read_;  // guarded by node_mutex_

  mutable std::mutex state_mutex_;  // guards the members below
  std::deque<Finished> finished_;   // oldest first
  std::string running_;
  v1::NodeReport last_report_;
};

}  // namespace handoff

#endif  // HANDOFF_AGENT_DAEMON_NODE_AGENT_H_
