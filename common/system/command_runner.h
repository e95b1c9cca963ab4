// Runs host commands (e.g. `systemctl restart kubelet`), injected so tests can record them.
#ifndef HANDOFF_COMMON_SYSTEM_COMMAND_RUNNER_H_
#define HANDOFF_COMMON_SYSTEM_COMMAND_RUNNER_H_

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace handoff {

// The most Output writes to a command's standard input: what fits in a pipe before it starts.
inline constexpr size_t kMaxCommandInput = 64 * 1024;

class CommandRunner {
 public:
  virtual ~CommandRunner() = default;
  // Runs argv[0] (looked up in PATH) without a shell; OK when it exits 0 within `timeout`.
  // Otherwise an error with the command line, the exit status or signal, and the last lines of
  // its output. A command still running at the timeout is killed, with every process it started
  // (its process group); so is one still running when the agent dies, even by SIGKILL.
  virtual absl::Status Run(const std::vector<std::string>& argv, absl::Duration timeout) = 0;
  // As Run, with `input` on the command's standard input (at most kMaxCommandInput bytes), and
  // its standard output returned (the last 64 KiB of it); standard error goes only into the
  // error. For a command that answers, such as a kubelet credential provider. A runner that
  // cannot feed or read a command says so (Unimplemented) rather than run it.
  virtual absl::StatusOr<std::string> Output(const std::vector<std::string>& argv,
                                             std::string_view input, absl::Duration timeout);
};

// fork/exec with stdout and stderr captured. The child of fork is a small supervisor, the
// leader of the command's process group, that waits for the command and, told by
// PR_SET_PDEATHSIG that the agent died, kills the whole group.
std::unique_ptr<CommandRunner> NewProcessCommandRunner();

}  // namespace handoff

#endif  // HANDOFF_COMMON_SYSTEM_COMMAND_RUNNER_H_
