// `--config FILE` for the daemons (handoff-agent run, handoff-coordinator): the file's keys
// (common/base/config_file.h) become the command line's options, before the command line's own, so
// a flag overrides the file. The keys are exactly the long options of the command.
#ifndef HANDOFF_AGENT_CLI_CLI_CONFIG_H_
#define HANDOFF_AGENT_CLI_CLI_CONFIG_H_

#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/status/statusor.h"
#include "common/base/config_file.h"

namespace handoff {

// Adds `--config FILE` to `command`, with help naming the usual file (`example`).
void AddConfigOption(CLI::App& command, std::string& path, const std::string& example);

// The options of `command` a file may set: each long option but --help and --config.
std::vector<ConfigOption> ConfigOptionsOf(const CLI::App& command);

// The file `--config FILE` (or `--config=FILE`) names in `args` (the arguments after the command's
// name), read and parsed against `command`'s options; no arguments when none is named. Errors
// name the file: one that cannot be read, is larger than 1 MiB, or that ParseConfigFile refuses.
absl::StatusOr<ConfigArgs> LoadConfigFile(const CLI::App& command,
                                          const std::vector<std::string>& args);

}  // namespace handoff

#endif  // HANDOFF_AGENT_CLI_CLI_CONFIG_H_
