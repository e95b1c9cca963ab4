// Processes as the sandbox's kubelet handles them: started detached in a session of their own,
// watched and signalled through pidfds (which work for processes that are not our children, such
// as pods adopted from a previous kubelet), identified by pid and start time.
#ifndef HANDOFF_REHEARSAL_KUBELET_PROCESS_CONTROL_H_
#define HANDOFF_REHEARSAL_KUBELET_PROCESS_CONTROL_H_

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/base/unique_fd.h"

namespace handoff::sandbox {


// Fields of /proc/<pid>/stat: the state letter (field 3) and the start time (field 22).
struct ProcStat {
  char state = '?';
  std::uint64_t start_time = 0;
};
std::optional<ProcStat> ReadProcStat(int pid);
// /proc/<pid>/cmdline split at NULs; nullopt when unreadable or empty (a zombie).
std::optional<std::vector<std::string>> ReadCmdline(int pid);

// One process, held by a pidfd. Movable, not copyable.
struct ProcessHandle {
  int pid = 0;
  std::uint64_t start_time = 0;
  UniqueFd pidfd;
  bool child = false;  // started by this process: its exit status can be read (and must be reaped)
};

// A handle on the process that runs now as `pid` and, when given, `start_time`. NotFound when no
// such process runs: gone, a zombie, or the pid now names a process started at another time.
absl::StatusOr<ProcessHandle> OpenProcess(int pid, std::optional<std::uint64_t> start_time);

struct SpawnOptions {
  std::string path;               // the file executed
  std::vector<std::string> argv;  // argv[0] may differ from `path`
  std::vector<std::string> env;   // "NAME=value"; nothing else is inherited
  std::string output;             // stdout and stderr, appended (created 0644)
};

// posix_spawn with POSIX_SPAWN_SETSID, an empty signal mask and default signal dispositions,
// stdin from /dev/null, every other descriptor closed, in "/". The process is our child until
// we exit; it keeps running when we do (no controlling terminal, no parent-death signal).
// Errors name the path: not executable, the output file cannot be opened, ...
absl::StatusOr<ProcessHandle> SpawnDetached(const SpawnOptions& options);

// Whether the process has exited (a zombie has).
bool HasExited(const ProcessHandle& process);
// Waits up to `timeout` for the exit. True when it exited.
bool WaitForExit(const ProcessHandle& process, std::chrono::milliseconds timeout);
// For an exited child: reaps it and says how it ended ("exit 0", "signal 9"). For a process that
// is not our child: "unknown" (only its parent or a subreaper may read the status).
std::string ReapExitStatus(const ProcessHandle& process);
// pidfd_send_signal. OK when the process has already exited.
absl::Status SendSignal(const ProcessHandle& process, int signal);

}  // namespace handoff::sandbox

#endif  // HANDOFF_REHEARSAL_KUBELET_PROCESS_CONTROL_H_
