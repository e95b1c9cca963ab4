// A child process of the sandbox: spawned with its output in a log file, signalled, awaited.
// Thread-compatible.
#ifndef HANDOFF_REHEARSAL_SANDBOX_PROCESS_H_
#define HANDOFF_REHEARSAL_SANDBOX_PROCESS_H_

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace handoff::sandbox {

class Process {
 public:
  // posix_spawn of argv[0] (a path) with stdout and stderr appended to `log`. The child starts
  // with no signals blocked, whatever the caller's threads block.
  static absl::StatusOr<std::unique_ptr<Process>> Spawn(const std::vector<std::string>& argv,
                                                        const std::string& log);
  // Kills (SIGKILL) and reaps a process still running.
  ~Process();
  Process(const Process&) = delete;
  Process& operator=(const Process&) = delete;

  pid_t pid() const { return pid_; }
  bool running() const { return pid_ > 0; }
  // Sends `signal` and waits up to `grace` for the exit, then SIGKILL. The wait status.
  int Stop(int signal, absl::Duration grace);
  // waitpid: the wait status once it exits; -1 when it was not running.
  int Wait();
  // Waits up to `timeout` for the exit; true once it exited (status in *status).
  bool WaitFor(absl::Duration timeout, int* status);

 private:
  explicit Process(pid_t pid) : pid_(pid) {}
  pid_t pid_ = -1;
};

// "exit 0", "signal 9".
std::string DescribeWaitStatus(int status);

}  // namespace handoff::sandbox

#endif  // HANDOFF_REHEARSAL_SANDBOX_PROCESS_H_
