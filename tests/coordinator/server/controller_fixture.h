// Test helpers for fixtures around a RolloutController: the controller over a fresh store, the
// options and facts of the two-node cluster most tests use, and one node's controller sample.
#ifndef HANDOFF_TESTS_COORDINATOR_SERVER_CONTROLLER_FIXTURE_H_
#define HANDOFF_TESTS_COORDINATOR_SERVER_CONTROLLER_FIXTURE_H_

#include <stdint.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/system/clock.h"
#include "coordinator/server/rollout_controller.h"
#include "coordinator/store/store.h"
#include "gtest/gtest.h"
#include "tests/coordinator/server/temp_database.h"

namespace handoff::server::testing {

// An agent's stream that records what the controller sends and whether it closed it.
class RecordingLink : public AgentLink {
 public:
  void Send(const pb::CoordinatorMessage& message) override { sent.push_back(message); }
  void Close(const absl::Status& status) override { closed = status; }
  std::string Peer() const override { return "ipv4:127.0.0.1:5555"; }

  std::vector<pb::Command> Commands() const {
    std::vector<pb::Command> commands;
    for (const pb::CoordinatorMessage& message : sent) {
      if (message.has_command()) commands.push_back(message.command());
    }
    return commands;
  }

  std::vector<pb::CoordinatorMessage> sent;
  std::optional<absl::Status> closed;
};

// A node's report in `state`; its kube-controller-manager is 1.26 until the node is migrated.
inline pb::NodeReport Report(NodeState state, bool healthy = true) {
  pb::NodeReport report;
  report.set_state(ToProto(state));
  report.set_healthy(healthy);
  const bool upgraded = state == NodeState::kMigrated || state == NodeState::kFinalized ||
                        state == NodeState::kExternal;
  report.set_kube_controller_manager_version(upgraded ? "v1.27.4" : "v1.26.9");
  return report;
}

// The hello of `node`'s one agent process, reporting `state`, healthy.
inline pb::AgentHello Hello(const std::string& node, NodeState state) {
  pb::AgentHello hello;
  hello.set_node_name(node);
  hello.set_agent_version("test");
  *hello.mutable_report() = Report(state);
  hello.set_instance_id("agent-of-" + node);
  return hello;
}

// Every entry of the history, page by page.
inline std::vector<pb::HistoryEntry> AllHistory(RolloutController& controller) {
  std::vector<pb::HistoryEntry> all;
  int64_t after = 0;
  while (true) {
    absl::StatusOr<pb::HistoryResponse> page = controller.History(after, 0);
    EXPECT_TRUE(page.ok()) << page.status();
    if (!page.ok() || page->entries().empty()) break;
    all.insert(all.end(), page->entries().begin(), page->entries().end());
    after = page->entries(page->entries_size() - 1).sequence();
  }
  return all;
}

// The last entry of `kind` in `history`; null when none.
inline const pb::HistoryEntry* LastOfKind(const std::vector<pb::HistoryEntry>& history,
                                          const std::string& kind) {
  const pb::HistoryEntry* last = nullptr;
  for (const pb::HistoryEntry& entry : history) {
    if (entry.kind() == kind) last = &entry;
  }
  return last;
}

// The members of the rollout, in its order.
inline std::vector<std::string> NodeNames(const pb::RolloutStatus& status) {
  std::vector<std::string> names;
  for (const pb::NodeProgress& node : status.nodes()) names.push_back(node.name());
  return names;
}

// Opens the store in `database` into *store and creates the controller over it into
// *controller. A fatal failure when either fails: call it under ASSERT_NO_FATAL_FAILURE.
inline void OpenController(const TempDatabase& database, Clock& clock,
                           const ControllerOptions& options, std::unique_ptr<store::Store>* store,
                           std::unique_ptr<RolloutController>* controller) {
  *store = database.Open();
  ASSERT_NE(*store, nullptr);
  absl::StatusOr<std::unique_ptr<RolloutController>> created =
      RolloutController::Create(**store, clock, options);
  ASSERT_TRUE(created.ok()) << created.status();
  *controller = *std::move(created);
}

// Settings that name the cloud-controller-manager's image (a rollout needs them to start).
constexpr char kSettings[] =
    "kubernetesVersion: v1.27.4\n"
    "cloudControllerManager:\n"
    "  image: registry.k8s.io/provider-aws/cloud-controller-manager:v1.27.1\n";

// cp-1 and cp-2, with kSettings.
inline ControllerOptions TwoNodeOptions() {
  ControllerOptions options;
  options.nodes = {"cp-1", "cp-2"};
  options.settings_yaml = kSettings;
  return options;
}

// The cluster checks' facts as --no-cluster-checks assumes them: RBAC in place, the lease held.
inline FactsReport AssumedFacts() {
  FactsReport facts;
  facts.rbac_ready = true;
  facts.lease_held = true;
  facts.source = "assumed";
  return facts;
}

// One node's sample at `at_ms`: `manager` (pid `pid`) answered, running the service controller
// or no controller.
inline pb::ControllerSample Sample(int64_t at_ms, const std::string& manager, int64_t pid,
                                   bool runs_service) {
  pb::ControllerSample sample;
  sample.set_observed_unix_ms(at_ms);
  pb::ManagerControllers* out = sample.add_managers();
  out->set_component(manager);
  out->set_pid(pid);
  out->set_answered(true);
  if (runs_service) out->add_controllers("service");
  return sample;
}

}  // namespace handoff::server::testing

#endif  // HANDOFF_TESTS_COORDINATOR_SERVER_CONTROLLER_FIXTURE_H_
