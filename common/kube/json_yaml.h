// Kubernetes objects between JSON (the API's wire format) and YAML (what operators read and write):
// plans show objects as YAML diffs, and the fake API server is seeded from YAML files.
#ifndef HANDOFF_COMMON_KUBE_JSON_YAML_H_
#define HANDOFF_COMMON_KUBE_JSON_YAML_H_

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "common/kube/resource.h"
#include "yaml-cpp/yaml.h"

namespace handoff::kube {

// The YAML tree of a JSON value, keys in order. Strings stay strings when emitted (quoted where a
// YAML reader would take them for something else); numbers, booleans and null are plain.
YAML::Node JsonToYamlNode(const Json& value);

// `value` as block YAML in the layout kubectl and kubeadm write (common/base EmitYaml).
std::string JsonToYaml(const Json& value);

// The JSON of a YAML tree, as sigs.k8s.io/yaml's YAMLToJSON (go-yaml v2, YAML 1.1) makes it.
// Quoted scalars are strings; plain ones resolve to null, booleans ("yes", "off"), integers in
// any base ("0x1F", "017", "1_000"; int64, or uint64 past INT64_MAX), floats (a larger integer
// becomes one; a float with an integer value below 1e21 reads back as an integer, as JSON written
// by Go does), anything else a string. Map keys keep their order; a boolean or integer key
// becomes its text ("true", "16"). Refused, naming `source`:LINE:COLUMN: .inf and .nan (JSON has
// no such numbers), !!binary, a tagged scalar that is not of its tag's type, a null, collection,
// float or uint64 key, and two keys that name the same member.
absl::StatusOr<Json> YamlNodeToJson(const YAML::Node& node, std::string_view source);

// The objects in a file of YAML documents (separated by ---) or JSON: each document is one object,
// or a List (kind ending in "List" with items), or a JSON array. Empty documents are skipped.
// Errors name `source` and the line; a text that is not UTF-8 is refused with the line, column
// and byte offset of the first byte that is not.
absl::StatusOr<std::vector<Json>> ParseObjects(std::string_view text, std::string_view source);

}  // namespace handoff::kube

#endif  // HANDOFF_COMMON_KUBE_JSON_YAML_H_
