// The yaml-cpp adapter: every yaml-cpp exception stops here and becomes a Status.
#ifndef HANDOFF_AGENT_BASE_YAML_UTIL_H_
#define HANDOFF_AGENT_BASE_YAML_UTIL_H_

#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "yaml-cpp/yaml.h"

namespace handoff {

// Parses one YAML document. On a syntax error the message is "SOURCE:LINE:COLUMN: what"
// (1-based), so an operator can jump to it. An empty document is an error.
absl::StatusOr<YAML::Node> LoadYaml(std::string_view text, std::string_view source);

// Emits `node` as block YAML, the same bytes for the same tree. Map keys keep their order. A scalar
// that was quoted in its source, or that was built as a string, stays a string: it is written plain
// when a YAML 1.1 reader (sigs.k8s.io/yaml, which Kubernetes uses) would read it back as a string,
// and double-quoted otherwise ("true", "on", "10", "*", "", ...). Multi-line strings use `|`.
std::string EmitYaml(const YAML::Node& node);

// True when both trees mean the same to Kubernetes: maps compare as key sets (order ignored),
// sequences element by element, scalars by text and by whether each is a string or not.
bool SemanticallyEqual(const YAML::Node& a, const YAML::Node& b);

// `map[key]` when `map` is a map holding `key` with a node of `type`. yaml-cpp throws when a
// missing key's node is asked its type; this never does.
bool HasField(const YAML::Node& map, const char* key, YAML::NodeType::value type);

// Whether a scalar node is a string (quoted in source, or built by code) rather than a plain scalar
// that a YAML 1.1 reader would resolve by its text.
bool IsStringScalar(const YAML::Node& node);

// Whether `text`, written plain, would be read by a YAML 1.1 reader as something other than the
// string `text` (bool, null, number, alias, tag...), or cannot be written plain at all.
bool NeedsQuotes(std::string_view text);

}  // namespace handoff

#endif  // HANDOFF_AGENT_BASE_YAML_UTIL_H_
