// The live double-run detector in the coordinator: takes each agent's ControllerSample (who runs
// which cloud controller on its node, as the managers say), runs DoubleRunDetector over them,
// halts the rollout under way (R5) on a double run with the evidence in the history, holds the
// next move back while a gap lasts past the limit (RolloutController::SetLongGaps; the finding
// in the history too), and adds who runs what to every status the operators see.
//
// Each handover gap the detector measures (a controller that ran nowhere, then ran again) and
// each finding also go to the coordinator's events (its metrics), when given.
//
// Thread safety: every method may be called from any thread. Observe calls the controller
// (Halt, RecordAudit) and the events without its own lock held, the controller on the controller's
// thread when given one (so a gRPC reactor handing it a sample never waits on a commit); Fill
// takes only its own lock, so it may be called with the controller's mutex held (a watcher's
// callback).
#ifndef HANDOFF_COORDINATOR_SERVER_RUN_WATCH_H_
#define HANDOFF_COORDINATOR_SERVER_RUN_WATCH_H_

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "coordinator/server/controller_thread.h"
#include "coordinator/server/coordinator_events.h"
#include "coordinator/server/double_run_detector.h"
#include "coordinator/server/rollout_controller.h"
#include "handoff/v1/handoff.pb.h"

namespace handoff::server {

class RunWatch {
 public:
  // Borrows `controller`, `events` and `thread` (each but the controller may be null), which must
  // outlive the watch. Follows the controller's members (its status feed) into the detector
  // (DoubleRunDetector::SetNodes). A finding goes to the controller on `thread`; without one, at
  // once on Observe's caller.
  RunWatch(RolloutController& controller, DetectorOptions options,
           CoordinatorEvents* events = nullptr, ControllerThread* thread = nullptr);
  ~RunWatch();
  RunWatch(const RunWatch&) = delete;
  RunWatch& operator=(const RunWatch&) = delete;

  // `received_unix_ms`: when the sample arrived, on the coordinator's clock (DoubleRunDetector).
  void Observe(const std::string& node, const pb::ControllerSample& sample,
               std::optional<int64_t> received_unix_ms = std::nullopt);
  void Away(const std::string& node);
  // Sets status.cloud_controllers.
  void Fill(pb::RolloutStatus& status) const;

 private:
  RolloutController& controller_;
  CoordinatorEvents* const events_;
  ControllerThread* const thread_;
  mutable std::mutex mu_;
  DoubleRunDetector detector_;
  // Per controller, the last gap told to events_ (start, end; unix ms).
  std::map<std::string, std::pair<int64_t, int64_t>> gaps_told_;
  // The long gaps going on, as last told to the controller.
  std::map<std::string, int64_t> long_gaps_told_;
  std::vector<std::string> members_;  // as last told to the detector
  int watch_token_ = 0;
};

}  // namespace handoff::server

#endif  // HANDOFF_COORDINATOR_SERVER_RUN_WATCH_H_
