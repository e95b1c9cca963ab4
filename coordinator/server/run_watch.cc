#include "coordinator/server/run_watch.h"

#include <algorithm>
#include <map>
#include <optional>
#include <utility>
#include <vector>

#include "spdlog/spdlog.h"

namespace handoff::server {
namespace {

// Halts the rollout for `finding`, or records it.
void Judge(RolloutController& controller, const Finding& finding) {
  const std::string kind = finding.kind == Finding::Kind::kDoubleRun ? "double-run" : "no-runner";
  const std::string summary = finding.Summary();
  if (finding.kind == Finding::Kind::kLongGap && controller.OutageAccepted()) {
    // The downtime strategy stops the cloud controllers until the first
    // cloud-controller-manager runs them: the gap is its cost, recorded, never a halt.
    spdlog::warn("{} (the downtime strategy's outage)", summary);
    controller.RecordAudit(kind, "", summary + " (expected: the downtime strategy's outage)",
                           finding.EvidenceJson());
    return;
  }
  spdlog::error("{}", summary);
  if (finding.kind == Finding::Kind::kLongGap) {
    // No move starts while it lasts (SetLongGaps): the next one waits for a runner, or for the
    // operator.
    controller.RecordAudit(kind, "", summary + "; the next move waits until a manager runs it",
                           finding.EvidenceJson());
    return;
  }
  // A rollout that is moving halts (R5); otherwise the finding still goes to the history.
  if (!controller.Halt(kind, summary, finding.EvidenceJson())) {
    controller.RecordAudit(kind, "", summary, finding.EvidenceJson());
  }
}

}  // namespace

RunWatch::RunWatch(RolloutController& controller, DetectorOptions options,
                   CoordinatorEvents* events, ControllerThread* thread)
    : controller_(controller), events_(events), thread_(thread), detector_(std::move(options)) {
  // Called with the controller's mutex held: takes only this watch's own lock.
  watch_token_ = controller_.Watch([this](const pb::RolloutStatus& status) {
    std::vector<std::string> members;
    for (const pb::NodeProgress& node : status.nodes()) members.push_back(node.name());
    std::lock_guard<std::mutex> lock(mu_);
    if (members == members_) return;
    members_ = std::move(members);
    detector_.SetNodes(members_);
  });
}

RunWatch::~RunWatch() { controller_.Unwatch(watch_token_); }

void RunWatch::Observe(const std::string& node, const pb::ControllerSample& sample,
                       std::optional<int64_t> received_unix_ms) {
  std::vector<Finding> findings;
  std::vector<std::pair<std::string, absl::Duration>> gaps;
  std::optional<std::map<std::string, int64_t>> long_gaps;  // set when they changed
  {
    std::lock_guard<std::mutex> lock(mu_);
    findings = detector_.Observe(node, sample, received_unix_ms);
    if (std::map<std::string, int64_t> ongoing = detector_.OngoingLongGaps();
        ongoing != long_gaps_told_) {
      long_gaps_told_ = ongoing;
      long_gaps = std::move(ongoing);
    }
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
  // Before the findings: the finding's entry is written with its gap holding the moves back.
  if (long_gaps) {
    if (thread_ == nullptr) {
      controller_.SetLongGaps(*long_gaps);
    } else {
      thread_->Post(
          [&controller = controller_, gaps = *long_gaps] { controller.SetLongGaps(gaps); });
    }
  }
  for (const Finding& finding : findings) {
    if (events_ != nullptr) {
      if (finding.kind == Finding::Kind::kDoubleRun) {
        events_->DoubleRunDetected(finding.controller);
      } else {
        events_->LongGapDetected(finding.controller);
      }
    }
    if (thread_ == nullptr) {
      Judge(controller_, finding);
    } else {
      thread_->Post([&controller = controller_, finding] { Judge(controller, finding); });
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
  if (!status.has_downtime() || status.downtime().all_stopped_unix_ms() == 0) return;
  // The coordinator's marks come from the moves' verified results; the managers' own view adds
  // what the results cannot show: a manager that stopped its controllers before its move ended,
  // and one that started them only after its move was verified.
  pb::Downtime& downtime = *status.mutable_downtime();
  const int64_t window_start = downtime.all_stopped_unix_ms();
  const int64_t window_end = downtime.cloud_controllers_back_unix_ms() != 0
                                 ? downtime.cloud_controllers_back_unix_ms()
                                 : status.updated_unix_ms();
  int64_t longest = 0;
  std::string controller;
  for (const pb::CloudControllerView& view : status.cloud_controllers()) {
    int64_t start = 0;
    int64_t end = 0;
    if (view.none_since_unix_ms() != 0) {
      start = view.none_since_unix_ms();
      end = std::max(status.updated_unix_ms(), start);
    } else if (view.last_gap_end_unix_ms() != 0) {
      start = view.last_gap_start_unix_ms();
      end = view.last_gap_end_unix_ms();
    } else {
      continue;
    }
    if (start > window_end || end < window_start) continue;  // another gap than the outage's
    if (end - start > longest) {
      longest = end - start;
      controller = view.name();
    }
  }
  downtime.set_observed_cloud_controllers_ms(longest);
  downtime.set_observed_controller(controller);
}

}  // namespace handoff::server
