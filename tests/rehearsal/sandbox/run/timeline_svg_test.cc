// The timeline picture of a sandbox run: a synthetic run (records analysed by the real monitor,
// an audit history, lease holders) must show every move, every holder change, every gap with
// its length and every overlap, with every text escaped, in well-formed XML.
#include "rehearsal/sandbox/timeline_svg.h"

#include <cstdint>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "rehearsal/sandbox/lease_holders.h"
#include "rehearsal/sandbox/report.h"

namespace handoff::sandbox {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

constexpr int64_t kSecond = 1000000000;

// Counts the occurrences of `needle` in `text`.
int Count(const std::string& text, const std::string& needle) {
  int n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) {
    ++n;
  }
  return n;
}

// A small well-formedness check of the subset of XML the timeline writes: one XML declaration,
// one root element, every element closed in order, attributes quoted, only the five predefined
// entities and numeric references, no '<' or '&' in text or attribute values. Returns "" or
// what is wrong and where.
std::string XmlError(const std::string& xml) {
  size_t i = 0;
  auto error = [&](const std::string& what) { return what + " at offset " + std::to_string(i); };
  auto check_text = [&](size_t from, size_t to) -> std::string {
    for (size_t k = from; k < to; ++k) {
      if (xml[k] == '<') return "'<' in text at offset " + std::to_string(k);
      if (xml[k] != '&') continue;
      size_t semi = xml.find(';', k);
      if (semi == std::string::npos || semi > to) return "unterminated & at " + std::to_string(k);
      const std::string entity = xml.substr(k + 1, semi - k - 1);
      if (entity != "amp" && entity != "lt" && entity != "gt" && entity != "quot" &&
          entity != "apos" && !(entity.size() > 1 && entity[0] == '#')) {
        return "unknown entity &" + entity + "; at " + std::to_string(k);
      }
    }
    return "";
  };
  if (xml.rfind("<?xml ", 0) != 0) return "no XML declaration";
  i = xml.find("?>");
  if (i == std::string::npos) return "unterminated XML declaration";
  i += 2;
  std::vector<std::string> open;
  bool root_seen = false;
  while (i < xml.size()) {
    size_t lt = xml.find('<', i);
    if (lt == std::string::npos) lt = xml.size();
    std::string text_error = check_text(i, lt);
    if (!text_error.empty()) return text_error;
    if (open.empty() && xml.find_first_not_of(" \n\t\r", i) < lt) return error("text outside root");
    i = lt;
    if (i == xml.size()) break;
    const bool closing = xml.compare(i, 2, "</") == 0;
    size_t k = i + (closing ? 2 : 1);
    size_t name_end = xml.find_first_of(" \n\t/>", k);
    if (name_end == std::string::npos || name_end == k) return error("no element name");
    const std::string name = xml.substr(k, name_end - k);
    k = name_end;
    if (closing) {
      if (open.empty() || open.back() != name) return error("</" + name + "> closes nothing open");
      open.pop_back();
      if (xml.compare(k, 1, ">") != 0) return error("junk in </" + name + ">");
      i = k + 1;
      continue;
    }
    if (open.empty() && root_seen) return error("a second root <" + name + ">");
    root_seen = true;
    // Attributes: name="value" ...
    while (true) {
      k = xml.find_first_not_of(" \n\t", k);
      if (k == std::string::npos) return error("unterminated <" + name);
      if (xml.compare(k, 2, "/>") == 0) {
        i = k + 2;
        break;
      }
      if (xml[k] == '>') {
        open.push_back(name);
        i = k + 1;
        break;
      }
      size_t eq = xml.find('=', k);
      if (eq == std::string::npos || xml.find_first_of(" \n\t<>", k) < eq) {
        return error("attribute without value in <" + name + ">");
      }
      if (xml[eq + 1] != '"') return error("unquoted attribute in <" + name + ">");
      size_t end = xml.find('"', eq + 2);
      if (end == std::string::npos) return error("unterminated attribute in <" + name + ">");
      std::string value_error = check_text(eq + 2, end);
      if (!value_error.empty()) return value_error;
      k = end + 1;
    }
  }
  if (!open.empty()) return "<" + open.back() + "> never closed";
  if (!root_seen) return "no root element";
  return "";
}

RunRecord Record(double at_s, const std::string& node, const std::string& component, int64_t pid,
                 const std::string& event) {
  RunRecord record;
  record.t_ns = static_cast<int64_t>(at_s * kSecond);
  record.node = node;
  record.component = component;
  record.pid = pid;
  record.event = event;
  return record;
}

RunRecord Start(double at_s, const std::string& node, const std::string& component, int64_t pid,
                const std::string& controller, const std::string& lock) {
  RunRecord record = Record(at_s, node, component, pid, kControllerStart);
  record.controller = controller;
  record.lock = lock;
  return record;
}

RunRecord Lease(double at_s, const std::string& node, const std::string& component, int64_t pid,
                const std::string& event, const std::string& lease) {
  RunRecord record = Record(at_s, node, component, pid, event);
  record.lease = lease;
  return record;
}

v1::HistoryEntry Entry(int64_t unix_ms, const std::string& kind, const std::string& node,
                       const std::string& command_id, const std::string& message,
                       const std::string& detail_json = "") {
  v1::HistoryEntry entry;
  entry.set_unix_ms(unix_ms);
  entry.set_actor(kind == "result" ? node : "coordinator");
  entry.set_kind(kind);
  entry.set_node(node);
  entry.set_command_id(command_id);
  entry.set_message(message);
  entry.set_detail_json(detail_json);
  return entry;
}

constexpr char kKcm[] = "kube-controller-manager";
constexpr char kCcm[] = "cloud-controller-manager";
constexpr char kMainLease[] = "kube-system/kube-controller-manager";
constexpr char kMigrationLease[] = "kube-system/cloud-provider-extraction-migration";

// A run that starts at 0.5s: KCM on cp-1 runs both controllers and is killed at 5s; CCM on cp-2
// takes the migration lease at 7.5s; KCM on cp-3 also runs service from 9s to 10s (the broken
// invariant); cp-2's CCM exits at 12s with nobody after it.
std::vector<RunRecord> Records() {
  return {
      Record(1, "cp-1", kKcm, 10, kProcessStart),
      Lease(1, "cp-1", kKcm, 10, kLeaseAcquired, kMainLease),
      Start(1, "cp-1", kKcm, 10, "service", kMainLock),
      Start(1, "cp-1", kKcm, 10, "cloud-node-lifecycle", kMainLock),
      [] {
        RunRecord exit = Record(5, "cp-1", kKcm, 10, kProcessExit);
        exit.status = "signal 9";
        return exit;
      }(),
      Lease(7.5, "cp-2", kCcm, 20, kLeaseAcquired, kMigrationLease),
      Start(7.5, "cp-2", kCcm, 20, "service", kMigrationLock),
      Start(7.5, "cp-2", kCcm, 20, "cloud-node-lifecycle", kMigrationLock),
      Lease(8, "cp-3", kKcm, 30, kLeaseAcquired, kMainLease),
      Start(9, "cp-3", kKcm, 30, "service", kMainLock),
      [] {
        RunRecord stop = Record(10, "cp-3", kKcm, 30, kControllerStop);
        stop.controller = "service";
        stop.reason = "lease lost";
        return stop;
      }(),
      Lease(10, "cp-3", kKcm, 30, kLeaseLost, kMainLease),
      // A lease-lost of a process that does not hold the lease changes nothing.
      Lease(10.5, "cp-1", kKcm, 99, kLeaseLost, kMigrationLease),
      Record(12, "cp-2", kCcm, 20, kProcessExit),
      Record(14, "cp-3", kKcm, 30, kProcessExit),
  };
}

v1::HistoryResponse History() {
  v1::HistoryResponse history;
  *history.add_entries() = Entry(1000, "start", "", "", "start to migrated");
  *history.add_entries() = Entry(2000, "command", "cp-1", "c1", "move in-tree → prepared");
  *history.add_entries() =
      Entry(3000, "result", "cp-1", "c1", "in-tree → prepared succeeded");
  *history.add_entries() = Entry(4000, "command", "cp-2", "c2", "move prepared → migrated");
  *history.add_entries() = Entry(4200, "disconnect", "cp-2", "", "agent away");
  *history.add_entries() = Entry(4800, "connect", "cp-2", "", "agent back");
  *history.add_entries() =
      Entry(6000, "result", "cp-2", "c2",
            "prepared → migrated rolled back: cloud-controller-manager <not healthy> & gone");
  *history.add_entries() = Entry(6100, "halt", "cp-2", "c2", "cp-2: rolled back");
  *history.add_entries() =
      Entry(6500, "lease-release", "cp-1", "",
            "released lease kube-controller-manager of cp-1_abc",
            R"({"lease":"kube-system/kube-controller-manager","outcome":"released"})");
  *history.add_entries() = Entry(8000, "command", "cp-3", "c3", "move in-tree → prepared");
  return history;
}

TimelineInputs Inputs() {
  TimelineInputs inputs;
  inputs.outcome = "rollout <halted> & \"rolled back\"";
  inputs.started = absl::FromUnixMillis(500);
  MonitorOptions options;
  options.lease_duration = absl::Seconds(1);
  options.retry_period = absl::Milliseconds(200);
  options.controllers = {"service", "cloud-node-lifecycle"};
  options.end_ns = 15 * kSecond;
  inputs.monitor = AnalyzeRunRecords(Records(), options);
  inputs.history = History();
  inputs.lease_holders = LeaseHolderChangesFromRecords(Records());
  return inputs;
}

TEST(LeaseHoldersTest, EachAcquisitionLossAndHolderExitInTimeOrder) {
  std::vector<LeaseHolderChange> changes = LeaseHolderChangesFromRecords(Records());
  std::vector<std::string> seen;
  for (const LeaseHolderChange& change : changes) {
    seen.push_back(std::to_string(change.t_ns / (kSecond / 10)) + " " + change.lease + " " +
                   LeaseHolderChangeKindName(change.kind) + " " + change.node);
  }
  EXPECT_THAT(seen, ::testing::ElementsAre(
                        "10 kube-system/kube-controller-manager acquired cp-1",
                        "50 kube-system/kube-controller-manager holder exited cp-1",
                        "75 kube-system/cloud-provider-extraction-migration acquired cp-2",
                        "80 kube-system/kube-controller-manager acquired cp-3",
                        "100 kube-system/kube-controller-manager lost cp-3",
                        "120 kube-system/cloud-provider-extraction-migration holder exited cp-2"));
}

TEST(LeaseHoldersTest, TheApiServersMarksGoAmongTheChangesInTimeOrder) {
  LeaseHolderChange observed;
  observed.kind = LeaseHolderChange::Kind::kObserved;
  observed.lease = "kube-system/kube-controller-manager";
  observed.identity = "cp-3_0a1b";
  std::vector<LeaseHolderChange> marks;
  for (int64_t tenths : {0, 80, 130}) {
    observed.t_ns = tenths * (kSecond / 10);
    marks.push_back(observed);
  }
  std::vector<std::string> seen;
  for (const LeaseHolderChange& change :
       WithObservedLeases(LeaseHolderChangesFromRecords(Records()), marks)) {
    seen.push_back(std::to_string(change.t_ns / (kSecond / 10)) + " " +
                   LeaseHolderChangeKindName(change.kind));
  }
  // A mark at the time of a change comes after it.
  EXPECT_THAT(seen, ::testing::ElementsAre("0 observed", "10 acquired", "50 holder exited",
                                           "75 acquired", "80 acquired", "80 observed", "100 lost",
                                           "120 holder exited", "130 observed"));
}

TEST(TimelineTest, TheModelHasALanePerControllerLeaseAndNode) {
  const Timeline timeline = BuildTimeline(Inputs());
  std::vector<std::string> lanes;
  for (const TimelineLane& lane : timeline.lanes) lanes.push_back(lane.name);
  EXPECT_THAT(lanes, ::testing::ElementsAre(
                         "service", "cloud-node-lifecycle", "kube-system/kube-controller-manager",
                         "kube-system/cloud-controller-manager",
                         "kube-system/cloud-provider-extraction-migration", "cp-1", "cp-2",
                         "cp-3"));
  EXPECT_DOUBLE_EQ(timeline.end_s, 14.5);
  EXPECT_FALSE(timeline.invariant_held);
  EXPECT_EQ(timeline.title, "handoff sandbox: rollout <halted> & \"rolled back\"");

  // service: three runs, the overlapping one on a second row.
  const TimelineLane& service = timeline.lanes[0];
  ASSERT_EQ(service.bars.size(), 3u);
  EXPECT_EQ(service.rows, 2);
  EXPECT_EQ(service.bars[0].label, "KCM cp-1");
  EXPECT_EQ(service.bars[0].kind, BarKind::kKubeControllerManager);
  EXPECT_EQ(service.bars[1].label, "CCM cp-2");
  EXPECT_EQ(service.bars[1].kind, BarKind::kCloudControllerManager);
  EXPECT_EQ(service.bars[2].row, 1);
  ASSERT_EQ(service.overlaps.size(), 1u);
  EXPECT_DOUBLE_EQ(service.overlaps[0].from_s, 8.5);
  EXPECT_DOUBLE_EQ(service.overlaps[0].to_s, 9.5);
  // Gaps: 4.5s–7.0s (2.5s) and from cp-2's exit at 11.5s to the end (3.0s, nobody took over).
  ASSERT_EQ(service.gaps.size(), 2u);
  EXPECT_EQ(service.gaps[0].label, "2.5s");
  EXPECT_DOUBLE_EQ(service.gaps[0].from_s, 4.5);
  EXPECT_DOUBLE_EQ(service.gaps[0].to_s, 7.0);
  EXPECT_TRUE(service.gaps[0].emphasised);  // over 1s + 200ms + 1s
  EXPECT_EQ(service.gaps[1].label, "3.0s");
  EXPECT_THAT(service.gaps[1].detail, HasSubstr("nobody took over"));

  // The main lease: cp-1 holds it, then names it dead, is released, then cp-3 holds it.
  const TimelineLane& main = timeline.lanes[2];
  ASSERT_EQ(main.bars.size(), 3u);
  EXPECT_EQ(main.bars[0].label, "KCM cp-1");
  EXPECT_EQ(main.bars[1].label, "KCM cp-1 exited");
  EXPECT_EQ(main.bars[1].kind, BarKind::kHolderExited);
  EXPECT_DOUBLE_EQ(main.bars[1].to_s, 6.0);  // released at 6.5s unix = 6.0s into the run
  EXPECT_EQ(main.bars[2].label, "KCM cp-3");
  ASSERT_EQ(main.marks.size(), 1u);
  EXPECT_EQ(main.marks[0].label, "released");
  EXPECT_EQ(timeline.lanes[3].empty_note, "no holder recorded");

  // Moves: succeeded, rolled back (with the agent away meanwhile), no result.
  const TimelineLane& cp2 = timeline.lanes[6];
  ASSERT_EQ(cp2.bars.size(), 1u);
  EXPECT_EQ(cp2.bars[0].kind, BarKind::kMoveFailed);
  EXPECT_EQ(cp2.bars[0].label, "prepared → migrated ✗ rolled back");
  ASSERT_EQ(cp2.away.size(), 1u);
  EXPECT_DOUBLE_EQ(cp2.away[0].from_s, 3.7);
  ASSERT_EQ(cp2.marks.size(), 1u);
  EXPECT_EQ(cp2.marks[0].label, "halt");
  EXPECT_EQ(timeline.lanes[5].bars[0].kind, BarKind::kMoveSucceeded);
  EXPECT_EQ(timeline.lanes[7].bars[0].kind, BarKind::kMoveUnfinished);
  EXPECT_DOUBLE_EQ(timeline.lanes[7].bars[0].to_s, 14.5);
  ASSERT_EQ(timeline.events.size(), 1u);
  EXPECT_EQ(timeline.events[0].label, "start");
}

TEST(TimelineTest, TheSvgShowsEveryMoveHolderChangeGapAndOverlap) {
  const TimelineInputs inputs = Inputs();
  const std::string svg = TimelineSvg(inputs);
  EXPECT_EQ(XmlError(svg), "");

  // Every move of the history, with its times and outcome.
  EXPECT_EQ(Count(svg, "<g class=\"move\">"), 3);
  EXPECT_THAT(svg, HasSubstr("<title>cp-1: move in-tree → prepared, sent at 1.5s, result at 2.5s "
                             "(1.0s): in-tree → prepared succeeded</title>"));
  EXPECT_THAT(svg, HasSubstr("cp-2: move prepared → migrated, sent at 3.5s, result at 5.5s"));
  EXPECT_THAT(svg, HasSubstr(">prepared → migrated ✗ rolled back</text>"));
  EXPECT_THAT(svg, HasSubstr("cp-3: move in-tree → prepared, sent at 7.5s, no result"));

  // Every holder change.
  for (const LeaseHolderChange& change : inputs.lease_holders) {
    const std::string at = FormatSeconds(absl::Nanoseconds(change.t_ns) - absl::Milliseconds(500));
    switch (change.kind) {
      case LeaseHolderChange::Kind::kAcquired:
        EXPECT_THAT(svg, HasSubstr(change.lease + ": held by " + change.component + "@" +
                                   change.node + " (pid " + std::to_string(change.pid) +
                                   "), acquired at " + at));
        break;
      case LeaseHolderChange::Kind::kLost:
        EXPECT_THAT(svg, HasSubstr("; lost at " + at));
        break;
      case LeaseHolderChange::Kind::kHolderExited:
        EXPECT_THAT(svg, HasSubstr(change.lease + ": still names " + change.component + "@" +
                                   change.node));
        EXPECT_THAT(svg, HasSubstr("; its process exited at " + at));
        break;
      default:
        ADD_FAILURE() << "unexpected change";
    }
  }
  EXPECT_THAT(svg, HasSubstr(">KCM cp-1 exited</text>"));
  EXPECT_THAT(svg, HasSubstr("released lease kube-controller-manager of cp-1_abc"));

  // Every gap, shaded and labelled with its length.
  int gaps = 0;
  for (const Handover& handover : inputs.monitor.handovers) {
    if (handover.gap_ns <= 0) continue;
    ++gaps;
    EXPECT_THAT(svg, HasSubstr(handover.controller + ": no runner for " +
                               FormatSeconds(absl::Nanoseconds(handover.gap_ns))));
  }
  EXPECT_EQ(gaps, 4);  // 2.5s and 3.0s for each controller
  EXPECT_EQ(Count(svg, "<g class=\"gap\">"), gaps);
  EXPECT_EQ(Count(svg, "font-weight=\"bold\" fill=\"#b3400a\">2.5s</text>"), 2);
  EXPECT_EQ(Count(svg, ">3.0s</text>"), 2);

  // The overlap, in red, and the verdict.
  EXPECT_EQ(Count(svg, "<g class=\"overlap\">"), 1);
  EXPECT_THAT(svg, HasSubstr(">OVERLAP 1.0s</text>"));
  EXPECT_THAT(svg, HasSubstr("fill=\"#d62828\" fill-opacity=\"0.35\""));
  EXPECT_THAT(svg, HasSubstr("fill=\"none\" stroke=\"#c01818\" stroke-width=\"2\""));
  EXPECT_THAT(svg, HasSubstr("INVARIANT BROKEN: 1 overlap(s)"));
  EXPECT_THAT(svg, HasSubstr("INVARIANT BROKEN: service ran in cloud-controller-manager@cp-2 "
                             "(pid 20) (migration lock) and in kube-controller-manager@cp-3 (pid "
                             "30) (main lock) at once, from 8.5s to 9.5s"));

  // Every text escaped.
  EXPECT_THAT(svg, HasSubstr("rollout &lt;halted&gt; &amp; &quot;rolled back&quot;"));
  EXPECT_THAT(svg, HasSubstr("&lt;not healthy&gt; &amp; gone"));
  EXPECT_THAT(svg, Not(HasSubstr("<halted>")));
  EXPECT_THAT(svg, Not(HasSubstr("<not healthy>")));
}

TEST(TimelineTest, RunsSayHowTheyEnded) {
  const std::string svg = TimelineSvg(Inputs());
  EXPECT_THAT(svg, HasSubstr("<title>service: kube-controller-manager@cp-1 (pid 10) ran it under "
                             "the main lock from 0.5s to 4.5s, process exited (signal 9)</title>"));
  EXPECT_THAT(svg, HasSubstr("from 7.0s to 11.5s, process exited</title>"));
  EXPECT_THAT(svg, HasSubstr("from 8.5s to 9.5s, stopped (lease lost)</title>"));
}

TEST(TimelineTest, AHeldInvariantAndNoHistoryStillMakeAPicture) {
  TimelineInputs inputs;
  inputs.outcome = "rollout completed";
  inputs.started = absl::FromUnixSeconds(0);
  const std::string svg = TimelineSvg(inputs);
  EXPECT_EQ(XmlError(svg), "");
  EXPECT_THAT(svg, HasSubstr("invariant held: no cloud controller ran in two processes at once"));
  EXPECT_EQ(Count(svg, "class=\"move\""), 0);
  EXPECT_EQ(Count(svg, "no holder recorded"), 3);
}

TEST(TimelineTest, XmlEscapingKeepsUtf8AndReplacesWhatXmlCannotCarry) {
  EXPECT_EQ(EscapeXml("a<b>&\"c'"), "a&lt;b&gt;&amp;&quot;c&apos;");
  EXPECT_EQ(EscapeXml("in-tree → prepared ✗"), "in-tree → prepared ✗");
  EXPECT_EQ(EscapeXml(std::string("x\x01y")), "x\xEF\xBF\xBDy");
  EXPECT_EQ(EscapeXml("\xC3("), "\xEF\xBF\xBD(");        // a cut sequence
  EXPECT_EQ(EscapeXml("\xED\xA0\x80"), "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");  // a surrogate
  EXPECT_EQ(EscapeXml("\xEF\xBF\xBF"), "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");  // U+FFFF
  EXPECT_EQ(EscapeXml("tab\there\nline"), "tab\there\nline");
}

TEST(TimelineTest, ShortManagerNames) {
  EXPECT_EQ(ShortManagerName("kube-controller-manager", "cp-1"), "KCM cp-1");
  EXPECT_EQ(ShortManagerName("cloud-controller-manager", "cp-2"), "CCM cp-2");
  EXPECT_EQ(ShortManagerName("kube-scheduler", "cp-3"), "kube-scheduler cp-3");
  EXPECT_EQ(ShortManagerName("", ""), "?");
}

TEST(TimelineTest, TheSummaryNamesTheTimeline) {
  SummaryInputs inputs;
  inputs.outcome = "done";
  inputs.timeline = "/tmp/sandbox/timeline.svg";
  EXPECT_THAT(SummaryText(inputs),
              HasSubstr("\ntimeline: /tmp/sandbox/timeline.svg\ninvariant held"));
  inputs.timeline_note = "(removed with the sandbox's directory at exit: --keep keeps it)";
  EXPECT_THAT(SummaryText(inputs),
              HasSubstr("\ntimeline: /tmp/sandbox/timeline.svg (removed with the sandbox's "
                        "directory at exit: --keep keeps it)\n"));
  inputs.timeline.clear();
  EXPECT_THAT(SummaryText(inputs), Not(HasSubstr("timeline:")));
}

TEST(XmlCheckerTest, CatchesWhatItMustCatch) {
  EXPECT_EQ(XmlError("<?xml version=\"1.0\"?>\n<svg><g></g></svg>\n"), "");
  EXPECT_NE(XmlError("<?xml version=\"1.0\"?>\n<svg><g></svg>"), "");
  EXPECT_NE(XmlError("<?xml version=\"1.0\"?>\n<svg>a < b</svg>"), "");
  EXPECT_NE(XmlError("<?xml version=\"1.0\"?>\n<svg>a & b</svg>"), "");
  EXPECT_NE(XmlError("<?xml version=\"1.0\"?>\n<svg x=1></svg>"), "");
  EXPECT_NE(XmlError("<?xml version=\"1.0\"?>\n<svg></svg><svg></svg>"), "");
  EXPECT_NE(XmlError("<svg></svg>"), "");
}

}  // namespace
}  // namespace handoff::sandbox
