// Kubernetes objects between JSON (the API's wire format) and YAML (what operators read and write):
// plans show objects as YAML diffs, and the fake API server is seeded from YAML files.
#ifndef HANDOFF_COORDINATOR_KUBE_JSON_YAML_H_
#define HANDOFF_COORDINATOR_KUBE_JSON_YAML_H_

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "coordinator/kube/resource.h"
#include "yaml-cpp/yaml.h"

namespace handoff::kube {

// The YAML tree of a JSON value, keys in order. Strings stay strings when emitted (quoted where a
// YAML reader would take them for something else); numbers, booleans and null are plain.
YAML::Node JsonToYamlNode(const Json& value);

// `value` as block YAML in the layout kubectl and kubeadm write (agent/base EmitYaml).
std::string JsonToYaml(const Json& value);

// The JSON of a YAML tree. Quoted scalars are strings; plain ones resolve as sigs.k8s.io/yaml
// (YAML 1.1) reads them: null, booleans, integers and floats, anything else a string. Map keys
// keep their order.
Json YamlNodeToJson(const YAML::Node& node);

// The objects in a file of YAML documents (separated by ---) or JSON: each document is one object,
// or a List (kind ending in "List" with items), or a JSON array. Empty documents are skipped.
// Errors name `source` and the line.
absl::StatusOr<std::vector<Json>> ParseObjects(std::string_view text, std::string_view source);

}  // namespace handoff::kube

#endif  // HANDOFF_COORDINATOR_KUBE_JSON_YAML_H_
