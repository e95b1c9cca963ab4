// Test helpers for fixtures around a RolloutController: the controller over a fresh store, the
// options and facts of the two-node cluster most tests use, and one node's controller sample.
#ifndef HANDOFF_TESTS_COORDINATOR_SERVER_CONTROLLER_FIXTURE_H_
#define HANDOFF_TESTS_COORDINATOR_SERVER_CONTROLLER_FIXTURE_H_

#include <stdint.h>

#include <memory>
#include <string>

#include "common/system/clock.h"
#include "coordinator/server/rollout_controller.h"
#include "coordinator/store/store.h"
#include "gtest/gtest.h"
#include "tests/coordinator/server/temp_database.h"

namespace handoff::server::testing {

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

// cp-1 and cp-2, with settings that name the cloud-controller-manager's image (a rollout needs
// them to start).
inline ControllerOptions TwoNodeOptions() {
  ControllerOptions options;
  options.nodes = {"cp-1", "cp-2"};
  options.settings_yaml =
      "kubernetesVersion: v1.27.4\ncloudControllerManager:\n"
      "  image: registry.k8s.io/provider-aws/cloud-controller-manager:v1.27.1\n";
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
