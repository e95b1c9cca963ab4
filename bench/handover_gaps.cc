// handoff-bench-gaps: every handover gap of one kept sandbox run (`handoffctl sandbox --keep`),
// measured by the sandbox's own monitor (rehearsal/monitor/monitor.h) from the run
// records in <dir>/records, in seconds and in retry periods, against the goal of the proof-based
// lease release: every gap at most 2 retry periods plus the new process's start.
//
//   handoff-bench-gaps <sandbox dir>          a table, one line per handover, then the longest
//   handoff-bench-gaps --tsv <sandbox dir>    one line: handovers, longest gap (s), longest gap
//                                             (retry periods), goal met (yes/no), the worst gap's
//                                             excess over its goal (s), the longest a node had no
//                                             kube-controller-manager (s)
//
// The leases' timing is read from <dir>/settings.yaml (the managers' leader-elect flags that the
// sandbox sends with every move; the managers' defaults, 15 s and 2 s, when it names none, as on
// the kubeadm cluster), so the figures follow whatever timing the cluster ran with. Handovers
// before the sandbox's note that its rehearsal began (the cluster coming up) do not count.
//
// What counts:
//  - Only route, service and cloud-node-lifecycle count (the controllers Leader Migration hands
//    over); others the records name (node-ipam, under a manager's main lock) are listed in
//    parentheses.
//  - A handover is a change of runner of one cloud controller with a run on both sides (the
//    monitor's first run of a controller is a start, not a handover). A run that ends with no
//    successor is the sandbox's teardown (the summary is taken before it), so it is left out.
//  - The new process's start: when the process that took over was started after the previous
//    runner stopped (a move replaced the manager on that node, nobody was waiting), the time from
//    the kubelet's process-start record (the spawn) to the process's own (a stand-in writes one
//    once it runs). A real manager writes none: its start is then the time to the first lease it
//    acquired at least a retry period before the one it took over with (its own main lease, which
//    nobody held: how soon it could try). Otherwise its start cannot be told from its wait: the
//    table shows "?" and the goal counts no start. A successor that was already running and
//    waiting ("-") has no start in its gap.
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/base/strings.h"
#include "rehearsal/monitor/monitor.h"
#include "rehearsal/monitor/run_record.h"
#include "yaml-cpp/yaml.h"

namespace handoff::bench {
namespace {

using sandbox::Handover;
using sandbox::MonitorReport;
using sandbox::ProcessId;
using sandbox::RunRecord;

struct Timing {
  absl::Duration lease_duration;
  absl::Duration retry_period;
};

absl::StatusOr<Timing> ReadTiming(const std::string& settings_path) {
  try {
    YAML::Node settings = YAML::LoadFile(settings_path);
    YAML::Node args = settings["cloudControllerManager"]["extraArgs"];
    // Without the flags the managers run with their own defaults (the kubeadm cluster sets none).
    Timing timing{absl::Seconds(15), absl::Seconds(2)};
    for (const auto& [field, target] :
         {std::pair{"leader-elect-lease-duration", &timing.lease_duration},
          std::pair{"leader-elect-retry-period", &timing.retry_period}}) {
      if (!args[field]) continue;
      const std::string text = args[field].as<std::string>();
      if (!absl::ParseDuration(text, target) || *target <= absl::ZeroDuration()) {
        return absl::InvalidArgumentError(StrCat(
            settings_path, ": cloudControllerManager.extraArgs.", field, " \"", text,
            "\" is not a positive duration: is this a sandbox directory kept with --keep?"));
      }
    }
    return timing;
  } catch (const YAML::Exception& error) {
    return absl::InvalidArgumentError(StrCat(settings_path, ": ", error.what()));
  }
}

std::string Seconds(int64_t ns) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.2fs", static_cast<double>(ns) / 1e9);
  return text;
}

std::string Periods(int64_t ns, const Timing& timing) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.1f",
                static_cast<double>(ns) / static_cast<double>(absl::ToInt64Nanoseconds(
                                              timing.retry_period)));
  return text;
}

std::string Name(const ProcessId& process) {
  return StrCat(process.component, "@", process.node, "[", process.pid, "]");
}

// The cloud controllers Leader Migration hands over (MonitorOptions' default list: those of the
// goal). Others a record names (node-ipam runs under a manager's main lock) are listed, not
// counted.
bool Counted(const std::string& controller) {
  const std::vector<std::string> migrated = sandbox::MonitorOptions().controllers;
  return std::find(migrated.begin(), migrated.end(), controller) != migrated.end();
}

struct Gap {
  const Handover* handover = nullptr;
  int64_t start_ns = 0;  // the new process's start inside the gap, 0 when it was waiting already
  bool started_in_gap = false;  // the process that took over was started after the gap began
  bool start_measured = true;   // false: its first lease was the one it took over with
  int64_t goal_ns = 0;   // 2 retry periods + start_ns
};

// When each process was started and first took a lease, from the records.
struct ProcessTimes {
  std::optional<int64_t> started_ns;       // the kubelet's process-start, at the spawn
  std::optional<int64_t> self_started_ns;  // the process's own process-start (stand-ins only)
  std::optional<int64_t> first_lease_ns;
};

std::map<std::tuple<std::string, std::string, int64_t>, ProcessTimes> TimesOf(
    const std::vector<RunRecord>& records) {
  std::map<std::tuple<std::string, std::string, int64_t>, ProcessTimes> times;
  for (const RunRecord& record : records) {
    ProcessTimes& process = times[{record.node, record.component, record.pid}];
    if (record.event == sandbox::kProcessStart) {
      // The kubelet and a stand-in each write one: the earlier is the kubelet's, at the spawn,
      // the later the stand-in's, once it runs.
      if (!process.started_ns) {
        process.started_ns = record.t_ns;
      } else {
        process.self_started_ns = std::max(record.t_ns, *process.started_ns);
        process.started_ns = std::min(record.t_ns, *process.started_ns);
      }
    } else if (record.event == sandbox::kLeaseAcquired &&
               (!process.first_lease_ns || record.t_ns < *process.first_lease_ns)) {
      process.first_lease_ns = record.t_ns;
    }
  }
  return times;
}

int Run(int argc, char** argv) {
  bool tsv = false;
  std::string dir;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--tsv") {
      tsv = true;
    } else if (dir.empty() && !arg.empty() && arg[0] != '-') {
      dir = arg;
    } else {
      dir.clear();
      break;
    }
  }
  if (dir.empty()) {
    std::cerr << "usage: handoff-bench-gaps [--tsv] <sandbox dir kept by handoffctl sandbox "
                 "--keep>\n";
    return 2;
  }
  absl::StatusOr<Timing> timing = ReadTiming(StrCat(dir, "/settings.yaml"));
  if (!timing.ok()) {
    std::cerr << "handoff-bench-gaps: " << timing.status().message() << "\n";
    return 2;
  }
  absl::StatusOr<std::vector<RunRecord>> records = sandbox::ReadRunRecords(StrCat(dir, "/records"));
  if (!records.ok()) {
    std::cerr << "handoff-bench-gaps: " << records.status().message() << "\n";
    return 2;
  }
  const auto times = TimesOf(*records);
  sandbox::MonitorOptions options;
  options.lease_duration = timing->lease_duration;
  options.retry_period = timing->retry_period;
  // The sandbox notes when its rehearsal began: handovers before it were the cluster coming up.
  for (const RunRecord& record : *records) {
    if (record.event == sandbox::kMonitorNote && record.message == sandbox::kRehearsalBegins) {
      options.gaps_from_ns = record.t_ns;
    }
  }
  const MonitorReport report = sandbox::AnalyzeRunRecords(*records, options);
  // The longest a node went without a kube-controller-manager process: from one's exit to the
  // next one's start on that node, from the process records (the real managers' are the host's
  // view of their containers).
  int64_t kcm_down_ns = 0;
  std::string kcm_down_node;
  {
    std::map<std::string, int64_t> exited;  // node → its last kube-controller-manager's exit
    std::vector<RunRecord> sorted = *records;
    std::stable_sort(sorted.begin(), sorted.end(),
                     [](const RunRecord& a, const RunRecord& b) { return a.t_ns < b.t_ns; });
    for (const RunRecord& record : sorted) {
      if (record.component != "kube-controller-manager") continue;
      if (options.gaps_from_ns && record.t_ns < *options.gaps_from_ns) continue;
      if (record.event == sandbox::kProcessExit) exited[record.node] = record.t_ns;
      if (record.event == sandbox::kProcessStart && exited.count(record.node) > 0) {
        const int64_t down = record.t_ns - exited[record.node];
        if (down > kcm_down_ns) {
          kcm_down_ns = down;
          kcm_down_node = record.node;
        }
        exited.erase(record.node);
      }
    }
  }
  const int64_t retry_ns = absl::ToInt64Nanoseconds(timing->retry_period);

  std::vector<Gap> gaps;
  for (const Handover& handover : report.handovers) {
    if (!handover.from || !handover.to) continue;
    if (options.gaps_from_ns && handover.at_ns < *options.gaps_from_ns) continue;
    Gap gap;
    gap.handover = &handover;
    const ProcessId& to = handover.to->process;
    auto found = times.find({to.node, to.component, to.pid});
    if (found != times.end() && found->second.started_ns &&
        *found->second.started_ns >= handover.from->to_ns) {
      gap.started_in_gap = true;
      // A lease it took before the one it took over with (its own main lease, which nobody
      // held) shows how soon it could try; the lease it took over with shows only its wait.
      const ProcessTimes& process = found->second;
      if (process.self_started_ns) {
        gap.start_ns = *process.self_started_ns - *process.started_ns;
      } else if (process.first_lease_ns &&
                 *process.first_lease_ns + retry_ns <= handover.to->from_ns) {
        gap.start_ns = std::max<int64_t>(0, *process.first_lease_ns - *process.started_ns);
      } else {
        gap.start_measured = false;
      }
    }
    gap.goal_ns = 2 * retry_ns + gap.start_ns;
    gaps.push_back(gap);
  }
  const Gap* longest = nullptr;
  const Gap* worst = nullptr;  // the gap furthest over (or least under) its goal
  for (const Gap& gap : gaps) {
    if (!Counted(gap.handover->controller)) continue;
    if (longest == nullptr || gap.handover->gap_ns > longest->handover->gap_ns) longest = &gap;
    if (worst == nullptr ||
        gap.handover->gap_ns - gap.goal_ns > worst->handover->gap_ns - worst->goal_ns) {
      worst = &gap;
    }
  }
  const bool met = worst == nullptr || worst->handover->gap_ns <= worst->goal_ns;

  const size_t counted = std::count_if(gaps.begin(), gaps.end(), [](const Gap& gap) {
    return Counted(gap.handover->controller);
  });
  if (tsv) {
    std::cout << counted << "\t" << (longest ? Seconds(longest->handover->gap_ns) : "-") << "\t"
              << (longest ? Periods(longest->handover->gap_ns, *timing) : "-") << "\t"
              << (met ? "yes" : "no") << "\t"
              << (worst ? Seconds(worst->handover->gap_ns - worst->goal_ns) : "-") << "\t"
              << Seconds(kcm_down_ns) << "\n";
    return 0;
  }
  std::cout << "retry period " << Seconds(retry_ns) << ", lease duration "
            << Seconds(absl::ToInt64Nanoseconds(timing->lease_duration)) << "; " << counted
            << " handovers of route, service, cloud-node-lifecycle\n";
  char line[512];
  std::snprintf(line, sizeof(line), "  %-21s %-75s %7s %7s %8s\n", "controller",
                "from -> to (manager@node[pid])", "gap", "periods", "start");
  // start: "-" the successor was running already, "?" started in the gap but not measurable.
  // A controller in parentheses is not one Leader Migration hands over: not in the longest gap
  // nor in the goal.
  std::cout << line;
  for (const Gap& gap : gaps) {
    const Handover& handover = *gap.handover;
    const std::string moved =
        StrCat(Name(handover.from->process), " -> ", Name(handover.to->process));
    const std::string controller =
        Counted(handover.controller) ? handover.controller : StrCat("(", handover.controller, ")");
    std::snprintf(line, sizeof(line), "  %-21s %-75s %7s %7s %8s\n", controller.c_str(),
                  moved.c_str(), Seconds(handover.gap_ns).c_str(),
                  Periods(handover.gap_ns, *timing).c_str(),
                  !gap.started_in_gap    ? "-"
                  : gap.start_measured ? Seconds(gap.start_ns).c_str()
                                       : "?");
    std::cout << line;
  }
  if (longest != nullptr) {
    std::cout << "longest gap (route, service, cloud-node-lifecycle): " << Seconds(longest->handover->gap_ns) << " = "
              << Periods(longest->handover->gap_ns, *timing) << " retry periods ("
              << longest->handover->controller << ", "
              << Name(longest->handover->from->process) << " -> "
              << Name(longest->handover->to->process) << ")\n";
    std::cout << "goal (every gap <= 2 retry periods + the new process's start): "
              << (met ? "met" : "missed") << "; the worst gap "
              << Seconds(worst->handover->gap_ns) << " against "
              << Seconds(worst->goal_ns) << " (" << worst->handover->controller << ", "
              << Name(worst->handover->from->process) << " -> "
              << Name(worst->handover->to->process) << ")\n";
  }
  std::cout << "longest time a node had no kube-controller-manager (its manifest rewritten, the "
               "kubelet restarting it): "
            << Seconds(kcm_down_ns)
            << (kcm_down_node.empty() ? "" : StrCat(" (", kcm_down_node, ")")) << "\n";
  if (!report.invariant_held) std::cout << "INVARIANT BROKEN in this run\n";
  return 0;
}

}  // namespace
}  // namespace handoff::bench

int main(int argc, char** argv) { return handoff::bench::Run(argc, argv); }
