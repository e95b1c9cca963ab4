// The host's processes, read from /proc (injected root, so tests supply a fake /proc tree), and
// signals sent to one of them only while it is still the process that was listed.
#ifndef HANDOFF_COMMON_SYSTEM_PROCESS_TABLE_H_
#define HANDOFF_COMMON_SYSTEM_PROCESS_TABLE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace handoff {

struct ProcessInfo {
  int pid = 0;
  std::vector<std::string> argv;  // /proc/<pid>/cmdline split at NULs
  // Field 22 of /proc/<pid>/stat (clock ticks after boot): with the pid it identifies one
  // process even across pid reuse.
  std::uint64_t start_time = 0;
};

class ProcessTable {
 public:
  virtual ~ProcessTable() = default;
  // Every process whose cmdline and stat could be read; processes that exit while being read
  // (and kernel threads, whose cmdline is empty) are skipped. Error only when the /proc root
  // itself cannot be listed.
  virtual absl::StatusOr<std::vector<ProcessInfo>> List() const = 0;
};

// Reads `<proc_root>/<pid>/cmdline` and `<proc_root>/<pid>/stat` ("/proc" on a node).
std::unique_ptr<ProcessTable> NewProcfsProcessTable(std::string proc_root);

class ProcessSignaller {
 public:
  virtual ~ProcessSignaller() = default;
  // Sends `signal` to `process` if it still runs: the same pid with the same start time, so a
  // pid reused since the listing is never signalled. NotFound when it has exited.
  virtual absl::Status Signal(const ProcessInfo& process, int signal) = 0;
};

// Holds the pid with pidfd_open(2), checks the start time in `<proc_root>/<pid>/stat`, then
// signals through the pidfd (pidfd_send_signal(2)): the process checked is the one signalled.
// `proc_root` is the same root the node's ProcessTable reads (its pids are this namespace's).
std::unique_ptr<ProcessSignaller> NewPidfdSignaller(std::string proc_root);

}  // namespace handoff

#endif  // HANDOFF_COMMON_SYSTEM_PROCESS_TABLE_H_
