#include "agent/cli/cli_config.h"

#include <cstring>
#include <memory>

#include "common/base/strings.h"
#include "common/fs/file_system.h"
#include "common/fs/read_limit.h"

namespace handoff {
namespace {

// A configuration file is a few dozen lines.
constexpr ReadLimit kConfigFileRead{"configuration file", 1 * kMiB};

}  // namespace

void AddConfigOption(CLI::App& command, std::string& path, const std::string& example) {
  command.add_option("--config", path,
                     StrCat("Configuration file (YAML): each key a long option of this command "
                            "without its dashes, e.g. ",
                            example,
                            "; options given on the command line override it. An unknown key or "
                            "a bad value stops the start, naming the file, line and key"));
}

std::vector<ConfigOption> ConfigOptionsOf(const CLI::App& command) {
  std::vector<ConfigOption> options;
  for (const CLI::Option* option : command.get_options()) {
    for (const std::string& name : option->get_lnames()) {
      if (name == "help" || name == "config") continue;
      options.push_back(ConfigOption{name, option->get_type_size_max() == 0});
    }
  }
  return options;
}

absl::StatusOr<ConfigArgs> LoadConfigFile(const CLI::App& command,
                                          const std::vector<std::string>& args) {
  std::string path;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--") break;
    if (args[i] == "--config" && i + 1 < args.size()) path = args[i + 1];
    if (StartsWith(args[i], "--config=")) path = args[i].substr(std::strlen("--config="));
  }
  if (path.empty()) return ConfigArgs();
  // The bounded reader every file the programs take goes through: a FIFO, a device or a
  // directory is refused by name without being opened for reading, and so is a file over the
  // limit (/dev/zero would otherwise be read until memory ran out).
  absl::StatusOr<std::string> text = NewPosixFileSystem("")->ReadFile(path, kConfigFileRead);
  if (!text.ok() && absl::IsFailedPrecondition(text.status())) {
    // "PATH: is a FIFO (named pipe), not a regular file; …", "PATH: … more than the … limit".
    return absl::InvalidArgumentError(StrCat("--config ", text.status().message()));
  }
  if (!text.ok()) {
    return absl::InvalidArgumentError(
        StrCat("--config ", path, ": cannot be read (", text.status().message(), ")"));
  }
  return ParseConfigFile(path, *text, ConfigOptionsOf(command), args);
}

}  // namespace handoff
