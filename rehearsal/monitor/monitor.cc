#include "rehearsal/monitor/monitor.h"

#include <algorithm>
#include <cstdlib>
#include <tuple>
#include <utility>

#include "common/base/strings.h"

namespace handoff::sandbox {

bool operator==(const ProcessId& a, const ProcessId& b) {
  return std::tie(a.node, a.component, a.pid) == std::tie(b.node, b.component, b.pid);
}
bool operator!=(const ProcessId& a, const ProcessId& b) { return !(a == b); }
bool operator<(const ProcessId& a, const ProcessId& b) {
  return std::tie(a.node, a.component, a.pid) < std::tie(b.node, b.component, b.pid);
}

namespace {

// "+12.345s" after `begin_ns`, to the millisecond (towards zero).
std::string Offset(int64_t t_ns, int64_t begin_ns) {
  const int64_t delta = t_ns - begin_ns;
  const int64_t magnitude = delta < 0 ? -delta : delta;
  const int64_t millis = (magnitude / 1'000'000) % 1000;
  std::string fraction = std::to_string(millis);
  fraction.insert(0, 3 - fraction.size(), '0');
  return StrCat(delta < 0 ? "-" : "+", magnitude / 1'000'000'000, ".", fraction, "s");
}

// Exact: a gap of one nanosecond shows as "1ns", not as "0.000s".
std::string Length(int64_t ns) { return absl::FormatDuration(absl::Nanoseconds(ns)); }

std::string ProcessName(const ProcessId& process) {
  return StrCat(process.node, " ", process.component, " pid ", process.pid);
}

std::string RunnerName(const Run& run) {
  return StrCat(ProcessName(run.process), " (", run.lock, " lock)");
}

std::string PadRight(std::string text, size_t width) {
  if (text.size() < width) text.append(width - text.size(), ' ');
  return text;
}

std::string EndText(const Run& run) {
  switch (run.end) {
    case RunEnd::kStopped:
      return run.end_detail.empty() ? "stopped" : StrCat("stopped: ", run.end_detail);
    case RunEnd::kExited:
      return run.end_detail.empty() ? "process exited" : StrCat("process exited: ", run.end_detail);
    case RunEnd::kStillRunning:
      return "still running";
  }
  return "";
}

std::string Describe(const Overlap& overlap, int64_t begin_ns) {
  return StrCat(overlap.controller, " ran in ", RunnerName(overlap.first), " and in ",
                RunnerName(overlap.second), " at once from ", Offset(overlap.from_ns, begin_ns),
                " to ", Offset(overlap.to_ns, begin_ns), " (",
                Length(overlap.to_ns - overlap.from_ns), ")");
}

// Folds the records into runs: one per controller-start, closed by the process's
// controller-stop or process-exit, whichever comes first.
class RunBuilder {
 public:
  RunBuilder(MonitorReport& report, std::map<std::string, std::vector<Run>>& runs)
      : report_(report), runs_(runs) {}

  void Apply(const RunRecord& record) {
    const ProcessId process{record.node, record.component, record.pid};
    if (record.event == kControllerStart) {
      Start(process, record);
    } else if (record.event == kControllerStop) {
      Stop(process, record);
    } else if (record.event == kProcessExit) {
      Exit(process, record);
    } else if (record.event == kProcessStart) {
      // A process-start while the same node, component and pid still has open runs means the
      // kubelet never wrote the earlier process's exit. Its runs stay open: closing them at a
      // guessed time could hide an overlap.
      const auto it = open_.find(process);
      if (it != open_.end() && !it->second.empty()) {
        Anomaly(record, StrCat("process-start of ", ProcessName(process),
                               " while its earlier runs are still open (no process-exit)"));
      }
    } else if (record.event == kMonitorNote) {
      report_.notes.push_back(Note{record.t_ns, record.node, record.message});
    } else if (record.event != kLeaseAcquired && record.event != kLeaseLost) {
      Anomaly(record, StrCat("unknown event \"", record.event, "\" from ", ProcessName(process)));
    }
  }

  // Runs still open end at the end of observation.
  void Finish(int64_t end_ns) {
    for (auto& [process, open_runs] : open_) {
      for (auto& [controller, index] : open_runs) {
        Run& run = runs_[controller][index];
        run.to_ns = end_ns;
        run.end = RunEnd::kStillRunning;
      }
    }
    open_.clear();
  }

 private:
  void Start(const ProcessId& process, const RunRecord& record) {
    if (record.controller.empty()) {
      Anomaly(record, StrCat("controller-start without a controller from ", ProcessName(process)));
      return;
    }
    std::map<std::string, size_t>& open_runs = open_[process];
    if (const auto it = open_runs.find(record.controller); it != open_runs.end()) {
      const Run& running = runs_[record.controller][it->second];
      Anomaly(record, StrCat("controller-start of ", record.controller, " in ",
                             ProcessName(process), " while it has been running there since ",
                             Offset(running.from_ns, report_.begin_ns), "; ignored"));
      return;
    }
    std::vector<Run>& controller_runs = runs_[record.controller];
    Run run;
    run.controller = record.controller;
    run.process = process;
    run.lock = record.lock;
    run.from_ns = record.t_ns;
    run.to_ns = record.t_ns;
    controller_runs.push_back(std::move(run));
    open_runs[record.controller] = controller_runs.size() - 1;
    report_.locks[record.component][record.lock].insert(record.controller);
  }

  void Stop(const ProcessId& process, const RunRecord& record) {
    const auto process_it = open_.find(process);
    const auto it = process_it == open_.end() ? std::map<std::string, size_t>::iterator()
                                              : process_it->second.find(record.controller);
    if (process_it == open_.end() || it == process_it->second.end()) {
      Anomaly(record, StrCat("controller-stop of ", record.controller, " in ", ProcessName(process),
                             ", which was not running it; ignored"));
      return;
    }
    Close(runs_[record.controller][it->second], record.t_ns, RunEnd::kStopped, record.reason);
    process_it->second.erase(it);
  }

  void Exit(const ProcessId& process, const RunRecord& record) {
    const auto it = open_.find(process);
    if (it == open_.end()) return;
    for (const auto& [controller, index] : it->second) {
      Close(runs_[controller][index], record.t_ns, RunEnd::kExited, record.status);
    }
    // Forgotten entirely: a later process with the same node, component and pid is a new
    // incarnation whose controller-starts are not repeats.
    open_.erase(it);
  }

  static void Close(Run& run, int64_t t_ns, RunEnd end, const std::string& detail) {
    run.to_ns = t_ns;
    run.end = end;
    run.end_detail = detail;
  }

  void Anomaly(const RunRecord& record, const std::string& what) {
    report_.anomalies.push_back(StrCat(Offset(record.t_ns, report_.begin_ns), " ", what));
  }

  MonitorReport& report_;
  std::map<std::string, std::vector<Run>>& runs_;
  // process -> controller -> index of its open run in runs_[controller].
  std::map<ProcessId, std::map<std::string, size_t>> open_;
};

// Runs are half-open, [from, to): one stopping at t and another starting at t do not overlap,
// and a run that started and stopped at the same instant never ran. A run still open at the end
// of observation is running at that instant too, [from, end]: without that, a controller-start
// that is the last record (the default end) would have no length and hide the overlap it makes.
bool Lasted(const Run& run) { return run.from_ns < run.to_ns || run.end == RunEnd::kStillRunning; }

// `runs` in order of start. A run overlaps only runs that start before it ends (or at its end,
// when both are still running), so after the sort the inner loop stops at the first run that
// starts later.
std::vector<Overlap> FindOverlaps(const std::vector<Run>& runs) {
  std::vector<Overlap> overlaps;
  for (size_t i = 0; i < runs.size(); ++i) {
    if (!Lasted(runs[i])) continue;
    for (size_t j = i + 1; j < runs.size() && runs[j].from_ns <= runs[i].to_ns; ++j) {
      if (!Lasted(runs[j]) || runs[i].process == runs[j].process) continue;
      const int64_t to_ns = std::min(runs[i].to_ns, runs[j].to_ns);
      const bool both_still_running =
          runs[i].end == RunEnd::kStillRunning && runs[j].end == RunEnd::kStillRunning;
      if (runs[j].from_ns >= to_ns && !both_still_running) continue;
      Overlap overlap;
      overlap.controller = runs[i].controller;
      overlap.first = runs[i];
      overlap.second = runs[j];
      overlap.from_ns = runs[j].from_ns;
      overlap.to_ns = to_ns;
      overlaps.push_back(std::move(overlap));
    }
  }
  std::stable_sort(overlaps.begin(), overlaps.end(),
                   [](const Overlap& a, const Overlap& b) { return a.from_ns < b.from_ns; });
  return overlaps;
}

void AddHandovers(ControllerStats& stats, int64_t begin_ns, int64_t end_ns, int64_t bound_ns,
                  std::optional<int64_t> gaps_from_ns, std::vector<Handover>& handovers) {
  auto add = [&](Handover handover) {
    handover.controller = stats.controller;
    handover.long_gap = handover.gap_ns > bound_ns;
    if (gaps_from_ns && handover.at_ns < *gaps_from_ns) {
      handover.long_gap = false;
      handovers.push_back(std::move(handover));
      return;
    }
    stats.no_runner_ns += handover.gap_ns;
    stats.longest_gap_ns = std::max(stats.longest_gap_ns, handover.gap_ns);
    if (handover.long_gap) ++stats.long_gaps;
    handovers.push_back(std::move(handover));
  };
  const Run* last = nullptr;  // the run that covers the latest instant so far
  for (const Run& run : stats.runs) {
    // A run that never ran neither hands over nor splits the gap around it.
    if (!Lasted(run)) continue;
    Handover handover;
    handover.to = run;
    handover.at_ns = run.from_ns;
    if (last != nullptr) {
      handover.from = *last;
      handover.gap_ns = std::max<int64_t>(0, run.from_ns - last->to_ns);
    }
    add(std::move(handover));
    if (last == nullptr || run.to_ns >= last->to_ns) last = &run;
  }
  if (last == nullptr) {
    stats.no_runner_ns = end_ns - begin_ns;
    return;
  }
  if (last->to_ns < end_ns) {
    Handover handover;
    handover.from = *last;
    handover.at_ns = last->to_ns;
    handover.gap_ns = end_ns - last->to_ns;
    add(std::move(handover));
  }
}

}  // namespace

MonitorReport AnalyzeRunRecords(std::vector<RunRecord> records, const MonitorOptions& options) {
  std::stable_sort(records.begin(), records.end(),
                   [](const RunRecord& a, const RunRecord& b) { return a.t_ns < b.t_ns; });
  MonitorReport report;
  report.long_gap_bound_ns =
      absl::ToInt64Nanoseconds(options.lease_duration + options.retry_period + options.gap_slack);
  report.end_ns = options.end_ns.value_or(records.empty() ? 0 : records.back().t_ns);
  report.begin_ns = records.empty() ? report.end_ns : std::min(records.front().t_ns, report.end_ns);
  report.gaps_from_ns = options.gaps_from_ns;

  std::map<std::string, std::vector<Run>> runs;
  RunBuilder builder(report, runs);
  for (const RunRecord& record : records) {
    if (record.t_ns > report.end_ns) break;
    builder.Apply(record);
    ++report.record_count;
  }
  builder.Finish(report.end_ns);

  std::vector<std::string> names = options.controllers;
  for (const auto& [controller, unused] : runs) {
    if (std::find(names.begin(), names.end(), controller) == names.end()) {
      names.push_back(controller);
    }
  }
  for (const std::string& name : names) {
    ControllerStats stats;
    stats.controller = name;
    if (const auto it = runs.find(name); it != runs.end()) stats.runs = it->second;
    std::vector<Overlap> overlaps = FindOverlaps(stats.runs);
    report.overlaps.insert(report.overlaps.end(), overlaps.begin(), overlaps.end());
    AddHandovers(stats, report.begin_ns, report.end_ns, report.long_gap_bound_ns,
                 options.gaps_from_ns, report.handovers);
    report.controllers.push_back(std::move(stats));
  }
  report.invariant_held = report.overlaps.empty();
  return report;
}

std::string MonitorReport::Summary() const {
  std::string out;
  StrAppend(&out, "observed ", record_count, " records over ", Length(end_ns - begin_ns),
            "; times are after the first record; a gap is long over ", Length(long_gap_bound_ns),
            " (lease duration + retry period + slack)\n");
  for (const ControllerStats& stats : controllers) {
    if (stats.runs.empty()) {
      StrAppend(&out, "\n", stats.controller, ": never ran\n");
      continue;
    }
    StrAppend(&out, "\n", stats.controller, ": ", stats.runs.size(),
              stats.runs.size() == 1 ? " run" : " runs", "; no runner for ",
              Length(stats.no_runner_ns), " in all; longest gap ", Length(stats.longest_gap_ns));
    if (stats.long_gaps > 0) StrAppend(&out, "; ", stats.long_gaps, " LONG");
    out += "\n";
    std::vector<const Handover*> own;
    for (const Handover& handover : handovers) {
      if (handover.controller == stats.controller) own.push_back(&handover);
    }
    size_t next = 0;
    auto gap_line = [&](const Handover& handover) {
      if (!handover.from || handover.gap_ns == 0) return;
      StrAppend(&out, "  ", PadRight("", 22), "gap ", Length(handover.gap_ns));
      if (handover.to && handover.to->process == handover.from->process) {
        out += " (the same process started it again)";
      }
      if (!handover.to) out += " (nobody took over)";
      if (handover.long_gap) StrAppend(&out, "  LONG: over ", Length(long_gap_bound_ns));
      out += "\n";
    };
    for (const Run& run : stats.runs) {
      // Handovers follow the runs that lasted, in the same order.
      const bool lasted = Lasted(run);
      if (lasted && next < own.size()) gap_line(*own[next++]);
      StrAppend(
          &out, "  ",
          PadRight(StrCat(Offset(run.from_ns, begin_ns), " .. ", Offset(run.to_ns, begin_ns)), 22),
          RunnerName(run), ", ", EndText(run), lasted ? "" : " (no time)", "\n");
    }
    for (; next < own.size(); ++next) gap_line(*own[next]);
  }
  if (!locks.empty()) {
    out += "\nlocks:\n";
    for (const auto& [component, by_lock] : locks) {
      std::vector<std::string> parts;
      for (const auto& [lock, controller_names] : by_lock) {
        parts.push_back(StrCat(lock, ": ", StrJoin(controller_names, ", ")));
      }
      StrAppend(&out, "  ", component, ": ", StrJoin(parts, "; "), "\n");
    }
  }
  if (!notes.empty()) {
    out += "\nnotes:\n";
    for (const Note& note : notes) {
      StrAppend(&out, "  ", Offset(note.t_ns, begin_ns), " ", note.node.empty() ? "" : note.node,
                note.node.empty() ? "" : ": ", note.message, "\n");
    }
  }
  if (!anomalies.empty()) {
    out += "\nanomalies (records that do not fit a process's life; ignored):\n";
    for (const std::string& anomaly : anomalies) StrAppend(&out, "  ", anomaly, "\n");
  }
  out += "\n";
  if (invariant_held) {
    out += "invariant held: no cloud controller ran in two processes at once\n";
  } else {
    std::vector<std::string> described;
    for (const Overlap& overlap : overlaps) described.push_back(Describe(overlap, begin_ns));
    StrAppend(&out, "INVARIANT BROKEN: ", StrJoin(described, "; "), "\n");
  }
  return out;
}

LiveMonitor::LiveMonitor(const FileSystem& fs, std::string records_dir, MonitorOptions options)
    : fs_(fs), records_dir_(std::move(records_dir)), options_(std::move(options)) {}

absl::Status LiveMonitor::Poll() { return PollUntil(std::nullopt); }

absl::Status LiveMonitor::Poll(int64_t now_ns) { return PollUntil(now_ns); }

absl::Status LiveMonitor::PollUntil(std::optional<int64_t> now_ns) {
  absl::StatusOr<std::vector<RunRecord>> records = ReadRunRecords(fs_, records_dir_);
  if (!records.ok()) return records.status();
  MonitorOptions options = options_;
  if (now_ns) {
    int64_t end = *now_ns;
    for (const RunRecord& record : *records) end = std::max(end, record.t_ns);
    options.end_ns = end;
  }
  report_ = AnalyzeRunRecords(*std::move(records), options);
  ++successful_polls_;
  return absl::OkStatus();
}

}  // namespace handoff::sandbox
