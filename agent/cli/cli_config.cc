#include "agent/cli/cli_config.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "agent/base/strings.h"

namespace handoff {
namespace {

// A configuration file is a few dozen lines.
constexpr std::streamoff kMaxConfigBytes = 1 << 20;

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
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return absl::InvalidArgumentError(
        StrCat("--config ", path, ": cannot be read: ", std::strerror(errno)));
  }
  in.seekg(0, std::ios::end);
  const std::streamoff size = in.tellg();
  if (size > kMaxConfigBytes) {
    return absl::InvalidArgumentError(StrCat("--config ", path, ": ", size,
                                             " bytes, more than a configuration file's limit of ",
                                             kMaxConfigBytes));
  }
  in.seekg(0);
  std::ostringstream text;
  text << in.rdbuf();
  return ParseConfigFile(path, text.str(), ConfigOptionsOf(command), args);
}

}  // namespace handoff
