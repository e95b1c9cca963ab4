#include "common/base/config_file.h"

#include <algorithm>
#include <cctype>

#include "common/base/strings.h"
#include "common/base/yaml_util.h"

namespace handoff {
namespace {

bool OnCommandLine(const std::vector<std::string>& command_line, const std::string& name) {
  const std::string flag = StrCat("--", name);
  for (const std::string& arg : command_line) {
    if (arg == "--") break;  // what follows is not an option
    if (arg == flag || StartsWith(arg, flag + "=")) return true;
  }
  return false;
}

std::string Where(std::string_view path, const YAML::Node& node) {
  return StrCat(path, ":", node.Mark().line + 1);
}

}  // namespace

absl::StatusOr<ConfigArgs> ParseConfigFile(std::string_view path, std::string_view text,
                                           const std::vector<ConfigOption>& known,
                                           const std::vector<std::string>& command_line) {
  absl::StatusOr<std::vector<YAML::Node>> documents = LoadYamlDocuments(text, path);
  if (!documents.ok()) return documents.status();
  ConfigArgs config;
  if (documents->empty()) return config;  // only comments: every default
  if (documents->size() > 1) {
    return absl::InvalidArgumentError(
        StrCat(path, ": one YAML document expected, found ", documents->size()));
  }
  const YAML::Node& root = documents->front();
  if (!root.IsMap()) {
    return absl::InvalidArgumentError(StrCat(Where(path, root), ": a map of option: value expected, found ",
                                             DescribeYamlNode(root)));
  }
  for (const auto& entry : root) {
    const std::string name = entry.first.Scalar();
    const YAML::Node& value = entry.second;
    auto option = std::find_if(known.begin(), known.end(),
                               [&](const ConfigOption& o) { return o.name == name; });
    if (option == known.end()) {
      std::vector<std::string> names;
      for (const ConfigOption& o : known) names.push_back(o.name);
      std::sort(names.begin(), names.end());
      return absl::InvalidArgumentError(StrCat(Where(path, entry.first), ": unknown key \"", name,
                                               "\"; the keys are: ", StrJoin(names, ", ")));
    }
    if (value.IsNull()) {
      return absl::InvalidArgumentError(StrCat(Where(path, entry.first), ": key ", name,
                                               ": no value (remove the key for the default)"));
    }
    if (!value.IsScalar()) {
      return absl::InvalidArgumentError(StrCat(Where(path, value), ": key ", name,
                                               ": one value expected, found ",
                                               DescribeYamlNode(value)));
    }
    const std::string& text_value = value.Scalar();
    std::string arg;
    if (option->flag) {
      if (JsonTypeOf(value) != JsonScalarType::kBool) {
        return absl::InvalidArgumentError(StrCat(Where(path, value), ": key ", name,
                                                 ": true or false expected, found \"",
                                                 text_value, "\""));
      }
      if (!IsYamlTrue(value)) continue;  // false: as if not given
      arg = StrCat("--", name);
    } else {
      if (text_value.empty() || JsonTypeOf(value) == JsonScalarType::kNull) {
        return absl::InvalidArgumentError(
            StrCat(Where(path, value), ": key ", name, ": no value (remove the key for the default)"));
      }
      arg = StrCat("--", name, "=", text_value);
    }
    if (OnCommandLine(command_line, name)) continue;  // the command line wins
    config.args.push_back(std::move(arg));
    config.sources[name] = Where(path, entry.first);
  }
  return config;
}

absl::Status AttributeToConfigFile(const absl::Status& status, const ConfigArgs& config) {
  if (status.ok()) return status;
  const std::string message(status.message());
  for (const auto& [name, source] : config.sources) {
    const std::string flag = StrCat("--", name);
    size_t at = message.find(flag);
    while (at != std::string::npos) {
      // The whole option, not a longer one it starts ("--key" in "--key-file").
      const size_t end = at + flag.size();
      const bool whole = end == message.size() ||
                         !(std::isalnum(static_cast<unsigned char>(message[end])) ||
                           message[end] == '-');
      if (whole) {
        return absl::Status(status.code(),
                            StrCat(source, ": key ", name, ": ", message));
      }
      at = message.find(flag, end);
    }
  }
  return status;
}

}  // namespace handoff
