// The picture of a sandbox run for an operator: an SVG timeline (hand-written XML, no library)
// with, per cloud controller, which manager on which node ran it (overlaps, the broken
// invariant, in red; every gap with no runner shaded and labelled with its length), one lane per
// leader-election lease with its holders, and one lane per node with each move the coordinator's
// audit history shows (failed and rolled-back moves marked). Time runs in seconds since the start
// of the run.
//
// Two pure steps, so that a test can check the content without reading SVG:
//   BuildTimeline      the inputs → the lanes, bars, gaps and marks (the data model below);
//   RenderTimelineSvg  the model → the SVG text.
#ifndef HANDOFF_REHEARSAL_SANDBOX_TIMELINE_SVG_H_
#define HANDOFF_REHEARSAL_SANDBOX_TIMELINE_SVG_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "handoff/v1/handoff.pb.h"
#include "rehearsal/monitor/monitor.h"
#include "rehearsal/sandbox/lease_holders.h"

namespace handoff::sandbox {

struct TimelineInputs {
  std::string outcome;  // the summary's first line: what completed, or what did not
  absl::Time started;   // time 0 of the picture
  MonitorReport monitor;
  // The coordinator's audit history; std::nullopt when it could not be read (then no moves).
  std::optional<v1::HistoryResponse> history;
  std::vector<LeaseHolderChange> lease_holders;  // in time order
};

enum class BarKind {
  kKubeControllerManager,  // a run of a controller, or a lease held, by this kind of manager
  kCloudControllerManager,
  kOtherManager,
  kHolderExited,   // a lease that names a holder whose process has exited
  kMoveSucceeded,  // a move from its command to its result
  kMoveFailed,     // refused, rolled back, needs attention, never reached the agent
  kMoveUnfinished,  // interrupted, or no result by the end of the run
};

// One bar in a lane: [from_s, to_s] seconds since the start, on sub-row `row` of its lane.
struct TimelineBar {
  double from_s = 0;
  double to_s = 0;
  BarKind kind = BarKind::kOtherManager;
  std::string label;   // drawn on or under the bar: "KCM cp-1", "in-tree → prepared ✗"
  std::string detail;  // the bar's tooltip: everything known about it, in one line
  int row = 0;
};

// A stretch of a lane: a gap with no runner, an overlap (two runners), an agent away.
struct TimelineSpan {
  double from_s = 0;
  double to_s = 0;
  std::string label;  // gaps: the length, "2.3s"; overlaps: "OVERLAP 0.4s"
  std::string detail;
  bool emphasised = false;  // a long gap (over the monitor's bound)
};

// An instant in a lane (a lease release, a halt) or, in Timeline::events, across all lanes (an
// operator's call).
struct TimelineMark {
  double at_s = 0;
  std::string label;
  std::string detail;
};

enum class LaneGroup { kController, kLease, kNode };

struct TimelineLane {
  LaneGroup group = LaneGroup::kController;
  std::string name;  // "service", "kube-system/kube-controller-manager", "cp-1"
  int rows = 1;      // sub-rows of bars: more than one where runs overlap
  std::vector<TimelineBar> bars;
  std::vector<TimelineSpan> gaps;
  std::vector<TimelineSpan> overlaps;
  std::vector<TimelineSpan> away;  // nodes: the agent was not connected
  std::vector<TimelineMark> marks;
  std::string empty_note;  // said in the lane when it has no bar ("no holder recorded")
};

struct Timeline {
  std::string title;    // "handoff sandbox: <outcome>"
  std::string verdict;  // the invariant's verdict, one line
  bool invariant_held = true;
  std::string start_time;  // RFC 3339, for the axis's caption
  double end_s = 0;        // the right end of the axis
  std::vector<TimelineLane> lanes;  // controllers, then leases, then nodes
  std::vector<TimelineMark> events;
};

// "KCM cp-1", "CCM cp-2": a manager's short name on a node; other components keep their name.
std::string ShortManagerName(const std::string& component, const std::string& node);

// The lanes: one per controller of the report (in its order), one per lease (the main leases of
// both managers and the migration lease, then any other the changes name), one per node the
// history names (in name order). Each gap of the report's handovers (gap_ns > 0) becomes a gap
// span, each overlap an overlap span; each command of the history with its result (matched by
// command id) a move bar. Times before `started` are drawn at 0.
Timeline BuildTimeline(const TimelineInputs& inputs);

// The SVG document (UTF-8, with an XML declaration): title, verdict, a legend, the time axis,
// and the lanes. Every text is XML-escaped; characters XML 1.0 cannot carry become U+FFFD.
// Each bar, gap, overlap and mark is a <g> with a class ("run", "lease", "move", "gap",
// "overlap", "away", "mark", "event") and a <title> holding its detail, shown as a tooltip.
std::string RenderTimelineSvg(const Timeline& timeline);

// RenderTimelineSvg(BuildTimeline(inputs)).
std::string TimelineSvg(const TimelineInputs& inputs);

// `text` with &, <, >, " and ' escaped and characters XML 1.0 cannot carry replaced by U+FFFD.
std::string EscapeXml(const std::string& text);

}  // namespace handoff::sandbox

#endif  // HANDOFF_REHEARSAL_SANDBOX_TIMELINE_SVG_H_
