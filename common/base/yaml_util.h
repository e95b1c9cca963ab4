// The yaml-cpp adapter: every yaml-cpp exception stops here and becomes a Status.
#ifndef HANDOFF_COMMON_BASE_YAML_UTIL_H_
#define HANDOFF_COMMON_BASE_YAML_UTIL_H_

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "yaml-cpp/yaml.h"

namespace handoff {

// Bounds on what a YAML text may make the parser build, checked on the parser's events before any
// tree exists. yaml-cpp recurses once per nesting level (as do EmitYaml, SemanticallyEqual and
// every walk over a tree), and it expands an alias by sharing the anchored node, so a walk visits
// that node once per path to it: ten aliases of ten aliases of ... make a few hundred bytes stand
// for billions of nodes.
struct YamlLimits {
  // Sequences and maps inside each other. Kubernetes objects nest a few levels (a Pod's deepest
  // field, an affinity term's values, is 9 down); 100 leaves room and keeps recursion shallow.
  int max_depth = 100;
  // Scalars, sequences and maps (keys included) over all documents, an alias counted as the nodes
  // it stands for. A kubeadm manifest has about 150.
  size_t max_nodes = 100000;
  // Anchors and aliases. Refused by default: no file handoff reads needs them, and with them a
  // small file can expand without end. Where they are accepted, an alias to a node that encloses
  // it (a cycle) is still refused, and max_nodes and max_depth hold for the expanded document.
  bool allow_aliases = false;
};

// Where and why a text breaks its YamlLimits; line and column 1-based.
struct YamlRefusal {
  int line = 0;
  int column = 0;
  std::string message;
};

// Checks `text` against `limits` in one pass over the parser's events, without building a tree or
// expanding an alias; also refuses merge keys ("<<"), which Kubernetes' reader (go-yaml) merges
// and yaml-cpp keeps as a plain key, so the two would read different objects. nullopt when the
// text is within the limits, or when it has a syntax error before any refusal (the loader meets
// that error at the same place and reports it).
std::optional<YamlRefusal> CheckYamlLimits(std::string_view text, const YamlLimits& limits);

// Parses one YAML document. On a syntax error the message is "SOURCE:LINE:COLUMN: what"
// (1-based), so an operator can jump to it. An empty document is an error, and so is a text that
// breaks `limits` (same form, the line where it does): by default every anchor and alias. A key
// twice in a map, and a mapping key that is a map, a list or null, are refused at the key: to
// Kubernetes (sigs.k8s.io/yaml) keys are JSON member names. So is a text that is not UTF-8 or
// holds a character YAML does not allow (control characters other than tab and line breaks),
// which Kubernetes' reader refuses: the message names the byte or the character.
absl::StatusOr<YAML::Node> LoadYaml(std::string_view text, std::string_view source,
                                    const YamlLimits& limits = YamlLimits());

// Every non-empty document of a multi-document text ("---" between them), in order, under the
// same limits and with the same errors as LoadYaml (keys included). No documents is not an error
// here.
absl::StatusOr<std::vector<YAML::Node>> LoadYamlDocuments(std::string_view text,
                                                          std::string_view source,
                                                          const YamlLimits& limits = YamlLimits());

// The byte offset of the first byte of `text` that does not start a valid UTF-8 sequence
// (overlong forms, surrogates and code points past U+10FFFF are not valid), or npos.
size_t FirstInvalidUtf8(std::string_view text);

// Emits `node` as block YAML, the same bytes for the same tree. Map keys keep their order. A scalar
// that was quoted in its source, or that was built as a string, stays a string: it is written plain
// when a YAML 1.1 reader (sigs.k8s.io/yaml, which Kubernetes uses) would read it back as a string,
// and double-quoted otherwise ("true", "on", "10", "*", "", ...). Multi-line strings use `|`. A key
// longer than 1024 bytes as written is an explicit key ("? key" and ": value" on the next line),
// since YAML readers refuse an implicit key that long.
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

// What Kubernetes' YAML reader (sigs.k8s.io/yaml over go-yaml v2, YAML 1.1 rules) turns a scalar
// into on its way to JSON, which the API types are then decoded from: a string field refuses a
// number or a boolean, a bool field a string.
enum class JsonScalarType { kNull, kBool, kNumber, kString };

// The type go-yaml v2 (resolve.go) resolves the plain (unquoted, untagged) scalar `text` to:
// null for "", "~" and null words; bool for the YAML 1.1 words (y, yes, on, true, n, ...);
// number for integers in any base ("0x1F", "017", "1_000"), floats (".5", "1e3", ".inf", ".nan");
// string otherwise, timestamps ("2024-01-02") included (decoded into no type, go-yaml v2 keeps
// them as strings).
JsonScalarType ResolvePlainScalar(std::string_view text);

// The JSON type of a node: kNull for null and undefined nodes; for a scalar, its explicit YAML
// tag (!!int, !!bool, !!null, !!float; any other tag, quotes and block styles make a string),
// else ResolvePlainScalar. Not meaningful for sequences and maps.
JsonScalarType JsonTypeOf(const YAML::Node& scalar);

// Whether `node` is what sigs.k8s.io/yaml reads as the boolean true ("true", "yes", "on", ...).
bool IsYamlTrue(const YAML::Node& node);

// How a message names what a node is: "a string", "a number", "a boolean", "null", "a list",
// "a map".
std::string_view DescribeYamlNode(const YAML::Node& node);

}  // namespace handoff

#endif  // HANDOFF_COMMON_BASE_YAML_UTIL_H_
