// The sandbox's invariant monitor: from the run records (run_record.h) of every stand-in
// controller-manager and simulated kubelet, when each cloud controller ran in which process, and
// whether one controller ever ran in two processes at once. It reads only the records, not the
// stand-ins' own view of the leases, so that it is a check on them rather than a copy of them.
//
// AnalyzeRunRecords is pure: no clock, no files. LiveMonitor adds the re-reading of a records
// directory for the sandbox's live view.
#ifndef HANDOFF_REHEARSAL_MONITOR_MONITOR_H_
#define HANDOFF_REHEARSAL_MONITOR_MONITOR_H_

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "common/fs/file_system.h"
#include "rehearsal/monitor/run_record.h"

namespace handoff::sandbox {

struct MonitorOptions {
  // A gap between two runners is "long" when it exceeds lease_duration + retry_period +
  // gap_slack: the longest a successor needs to notice an expired lease and take it (the
  // leader-election defaults are 15s and 2s; the sandbox runs with shorter ones).
  absl::Duration lease_duration = absl::Seconds(15);
  absl::Duration retry_period = absl::Seconds(2);
  absl::Duration gap_slack = absl::Seconds(1);
  // Reported even when no record names them. Any other controller a record names ("node-ipam")
  // is reported too, after these.
  std::vector<std::string> controllers = {"route", "service", "cloud-node-lifecycle"};
  // The end of observation: runs still open then end here, and records after it are ignored.
  // Default: the time of the last record.
  std::optional<int64_t> end_ns;
  // Handovers before this instant (a cluster's own bring-up: kubeadm join costs the first
  // node's managers their leases) are listed but not counted in the controllers' gap figures.
  // Default: every handover counts.
  std::optional<int64_t> gaps_from_ns;
};

// One process: a stand-in controller-manager. The same pid on another node, or of another
// component, is another process.
struct ProcessId {
  std::string node;
  std::string component;
  int64_t pid = 0;
};
bool operator==(const ProcessId& a, const ProcessId& b);
bool operator!=(const ProcessId& a, const ProcessId& b);
bool operator<(const ProcessId& a, const ProcessId& b);

// How a run ended.
enum class RunEnd {
  kStopped,       // the process stopped the controller (reason in RunRecord::reason)
  kExited,        // the process exited without stopping it first (killed, crashed)
  kStillRunning,  // open at the end of observation
};

// One controller running in one process without a break: [from_ns, to_ns), or [from_ns, to_ns]
// when it is still running at the end of observation (to_ns), so that a run started by the last
// record is running at that instant.
struct Run {
  std::string controller;
  ProcessId process;
  std::string lock;  // "main" or "migration"
  int64_t from_ns = 0;
  int64_t to_ns = 0;
  RunEnd end = RunEnd::kStillRunning;
  std::string end_detail;  // the stop's reason or the exit's status
};

// The invariant broken: `controller` ran in both runs' processes during [from_ns, to_ns); at
// the instant from_ns == to_ns when both are still running and the later one started at the end
// of observation.
struct Overlap {
  std::string controller;
  Run first;  // the run that started first (on a tie, the one whose record came first)
  Run second;
  int64_t from_ns = 0;
  int64_t to_ns = 0;
};

// One change of runner. In order of the runs' starts, each run is handed over to from the run
// that was the last to be running before it; the first has no `from` and a gap of 0 (starting
// up is not a handover). When the last run ends before the end of observation, a final entry
// has no `to`: nobody took over. A run of no length that is not still running (started and
// stopped at the same instant) never ran: it takes part in neither handovers nor overlaps. A
// process that starts the controller again after a gap hands over to itself (`from` and `to` are
// the same process).
struct Handover {
  std::string controller;
  std::optional<Run> from;
  std::optional<Run> to;
  int64_t at_ns = 0;      // when `to` started, or when `from` ended if there is no `to`
  int64_t gap_ns = 0;     // time with no runner between them; 0 when they touch or overlap
  bool long_gap = false;  // gap_ns > MonitorReport::long_gap_bound_ns
};

struct ControllerStats {
  std::string controller;
  std::vector<Run> runs;  // in order of start
  // Time with no runner from the start of the first run (of some length) to the end of
  // observation: the sum of the handover gaps. The whole observation when it never ran.
  int64_t no_runner_ns = 0;
  int64_t longest_gap_ns = 0;
  int long_gaps = 0;
};

struct Note {
  int64_t t_ns = 0;
  std::string node;
  std::string message;
};

struct MonitorReport {
  // No controller ran in two processes at any instant; equivalently, `overlaps` is empty.
  bool invariant_held = true;
  std::vector<Overlap> overlaps;             // by controller (report order), then by time
  std::vector<Handover> handovers;           // by controller (report order), then by time
  std::vector<ControllerStats> controllers;  // options.controllers first, then the others by name
  // component -> lock -> the controllers that ran under it.
  std::map<std::string, std::map<std::string, std::set<std::string>>> locks;
  std::vector<Note> notes;  // the monitor-note records, in time order
  // Records that do not fit the life of a process (a second start of a running controller, a
  // stop of one that is not running); they are otherwise ignored.
  std::vector<std::string> anomalies;

  int64_t begin_ns = 0;  // the first record's time; Summary's times are relative to it
  int64_t end_ns = 0;
  std::optional<int64_t> gaps_from_ns;  // MonitorOptions::gaps_from_ns
  int64_t long_gap_bound_ns = 0;
  int record_count = 0;  // records analysed (those after end_ns are not)

  // A table for people: per controller, its runners in order with their time ranges and locks,
  // the gaps between them, the locks per component, the notes and anomalies, and a last line
  // "invariant held: no cloud controller ran in two processes at once" or
  // "INVARIANT BROKEN: …" naming each overlap's controller, processes, locks and times.
  std::string Summary() const;
};

// Analyses `records` in any order: they are sorted by t_ns, stably, so records with equal times
// keep their given order (ReadRunRecords gives each node's file in the order it was written).
MonitorReport AnalyzeRunRecords(std::vector<RunRecord> records, const MonitorOptions& options = {});

// Re-reads a records directory on demand and keeps the latest report. Thread-compatible; starts
// no threads. `fs` is borrowed and must outlive the monitor.
class LiveMonitor {
 public:
  LiveMonitor(const FileSystem& fs, std::string records_dir, MonitorOptions options = {});

  // Reads every record again and analyses them up to the options' end (default: the last
  // record). On a read error the previous report is kept and the error returned.
  absl::Status Poll();
  // The same, with the end of observation at `now_ns` (or at the last record, if later), so
  // that a controller that is still running shows as running until now.
  absl::Status Poll(int64_t now_ns);

  // Empty (invariant held, no controllers run) until the first successful Poll.
  const MonitorReport& report() const { return report_; }
  int successful_polls() const { return successful_polls_; }

 private:
  absl::Status PollUntil(std::optional<int64_t> now_ns);

  const FileSystem& fs_;
  std::string records_dir_;
  MonitorOptions options_;

 public:
  // From now on handovers before `t_ns` do not count (MonitorOptions::gaps_from_ns).
  void CountGapsFrom(int64_t t_ns) { options_.gaps_from_ns = t_ns; }

 private:
  MonitorReport report_;
  int successful_polls_ = 0;
};

}  // namespace handoff::sandbox

#endif  // HANDOFF_REHEARSAL_MONITOR_MONITOR_H_
