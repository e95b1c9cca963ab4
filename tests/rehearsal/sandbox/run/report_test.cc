// The sandbox's progress line and summary, from given statuses, histories and monitor reports.
#include "rehearsal/sandbox/report.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace handoff::sandbox {
namespace {

using ::testing::EndsWith;
using ::testing::HasSubstr;
using ::testing::Not;

v1::HistoryEntry Entry(const std::string& kind, const std::string& node,
                       const std::string& command_id, int64_t unix_ms) {
  v1::HistoryEntry entry;
  entry.set_kind(kind);
  entry.set_node(node);
  entry.set_command_id(command_id);
  entry.set_unix_ms(unix_ms);
  return entry;
}

ControllerStats Stats(const std::string& controller, int runs, absl::Duration longest_gap,
                      absl::Duration no_runner, int long_gaps) {
  ControllerStats stats;
  stats.controller = controller;
  stats.runs.resize(runs);
  stats.longest_gap_ns = absl::ToInt64Nanoseconds(longest_gap);
  stats.no_runner_ns = absl::ToInt64Nanoseconds(no_runner);
  stats.long_gaps = long_gaps;
  return stats;
}

TEST(ReportTest, TheProgressLineShowsEachNodesStateMoveAndAgent) {
  v1::RolloutStatus status;
  status.set_phase(v1::RolloutStatus::MIGRATING);
  v1::NodeProgress* one = status.add_nodes();
  one->set_name("cp-1");
  one->set_state(v1::NODE_STATE_MIGRATED);
  one->set_connected(true);
  v1::NodeProgress* two = status.add_nodes();
  two->set_name("cp-2");
  two->set_state(v1::NODE_STATE_PREPARED);
  two->set_moving_to(v1::NODE_STATE_MIGRATED);
  two->set_connected(false);
  EXPECT_EQ(ProgressLine(status), "MIGRATING:  cp-1 migrated  cp-2 prepared→migrated (agent away)");
  // A node the coordinator knows nothing of (its agent away) is unknown, never inconsistent.
  v1::NodeProgress* three = status.add_nodes();
  three->set_name("cp-3");
  three->set_state(v1::NODE_STATE_UNSPECIFIED);
  EXPECT_EQ(ProgressLine(status),
            "MIGRATING:  cp-1 migrated  cp-2 prepared→migrated (agent away)  cp-3 unknown (agent "
            "away)");
  // While it moves, the move is the news; while it waits or is stuck, the line says why.
  status.set_next("R4: node cp-2 is in transition; the next move waits for its verified result");
  EXPECT_THAT(ProgressLine(status), Not(HasSubstr("R4")));
  status.set_phase(v1::RolloutStatus::STUCK);
  status.set_next("R4: node cp-3 is not verified healthy; check it before any other node moves");
  EXPECT_THAT(ProgressLine(status),
              EndsWith("cp-3 unknown (agent away)  — R4: node cp-3 is not verified healthy; check "
                       "it before any other node moves"));
}

TEST(ReportTest, TheSummaryCountsStepsPerNodeFromTheHistoryAndShowsEveryHandover) {
  SummaryInputs inputs;
  inputs.outcome = "rollout to 1.27 and rollback to 1.26 completed";
  inputs.components = {"model: fake API server, stand-in managers"};
  v1::HistoryResponse history;
  *history.add_entries() = Entry("command", "cp-1", "r1-1", 1000);
  *history.add_entries() = Entry("result", "cp-1", "r1-1", 2500);
  *history.add_entries() = Entry("command", "cp-2", "r1-2", 3000);
  *history.add_entries() = Entry("result", "cp-2", "r1-2", 3200);
  *history.add_entries() = Entry("command", "cp-1", "r1-3", 4000);
  *history.add_entries() = Entry("result", "cp-1", "r1-3", 4600);
  // A result for a command the history does not show (before its first page) is no step.
  *history.add_entries() = Entry("result", "cp-3", "r0-9", 5000);
  // A command with no result yet is no step either.
  *history.add_entries() = Entry("command", "cp-3", "r1-4", 6000);
  inputs.history = history;
  inputs.monitor.long_gap_bound_ns = absl::ToInt64Nanoseconds(absl::Milliseconds(2200));
  inputs.monitor.controllers = {
      Stats("service", 5, absl::Milliseconds(1240), absl::Milliseconds(3100), 0),
      Stats("cloud-node-lifecycle", 4, absl::Milliseconds(2360), absl::Milliseconds(2900), 1)};

  EXPECT_EQ(SummaryText(inputs),
            "\n== summary ==\n"
            "rollout to 1.27 and rollback to 1.26 completed\n"
            "components:\n"
            "  model: fake API server, stand-in managers\n"
            "steps: 3 moves carried out by the agents\n"
            "  cp-1: 2 moves, 2.1s in all\n"
            "  cp-2: 1 moves, 0.2s in all\n"
            "lease releases: none (each successor waited out its predecessor's lease)\n"
            "double-run detector: nothing found\n"
            "handovers (lease duration 1.0s, long when over 2.2s):\n"
            "  service: 5 runs, longest gap 1.2s, no runner for 3.1s, 0 long gap(s)\n"
            "  cloud-node-lifecycle: 4 runs, longest gap 2.4s, no runner for 2.9s, 1 long "
            "gap(s)\n"
            "invariant held: no cloud controller ran in two processes at once\n");
}

TEST(ReportTest, TheSummaryShowsEachLeaseReleaseAndEachDetectorFindingOfTheHistory) {
  SummaryInputs inputs;
  inputs.outcome = "done";
  v1::HistoryResponse history;
  v1::HistoryEntry released = Entry("lease-release", "cp-1", "", 1000);
  released.set_message("released lease kube-controller-manager of cp-1_a (kube-controller-manager)");
  *history.add_entries() = released;
  v1::HistoryEntry kept = Entry("lease-release", "cp-2", "", 2000);
  kept.set_message("lease cloud-provider-extraction-migration not released (holder-changed): x");
  *history.add_entries() = kept;
  v1::HistoryEntry found = Entry("double-run", "", "", 3000);
  found.set_message("double run: service ran in a and in b");
  *history.add_entries() = found;
  inputs.history = history;
  const std::string text = SummaryText(inputs);
  EXPECT_THAT(text, HasSubstr("lease releases: 1 released, 1 not\n"
                              "  cp-1: released lease kube-controller-manager of cp-1_a "
                              "(kube-controller-manager)\n"
                              "  cp-2: lease cloud-provider-extraction-migration not released "
                              "(holder-changed): x\n"
                              "double-run detector: 1 finding(s)\n"
                              "  double-run: double run: service ran in a and in b\n"));
}

TEST(ReportTest, WithoutTheHistoryTheSummaryHasNoStepsAndABrokenInvariantIsDetailed) {
  SummaryInputs inputs;
  inputs.outcome = "unsafe order (test-only): the monitor must report the broken invariant";
  inputs.monitor.invariant_held = false;
  Overlap overlap;
  overlap.controller = "service";
  overlap.first.process = {"cp-1", "kube-controller-manager", 10};
  overlap.second.process = {"cp-2", "cloud-controller-manager", 20};
  inputs.monitor.overlaps = {overlap};
  inputs.monitor.controllers = {
      Stats("service", 2, absl::ZeroDuration(), absl::ZeroDuration(), 0)};

  const std::string text = SummaryText(inputs);
  EXPECT_THAT(text, Not(HasSubstr("steps:")));
  EXPECT_THAT(text, Not(HasSubstr("components:")));
  EXPECT_THAT(text, HasSubstr("  service: 2 runs, longest gap 0.0s"));
  EXPECT_THAT(text, HasSubstr("INVARIANT BROKEN:\n" + inputs.monitor.Summary()));
  EXPECT_THAT(text, Not(HasSubstr("invariant held")));
}

TEST(ReportTest, SecondsAreShownToTheTenth) {
  EXPECT_EQ(FormatSeconds(absl::Milliseconds(1249)), "1.2s");
  EXPECT_EQ(FormatSeconds(absl::Seconds(61)), "61.0s");
}

TEST(ReportTest, SumOfSamplesAddsEveryLabelSetOfOneMetricOnly) {
  const std::string exposition =
      "# HELP handoff_moves_total Moves.\n"
      "# TYPE handoff_moves_total counter\n"
      "handoff_moves_total{from=\"in-tree\",to=\"prepared\"} 3\n"
      "handoff_moves_total{from=\"a}b\",to=\"migrated\"} 4 1700000000000\n"
      "handoff_moves_total_created 99\n"
      "handoff_moves 100\n"
      "handoff_gap_seconds_sum 1.5\n"
      "handoff_gap_seconds 2.25\n";
  EXPECT_EQ(SumOfSamples(exposition, "handoff_moves_total"), 7);
  EXPECT_EQ(SumOfSamples(exposition, "handoff_gap_seconds"), 2.25);
  EXPECT_EQ(SumOfSamples(exposition, "handoff_absent"), 0);
  EXPECT_EQ(SumOfSamples("", "handoff_moves_total"), 0);
}

}  // namespace
}  // namespace handoff::sandbox
