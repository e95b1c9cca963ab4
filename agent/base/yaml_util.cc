#include "agent/base/yaml_util.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <regex>
#include <set>
#include <sstream>
#include <vector>

#include "agent/base/strings.h"

namespace handoff {
namespace {

// YAML 1.1 words that sigs.k8s.io/yaml (go-yaml v2) resolves to bool or null.
constexpr std::string_view kYaml11Words[] = {
    "y",     "Y",     "yes",   "Yes",   "YES",   "n",     "N",    "no",   "No",   "NO",
    "true",  "True",  "TRUE",  "false", "False", "FALSE", "on",   "On",   "ON",   "off",
    "Off",   "OFF",   "null",  "Null",  "NULL",  "~",     ".inf", ".Inf", ".INF", "+.inf",
    "+.Inf", "+.INF", "-.inf", "-.Inf", "-.INF", ".nan",  ".NaN", ".NAN", "<<"};

// Whether a plain scalar would resolve to a number or timestamp (YAML 1.1, as go-yaml v2 reads
// it): ints in any base, floats, sexagesimals, dates. "127.0.0.1" and "250m" stay strings.
// go-yaml v2 drops every '_' and then calls strconv.ParseInt(text, 0, 64), which also takes the
// upper-case prefixes "0X", "0B" and "0O".
bool LooksNumeric(std::string_view text) {
  static const std::regex kNumber(
      "[-+]?(0[bB][01]+|0[oO]?[0-7]+|0[xX][0-9a-fA-F]+|[0-9]+|"
      "(\\.[0-9]+|[0-9]+(\\.[0-9]*)?)([eE][-+]?[0-9]+)?|"
      "[0-9]+(:[0-5]?[0-9])+(\\.[0-9]*)?)|"
      "[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}([Tt ].*)?");
  std::string digits(text);
  digits.erase(std::remove(digits.begin(), digits.end(), '_'), digits.end());
  return std::regex_match(digits, kNumber);
}

absl::Status CheckDuplicateKeys(const YAML::Node& node, std::string_view source) {
  if (node.IsMap()) {
    std::set<std::string> seen;
    for (const auto& entry : node) {
      const std::string key = entry.first.IsScalar() ? entry.first.Scalar() : std::string();
      if (entry.first.IsScalar() && !seen.insert(key).second) {
        return absl::InvalidArgumentError(StrCat(source, ":", entry.first.Mark().line + 1, ":",
                                                 entry.first.Mark().column + 1, ": duplicate key '",
                                                 key, "'; Kubernetes rejects it, keep one"));
      }
      absl::Status status = CheckDuplicateKeys(entry.second, source);
      if (!status.ok()) return status;
    }
  } else if (node.IsSequence()) {
    for (const auto& item : node) {
      absl::Status status = CheckDuplicateKeys(item, source);
      if (!status.ok()) return status;
    }
  }
  return absl::OkStatus();
}

std::string DoubleQuote(std::string_view text) {
  std::string out = "\"";
  for (char c : text) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\r':
        out += "\\r";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
          char buf[8];
          std::snprintf(buf, sizeof(buf), "\\x%02x", static_cast<unsigned char>(c));
          out += buf;
        } else {
          out += c;
        }
    }
  }
  out += '"';
  return out;
}

// Writes YAML in the layout sigs.k8s.io/yaml produces (the layout of kubeadm's manifests): two
// spaces per level, sequence items at their parent key's indentation. Re-emitting a kubeadm
// manifest therefore gives back the same bytes, and a plan's diff shows only what really changes.
class Writer {
 public:
  std::string Take() { return out_.str(); }

  void Document(const YAML::Node& node) {
    if (node.IsMap() && node.size() > 0) {
      Map(node, 0);
    } else if (node.IsSequence() && node.size() > 0) {
      Sequence(node, 0);
    } else {
      out_ << Inline(node) << "\n";
    }
  }

 private:
  static std::string ScalarText(const YAML::Node& node) {
    if (node.IsNull()) return "null";
    const std::string& text = node.Scalar();
    if (IsStringScalar(node) && NeedsQuotes(text)) return DoubleQuote(text);
    if (!IsStringScalar(node) && (text.empty() || text.find('\n') != std::string::npos)) {
      return DoubleQuote(text);
    }
    return text;
  }

  // A value that fits on its key's line: scalars and empty collections.
  static bool IsInline(const YAML::Node& node) {
    if (node.IsMap() || node.IsSequence()) return node.size() == 0;
    return !IsMultiLine(node);
  }
  // A string with a line break that a literal block can hold: one with text on some line and no
  // control character a block would lose (a literal block reads "\r\n" back as "\n").
  static bool IsMultiLine(const YAML::Node& node) {
    if (!node.IsScalar() || !IsStringScalar(node)) return false;
    const std::string& text = node.Scalar();
    if (text.find('\n') == std::string::npos) return false;
    if (text.find_first_not_of('\n') == std::string::npos) return false;
    for (char c : text) {
      if ((static_cast<unsigned char>(c) < 0x20 && c != '\n' && c != '\t') || c == 0x7f)
        return false;
    }
    return true;
  }
  static std::string Inline(const YAML::Node& node) {
    if (node.IsMap()) return "{}";
    if (node.IsSequence()) return "[]";
    return ScalarText(node);
  }

  void Indent(int n) { out_ << std::string(static_cast<size_t>(n), ' '); }

  // A literal block: "|-" strips the final newline, "|" keeps one, "|+" keeps them all.
  void Literal(const std::string& text, int indent) {
    const size_t last_text = text.find_last_not_of('\n');
    const size_t final_newlines = text.size() - 1 - last_text;
    out_ << (final_newlines == 0 ? "|-" : final_newlines == 1 ? "|" : "|+");
    // The block's indentation is read from its first non-empty line; when that line starts with a
    // space, say it explicitly (relative to the parent, which sits at indent - 2).
    const size_t first_text = text.find_first_not_of('\n');
    if (text[first_text] == ' ') out_ << "2";
    out_ << "\n";
    const std::string_view body =
        std::string_view(text).substr(0, text.size() - (final_newlines > 0 ? 1 : 0));
    for (std::string_view line : StrSplit(body, "\n")) {
      if (!line.empty()) Indent(indent);
      out_ << line << "\n";
    }
  }

  // Writes the entries of a non-empty map; the first key goes at the current cursor when
  // `first_inline` is set (a map that is a sequence item), the others at `indent`.
  void Map(const YAML::Node& node, int indent, bool first_inline = false) {
    bool first = true;
    for (const auto& entry : node) {
      if (!(first && first_inline)) Indent(indent);
      first = false;
      out_ << Key(entry.first) << ":";
      const YAML::Node& value = entry.second;
      if (IsMultiLine(value)) {
        out_ << " ";
        Literal(value.Scalar(), indent + 2);
      } else if (IsInline(value)) {
        out_ << " " << Inline(value) << "\n";
      } else if (value.IsMap()) {
        out_ << "\n";
        Map(value, indent + 2);
      } else {
        out_ << "\n";
        Sequence(value, indent);
      }
    }
  }

  void Sequence(const YAML::Node& node, int indent) {
    for (const auto& item : node) {
      Indent(indent);
      out_ << "-";
      if (IsMultiLine(item)) {
        out_ << " ";
        Literal(item.Scalar(), indent + 2);
      } else if (IsInline(item)) {
        out_ << " " << Inline(item) << "\n";
      } else if (item.IsMap()) {
        out_ << " ";
        Map(item, indent + 2, /*first_inline=*/true);
      } else {
        out_ << "\n";
        Sequence(item, indent + 2);
      }
    }
  }

  static std::string Key(const YAML::Node& key) {
    if (!key.IsScalar())
      return DoubleQuote("?");  // complex keys do not occur in Kubernetes objects
    return ScalarText(key);
  }

  std::ostringstream out_;
};

bool ScalarsEqual(const YAML::Node& a, const YAML::Node& b) {
  if (a.IsNull() || b.IsNull()) return a.IsNull() && b.IsNull();
  if (IsStringScalar(a) != IsStringScalar(b)) {
    // A quoted "x" and a plain x mean the same when plain x is itself a string.
    const YAML::Node& plain = IsStringScalar(a) ? b : a;
    if (NeedsQuotes(plain.Scalar())) return false;
  }
  return a.Scalar() == b.Scalar();
}

}  // namespace

absl::StatusOr<YAML::Node> LoadYaml(std::string_view text, std::string_view source) {
  YAML::Node node;
  try {
    // YAML::Load stops after the first document and so would drop the rest of the file silently
    // (also text it cannot continue with, such as "b: c" after a top-level "- a"). Empty
    // documents, as after a trailing "---", hold nothing to lose.
    std::vector<YAML::Node> documents = YAML::LoadAll(std::string(text));
    for (size_t i = 0; i < documents.size(); ++i) {
      if (documents[i].IsNull()) continue;
      if (node.IsDefined() && !node.IsNull()) {
        return absl::InvalidArgumentError(
            StrCat(source, ":", documents[i].Mark().line + 1, ":", documents[i].Mark().column + 1,
                   ": a second YAML document starts here; the file must hold exactly one"));
      }
      node = documents[i];
    }
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(
        StrCat(source, ":", e.mark.line + 1, ":", e.mark.column + 1, ": ", e.msg));
  }
  if (!node.IsDefined() || node.IsNull()) {
    return absl::InvalidArgumentError(StrCat(source, ": the file holds no YAML document"));
  }
  absl::Status duplicates = CheckDuplicateKeys(node, source);
  if (!duplicates.ok()) return duplicates;
  return node;
}

std::string EmitYaml(const YAML::Node& node) {
  Writer writer;
  writer.Document(node);
  return writer.Take();
}

bool HasField(const YAML::Node& map, const char* key, YAML::NodeType::value type) {
  if (!map.IsDefined() || !map.IsMap()) return false;
  const YAML::Node field = map[key];
  return field.IsDefined() && field.Type() == type;
}

bool IsStringScalar(const YAML::Node& node) {
  // yaml-cpp tags quoted and block scalars "!", plain ones "?", and nodes built in code "".
  return node.IsScalar() && node.Tag() != "?";
}

bool NeedsQuotes(std::string_view text) {
  if (text.empty()) return true;
  if (std::find(std::begin(kYaml11Words), std::end(kYaml11Words), text) != std::end(kYaml11Words)) {
    return true;
  }
  if (LooksNumeric(text)) return true;
  const char first = text.front();
  if (std::string_view("!&*|>'\"%@`#,[]{}").find(first) != std::string_view::npos) return true;
  if ((first == '-' || first == '?' || first == ':') && (text.size() == 1 || text[1] == ' ')) {
    return true;
  }
  if (first == ' ' || text.back() == ' ' || text.back() == ':') return true;
  if (StrContains(text, ": ") || StrContains(text, " #")) return true;
  for (char c : text) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) return true;
  }
  return false;
}

bool SemanticallyEqual(const YAML::Node& a, const YAML::Node& b) {
  if (a.Type() != b.Type()) return false;
  switch (a.Type()) {
    case YAML::NodeType::Null:
    case YAML::NodeType::Undefined:
      return true;
    case YAML::NodeType::Scalar:
      return ScalarsEqual(a, b);
    case YAML::NodeType::Sequence: {
      if (a.size() != b.size()) return false;
      for (size_t i = 0; i < a.size(); ++i) {
        if (!SemanticallyEqual(a[i], b[i])) return false;
      }
      return true;
    }
    case YAML::NodeType::Map: {
      if (a.size() != b.size()) return false;
      for (const auto& entry : a) {
        const YAML::Node other = b[entry.first.Scalar()];
        if (!other.IsDefined() || !SemanticallyEqual(entry.second, other)) return false;
      }
      return true;
    }
  }
  return false;
}

}  // namespace handoff
