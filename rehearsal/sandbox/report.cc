#include "rehearsal/sandbox/report.h"

#include <cstdio>
#include <cstdlib>
#include <map>
#include <utility>
#include <vector>

#include "common/base/strings.h"
#include "proto/vocabulary/node_state.h"

namespace handoff::sandbox {
namespace {

std::string StateName(v1::NodeState state) { return std::string(WireStateName(state, "unknown")); }

// The coordinator's own decisions about the managers, from its audit history: each lease it
// released (or decided not to) on a stopped manager's behalf, and what its live double-run
// detector found.
std::string AuditText(const v1::HistoryResponse& history) {
  std::vector<const v1::HistoryEntry*> releases;
  std::vector<const v1::HistoryEntry*> findings;
  int released = 0;
  for (const v1::HistoryEntry& entry : history.entries()) {
    if (entry.kind() == "lease-release") {
      releases.push_back(&entry);
      if (StartsWith(entry.message(), "released ")) ++released;
    }
    if (entry.kind() == "double-run" || entry.kind() == "no-runner") findings.push_back(&entry);
  }
  std::string text;
  if (releases.empty()) {
    text += "lease releases: none (each successor waited out its predecessor's lease)\n";
  } else {
    StrAppend(&text, "lease releases: ", released, " released, ",
              releases.size() - static_cast<size_t>(released), " not\n");
    for (const v1::HistoryEntry* entry : releases) {
      StrAppend(&text, "  ", entry->node(), ": ", entry->message(), "\n");
    }
  }
  StrAppend(&text, "double-run detector: ",
            findings.empty() ? std::string("nothing found") : StrCat(findings.size(), " finding(s)"),
            "\n");
  for (const v1::HistoryEntry* entry : findings) {
    StrAppend(&text, "  ", entry->kind(), ": ", entry->message(), "\n");
  }
  return text;
}

}  // namespace

std::string FormatSeconds(absl::Duration duration) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.1fs", absl::ToDoubleSeconds(duration));
  return text;
}

std::string ProgressLine(const v1::RolloutStatus& status) {
  std::string line = StrCat(v1::RolloutStatus::Phase_Name(status.phase()), ":");
  for (const v1::NodeProgress& node : status.nodes()) {
    StrAppend(&line, "  ", node.name(), " ", StateName(node.state()));
    if (node.moving_to() != v1::NODE_STATE_UNSPECIFIED) {
      StrAppend(&line, "→", StateName(node.moving_to()));
    }
    if (!node.connected()) StrAppend(&line, " (agent away)");
  }
  // The workers in aggregate, as `handoffctl status` counts them.
  if (const v1::WorkerSummary& workers = status.workers(); workers.known() > 0) {
    StrAppend(&line, "  | workers: ", workers.in_tree(), " in-tree, ", workers.external(),
              " external");
    if (workers.in_flight() > 0) StrAppend(&line, ", ", workers.in_flight(), " moving");
    if (workers.failed() > 0) StrAppend(&line, ", ", workers.failed(), " failed");
    if (workers.connected() < workers.known()) {
      StrAppend(&line, ", ", workers.known() - workers.connected(), " away");
    }
  }
  // Why it waits, or what it needs: the coordinator's own words, as `handoffctl status` shows.
  if ((status.phase() == v1::RolloutStatus::WAITING ||
       status.phase() == v1::RolloutStatus::STUCK) &&
      !status.next().empty()) {
    StrAppend(&line, "  — ", status.next());
  }
  return line;
}

std::string SummaryText(const SummaryInputs& inputs) {
  std::string text = StrCat("\n== summary ==\n", inputs.outcome, "\n");
  if (!inputs.downtime.empty()) StrAppend(&text, "downtime: ", inputs.downtime, "\n");
  if (!inputs.components.empty()) {
    text += "components:\n";
    for (const std::string& line : inputs.components) StrAppend(&text, "  ", line, "\n");
  }
  if (inputs.history) {
    std::map<std::string, int64_t> sent;  // command id -> when it was sent
    std::map<std::string, std::pair<int, int64_t>> per_node;  // moves, milliseconds
    int steps = 0;
    for (const v1::HistoryEntry& entry : inputs.history->entries()) {
      if (entry.kind() == "command") sent[entry.command_id()] = entry.unix_ms();
      if (entry.kind() == "result" && sent.count(entry.command_id()) > 0) {
        ++steps;
        per_node[entry.node()].first++;
        per_node[entry.node()].second += entry.unix_ms() - sent[entry.command_id()];
      }
    }
    StrAppend(&text, "steps: ", steps, " moves carried out by the agents\n");
    for (const auto& [node, totals] : per_node) {
      StrAppend(&text, "  ", node, ": ", totals.first, " moves, ",
                FormatSeconds(absl::Milliseconds(totals.second)), " in all\n");
    }
    text += AuditText(*inputs.history);
  }
  const MonitorReport& report = inputs.monitor;
  StrAppend(&text, "handovers (lease duration ", FormatSeconds(inputs.timing.lease_duration),
            ", long when over ", FormatSeconds(absl::Nanoseconds(report.long_gap_bound_ns)),
            "):\n");
  auto runner = [](const Run& run) {
    return StrCat(run.process.node, " ", run.process.component, " ", run.process.pid);
  };
  for (const ControllerStats& stats : report.controllers) {
    StrAppend(&text, "  ", stats.controller, ": ", stats.runs.size(), " runs, longest gap ",
              FormatSeconds(absl::Nanoseconds(stats.longest_gap_ns)), ", no runner for ",
              FormatSeconds(absl::Nanoseconds(stats.no_runner_ns)), ", ", stats.long_gaps,
              " long gap(s)\n");
    for (const Handover& handover : report.handovers) {
      if (handover.controller != stats.controller || !handover.from) continue;
      if (report.gaps_from_ns && handover.at_ns < *report.gaps_from_ns) continue;
      StrAppend(&text, "    +", FormatSeconds(absl::Nanoseconds(handover.at_ns - report.begin_ns)),
                " ", runner(*handover.from), " → ",
                handover.to ? runner(*handover.to) : std::string("nobody"), ": gap ",
                FormatSeconds(absl::Nanoseconds(handover.gap_ns)),
                handover.long_gap ? " (LONG)" : "", "\n");
    }
  }
  for (const std::string& line : inputs.cluster) StrAppend(&text, line, "\n");
  for (const std::string& line : inputs.metrics) StrAppend(&text, line, "\n");
  if (!inputs.timeline.empty()) {
    StrAppend(&text, "timeline: ", inputs.timeline,
              inputs.timeline_note.empty() ? "" : " ", inputs.timeline_note, "\n");
  }
  text += report.invariant_held
              ? "invariant held: no cloud controller ran in two processes at once\n"
              : "INVARIANT BROKEN:\n" + report.Summary();
  return text;
}

double SumOfSamples(std::string_view exposition, std::string_view metric) {
  double sum = 0;
  size_t start = 0;
  while (start < exposition.size()) {
    size_t end = exposition.find('\n', start);
    if (end == std::string_view::npos) end = exposition.size();
    std::string_view line = exposition.substr(start, end - start);
    start = end + 1;
    if (line.substr(0, metric.size()) != metric || line.size() == metric.size()) continue;
    const char next = line[metric.size()];
    if (next != ' ' && next != '{') continue;
    // The value follows the name or the label set; a timestamp may follow it.
    size_t value = next == '{' ? line.rfind('}') : metric.size();
    if (value == std::string_view::npos) continue;
    value = line.find_first_not_of(' ', value + 1);
    if (value == std::string_view::npos) continue;
    sum += std::strtod(std::string(line.substr(value)).c_str(), nullptr);
  }
  return sum;
}

}  // namespace handoff::sandbox
