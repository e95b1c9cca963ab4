#include "common/kube/json_yaml.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <optional>

#include "common/base/strings.h"
#include "common/base/yaml_util.h"

namespace handoff::kube {
namespace {

// YAML 1.1 words go-yaml v2 (behind sigs.k8s.io/yaml) resolves to booleans and null.
constexpr std::string_view kTrueWords[] = {"y",    "Y",    "yes", "Yes", "YES", "true",
                                           "True", "TRUE", "on",  "On",  "ON"};
constexpr std::string_view kFalseWords[] = {"n",     "N",     "no",  "No",  "NO", "false",
                                            "False", "FALSE", "off", "Off", "OFF"};
constexpr std::string_view kNullWords[] = {"", "~", "null", "Null", "NULL"};
// Floats go-yaml resolves but JSON cannot hold: encoding/json refuses to write them, so
// sigs.k8s.io/yaml's YAMLToJSON fails on them.
constexpr std::string_view kNotJsonNumbers[] = {".inf",  ".Inf",  ".INF",  "+.inf", "+.Inf",
                                                "+.INF", "-.inf", "-.Inf", "-.INF", ".nan",
                                                ".NaN",  ".NAN"};

constexpr std::string_view kIntTag = "tag:yaml.org,2002:int";
constexpr std::string_view kFloatTag = "tag:yaml.org,2002:float";
constexpr std::string_view kBoolTag = "tag:yaml.org,2002:bool";
constexpr std::string_view kNullTag = "tag:yaml.org,2002:null";
constexpr std::string_view kStrTag = "tag:yaml.org,2002:str";
constexpr std::string_view kBinaryTag = "tag:yaml.org,2002:binary";

template <size_t N>
bool OneOf(const std::string_view (&words)[N], std::string_view text) {
  return std::find(std::begin(words), std::end(words), text) != std::end(words);
}

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// Go's strconv.ParseUint(text, 0, 64): "0x", "0o" and "0b" prefixes (either case), a leading 0
// for octal, else decimal; no sign. nullopt where Go returns an error (syntax or range).
std::optional<uint64_t> GoParseUint(std::string_view text) {
  if (text.empty()) return std::nullopt;
  uint64_t base = 10;
  if (text[0] == '0') {
    const char prefix = text.size() >= 3 ? static_cast<char>(text[1] | 0x20) : '\0';
    base = prefix == 'x' ? 16 : prefix == 'b' ? 2 : 8;
    text.remove_prefix(prefix == 'x' || prefix == 'o' || prefix == 'b' ? 2 : 1);
  }
  uint64_t value = 0;
  for (char c : text) {
    const char lower = static_cast<char>(c | 0x20);
    const uint64_t digit = IsDigit(c)                       ? static_cast<uint64_t>(c - '0')
                           : lower >= 'a' && lower <= 'z' ? static_cast<uint64_t>(lower - 'a' + 10)
                                                          : 99;
    if (digit >= base) return std::nullopt;
    if (value > (std::numeric_limits<uint64_t>::max() - digit) / base) return std::nullopt;
    value = value * base + digit;
  }
  return value;
}

// Go's strconv.ParseInt(text, 0, 64): an optional sign, then as GoParseUint, within int64.
std::optional<int64_t> GoParseInt(std::string_view text) {
  bool negative = false;
  if (!text.empty() && (text[0] == '+' || text[0] == '-')) {
    negative = text[0] == '-';
    text.remove_prefix(1);
  }
  std::optional<uint64_t> magnitude = GoParseUint(text);
  constexpr uint64_t kCutoff = uint64_t{1} << 63;
  if (!magnitude || *magnitude > kCutoff || (!negative && *magnitude == kCutoff)) {
    return std::nullopt;
  }
  if (negative) return static_cast<int64_t>(0 - *magnitude);  // -2^63 included
  return static_cast<int64_t>(*magnitude);
}

// go-yaml's yamlStyleFloat, ^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$.
bool IsYamlStyleFloat(std::string_view text) {
  size_t i = 0;
  auto digits = [&] {
    const size_t start = i;
    while (i < text.size() && IsDigit(text[i])) ++i;
    return i > start;
  };
  if (i < text.size() && (text[i] == '+' || text[i] == '-')) ++i;
  if (i < text.size() && text[i] == '.') {
    ++i;
    if (!digits()) return false;
  } else {
    if (!digits()) return false;
    if (i < text.size() && text[i] == '.') {
      ++i;
      digits();
    }
  }
  if (i < text.size() && (text[i] == 'e' || text[i] == 'E')) {
    ++i;
    if (i < text.size() && (text[i] == '+' || text[i] == '-')) ++i;
    if (!digits()) return false;
  }
  return i == text.size();
}

// Go's strconv.ParseFloat(text, 64) on text IsYamlStyleFloat accepts: both round correctly.
// Go fails on overflow (and go-yaml then keeps the text a string) but not on underflow: 5e-324
// is a denormal and 1e-400 is 0, without error.
std::optional<double> GoParseFloat(const std::string& text) {
  const double value = std::strtod(text.c_str(), nullptr);
  if (std::isinf(value)) return std::nullopt;
  return value;
}

// The JSON that encoding/json writes for a float64 and nlohmann then reads: a float with an
// integer value below 1e21 is written without a fraction or exponent ("1e3" becomes 1000), and
// so reads back as an integer when one holds it.
Json FloatAsJson(double value) {
  if (value == std::trunc(value) && std::fabs(value) < 1e21) {
    if (value >= -9223372036854775808.0 && value < 9223372036854775808.0) {
      return Json(static_cast<int64_t>(value));
    }
    if (value >= 0 && value < 18446744073709551616.0) return Json(static_cast<uint64_t>(value));
  }
  return Json(value);
}

// What go-yaml v2's resolve() makes of a plain scalar, as sigs.k8s.io/yaml then writes it in
// JSON: null, a boolean, an integer (int64, or uint64 past INT64_MAX), a float (an integer too
// large for 64 bits, such as 18446744073709551616, is one), else a string (timestamps included:
// go-yaml v2 keeps them strings). nullopt for .inf and .nan, which JSON cannot hold.
std::optional<Json> PlainScalar(const std::string& text) {
  if (OneOf(kNullWords, text)) return Json(nullptr);
  if (OneOf(kTrueWords, text)) return Json(true);
  if (OneOf(kFalseWords, text)) return Json(false);
  if (OneOf(kNotJsonNumbers, text)) return std::nullopt;
  const char first = text.front();
  if (first == '.') {
    // strconv.ParseFloat on the text as it is (no '_' dropped): only ".5", ".5e3" and the like.
    if (IsYamlStyleFloat(text)) {
      if (std::optional<double> value = GoParseFloat(text)) return FloatAsJson(*value);
    }
    return Json(text);
  }
  if (first != '+' && first != '-' && !IsDigit(first)) return Json(text);
  // go-yaml drops every '_', then tries int64, uint64, and a YAML-style float in that order.
  // (Its later tries, "0b" and "0o" prefixes, are ParseInt's own with base 0.)
  std::string plain = text;
  plain.erase(std::remove(plain.begin(), plain.end(), '_'), plain.end());
  if (std::optional<int64_t> value = GoParseInt(plain)) return Json(*value);
  if (std::optional<uint64_t> value = GoParseUint(plain)) return Json(*value);
  if (IsYamlStyleFloat(plain)) {
    if (std::optional<double> value = GoParseFloat(plain)) return FloatAsJson(*value);
  }
  return Json(text);
}

std::string Where(std::string_view source, const YAML::Node& node) {
  return StrCat(source, ":", node.Mark().line + 1, ":", node.Mark().column + 1);
}

// A scalar as sigs.k8s.io/yaml turns it into JSON, by its tag: quoted and block scalars ("!")
// and !!str are strings; plain ones ("?") resolve; !!int, !!float, !!bool and !!null resolve
// too and must give that type (an integer may be a !!float); other tags are ignored, as
// go-yaml does for a value decoded into interface{}.
absl::StatusOr<Json> ScalarToJson(const YAML::Node& node, std::string_view source) {
  const std::string& tag = node.Tag();
  const std::string& text = node.Scalar();
  if (tag == "!" || tag.empty() || tag == kStrTag) return Json(text);
  if (tag == kBinaryTag) {
    return absl::InvalidArgumentError(
        StrCat(Where(source, node), ": !!binary is not accepted (sigs.k8s.io/yaml does not "
                                    "support it); write the base64 text as a plain string"));
  }
  if (tag != "?" && tag != kIntTag && tag != kFloatTag && tag != kBoolTag && tag != kNullTag) {
    return Json(text);
  }
  std::optional<Json> value = PlainScalar(text);
  if (!value) {
    return absl::InvalidArgumentError(
        StrCat(Where(source, node), ": ", text,
               " is a float JSON cannot hold (Kubernetes refuses it); quote it for a string"));
  }
  if (tag == "?") return *value;
  const bool matches = tag == kIntTag     ? value->is_number_integer()
                       : tag == kFloatTag ? value->is_number()
                       : tag == kBoolTag  ? value->is_boolean()
                                          : value->is_null();
  if (!matches) {
    return absl::InvalidArgumentError(StrCat(Where(source, node), ": '", text, "' is not a ",
                                             tag.substr(tag.rfind(':') + 1), " as its tag says"));
  }
  return *value;
}

// A map key as sigs.k8s.io/yaml makes it a JSON member name: a string stays, a boolean becomes
// "true" or "false", an integer its decimal digits ("0x10" is "16"). It refuses null and
// collection keys and uint64 ones; float keys (written through float32 there) are refused here,
// to be quoted.
absl::StatusOr<std::string> KeyToJson(const YAML::Node& key, std::string_view source) {
  if (!key.IsScalar()) {
    return absl::InvalidArgumentError(
        StrCat(Where(source, key), ": a mapping key must be a string, not ",
               DescribeYamlNode(key)));
  }
  absl::StatusOr<Json> value = ScalarToJson(key, source);
  if (!value.ok()) return value.status();
  if (value->is_string()) return value->get<std::string>();
  if (value->is_boolean()) return std::string(value->get<bool>() ? "true" : "false");
  if (value->is_number_integer() && !value->is_number_unsigned()) {
    return std::to_string(value->get<int64_t>());
  }
  if (value->is_number_unsigned() && value->get<uint64_t>() <= 9223372036854775807u) {
    return std::to_string(value->get<uint64_t>());
  }
  return absl::InvalidArgumentError(StrCat(Where(source, key), ": the mapping key '",
                                           key.Scalar(), "' is ", DescribeYamlNode(key),
                                           " Kubernetes cannot name a field with; quote it"));
}

absl::StatusOr<Json> ToJson(const YAML::Node& node, std::string_view source) {
  switch (node.Type()) {
    case YAML::NodeType::Map: {
      Json object = Json::object();
      for (const auto& entry : node) {
        absl::StatusOr<std::string> key = KeyToJson(entry.first, source);
        if (!key.ok()) return key.status();
        // "yes" and "true", or "16" and "0x10", are one member to Kubernetes.
        if (object.contains(*key)) {
          return absl::InvalidArgumentError(
              StrCat(Where(source, entry.first), ": the key '", entry.first.Scalar(),
                     "' is the member \"", *key, "\" again; Kubernetes rejects it, keep one"));
        }
        absl::StatusOr<Json> value = ToJson(entry.second, source);
        if (!value.ok()) return value.status();
        object[*key] = *std::move(value);
      }
      return object;
    }
    case YAML::NodeType::Sequence: {
      Json array = Json::array();
      for (const auto& item : node) {
        absl::StatusOr<Json> value = ToJson(item, source);
        if (!value.ok()) return value.status();
        array.push_back(*std::move(value));
      }
      return array;
    }
    case YAML::NodeType::Scalar:
      return ScalarToJson(node, source);
    default:
      // `key: !!str` (no text) is the empty string to go-yaml; anything else empty is null.
      if (node.Tag() == kStrTag) return Json("");
      return Json(nullptr);
  }
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

absl::StatusOr<Json> YamlNodeToJson(const YAML::Node& node, std::string_view source) {
  return ToJson(node, source);
}

absl::StatusOr<std::vector<Json>> ParseObjects(std::string_view text, std::string_view source) {
  // The API server refuses a body that is not UTF-8 (go-yaml and encoding/json check it), and
  // nlohmann::json would accept such a YAML string only to throw when writing it out. (YAML's
  // other forbidden characters are refused by LoadYamlDocuments; JSON allows them in strings.)
  if (const size_t bad = FirstInvalidUtf8(text); bad != std::string_view::npos) {
    const std::string_view before = text.substr(0, bad);
    const size_t line = static_cast<size_t>(std::count(before.begin(), before.end(), '\n')) + 1;
    const size_t line_start = before.rfind('\n');
    const size_t column = bad - (line_start == std::string_view::npos ? 0 : line_start + 1) + 1;
    return absl::InvalidArgumentError(StrCat(source, ":", line, ":", column, ": byte ", bad,
                                             " is not UTF-8; save the file as UTF-8"));
  }
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
    absl::StatusOr<Json> json = ToJson(document, source);
    if (!json.ok()) return json.status();
    absl::StatusOr<std::vector<Json>> expanded =
        Expand(*std::move(json), source, document.Mark().line + 1);
    if (!expanded.ok()) return expanded.status();
    objects.insert(objects.end(), expanded->begin(), expanded->end());
  }
  return objects;
}

}  // namespace handoff::kube
