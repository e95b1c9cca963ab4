// The host's processes, read from /proc (injected root, so tests supply a fake /proc tree).
#ifndef HANDOFF_AGENT_SYSTEM_PROCESS_TABLE_H_
#define HANDOFF_AGENT_SYSTEM_PROCESS_TABLE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

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

}  // namespace handoff

#endif  // HANDOFF_AGENT_SYSTEM_PROCESS_TABLE_H_
