// The stand-in controller manager's life: the main lease, then (with Leader Migration) the
// migration lease, the cloud controllers each lease guards, and the end — a stop request
// (SIGTERM) or a lost lease. The controllers do nothing but exist; what matters is when each
// starts and stops, which goes to the run records.
//
// Sequence, as kube-controller-manager and k8s.io/cloud-provider's app run it
// (controllermanager.go Run / leaderElectAndRun):
//  - without leader election: every planned controller starts at once under "main";
//  - with it: campaign for the main lease; on acquiring it, start the controllers planned under
//    the main lock, and only then (MigrationReady) campaign for the migration lease; on acquiring
//    that, start the controllers planned under the migration lock;
//  - losing either lease ("leaderelection lost" / "migration leaderelection lost"): record the
//    lost lease, stop every running controller (reason "lease lost") and return kLeaseLost — the
//    real managers exit 1 there;
//  - Stop(): stop every running controller (reason "shutdown") and return kStopped. No lease is
//    released (the managers do not set ReleaseOnCancel): a successor waits for it to expire.
//
// Both elections run on the thread that calls Run(), one step at a time (LeaderElector::Tick),
// waiting on the injected clock: deterministic under a FakeClock. While the manager leads,
// every request is cut off at the earliest renew deadline it holds (RequestDeadlineTransport), so
// that one lease's slow request cannot keep it from noticing the other lease is lost.
#ifndef HANDOFF_REHEARSAL_STANDIN_CONTROLLER_MANAGER_H_
#define HANDOFF_REHEARSAL_STANDIN_CONTROLLER_MANAGER_H_

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/system/clock.h"
#include "common/system/shutdown_signal.h"
#include "common/kube/client.h"
#include "rehearsal/standin/controller_plan.h"
#include "rehearsal/standin/health_server.h"
#include "rehearsal/standin/leader_elector.h"
#include "rehearsal/standin/run_recorder.h"
#include "spdlog/spdlog.h"

namespace handoff::standin {

struct ManagerConfig {
  bool leader_elect = true;
  ElectionConfig main;                      // the main lease
  std::optional<ElectionConfig> migration;  // set when Leader Migration is active
  std::vector<CloudController> main_controllers;
  std::vector<CloudController> migration_controllers;
};

// The main and migration election settings and controller lists for `plan`: the main lease is
// `main`, the migration lease is `main` with the plan's leaderName (same namespace, identity and
// timings, as leaderElectAndRun builds it).
ManagerConfig ManagerConfigFor(const ControllerPlan& plan, bool leader_elect,
                               const ElectionConfig& main);

enum class ManagerOutcome { kStopped, kLeaseLost };

// Thread-safe only for Stop(); everything else belongs to the thread that calls Run().
class ControllerManager {
 public:
  // Borrows every reference and pointer; they must outlive the manager. `client` may be null
  // without leader election. `deadline` (optional) is the transport under `client`.
  // `random_unit` feeds the acquire jitter (null: none).
  ControllerManager(ManagerConfig config, kube::KubeClient* client,
                    RequestDeadlineTransport* deadline, Clock& clock, RunRecorder& recorder,
                    std::shared_ptr<spdlog::logger> logger,
                    std::function<double()> random_unit = nullptr);
  ~ControllerManager();

  // Runs until Stop() or a lost lease; see the header comment. Call once.
  ManagerOutcome Run();
  // Asks Run() to stop; callable from any thread, any number of times.
  void Stop() { stop_.Request(); }
  // Where each started controller is listed for /healthz?verbose (cleared when they stop);
  // borrowed, may be null. Call before Run().
  void ListStartedIn(NamedChecks* checks) { checks_ = checks; }

  // The controllers running now, in start order, and under which lock.
  struct Running {
    CloudController controller;
    Lock lock;
  };
  const std::vector<Running>& running() const { return running_; }
  // The elections (null before Run() and without leader election / migration).
  const LeaderElector* main_elector() const { return main_.get(); }
  const LeaderElector* migration_elector() const { return migration_.get(); }

 private:
  void StartControllers(const std::vector<CloudController>& controllers, Lock lock);
  void StopAll(const char* reason);
  // Ticks one elector; returns false when the manager must end (a lease lost).
  bool Step(LeaderElector& elector, Lock lock);
  void CapRequests();

  ManagerConfig config_;
  kube::KubeClient* client_;
  RequestDeadlineTransport* deadline_;
  Clock& clock_;
  RunRecorder& recorder_;
  std::shared_ptr<spdlog::logger> logger_;
  std::function<double()> random_unit_;
  ShutdownSignal stop_;
  std::unique_ptr<LeaderElector> main_;
  std::unique_ptr<LeaderElector> migration_;
  std::vector<Running> running_;
  NamedChecks* checks_ = nullptr;
};

}  // namespace handoff::standin

#endif  // HANDOFF_REHEARSAL_STANDIN_CONTROLLER_MANAGER_H_
