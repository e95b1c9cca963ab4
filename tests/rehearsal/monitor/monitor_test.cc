// The invariant monitor on hand-written scenarios: a clean handover, a killed process, long gaps
// against their bound, the unsafe order (an in-tree KCM and a CCM both running "route"), pid
// reuse, input order, the end of observation, locks, anomalies, the summary, and the live view.
#include "rehearsal/monitor/monitor.h"

#include <algorithm>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "common/base/strings.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/rehearsal/monitor/run_record_builders.h"
#include "tests/support/memory_file_system.h"

namespace handoff::sandbox {
namespace {

using ::testing::ElementsAre;
using ::testing::EndsWith;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;
using namespace test_records;  // NOLINT(google-build-using-namespace): builders only

const ProcessId kKcm1{"cp-1", kKcm, 101};
const ProcessId kKcm2{"cp-2", kKcm, 102};
const ProcessId kCcm1{"cp-1", kCcm, 201};
const ProcessId kCcm2{"cp-2", kCcm, 202};
const ProcessId kCcm3{"cp-3", kCcm, 203};

const ControllerStats& Stats(const MonitorReport& report, const std::string& controller) {
  for (const ControllerStats& stats : report.controllers) {
    if (stats.controller == controller) return stats;
  }
  ADD_FAILURE() << "no stats for " << controller;
  static const ControllerStats kNone;
  return kNone;
}

std::vector<Handover> HandoversOf(const MonitorReport& report, const std::string& controller) {
  std::vector<Handover> out;
  for (const Handover& handover : report.handovers) {
    if (handover.controller == controller) out.push_back(handover);
  }
  return out;
}

std::vector<std::string> ControllerNames(const MonitorReport& report) {
  std::vector<std::string> names;
  for (const ControllerStats& stats : report.controllers) names.push_back(stats.controller);
  return names;
}

int Count(const std::string& text, const std::string& needle) {
  int count = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) {
    ++count;
  }
  return count;
}

// KCM on cp-1 (prepared: route under the migration lock) loses the migration lease at +10s; the
// CCM on cp-2 takes it 1.234567ms later.
std::vector<RunRecord> CleanHandover() {
  return {
      ProcessStart(kT0, kKcm1),
      ControllerStart(kT0 + 1 * kSecond, kKcm1, "route", kMigrationLock),
      ControllerStop(kT0 + 10 * kSecond, kKcm1, "route", "lease lost"),
      ProcessExit(kT0 + 10 * kSecond + 500 * kMillisecond, kKcm1, "exit 1"),
      ProcessStart(kT0 + 2 * kSecond, kCcm2),
      ControllerStart(kT0 + 10 * kSecond + 1'234'567, kCcm2, "route", kMigrationLock),
      MonitorNote(kT0 + 20 * kSecond, "", "end of rehearsal"),
  };
}

TEST(MonitorTest, ACleanHandoverHoldsAndItsGapIsMeasuredExactly) {
  const MonitorReport report = AnalyzeRunRecords(CleanHandover());
  EXPECT_TRUE(report.invariant_held);
  EXPECT_THAT(report.overlaps, IsEmpty());
  EXPECT_EQ(report.begin_ns, kT0);
  EXPECT_EQ(report.end_ns, kT0 + 20 * kSecond);
  EXPECT_EQ(report.record_count, 7);

  const ControllerStats& route = Stats(report, "route");
  ASSERT_EQ(route.runs.size(), 2u);
  EXPECT_EQ(route.runs[0].process, kKcm1);
  EXPECT_EQ(route.runs[0].lock, kMigrationLock);
  EXPECT_EQ(route.runs[0].from_ns, kT0 + 1 * kSecond);
  EXPECT_EQ(route.runs[0].to_ns, kT0 + 10 * kSecond);
  EXPECT_EQ(route.runs[0].end, RunEnd::kStopped);
  EXPECT_EQ(route.runs[0].end_detail, "lease lost");
  EXPECT_EQ(route.runs[1].process, kCcm2);
  EXPECT_EQ(route.runs[1].from_ns, kT0 + 10 * kSecond + 1'234'567);
  EXPECT_EQ(route.runs[1].to_ns, kT0 + 20 * kSecond);
  EXPECT_EQ(route.runs[1].end, RunEnd::kStillRunning);

  const std::vector<Handover> handovers = HandoversOf(report, "route");
  ASSERT_EQ(handovers.size(), 2u);
  EXPECT_FALSE(handovers[0].from.has_value());
  EXPECT_EQ(handovers[0].to->process, kKcm1);
  EXPECT_EQ(handovers[0].gap_ns, 0);
  EXPECT_EQ(handovers[1].from->process, kKcm1);
  EXPECT_EQ(handovers[1].to->process, kCcm2);
  EXPECT_EQ(handovers[1].at_ns, kT0 + 10 * kSecond + 1'234'567);
  EXPECT_EQ(handovers[1].gap_ns, 1'234'567);
  EXPECT_FALSE(handovers[1].long_gap);
  EXPECT_EQ(route.no_runner_ns, 1'234'567);
  EXPECT_EQ(route.longest_gap_ns, 1'234'567);
  EXPECT_EQ(route.long_gaps, 0);

  // The others never ran: no runner for the whole observation, and no handovers.
  EXPECT_THAT(ControllerNames(report), ElementsAre("route", "service", "cloud-node-lifecycle"));
  EXPECT_THAT(Stats(report, "service").runs, IsEmpty());
  EXPECT_EQ(Stats(report, "service").no_runner_ns, 20 * kSecond);
  EXPECT_THAT(HandoversOf(report, "service"), IsEmpty());

  const std::string summary = report.Summary();
  EXPECT_THAT(summary, HasSubstr("+1.000s .. +10.000s"));
  EXPECT_THAT(
      summary,
      HasSubstr("cp-1 kube-controller-manager pid 101 (migration lock), stopped: lease lost"));
  EXPECT_THAT(summary, HasSubstr("gap 1.234567ms\n"));
  EXPECT_THAT(summary, HasSubstr("+10.001s .. +20.000s"));
  EXPECT_THAT(summary,
              HasSubstr("cp-2 cloud-controller-manager pid 202 (migration lock), still running"));
  EXPECT_THAT(summary, HasSubstr("service: never ran"));
  EXPECT_THAT(summary, HasSubstr("+20.000s end of rehearsal"));
  EXPECT_THAT(summary,
              EndsWith("\ninvariant held: no cloud controller ran in two processes at once\n"));
  EXPECT_THAT(summary, Not(HasSubstr("BROKEN")));
}

TEST(MonitorTest, TouchingRunsDoNotOverlapAndHaveNoGap) {
  const MonitorReport report = AnalyzeRunRecords({
      ControllerStart(kT0, kKcm1, "service", kMigrationLock),
      ControllerStop(kT0 + 5 * kSecond, kKcm1, "service", "lease lost"),
      ControllerStart(kT0 + 5 * kSecond, kCcm2, "service", kMigrationLock),
      ControllerStop(kT0 + 9 * kSecond, kCcm2, "service", "shutdown"),
  });
  EXPECT_TRUE(report.invariant_held);
  const std::vector<Handover> handovers = HandoversOf(report, "service");
  ASSERT_EQ(handovers.size(), 2u);
  EXPECT_EQ(handovers[1].gap_ns, 0);
  EXPECT_EQ(Stats(report, "service").no_runner_ns, 0);
}

TEST(MonitorTest, AKilledProcessStopsRunningItsControllersAtItsExit) {
  const MonitorReport report = AnalyzeRunRecords({
      ControllerStart(kT0 + 1 * kSecond, kCcm2, "route", kMigrationLock),
      ControllerStart(kT0 + 1 * kSecond, kCcm2, "service", kMigrationLock),
      ProcessExit(kT0 + 5 * kSecond, kCcm2, "signal 9"),
      ControllerStart(kT0 + 5 * kSecond, kCcm3, "route", kMigrationLock),
      ControllerStart(kT0 + 7 * kSecond, kCcm3, "service", kMigrationLock),
      MonitorNote(kT0 + 10 * kSecond, "", "end"),
  });
  EXPECT_TRUE(report.invariant_held) << report.Summary();
  for (const char* controller : {"route", "service"}) {
    const ControllerStats& stats = Stats(report, controller);
    ASSERT_EQ(stats.runs.size(), 2u) << controller;
    EXPECT_EQ(stats.runs[0].process, kCcm2);
    EXPECT_EQ(stats.runs[0].to_ns, kT0 + 5 * kSecond) << controller;
    EXPECT_EQ(stats.runs[0].end, RunEnd::kExited);
    EXPECT_EQ(stats.runs[0].end_detail, "signal 9");
  }
  EXPECT_EQ(HandoversOf(report, "route")[1].gap_ns, 0);
  EXPECT_EQ(HandoversOf(report, "service")[1].gap_ns, 2 * kSecond);
  EXPECT_THAT(report.Summary(), HasSubstr("process exited: signal 9"));

  // Without the kubelet's process-exit, the killed process would still count as running them.
  std::vector<RunRecord> no_exit = {
      ControllerStart(kT0 + 1 * kSecond, kCcm2, "route", kMigrationLock),
      ControllerStart(kT0 + 5 * kSecond, kCcm3, "route", kMigrationLock),
  };
  EXPECT_FALSE(AnalyzeRunRecords(no_exit).invariant_held);
}

TEST(MonitorTest, AStopAfterTheExitDoesNotReopenOrExtendTheRun) {
  // A stand-in's own controller-stop may carry a time after the kubelet's exit record (clocks are
  // read in two processes); the run ended at whichever came first.
  const MonitorReport report = AnalyzeRunRecords({
      ControllerStart(kT0, kCcm2, "route", kMigrationLock),
      ProcessExit(kT0 + 3 * kSecond, kCcm2, "exit 0"),
      ControllerStop(kT0 + 3 * kSecond + 1, kCcm2, "route", "shutdown"),
  });
  const ControllerStats& route = Stats(report, "route");
  ASSERT_EQ(route.runs.size(), 1u);
  EXPECT_EQ(route.runs[0].to_ns, kT0 + 3 * kSecond);
  EXPECT_EQ(route.runs[0].end, RunEnd::kExited);
  EXPECT_EQ(report.anomalies.size(), 1u);
}

TEST(MonitorTest, AGapOverLeaseDurationPlusRetryPeriodPlusSlackIsLong) {
  MonitorOptions options;
  options.lease_duration = absl::Seconds(15);
  options.retry_period = absl::Seconds(2);
  options.gap_slack = absl::Seconds(1);
  const int64_t bound = 18 * kSecond;
  const MonitorReport report = AnalyzeRunRecords(
      {
          ControllerStart(kT0, kKcm1, "route", kMigrationLock),
          ControllerStop(kT0 + 10 * kSecond, kKcm1, "route", "lease lost"),
          ControllerStart(kT0 + 10 * kSecond + bound, kCcm2, "route", kMigrationLock),  // at it
          ControllerStart(kT0, kKcm1, "service", kMigrationLock),
          ControllerStop(kT0 + 10 * kSecond, kKcm1, "service", "lease lost"),
          ControllerStart(kT0 + 10 * kSecond + bound + 1, kCcm2, "service", kMigrationLock),
          MonitorNote(kT0 + 60 * kSecond, "", "end"),
      },
      options);
  EXPECT_TRUE(report.invariant_held) << "a long gap does not break the invariant";
  EXPECT_EQ(report.long_gap_bound_ns, bound);
  EXPECT_FALSE(HandoversOf(report, "route")[1].long_gap);
  EXPECT_EQ(Stats(report, "route").long_gaps, 0);
  const Handover service = HandoversOf(report, "service")[1];
  EXPECT_TRUE(service.long_gap);
  EXPECT_EQ(service.gap_ns, bound + 1);
  EXPECT_EQ(Stats(report, "service").long_gaps, 1);
  EXPECT_EQ(Stats(report, "service").longest_gap_ns, bound + 1);

  const std::string summary = report.Summary();
  EXPECT_EQ(Count(summary, "LONG: over 18s"), 1) << summary;
  EXPECT_THAT(summary, HasSubstr("gap 18.000000001s  LONG: over 18s\n"));
  EXPECT_THAT(summary, HasSubstr("a gap is long over 18s (lease duration + retry period + slack)"));
  EXPECT_THAT(summary, HasSubstr("invariant held"));
}

TEST(MonitorTest, TheBoundFollowsTheOptions) {
  MonitorOptions options;
  options.lease_duration = absl::Seconds(4);
  options.retry_period = absl::Seconds(1);
  options.gap_slack = absl::Milliseconds(500);
  const MonitorReport report = AnalyzeRunRecords(
      {
          ControllerStart(kT0, kKcm1, "route", kMigrationLock),
          ControllerStop(kT0 + 1 * kSecond, kKcm1, "route", "lease lost"),
          ControllerStart(kT0 + 7 * kSecond, kCcm2, "route", kMigrationLock),
      },
      options);
  EXPECT_EQ(report.long_gap_bound_ns, 5'500 * kMillisecond);
  EXPECT_TRUE(HandoversOf(report, "route")[1].long_gap);
}

TEST(MonitorTest, NobodyTakingOverIsAFinalHandoverWithoutASuccessor) {
  const MonitorReport report = AnalyzeRunRecords({
      ControllerStart(kT0, kCcm2, "cloud-node-lifecycle", kMigrationLock),
      ProcessExit(kT0 + 2 * kSecond, kCcm2, "signal 9"),
      MonitorNote(kT0 + 40 * kSecond, "", "end"),
  });
  EXPECT_TRUE(report.invariant_held);
  const std::vector<Handover> handovers = HandoversOf(report, "cloud-node-lifecycle");
  ASSERT_EQ(handovers.size(), 2u);
  EXPECT_EQ(handovers[1].from->process, kCcm2);
  EXPECT_FALSE(handovers[1].to.has_value());
  EXPECT_EQ(handovers[1].at_ns, kT0 + 2 * kSecond);
  EXPECT_EQ(handovers[1].gap_ns, 38 * kSecond);
  EXPECT_TRUE(handovers[1].long_gap);
  EXPECT_EQ(Stats(report, "cloud-node-lifecycle").no_runner_ns, 38 * kSecond);
  EXPECT_THAT(report.Summary(), HasSubstr("gap 38s (nobody took over)  LONG: over 18s"));
}

// The unsafe order: a CCM starts while an in-tree KCM (no Leader Migration) still runs "route"
// under its main lock.
std::vector<RunRecord> UnsafeOrder() {
  return {
      ProcessStart(kT0, kKcm1),
      ControllerStart(kT0, kKcm1, "route", kMainLock),
      ControllerStart(kT0, kKcm1, "service", kMainLock),
      ProcessStart(kT0 + 4 * kSecond, kCcm2),
      ControllerStart(kT0 + 5 * kSecond, kCcm2, "route", kMigrationLock),
      ControllerStop(kT0 + 8 * kSecond, kKcm1, "route", "shutdown"),
      MonitorNote(kT0 + 10 * kSecond, "cp-2", "cloud-controller-manager started"),
  };
}

TEST(MonitorTest, TheUnsafeOrderIsAnOverlapNamingBothRunnersAndTimes) {
  const MonitorReport report = AnalyzeRunRecords(UnsafeOrder());
  EXPECT_FALSE(report.invariant_held);
  ASSERT_EQ(report.overlaps.size(), 1u);
  const Overlap& overlap = report.overlaps[0];
  EXPECT_EQ(overlap.controller, "route");
  EXPECT_EQ(overlap.first.process, kKcm1);
  EXPECT_EQ(overlap.first.lock, kMainLock);
  EXPECT_EQ(overlap.second.process, kCcm2);
  EXPECT_EQ(overlap.second.lock, kMigrationLock);
  EXPECT_EQ(overlap.from_ns, kT0 + 5 * kSecond);
  EXPECT_EQ(overlap.to_ns, kT0 + 8 * kSecond);

  const std::string summary = report.Summary();
  EXPECT_THAT(summary,
              EndsWith("\nINVARIANT BROKEN: route ran in cp-1 kube-controller-manager pid 101 "
                       "(main lock) and in cp-2 cloud-controller-manager pid 202 (migration lock) "
                       "at once from +5.000s to +8.000s (3s)\n"));
  EXPECT_THAT(summary, Not(HasSubstr("invariant held")));
  EXPECT_THAT(summary, HasSubstr("+10.000s cp-2: cloud-controller-manager started"));
}

TEST(MonitorTest, EveryPairOfSimultaneousRunnersIsReported) {
  const MonitorReport report = AnalyzeRunRecords({
      ControllerStart(kT0, kKcm1, "route", kMainLock),
      ControllerStart(kT0 + 1 * kSecond, kKcm2, "route", kMainLock),
      ControllerStart(kT0 + 2 * kSecond, kCcm3, "route", kMigrationLock),
      ControllerStop(kT0 + 3 * kSecond, kKcm1, "route"),
      ControllerStop(kT0 + 4 * kSecond, kKcm2, "route"),
      ControllerStart(kT0 + 3 * kSecond, kKcm1, "service", kMainLock),
      ControllerStart(kT0 + 3500 * kMillisecond, kCcm3, "service", kMigrationLock),
      ControllerStop(kT0 + 9 * kSecond, kCcm3, "route"),
  });
  EXPECT_FALSE(report.invariant_held);
  ASSERT_EQ(report.overlaps.size(), 4u);
  // By controller in report order, then by time.
  EXPECT_EQ(report.overlaps[0].controller, "route");
  EXPECT_EQ(report.overlaps[0].first.process, kKcm1);
  EXPECT_EQ(report.overlaps[0].second.process, kKcm2);
  EXPECT_EQ(report.overlaps[0].from_ns, kT0 + 1 * kSecond);
  EXPECT_EQ(report.overlaps[0].to_ns, kT0 + 3 * kSecond);
  EXPECT_EQ(report.overlaps[1].first.process, kKcm1);
  EXPECT_EQ(report.overlaps[1].second.process, kCcm3);
  EXPECT_EQ(report.overlaps[1].from_ns, kT0 + 2 * kSecond);
  EXPECT_EQ(report.overlaps[1].to_ns, kT0 + 3 * kSecond);
  EXPECT_EQ(report.overlaps[2].first.process, kKcm2);
  EXPECT_EQ(report.overlaps[2].second.process, kCcm3);
  EXPECT_EQ(report.overlaps[2].from_ns, kT0 + 2 * kSecond);
  EXPECT_EQ(report.overlaps[2].to_ns, kT0 + 4 * kSecond);
  EXPECT_EQ(report.overlaps[3].controller, "service");
  EXPECT_EQ(report.overlaps[3].from_ns, kT0 + 3500 * kMillisecond);
  EXPECT_EQ(report.overlaps[3].to_ns, kT0 + 9 * kSecond);
  EXPECT_EQ(Count(report.Summary(), " at once from "), 4);
}

TEST(MonitorTest, TheSamePidOnAnotherNodeOrOfAnotherComponentIsAnotherRunner) {
  const ProcessId ccm_on_cp1{"cp-1", kCcm, 42};
  const ProcessId ccm_on_cp2{"cp-2", kCcm, 42};
  const ProcessId kcm_on_cp1{"cp-1", kKcm, 42};
  MonitorReport report = AnalyzeRunRecords({
      ControllerStart(kT0, ccm_on_cp1, "route", kMigrationLock),
      ControllerStart(kT0 + 5 * kSecond, ccm_on_cp2, "route", kMigrationLock),
  });
  EXPECT_FALSE(report.invariant_held);
  ASSERT_EQ(report.overlaps.size(), 1u);
  EXPECT_EQ(report.overlaps[0].second.process, ccm_on_cp2);
  EXPECT_THAT(report.anomalies, IsEmpty());

  report = AnalyzeRunRecords({
      ControllerStart(kT0, ccm_on_cp1, "route", kMigrationLock),
      ControllerStart(kT0 + 5 * kSecond, kcm_on_cp1, "route", kMigrationLock),
  });
  EXPECT_FALSE(report.invariant_held);
}

TEST(MonitorTest, TheSamePidOnTheSameNodeAfterAnExitIsANewRunOfTheSameRunner) {
  const ProcessId ccm{"cp-1", kCcm, 42};
  const MonitorReport report = AnalyzeRunRecords({
      ControllerStart(kT0, ccm, "route", kMigrationLock),
      ProcessExit(kT0 + 2 * kSecond, ccm, "signal 9"),
      ProcessStart(kT0 + 3 * kSecond, ccm),
      ControllerStart(kT0 + 4 * kSecond, ccm, "route", kMigrationLock),
  });
  EXPECT_TRUE(report.invariant_held);
  EXPECT_THAT(report.anomalies, IsEmpty());
  const std::vector<Handover> handovers = HandoversOf(report, "route");
  ASSERT_EQ(handovers.size(), 2u);
  EXPECT_EQ(handovers[1].from->process, handovers[1].to->process);
  EXPECT_EQ(handovers[1].gap_ns, 2 * kSecond);
  EXPECT_THAT(report.Summary(), HasSubstr("gap 2s (the same process started it again)"));
}

// Every kind of record, at distinct times (records with equal times keep their given order by
// contract, so only distinct times make every permutation equivalent).
std::vector<RunRecord> BusyScenario() {
  std::vector<RunRecord> records = {
      ProcessStart(kT0, kKcm1),
      ControllerStart(kT0 + 1, kKcm1, "route", kMigrationLock),
      ControllerStart(kT0 + 2, kKcm1, "service", kMigrationLock),
      ControllerStart(kT0 + 3, kKcm1, "cloud-node-lifecycle", kMainLock),
      ControllerStart(kT0 + 4, kKcm1, "node-ipam", kMainLock),
      Event(kT0 + 5, kKcm1, kLeaseAcquired),
      ProcessStart(kT0 + 6, kCcm2),
      ControllerStop(kT0 + 3 * kSecond, kKcm1, "route", "lease lost"),
      ControllerStart(kT0 + 4 * kSecond, kCcm2, "route", kMigrationLock),
      ProcessExit(kT0 + 6 * kSecond, kKcm1, "signal 9"),
      ControllerStart(kT0 + 30 * kSecond, kCcm2, "service", kMigrationLock),
      ControllerStart(kT0 + 7 * kSecond, kCcm3, "cloud-node-lifecycle", kMigrationLock),
      ControllerStart(kT0 + 8 * kSecond, kCcm1, "cloud-node-lifecycle", kMigrationLock),
      ControllerStop(kT0 + 9 * kSecond, kCcm2, "node-ipam"),  // an anomaly
      MonitorNote(kT0 + 10 * kSecond, "cp-2", "migrated"),
      ProcessExit(kT0 + 12 * kSecond, kCcm3, "exit 0"),
      MonitorNote(kT0 + 50 * kSecond, "", "end"),
  };
  records[5].lease = "kube-system/cloud-provider-extraction-migration";
  return records;
}

void ExpectSameReport(const MonitorReport& a, const MonitorReport& b) {
  EXPECT_EQ(a.Summary(), b.Summary());
  EXPECT_EQ(a.invariant_held, b.invariant_held);
  ASSERT_EQ(a.overlaps.size(), b.overlaps.size());
  for (size_t i = 0; i < a.overlaps.size(); ++i) {
    EXPECT_EQ(a.overlaps[i].first.process, b.overlaps[i].first.process);
    EXPECT_EQ(a.overlaps[i].second.process, b.overlaps[i].second.process);
    EXPECT_EQ(a.overlaps[i].from_ns, b.overlaps[i].from_ns);
    EXPECT_EQ(a.overlaps[i].to_ns, b.overlaps[i].to_ns);
  }
  ASSERT_EQ(a.handovers.size(), b.handovers.size());
  for (size_t i = 0; i < a.handovers.size(); ++i) {
    EXPECT_EQ(a.handovers[i].controller, b.handovers[i].controller);
    EXPECT_EQ(a.handovers[i].at_ns, b.handovers[i].at_ns);
    EXPECT_EQ(a.handovers[i].gap_ns, b.handovers[i].gap_ns);
  }
  EXPECT_EQ(a.anomalies, b.anomalies);
}

TEST(MonitorTest, InputOrderDoesNotMatter) {
  std::vector<RunRecord> records = BusyScenario();
  const MonitorReport sorted = AnalyzeRunRecords(records);
  EXPECT_FALSE(sorted.invariant_held);  // cloud-node-lifecycle in kCcm3 and kCcm1
  EXPECT_EQ(sorted.anomalies.size(), 1u);
  std::mt19937_64 rng(20240501);
  for (int round = 0; round < 50; ++round) {
    std::shuffle(records.begin(), records.end(), rng);
    SCOPED_TRACE(StrCat("round ", round));
    ExpectSameReport(AnalyzeRunRecords(records), sorted);
  }
}

TEST(MonitorTest, NodeIpamIsReportedOnlyWhenARecordNamesIt) {
  EXPECT_THAT(ControllerNames(AnalyzeRunRecords(CleanHandover())),
              ElementsAre("route", "service", "cloud-node-lifecycle"));
  EXPECT_THAT(ControllerNames(AnalyzeRunRecords(BusyScenario())),
              ElementsAre("route", "service", "cloud-node-lifecycle", "node-ipam"));
  MonitorOptions options;
  options.controllers = {"service"};
  EXPECT_THAT(ControllerNames(AnalyzeRunRecords(CleanHandover(), options)),
              ElementsAre("service", "route"));
}

TEST(MonitorTest, LocksPerComponent) {
  const MonitorReport report = AnalyzeRunRecords(BusyScenario());
  using Locks = std::map<std::string, std::set<std::string>>;
  EXPECT_EQ(report.locks.at(kKcm), (Locks{{"main", {"cloud-node-lifecycle", "node-ipam"}},
                                          {"migration", {"route", "service"}}}));
  EXPECT_EQ(report.locks.at(kCcm),
            (Locks{{"migration", {"cloud-node-lifecycle", "route", "service"}}}));
  EXPECT_THAT(report.Summary(),
              HasSubstr("  kube-controller-manager: main: cloud-node-lifecycle, node-ipam; "
                        "migration: route, service\n"));
}

TEST(MonitorTest, TheEndOfObservationClosesOpenRunsAndIgnoresLaterRecords) {
  MonitorOptions options;
  options.end_ns = kT0 + 7 * kSecond;
  const MonitorReport report = AnalyzeRunRecords(UnsafeOrder(), options);
  EXPECT_EQ(report.end_ns, kT0 + 7 * kSecond);
  EXPECT_EQ(report.record_count, 5);  // the stop at +8s and the note at +10s come after
  ASSERT_EQ(report.overlaps.size(), 1u);
  EXPECT_EQ(report.overlaps[0].to_ns, kT0 + 7 * kSecond);
  const ControllerStats& route = Stats(report, "route");
  EXPECT_EQ(route.runs[0].to_ns, kT0 + 7 * kSecond);
  EXPECT_EQ(route.runs[0].end, RunEnd::kStillRunning);

  options.end_ns = kT0 + 4 * kSecond;  // before the CCM started
  EXPECT_TRUE(AnalyzeRunRecords(UnsafeOrder(), options).invariant_held);
}

TEST(MonitorTest, RecordsThatDoNotFitAProcessLifeAreAnomaliesAndChangeNothing) {
  const MonitorReport report = AnalyzeRunRecords({
      ControllerStart(kT0, kKcm1, "route", kMigrationLock),
      ControllerStart(kT0 + 1 * kSecond, kKcm1, "route", kMainLock),
      ControllerStop(kT0 + 2 * kSecond, kCcm2, "route", "lease lost"),
      ControllerStop(kT0 + 3 * kSecond, kKcm1, "route", "shutdown"),
  });
  EXPECT_TRUE(report.invariant_held);
  const ControllerStats& route = Stats(report, "route");
  ASSERT_EQ(route.runs.size(), 1u);
  EXPECT_EQ(route.runs[0].lock, kMigrationLock);
  EXPECT_EQ(route.runs[0].to_ns, kT0 + 3 * kSecond);
  EXPECT_THAT(report.anomalies,
              ElementsAre("+1.000s controller-start of route in cp-1 kube-controller-manager pid "
                          "101 while it has been running there since +0.000s; ignored",
                          "+2.000s controller-stop of route in cp-2 cloud-controller-manager pid "
                          "202, which was not running it; ignored"));
  EXPECT_THAT(report.Summary(), HasSubstr("anomalies"));
}

TEST(MonitorTest, NoRecordsHoldTrivially) {
  const MonitorReport report = AnalyzeRunRecords({});
  EXPECT_TRUE(report.invariant_held);
  EXPECT_EQ(report.record_count, 0);
  EXPECT_EQ(report.controllers.size(), 3u);
  EXPECT_THAT(report.Summary(), HasSubstr("route: never ran"));
  EXPECT_THAT(report.Summary(), HasSubstr("invariant held"));
}

TEST(MonitorTest, ARunOfNoLengthNeverRan) {
  const MonitorReport report = AnalyzeRunRecords({
      ControllerStart(kT0, kKcm1, "route", kMainLock),
      ControllerStart(kT0 + 2 * kSecond, kCcm2, "route", kMigrationLock),
      ControllerStop(kT0 + 2 * kSecond, kCcm2, "route", "shutdown"),
      ControllerStop(kT0 + 4 * kSecond, kKcm1, "route", "shutdown"),
  });
  EXPECT_TRUE(report.invariant_held);
  EXPECT_EQ(Stats(report, "route").runs.size(), 2u);
  EXPECT_EQ(HandoversOf(report, "route").size(), 1u);
  EXPECT_THAT(report.Summary(), HasSubstr("pid 202 (migration lock), stopped: shutdown (no time)"));
}

// ---- The live view.

TEST(LiveMonitorTest, PollRereadsTheDirectoryAndKeepsTheLastGoodReport) {
  MemoryFileSystem fs;
  auto lines = [](const std::vector<RunRecord>& records) {
    std::string out;
    for (const RunRecord& record : records) out += FormatRunRecord(record) + "\n";
    return out;
  };
  LiveMonitor monitor(fs, "/records");
  EXPECT_TRUE(monitor.report().invariant_held);
  EXPECT_EQ(monitor.Poll().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(monitor.successful_polls(), 0);

  fs.SetFile("/records/cp-1.jsonl",
             lines({ControllerStart(kT0, kKcm1, "route", kMainLock)}) + R"({"t_ns":)");
  ASSERT_TRUE(monitor.Poll().ok());
  EXPECT_TRUE(monitor.report().invariant_held);
  EXPECT_EQ(monitor.report().record_count, 1);
  EXPECT_EQ(monitor.successful_polls(), 1);

  // Still running: until the last record, or until now.
  ASSERT_TRUE(monitor.Poll(kT0 + 30 * kSecond).ok());
  EXPECT_EQ(Stats(monitor.report(), "route").runs[0].to_ns, kT0 + 30 * kSecond);

  fs.SetFile("/records/cp-2.jsonl",
             lines({ControllerStart(kT0 + 5 * kSecond, kCcm2, "route", kMigrationLock)}));
  ASSERT_TRUE(monitor.Poll().ok());
  EXPECT_FALSE(monitor.report().invariant_held);
  ASSERT_EQ(monitor.report().overlaps.size(), 1u);
  EXPECT_EQ(monitor.report().overlaps[0].to_ns, kT0 + 5 * kSecond) << "no length yet";

  // A now before the last record does not cut records off.
  ASSERT_TRUE(monitor.Poll(kT0 + 1 * kSecond).ok());
  EXPECT_EQ(monitor.report().end_ns, kT0 + 5 * kSecond);

  ASSERT_TRUE(monitor.Poll(kT0 + 9 * kSecond).ok());
  ASSERT_EQ(monitor.report().overlaps.size(), 1u);
  EXPECT_EQ(monitor.report().overlaps[0].to_ns, kT0 + 9 * kSecond);

  fs.SetFile("/records/cp-3.jsonl", "garbage\n" + lines({MonitorNote(kT0, "", "x")}));
  absl::Status status = monitor.Poll();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(status.message()), HasSubstr("/records/cp-3.jsonl:1: "));
  EXPECT_FALSE(monitor.report().invariant_held) << "the previous report stays";
  EXPECT_EQ(monitor.report().end_ns, kT0 + 9 * kSecond);
  EXPECT_EQ(monitor.successful_polls(), 5);
}

}  // namespace
}  // namespace handoff::sandbox
