#include "coordinator/kube/json_yaml.h"

#include <algorithm>
#include <regex>

#include "agent/base/strings.h"
#include "agent/base/yaml_util.h"

namespace handoff::kube {
namespace {

// YAML 1.1 words go-yaml v2 (behind sigs.k8s.io/yaml) resolves to booleans and null.
constexpr std::string_view kTrueWords[] = {"y",    "Y",    "yes", "Yes", "YES", "true",
                                           "True", "TRUE", "on",  "On",  "ON"};
constexpr std::string_view kFalseWords[] = {"n",     "N",     "no",  "No",  "NO", "false",
                                            "False", "FALSE", "off", "Off", "OFF"};
constexpr std::string_view kNullWords[] = {"", "~", "null", "Null", "NULL"};

template <size_t N>
bool OneOf(const std::string_view (&words)[N], std::string_view text) {
  return std::find(std::begin(words), std::end(words), text) != std::end(words);
}

Json PlainScalar(const std::string& text) {
  static const std::regex kInteger("[-+]?[0-9]+");
  static const std::regex kFloat(
      "[-+]?([0-9]+\\.[0-9]*|\\.[0-9]+)([eE][-+]?[0-9]+)?|[-+]?[0-9]+[eE][-+]?[0-9]+");
  if (OneOf(kNullWords, text)) return Json(nullptr);
  if (OneOf(kTrueWords, text)) return Json(true);
  if (OneOf(kFalseWords, text)) return Json(false);
  if (std::regex_match(text, kInteger)) {
    try {
      return Json(std::stoll(text));
    } catch (const std::exception&) {
      return Json(text);  // out of range: keep the text
    }
  }
  if (std::regex_match(text, kFloat)) {
    try {
      return Json(std::stod(text));
    } catch (const std::exception&) {
      return Json(text);
    }
  }
  return Json(text);
}

// Lists of lists nest this deep at most (a List in an array is two); deeper input is refused
// rather than recursed through.
constexpr int kMaxListNesting = 16;

absl::StatusOr<std::vector<Json>> Expand(Json document, std::string_view source, int line,
                                         int depth = 0) {
  std::vector<Json> objects;
  if (document.is_null()) return objects;
  if (depth > kMaxListNesting) {
    return absl::InvalidArgumentError(StrCat(source, ":", line, ": lists nest deeper than ",
                                             kMaxListNesting, " levels; expected objects"));
  }
  if (document.is_array()) {
    for (Json& item : document) {
      absl::StatusOr<std::vector<Json>> nested = Expand(std::move(item), source, line, depth + 1);
      if (!nested.ok()) return nested.status();
      objects.insert(objects.end(), nested->begin(), nested->end());
    }
    return objects;
  }
  if (!document.is_object()) {
    return absl::InvalidArgumentError(
        StrCat(source, ":", line, ": expected a Kubernetes object (a map with kind and metadata)"));
  }
  const std::string kind = StringAt(document, {"kind"});
  if (EndsWith(kind, "List") && document.contains("items")) {
    if (!document["items"].is_array()) {
      return absl::InvalidArgumentError(
          StrCat(source, ":", line, ": ", kind, ".items must be a list"));
    }
    return Expand(std::move(document["items"]), source, line, depth + 1);
  }
  objects.push_back(std::move(document));
  return objects;
}

}  // namespace

YAML::Node JsonToYamlNode(const Json& value) {
  switch (value.type()) {
    case Json::value_t::object: {
      YAML::Node map(YAML::NodeType::Map);
      for (auto it = value.begin(); it != value.end(); ++it) {
        map[it.key()] = JsonToYamlNode(it.value());
      }
      return map;
    }
    case Json::value_t::array: {
      YAML::Node sequence(YAML::NodeType::Sequence);
      for (const Json& item : value) sequence.push_back(JsonToYamlNode(item));
      return sequence;
    }
    case Json::value_t::string:
      return YAML::Node(value.get<std::string>());
    case Json::value_t::null:
      return YAML::Node(YAML::NodeType::Null);
    default: {
      // Numbers and booleans: plain scalars, so they are emitted unquoted.
      YAML::Node scalar(value.dump());
      scalar.SetTag("?");
      return scalar;
    }
  }
}

std::string JsonToYaml(const Json& value) { return EmitYaml(JsonToYamlNode(value)); }

Json YamlNodeToJson(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Map: {
      Json object = Json::object();
      for (const auto& entry : node) {
        object[entry.first.Scalar()] = YamlNodeToJson(entry.second);
      }
      return object;
    }
    case YAML::NodeType::Sequence: {
      Json array = Json::array();
      for (const auto& item : node) array.push_back(YamlNodeToJson(item));
      return array;
    }
    case YAML::NodeType::Scalar:
      if (IsStringScalar(node)) return Json(node.Scalar());
      return PlainScalar(node.Scalar());
    default:
      return Json(nullptr);
  }
}

absl::StatusOr<std::vector<Json>> ParseObjects(std::string_view text, std::string_view source) {
  const std::string_view trimmed = StripWhitespace(text);
  std::vector<Json> objects;
  if (!trimmed.empty() && (trimmed.front() == '{' || trimmed.front() == '[')) {
    Json document = Json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
    if (document.is_discarded()) {
      return absl::InvalidArgumentError(StrCat(source, ": not valid JSON"));
    }
    return Expand(std::move(document), source, 1);
  }
  // Anchors, aliases, deep nesting and huge documents are refused before any tree is built.
  absl::StatusOr<std::vector<YAML::Node>> documents = LoadYamlDocuments(text, source);
  if (!documents.ok()) return documents.status();
  for (const YAML::Node& document : *documents) {
    absl::StatusOr<std::vector<Json>> expanded =
        Expand(YamlNodeToJson(document), source, document.Mark().line + 1);
    if (!expanded.ok()) return expanded.status();
    objects.insert(objects.end(), expanded->begin(), expanded->end());
  }
  return objects;
}

}  // namespace handoff::kube
