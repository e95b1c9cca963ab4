// The handoff-agent command line. main() only forwards to RunAgentCli, so tests run every
// command in-process with their own file system and output streams.
#ifndef HANDOFF_AGENT_CLI_AGENT_CLI_H_
#define HANDOFF_AGENT_CLI_AGENT_CLI_H_

#include <functional>
#include <iosfwd>
#include <memory>
#include <string>

#include "agent/cli/worker_scope.h"
#include "common/fs/file_system.h"
#include "common/system/clock.h"
#include "common/system/command_runner.h"
#include "common/system/health_checker.h"
#include "common/system/process_table.h"

namespace handoff {

// Exit codes shared by the agent's commands.
inline constexpr int kExitOk = 0;
// lint-config found problems; status found the node inconsistent.
inline constexpr int kExitProblems = 1;
// Refused, nothing written: bad usage, unreadable input, a move that is not allowed, another
// apply running.
inline constexpr int kExitRefused = 2;
// The move failed verification and was undone; the node is back where it was (verified).
inline constexpr int kExitRolledBack = 3;
// The move failed and so did the undo: the node needs an operator (`handoff-agent recover`).
inline constexpr int kExitNeedsAttention = 4;

// Opens the node's file system with host paths under `root`.
using FileSystemFactory = std::function<std::unique_ptr<FileSystem>(const std::string& root)>;

// The host effects the commands use; tests substitute fakes.
struct AgentEnvironment {
  FileSystemFactory open_root;
  std::function<std::unique_ptr<ProcessTable>(const std::string& proc_root)> open_processes;
  std::function<std::unique_ptr<ProcessSignaller>(const std::string& proc_root)> open_signals;
  std::function<std::unique_ptr<HealthChecker>()> open_health;
  std::function<std::unique_ptr<Clock>()> open_clock;
  std::function<std::unique_ptr<CommandRunner>()> open_commands;
  // A worker's way to its API server (its Node and Lease, with the kubelet's credentials).
  KubeTransportFactory open_kube;
};

// The real host: POSIX files, /proc and pidfds, libcurl, the system clock, fork/exec.
AgentEnvironment RealAgentEnvironment();

int RunAgentCli(int argc, const char* const* argv, std::ostream& out, std::ostream& err,
                const AgentEnvironment& environment);

}  // namespace handoff

#endif  // HANDOFF_AGENT_CLI_AGENT_CLI_H_
