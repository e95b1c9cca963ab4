#include "coordinator/server/double_run_detector.h"

#include <algorithm>
#include <cstdlib>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/time.h"
#include "nlohmann/json.hpp"

namespace handoff::server {
namespace {

using absl::StrCat;

std::string Seconds(int64_t ms) { return StrCat(absl::FormatDuration(absl::Milliseconds(ms))); }

std::string ClockOf(int64_t unix_ms) {
  return absl::FormatTime("%H:%M:%E3S", absl::FromUnixMillis(unix_ms), absl::UTCTimeZone());
}

std::string Who(const ProvenRun& run) {
  return StrCat(run.manager, " on ", run.node, " (pid ", run.pid, ")");
}

nlohmann::json RunJson(const ProvenRun& run) {
  return {{"controller", run.controller}, {"node", run.node},         {"manager", run.manager},
          {"pid", run.pid},               {"first_unix_ms", run.first_ms}, {"last_unix_ms", run.last_ms},
          {"current", run.current}};
}

}  // namespace

std::string Finding::Summary() const {
  if (kind == Kind::kDoubleRun && runs.size() >= 2) {
    return StrCat("double run: ", controller, " ran in ", Who(runs[0]), " and in ", Who(runs[1]),
                  " at once for at least ", Seconds(to_ms - from_ms), " (", ClockOf(from_ms), "–",
                  ClockOf(to_ms), " UTC, as the managers' /healthz said)");
  }
  std::string last = runs.empty() ? std::string("no run seen before")
                                  : StrCat("last run by ", Who(runs.back()));
  return StrCat("no runner: ", controller, " has run nowhere for ", Seconds(to_ms - from_ms),
                " (since ", ClockOf(from_ms), " UTC; ", last, ")");
}

std::string Finding::EvidenceJson() const {
  nlohmann::json evidence = {
      {"finding", kind == Kind::kDoubleRun ? "double-run" : "long-gap"},
      {"controller", controller},
      {"from_unix_ms", from_ms},
      {"to_unix_ms", to_ms},
      {"source", "the managers' /healthz?verbose, sampled by each node's agent"}};
  nlohmann::json runs_json = nlohmann::json::array();
  for (const ProvenRun& run : runs) runs_json.push_back(RunJson(run));
  evidence["runs"] = std::move(runs_json);
  return evidence.dump();
}

DoubleRunDetector::DoubleRunDetector(DetectorOptions options) : options_(std::move(options)) {
  for (const std::string& node : options_.nodes) {
    nodes_[node].unknown_reason = StrCat(node, ": no sample yet");
  }
}

bool DoubleRunDetector::IsMember(const std::string& node) const {
  return std::find(options_.nodes.begin(), options_.nodes.end(), node) != options_.nodes.end();
}

void DoubleRunDetector::SetNodes(const std::vector<std::string>& nodes) {
  options_.nodes = nodes;
  for (const std::string& node : options_.nodes) {
    if (nodes_.count(node) == 0) nodes_[node].unknown_reason = StrCat(node, ": no sample yet");
  }
}

void DoubleRunDetector::Away(const std::string& node) {
  if (!IsMember(node)) {
    for (auto& [controller, runs] : runs_) {
      for (auto& [key, run] : runs) {
        if (run.node == node) run.current = false;
      }
    }
    nodes_.erase(node);
    return;
  }
  NodeView& view = nodes_[node];
  view.known = false;
  view.offset_ms.reset();  // the next stream finds it again
  view.unknown_reason = StrCat(node, ": agent away");
  // What it ran is no longer seen: its runs stay proven up to their last sighting.
  for (auto& [controller, runs] : runs_) {
    for (auto& [key, run] : runs) {
      if (run.node == node) run.current = false;
    }
  }
}

std::string DoubleRunDetector::UnknownReason() const {
  std::vector<std::string> reasons;
  for (const auto& [node, view] : nodes_) {
    if (!view.known && IsMember(node)) reasons.push_back(view.unknown_reason);
  }
  return absl::StrJoin(reasons, "; ");
}

std::vector<Finding> DoubleRunDetector::Observe(const std::string& node,
                                                const v1::ControllerSample& sample,
                                                std::optional<int64_t> received_unix_ms) {
  sampled_ = true;
  NodeView& view = nodes_[node];
  int64_t at = sample.observed_unix_ms();
  if (received_unix_ms) {
    const bool stepped = view.offset_ms && std::abs(at + *view.offset_ms - *received_unix_ms) >
                                               options_.clock_step_ms;
    if (!view.offset_ms || stepped) view.offset_ms = *received_unix_ms - at;
    at += *view.offset_ms;
  }
  // An older sample than one already seen (a reconnect's reordering) adds nothing.
  if (at < view.observed_ms) return {};
  view.observed_ms = at;
  view.known = sample.error().empty();
  view.unknown_reason = sample.error().empty() ? "" : StrCat(node, ": ", sample.error());
  if (sample.managers_size() > options_.max_managers_per_sample) {
    // Never a real node's: taken as a look that failed, so nothing of it is kept.
    view.known = false;
    view.unknown_reason =
        StrCat(node, ": its sample lists ", sample.managers_size(), " managers (at most ",
               options_.max_managers_per_sample, " are taken)");
    for (auto& [controller, runs] : runs_) {
      for (auto& [key, run] : runs) {
        if (run.node == node) run.current = false;
      }
    }
    return {};
  }

  std::set<std::pair<std::string, ProcessKey>> listed;
  std::map<std::string, std::set<ProcessKey>> sighted;
  for (const v1::ManagerControllers& manager : sample.managers()) {
    if (!manager.answered()) {
      view.known = false;
      view.unknown_reason = StrCat(node, ": ", manager.component(), " (pid ", manager.pid(),
                                   ") did not answer: ", manager.error());
      continue;
    }
    const ProcessKey key{node, manager.component(), manager.pid()};
    for (const std::string& controller : manager.controllers()) {
      // Only the watched controllers are kept: any other name would only cost memory.
      if (std::find(options_.controllers.begin(), options_.controllers.end(), controller) ==
          options_.controllers.end()) {
        continue;
      }
      listed.insert({controller, key});
      sighted[controller].insert(key);
      auto [entry, added] = runs_[controller].try_emplace(key);
      ProvenRun& run = entry->second;
      if (added) {
        run.controller = controller;
        run.node = node;
        run.manager = manager.component();
        run.pid = manager.pid();
        run.first_ms = at;
      }
      run.last_ms = at;
    }
  }
  // Runs on this node the sample no longer lists have ended (as far as this node knows).
  for (auto& [controller, runs] : runs_) {
    for (auto& [key, run] : runs) {
      if (run.node == node) run.current = listed.count({controller, key}) > 0;
    }
  }

  std::vector<Finding> findings;
  for (const std::string& controller : options_.controllers) {
    std::vector<Finding> doubles = CheckDoubleRuns(controller, sighted[controller]);
    findings.insert(findings.end(), doubles.begin(), doubles.end());
    if (std::optional<Finding> gap = CheckGap(controller, at)) findings.push_back(*gap);
    Forget(controller);
  }
  return findings;
}

void DoubleRunDetector::Forget(const std::string& controller) {
  auto found = runs_.find(controller);
  if (found == runs_.end()) return;
  auto& runs = found->second;
  std::vector<std::pair<int64_t, ProcessKey>> ended;
  for (const auto& [key, run] : runs) {
    if (!run.current) ended.emplace_back(run.last_ms, key);
  }
  if (ended.size() <= options_.max_finished_runs) return;
  std::sort(ended.begin(), ended.end());
  const size_t drop = ended.size() - options_.max_finished_runs;
  std::set<ProcessKey> dropped;
  for (size_t i = 0; i < drop; ++i) {
    runs.erase(ended[i].second);
    dropped.insert(ended[i].second);
  }
  for (auto pair = reported_pairs_.begin(); pair != reported_pairs_.end();) {
    const bool gone = std::get<0>(*pair) == controller && (dropped.count(std::get<1>(*pair)) > 0 ||
                                                           dropped.count(std::get<2>(*pair)) > 0);
    pair = gone ? reported_pairs_.erase(pair) : std::next(pair);
  }
}

size_t DoubleRunDetector::RunsKept() const {
  size_t kept = 0;
  for (const auto& [controller, runs] : runs_) kept += runs.size();
  return kept;
}

std::vector<Finding> DoubleRunDetector::CheckDoubleRuns(const std::string& controller,
                                                        const std::set<ProcessKey>& sighted) {
  std::vector<Finding> findings;
  auto found = runs_.find(controller);
  if (found == runs_.end()) return findings;
  const auto& runs = found->second;
  // A pair's overlap grows only when one of its runs is sighted again: the pairs of runs this
  // sample did not list were checked when last one of them was.
  for (const ProcessKey& key : sighted) {
    const auto sighted_run = runs.find(key);
    if (sighted_run == runs.end()) continue;
    for (auto other = runs.begin(); other != runs.end(); ++other) {
      if (other->first == key) continue;
      // Each pair once, in key order, whichever of the two was sighted.
      if (sighted.count(other->first) > 0 && other->first < key) continue;
      ++comparisons_;
      const bool in_order = sighted_run->first < other->first;
      const auto a = in_order ? sighted_run : other;
      const auto b = in_order ? other : sighted_run;
      const int64_t from = std::max(a->second.first_ms, b->second.first_ms);
      const int64_t to = std::min(a->second.last_ms, b->second.last_ms);
      if (to - from < options_.confirm_ms) continue;
      auto pair = std::make_tuple(controller, a->first, b->first);
      if (!reported_pairs_.insert(pair).second) continue;
      Finding finding;
      finding.kind = Finding::Kind::kDoubleRun;
      finding.controller = controller;
      const bool a_first = a->second.first_ms <= b->second.first_ms;
      finding.runs = {a_first ? a->second : b->second, a_first ? b->second : a->second};
      finding.from_ms = from;
      finding.to_ms = to;
      findings.push_back(std::move(finding));
    }
  }
  return findings;
}

std::optional<Finding> DoubleRunDetector::CheckGap(const std::string& controller,
                                                   int64_t now_ms) {
  Gap& gap = gaps_[controller];
  const auto& runs = runs_[controller];
  const ProvenRun* newest_current = nullptr;
  const ProvenRun* last_ended = nullptr;
  for (const auto& [key, run] : runs) {
    if (run.current) {
      if (newest_current == nullptr || run.first_ms > newest_current->first_ms) {
        newest_current = &run;
      }
    } else if (last_ended == nullptr || run.last_ms > last_ended->last_ms) {
      last_ended = &run;
    }
  }
  if (newest_current != nullptr) {
    if (gap.none_since_ms) {
      gap.last_start_ms = *gap.none_since_ms;
      gap.last_end_ms = newest_current->first_ms;
      gap.none_since_ms.reset();
      gap.reported = false;
    }
    return std::nullopt;
  }
  // Only a controller seen running has a gap: one no manager is configured to run (the route
  // controller with --configure-cloud-routes=false) never starts anywhere.
  if (last_ended == nullptr) return std::nullopt;
  if (!UnknownReason().empty()) return std::nullopt;  // unknown is not "none"
  if (!gap.none_since_ms) {
    gap.none_since_ms = last_ended->last_ms;
    gap.reported = false;
  }
  if (gap.reported || now_ms - *gap.none_since_ms <= options_.gap_limit_ms) return std::nullopt;
  gap.reported = true;
  Finding finding;
  finding.kind = Finding::Kind::kLongGap;
  finding.controller = controller;
  finding.runs = {*last_ended};
  finding.from_ms = *gap.none_since_ms;
  finding.to_ms = now_ms;
  return finding;
}

std::map<std::string, int64_t> DoubleRunDetector::OngoingLongGaps() const {
  std::map<std::string, int64_t> ongoing;
  for (const auto& [controller, gap] : gaps_) {
    if (gap.reported && gap.none_since_ms) ongoing[controller] = *gap.none_since_ms;
  }
  return ongoing;
}

std::vector<v1::CloudControllerView> DoubleRunDetector::View() const {
  std::vector<v1::CloudControllerView> views;
  if (!sampled_) return views;  // no agent samples its managers: nothing to show
  const std::string unknown = UnknownReason();
  for (const std::string& controller : options_.controllers) {
    v1::CloudControllerView view;
    view.set_name(controller);
    if (auto runs = runs_.find(controller); runs != runs_.end()) {
      std::vector<const ProvenRun*> current;
      for (const auto& [key, run] : runs->second) {
        if (run.current) current.push_back(&run);
      }
      std::sort(current.begin(), current.end(),
                [](const ProvenRun* a, const ProvenRun* b) { return a->first_ms < b->first_ms; });
      for (const ProvenRun* run : current) {
        v1::ControllerRunner* runner = view.add_runners();
        runner->set_manager(run->manager);
        runner->set_node(run->node);
        runner->set_pid(run->pid);
        runner->set_since_unix_ms(run->first_ms);
      }
    }
    if (auto gap = gaps_.find(controller); gap != gaps_.end()) {
      if (gap->second.none_since_ms) view.set_none_since_unix_ms(*gap->second.none_since_ms);
      view.set_last_gap_start_unix_ms(gap->second.last_start_ms);
      view.set_last_gap_end_unix_ms(gap->second.last_end_ms);
    }
    view.set_unknown_reason(unknown);
    views.push_back(std::move(view));
  }
  return views;
}

}  // namespace handoff::server
