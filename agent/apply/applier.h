// Carries out a plan on a node as one transaction: journal and backups first, then each file in
// the plan's order, each component proven restarted and healthy before the next is touched, and
// everything undone (and the undo verified) when one is not.
#ifndef HANDOFF_AGENT_APPLY_APPLIER_H_
#define HANDOFF_AGENT_APPLY_APPLIER_H_

#include <functional>
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "agent/apply/journal.h"
#include "agent/engine/planner.h"
#include "agent/engine/settings.h"
#include "agent/verify/verifier.h"
#include "agent/verify/worker_proof.h"
#include "common/fs/file_system.h"
#include "common/system/clock.h"
#include "common/system/command_runner.h"
#include "common/system/health_checker.h"
#include "common/system/process_table.h"

namespace handoff {

// The host as the applier sees it. Everything is borrowed and must outlive the Applier.
struct Host {
  FileSystem& fs;
  const ProcessTable& processes;
  HealthChecker& health;
  Clock& clock;
  CommandRunner& commands;
  // Stops a component's old process that the kubelet left running (Applier::StopLeftRunning).
  ProcessSignaller& signals;
};

// Every process a component ran before a change has exited (seen by verification).
struct ProcessesGone {
  std::string component;
  std::vector<ProcessInfo> old;
  absl::Time gone_at;  // the look that found them gone
};

struct ApplyOptions {
  bool verify = true;             // false: write only (--no-verify)
  // Called during verification, from the thread applying, as soon as a component's old
  // processes are all gone and before its new process is proven (not for a component that ran
  // no process before). The coordinator releases the leases they held with it.
  std::function<void(const ProcessesGone&)> on_processes_gone;
  VerifyOptions verify_options;   // per-component timeout and poll interval
  size_t keep_transactions = 10;  // backups kept; older committed/rolled-back ones pruned
  // Run when the kubelet's flags file changed (the kubelet reads it only at start). Empty: run
  // nothing (a rehearsal on a copy of a node's files, where the host's kubelet is not the node's):
  // the change is written and a note says no kubelet was restarted; with verification on, a move
  // that changes the kubelet's flags is refused before anything is written, since no kubelet
  // could ever come back with them.
  std::vector<std::string> kubelet_restart = {"systemctl", "restart", "kubelet"};
  absl::Duration command_timeout = absl::Minutes(2);
  // Called once a move is planned and before anything is written (not for a no-op). An error
  // refuses the move with nothing written; the lines returned are added to the report's notes
  // for the operator. The downtime path checks the instance's cluster tag here before
  // stopped → external (agent/cloud/instance_tags.h).
  std::function<absl::StatusOr<std::vector<std::string>>(NodeState from, NodeState to,
                                                          const Settings& settings)>
      before_move;
  // Borrowed; nullptr: none. What must hold beyond the kubelet's process once it restarted with
  // new flags (a worker's Node, containers and credential provider: agent/verify/worker_proof.h),
  // taken just before the restart and checked after the kubelet is proven, on a move's way out
  // (not while a failed move is undone, which puts back exactly what was there).
  KubeletProof* kubelet_proof = nullptr;
};

// One file written (or removed) and what was proven about it.
struct StepReport {
  std::string path;
  std::string action;     // "create", "replace", "remove"
  std::string component;  // "" for a file no process reloads
  std::string verified;   // "" when not verified, else what was proven
};

struct ApplyReport {
  std::string transaction;  // id; "" when nothing was written
  NodeState from = NodeState::kInconsistent;
  NodeState to = NodeState::kInconsistent;
  bool no_op = false;  // the node was already in the target state
  std::vector<StepReport> steps;
  // Set when the move failed and was undone: why it failed, and (if the undo itself failed) why.
  std::string failure;
  std::string rollback_failure;
  // For the operator: what the move left to them (ApplyOptions::before_move's lines).
  std::vector<std::string> notes;
  bool ok() const { return failure.empty(); }
};

// Where the kubelet's health endpoint answers, from the settings' kubelet.healthzUrl.
HealthEndpoint KubeletHealth(const Settings& settings);

class Applier {
 public:
  Applier(Host host, Settings settings, ApplyOptions options, std::ostream& log);

  // Moves the node to `target`. Refuses with an error (nothing written) when another apply holds
  // the lock, when the state dir is one the kubelet reads (FailedPrecondition for both), when the
  // node is inconsistent or `target` not adjacent, when a file a new manifest mounts is missing,
  // or when an unfinished transaction cannot be recovered. A move that fails
  // verification is undone: the report's `failure` (and `rollback_failure`) then say why.
  absl::StatusOr<ApplyReport> Apply(NodeState target);

  // Finds transactions left "started" by a crash and undoes each, so the node is wholly in its
  // state before that transaction; also clears directories of transactions that never started.
  // Returns the ids recovered. Verifies the restored components when options.verify is set.
  // FailedPrecondition only when it refused with nothing done: another holder has the lock, or
  // the state dir is one the kubelet reads (CheckStateDir). Any other error came from the
  // recovery itself, and the node needs an operator.
  absl::StatusOr<std::vector<std::string>> Recover();

  // Undoes the last committed transaction (as a new, journaled transaction of its own).
  absl::StatusOr<ApplyReport> Rollback();

  // Every transaction kept in the state dir, oldest first.
  absl::StatusOr<std::vector<Journal>> Transactions() const;

 private:
  // Everything below expects the lock held.
  absl::StatusOr<std::vector<std::string>> RecoverLocked();
  absl::StatusOr<ApplyReport> Run(const Plan& plan, const std::string& kind,
                                  const std::string& undoes);
  absl::StatusOr<std::unique_ptr<FileSystem::Lock>> Lock();
  absl::Status CheckMountSources(const Plan& plan) const;
  absl::Status WriteJournal(const Journal& journal);
  // Creates the parent of a file under the state dir when missing (the parked manifest's).
  absl::Status EnsureParent(const std::string& path);
  absl::Status Restore(const Journal& journal, size_t entries_touched, bool verify,
                       std::vector<std::string>* notes);
  // `content` is the file as written (nullopt: removed), `replaced` the one it replaced, whose
  // processes are `before`.
  absl::Status VerifyComponent(const std::string& component,
                               const std::optional<std::string>& content,
                               const std::optional<std::string>& replaced, const std::string& path,
                               const std::vector<ProcessInfo>& before);
  // A static pod's old processes still running after its manifest changed, long past the time
  // the kubelet takes to stop them: stops them as the kubelet would (SIGTERM, SIGKILL after
  // `grace`), then restarts the kubelet, which starts the pod its manifest now describes. An
  // error when one cannot be stopped (the kubelet is then left alone).
  absl::Status StopLeftRunning(const std::string& component, const std::vector<ProcessInfo>& left,
                               absl::Duration waited, absl::Duration grace);
  absl::StatusOr<std::vector<ProcessInfo>> ProcessesBefore(const FileChange& change);
  absl::Status RestartKubelet();
  // Removes a transaction's directory (backups, journal) durably.
  absl::Status RemoveTree(const std::string& id);
  // Keeps the newest options.keep_transactions finished transactions.
  void Prune();
  std::string NewTransactionId(NodeState from, NodeState to);

  Host host_;
  Settings settings_;
  ApplyOptions options_;
  std::ostream& log_;
  Verifier verifier_;
  // What the applier did that the kubelet should have (StopLeftRunning), or a kubelet restart it
  // left out (RestartKubelet), for the report's notes.
  std::vector<std::string> interventions_;
};

}  // namespace handoff

#endif  // HANDOFF_AGENT_APPLY_APPLIER_H_
