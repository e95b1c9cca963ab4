// The daemons' configuration files (/etc/handoff/agent.yaml, /etc/handoff/coordinator.yaml): one
// YAML map from a command-line option's long name, without its dashes, to its value, e.g.
//
//   coordinator: handoff.example.internal:7450
//   sample-interval: 2s
//   no-verify: false
//
// The file stands for those options given before the command line, so a flag on the command line
// overrides the file's key. Pure: the caller reads the file and knows the options.
#ifndef HANDOFF_COMMON_BASE_CONFIG_FILE_H_
#define HANDOFF_COMMON_BASE_CONFIG_FILE_H_

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace handoff {

// An option a configuration file may set.
struct ConfigOption {
  std::string name;   // its long name without "--": "sample-interval"
  bool flag = false;  // takes no value (--no-verify): the key's value is true or false
};

struct ConfigArgs {
  // The arguments the file stands for ("--sample-interval=2s", "--no-verify"), in the file's order,
  // less those the command line gives itself.
  std::vector<std::string> args;
  // Where each key came from ("/etc/handoff/agent.yaml:3"), by option name.
  std::map<std::string, std::string> sources;
};

// The arguments `text` (the file at `path`) stands for, given the options a file may set and the
// command line (whose own options win). Errors name the file, the line and the key: a text that is
// not a YAML map, a key that is not one of `known` (they are listed), a value that is a list or a
// map, a flag whose value is not true or false, an empty value.
absl::StatusOr<ConfigArgs> ParseConfigFile(std::string_view path, std::string_view text,
                                           const std::vector<ConfigOption>& known,
                                           const std::vector<std::string>& command_line);

// `status` with "<file:line>: key <name>: " in front when its message names the option of a key
// the file set ("--sample-interval ..."), so that an operator sees which file to fix; otherwise
// unchanged.
absl::Status AttributeToConfigFile(const absl::Status& status, const ConfigArgs& config);

}  // namespace handoff

#endif  // HANDOFF_COMMON_BASE_CONFIG_FILE_H_
