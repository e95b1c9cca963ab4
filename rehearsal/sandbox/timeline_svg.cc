#include "rehearsal/sandbox/timeline_svg.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <utility>

#include "common/base/strings.h"
#include "common/kube/resource.h"
#include "rehearsal/sandbox/report.h"

namespace handoff::sandbox {
namespace {

constexpr char kKubeControllerManager[] = "kube-controller-manager";
constexpr char kCloudControllerManager[] = "cloud-controller-manager";

// The leases every run has, in the order an operator reads them: the in-tree manager's, the
// cloud-controller-manager's, then the migration lease both take for the migrated controllers.
const std::vector<std::string>& DefaultLeases() {
  static const std::vector<std::string> kLeases = {
      "kube-system/kube-controller-manager", "kube-system/cloud-controller-manager",
      "kube-system/cloud-provider-extraction-migration"};
  return kLeases;
}

// "12.3s" with the time since the start as the summary writes durations.
std::string At(double seconds) { return FormatSeconds(absl::Seconds(seconds)); }

BarKind ManagerKind(const std::string& component) {
  if (component == kKubeControllerManager) return BarKind::kKubeControllerManager;
  if (component == kCloudControllerManager) return BarKind::kCloudControllerManager;
  return BarKind::kOtherManager;
}

std::string RunEndText(const Run& run) {
  const std::string why = run.end_detail.empty() ? "" : StrCat(" (", run.end_detail, ")");
  switch (run.end) {
    case RunEnd::kStopped:
      return StrCat("stopped", why);
    case RunEnd::kExited:
      return StrCat("process exited", why);
    case RunEnd::kStillRunning:
      return "still running at the end";
  }
  return "";
}

std::string ProcessText(const ProcessId& process) {
  return StrCat(process.component, "@", process.node, " (pid ", process.pid, ")");
}

// Puts runs that overlap in time on separate rows, so that both show; returns the row count.
int AssignRows(std::vector<TimelineBar>& bars) {
  std::vector<double> row_ends;
  for (TimelineBar& bar : bars) {
    size_t row = 0;
    while (row < row_ends.size() && row_ends[row] > bar.from_s) ++row;
    if (row == row_ends.size()) row_ends.push_back(0);
    row_ends[row] = bar.to_s;
    bar.row = static_cast<int>(row);
  }
  return std::max<int>(1, static_cast<int>(row_ends.size()));
}

struct Builder {
  const TimelineInputs& inputs;
  int64_t start_ns = 0;
  double end_s = 0;

  double Seconds(int64_t t_ns) const {
    return std::max(0.0, static_cast<double>(t_ns - start_ns) / 1e9);
  }
  double SecondsMs(int64_t unix_ms) const { return Seconds(unix_ms * 1000000); }

  TimelineLane ControllerLane(const ControllerStats& stats) const {
    TimelineLane lane;
    lane.group = LaneGroup::kController;
    lane.name = stats.controller;
    for (const Run& run : stats.runs) {
      TimelineBar bar;
      bar.from_s = Seconds(run.from_ns);
      bar.to_s = Seconds(run.to_ns);
      bar.kind = ManagerKind(run.process.component);
      bar.label = ShortManagerName(run.process.component, run.process.node);
      bar.detail = StrCat(run.controller, ": ", ProcessText(run.process), " ran it under the ",
                          run.lock, " lock from ", At(bar.from_s), " to ", At(bar.to_s), ", ",
                          RunEndText(run));
      lane.bars.push_back(std::move(bar));
    }
    std::stable_sort(
        lane.bars.begin(), lane.bars.end(),
        [](const TimelineBar& a, const TimelineBar& b) { return a.from_s < b.from_s; });
    lane.rows = AssignRows(lane.bars);
    for (const Handover& handover : inputs.monitor.handovers) {
      if (handover.controller != stats.controller || handover.gap_ns <= 0) continue;
      TimelineSpan gap;
      // With a successor the gap ends where it starts; without one it runs from the last end.
      const int64_t from_ns = handover.to ? handover.at_ns - handover.gap_ns : handover.at_ns;
      gap.from_s = Seconds(from_ns);
      gap.to_s = Seconds(from_ns + handover.gap_ns);
      gap.label = FormatSeconds(absl::Nanoseconds(handover.gap_ns));
      gap.emphasised = handover.long_gap;
      gap.detail = StrCat(stats.controller, ": no runner for ", gap.label, " (", At(gap.from_s),
                          " to ", At(gap.to_s), ")");
      if (handover.from) {
        StrAppend(&gap.detail, ", after ",
                  ShortManagerName(handover.from->process.component, handover.from->process.node));
      }
      StrAppend(&gap.detail, handover.to ? StrCat(", until ", ShortManagerName(
                                                                   handover.to->process.component,
                                                                   handover.to->process.node))
                                         : ", until the end: nobody took over");
      if (handover.long_gap) {
        StrAppend(&gap.detail, "; long: over ",
                  FormatSeconds(absl::Nanoseconds(inputs.monitor.long_gap_bound_ns)));
      }
      lane.gaps.push_back(std::move(gap));
    }
    for (const Overlap& overlap : inputs.monitor.overlaps) {
      if (overlap.controller != stats.controller) continue;
      TimelineSpan span;
      span.from_s = Seconds(overlap.from_ns);
      span.to_s = Seconds(overlap.to_ns);
      span.label = StrCat("OVERLAP ",
                          FormatSeconds(absl::Nanoseconds(overlap.to_ns - overlap.from_ns)));
      span.emphasised = true;
      span.detail = StrCat("INVARIANT BROKEN: ", stats.controller, " ran in ",
                           ProcessText(overlap.first.process), " (", overlap.first.lock,
                           " lock) and in ", ProcessText(overlap.second.process), " (",
                           overlap.second.lock, " lock) at once, from ", At(span.from_s), " to ",
                           At(span.to_s));
      lane.overlaps.push_back(std::move(span));
    }
    if (lane.bars.empty()) lane.empty_note = "never ran";
    return lane;
  }

  TimelineLane LeaseLane(const std::string& lease,
                         const std::vector<LeaseHolderChange>& changes,
                         const std::vector<TimelineMark>& marks) const {
    TimelineLane lane;
    lane.group = LaneGroup::kLease;
    lane.name = lease;
    lane.marks = marks;
    std::optional<TimelineBar> open;
    auto close = [&](double at_s, const std::string& how) {
      if (!open) return;
      open->to_s = std::max(open->from_s, at_s);
      StrAppend(&open->detail, how);
      lane.bars.push_back(*std::move(open));
      open.reset();
    };
    for (const LeaseHolderChange& change : changes) {
      const double at_s = Seconds(change.t_ns);
      const std::string who = ShortManagerName(change.component, change.node);
      switch (change.kind) {
        case LeaseHolderChange::Kind::kAcquired:
          close(at_s, StrCat("; another holder took it at ", At(at_s)));
          open = TimelineBar{at_s,
                             at_s,
                             ManagerKind(change.component),
                             who,
                             StrCat(lease, ": held by ", change.component, "@", change.node,
                                    " (pid ", change.pid, "), acquired at ", At(at_s)),
                             0};
          break;
        case LeaseHolderChange::Kind::kLost:
          close(at_s, StrCat("; lost at ", At(at_s)));
          break;
        case LeaseHolderChange::Kind::kHolderExited:
          close(at_s, StrCat("; its process exited at ", At(at_s)));
          open = TimelineBar{at_s,
                             at_s,
                             BarKind::kHolderExited,
                             StrCat(who, " exited"),
                             StrCat(lease, ": still names ", change.component, "@", change.node,
                                    " (pid ", change.pid, "), whose process exited at ",
                                    At(at_s), "; nobody runs under it until it expires or is "
                                              "released"),
                             0};
          break;
        case LeaseHolderChange::Kind::kReleased:
          close(at_s, StrCat("; released by the coordinator at ", At(at_s)));
          break;
        case LeaseHolderChange::Kind::kObserved:
          lane.marks.push_back(
              TimelineMark{at_s, "",
                           StrCat(lease, ": the API server names ",
                                  change.identity.empty() ? "nobody" : change.identity,
                                  " as holder at ", At(at_s))});
          break;
      }
    }
    close(end_s, "; held at the end");
    std::stable_sort(lane.marks.begin(), lane.marks.end(),
                     [](const TimelineMark& a, const TimelineMark& b) { return a.at_s < b.at_s; });
    if (lane.bars.empty()) lane.empty_note = "no holder recorded";
    return lane;
  }
};

struct Move {
  std::string node;
  std::string text;  // "in-tree → prepared"
  double sent_s = 0;
  std::optional<double> result_s;
  std::string result;  // the result's message
};

// "move in-tree → prepared" (or "… sent again: …") → "in-tree → prepared".
std::string MoveText(const std::string& message) {
  std::string text = message;
  if (text.rfind("move ", 0) == 0) text = text.substr(5);
  for (const char* tail : {" sent again", " never reached", " took effect", ":"}) {
    size_t at = text.find(tail);
    if (at != std::string::npos) text = text.substr(0, at);
  }
  return text;
}

BarKind MoveKind(const Move& move) {
  if (!move.result_s) return BarKind::kMoveUnfinished;
  if (move.result.find(" succeeded") != std::string::npos ||
      move.result.find(" took effect") != std::string::npos) {
    return BarKind::kMoveSucceeded;
  }
  if (move.result.find(" interrupted") != std::string::npos) return BarKind::kMoveUnfinished;
  return BarKind::kMoveFailed;
}

// What the result says beyond the move: "rolled back" from "prepared → migrated rolled back: …".
std::string OutcomeWords(const Move& move) {
  std::string rest = move.result;
  if (rest.rfind("move ", 0) == 0) rest = rest.substr(5);
  if (rest.rfind(move.text, 0) == 0) rest = rest.substr(move.text.size());
  size_t colon = rest.find(':');
  if (colon != std::string::npos) rest = rest.substr(0, colon);
  while (!rest.empty() && rest.front() == ' ') rest.erase(rest.begin());
  return rest;
}

// Operator calls and rollout-wide events, drawn across every lane.
bool IsRolloutEvent(const std::string& kind) {
  static const std::set<std::string> kKinds = {"start",   "pause",    "resume",
                                               "abort",   "rollback", "finalize",
                                               "resume-after-restart", "double-run"};
  return kKinds.count(kind) > 0;
}

}  // namespace

std::string ShortManagerName(const std::string& component, const std::string& node) {
  std::string name = component;
  if (component == kKubeControllerManager) name = "KCM";
  if (component == kCloudControllerManager) name = "CCM";
  if (name.empty()) name = "?";
  return node.empty() ? name : StrCat(name, " ", node);
}

Timeline BuildTimeline(const TimelineInputs& inputs) {
  Builder builder{inputs, absl::ToUnixNanos(inputs.started), 0};
  Timeline timeline;
  timeline.title = StrCat("handoff sandbox: ", inputs.outcome);
  timeline.invariant_held = inputs.monitor.invariant_held;
  timeline.verdict =
      inputs.monitor.invariant_held
          ? "invariant held: no cloud controller ran in two processes at once"
          : StrCat("INVARIANT BROKEN: ", inputs.monitor.overlaps.size(),
                   " overlap(s), a cloud controller ran in two processes at once (red)");
  timeline.start_time = absl::FormatTime("%Y-%m-%d %H:%M:%S UTC", inputs.started,
                                         absl::UTCTimeZone());

  // The right end: the last thing any source saw.
  double end_s = builder.Seconds(inputs.monitor.end_ns);
  for (const ControllerStats& stats : inputs.monitor.controllers) {
    for (const Run& run : stats.runs) end_s = std::max(end_s, builder.Seconds(run.to_ns));
  }
  for (const LeaseHolderChange& change : inputs.lease_holders) {
    end_s = std::max(end_s, builder.Seconds(change.t_ns));
  }
  if (inputs.history) {
    for (const v1::HistoryEntry& entry : inputs.history->entries()) {
      end_s = std::max(end_s, builder.SecondsMs(entry.unix_ms()));
    }
  }
  builder.end_s = timeline.end_s = std::max(end_s, 1.0);

  for (const ControllerStats& stats : inputs.monitor.controllers) {
    timeline.lanes.push_back(builder.ControllerLane(stats));
  }

  // Leases: the holders' changes, with the coordinator's releases from the history.
  std::map<std::string, std::vector<LeaseHolderChange>> per_lease;
  std::map<std::string, std::vector<TimelineMark>> lease_marks;
  for (const LeaseHolderChange& change : inputs.lease_holders) {
    per_lease[change.lease].push_back(change);
  }
  std::map<std::string, Move> moves;  // command id -> move
  std::vector<std::string> move_order;
  std::set<std::string> nodes;
  std::map<std::string, std::vector<TimelineMark>> node_marks;
  std::map<std::string, std::vector<TimelineSpan>> away;
  std::map<std::string, double> away_since;
  if (inputs.history) {
    for (const v1::HistoryEntry& entry : inputs.history->entries()) {
      const double at_s = builder.SecondsMs(entry.unix_ms());
      const std::string& kind = entry.kind();
      if (kind == "command" && !entry.command_id().empty()) {
        if (moves.count(entry.command_id()) == 0) {
          moves[entry.command_id()] = Move{entry.node(), MoveText(entry.message()), at_s, {}, ""};
          move_order.push_back(entry.command_id());
        }
        nodes.insert(entry.node());
      } else if (kind == "result" && moves.count(entry.command_id()) > 0) {
        Move& move = moves[entry.command_id()];
        move.result_s = at_s;
        move.result = entry.message();
      } else if (kind == "lease-release") {
        kube::Json detail =
            kube::Json::parse(entry.detail_json(), nullptr, /*allow_exceptions=*/false);
        std::string lease, outcome;
        if (detail.is_object() && detail.contains("lease") && detail["lease"].is_string()) {
          lease = detail["lease"].get<std::string>();
        }
        if (detail.is_object() && detail.contains("outcome") && detail["outcome"].is_string()) {
          outcome = detail["outcome"].get<std::string>();
        }
        if (lease.empty()) continue;
        const bool released = outcome == "released";
        lease_marks[lease].push_back(TimelineMark{at_s, released ? "released" : "not released",
                                                  StrCat(entry.node(), ": ", entry.message())});
        if (released) {
          LeaseHolderChange change;
          change.t_ns = builder.start_ns + static_cast<int64_t>(at_s * 1e9);
          change.lease = lease;
          change.kind = LeaseHolderChange::Kind::kReleased;
          change.node = entry.node();
          std::vector<LeaseHolderChange>& changes = per_lease[lease];
          auto at = std::upper_bound(changes.begin(), changes.end(), change,
                                     [](const LeaseHolderChange& a, const LeaseHolderChange& b) {
                                       return a.t_ns < b.t_ns;
                                     });
          changes.insert(at, change);
        }
      } else if (kind == "halt" && !entry.node().empty()) {
        node_marks[entry.node()].push_back(
            TimelineMark{at_s, "halt", StrCat("halt: ", entry.message())});
        nodes.insert(entry.node());
      } else if (kind == "disconnect" && !entry.node().empty()) {
        away_since.emplace(entry.node(), at_s);
      } else if (kind == "connect" && !entry.node().empty()) {
        auto since = away_since.find(entry.node());
        if (since != away_since.end()) {
          away[entry.node()].push_back(TimelineSpan{
              since->second, at_s, "agent away",
              StrCat(entry.node(), ": agent away from ", At(since->second), " to ", At(at_s)),
              false});
          away_since.erase(since);
        }
      } else if (IsRolloutEvent(kind)) {
        timeline.events.push_back(TimelineMark{
            at_s, kind == "resume-after-restart" ? "coordinator started" : kind,
            StrCat(At(at_s), " ", kind, " (", entry.actor(), ")",
                   entry.message().empty() ? "" : StrCat(": ", entry.message()))});
      }
    }
  }
  for (const auto& [node, since] : away_since) {
    away[node].push_back(TimelineSpan{
        since, builder.end_s, "agent away",
        StrCat(node, ": agent away from ", At(since), " to the end"), false});
  }

  std::vector<std::string> leases = DefaultLeases();
  for (const auto& [lease, changes] : per_lease) {
    if (std::find(leases.begin(), leases.end(), lease) == leases.end()) leases.push_back(lease);
  }
  for (const auto& [lease, marks] : lease_marks) {
    if (std::find(leases.begin(), leases.end(), lease) == leases.end()) leases.push_back(lease);
  }
  for (const std::string& lease : leases) {
    timeline.lanes.push_back(builder.LeaseLane(lease, per_lease[lease], lease_marks[lease]));
  }

  for (const std::string& node : nodes) {
    TimelineLane lane;
    lane.group = LaneGroup::kNode;
    lane.name = node;
    for (const std::string& id : move_order) {
      const Move& move = moves[id];
      if (move.node != node) continue;
      TimelineBar bar;
      bar.from_s = move.sent_s;
      bar.to_s = move.result_s.value_or(builder.end_s);
      bar.kind = MoveKind(move);
      bar.label = move.text;
      if (bar.kind == BarKind::kMoveFailed) StrAppend(&bar.label, " ✗ ", OutcomeWords(move));
      if (bar.kind == BarKind::kMoveUnfinished) {
        StrAppend(&bar.label, move.result_s ? " (interrupted)" : " (no result)");
      }
      bar.detail = StrCat(node, ": move ", move.text, ", sent at ", At(move.sent_s));
      StrAppend(&bar.detail, move.result_s ? StrCat(", result at ", At(*move.result_s), " (",
                                                    At(*move.result_s - move.sent_s),
                                                    "): ", move.result)
                                           : ", no result by the end of the run");
      lane.bars.push_back(std::move(bar));
    }
    lane.rows = AssignRows(lane.bars);
    lane.marks = node_marks[node];
    lane.away = away[node];
    if (lane.bars.empty()) lane.empty_note = "no moves";
    timeline.lanes.push_back(std::move(lane));
  }
  return timeline;
}

// --- Rendering.

namespace {

constexpr double kWidth = 1600;
constexpr double kLeft = 300;  // lane names
constexpr double kRight = 40;
constexpr double kRowHeight = 24;
constexpr double kBarHeight = 18;
constexpr double kLabelRow = 14;  // a strip of labels above or below the bars
constexpr double kFontSize = 11;

struct Style {
  const char* fill;
  const char* stroke;
  const char* text;
  const char* legend;
};

Style StyleOf(BarKind kind) {
  switch (kind) {
    case BarKind::kKubeControllerManager:
      return {"#4a7bc0", "#2c5590", "#ffffff", "kube-controller-manager (KCM)"};
    case BarKind::kCloudControllerManager:
      return {"#2a9d8f", "#1b6b61", "#ffffff", "cloud-controller-manager (CCM)"};
    case BarKind::kOtherManager:
      return {"#8d6cab", "#5f4678", "#ffffff", "other manager"};
    case BarKind::kHolderExited:
      return {"url(#exited)", "#8a8a8a", "#333333", "lease names an exited holder"};
    case BarKind::kMoveSucceeded:
      return {"#5aa853", "#3b7a36", "#ffffff", "move succeeded"};
    case BarKind::kMoveFailed:
      return {"#d62828", "#8f1414", "#ffffff", "move failed / rolled back (✗)"};
    case BarKind::kMoveUnfinished:
      return {"#e9c46a", "#a88a35", "#333333", "move interrupted / no result"};
  }
  return {"#999999", "#666666", "#ffffff", ""};
}

std::string Num(double value) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.1f", value);
  return text;
}

// Code points of UTF-8 `text`.
size_t Length(const std::string& text) {
  size_t n = 0;
  for (unsigned char c : text) n += (c & 0xC0) != 0x80;
  return n;
}

// A generous estimate of the width of `text` in the sans-serif font (DejaVu Sans averages a
// little under 0.6 em), so that a label said to fit does fit.
double TextWidth(const std::string& text, double size) {
  return static_cast<double>(Length(text)) * size * 0.6;
}

// Greedy rows for labels [x0, x1]: the first row whose last label ends before x0.
class LabelRows {
 public:
  int Place(double x0, double x1) {
    size_t row = 0;
    while (row < ends_.size() && ends_[row] + 6 > x0) ++row;
    if (row == ends_.size()) ends_.push_back(0);
    ends_[row] = x1;
    return static_cast<int>(row);
  }
  int count() const { return static_cast<int>(ends_.size()); }

 private:
  std::vector<double> ends_;
};

struct Svg {
  std::string out;

  void Text(double x, double y, const std::string& text, const std::string& attributes = "") {
    StrAppend(&out, "<text x=\"", Num(x), "\" y=\"", Num(y), "\"",
              attributes.empty() ? "" : " ", attributes, ">", EscapeXml(text), "</text>\n");
  }
  void Rect(double x, double y, double w, double h, const std::string& attributes) {
    StrAppend(&out, "<rect x=\"", Num(x), "\" y=\"", Num(y), "\" width=\"", Num(w),
              "\" height=\"", Num(h), "\" ", attributes, "/>\n");
  }
  void Line(double x1, double y1, double x2, double y2, const std::string& attributes) {
    StrAppend(&out, "<line x1=\"", Num(x1), "\" y1=\"", Num(y1), "\" x2=\"", Num(x2),
              "\" y2=\"", Num(y2), "\" ", attributes, "/>\n");
  }
  void Open(const std::string& css_class, const std::string& detail) {
    StrAppend(&out, "<g class=\"", css_class, "\"><title>", EscapeXml(detail), "</title>\n");
  }
  void Close() { out += "</g>\n"; }
};

// An event's label starts just right of its line, or ends left of it near the right edge.
double EventLabelX(double x, const std::string& label) {
  const double width = TextWidth(label, 10);
  return x + 3 + width <= kWidth - 5 ? x + 3 : x - 3 - width;
}

double TickStep(double end_s) {
  for (double step : {0.5, 1.0, 2.0, 5.0, 10.0, 15.0, 30.0, 60.0, 120.0, 300.0, 600.0}) {
    if (end_s / step <= 20) return step;
  }
  return 1800;
}

std::string TickLabel(double seconds) {
  char text[32];
  if (seconds == std::floor(seconds)) {
    std::snprintf(text, sizeof(text), "%.0fs", seconds);
  } else {
    std::snprintf(text, sizeof(text), "%.1fs", seconds);
  }
  return text;
}

const char* GroupTitle(LaneGroup group) {
  switch (group) {
    case LaneGroup::kController:
      return "Cloud controllers: which manager on which node ran each (gaps shaded, with their "
             "length)";
    case LaneGroup::kLease:
      return "Leases (kube-system): who held each";
    case LaneGroup::kNode:
      return "Nodes: each move from the coordinator's command to the agent's result";
  }
  return "";
}

// The vertical layout of one lane.
struct LaneLayout {
  double top = 0;
  double bars_top = 0;  // below the strip of gap and overlap labels
  double height = 0;
  std::vector<int> span_label_rows;  // gaps then overlaps
  std::vector<int> mark_label_rows;  // the marks that have a label
  std::vector<int> bar_label_rows;   // -1: inside the bar; -2: not drawn
};

}  // namespace

std::string EscapeXml(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    const unsigned char c = text[i];
    switch (c) {
      case '&':
        out += "&amp;";
        continue;
      case '<':
        out += "&lt;";
        continue;
      case '>':
        out += "&gt;";
        continue;
      case '"':
        out += "&quot;";
        continue;
      case '\'':
        out += "&apos;";
        continue;
      default:
        break;
    }
    if (c < 0x20 && c != '\t' && c != '\n' && c != '\r') {
      out += "\xEF\xBF\xBD";  // XML 1.0 has no control characters but these three
      continue;
    }
    if (c < 0x80) {
      out += static_cast<char>(c);
      continue;
    }
    // A well-formed UTF-8 sequence passes; anything else becomes U+FFFD.
    size_t length = c >= 0xF0 && c <= 0xF4 ? 4 : c >= 0xE0 ? 3 : c >= 0xC2 && c < 0xE0 ? 2 : 0;
    bool valid = length > 0 && i + length <= text.size();
    for (size_t k = 1; valid && k < length; ++k) {
      valid = (static_cast<unsigned char>(text[i + k]) & 0xC0) == 0x80;
    }
    if (valid && length == 3) {
      const unsigned char c1 = text[i + 1];
      valid = !(c == 0xE0 && c1 < 0xA0) && !(c == 0xED && c1 >= 0xA0);  // overlong, surrogates
      // U+FFFE and U+FFFF are not XML characters.
      if (valid && c == 0xEF && c1 == 0xBF && static_cast<unsigned char>(text[i + 2]) >= 0xBE) {
        valid = false;
      }
    }
    if (valid && length == 4) {
      const unsigned char c1 = text[i + 1];
      valid = !(c == 0xF0 && c1 < 0x90) && !(c == 0xF4 && c1 >= 0x90);
    }
    if (!valid) {
      out += "\xEF\xBF\xBD";
      continue;
    }
    out.append(text, i, length);
    i += length - 1;
  }
  return out;
}

std::string RenderTimelineSvg(const Timeline& timeline) {
  const double plot = kWidth - kLeft - kRight;
  const double end_s = std::max(timeline.end_s, 1e-3);
  auto x_of = [&](double seconds) {
    return kLeft + std::clamp(seconds, 0.0, end_s) / end_s * plot;
  };

  // Layout first: each lane's height depends on its rows of bars and labels.
  std::vector<LaneLayout> layouts(timeline.lanes.size());
  double y = 150;
  LabelRows event_rows;
  std::vector<int> event_label_rows;
  for (const TimelineMark& event : timeline.events) {
    const double x = x_of(event.at_s);
    const double x0 = EventLabelX(x, event.label);
    event_label_rows.push_back(event_rows.Place(x0, x0 + TextWidth(event.label, 10)));
  }
  const double events_top = y;
  y += event_rows.count() * 12 + 18;  // the event labels, then the axis's tick labels
  const double lanes_top = y;
  std::optional<LaneGroup> group;
  for (size_t i = 0; i < timeline.lanes.size(); ++i) {
    const TimelineLane& lane = timeline.lanes[i];
    LaneLayout& layout = layouts[i];
    if (!group || *group != lane.group) {
      group = lane.group;
      y += 30;  // the group's heading
    }
    layout.top = y;
    LabelRows above;
    for (const std::vector<TimelineSpan>* spans : {&lane.gaps, &lane.overlaps}) {
      for (const TimelineSpan& span : *spans) {
        const double center = (x_of(span.from_s) + x_of(span.to_s)) / 2;
        const double width = TextWidth(span.label, kFontSize);
        layout.span_label_rows.push_back(above.Place(center - width / 2, center + width / 2));
      }
    }
    for (const TimelineMark& mark : lane.marks) {
      if (mark.label.empty()) continue;
      const double width = TextWidth(mark.label, 10);
      const double x0 = std::min(x_of(mark.at_s) - width / 2, kWidth - kRight - width);
      layout.mark_label_rows.push_back(above.Place(x0, x0 + width));
    }
    LabelRows below;
    for (const TimelineBar& bar : lane.bars) {
      const double x0 = x_of(bar.from_s), x1 = x_of(bar.to_s);
      const double width = TextWidth(bar.label, kFontSize);
      if (width + 8 <= x1 - x0) {
        layout.bar_label_rows.push_back(-1);
        continue;
      }
      const double center =
          std::clamp((x0 + x1) / 2, kLeft + width / 2, kWidth - kRight - width / 2);
      const int row = below.Place(center - width / 2, center + width / 2);
      layout.bar_label_rows.push_back(row < 3 ? row : -2);
    }
    layout.bars_top = y + 6 + above.count() * kLabelRow;
    layout.height = 6 + above.count() * kLabelRow + lane.rows * kRowHeight +
                    std::min(below.count(), 3) * kLabelRow + 6;
    y += layout.height;
  }
  const double lanes_bottom = y;
  const double legend_top = lanes_bottom + 40;
  const double height = legend_top + 70;

  Svg svg;
  StrAppend(&svg.out, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n",
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"", Num(kWidth), "\" height=\"",
            Num(height), "\" viewBox=\"0 0 ", Num(kWidth), " ", Num(height),
            "\" font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\" font-size=\"",
            Num(kFontSize), "\">\n");
  svg.out +=
      "<defs>\n"
      "<pattern id=\"gap\" width=\"8\" height=\"8\" patternUnits=\"userSpaceOnUse\" "
      "patternTransform=\"rotate(45)\"><rect width=\"8\" height=\"8\" fill=\"#fde8d7\"/>"
      "<line x1=\"0\" y1=\"0\" x2=\"0\" y2=\"8\" stroke=\"#f08a4b\" stroke-width=\"3\"/>"
      "</pattern>\n"
      "<pattern id=\"exited\" width=\"6\" height=\"6\" patternUnits=\"userSpaceOnUse\" "
      "patternTransform=\"rotate(-45)\"><rect width=\"6\" height=\"6\" fill=\"#eeeeee\"/>"
      "<line x1=\"0\" y1=\"0\" x2=\"0\" y2=\"6\" stroke=\"#bbbbbb\" stroke-width=\"2\"/>"
      "</pattern>\n"
      "</defs>\n";
  svg.Rect(0, 0, kWidth, height, "fill=\"#ffffff\"");

  // Title, verdict, caption.
  svg.Text(20, 34, timeline.title, "font-size=\"20\" font-weight=\"bold\" fill=\"#222222\"");
  svg.Text(20, 60, timeline.verdict,
           StrCat("font-size=\"15\" font-weight=\"bold\" fill=\"",
                  timeline.invariant_held ? "#2b7a2b" : "#c01818", "\""));
  svg.Text(20, 82,
           StrCat("time in seconds since the start of the run (", timeline.start_time,
                  "); hover over a bar, gap or mark for its details"),
           "font-size=\"12\" fill=\"#666666\"");

  // Legend, near the top where an operator looks first, and again at the bottom.
  auto legend = [&](double top) {
    double x = 20;
    const std::vector<BarKind> kinds = {
        BarKind::kKubeControllerManager, BarKind::kCloudControllerManager,
        BarKind::kOtherManager,          BarKind::kHolderExited,
        BarKind::kMoveSucceeded,         BarKind::kMoveFailed,
        BarKind::kMoveUnfinished};
    auto entry = [&](const std::string& fill, const std::string& stroke, const std::string& text) {
      svg.Rect(x, top, 22, 12, StrCat("fill=\"", fill, "\" stroke=\"", stroke, "\""));
      svg.Text(x + 28, top + 10, text, "fill=\"#333333\"");
      x += 28 + TextWidth(text, kFontSize) + 18;
    };
    svg.out += "<g class=\"legend\">\n";
    for (BarKind kind : kinds) {
      const Style style = StyleOf(kind);
      entry(style.fill, style.stroke, style.legend);
    }
    x = 20;
    top += 20;
    entry("url(#gap)", "#f08a4b", "no runner (gap, with its length)");
    entry("#d62828\" fill-opacity=\"0.35", "#c01818", "OVERLAP: two runners at once");
    entry("#9a9a9a", "#777777", "agent away (band under the moves)");
    svg.Line(x, top + 6, x + 22, top + 6, "stroke=\"#555555\" stroke-dasharray=\"4,3\"");
    svg.Text(x + 28, top + 10, "operator call / rollout event", "fill=\"#333333\"");
    x += 28 + TextWidth("operator call / rollout event", kFontSize) + 18;
    svg.out += "<path d=\"M" + Num(x + 11) + "," + Num(top) + " l6,6 l-6,6 l-6,-6 z\" " +
               "fill=\"#333333\"/>\n";
    svg.Text(x + 28, top + 10, "release / halt / API server view", "fill=\"#333333\"");
    svg.out += "</g>\n";
  };
  legend(100);

  // Lane backgrounds and names.
  group.reset();
  for (size_t i = 0; i < timeline.lanes.size(); ++i) {
    const TimelineLane& lane = timeline.lanes[i];
    const LaneLayout& layout = layouts[i];
    if (!group || *group != lane.group) {
      group = lane.group;
      svg.Text(12, layout.top - 10, GroupTitle(lane.group),
               "font-size=\"14\" font-weight=\"bold\" fill=\"#222222\"");
      svg.Line(12, layout.top - 4, kWidth - kRight, layout.top - 4, "stroke=\"#999999\"");
    }
    svg.Rect(0, layout.top, kWidth, layout.height,
             StrCat("fill=\"", i % 2 == 0 ? "#f6f7f9" : "#ffffff", "\""));
    // A lease's namespace is in its group's heading: the name alone fits the column.
    const size_t slash = lane.name.find('/');
    svg.Text(20, layout.bars_top + kBarHeight - 4,
             lane.group == LaneGroup::kLease && slash != std::string::npos
                 ? lane.name.substr(slash + 1)
                 : lane.name,
             "font-size=\"13\" font-weight=\"bold\" fill=\"#222222\"");
  }

  // The axis: grid lines over the lanes, tick labels above and below.
  const double step = TickStep(end_s);
  svg.out += "<g class=\"axis\">\n";
  for (int k = 0; k * step <= end_s + 1e-9; ++k) {
    const double x = x_of(k * step);
    svg.Line(x, lanes_top - 4, x, lanes_bottom, "stroke=\"#dddddd\"");
    svg.Text(x, lanes_top - 8, TickLabel(k * step), "text-anchor=\"middle\" fill=\"#555555\"");
    svg.Text(x, lanes_bottom + 16, TickLabel(k * step), "text-anchor=\"middle\" fill=\"#555555\"");
  }
  svg.Line(kLeft, lanes_bottom, kWidth - kRight, lanes_bottom, "stroke=\"#555555\"");
  svg.Text(kLeft + plot / 2, lanes_bottom + 32, "seconds since the start of the run",
           "text-anchor=\"middle\" fill=\"#555555\"");
  svg.out += "</g>\n";

  // The lanes' content.
  for (size_t i = 0; i < timeline.lanes.size(); ++i) {
    const TimelineLane& lane = timeline.lanes[i];
    const LaneLayout& layout = layouts[i];
    const double rows_height = lane.rows * kRowHeight;
    // A band under the moves rather than behind them: a move is often under way while its
    // agent is away (that is when the agent-kill fault strikes), and must stay visible.
    for (const TimelineSpan& span : lane.away) {
      const double x0 = x_of(span.from_s), x1 = x_of(span.to_s);
      svg.Open("away", span.detail);
      svg.Rect(x0, layout.bars_top + rows_height - 5, std::max(x1 - x0, 3.0), 4,
               "fill=\"#9a9a9a\" stroke=\"#777777\" stroke-width=\"0.5\"");
      svg.Close();
    }
    if (!lane.empty_note.empty()) {
      svg.Text(kLeft + 8, layout.bars_top + kBarHeight - 5, lane.empty_note,
               "fill=\"#888888\" font-style=\"italic\"");
    }
    // An overlap is a red band behind the bars, so that the runs stay readable in their
    // colours with the red between and around them; its outline and label come after the bars.
    for (const TimelineSpan& span : lane.overlaps) {
      const double x0 = x_of(span.from_s);
      svg.Rect(x0, layout.bars_top - 3, std::max(x_of(span.to_s) - x0, 2.0), rows_height + 2,
               "fill=\"#d62828\" fill-opacity=\"0.35\"");
    }
    for (size_t b = 0; b < lane.bars.size(); ++b) {
      const TimelineBar& bar = lane.bars[b];
      const Style style = StyleOf(bar.kind);
      const double x0 = x_of(bar.from_s);
      const double w = std::max(x_of(bar.to_s) - x0, 2.0);
      const double top = layout.bars_top + bar.row * kRowHeight;
      svg.Open(lane.group == LaneGroup::kController ? "run"
               : lane.group == LaneGroup::kLease    ? "lease"
                                                    : "move",
               bar.detail);
      svg.Rect(x0, top, w, kBarHeight,
               StrCat("rx=\"3\" fill=\"", style.fill, "\" stroke=\"", style.stroke, "\""));
      const int row = b < layout.bar_label_rows.size() ? layout.bar_label_rows[b] : -2;
      if (row == -1) {
        svg.Text(x0 + w / 2, top + kBarHeight - 5, bar.label,
                 StrCat("text-anchor=\"middle\" fill=\"", style.text, "\""));
      } else if (row >= 0) {
        const double width = TextWidth(bar.label, kFontSize);
        const double center = std::clamp(x0 + w / 2, kLeft + width / 2,
                                         kWidth - kRight - width / 2);
        const double label_y = layout.bars_top + rows_height + row * kLabelRow + 8;
        svg.Line(x0 + w / 2, top + kBarHeight, center, label_y - 9,
                 StrCat("stroke=\"", style.stroke, "\" stroke-width=\"0.8\""));
        svg.Text(center, label_y, bar.label,
                 StrCat("text-anchor=\"middle\" font-size=\"10\" fill=\"", style.stroke, "\""));
      }
      svg.Close();
    }
    size_t label_index = 0;
    for (const std::vector<TimelineSpan>* spans : {&lane.gaps, &lane.overlaps}) {
      const bool overlaps = spans == &lane.overlaps;
      for (const TimelineSpan& span : *spans) {
        const double x0 = x_of(span.from_s);
        const double w = std::max(x_of(span.to_s) - x0, 2.0);
        const int row = layout.span_label_rows[label_index++];
        svg.Open(overlaps ? "overlap" : "gap", span.detail);
        svg.Rect(x0, layout.bars_top - (overlaps ? 3 : 2), w, rows_height + (overlaps ? 2 : 0),
                 overlaps ? "fill=\"none\" stroke=\"#c01818\" stroke-width=\"2\""
                          : "fill=\"url(#gap)\" stroke=\"#f08a4b\"");
        svg.Text(x0 + w / 2, layout.top + 6 + row * kLabelRow + 10, span.label,
                 StrCat("text-anchor=\"middle\" font-weight=\"bold\" fill=\"",
                        overlaps           ? "#c01818"
                        : span.emphasised ? "#b3400a"
                                          : "#c8641e",
                        "\""));
        svg.Close();
      }
    }
    size_t mark_index = 0;
    for (const TimelineMark& mark : lane.marks) {
      const double x = x_of(mark.at_s);
      const double mid = layout.bars_top + kBarHeight / 2;
      svg.Open("mark", mark.detail);
      if (mark.label.empty()) {
        svg.Line(x, layout.bars_top - 3, x, layout.bars_top + 3, "stroke=\"#777777\"");
      } else {
        svg.out += StrCat("<path d=\"M", Num(x), ",", Num(mid - 7), " l6,7 l-6,7 l-6,-7 z\" ",
                          "fill=\"#333333\" stroke=\"#ffffff\"/>\n");
        const double width = TextWidth(mark.label, 10);
        const double x0 = std::min(x - width / 2, kWidth - kRight - width);
        const int row = layout.mark_label_rows[mark_index++];
        svg.Text(x0, layout.top + 6 + row * kLabelRow + 10, mark.label,
                 "font-size=\"10\" fill=\"#333333\"");
      }
      svg.Close();
    }
  }

  // Rollout-wide events: a dashed line across the lanes, labelled at the top.
  for (size_t i = 0; i < timeline.events.size(); ++i) {
    const TimelineMark& event = timeline.events[i];
    const double x = x_of(event.at_s);
    svg.Open("event", event.detail);
    svg.Line(x, events_top + event_label_rows[i] * 12 + 2, x, lanes_bottom,
             "stroke=\"#555555\" stroke-dasharray=\"4,3\"");
    svg.Text(EventLabelX(x, event.label), events_top + event_label_rows[i] * 12 + 10, event.label,
             "font-size=\"10\" fill=\"#333333\"");
    svg.Close();
  }

  legend(legend_top);
  svg.out += "</svg>\n";
  return svg.out;
}

std::string TimelineSvg(const TimelineInputs& inputs) {
  return RenderTimelineSvg(BuildTimeline(inputs));
}

}  // namespace handoff::sandbox
