#include "common/base/yaml_util.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <vector>

#include "common/base/strings.h"
#include "yaml-cpp/eventhandler.h"
#include "yaml-cpp/parser.h"

namespace handoff {
namespace {

// YAML 1.1 words that sigs.k8s.io/yaml (go-yaml v2) resolves to bool or null.
constexpr std::string_view kYaml11Words[] = {
    "y",     "Y",     "yes",   "Yes",   "YES",   "n",     "N",    "no",   "No",   "NO",
    "true",  "True",  "TRUE",  "false", "False", "FALSE", "on",   "On",   "ON",   "off",
    "Off",   "OFF",   "null",  "Null",  "NULL",  "~",     ".inf", ".Inf", ".INF", "+.inf",
    "+.Inf", "+.INF", "-.inf", "-.Inf", "-.INF", ".nan",  ".NaN", ".NAN", "<<"};

// The YAML 1.1 booleans of go-yaml v2 (resolve.go).
constexpr std::string_view kYaml11Bools[] = {"y",     "Y",     "yes",   "Yes",  "YES", "true",
                                             "True",  "TRUE",  "on",    "On",   "ON",  "n",
                                             "N",     "no",    "No",    "NO",   "false", "False",
                                             "FALSE", "off",   "Off",   "OFF"};

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// Whether `plain` (with its '_' dropped) has, after an optional sign, a digit or a '.': every
// number and timestamp form below does, and most strings in a manifest (flags, paths, names) do
// not, so they are told apart without a regex (microseconds a call, many times that under ASan).
bool MayBeNumber(std::string_view plain) {
  const size_t first = !plain.empty() && (plain[0] == '-' || plain[0] == '+') ? 1 : 0;
  return first < plain.size() && (plain[first] == '.' || IsDigit(plain[first]));
}

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
  return MayBeNumber(digits) && std::regex_match(digits, kNumber);
}

// The code point of the UTF-8 sequence at text[i] and its length in bytes; length 0 when the
// bytes there are not one (overlong forms, surrogates and code points past U+10FFFF included).
struct Utf8Char {
  uint32_t code = 0;
  size_t length = 0;
};
Utf8Char DecodeUtf8(std::string_view text, size_t i) {
  const auto byte = static_cast<unsigned char>(text[i]);
  if (byte < 0x80) return {byte, 1};
  size_t length = 0;
  uint32_t code = 0;
  uint32_t min = 0;
  if (byte >= 0xc2 && byte <= 0xdf) {
    length = 2, code = byte & 0x1fu, min = 0x80;
  } else if (byte >= 0xe0 && byte <= 0xef) {
    length = 3, code = byte & 0x0fu, min = 0x800;
  } else if (byte >= 0xf0 && byte <= 0xf4) {
    length = 4, code = byte & 0x07u, min = 0x10000;
  } else {
    return {};
  }
  if (i + length > text.size()) return {};
  for (size_t k = 1; k < length; ++k) {
    const auto next = static_cast<unsigned char>(text[i + k]);
    if ((next & 0xc0) != 0x80) return {};
    code = (code << 6) | (next & 0x3fu);
  }
  if (code < min || code > 0x10ffff || (code >= 0xd800 && code <= 0xdfff)) return {};
  return {code, length};
}

// The characters YAML allows in a stream (YAML 1.1 c-printable), as go-yaml's reader checks them
// (readerc.go): it refuses the whole file otherwise, "control characters are not allowed".
bool IsYamlPrintable(uint32_t c) {
  return c == 0x09 || c == 0x0a || c == 0x0d || (c >= 0x20 && c <= 0x7e) || c == 0x85 ||
         (c >= 0xa0 && c <= 0xd7ff) || (c >= 0xe000 && c <= 0xfffd) ||
         (c >= 0x10000 && c <= 0x10ffff);
}

// Whether a character is written as an escape in a double-quoted string: one YAML does not allow
// in a stream, and the line breaks YAML 1.1 has besides \n and \r (NEL, LS, PS), which a reader
// would fold into a space, and a BOM, which a reader may take for the start of a stream. Tab, \n
// and \r have escapes of their own.
bool MustEscape(uint32_t c) {
  return !IsYamlPrintable(c) || c == 0x85 || c == 0x2028 || c == 0x2029 || c == 0xfeff;
}

// Whether `text` holds a character MustEscape or a byte that is not UTF-8, past ASCII (the
// ASCII control characters are checked where this is called).
bool HasNonAsciiToEscape(std::string_view text) {
  for (size_t i = 0; i < text.size(); ++i) {
    if (static_cast<unsigned char>(text[i]) < 0x80) continue;
    const Utf8Char c = DecodeUtf8(text, i);
    if (c.length == 0 || MustEscape(c.code)) return true;
    i += c.length - 1;
  }
  return false;
}

constexpr std::string_view kAliasReason =
    ": through aliases a few bytes can stand for millions of nodes, and no file handoff reads "
    "needs them; write the value out in full";

// Thrown by LimitChecker to stop the parser at the first refusal; caught in CheckYamlLimits.
struct LimitReached {};

// Follows the parser's events and refuses at the first node that breaks the limits. The parser
// calls OnSequenceStart/OnMapStart before it recurses into the collection, so throwing there also
// bounds yaml-cpp's own recursion.
class LimitChecker : public YAML::EventHandler {
 public:
  LimitChecker(std::string_view text, const YamlLimits& limits) : text_(text), limits_(limits) {}

  const std::optional<YamlRefusal>& refusal() const { return refusal_; }

  // yaml-cpp does not move past a ',', ']' or '}' outside a flow collection: it reports an empty
  // document there, again and again, and YAML::LoadAll would never return. A document that
  // starts where the one before it did is that loop.
  void OnDocumentStart(const YAML::Mark& mark) override {
    if (mark.pos == last_document_start_) {
      Refuse(mark, StrCat("the YAML parser cannot go past ", CharacterAt(mark),
                          ": a ',', ']' or '}' outside [ ] or { } must be quoted"));
    }
    last_document_start_ = mark.pos;
  }
  // Anchors belong to their document.
  void OnDocumentEnd() override { anchored_.clear(); }

  void OnAnchor(const YAML::Mark& mark, const std::string& name) override {
    if (limits_.allow_aliases) return;
    Refuse(mark, StrCat("YAML anchors and aliases are not accepted (&", name, " defines an anchor)",
                        kAliasReason));
  }

  void OnNull(const YAML::Mark& mark, YAML::anchor_t anchor) override {
    Leaf(mark, anchor, /*merge_key=*/false);
  }

  void OnScalar(const YAML::Mark& mark, const std::string& tag, YAML::anchor_t anchor,
                const std::string& value) override {
    Leaf(mark, anchor, tag == "?" && value == "<<" && IsKey());
  }

  void OnAlias(const YAML::Mark& mark, YAML::anchor_t anchor) override {
    if (!limits_.allow_aliases) {
      Refuse(mark, StrCat("YAML anchors and aliases are not accepted (", AliasText(mark),
                          " repeats an anchor)", kAliasReason));
    }
    auto it = anchored_.find(anchor);
    if (it == anchored_.end()) {
      // yaml-cpp resolves it to the node being built: a cycle, which no walk would leave.
      Refuse(mark, StrCat("the alias ", AliasText(mark),
                          " refers to a node that contains it; the document would be infinite"));
    }
    CountChild();
    if (static_cast<int>(stack_.size()) + it->second.height > limits_.max_depth) {
      Refuse(mark, StrCat("the alias ", AliasText(mark), " nests the document deeper than ",
                          limits_.max_depth, " levels"));
    }
    AddNodes(mark, it->second.nodes, /*through_alias=*/true);
    if (!stack_.empty()) {
      stack_.back().child_height = std::max(stack_.back().child_height, it->second.height);
    }
  }

  void OnSequenceStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                       YAML::EmitterStyle::value) override {
    Open(mark, anchor, /*is_map=*/false);
  }
  void OnSequenceEnd() override { Close(); }
  void OnMapStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                  YAML::EmitterStyle::value) override {
    Open(mark, anchor, /*is_map=*/true);
  }
  void OnMapEnd() override { Close(); }

 private:
  struct Frame {
    bool is_map = false;
    size_t children = 0;  // nodes directly inside so far (a map's keys and values alternate)
    YAML::anchor_t anchor = YAML::NullAnchor;
    size_t first_node = 0;  // nodes_ when it opened
    int child_height = 0;   // levels of collections below it
  };
  // What an anchored node stands for when an alias repeats it.
  struct Subtree {
    size_t nodes = 0;
    int height = 0;  // 0 for a scalar, 1 for a collection of scalars, ...
  };

  [[noreturn]] void Refuse(const YAML::Mark& mark, std::string message) {
    refusal_ = YamlRefusal{mark.line + 1, mark.column + 1, std::move(message)};
    throw LimitReached{};
  }

  // "*name" as written at `mark`.
  std::string AliasText(const YAML::Mark& mark) const {
    if (mark.pos < 0 || static_cast<size_t>(mark.pos) >= text_.size()) return "an alias";
    const size_t start = static_cast<size_t>(mark.pos);
    size_t end = start + 1;
    while (end < text_.size() && end - start < 64 &&
           std::string_view(" \t\r\n,[]{}").find(text_[end]) == std::string_view::npos) {
      ++end;
    }
    return std::string(text_.substr(start, end - start));
  }

  // "','" for the character at `mark`.
  std::string CharacterAt(const YAML::Mark& mark) const {
    if (mark.pos < 0 || static_cast<size_t>(mark.pos) >= text_.size()) return "the end";
    return StrCat("'", text_.substr(static_cast<size_t>(mark.pos), 1), "'");
  }

  // Whether the next node is a key of the enclosing map.
  bool IsKey() const {
    return !stack_.empty() && stack_.back().is_map && stack_.back().children % 2 == 0;
  }
  void CountChild() {
    if (!stack_.empty()) ++stack_.back().children;
  }

  void AddNodes(const YAML::Mark& mark, size_t count, bool through_alias) {
    nodes_ += count;
    if (nodes_ <= limits_.max_nodes) return;
    Refuse(mark, through_alias
                     ? StrCat("aliases expand the document past ", limits_.max_nodes,
                              " nodes; write it without them")
                     : StrCat("the document has more than ", limits_.max_nodes,
                              " nodes, far more than any file handoff reads"));
  }

  void Leaf(const YAML::Mark& mark, YAML::anchor_t anchor, bool merge_key) {
    if (merge_key) {
      Refuse(mark,
             "YAML merge keys (<<) are not accepted: Kubernetes merges the map they name into "
             "this one and handoff's YAML reader does not, so the two would read different "
             "objects; write the keys out");
    }
    CountChild();
    AddNodes(mark, 1, /*through_alias=*/false);
    if (anchor != YAML::NullAnchor) anchored_[anchor] = Subtree{1, 0};
  }

  void Open(const YAML::Mark& mark, YAML::anchor_t anchor, bool is_map) {
    CountChild();
    if (static_cast<int>(stack_.size()) + 1 > limits_.max_depth) {
      Refuse(mark, StrCat("the document nests deeper than ", limits_.max_depth,
                          " levels, far deeper than any file handoff reads"));
    }
    AddNodes(mark, 1, /*through_alias=*/false);
    stack_.push_back(Frame{is_map, 0, anchor, nodes_ - 1, 0});
  }

  void Close() {
    const Frame frame = stack_.back();
    stack_.pop_back();
    const int height = frame.child_height + 1;
    if (frame.anchor != YAML::NullAnchor) {
      anchored_[frame.anchor] = Subtree{nodes_ - frame.first_node, height};
    }
    if (!stack_.empty()) stack_.back().child_height = std::max(stack_.back().child_height, height);
  }

  std::string_view text_;
  const YamlLimits& limits_;
  std::vector<Frame> stack_;
  std::map<YAML::anchor_t, Subtree> anchored_;
  size_t nodes_ = 0;
  int last_document_start_ = -1;
  std::optional<YamlRefusal> refusal_;
};

// Refuses what Kubernetes' reader (sigs.k8s.io/yaml) refuses in a mapping key, and a key twice.
// Keys become JSON member names there: a map, a list or null as a key is an error, and one
// emitted anyway (there is no string for it) would make another object.
absl::Status CheckKeys(const YAML::Node& node, std::string_view source) {
  if (node.IsMap()) {
    std::set<std::string> seen;
    for (const auto& entry : node) {
      const YAML::Mark mark = entry.first.Mark();
      if (!entry.first.IsScalar()) {
        return absl::InvalidArgumentError(
            StrCat(source, ":", mark.line + 1, ":", mark.column + 1,
                   ": a mapping key must be a string, not ", DescribeYamlNode(entry.first),
                   "; Kubernetes reads the file as JSON, whose keys are strings"));
      }
      const std::string& key = entry.first.Scalar();
      if (!seen.insert(key).second) {
        return absl::InvalidArgumentError(StrCat(source, ":", mark.line + 1, ":", mark.column + 1,
                                                 ": duplicate key '", key,
                                                 "'; Kubernetes rejects it, keep one"));
      }
      absl::Status status = CheckKeys(entry.second, source);
      if (!status.ok()) return status;
    }
  } else if (node.IsSequence()) {
    for (const auto& item : node) {
      absl::Status status = CheckKeys(item, source);
      if (!status.ok()) return status;
    }
  }
  return absl::OkStatus();
}

// yaml-cpp decodes the double-quoted escapes \N (NEL, U+0085) and \_ (no-break space, U+00A0) to
// the single bytes 0x85 and 0xA0 rather than to UTF-8, which leaves a scalar that is not UTF-8 and
// that EmitYaml would write as such. Every other escape it decodes to UTF-8, and the text was
// checked to be UTF-8 before parsing, so a lone 0x85 or 0xA0 in a scalar can only be one of
// these two: each is replaced by its UTF-8 form, as go-yaml reads it.
absl::Status RepairLatin1Escapes(YAML::Node node, std::string_view source) {
  if (node.IsScalar()) {
    const std::string& value = node.Scalar();
    if (FirstInvalidUtf8(value) == std::string_view::npos) return absl::OkStatus();
    std::string repaired;
    for (size_t i = 0; i < value.size();) {
      const Utf8Char c = DecodeUtf8(value, i);
      if (c.length != 0) {
        repaired.append(value, i, c.length);
        i += c.length;
        continue;
      }
      const auto byte = static_cast<unsigned char>(value[i]);
      if (byte != 0x85 && byte != 0xa0) {
        const YAML::Mark mark = node.Mark();
        return absl::InvalidArgumentError(
            StrCat(source, ":", mark.line + 1, ":", mark.column + 1,
                   ": this string decodes to bytes that are not UTF-8; write the characters "
                   "themselves"));
      }
      repaired += '\xc2';
      repaired += static_cast<char>(byte);
      ++i;
    }
    node = repaired;  // keeps the node's tag, so a quoted string stays a string
  } else if (node.IsMap()) {
    for (const auto& entry : node) {
      for (const YAML::Node& part : {entry.first, entry.second}) {
        absl::Status status = RepairLatin1Escapes(part, source);
        if (!status.ok()) return status;
      }
    }
  } else if (node.IsSequence()) {
    for (const auto& item : node) {
      absl::Status status = RepairLatin1Escapes(item, source);
      if (!status.ok()) return status;
    }
  }
  return absl::OkStatus();
}

std::string DoubleQuote(std::string_view text) {
  std::string out = "\"";
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (static_cast<unsigned char>(c) >= 0x80) {
      // A character past ASCII: as it is, or as a \u escape when a reader would not keep it.
      // (Bytes that are not UTF-8 stay as they are: no escape stands for a byte.)
      const Utf8Char decoded = DecodeUtf8(text, i);
      if (decoded.length != 0 && MustEscape(decoded.code)) {
        char buf[8];
        std::snprintf(buf, sizeof(buf), "\\u%04x", static_cast<unsigned>(decoded.code));
        out += buf;
        i += decoded.length - 1;
        continue;
      }
    }
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

// YAML readers look for the ':' after an implicit key within 1024 characters of its start
// (libyaml and go-yaml count characters, yaml-cpp bytes, quotes included) and refuse a longer key;
// a key longer than this, as written, is written as an explicit key ("? key").
constexpr size_t kMaxImplicitKeyBytes = 1024;

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
    // A plain scalar read as a string that cannot be written plain where it now stands (a "-"
    // from a flow list would start a nested list in a block one) is written as its quoted twin.
    if (!IsStringScalar(node) && NeedsQuotes(text) &&
        ResolvePlainScalar(text) == JsonScalarType::kString) {
      return DoubleQuote(text);
    }
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
  // control character a block would lose (a literal block reads "\r\n" back as "\n"). A plain
  // scalar folded over an empty line is such a string too, so that it is written as its quoted
  // twin would be and a second emit is the same.
  static bool IsMultiLine(const YAML::Node& node) {
    if (!node.IsScalar()) return false;
    if (!IsStringScalar(node) && ResolvePlainScalar(node.Scalar()) != JsonScalarType::kString) {
      return false;
    }
    const std::string& text = node.Scalar();
    if (text.find('\n') == std::string::npos) return false;
    if (text.find_first_not_of('\n') == std::string::npos) return false;
    for (char c : text) {
      if ((static_cast<unsigned char>(c) < 0x20 && c != '\n' && c != '\t') || c == 0x7f)
        return false;
    }
    return !HasNonAsciiToEscape(text);
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
      const std::string key = Key(entry.first);
      if (key.size() > kMaxImplicitKeyBytes) {
        // An explicit key: "? key", then ": value" on the next line.
        out_ << "? " << key << "\n";
        Indent(indent);
      } else {
        out_ << key;
      }
      out_ << ":";
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
    // Only a tree built in code can have one: LoadYaml refuses a key that is not a scalar.
    if (!key.IsScalar()) return DoubleQuote("?");
    return ScalarText(key);
  }

  std::ostringstream out_;
};

bool ScalarsEqual(const YAML::Node& a, const YAML::Node& b) {
  if (a.IsNull() || b.IsNull()) return a.IsNull() && b.IsNull();
  if (IsStringScalar(a) != IsStringScalar(b)) {
    // A quoted "x" and a plain x mean the same when plain x is itself a string: when the reader
    // resolves its text as one. (Not whether it could be written plain again: a plain scalar
    // folded over an empty line holds a line break, and is still a string.)
    const YAML::Node& plain = IsStringScalar(a) ? b : a;
    if (ResolvePlainScalar(plain.Scalar()) != JsonScalarType::kString) return false;
  }
  return a.Scalar() == b.Scalar();
}

}  // namespace

std::optional<YamlRefusal> CheckYamlLimits(std::string_view text, const YamlLimits& limits) {
  std::istringstream in{std::string(text)};
  LimitChecker checker(text, limits);
  try {
    YAML::Parser parser(in);
    while (parser.HandleNextDocument(checker)) {
    }
  } catch (const LimitReached&) {
    return checker.refusal();
  } catch (const YAML::Exception&) {
    // A syntax error before any refusal: the loader stops at the same place and reports it.
  }
  return std::nullopt;
}

namespace {

// Refuses a text that is not UTF-8 or holds a character YAML does not allow, as Kubernetes'
// reader does. yaml-cpp reads such bytes without complaint, and not always as go-yaml would:
// it skips a NUL, so "\0 key" became a plain scalar " key" that no reader reads back.
absl::Status CheckYamlCharacters(std::string_view text, std::string_view source) {
  size_t line = 1;
  size_t line_start = 0;
  for (size_t i = 0; i < text.size();) {
    const Utf8Char c = DecodeUtf8(text, i);
    auto where = [&] { return StrCat(source, ":", line, ":", i - line_start + 1, ": "); };
    if (c.length == 0) {
      return absl::InvalidArgumentError(
          StrCat(where(), "byte ", i, " is not UTF-8; save the file as UTF-8"));
    }
    if (!IsYamlPrintable(c.code)) {
      char code[16];
      std::snprintf(code, sizeof(code), "U+%04X", static_cast<unsigned>(c.code));
      return absl::InvalidArgumentError(
          StrCat(where(), "the control character ", code,
                 " is not allowed in YAML (Kubernetes refuses the whole file); remove it, or "
                 "write it as an escape in a double-quoted string"));
    }
    // A carriage return is a line break to go-yaml on its own, but yaml-cpp does not always take
    // it for one: "Po\r\r*a" read as a scalar and a key "*a" that no reader reads back. Only the
    // "\r\n" of a file saved on Windows is accepted; a lone one (old Mac line ends) is refused.
    if (c.code == '\r' && (i + 1 >= text.size() || text[i + 1] != '\n')) {
      return absl::InvalidArgumentError(
          StrCat(where(), "a carriage return not followed by a line feed; save the file with "
                          "\\n (or \\r\\n) line ends"));
    }
    if (c.code == '\n') {
      ++line;
      line_start = i + 1;
    }
    i += c.length;
  }
  return absl::OkStatus();
}

// The non-empty documents of `text`, within `limits`; duplicate keys not checked yet.
absl::StatusOr<std::vector<YAML::Node>> ParseDocuments(std::string_view text,
                                                       std::string_view source,
                                                       const YamlLimits& limits) {
  absl::Status characters = CheckYamlCharacters(text, source);
  if (!characters.ok()) return characters;
  // The event pass first: yaml-cpp would otherwise build (and recurse through) whatever it is
  // given.
  if (std::optional<YamlRefusal> refusal = CheckYamlLimits(text, limits)) {
    return absl::InvalidArgumentError(
        StrCat(source, ":", refusal->line, ":", refusal->column, ": ", refusal->message));
  }
  std::vector<YAML::Node> documents;
  try {
    for (YAML::Node& document : YAML::LoadAll(std::string(text))) {
      if (document.IsDefined() && !document.IsNull()) documents.push_back(std::move(document));
    }
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(
        StrCat(source, ":", e.mark.line + 1, ":", e.mark.column + 1, ": ", e.msg));
  }
  // Only a text with one of the two escapes needs the walk.
  if (text.find("\\N") != std::string_view::npos ||
      text.find("\\_") != std::string_view::npos) {
    for (const YAML::Node& document : documents) {
      absl::Status repaired = RepairLatin1Escapes(document, source);
      if (!repaired.ok()) return repaired;
    }
  }
  return documents;
}

}  // namespace

absl::StatusOr<std::vector<YAML::Node>> LoadYamlDocuments(std::string_view text,
                                                          std::string_view source,
                                                          const YamlLimits& limits) {
  absl::StatusOr<std::vector<YAML::Node>> documents = ParseDocuments(text, source, limits);
  if (!documents.ok()) return documents.status();
  for (const YAML::Node& document : *documents) {
    absl::Status duplicates = CheckKeys(document, source);
    if (!duplicates.ok()) return duplicates;
  }
  return documents;
}

absl::StatusOr<YAML::Node> LoadYaml(std::string_view text, std::string_view source,
                                    const YamlLimits& limits) {
  // YAML::Load stops after the first document and so would drop the rest of the file silently
  // (also text it cannot continue with, such as "b: c" after a top-level "- a"). Empty
  // documents, as after a trailing "---", hold nothing to lose.
  absl::StatusOr<std::vector<YAML::Node>> documents = ParseDocuments(text, source, limits);
  if (!documents.ok()) return documents.status();
  if (documents->empty()) {
    return absl::InvalidArgumentError(StrCat(source, ": the file holds no YAML document"));
  }
  if (documents->size() > 1) {
    const YAML::Mark mark = (*documents)[1].Mark();
    return absl::InvalidArgumentError(
        StrCat(source, ":", mark.line + 1, ":", mark.column + 1,
               ": a second YAML document starts here; the file must hold exactly one"));
  }
  absl::Status duplicates = CheckKeys(documents->front(), source);
  if (!duplicates.ok()) return duplicates;
  return documents->front();
}

std::string EmitYaml(const YAML::Node& node) {
  Writer writer;
  writer.Document(node);
  return writer.Take();
}

size_t FirstInvalidUtf8(std::string_view text) {
  for (size_t i = 0; i < text.size();) {
    const Utf8Char c = DecodeUtf8(text, i);
    if (c.length == 0) return i;
    i += c.length;
  }
  return std::string_view::npos;
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
  return HasNonAsciiToEscape(text);
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

JsonScalarType ResolvePlainScalar(std::string_view text) {
  if (text.empty()) return JsonScalarType::kNull;
  for (std::string_view word : {"~", "null", "Null", "NULL"}) {
    if (text == word) return JsonScalarType::kNull;
  }
  for (std::string_view word : kYaml11Bools) {
    if (text == word) return JsonScalarType::kBool;
  }
  for (std::string_view word : {".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF", "-.inf", "-.Inf",
                                "-.INF", ".nan", ".NaN", ".NAN"}) {
    if (text == word) return JsonScalarType::kNumber;
  }
  // go-yaml tries numbers only for text starting with a sign, a digit or '.'; it drops every '_'
  // for integers and YAML-style floats (a '.' start goes to strconv.ParseFloat as it is).
  const char first = text.front();
  if (first == '.') {
    static const std::regex kDotFloat("\\.[0-9]+([eE][-+]?[0-9]+)?");
    return std::regex_match(text.begin(), text.end(), kDotFloat) ? JsonScalarType::kNumber
                                                                  : JsonScalarType::kString;
  }
  if (first != '+' && first != '-' && !std::isdigit(static_cast<unsigned char>(first))) {
    return JsonScalarType::kString;
  }
  std::string plain(text);
  plain.erase(std::remove(plain.begin(), plain.end(), '_'), plain.end());
  if (!MayBeNumber(plain)) return JsonScalarType::kString;
  // strconv.ParseInt/ParseUint with base 0: an optional sign, then 0x/0o/0b and digits of that
  // base, a leading 0 and octal digits, or decimal digits. Decimal digits that fail as an
  // integer ("09", or past 64 bits) still make a YAML-style float.
  static const std::regex kInteger("[-+]?(0[xX][0-9a-fA-F]+|0[oO][0-7]+|0[bB][01]+|[0-9]+)");
  if (std::regex_match(plain, kInteger)) return JsonScalarType::kNumber;
  static const std::regex kYamlFloat("[-+]?(\\.[0-9]+|[0-9]+(\\.[0-9]*)?)([eE][-+]?[0-9]+)?");
  if (std::regex_match(plain, kYamlFloat)) {
    // strconv.ParseFloat fails on a value too large for a float64; go-yaml keeps that a string.
    return std::isinf(std::strtod(plain.c_str(), nullptr)) ? JsonScalarType::kString
                                                           : JsonScalarType::kNumber;
  }
  return JsonScalarType::kString;
}

JsonScalarType JsonTypeOf(const YAML::Node& node) {
  if (!node.IsDefined() || node.IsNull()) return JsonScalarType::kNull;
  if (!node.IsScalar()) return JsonScalarType::kString;
  const std::string& tag = node.Tag();
  if (tag == "?") return ResolvePlainScalar(node.Scalar());
  if (tag == "tag:yaml.org,2002:int" || tag == "tag:yaml.org,2002:float") {
    return JsonScalarType::kNumber;
  }
  if (tag == "tag:yaml.org,2002:bool") return JsonScalarType::kBool;
  if (tag == "tag:yaml.org,2002:null") return JsonScalarType::kNull;
  return JsonScalarType::kString;
}

bool IsYamlTrue(const YAML::Node& node) {
  if (JsonTypeOf(node) != JsonScalarType::kBool) return false;
  const std::string& text = node.Scalar();
  for (std::string_view word : {"y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE", "on", "On",
                                "ON"}) {
    if (text == word) return true;
  }
  return false;
}

std::string_view DescribeYamlNode(const YAML::Node& node) {
  if (!node.IsDefined() || node.IsNull()) return "null";
  if (node.IsSequence()) return "a list";
  if (node.IsMap()) return "a map";
  switch (JsonTypeOf(node)) {
    case JsonScalarType::kNull:
      return "null";
    case JsonScalarType::kBool:
      return "a boolean";
    case JsonScalarType::kNumber:
      return "a number";
    case JsonScalarType::kString:
      break;
  }
  return "a string";
}

}  // namespace handoff
