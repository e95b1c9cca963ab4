// The workers' agents as the controller knows them (AgentHello.role WORKER): known from their
// hello on, their state from their reports, one stream per agent process as for the control
// plane's; never members or candidates, and not moved by the rollout yet.
#include "common/base/strings.h"
#include "coordinator/server/bounded_text.h"
#include "coordinator/server/rollout_controller.h"

namespace handoff::server {
namespace {

constexpr size_t kAgentVersionBytes = 128;

}  // namespace

absl::Status RolloutController::WorkerConnected(const std::string& name,
                                                const pb::AgentHello& hello,
                                                const std::shared_ptr<AgentLink>& link) {
  if (FindNode(name) != nullptr) {
    return absl::FailedPreconditionError(
        StrCat("node ", name, " is a control-plane member of the rollout, and its agent says it "
               "runs as a worker (role: worker in its settings); a worker's agent moves the "
               "kubelet alone, so it is refused for this node: set role: control-plane"));
  }
  candidates_.erase(name);
  Node& worker = workers_[name];
  worker.name = name;
  if (worker.link && worker.link != link) {
    if (hello.instance_id().empty() || hello.instance_id() != worker.instance_id) {
      return RefuseSecondAgent(worker, link->Peer());
    }
    worker.link->Close(absl::AbortedError(
        StrCat("replaced by a newer stream from the same agent of worker ", name, " (",
               link->Peer(), ")")));
  }
  const bool first = !worker.said_hello;
  worker.link = link;
  worker.instance_id = hello.instance_id();
  worker.said_hello = true;
  worker.verifies = hello.verifies();
  worker.agent_version = BoundedText(hello.agent_version(), kAgentVersionBytes);
  worker.last_seen_unix_ms = NowMs();
  ApplyReport(worker, hello.report());

  pb::CoordinatorMessage welcome;
  welcome.mutable_welcome()->set_rollout_id(rollout_.rollout_id);
  welcome.mutable_welcome()->set_coordinator_version(HANDOFF_VERSION);
  link->Send(welcome);
  if (first) {
    // Once per worker and coordinator process: a fleet's agents reconnect often.
    store::HistoryEntry entry =
        Entry(name, "worker-connect", name,
              StrCat("worker agent ", worker.agent_version, " connected from ", link->Peer(),
                     ": its kubelet is ", NodeStateName(worker.state)));
    if (AdmitAgentEntry(worker, entry)) (void)Commit({std::move(entry)});
  }
  Notify(View());
  return absl::OkStatus();
}

bool RolloutController::WorkerMessage(const std::string& name, const AgentLink* link,
                                      const pb::AgentMessage& message) {
  auto it = workers_.find(name);
  if (it == workers_.end()) return false;
  Node& worker = it->second;
  if (worker.link.get() != link) return true;  // a replaced stream
  worker.last_seen_unix_ms = NowMs();
  if (message.has_report()) {
    const NodeState before = worker.state;
    ApplyReport(worker, message.report());
    if (before != worker.state) Notify(View());
  }
  return true;
}

bool RolloutController::WorkerDisconnected(const std::string& name, const AgentLink* link) {
  auto it = workers_.find(name);
  if (it == workers_.end()) return false;
  Node& worker = it->second;
  if (worker.link.get() != link) return true;
  worker.link.reset();
  worker.instance_id.clear();
  worker.second_agent.reset();
  Notify(View());
  return true;
}

pb::WorkerSummary RolloutController::WorkerCounts() const {
  pb::WorkerSummary summary;
  for (const auto& [name, worker] : workers_) {
    summary.set_known(summary.known() + 1);
    if (worker.link) summary.set_connected(summary.connected() + 1);
    if (worker.link && worker.state == NodeState::kInTree) {
      summary.set_in_tree(summary.in_tree() + 1);
    } else if (worker.link && worker.state == NodeState::kExternal) {
      summary.set_external(summary.external() + 1);
    } else {
      summary.set_inconsistent(summary.inconsistent() + 1);
    }
  }
  return summary;
}

}  // namespace handoff::server
