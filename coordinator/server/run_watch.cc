#include "coordinator/server/run_watch.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "spdlog/spdlog.h"

namespace handoff::server {

RunWatch::RunWatch(RolloutController& controller, DetectorOptions options,
                   CoordinatorEvents* events)
    : controller_(controller), events_(events), detector_(std::move(options)) {}

void RunWatch::Observe(const std::string& node, const pb::ControllerSample& sample) {
  std::vector<Finding> findings;
  std::vector<std::pair<std::string, absl::Duration>> gaps;
  {
    std::lock_guard<std::mutex> lock(mu_);
    findings = detector_.Observe(node, sample);
    // A gap ends when a run is seen again: it shows as a new last gap in the detector's view.
    if (events_ != nullptr) {
      for (const pb::CloudControllerView& view : detector_.View()) {
        const std::pair<int64_t, int64_t> gap{view.last_gap_start_unix_ms(),
                                              view.last_gap_end_unix_ms()};
        if (gap.second == 0) continue;
        auto [told, added] = gaps_told_.try_emplace(view.name(), gap);
        if (!added && told->second == gap) continue;
        told->second = gap;
        // Both ends are sightings, possibly on two nodes' clocks: a skew may make them cross.
        gaps.emplace_back(view.name(),
                          absl::Milliseconds(std::max<int64_t>(0, gap.second - gap.first)));
      }
    }
  }
  for (const auto& [controller, gap] : gaps) events_->HandoverGapMeasured(controller, gap);
  for (const Finding& finding : findings) {
    if (events_ != nullptr) {
      if (finding.kind == Finding::Kind::kDoubleRun) {
        events_->DoubleRunDetected(finding.controller);
      } else {
        events_->LongGapDetected(finding.controller);
      }
    }
    const std::string kind =
        finding.kind == Finding::Kind::kDoubleRun ? "double-run" : "no-runner";
    const std::string summary = finding.Summary();
    spdlog::error("{}", summary);
    // A rollout that is moving halts (R5); otherwise the finding still goes to the history.
    if (!controller_.Halt(kind, summary, finding.EvidenceJson())) {
      controller_.RecordAudit(kind, "", summary, finding.EvidenceJson());
    }
  }
}

void RunWatch::Away(const std::string& node) {
  std::lock_guard<std::mutex> lock(mu_);
  detector_.Away(node);
}

void RunWatch::Fill(pb::RolloutStatus& status) const {
  std::lock_guard<std::mutex> lock(mu_);
  status.clear_cloud_controllers();
  for (pb::CloudControllerView& view : detector_.View()) {
    *status.add_cloud_controllers() = std::move(view);
  }
}

}  // namespace handoff::server
