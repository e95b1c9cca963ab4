// Runs host commands (e.g. `systemctl restart kubelet`), injected so tests can record them.
#ifndef HANDOFF_COMMON_SYSTEM_COMMAND_RUNNER_H_
#define HANDOFF_COMMON_SYSTEM_COMMAND_RUNNER_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"

namespace handoff {

class CommandRunner {
 public:
  virtual ~CommandRunner() = default;
  // Runs argv[0] (looked up in PATH) without a shell; OK when it exits 0 within `timeout`.
  // Otherwise an error with the command line, the exit status or signal, and the last lines of
  // its output. A command still running at the timeout is killed, with every process it started
  // (its process group); so is one still running when the agent dies, even by SIGKILL.
  virtual absl::Status Run(const std::vector<std::string>& argv, absl::Duration timeout) = 0;
};

// fork/exec with stdout and stderr captured. The child of fork is a small supervisor, the
// leader of the command's process group, that waits for the command and, told by
// PR_SET_PDEATHSIG that the agent died, kills the whole group.
std::unique_ptr<CommandRunner> NewProcessCommandRunner();

}  // namespace handoff

#endif  // HANDOFF_COMMON_SYSTEM_COMMAND_RUNNER_H_
