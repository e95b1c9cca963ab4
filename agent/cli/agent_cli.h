// The handoff-agent command line. main() only forwards to RunAgentCli, so tests run every
// command in-process with their own file system and output streams.
#ifndef HANDOFF_AGENT_CLI_AGENT_CLI_H_
#define HANDOFF_AGENT_CLI_AGENT_CLI_H_

#include <functional>
#include <iosfwd>
#include <memory>
#include <string>

#include "agent/fs/file_system.h"

namespace handoff {

// Exit codes shared by the agent's commands.
inline constexpr int kExitOk = 0;
inline constexpr int kExitProblems =
    1;  // lint-config found problems; status found the node inconsistent
inline constexpr int kExitRefused = 2;  // bad usage, unreadable input, or a move that is refused

// Opens the node's file system with host paths under `root`.
using FileSystemFactory = std::function<std::unique_ptr<FileSystem>(const std::string& root)>;

int RunAgentCli(int argc, const char* const* argv, std::ostream& out, std::ostream& err,
                const FileSystemFactory& open_root);

}  // namespace handoff

#endif  // HANDOFF_AGENT_CLI_AGENT_CLI_H_
