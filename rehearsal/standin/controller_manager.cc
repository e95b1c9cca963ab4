#include "rehearsal/standin/controller_manager.h"

#include <algorithm>

namespace handoff::standin {
namespace {

// Without leader election nothing is due; the loop only waits for Stop().
constexpr absl::Duration kIdleWait = absl::Hours(1);

}  // namespace

ManagerConfig ManagerConfigFor(const ControllerPlan& plan, bool leader_elect,
                               const ElectionConfig& main) {
  ManagerConfig config;
  config.leader_elect = leader_elect;
  config.main = main;
  if (plan.migration) {
    ElectionConfig migration = main;
    migration.name = plan.migration_lease;
    config.migration = migration;
  }
  config.main_controllers = plan.RunningUnder(Lock::kMain);
  config.migration_controllers = plan.RunningUnder(Lock::kMigration);
  return config;
}

ControllerManager::ControllerManager(ManagerConfig config, kube::KubeClient* client,
                                     RequestDeadlineTransport* deadline, Clock& clock,
                                     RunRecorder& recorder, std::shared_ptr<spdlog::logger> logger,
                                     std::function<double()> random_unit)
    : config_(std::move(config)),
      client_(client),
      deadline_(deadline),
      clock_(clock),
      recorder_(recorder),
      logger_(std::move(logger)),
      random_unit_(std::move(random_unit)) {}

ControllerManager::~ControllerManager() = default;

void ControllerManager::StartControllers(const std::vector<CloudController>& controllers,
                                         Lock lock) {
  for (CloudController controller : controllers) {
    recorder_.ControllerStart(controller, lock);
    running_.push_back({controller, lock});
    if (checks_ != nullptr) checks_->Add(std::string(CanonicalControllerName(controller)));
    logger_->info("started controller {} (under the {} lease)", CanonicalControllerName(controller),
                  LockName(lock));
  }
}

void ControllerManager::StopAll(const char* reason) {
  // Newest first, as deferred cancellations unwind.
  for (auto it = running_.rbegin(); it != running_.rend(); ++it) {
    recorder_.ControllerStop(it->controller, reason);
    logger_->info("stopped controller {} ({})", CanonicalControllerName(it->controller), reason);
  }
  running_.clear();
  if (checks_ != nullptr) checks_->Clear();
}

void ControllerManager::CapRequests() {
  if (deadline_ == nullptr) return;
  std::optional<absl::Time> cap;
  for (const LeaderElector* elector : {main_.get(), migration_.get()}) {
    if (elector == nullptr) continue;
    if (std::optional<absl::Time> loss = elector->LossDeadline()) {
      cap = cap ? std::min(*cap, *loss) : *loss;
    }
  }
  deadline_->set_deadline(cap);
}

bool ControllerManager::Step(LeaderElector& elector, Lock lock) {
  const std::string lease = LeaseKey(elector.config());
  const std::string error_before = elector.last_error();
  CapRequests();
  const LeaderElector::Event event = elector.Tick();
  if (event == LeaderElector::Event::kAcquired) {
    logger_->info("successfully acquired lease {}", lease);
    recorder_.LeaseAcquired(lease);
    if (lock == Lock::kMain) {
      StartControllers(config_.main_controllers, Lock::kMain);
      // MigrationReady: the migration lease is tried only by a holder of the main lease, so that
      // one manager cannot hold the main lease while another holds the migration lease.
      if (migration_) {
        logger_->info("leader migration: main lease held, attempting the migration lease {}",
                      LeaseKey(migration_->config()));
        migration_->Start();
      }
    } else {
      StartControllers(config_.migration_controllers, Lock::kMigration);
    }
    return true;
  }
  if (event == LeaderElector::Event::kLost) {
    logger_->error("{}leaderelection lost: {}", lock == Lock::kMigration ? "migration " : "",
                   elector.last_error());
    recorder_.LeaseLost(lease);
    StopAll(kReasonLeaseLost);
    return false;
  }
  if (!elector.last_error().empty() && elector.last_error() != error_before) {
    logger_->info("{}", elector.last_error());
  }
  return true;
}

ManagerOutcome ControllerManager::Run() {
  if (!config_.leader_elect) {
    StartControllers(config_.main_controllers, Lock::kMain);
    while (clock_.SleepOrStop(kIdleWait, stop_)) {
    }
    StopAll(kReasonShutdown);
    return ManagerOutcome::kStopped;
  }

  main_ = std::make_unique<LeaderElector>(*client_, clock_, config_.main, random_unit_);
  if (config_.migration) {
    migration_ =
        std::make_unique<LeaderElector>(*client_, clock_, *config_.migration, random_unit_);
  }
  logger_->info("attempting to acquire leader lease {}", LeaseKey(config_.main));
  main_->Start();
  while (!stop_.Requested()) {
    if (!Step(*main_, Lock::kMain)) return ManagerOutcome::kLeaseLost;
    if (migration_ && !Step(*migration_, Lock::kMigration)) return ManagerOutcome::kLeaseLost;
    absl::Time next = main_->next_due();
    if (migration_) next = std::min(next, migration_->next_due());
    clock_.SleepOrStop(next - clock_.Now(), stop_);
  }
  StopAll(kReasonShutdown);
  return ManagerOutcome::kStopped;
}

}  // namespace handoff::standin
