#include "coordinator/server/run_watch.h"

#include <vector>

#include "spdlog/spdlog.h"

namespace handoff::server {

RunWatch::RunWatch(RolloutController& controller, DetectorOptions options)
    : controller_(controller), detector_(std::move(options)) {}

void RunWatch::Observe(const std::string& node, const pb::ControllerSample& sample) {
  std::vector<Finding> findings;
  {
    std::lock_guard<std::mutex> lock(mu_);
    findings = detector_.Observe(node, sample);
  }
  for (const Finding& finding : findings) {
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
