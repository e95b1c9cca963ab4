// What the sandbox prints: the live progress line of the rollout, and the summary at the end
// (the outcome, the components, steps and time per node from the coordinator's history, each
// cloud controller's handovers, where the timeline picture is, and the invariant's verdict).
// Pure functions of their inputs.
#ifndef HANDOFF_REHEARSAL_SANDBOX_REPORT_H_
#define HANDOFF_REHEARSAL_SANDBOX_REPORT_H_

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/time/time.h"
#include "handoff/v1/handoff.pb.h"
#include "rehearsal/monitor/monitor.h"
#include "rehearsal/sandbox/node_layout.h"

namespace handoff::sandbox {

// "1.5s": tenths of a second.
std::string FormatSeconds(absl::Duration duration);

// "MIGRATING:  cp-1 migrated  cp-2 prepared→migrated (agent away)  cp-3 in-tree": the phase,
// then each node's state, the move under way and whether its agent is connected.
std::string ProgressLine(const v1::RolloutStatus& status);

struct SummaryInputs {
  std::string outcome;  // the first line: what completed, or what did not
  // ComponentLines of the cluster under the sandbox.
  std::vector<std::string> components;
  // The coordinator's audit history; std::nullopt when it could not be read (then no steps).
  std::optional<v1::HistoryResponse> history;
  MonitorReport monitor;
  LeaseTiming timing;
  // Where the run's timeline picture is (timeline_svg.h); "" = no line. The note follows the
  // path: that the file goes with the sandbox's directory, or why it was not written.
  std::string timeline;
  std::string timeline_note;
  // What the daemons' /metrics said at the end (MetricsLines); printed after the audit.
  std::vector<std::string> metrics;
  // The downtime strategy's outage as the coordinator measured it (`handoffctl status`'s
  // downtime line); "" = no line (Leader Migration).
  std::string downtime;
  // The cluster's own lines (SandboxCluster::SummaryLines), after the handovers.
  std::vector<std::string> cluster;
};

// The sum of every sample of `metric` in a Prometheus text exposition (`metric 3` and
// `metric{label="x"} 3` lines; comments and other metrics, including `metric_sum` and the like,
// are skipped). 0 when there is none.
double SumOfSamples(std::string_view exposition, std::string_view metric);

// The summary, from "\n== summary ==\n" on; every line ends in "\n". Steps are the commands the
// history shows a result for, with the time from each command to its result added up per node.
// Each controller's line of handover figures is followed by one line per handover that counts
// (from whom to whom, when after the first record, and the gap).
// With a timeline, a line "timeline: <path>[ <note>]" comes before the invariant's verdict.
// A broken invariant ends with MonitorReport::Summary(), naming each overlap.
std::string SummaryText(const SummaryInputs& inputs);

}  // namespace handoff::sandbox

#endif  // HANDOFF_REHEARSAL_SANDBOX_REPORT_H_
