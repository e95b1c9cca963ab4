// Run records (run_record.h) from the REAL controller-managers' own logs, so that the invariant
// monitor checks kube-controller-manager 1.26 and aws-cloud-controller-manager 1.27 the way it
// checks the stand-ins. Neither manager writes run records; both log, with klog, each cloud
// controller they start and each lease they take or lose. The simulated kubelet still writes the
// process-start / process-exit records of every pod, so a manager's end (it exits when it loses a
// lease, or is SIGKILLed) is known from those.
//
// Three layers:
//   ParseKlogLine     pure: one klog text line → its header fields and message.
//   PodLogScanner     pure state machine: the growing text of one pod log → new run records.
//   LogRecordsPump    the shell: reads pod logs through a FileSystem and appends the records to
//                     <records dir>/<node>.manager-logs.jsonl, beside the kubelet's records.
//
// The lines understood (exact texts, from the upstream sources):
//   Started "<name>"                     app/controllermanager.go (kube-controller-manager 1.26,
//                                        k8s.io/cloud-provider v0.27), klog.Infof("Started %q")
//     → controller-start, controller = the canonical name of <name> (ControllerName in
//       agent/leadermigration, for the manager's component and version); names that are not a
//       migrated cloud controller ("cloud-node", "garbagecollector", …) are ignored.
//       lock = "migration" when the process enabled Leader Migration (it logged "starting leader
//       migration") and its configuration lists <name> in controllerLeaders, else "main". This is
//       the manager's own rule (k8s.io/controller-manager pkg/leadermigration NewLeaderMigrator:
//       a listed controller runs under the migration lock, or not at all when the entry is for
//       the other component; an unlisted one under the main lock). The order of the lines cannot
//       tell: the manager starts its main and its migrated controllers in two goroutines at once,
//       so a main-lock controller ("nodeipam", unlisted by default) is often logged after
//       "leader migration: starting migrated controllers." (seen with kube-controller-manager
//       v1.26.13).
//   successfully acquired lease <namespace>/<name>      client-go tools/leaderelection
//     → lease-acquired, lease = "<namespace>/<name>".
//   "leaderelection lost" / "migration leaderelection lost"   klog.ErrorS (quoted message)
//     → lease-lost, lease = the process's main / migration lease as far as it is known (the
//       first / a second lease that process attempted, see below), else empty.
// Per-process state is keyed by the klog pid. A process's state is forgotten, so that a reused
// pid starts afresh, at its "Version: …" line (both managers log it first), at "starting leader
// migration", and when it attempts ("attempting to acquire leader lease <lease>...") the lease it
// already holds as its main lease (a manager never re-attempts a lease: losing one exits).
#ifndef HANDOFF_REHEARSAL_MONITOR_KLOG_SCANNER_H_
#define HANDOFF_REHEARSAL_MONITOR_KLOG_SCANNER_H_

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "agent/leadermigration/config.h"
#include "common/base/kube_version.h"
#include "common/fs/file_system.h"
#include "rehearsal/monitor/run_record.h"

namespace handoff::sandbox {

// One klog text line: "Lmmdd hh:mm:ss.uuuuuu PID file:line] message" (klog/v2
// internal/buffer FormatHeader; the pid is right-aligned in 7 columns).
struct KlogLine {
  char severity = 'I';  // 'I', 'W', 'E' or 'F'
  int64_t t_ns = 0;     // Unix nanoseconds (microsecond precision)
  int64_t pid = 0;
  std::string file;  // "controllermanager.go"
  int source_line = 0;
  std::string message;  // everything after "] ", as written (ErrorS/InfoS messages are quoted)
};

// `line` without its '\n'. nullopt for anything that is not a klog line (a Go panic, a
// continuation line of a multi-line message, a flag deprecation warning printed with fmt): such
// lines are skipped, never an error. The header's time is read as UTC (the pods run with TZ=UTC)
// and has no year: it gets the latest year (of now's year - 1, now's, now's + 1) that puts it no
// more than a day after `now`, so that a line from 31 December read on 1 January is last year's
// and a line of 1 January 00:00:01 read at 31 December 23:59:59 (a clock a little ahead) is next
// year's. A date that exists in none of those years (30 February) is not a klog line.
std::optional<KlogLine> ParseKlogLine(std::string_view line, absl::Time now);

// Which manager wrote a pod log, and where.
struct ManagerLogSource {
  std::string node;                    // RunRecord::node
  leadermigration::Component component =
      leadermigration::Component::kKubeControllerManager;  // RunRecord::component: its name
  KubeVersion version;                 // for the per-version controller names
  std::string path;                    // "<node root>/var/log/pods/<pod>.log"
  // The LeaderMigrationConfiguration the manager was given (--leader-migration-config); nullopt
  // for its built-in default (leadermigration::DefaultConfig). Only controllerLeaders[].name is
  // used, and only when the manager logs that it enabled Leader Migration.
  std::optional<leadermigration::Config> migration_config;
  // The log is a container runtime's (containerd's CRI log under /var/log/pods/<pod>/<container>/
  // <restart>.log): each line is "<RFC 3339 time> <stream> <P|F>[:tags] <text>", and a line the
  // runtime split (tag P, partial) continues on the next lines up to one tagged F. The klog line
  // is <text>. One file holds one process of the container.
  bool cri = false;
  // The pid of the manager process that started at `t_ns` (the time of its "Version:" line) as
  // the host sees it, for the records: a manager in a container of its own says 1 in its klog
  // header, and the process records (process_watcher.h) name host pids. A pod log can hold
  // several processes (the runtime appends to <restart>.log when a pod with the same UID comes
  // back). Unset: the klog pid.
  std::function<int64_t(int64_t t_ns)> pid_at;
  // With `cri`: lines the runtime wrote less than this long before the scan's `now` wait for
  // the next scan, so that the process that wrote them is known by then.
  absl::Duration hold_back = absl::Seconds(1);
};

// The klog text of one CRI log line (ManagerLogSource::cri) and whether the runtime marked it
// partial ("P": the text continues on the next line). nullopt for a line that is not a CRI log
// line. Pure.
struct CriLogLine {
  int64_t t_ns = 0;  // when the runtime wrote it (Unix nanoseconds)
  std::string_view text;
  bool partial = false;
};
std::optional<CriLogLine> ParseCriLogLine(std::string_view line);

// Turns the text of one pod log, as it grows, into run records. The simulated kubelet appends
// every process of a pod to the same file, one after the other. Pure (no I/O, no clock);
// thread-compatible.
class PodLogScanner {
 public:
  // Only node, component and version of `source` are used.
  explicit PodLogScanner(ManagerLogSource source);

  // `content` is the file's whole current text. Returns the records of the complete lines
  // ('\n'-terminated) after offset(), in file order, and moves offset() past them; an incomplete
  // last line waits for the next call. A file that is shorter than offset(), or whose start is no
  // longer the text first read, was replaced: it is read again from 0 with fresh per-process
  // state. Records are never emitted twice for the same bytes of the same file.
  std::vector<RunRecord> Scan(std::string_view content, absl::Time now);

  int64_t offset() const { return offset_; }

 private:
  struct ProcessState {
    bool migration_enabled = false;  // logged "starting leader migration"
    std::string main_lease;
    std::string migration_lease;
  };
  void ScanLine(std::string_view line, absl::Time now, std::vector<RunRecord>* out);
  RunRecord Record(const KlogLine& line, const char* event) const;

  ManagerLogSource source_;
  std::set<std::string> migration_listed_;  // controllerLeaders[].name, as the manager spells them
  int64_t offset_ = 0;
  std::string head_;  // the file's first bytes as first read, to recognise a replaced file
  std::string partial_;         // a CRI line's text so far, while the runtime marks it partial
  std::optional<int64_t> pid_;  // with pid_at: the host pid of the process writing now
  std::map<int64_t, ProcessState> processes_;
};

// Appends one record to the file at `path`; AppendRunRecord in production.
using RunRecordAppender =
    std::function<absl::Status(const std::string& path, const RunRecord& record)>;

// Called by the sandbox on each poll: for each source, scans what is new in its pod log and
// appends the records, in order, to <records dir>/<node>.manager-logs.jsonl. Thread-compatible;
// starts no threads. `fs` (borrowed, must outlive the pump) is used only to read the pod logs.
class LogRecordsPump {
 public:
  // Records are written with AppendRunRecord (real paths).
  LogRecordsPump(const FileSystem& fs, std::string records_dir);
  LogRecordsPump(const FileSystem& fs, std::string records_dir, RunRecordAppender append);

  // Adds a pod log to follow from its start. A log that does not exist yet is fine: it is read
  // once it appears.
  void AddSource(ManagerLogSource source);

  // One pass over every source. A missing log is skipped. A record that cannot be appended stays
  // queued, with those after it, and is appended first on the next Poll: none is lost or written
  // twice. Returns the first error (a log that cannot be read, an append that failed), naming the
  // path, after trying every source.
  absl::Status Poll(absl::Time now);

  // Records appended so far, over all sources.
  int64_t appended() const { return appended_; }
  // The file a node's records go to.
  std::string RecordsPath(const std::string& node) const;

 private:
  struct Followed {
    ManagerLogSource source;
    PodLogScanner scanner;
    std::deque<RunRecord> pending;  // scanned, not yet appended
  };

  const FileSystem& fs_;
  std::string records_dir_;
  RunRecordAppender append_;
  std::vector<Followed> followed_;
  int64_t appended_ = 0;
};

}  // namespace handoff::sandbox

#endif  // HANDOFF_REHEARSAL_MONITOR_KLOG_SCANNER_H_
