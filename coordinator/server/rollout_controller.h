// The coordinator's core: the rollout as it stands (goal, operator control, each node's state and
// agent, the move in flight), kept durable in the Store, and advanced one safe move at a time with
// the rollout engine (coordinator/rollout). No gRPC here: agents are reached through AgentLink,
// operators call the methods directly, so tests drive it in-process.
//
// Every event (an agent's hello, result or disconnect, an operator call, new cluster facts) is
// handled under one mutex: update the state, commit it with its history entries, then ask the
// engine for the next step and, for a move, commit the move as in flight *before* sending it (so a
// coordinator that dies right after sending still knows a move may be under way).
//
// After a restart nothing moves until every node's agent has said hello: the stored states are
// only what the agents last said, and a node may have changed since (asked for "first").
//
// The implementation is split by job: rollout_controller.cc (events, the engine's moves, the
// operators' decisions), rollout_controller_plans.cc (PlanRollout's fan-out to the agents) and
// rollout_controller_status.cc (the status feed); the pure parts live in coordinator/rollout.
//
// Thread safety: every public method may be called from any thread. AgentLink::Send and Close
// are called with the controller's mutex held; they must only queue and never call back. The
// gRPC server calls the controller from a thread of its own (controller_thread.h) and answers
// `status` from LatestStatus, so a slow commit never holds a gRPC reactor.
#ifndef HANDOFF_COORDINATOR_SERVER_ROLLOUT_CONTROLLER_H_
#define HANDOFF_COORDINATOR_SERVER_ROLLOUT_CONTROLLER_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/system/clock.h"
#include "coordinator/preflight/cluster_checks.h"
#include "coordinator/preflight/node_checks.h"
#include "coordinator/rollout/lease_holders.h"
#include "coordinator/rollout/plan_simulation.h"
#include "coordinator/rollout/preflight.h"
#include "coordinator/rollout/replacement.h"
#include "coordinator/rollout/rollout_engine.h"
#include "coordinator/rollout/worker_rollout.h"
#include "coordinator/server/coordinator_events.h"
#include "coordinator/store/store.h"
#include "handoff/v1/handoff.pb.h"
#include "proto/vocabulary/node_state.h"

namespace handoff::server {

namespace pb = ::handoff::v1;

// One agent's stream, as the controller sees it.
class AgentLink {
 public:
  virtual ~AgentLink() = default;
  // Queues `message` for the agent; dropped when the stream is gone.
  virtual void Send(const pb::CoordinatorMessage& message) = 0;
  // Ends the stream with `status` (after what is queued).
  virtual void Close(const absl::Status& status) = 0;
  // The peer's address, for the operator.
  virtual std::string Peer() const = 0;
};

// What the coordinator learned of the cluster from outside the nodes.
struct FactsReport {
  bool rbac_ready = false;
  // The migration lease is held, unexpired; by a manager on `lease_holder_node`.
  bool lease_held = false;
  std::string lease_holder_node;
  // The hosts of the managers validly holding their main leases now ("" for nobody). With the
  // migration lease's holder they order the moves of a phase (rollout::LeaseHolders).
  std::string kube_controller_manager_holder_node;
  std::string cloud_controller_manager_holder_node;
  // Each lease validly held now, with its holder's identity: recorded before a move, it is what
  // the lease release checks the lease against afterwards.
  struct HeldLease {
    std::string lease;      // its name, in kube-system
    std::string identity;   // holderIdentity ("<hostname>_<uuid>")
    std::string host;       // the hostname in it
    std::string component;  // the manager holding it: "kube-controller-manager", ...
  };
  std::vector<HeldLease> held;
  std::string source;  // "kubernetes" or "assumed"
  std::string detail;
  // What a replacement checks before it takes a leaving node out (rollout/replacement.h): for
  // each node asked about (RolloutController::LeavingNodes), whether the API server still has
  // its Node object (a node not in the map was not read: why in node_objects_detail); and etcd's
  // members by name, nullopt when not read (why in etcd_members_detail).
  std::map<std::string, bool> node_objects;
  std::string node_objects_detail;
  std::optional<std::vector<std::string>> etcd_members;
  std::string etcd_members_detail;
  std::string etcd_members_source;  // the endpoint whose member list it is
  // Unix ms when the read began; 0: when the controller received the report.
  int64_t read_unix_ms = 0;
  // What the preflight's cluster checks read (coordinator/preflight/cluster_checks.h), at most
  // KubeFactsSource's preflight interval old; null before the first read and with
  // --no-cluster-checks. Shared, never changed: each report points at the last read.
  std::shared_ptr<const preflight::ClusterView> cluster_view;
};

// Told of each move as it is sent and of what its agent proves on the way (the lease release
// listens). Called with the controller's mutex held: it must only queue (RecordAudit later, from
// another thread, is fine).
class MoveListener {
 public:
  virtual ~MoveListener() = default;
  // A move was sent to `node`; `facts` are the last ones read, before the move.
  virtual void MoveSent(const std::string& node, const std::string& command_id,
                        const FactsReport& facts) = 0;
  // The node's agent proved the old processes of a component gone, during the move in flight.
  virtual void ProcessesGone(const std::string& node, const pb::ProcessesGone& proof) = 0;
};

// Whether a lease holder's hostname names a node (rollout/lease_holders.h).
using rollout::HostnameMatchesNode;

struct ControllerOptions {
  // The control-plane nodes a new rollout begins with, in rollout order (membership changes
  // later: AddNode, RemoveNode).
  std::vector<std::string> nodes;
  std::string settings_yaml;       // sent with every move and plan
  // How long Plan waits for the agents' diffs.
  absl::Duration plan_timeout = absl::Seconds(30);
  // Borrowed; may be null. Must outlive the controller.
  MoveListener* move_listener = nullptr;
  // Told of the moves' results, the agents' hellos and the operators' goals (the metrics).
  // Borrowed; may be null. Must outlive the controller.
  CoordinatorEvents* events = nullptr;
  // Whether the facts come from the cluster and change with moves (the leases): then no move is
  // sent until facts read after the last move's result arrive (WantsFacts says when to read).
  bool fresh_facts_after_moves = false;
  // History entries kept: once the newest entry's sequence passes this many (and a batch more),
  // the oldest are deleted. 0 keeps every entry.
  int64_t history_keep = 100000;
  // What one node's agent can add to the history (connect, disconnect, report, second-agent):
  // a bucket of this many entries, refilled by one every agent_entry_interval. Entries beyond
  // it are counted, not written, and the count goes into the node's next entry.
  int agent_entry_burst = 30;
  absl::Duration agent_entry_interval = absl::Seconds(2);
  // Reads the preflight's cluster view now (KubeFactsSource::ReadClusterViewNow). A start the
  // last view (up to its interval old) refuses is judged again on a view read at that moment:
  // what the operator just fixed, or the kubelet just settled, is not held against it. Called
  // without the controller's mutex held; null (or returning null): no second read.
  std::function<std::shared_ptr<const preflight::ClusterView>()> read_cluster_view;
};

// A bucket of history entries: `burst` at most at once, refilled by one every `interval`; an
// entry beyond it is counted, not written (ControllerOptions::agent_entry_burst). Not
// thread-safe: the controller's mutex guards it.
class EntryBudget {
 public:
  // Whether an entry may be written at `now_ms`; one more not written when not.
  bool Admit(int64_t now_ms, int burst, absl::Duration interval);
  // The entries refused since the last admitted one, then none.
  int64_t TakeNotWritten();

 private:
  double tokens_ = -1;  // -1: full, not yet used
  int64_t tokens_ms_ = 0;
  int64_t not_written_ = 0;
};

// What a Start changes of the workers' policy (rollout/worker_rollout.h); each part unset keeps
// the rollout's (one at a time, a failure budget of 1 for a new one).
struct WorkerPolicyChange {
  std::optional<rollout::MaxUnavailable> max_unavailable;
  std::optional<int> failure_budget;  // at least 1
};

// PlanRollout's answer arrives later (the agents compute the diffs); `done` is called once,
// from some thread, without the controller's mutex held.
using PlanCallback = std::function<void(absl::StatusOr<pb::PlanRolloutResponse>)>;

class RolloutController {
 public:
  // Loads the rollout from `store` (or starts a new, idle one). Refuses when a stored rollout
  // names other nodes than `options.nodes` (unless they are the nodes its membership began as
  // before AddNode/RemoveNode changed it: the stored membership is then taken), or when it is
  // under way with other settings. Borrows store and clock, which must outlive the controller.
  static absl::StatusOr<std::unique_ptr<RolloutController>> Create(store::Store& store,
                                                                   Clock& clock,
                                                                   ControllerOptions options);
  ~RolloutController();

  // --- agents ---
  // An agent said hello on `link` as `node` (its identity already checked against its
  // certificate). Sends the Welcome on `link` (before any command), or returns an error to end
  // the stream with. A node that is not a member becomes a candidate: shown in the status and
  // the node list, recorded once in the history ("join-request"), never moved, forgotten when
  // its stream ends, until AddNode; beyond kMaxCandidates at once it is refused
  // (FailedPrecondition). A newer stream from
  // the same agent process (AgentHello.instance_id) replaces the older one, which is closed; one
  // from another process while the node's stream is live is refused (FailedPrecondition), shown
  // in the node's status and recorded in the history once per live stream.
  absl::Status AgentConnected(const std::string& node, const pb::AgentHello& hello,
                              std::shared_ptr<AgentLink> link);
  // A message after the hello.
  void AgentMessage(const std::string& node, const AgentLink* link,
                    const pb::AgentMessage& message);
  // The stream ended (a stream already replaced is ignored).
  void AgentDisconnected(const std::string& node, const AgentLink* link);

  // --- the cluster ---
  void SetFacts(const FactsReport& facts);
  // True while the next move waits for facts read after the last move's result, and while the
  // node a replacement asked to leave has not been looked up yet.
  bool WantsFacts();
  // The nodes a replacement waits to see gone, from the moment it asks until they have left: the
  // facts say whether their Node objects remain, and etcd's members.
  std::vector<std::string> LeavingNodes();
  // Adds an entry to the audit history (the lease release's decisions); `kind` names it.
  void RecordAudit(const std::string& kind, const std::string& node, const std::string& message,
                   const std::string& detail_json);
  // Time passed: expires plans that waited too long, re-evaluates.
  void Tick();
  // Halts the rollout under way (R5) for what the coordinator saw itself (the live double-run
  // detector): history entry `kind` with `detail_json` (the evidence). Returns false, recording
  // nothing, when no rollout is moving (none started, done, or already halted).
  bool Halt(const std::string& kind, const std::string& reason, const std::string& detail_json);
  // The live double-run detector's long gaps going on: each cloud controller no manager has run
  // for longer than its limit, and since when (unix ms); empty once each runs again. While one
  // lasts no move starts (rollout::Control::no_runner; not on the downtime strategy, whose outage
  // it is), unless the operator set a goal or resumed since it began.
  void SetLongGaps(const std::map<std::string, int64_t>& gaps);
  // Whether a time with no manager running the cloud controllers is the operator's choice now:
  // a rollout by the downtime strategy is under way (not done). The detector's long gaps are then
  // recorded, not halting.
  bool OutageAccepted();

  // --- operators --- (actor: the operator certificate's CN, recorded in the history)
  // Refused (FailedPrecondition, nothing moved) while a preflight check fails
  // (rollout/preflight.h), except those named in `ignore_preflight` ("all": every one), each
  // skipped one written to the history with the operator's `ignore_reason`.
  // The downtime strategy (rollout/rollout_engine.h) takes only the goal finalized; a start that
  // changes the strategy measures the outage afresh. The replace strategy (Leader Migration by
  // replacing nodes, rollout/replacement.h) takes only the goal migrated, and keeps the control
  // plane at the members it has now: a candidate in the state the replacement asks for joins by
  // itself
  // ("node-added" by the coordinator), and a node it asked to leave ("leave-requested", stored:
  // the one it waits for until it has left, whatever it reports meanwhile) is taken out once its
  // agent is gone and neither the API server nor etcd lists it ("node-removed").
  // `workers`: how many workers move at once and after how many failed ones the rollout pauses
  // (rollout/worker_rollout.h W4, W5), stored with the rollout.
  absl::StatusOr<pb::RolloutStatus> Start(const std::string& actor, NodeState goal,
                                          const std::vector<std::string>& ignore_preflight = {},
                                          Strategy strategy = Strategy::kLeaderMigration,
                                          const std::string& ignore_reason = "",
                                          const WorkerPolicyChange& workers = {});
  absl::StatusOr<pb::RolloutStatus> Pause(const std::string& actor, const std::string& reason);
  absl::StatusOr<pb::RolloutStatus> Resume(const std::string& actor);
  absl::StatusOr<pb::RolloutStatus> Abort(const std::string& actor, const std::string& reason);
  // A downtime rollout rolls back along its own path (--to in-tree); --to prepared is refused
  // while a node is stopped or external, and otherwise continues with Leader Migration.
  // `replace`: back by replacing nodes (nodes of version N join with Leader Migration); a
  // rollback without it goes on in place.
  absl::StatusOr<pb::RolloutStatus> Rollback(const std::string& actor, NodeState to,
                                             bool replace = false);
  absl::StatusOr<pb::RolloutStatus> Finalize(const std::string& actor);
  // Membership (rollout/membership.h). The candidate `node` joins, last in the rollout's order,
  // when CheckJoin allows (FailedPrecondition with its rule otherwise; NotFound when no such
  // candidate is connected); the normal moves then bring it to the goal. The member `node` leaves
  // when CheckLeave allows. Each is a history entry ("node-added", "node-removed", with `reason`)
  // committed with the new membership; the first change also records the nodes the membership
  // began as (store::StoredRollout::launch_nodes).
  absl::StatusOr<pb::RolloutStatus> AddNode(const std::string& actor, const std::string& node,
                                            const std::string& reason);
  absl::StatusOr<pb::RolloutStatus> RemoveNode(const std::string& actor, const std::string& node,
                                               const std::string& reason);
  // The moves `goal` (kInconsistent: the current goal, or migrated) would take, and the agents'
  // diffs; `done` receives the answer.
  // `strategy`: the path to plan along; nullopt: the rollout's own.
  void PlanRollout(NodeState goal, PlanCallback done,
                   std::optional<Strategy> strategy = std::nullopt);
  pb::RolloutStatus Status();
  // The status as of the controller's last event, without its mutex: what a caller that must not
  // wait on a commit (a gRPC reactor) answers with. Its updated_unix_ms says when it was built.
  pb::RolloutStatus LatestStatus() const;
  absl::StatusOr<pb::HistoryResponse> History(int64_t after_sequence, int limit);
  // Every node by name (members, candidates, workers, and the Nodes without an agent), at most
  // `limit` (0: all) after the name `after`.
  pb::NodesResponse Nodes(int limit = 0, const std::string& after = "");

  // Calls `watcher` with the latest status at once, then with every new one (revision changed),
  // under a lock of the status feed's own (never the controller's mutex, so a watch begins while a
  // commit is under way): it must only queue. Returns a token for Unwatch.
  int Watch(std::function<void(const pb::RolloutStatus&)> watcher);
  void Unwatch(int token);

 private:
  // A node: what is stored of it (name, state, goal_start, last_result; Commit records that
  // part as it is), and what lives only while this coordinator runs. The engine reads it as
  // rollout::NodeStatus (EngineNode), operators as the wire's NodeProgress and NodeInfo.
  struct Node : store::StoredNode {
    std::vector<std::string> reasons;
    bool healthy = false;
    std::string health_detail;
    // What only the node can see (NodeReport.facts), each text bounded; for the preflight.
    pb::NodeFacts facts;
    bool said_hello = false;  // its agent said hello since this coordinator started
    bool verifies = false;
    std::string agent_version;
    int64_t last_seen_unix_ms = 0;
    std::shared_ptr<AgentLink> link;  // null while disconnected
    std::string instance_id;          // of the agent process on `link` (AgentHello.instance_id)
    // Another agent process with this node's certificate, refused while `link` is live.
    struct SecondAgent {
      std::string peer;  // its latest address
      int64_t refusals = 0;
      int64_t first_unix_ms = 0;
      int64_t last_unix_ms = 0;
    };
    std::optional<SecondAgent> second_agent;
    // What its agent may still add to the history (ControllerOptions::agent_entry_burst).
    EntryBudget entries;
    // From its last report, for the preflight.
    std::string kube_controller_manager_version;
    std::vector<std::string> unfinished_transactions;
    bool join_recorded = false;  // a candidate's "join-request" entry is written
  };
  // A worker (rollout_controller_workers.cc): a node as its agent reports it, with what is
  // stored of a worker beyond a node's (store::StoredWorker).
  struct Worker : Node {
    std::string zone;  // its instance's availability zone, as its agent last said
    std::optional<store::InFlight> in_flight;
    std::string failure;  // why its last move failed since the goal was set; "" when none
    bool leaving = false;  // a replacement asked it to leave (rollout/worker_replacement.h)
  };
  // Candidates (nodes that are not members) whose agents are connected, at most this many.
  static constexpr size_t kMaxCandidates = 16;
  // A PlanRollout waiting for its agents' diffs (rollout_controller_plans.cc).
  struct PendingPlan {
    int64_t id = 0;
    pb::PlanRolloutResponse response;
    PlanCallback done;
    absl::Time deadline;
    std::map<std::string, size_t> outstanding;  // command id → index in response.nodes
  };
  // The engine's view of the rollout (rollout/rollout_engine.h), built from the controller's
  // record once per decision and passed to whatever reads it.
  struct EngineView {
    std::vector<rollout::NodeStatus> nodes;
    rollout::ClusterFacts facts;
    rollout::Control control;
  };

  RolloutController(store::Store& store, Clock& clock, ControllerOptions options);

  // Everything below expects mu_ held.
  // Takes up `stored` (or, without one, a new rollout of options_.nodes).
  void Restore(std::optional<store::StoredRollout> stored);
  Node* FindNode(const std::string& name);  // a member
  Node* FindCandidate(const std::string& name);
  // A worker's agent (rollout_controller_workers.cc). WorkerConnected: the hello of an agent that
  // says it runs on a worker; an error ends its stream (the node is a control-plane member, or a
  // second agent). WorkerMessage and WorkerDisconnected: false when `name` is no known worker.
  absl::Status WorkerConnected(const std::string& name, const pb::AgentHello& hello,
                               const std::shared_ptr<AgentLink>& link);
  bool WorkerMessage(const std::string& name, const AgentLink* link,
                     const pb::AgentMessage& message);
  bool WorkerDisconnected(const std::string& name, const AgentLink* link);
  // Takes up the stored workers (those named as members are control-plane nodes now: skipped).
  void RestoreWorkers(std::vector<store::StoredWorker> stored);
  // The workers as the rollout engine reads them (rollout/worker_rollout.h): every known worker,
  // then each Node the cluster view lists without an agent.
  std::vector<rollout::WorkerStatus> WorkerStatuses() const;
  rollout::WorkerPolicy WorkerPolicyNow() const;
  // W2's count: workers external or in transition.
  size_t ExternalWorkerCount() const;
  size_t WorkersInFlight() const;
  // Records each of `decision`'s workers' move as in flight, in one commit, then sends them; the
  // workers CheckWorkerMove refuses are left out (logged). False when nothing was sent.
  bool SendWorkerMoves(const rollout::WorkerDecision& decision, const EngineView& view);
  void FinishWorkerMove(Worker& worker, const pb::CommandResult& result,
                        std::vector<store::HistoryEntry>& history);
  // On a worker's hello: settles its move in flight, as SettleInFlight does a member's, except
  // that a worker found neither old nor new is a failure of its own (W5), not a halt.
  void SettleWorkerInFlight(Worker& worker, const pb::AgentHello& hello,
                            std::vector<store::HistoryEntry>& history);
  void FailWorker(Worker& worker, const std::string& why,
                  std::vector<store::HistoryEntry>& history);
  // An operator's decision (a goal, a resume) retries the failed workers: their failures cleared,
  // and what it did appended to `message`.
  void ClearWorkerFailures(std::string& message);
  // From a new cluster view: the Nodes without an agent, the Node problems of the upgrade gate,
  // and the known workers whose Node is gone (forgotten, with an entry, when their agent is away
  // and no move is in flight).
  void TakeClusterView();
  pb::WorkerSummary WorkerSummary() const;
  pb::UpgradeGate UpgradeGateNow(const EngineView& view) const;
  // The workers' next step (rollout_controller_worker_replacement.cc): NextWorkers, or for the
  // replace strategy NextWorkerReplacement, which is kept in worker_replacement_ for the status.
  rollout::WorkerDecision DecideWorkers(const EngineView& view,
                                        const std::vector<rollout::WorkerStatus>& workers);
  // A replacement's kRetire: each worker named marked leaving, with an entry, committed; on
  // failure nothing changed.
  absl::Status AskWorkersToLeave(const rollout::WorkerDecision& decision);
  // Why a worker at the goal's state `target` does not serve yet; "" when it does.
  std::string UnverifiedReason(const Worker& worker, NodeState target) const;
  // The replacement's part of the workers' summary: counts, names, the commands.
  pb::WorkerReplacement WorkerReplacementStatus() const;
  // The workers a replacement that starts now keeps: every one listed and not asked to leave.
  size_t WorkersToKeep() const;
  // The stored part of a worker.
  static store::StoredWorker StoredOf(const Worker& worker);
  // One node of Nodes(): a member, a candidate or a worker.
  void FillNodeInfo(const Node& node, pb::NodeRole role, pb::NodeInfo& info) const;
  // Whether `node`'s agent may add `entry` to the history now (its bucket); when it may and
  // earlier ones were not written, says so in `entry`.
  bool AdmitAgentEntry(Node& node, store::HistoryEntry& entry);
  // What the next entry admitted says of the `count` a budget refused before it.
  std::string NotWrittenNote(int64_t count, const std::string& whose) const;
  // Deletes the entries older than options_.history_keep before `newest`, in batches.
  void ForgetOldHistory(int64_t newest);
  // Counts a second agent's refused stream from `peer` and says why, for the stream's end.
  absl::Status RefuseSecondAgent(Node& node, const std::string& peer);
  // The node's second_agent as one line for the operator; "" when none.
  static std::string SecondAgentText(const Node& node);
  int64_t NowMs() const;
  store::HistoryEntry Entry(const std::string& actor, const std::string& kind,
                            const std::string& node, const std::string& message) const;
  // The coordinator's entry about `move` (its node and command id).
  store::HistoryEntry MoveEntry(const std::string& kind, const store::InFlight& move,
                                const std::string& message) const;
  // Commits the rollout and `history`; on failure halts (in memory) and returns the error.
  absl::Status Commit(std::vector<store::HistoryEntry> history);
  // The checks before `start` (rollout/preflight.h).
  // `downtime`: for the downtime strategy (no Leader Migration checks).
  std::vector<rollout::PreflightProblem> RunPreflight(const EngineView& view,
                                                      bool downtime = false) const;
  // Whether the preflight, on the cluster view last read, refuses a start (`ignore` skipped).
  bool ClusterViewRefuses(bool downtime, const std::vector<std::string>& ignore);
  // Sets a new goal (an operator's decision: clears a halt and a pause).
  absl::StatusOr<pb::RolloutStatus> SetGoal(const std::string& actor, const std::string& kind,
                                            NodeState goal);
  void ApplyReport(Node& node, const pb::NodeReport& report);
  // The result of the move in flight.
  void FinishMove(Node& node, const pb::CommandResult& result,
                  std::vector<store::HistoryEntry>& history);
  // On hello: settles the move in flight to `node` from what the agent says.
  void SettleInFlight(Node& node, const pb::AgentHello& hello,
                      std::vector<store::HistoryEntry>& history);
  // Settles a move the agent has no record of, from the state its node reports: not received
  // (sent again, or dropped if no longer allowed), took effect, or neither (halts).
  void SettleUnanswered(Node& node, const store::InFlight& move,
                        std::vector<store::HistoryEntry>& history);
  // The one translation of the controller's nodes into the engine's (and the preflight's) shape.
  rollout::NodeStatus EngineNode(const Node& node) const;
  std::vector<rollout::NodeStatus> EngineNodes() const;  // the members'
  // The facts, with each lease holder's host resolved to a node of `nodes`.
  rollout::ClusterFacts EngineFacts(const std::vector<rollout::NodeStatus>& nodes) const;
  rollout::Control EngineControl() const;
  EngineView View() const;
  // Sends the next safe move, if any; refreshes `next_`, records why the rollout waits and
  // notifies watchers.
  void Advance();
  // Advance's decision: sets next_ and sends the move it names. True when what it leaves in
  // next_ is a wait every move passes through (for a move's result, for facts read after it).
  bool DecideAndSend(EngineView& view);
  // The fleet's next step (rollout/worker_rollout.h: the control plane's Decide and the workers'
  // batch, taking turns); sets next_ to what the status shows of it.
  rollout::FleetDecision DecideFleet(EngineView& view);
  // A history entry ("waiting" or "stuck") when why the rollout waits changed since the last
  // call, unless `routine` (or paused, or halted: those have entries of their own); keeps
  // why_since_ms_.
  void RecordWhyItWaits(bool routine);
  // A candidate connected, reported or left (may make it a member: its Node* is then stale).
  void CandidateChanged();
  // The next step of the rollout as the engine (or, for the replace strategy, the replacement
  // planner) decides it; sets replacement_. A replacement's join or removal that may happen now
  // is committed here, and `view` is read again after it.
  rollout::Decision Decide(EngineView& view);
  rollout::Decision DecideReplacement(EngineView& view);
  // The membership changes of AddNode and RemoveNode (and of a replacement), committed with
  // their history entry; on failure nothing changed.
  absl::Status JoinMember(const std::string& actor, const std::string& name,
                          const std::string& reason);
  absl::Status LeaveMember(const std::string& actor, const std::string& name,
                           const std::string& reason);
  // What is not yet true of `node` leaving in a replacement (its agent connected, listed by the
  // API server or by etcd), each with what shows it (where and when it was read); empty once it
  // has left. `what` is the same from one read to the next, so the reason it goes into changes
  // only when the node's presence does.
  struct Presence {
    std::string what;
    std::string evidence;
  };
  std::vector<Presence> StillPresent(const Node& node) const;
  // Remembers `step`'s node as the one asked to leave (rollout_.replace_leaving), committed with
  // a "leave-requested" entry; on failure (the rollout then halts) nothing is remembered.
  absl::Status AskToLeave(const rollout::ReplacementStep& step);
  // The member the replacement asked to leave; "" when none (or not the replace strategy).
  std::string LeavingMember() const;
  // The replacement's size, what is left to replace and the commands for `step` (a join or a
  // removal).
  void ReplacementCommands(const rollout::ReplacementStep& step,
                           pb::Replacement& replacement) const;
  // Records `move` as in flight, then sends it to its node; false (nothing in flight) when the
  // record fails.
  bool SendMove(const store::InFlight& move, Node& node);
  pb::Command MoveCommand(const store::InFlight& move) const;
  // Sends each connected node that moves in `simulated` a plan of its chain, for its diffs.
  void AskForDiffs(PendingPlan& plan, const rollout::SimulatedRollout& simulated);
  // Takes an agent's answer to a plan command into its plan; false when no plan awaits it.
  bool TakePlanResult(const pb::CommandResult& result,
                      std::vector<std::function<void()>>& deferred);
  // Ends the plans whose agents did not answer in time.
  void ExpirePlans(std::vector<std::function<void()>>& deferred);
  // Runs a finished plan's callback later (in `deferred`, outside the mutex).
  void FinishPlanIfComplete(int64_t plan_id, std::vector<std::function<void()>>& deferred);
  // Records `error` for every plan still waiting on `node`.
  void FailPlansOf(const std::string& node, const std::string& error,
                   std::vector<std::function<void()>>& deferred);
  pb::RolloutStatus BuildStatus(const EngineView& view) const;
  // The downtime strategy's marks, from a successful move of the downtime path (the agent's
  // finish time; the coordinator's when the agent gave none).
  void MarkDowntime(const store::InFlight& move, int64_t finished_unix_ms,
                    std::vector<store::HistoryEntry>& history);
  // The outage measured so far; nullopt for Leader Migration or before every manager stopped.
  std::optional<pb::Downtime> MeasuredDowntime() const;
  // The state operators see: UNSPECIFIED (unknown) rather than inconsistent while the agent is away.
  static pb::NodeState ShownState(const Node& node);
  void Notify(const EngineView& view);
  std::string NewCommandId();

  store::Store& store_;
  Clock& clock_;
  const ControllerOptions options_;

  mutable std::mutex mu_;
  store::StoredRollout rollout_;  // goal, control, in flight, settings (nodes_ is the truth)
  std::vector<Node> nodes_;       // the members, in rollout order
  std::map<std::string, Node> candidates_;  // connected agents of nodes that are not members
  // The workers whose agents (AgentHello.role WORKER) said hello, in this run or a stored one,
  // connected or not (rollout_controller_workers.cc): never members or candidates; the rollout
  // moves them in batches (rollout/worker_rollout.h), after the control plane
  // forward and before it back; counted in the status and listed by Nodes.
  std::map<std::string, Worker> workers_;
  // The workers changed since the last commit (Commit writes their rows), and those to delete.
  std::set<std::string> dirty_workers_;
  std::set<std::string> forgotten_workers_;
  // From the cluster view last taken (TakeClusterView): the Nodes without the control-plane role
  // whose agent never said hello (name → zone label), and what the Node checks found.
  const preflight::ClusterView* view_taken_ = nullptr;
  std::map<std::string, std::string> agentless_;
  std::vector<std::string> node_problems_;
  // Every Node it lists, and what the Node checks found of each one they found wrong (a new
  // worker a replacement joined counts only once its Node is initialized).
  bool nodes_listed_ = false;
  std::set<std::string> listed_nodes_;
  std::map<std::string, std::vector<std::string>> node_problems_by_name_;
  // The replace strategy's last decision for the workers, for the status; unset otherwise.
  std::optional<rollout::WorkerDecision> worker_replacement_;
  FactsReport facts_;
  int64_t facts_checked_ms_ = 0;
  int64_t facts_read_ms_ = 0;          // when the facts in facts_ began to be read
  int64_t facts_needed_after_ms_ = 0;  // the last move's result: facts must be newer
  int64_t history_forgotten_through_ = 0;  // entries up to this sequence deleted (history_keep)
  bool FactsStale() const;
  rollout::Decision next_;
  // Why the rollout waits ("waiting" or "stuck", and the reason), since when; "" while it moves.
  std::string why_kind_;
  std::string why_reason_;
  int64_t why_since_ms_ = 0;
  EntryBudget why_entries_;  // the "waiting" and "stuck" entries, bounded as an agent's are
  std::map<std::string, int64_t> long_gaps_;  // SetLongGaps: controller → none since (unix ms)
  // The long gaps an operator's start, rollback, finalize or resume went on without.
  std::map<std::string, int64_t> long_gaps_acknowledged_;
  std::optional<pb::Replacement> replacement_;  // what a replacement waits for, when it does
  std::string last_notified_;  // the last status sent to watchers, serialized without revision
  // The status feed: the last status built and the watchers, under status_mu_ (taken after mu_
  // when both are held).
  mutable std::mutex status_mu_;
  pb::RolloutStatus latest_;
  std::map<int, std::function<void(const pb::RolloutStatus&)>> watchers_;
  int next_watch_token_ = 1;
  std::map<int64_t, std::unique_ptr<PendingPlan>> plans_;
  int64_t next_plan_id_ = 1;
  std::string instance_id_;  // distinguishes plan command ids of this coordinator run
};

// A node state off the wire (proto/vocabulary/node_state.h); one the wire leaves unspecified is
// kInconsistent here, never a target.
inline NodeState StateOrInconsistent(pb::NodeState state) {
  return FromProto(state).value_or(NodeState::kInconsistent);
}

}  // namespace handoff::server

#endif  // HANDOFF_COORDINATOR_SERVER_ROLLOUT_CONTROLLER_H_
