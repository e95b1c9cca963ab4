// What the sandbox's stand-in controller-managers and simulated kubelets write about the cloud
// controllers they run, and what the invariant monitor reads: one JSON object per line, appended
// (O_APPEND, one write(2) per line, so lines from concurrent writers never interleave) to
// <records dir>/<node>.jsonl.
//
// Events:
//   {"t_ns":…, "node":"cp-1", "component":"kube-controller-manager", "pid":123,
//    "event":"controller-start", "controller":"route", "lock":"main"|"migration"}
//   {… "event":"controller-stop", "controller":"route", "reason":"lease lost"|"shutdown"}
//   {… "event":"lease-acquired"|"lease-lost",
//   "lease":"kube-system/cloud-provider-extraction-migration"} {… "event":"process-start"} / {…
//   "event":"process-exit", "status":"signal 9"|"exit 0"}
//     (process-exit is written by the simulated kubelet that ran the process: a process killed
//      with SIGKILL cannot write its own last line)
//   {… "event":"monitor-note", "message":"…"} (free text for the sandbox's summary)
// t_ns is CLOCK_REALTIME in nanoseconds. Controller names are the canonical cloud controller
// names regardless of the component's version: "route", "service", "cloud-node-lifecycle",
// "node-ipam" (ControllerName in agent/leadermigration maps the per-version names onto them).
// A controller runs in a process from its controller-start until its controller-stop or the
// process's process-exit, whichever comes first.
#ifndef HANDOFF_REHEARSAL_MONITOR_RUN_RECORD_H_
#define HANDOFF_REHEARSAL_MONITOR_RUN_RECORD_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "agent/leadermigration/config.h"
#include "common/fs/file_system.h"

namespace handoff::sandbox {

// The values of RunRecord::event.
inline constexpr char kControllerStart[] = "controller-start";
inline constexpr char kControllerStop[] = "controller-stop";
inline constexpr char kLeaseAcquired[] = "lease-acquired";
inline constexpr char kLeaseLost[] = "lease-lost";
inline constexpr char kProcessStart[] = "process-start";
inline constexpr char kProcessExit[] = "process-exit";
inline constexpr char kMonitorNote[] = "monitor-note";
// The message of the monitor-note the sandbox writes when its rehearsal begins: handovers before
// it were the cluster coming up.
inline constexpr char kRehearsalBegins[] = "the rehearsal begins: handovers from here count";

// The values of RunRecord::lock.
inline constexpr char kMainLock[] = "main";
inline constexpr char kMigrationLock[] = "migration";

// The canonical name of a cloud controller, whatever the component and version: "route",
// "service", "cloud-node-lifecycle", "node-ipam". Map a manager's own name for it with
// leadermigration::ControllerName first.
std::string_view CanonicalControllerName(leadermigration::CloudController controller);

struct RunRecord {
  int64_t t_ns = 0;
  std::string node;
  std::string component;
  int64_t pid = 0;
  std::string event;
  std::string controller;  // controller-start/-stop
  std::string lock;        // controller-start: "main" or "migration"
  std::string lease;       // lease-acquired/-lost
  std::string reason;      // controller-stop
  std::string status;      // process-exit
  std::string message;     // monitor-note
};

// One line (no trailing newline) and back. Parse errors name the field.
//
// FormatRunRecord writes t_ns, node, component, pid and event always and every other field only
// when it is not empty, so Parse(Format(r)) == r for any record whose strings are valid UTF-8
// (invalid bytes are written as U+FFFD).
//
// ParseRunRecord is strict, so that a writer's mistake shows up as an error rather than as a
// controller the monitor silently does not follow: the line must be one JSON object; t_ns, pid
// (integers >= 0) and event are required; node and component are required (non-empty) except
// on monitor-note; event must be one of the values above; controller-start needs a controller
// and a lock ("main" or "migration"); controller-stop needs a controller; a controller, where
// given, must be a canonical name ("route", "service", "cloud-node-lifecycle", "node-ipam");
// unknown and repeated fields are errors. Errors are InvalidArgument.
std::string FormatRunRecord(const RunRecord& record);
absl::StatusOr<RunRecord> ParseRunRecord(const std::string& line);

// Field by field.
bool operator==(const RunRecord& a, const RunRecord& b);
inline bool operator!=(const RunRecord& a, const RunRecord& b) { return !(a == b); }

// Appends one line to `path` with a single write(2) on an O_APPEND descriptor.
// The file is created (mode 0644) when missing. Safe to call from several threads and processes
// at once on the same file. A short write (disk full) is an error naming the path; the torn line
// it leaves makes a later ReadRunRecords fail unless it is the file's last line.
absl::Status AppendRunRecord(const std::string& path, const RunRecord& record);

// Every record of every *.jsonl file in `dir`, in file order (not sorted by time). A line that
// does not parse is an error naming the file and line number — except an incomplete last line
// (a writer killed mid-write), which is skipped.
// Files are read in name order, lines in file order. A line is complete when it ends in '\n'
// (every AppendRunRecord line does), so the text after a file's last '\n' is skipped whatever
// it holds: it is a write still in progress or one that was cut short. An empty line is an
// error. NotFound when `dir` does not exist.
absl::StatusOr<std::vector<RunRecord>> ReadRunRecords(const std::string& dir);
// The same through `fs` (borrowed; only ListDirectory and ReadFile are used).
absl::StatusOr<std::vector<RunRecord>> ReadRunRecords(const FileSystem& fs, const std::string& dir);

}  // namespace handoff::sandbox

#endif  // HANDOFF_REHEARSAL_MONITOR_RUN_RECORD_H_
