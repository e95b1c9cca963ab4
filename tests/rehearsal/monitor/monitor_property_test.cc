// Random runs against the monitor. A simulation of stand-in processes on three nodes hands
// every controller around as an exclusive token: a process starts a controller only while nobody
// holds it, and gives it back by stopping it or by exiting (the kubelet's process-exit). Time
// moves in steps that are often zero (touching handovers, runs of no length) and sometimes over
// the long-gap bound; pids are drawn from a small pool, so the same pid runs on several nodes.
// The simulation's own intervals are the oracle:
//   - such a history is always judged held, and its runs, gaps and long-gap counts are exactly
//     the oracle's (computed by merging intervals, not by the monitor's handover walk);
//   - one intruding run overlapping some held interval, from a process no record shares, is
//     always caught, with exactly the overlaps the oracle expects.
// Records are given as ReadRunRecords would (per node file, in write order), the intruder's at
// random places. Deterministic: one std::mt19937_64 with a fixed seed, no clock.
#include <algorithm>
#include <cstdint>
#include <iostream>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "common/base/strings.h"
#include "gtest/gtest.h"
#include "rehearsal/monitor/monitor.h"
#include "tests/rehearsal/monitor/run_record_builders.h"

namespace handoff::sandbox {
namespace {

using namespace test_records;  // NOLINT(google-build-using-namespace): builders only

constexpr int kCases = 10'000;
const char* const kNodes[] = {"cp-1", "cp-2", "cp-3"};
const char* const kComponents[] = {kKcm, kCcm};
const char* const kControllers[] = {"route", "service", "cloud-node-lifecycle", "node-ipam"};

// One interval of the simulation: [from, to).
struct Truth {
  std::string controller;
  ProcessId process;
  std::string lock;
  int64_t from = 0;
  int64_t to = 0;
  RunEnd end = RunEnd::kStillRunning;
};

auto Key(const ProcessId& p, int64_t from, int64_t to) {
  return std::make_tuple(from, to, p.node, p.component, p.pid);
}

struct History {
  std::vector<RunRecord> records;  // as read back: node files in name order, lines in order
  std::vector<Truth> truths;
  int64_t begin = 0;
  int64_t end = 0;
  std::vector<ProcessId> processes;  // every identity used
};

struct Counters {
  int64_t cases = 0, records = 0, runs = 0, empty_runs = 0, exits_with_runs = 0, touching = 0,
          long_gaps = 0, pid_reuse = 0, intrusions = 0, intruder_overlaps = 0, multi_overlaps = 0;
};

class Simulation {
 public:
  Simulation(std::mt19937_64& rng, Counters& counters) : rng_(rng), counters_(counters) {}

  History Run() {
    int64_t t = kT0 + static_cast<int64_t>(Pick(1000));
    history_.begin = t;
    const int steps = 10 + static_cast<int>(Pick(60));
    bool first = true;
    for (int step = 0; step < steps; ++step) {
      if (!first) t += Advance();
      first = false;
      switch (Pick(10)) {
        case 0:
        case 1:
          Spawn(t);
          break;
        case 2:
        case 3:
        case 4:
          StartOne(t);
          break;
        case 5:
        case 6:
          StopOne(t);
          break;
        case 7:
          ExitOne(t);
          break;
        default:
          // A stop and another process's start at the same instant.
          if (StopOne(t)) StartOne(t);
          break;
      }
    }
    history_.end = t + static_cast<int64_t>(Pick(3)) * kSecond;
    if (files_.empty()) Spawn(history_.begin);
    for (auto& [controller, holder] : holders_) {
      if (holder) history_.truths[holder->truth].to = history_.end;
    }
    for (const auto& [node, lines] : files_) {
      history_.records.insert(history_.records.end(), lines.begin(), lines.end());
    }
    // The monitor's observation starts at the first record, which is not always the first step.
    history_.begin = history_.end;
    for (const RunRecord& record : history_.records) {
      history_.begin = std::min(history_.begin, record.t_ns);
    }
    counters_.records += static_cast<int64_t>(history_.records.size());
    return history_;
  }

 private:
  struct Holder {
    size_t process;  // index into live_
    size_t truth;    // index into history_.truths
  };

  uint64_t Pick(uint64_t n) { return std::uniform_int_distribution<uint64_t>(0, n - 1)(rng_); }

  int64_t Advance() {
    switch (Pick(6)) {
      case 0:
      case 1:
        return 0;
      case 2:
        return 1;
      case 3:
        return static_cast<int64_t>(Pick(5)) * kSecond;  // sometimes over the 3s bound
      default:
        return static_cast<int64_t>(Pick(1'500)) * kMillisecond;
    }
  }

  void Write(const RunRecord& record) { files_[record.node].push_back(record); }

  void Spawn(int64_t t) {
    if (live_.size() >= 5) return;
    ProcessId process{kNodes[Pick(3)], kComponents[Pick(2)], 1 + static_cast<int64_t>(Pick(4))};
    for (const ProcessId& other : live_) {
      if (other == process) return;  // a pid is unique on its node while it lives
    }
    for (const ProcessId& other : history_.processes) {
      if (other.pid == process.pid && other != process) {
        ++counters_.pid_reuse;
        break;
      }
    }
    live_.push_back(process);
    history_.processes.push_back(process);
    Write(ProcessStart(t, process));
  }

  void StartOne(int64_t t) {
    if (live_.empty()) return;
    std::vector<const char*> free;
    for (const char* controller : kControllers) {
      // node-ipam is rare, so that most histories never name it.
      if (controller == std::string("node-ipam") && Pick(4) != 0) continue;
      if (!holders_[controller]) free.push_back(controller);
    }
    if (free.empty()) return;
    const std::string controller = free[Pick(free.size())];
    const size_t process = Pick(live_.size());
    const std::string lock = Pick(2) == 0 ? kMainLock : kMigrationLock;
    Write(ControllerStart(t, live_[process], controller, lock));
    Truth truth{controller, live_[process], lock, t, t, RunEnd::kStillRunning};
    history_.truths.push_back(truth);
    holders_[controller] = Holder{process, history_.truths.size() - 1};
  }

  bool StopOne(int64_t t) {
    std::vector<std::string> held;
    for (const auto& [controller, holder] : holders_) {
      if (holder) held.push_back(controller);
    }
    if (held.empty()) return false;
    const std::string controller = held[Pick(held.size())];
    Holder& holder = *holders_[controller];
    Write(ControllerStop(t, live_[holder.process], controller, "lease lost"));
    Close(history_.truths[holder.truth], t, RunEnd::kStopped);
    holders_[controller].reset();
    return true;
  }

  void ExitOne(int64_t t) {
    if (live_.empty()) return;
    const size_t process = Pick(live_.size());
    Write(ProcessExit(t, live_[process], "signal 9"));
    bool had_runs = false;
    for (auto& [controller, holder] : holders_) {
      if (holder && holder->process == process) {
        Close(history_.truths[holder->truth], t, RunEnd::kExited);
        holder.reset();
        had_runs = true;
      }
    }
    if (had_runs) ++counters_.exits_with_runs;
    // Holders refer to live_ by index: fix up the one moved into the hole.
    const size_t last = live_.size() - 1;
    live_[process] = live_[last];
    live_.pop_back();
    for (auto& [controller, holder] : holders_) {
      if (holder && holder->process == last) holder->process = process;
    }
  }

  static void Close(Truth& truth, int64_t t, RunEnd end) {
    truth.to = t;
    truth.end = end;
  }

  std::mt19937_64& rng_;
  Counters& counters_;
  History history_;
  std::map<std::string, std::vector<RunRecord>> files_;  // node -> lines, like <node>.jsonl
  std::vector<ProcessId> live_;
  std::map<std::string, std::optional<Holder>> holders_;
};

// A run that started and stopped at the same instant never ran; one still running at the end
// is running then, whatever its length.
bool Lasted(const Truth& truth) {
  return truth.from < truth.to || truth.end == RunEnd::kStillRunning;
}

// The oracle's view of one controller: the uncovered stretches of [first start, end] once the
// intervals that last are merged.
struct Coverage {
  int64_t no_runner = 0;
  int64_t longest_gap = 0;
  int long_gaps = 0;
  int touching = 0;
};

Coverage CoverageOf(std::vector<Truth> truths, int64_t begin, int64_t end, int64_t bound) {
  truths.erase(std::remove_if(truths.begin(), truths.end(),
                              [](const Truth& truth) { return !Lasted(truth); }),
               truths.end());
  Coverage coverage;
  if (truths.empty()) {
    coverage.no_runner = end - begin;
    return coverage;
  }
  std::sort(truths.begin(), truths.end(),
            [](const Truth& a, const Truth& b) { return a.from < b.from; });
  std::vector<std::pair<int64_t, int64_t>> merged;
  for (const Truth& truth : truths) {
    if (!merged.empty() && truth.from <= merged.back().second) {
      if (truth.from == merged.back().second) ++coverage.touching;
      merged.back().second = std::max(merged.back().second, truth.to);
    } else {
      merged.emplace_back(truth.from, truth.to);
    }
  }
  std::vector<int64_t> gaps;
  for (size_t i = 1; i < merged.size(); ++i) gaps.push_back(merged[i].first - merged[i - 1].second);
  if (merged.back().second < end) gaps.push_back(end - merged.back().second);
  for (int64_t gap : gaps) {
    coverage.no_runner += gap;
    coverage.longest_gap = std::max(coverage.longest_gap, gap);
    if (gap > bound) ++coverage.long_gaps;
  }
  return coverage;
}

MonitorOptions Options(int64_t end) {
  MonitorOptions options;
  options.lease_duration = absl::Seconds(2);
  options.retry_period = absl::Milliseconds(500);
  options.gap_slack = absl::Milliseconds(500);
  options.end_ns = end;
  return options;
}

constexpr int64_t kBound = 3 * kSecond;

// "" or what the monitor got wrong about a history without overlaps.
std::string CheckHeld(const History& history, const MonitorReport& report, Counters& counters) {
  if (!report.invariant_held || !report.overlaps.empty()) {
    return StrCat("overlap reported in a history without one:\n", report.Summary());
  }
  if (!report.anomalies.empty()) return StrCat("anomaly: ", report.anomalies[0]);
  for (const char* controller : kControllers) {
    std::vector<Truth> truths;
    for (const Truth& truth : history.truths) {
      if (truth.controller == controller) truths.push_back(truth);
    }
    const ControllerStats* stats = nullptr;
    for (const ControllerStats& candidate : report.controllers) {
      if (candidate.controller == controller) stats = &candidate;
    }
    if (stats == nullptr) {
      if (!truths.empty() || controller != std::string("node-ipam")) {
        return StrCat(controller, ": missing from the report");
      }
      continue;
    }
    // Whole runs, lock and end included, as sorted lists: one process may start and stop a
    // controller several times within one instant, so (process, from, to) is not unique.
    using FullRun =
        std::tuple<int64_t, int64_t, std::string, std::string, int64_t, std::string, int>;
    std::vector<FullRun> expected, actual;
    for (const Truth& truth : truths) {
      expected.emplace_back(truth.from, truth.to, truth.process.node, truth.process.component,
                            truth.process.pid, truth.lock, static_cast<int>(truth.end));
      if (!Lasted(truth)) ++counters.empty_runs;
    }
    for (const Run& run : stats->runs) {
      actual.emplace_back(run.from_ns, run.to_ns, run.process.node, run.process.component,
                          run.process.pid, run.lock, static_cast<int>(run.end));
    }
    std::sort(expected.begin(), expected.end());
    std::sort(actual.begin(), actual.end());
    if (expected != actual) {
      return StrCat(controller, ": runs differ: ", expected.size(), " expected, ", actual.size(),
                    " reported\n", report.Summary());
    }
    counters.runs += static_cast<int64_t>(truths.size());
    const Coverage coverage = CoverageOf(truths, history.begin, history.end, kBound);
    counters.touching += coverage.touching;
    counters.long_gaps += coverage.long_gaps;
    if (stats->no_runner_ns != coverage.no_runner ||
        stats->longest_gap_ns != coverage.longest_gap || stats->long_gaps != coverage.long_gaps) {
      return StrCat(controller, ": no runner ", stats->no_runner_ns, " (oracle ",
                    coverage.no_runner, "), longest gap ", stats->longest_gap_ns, " (oracle ",
                    coverage.longest_gap, "), long gaps ", stats->long_gaps, " (oracle ",
                    coverage.long_gaps, ")\n", report.Summary());
    }
  }
  return "";
}

TEST(MonitorPropertyTest, ExclusiveTokenHistoriesHoldAndOneIntruderIsAlwaysCaught) {
  std::mt19937_64 rng(0x5eed'2436);
  auto pick = [&](uint64_t n) { return std::uniform_int_distribution<uint64_t>(0, n - 1)(rng); };
  Counters counters;
  for (int i = 0; i < kCases; ++i) {
    const History history = Simulation(rng, counters).Run();
    ++counters.cases;
    const MonitorReport report = AnalyzeRunRecords(history.records, Options(history.end));
    const std::string error = CheckHeld(history, report, counters);
    ASSERT_EQ(error, "") << "case " << i;

    // One intruder overlapping a held interval that lasted.
    std::vector<const Truth*> victims;  // intervals with a length to intrude on
    for (const Truth& truth : history.truths) {
      if (truth.from < truth.to) victims.push_back(&truth);
    }
    if (victims.empty()) continue;
    const Truth& victim = *victims[pick(victims.size())];
    // cp-4 is never used by the simulation, so the intruder is a process of its own, even with
    // the victim's pid.
    const ProcessId intruder{"cp-4", kComponents[pick(2)],
                             pick(2) == 0 ? victim.process.pid : 1000 + i};
    const int64_t length = victim.to - victim.from;
    const int64_t from = victim.from - 3 * kSecond +
                         static_cast<int64_t>(pick(static_cast<uint64_t>(3 * kSecond + length)));
    const int64_t earliest_to = std::max(from, victim.from) + 1;
    const int64_t latest_to = std::max(earliest_to, std::min(history.end, victim.to + 3 * kSecond));
    int64_t to = earliest_to +
                 static_cast<int64_t>(pick(static_cast<uint64_t>(latest_to - earliest_to + 1)));
    std::vector<RunRecord> intruder_records = {ControllerStart(
        from, intruder, victim.controller, pick(2) == 0 ? kMainLock : kMigrationLock)};
    bool intruder_still_running = false;
    switch (pick(3)) {
      case 0:
        intruder_records.push_back(ControllerStop(to, intruder, victim.controller));
        break;
      case 1:
        intruder_records.push_back(ProcessExit(to, intruder, "signal 9"));
        break;
      default:
        to = history.end;  // still running at the end
        intruder_still_running = true;
        break;
    }
    std::vector<RunRecord> records = history.records;
    for (const RunRecord& record : intruder_records) {
      records.insert(records.begin() + static_cast<std::ptrdiff_t>(pick(records.size() + 1)),
                     record);
    }
    const MonitorReport intruded = AnalyzeRunRecords(records, Options(history.end));
    ++counters.intrusions;
    ASSERT_FALSE(intruded.invariant_held) << "case " << i << " missed the intruder\n"
                                          << intruded.Summary();

    // Exactly the overlaps of the intruder with every interval of its controller that ran.
    std::vector<std::tuple<int64_t, int64_t, std::string, std::string, int64_t>> expected, actual;
    for (const Truth& truth_value : history.truths) {
      const Truth* truth = &truth_value;
      if (truth->controller != victim.controller || !Lasted(*truth)) continue;
      const int64_t overlap_from = std::max(truth->from, from);
      const int64_t overlap_to = std::min(truth->to, to);
      const bool both_at_the_end = intruder_still_running && truth->end == RunEnd::kStillRunning;
      if (overlap_from < overlap_to || both_at_the_end)
        expected.push_back(Key(truth->process, overlap_from, overlap_to));
    }
    for (const Overlap& overlap : intruded.overlaps) {
      ASSERT_EQ(overlap.controller, victim.controller) << "case " << i;
      const bool first = overlap.first.process == intruder;
      ASSERT_TRUE(first || overlap.second.process == intruder)
          << "case " << i << ": an overlap without the intruder\n"
          << intruded.Summary();
      actual.push_back(Key(first ? overlap.second.process : overlap.first.process, overlap.from_ns,
                           overlap.to_ns));
    }
    std::sort(expected.begin(), expected.end());
    std::sort(actual.begin(), actual.end());
    ASSERT_EQ(actual, expected) << "case " << i << "\n" << intruded.Summary();
    counters.intruder_overlaps += static_cast<int64_t>(actual.size());
    if (actual.size() > 1) ++counters.multi_overlaps;
    ASSERT_NE(intruded.Summary().find("INVARIANT BROKEN: " + victim.controller + " ran in "),
              std::string::npos)
        << "case " << i;
  }
  std::cout << "cases " << counters.cases << ", records " << counters.records << ", runs "
            << counters.runs << " (" << counters.empty_runs << " of no length), exits ending runs "
            << counters.exits_with_runs << ", touching handovers " << counters.touching
            << ", long gaps " << counters.long_gaps << ", pid reuses " << counters.pid_reuse
            << ", intrusions " << counters.intrusions << " caught with "
            << counters.intruder_overlaps << " overlaps (" << counters.multi_overlaps
            << " overlapping several runs)\n";
  EXPECT_EQ(counters.cases, kCases);
  // The generator reaches every situation it exists for.
  EXPECT_GT(counters.intrusions, kCases / 2);
  EXPECT_GT(counters.empty_runs, 0);
  EXPECT_GT(counters.exits_with_runs, 0);
  EXPECT_GT(counters.touching, 0);
  EXPECT_GT(counters.long_gaps, 0);
  EXPECT_GT(counters.pid_reuse, 0);
  EXPECT_GT(counters.multi_overlaps, 0);
}

}  // namespace
}  // namespace handoff::sandbox
