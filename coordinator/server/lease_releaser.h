// The coordinator's side of the proof-based lease release (kube/lease_release.h has the rules):
// when a move is sent it reads the leases and records those held by managers on the moving node
// (the last facts read, when the leases cannot be read); when that node's agent proves a component's old processes gone, it releases the
// leases that component's old process held, each only if the lease still names the recorded
// holder and was not renewed since. Every decision, a release or not, goes to the audit history
// with its proof ("lease-release" entries).
//
// The API calls run on a worker thread of its own: the controller only queues, under its mutex.
#ifndef HANDOFF_COORDINATOR_SERVER_LEASE_RELEASER_H_
#define HANDOFF_COORDINATOR_SERVER_LEASE_RELEASER_H_

#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/system/clock.h"
#include "common/kube/client.h"
#include "coordinator/kube/lease_release.h"
#include "coordinator/server/coordinator_events.h"
#include "coordinator/server/rollout_controller.h"

namespace handoff::server {

class LeaseReleaser : public MoveListener {
 public:
  // One audit entry: its kind ("lease-release"), node, one line, and the proof as JSON.
  using Audit = std::function<void(const std::string& kind, const std::string& node,
                                   const std::string& message, const std::string& detail_json)>;

  // Owns `client`; borrows `clock` and `events` (may be null: each decision's result is told
  // there), which must outlive it. Starts the worker.
  LeaseReleaser(std::unique_ptr<kube::KubeClient> client, Clock& clock,
                CoordinatorEvents* events = nullptr);
  // Finishes what is queued, then stops the worker.
  ~LeaseReleaser() override;

  // Where decisions go; set before the first move (the controller is made after this).
  void SetAudit(Audit audit);

  // MoveListener.
  void MoveSent(const std::string& node, const std::string& command_id,
                const FactsReport& facts) override;
  void ProcessesGone(const std::string& node, const pb::ProcessesGone& proof) override;

  // Waits until everything queued so far is done (tests, shutdown).
  void Drain();

 private:
  // Done in order by the worker: a move's record before any release of its proofs.
  struct Job {
    enum class Kind { kRecord, kRelease };
    Kind kind = Kind::kRecord;
    std::string command_id;
    std::string node;
    std::vector<FactsReport::HeldLease> facts_held;  // kRecord: if the leases cannot be read
    kube::ExitProof proof;                           // kRelease
  };
  void Run();
  // Reads the leases and records those held by managers on the job's node.
  void Record(const Job& job);
  void Release(const Job& job);

  std::unique_ptr<kube::KubeClient> client_;
  Clock& clock_;
  CoordinatorEvents* const events_;

  std::mutex mu_;
  std::condition_variable changed_;
  Audit audit_;
  // The holders recorded for the move in flight on each node, by command id.
  std::map<std::string, std::vector<kube::RecordedHolder>> recorded_;
  std::deque<Job> queue_;
  bool busy_ = false;
  bool stopping_ = false;
  std::thread worker_;
};

}  // namespace handoff::server

#endif  // HANDOFF_COORDINATOR_SERVER_LEASE_RELEASER_H_
