#include "common/base/yaml_util.h"

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/common/base/yaml_bomb.h"

namespace handoff {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;
using testing::AliasBombEntries;

std::string ReadTestData(const std::string& relative) {
  std::ifstream in(std::string(HANDOFF_TESTDATA_DIR) + "/" + relative, std::ios::binary);
  EXPECT_TRUE(in) << "cannot open testdata " << relative;
  std::ostringstream content;
  content << in.rdbuf();
  return content.str();
}

const std::vector<std::string>& KubeadmManifests() {
  static const std::vector<std::string> kFiles = {
      "nodes/kubeadm/etc/kubernetes/manifests/kube-apiserver.yaml",
      "nodes/kubeadm/etc/kubernetes/manifests/kube-controller-manager.yaml",
      "nodes/kubeadm/etc/kubernetes/manifests/kube-scheduler.yaml",
  };
  return kFiles;
}

const std::vector<std::string>& AllFixtures() {
  static const std::vector<std::string> kFiles = [] {
    std::vector<std::string> files = KubeadmManifests();
    files.push_back("manifests/kube-controller-manager-args.yaml");
    files.push_back("manifests/kube-controller-manager-split.yaml");
    files.push_back("manifests/quoted-scalars.yaml");
    return files;
  }();
  return kFiles;
}

YAML::Node Load(const std::string& text) {
  absl::StatusOr<YAML::Node> node = LoadYaml(text, "test.yaml");
  EXPECT_TRUE(node.ok()) << node.status();
  return node.ok() ? *node : YAML::Node();
}

// A one-key map holding `value` as a string built in code.
std::string EmitString(const std::string& value) {
  YAML::Node node;
  node["k"] = value;
  return EmitYaml(node);
}

// --- LoadYaml ---------------------------------------------------------------------------------

TEST(LoadYamlTest, SyntaxErrorNamesSourceLineAndColumnOneBased) {
  absl::Status status = LoadYaml("a: b\n  c: d\n", "kcm.yaml").status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  // Line 2, column 4 is the ':' after "c", which cannot start a map inside a scalar.
  EXPECT_EQ(status.message(), "kcm.yaml:2:4: illegal map value");
}

TEST(LoadYamlTest, SyntaxErrorOnTheFirstLine) {
  absl::Status status = LoadYaml("a: b: c\n", "f.yaml").status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message(), "f.yaml:1:5: illegal map value");
}

TEST(LoadYamlTest, UnclosedFlowIsReportedWhereTheInputEnds) {
  EXPECT_EQ(LoadYaml("[a, b\n", "f.yaml").status().message(),
            "f.yaml:2:1: end of sequence flow not found");
}

TEST(LoadYamlTest, TabIndentation) {
  EXPECT_EQ(LoadYaml("a: 1\n\tb: 2\n", "f.yaml").status().message(),
            "f.yaml:2:1: illegal tab when looking for indentation");
}

TEST(LoadYamlTest, UnknownAliasPointsAtIt) {
  absl::Status status = LoadYaml("a: 1\nb: *missing\n", "f.yaml").status();
  EXPECT_EQ(status.message(), "f.yaml:2:4: the referenced anchor is not defined");
}

TEST(LoadYamlTest, EmptyDocumentIsAnError) {
  for (const char* text : {"", "\n", "# just a comment\n", "---\n", "~\n"}) {
    absl::Status status = LoadYaml(text, "empty.yaml").status();
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << text;
    EXPECT_EQ(status.message(), "empty.yaml: the file holds no YAML document") << text;
  }
}

TEST(LoadYamlTest, DuplicateKeyIsRejectedWithItsName) {
  absl::Status status = LoadYaml("a: 1\nb:\n  x: 1\n  x: 2\n", "dup.yaml").status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message(), "dup.yaml:4:3: duplicate key 'x'; Kubernetes rejects it, keep one");
}

TEST(LoadYamlTest, DuplicateKeysAnywhereAreRejected) {
  EXPECT_EQ(LoadYaml("name: a\nname: b\n", "f").status().message(),
            "f:2:1: duplicate key 'name'; Kubernetes rejects it, keep one");
  // A quoted and a plain spelling are the same key.
  EXPECT_EQ(LoadYaml("name: a\n\"name\": b\n", "f").status().message(),
            "f:2:1: duplicate key 'name'; Kubernetes rejects it, keep one");
  EXPECT_EQ(LoadYaml("items:\n- {x: 1}\n- y: 1\n  y: 2\n", "f").status().message(),
            "f:4:3: duplicate key 'y'; Kubernetes rejects it, keep one");
  EXPECT_EQ(LoadYaml("a: {b: 1, b: 2}\n", "f").status().message(),
            "f:1:11: duplicate key 'b'; Kubernetes rejects it, keep one");
}

TEST(LoadYamlTest, KeysThatAreNotScalarsAreRefusedAtTheKey) {
  const std::string reason = "; Kubernetes reads the file as JSON, whose keys are strings";
  EXPECT_EQ(LoadYaml("a: 1\n? {b: 1}\n: x\n", "f").status().message(),
            "f:2:3: a mapping key must be a string, not a map" + reason);
  // "labels" is a key without a value; the map after it is the next key.
  EXPECT_EQ(LoadYaml("metadata: {labels, {c: d}}\n", "f").status().message(),
            "f:1:20: a mapping key must be a string, not a map" + reason);
  EXPECT_EQ(LoadYaml("? [a, b]\n: x\n", "f").status().message(),
            "f:1:3: a mapping key must be a string, not a list" + reason);
  for (const char* text : {":\n", "~: x\n", "a:\n  null: x\n", "- {: x}\n"}) {
    EXPECT_THAT(std::string(LoadYaml(text, "f").status().message()),
                HasSubstr("a mapping key must be a string, not null"))
        << text;
  }
  EXPECT_THAT(std::string(LoadYamlDocuments("a: 1\n---\n~: 1\n", "f").status().message()),
              HasSubstr("f:3:1: a mapping key must be a string, not null"));
  // Quoted, these are strings; plain numbers and booleans are keys Kubernetes turns into text.
  EXPECT_TRUE(LoadYaml("\"null\": x\n\"~\": y\n\"\": z\n1: a\ntrue: b\n", "f").ok());
}

TEST(LoadYamlTest, TextKubernetesCannotReadIsRefusedWhereItBreaks) {
  // yaml-cpp skipped the NUL and read a key " c" that no reader reads back when emitted.
  EXPECT_EQ(LoadYaml(std::string("a: b\n\0 c: d\n", 12), "f").status().message(),
            "f:2:1: the control character U+0000 is not allowed in YAML (Kubernetes refuses the "
            "whole file); remove it, or write it as an escape in a double-quoted string");
  EXPECT_THAT(std::string(LoadYaml("a: \"x\x1by\"\n", "f").status().message()),
              HasSubstr("f:1:6: the control character U+001B"));
  EXPECT_THAT(std::string(LoadYaml("a: b\x7f\n", "f").status().message()),
              HasSubstr("f:1:5: the control character U+007F"));
  EXPECT_THAT(std::string(LoadYaml("# \xc2\x90\na: b\n", "f").status().message()),
              HasSubstr("f:1:3: the control character U+0090"));
  EXPECT_THAT(std::string(LoadYaml("a: \xef\xbf\xbe\n", "f").status().message()),
              HasSubstr("f:1:4: the control character U+FFFE"));
  EXPECT_EQ(LoadYaml("a: 1\nb: caf\xe9\n", "f").status().message(),
            "f:2:7: byte 11 is not UTF-8; save the file as UTF-8");
  EXPECT_THAT(std::string(LoadYamlDocuments("a: \xed\xa0\x80\n", "f").status().message()),
              HasSubstr("f:1:4: byte 3 is not UTF-8"));
  // Tabs, CR LF line ends, NEL and any other character are text.
  const YAML::Node node = Load("a: \"x\ty\"\r\nb: caf\xc3\xa9 \xc2\x85 \xf0\x9f\x98\x80\n");
  EXPECT_EQ(node["a"].Scalar(), "x\ty");
  EXPECT_EQ(node["b"].Scalar(), "caf\xc3\xa9 \xc2\x85 \xf0\x9f\x98\x80");
}

TEST(LoadYamlTest, EscapesForNelAndNoBreakSpaceDecodeToUtf8) {
  // yaml-cpp decodes \N and \_ to the single bytes 0x85 and 0xA0; go-yaml to U+0085 and U+00A0.
  const YAML::Node node = Load(
      "a: \"x\\Ny\\_z\"\n"
      "\"k\\N\": [\"\\_\", {\"in \\N\": \"caf\\u00e9\\N\"}]\n"
      "c: \"\\L\\P\\x85\\u0085\"\n");
  EXPECT_EQ(node["a"].Scalar(), "x\xc2\x85y\xc2\xa0z");
  EXPECT_EQ(node["a"].Tag(), "!");  // still a quoted string
  EXPECT_EQ(node["k\xc2\x85"][0].Scalar(), "\xc2\xa0");
  EXPECT_EQ(node["k\xc2\x85"][1]["in \xc2\x85"].Scalar(), "caf\xc3\xa9\xc2\x85");
  EXPECT_EQ(node["c"].Scalar(), "\xe2\x80\xa8\xe2\x80\xa9\xc2\x85\xc2\x85");
  // The fuzz finding: the emitted text is UTF-8 again and reads back the same.
  const std::string emitted = EmitYaml(node);
  EXPECT_EQ(FirstInvalidUtf8(emitted), std::string_view::npos) << emitted;
  EXPECT_TRUE(SemanticallyEqual(Load(emitted), node)) << emitted;
  // Plain and single-quoted scalars have no escapes: the two characters stay as written.
  EXPECT_EQ(Load("a: x\\Ny\nb: 'x\\_y'\n")["a"].Scalar(), "x\\Ny");
  EXPECT_EQ(Load("a: x\\Ny\nb: 'x\\_y'\n")["b"].Scalar(), "x\\_y");
  // A surrogate escape is refused, as go-yaml refuses it.
  EXPECT_FALSE(LoadYaml("a: \"\\ud800\"\n", "f").ok());
}

TEST(FirstInvalidUtf8Test, FindsTheFirstByteThatIsNot) {
  EXPECT_EQ(FirstInvalidUtf8(""), std::string_view::npos);
  EXPECT_EQ(FirstInvalidUtf8("ascii \xc3\xa9 \xf4\x8f\xbf\xbf"), std::string_view::npos);
  EXPECT_EQ(FirstInvalidUtf8("ab\x80"), 2u);          // a lone continuation byte
  EXPECT_EQ(FirstInvalidUtf8("a\xc0\xaf"), 1u);      // overlong '/'
  EXPECT_EQ(FirstInvalidUtf8("a\xe0\x80\xaf"), 1u);  // overlong, three bytes
  EXPECT_EQ(FirstInvalidUtf8("\xed\xbf\xbf"), 0u);   // a surrogate
  EXPECT_EQ(FirstInvalidUtf8("\xf4\x90\x80\x80"), 0u);  // past U+10FFFF
  EXPECT_EQ(FirstInvalidUtf8("xy\xe2\x82"), 2u);    // cut short
  EXPECT_EQ(FirstInvalidUtf8("\xc3("), 0u);          // not a continuation
}

TEST(LoadYamlTest, SameKeyInDifferentMapsIsFine) {
  EXPECT_TRUE(LoadYaml("a:\n  name: x\nb:\n  name: y\nname: z\n", "f").ok());
}

TEST(LoadYamlTest, SecondDocumentIsRejectedNotDropped) {
  absl::Status status = LoadYaml("---\na: 1\n---\nb: 2\n", "two.yaml").status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message(),
            "two.yaml:4:1: a second YAML document starts here; the file must hold exactly one");
}

TEST(LoadYamlTest, TextAfterTopLevelSequenceIsRejectedNotDropped) {
  // yaml-cpp's YAML::Load returns ["a"] here and forgets "b: c".
  absl::Status status = LoadYaml("- a\nb: c\n", "f.yaml").status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(status.message()), StartsWith("f.yaml:2:1: "));
}

TEST(LoadYamlTest, TrailingEmptyDocumentIsAccepted) {
  absl::StatusOr<YAML::Node> node = LoadYaml("---\na: 1\n---\n", "f");
  ASSERT_TRUE(node.ok()) << node.status();
  EXPECT_EQ((*node)["a"].Scalar(), "1");
}

// --- Limits: anchors, aliases, depth, size ----------------------------------------------------

constexpr char kAliasRefusal[] = "YAML anchors and aliases are not accepted (";

TEST(LoadYamlLimitsTest, AnchorIsRefusedWhereItIsDefined) {
  absl::Status status = LoadYaml("a: 1\nb: &base {x: 1}\nc: *base\n", "f.yaml").status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(status.message()),
              StartsWith(std::string("f.yaml:2:4: ") + kAliasRefusal + "&base defines an anchor)"));
  EXPECT_THAT(std::string(status.message()), HasSubstr("write the value out in full"));
}

TEST(LoadYamlLimitsTest, AnchorWithoutAliasIsRefusedToo) {
  EXPECT_THAT(std::string(LoadYaml("a: &x 1\n", "f").status().message()),
              StartsWith(std::string("f:1:4: ") + kAliasRefusal));
}

TEST(LoadYamlLimitsTest, AliasBombIsRefusedBeforeExpansion) {
  for (int levels : {1, 6, 9, 30}) {
    const std::string text = "metadata:\n  annotations:\n" + AliasBombEntries(levels, 4);
    absl::Status status = LoadYaml(text, "bomb.yaml").status();
    EXPECT_THAT(std::string(status.message()),
                StartsWith(std::string("bomb.yaml:3:9: ") + kAliasRefusal + "&l0"))
        << levels;
  }
}

TEST(LoadYamlLimitsTest, AnchorsInOtherDocumentsAreRefused) {
  absl::StatusOr<std::vector<YAML::Node>> documents =
      LoadYamlDocuments("a: 1\n---\nb: &x 2\n", "multi.yaml");
  EXPECT_THAT(std::string(documents.status().message()),
              StartsWith(std::string("multi.yaml:3:4: ") + kAliasRefusal));
}

TEST(LoadYamlLimitsTest, QuotedAmpersandsAndStarsAreOnlyText) {
  absl::StatusOr<YAML::Node> node = LoadYaml("a: \"&x\"\nb: '*y'\nc: x&y*z\n", "f");
  ASSERT_TRUE(node.ok()) << node.status();
  EXPECT_EQ((*node)["a"].Scalar(), "&x");
  EXPECT_EQ((*node)["b"].Scalar(), "*y");
  EXPECT_EQ((*node)["c"].Scalar(), "x&y*z");
}

TEST(LoadYamlLimitsTest, AllowedAliasesExpandWithinTheNodeLimit) {
  YamlLimits limits;
  limits.allow_aliases = true;
  absl::StatusOr<YAML::Node> node =
      LoadYaml("base: &b {x: 1, y: [2, 3]}\ncopy: *b\n", "kubeconfig", limits);
  ASSERT_TRUE(node.ok()) << node.status();
  EXPECT_EQ((*node)["copy"]["y"][1].Scalar(), "3");
}

TEST(LoadYamlLimitsTest, AllowedAliasesAreCountedAtTheirExpandedSize) {
  YamlLimits limits;
  limits.allow_aliases = true;
  // 10^5 scalars (plus the lists) are past the default 100,000 nodes; 10^4 are not.
  EXPECT_TRUE(LoadYaml(AliasBombEntries(4, 0), "f", limits).ok());
  absl::Status status = LoadYaml(AliasBombEntries(9, 0), "f", limits).status();
  EXPECT_THAT(std::string(status.message()),
              HasSubstr(": aliases expand the document past 100000 nodes"));
  // The refusal comes at the alias that crosses the limit: l4 stands for 111,111 nodes.
  EXPECT_THAT(std::string(status.message()), StartsWith("f:5:"));
}

TEST(LoadYamlLimitsTest, AllowedAliasesCountTowardsTheDepth) {
  YamlLimits limits;
  limits.allow_aliases = true;
  limits.max_depth = 3;
  EXPECT_TRUE(LoadYaml("a: &a [[x]]\nb: *a\n", "f", limits).ok());
  EXPECT_EQ(LoadYaml("a: &a [[x]]\nb: [*a]\n", "f", limits).status().message(),
            "f:2:5: the alias *a nests the document deeper than 3 levels");
}

TEST(LoadYamlLimitsTest, AliasInsideItsOwnAnchorIsACycle) {
  YamlLimits limits;
  limits.allow_aliases = true;
  EXPECT_EQ(LoadYaml("a: &a [1, *a]\n", "f", limits).status().message(),
            "f:1:11: the alias *a refers to a node that contains it; the document would be "
            "infinite");
}

TEST(LoadYamlLimitsTest, MergeKeysAreRefused) {
  absl::Status status = LoadYaml("a:\n  <<: {b: 1}\n  c: 2\n", "f").status();
  EXPECT_THAT(std::string(status.message()),
              StartsWith("f:2:3: YAML merge keys (<<) are not accepted"));
  // As a value, or quoted, "<<" is only text.
  EXPECT_TRUE(LoadYaml("a: <<\n\"<<\": 1\n", "f").ok());
}

TEST(LoadYamlLimitsTest, DepthIsBounded) {
  const std::string deepest_allowed = std::string(100, '[') + std::string(100, ']') + "\n";
  EXPECT_TRUE(LoadYaml(deepest_allowed, "f").ok());
  const std::string too_deep = std::string(101, '[') + std::string(101, ']') + "\n";
  EXPECT_EQ(LoadYaml(too_deep, "f").status().message(),
            "f:1:101: the document nests deeper than 100 levels, far deeper than any file "
            "handoff reads");
  // Block maps nest too; and an unclosed flow 100,000 levels deep stops at the limit, long
  // before yaml-cpp's recursion could exhaust the stack.
  std::string block;
  for (int i = 0; i < 101; ++i) block += std::string(static_cast<size_t>(i), ' ') + "k:\n";
  EXPECT_THAT(std::string(LoadYaml(block, "f").status().message()),
              HasSubstr("nests deeper than 100 levels"));
  const std::string unclosed(LoadYaml(std::string(100000, '['), "f").status().message());
  EXPECT_THAT(unclosed, StartsWith("f:1:"));
  EXPECT_THAT(unclosed, HasSubstr("the document nests deeper than 100 levels"));
}

TEST(LoadYamlLimitsTest, NodeCountIsBounded) {
  YamlLimits limits;
  limits.max_nodes = 10;
  // A map with four entries is 9 nodes; the fifth key makes 10, its value 11.
  EXPECT_TRUE(LoadYaml("a: 1\nb: 2\nc: 3\nd: 4\n", "f", limits).ok());
  EXPECT_EQ(LoadYaml("a: 1\nb: 2\nc: 3\nd: 4\ne: 5\n", "f", limits).status().message(),
            "f:5:4: the document has more than 10 nodes, far more than any file handoff reads");
}

TEST(LoadYamlLimitsTest, AStrayFlowIndicatorIsAnErrorNotAnEndlessStreamOfDocuments) {
  // yaml-cpp reports an empty document at a stray ',' forever; it was refused only once
  // 100000 of them were counted, as a document "with more than 100000 nodes".
  EXPECT_EQ(LoadYaml(",\n\n", "f").status().message(),
            "f:1:1: the YAML parser cannot go past ',': a ',', ']' or '}' outside [ ] or { } "
            "must be quoted");
  EXPECT_THAT(std::string(LoadYaml("- a\n,\n", "f").status().message()),
              HasSubstr("f:2:1: the YAML parser cannot go past ','"));
  EXPECT_THAT(std::string(LoadYamlDocuments("a: 1\n---\n,", "f").status().message()),
              HasSubstr("f:3:1: the YAML parser cannot go past ','"));
  EXPECT_EQ(LoadYamlDocuments("---\n---\na: 1\n---\n", "f")->size(), 1u);
}

TEST(LoadYamlLimitsTest, SyntaxErrorsKeepTheirMessages) {
  EXPECT_FALSE(CheckYamlLimits("a: [1, 2\n", YamlLimits()).has_value());
  EXPECT_EQ(LoadYaml("a: [1, 2\n", "f").status().message(),
            "f:2:1: end of sequence flow not found");
}

TEST(LoadYamlLimitsTest, CheckReportsLineAndColumn) {
  std::optional<YamlRefusal> refusal = CheckYamlLimits("a:\n  - &x 1\n", YamlLimits());
  ASSERT_TRUE(refusal.has_value());
  EXPECT_EQ(refusal->line, 2);
  EXPECT_EQ(refusal->column, 5);
  EXPECT_THAT(refusal->message, StartsWith(kAliasRefusal));
}

TEST(LoadYamlDocumentsTest, ReturnsEveryNonEmptyDocument) {
  absl::StatusOr<std::vector<YAML::Node>> documents =
      LoadYamlDocuments("---\na: 1\n---\n---\nb: 2\n", "f");
  ASSERT_TRUE(documents.ok()) << documents.status();
  ASSERT_EQ(documents->size(), 2u);
  EXPECT_EQ((*documents)[1]["b"].Scalar(), "2");
  EXPECT_TRUE(LoadYamlDocuments("", "f")->empty());
  EXPECT_EQ(LoadYamlDocuments("a: 1\n---\nb: 1\nb: 2\n", "f").status().message(),
            "f:4:1: duplicate key 'b'; Kubernetes rejects it, keep one");
}

// --- How Kubernetes types scalars ---------------------------------------------------------------

TEST(ResolvePlainScalarTest, AsGoYamlV2Does) {
  for (const char* text : {"", "~", "null", "Null", "NULL"}) {
    EXPECT_EQ(ResolvePlainScalar(text), JsonScalarType::kNull) << text;
  }
  for (const char* text : {"true", "False", "yes", "Y", "n", "ON", "off"}) {
    EXPECT_EQ(ResolvePlainScalar(text), JsonScalarType::kBool) << text;
  }
  for (const char* text : {"0", "5", "-3", "+7", "017", "09", "0x1F", "0X1f", "-0x1F", "0o17",
                           "0b101", "1_000", "1.5", "-1.5e3", ".5", ".5e-2", "+.5", "1.", ".inf",
                           "-.Inf", ".NaN", "99999999999999999999999"}) {
    EXPECT_EQ(ResolvePlainScalar(text), JsonScalarType::kNumber) << text;
  }
  for (const char* text : {"v2", "--v=2", "10.96.0.0/12", "127.0.0.1", "250m", "2024-01-02",
                           "2024-01-02T10:00:00Z", "12:30", "1e400", ".", "-", "0x", "0b2",
                           "1.2.3", "+inf", "nan", "yess", "<<", "t", "*"}) {
    EXPECT_EQ(ResolvePlainScalar(text), JsonScalarType::kString) << text;
  }
}

TEST(JsonTypeOfTest, QuotesAndTagsDecide) {
  const YAML::Node node =
      Load("a: \"5\"\nb: '5'\nc: !!str 5\nd: !!int \"5\"\ne: 5\nf: |\n  5\ng: !!bool yes\n"
           "h: ~\n");
  EXPECT_EQ(JsonTypeOf(node["a"]), JsonScalarType::kString);
  EXPECT_EQ(JsonTypeOf(node["b"]), JsonScalarType::kString);
  EXPECT_EQ(JsonTypeOf(node["c"]), JsonScalarType::kString);
  EXPECT_EQ(JsonTypeOf(node["d"]), JsonScalarType::kNumber);
  EXPECT_EQ(JsonTypeOf(node["e"]), JsonScalarType::kNumber);
  EXPECT_EQ(JsonTypeOf(node["f"]), JsonScalarType::kString);
  EXPECT_EQ(JsonTypeOf(node["g"]), JsonScalarType::kBool);
  EXPECT_EQ(JsonTypeOf(node["h"]), JsonScalarType::kNull);
  EXPECT_EQ(JsonTypeOf(YAML::Node(std::string("5"))), JsonScalarType::kString);
}

TEST(JsonTypeOfTest, DescribeAndTruth) {
  const YAML::Node node = Load("a: x\nb: 5\nc: yes\nd: ~\ne: [1]\nf: {g: 1}\nh: \"true\"\n");
  EXPECT_EQ(DescribeYamlNode(node["a"]), "a string");
  EXPECT_EQ(DescribeYamlNode(node["b"]), "a number");
  EXPECT_EQ(DescribeYamlNode(node["c"]), "a boolean");
  EXPECT_EQ(DescribeYamlNode(node["d"]), "null");
  EXPECT_EQ(DescribeYamlNode(node["e"]), "a list");
  EXPECT_EQ(DescribeYamlNode(node["f"]), "a map");
  EXPECT_TRUE(IsYamlTrue(node["c"]));
  EXPECT_FALSE(IsYamlTrue(node["h"]));  // the string "true" is not the boolean
  EXPECT_FALSE(IsYamlTrue(node["a"]));
  EXPECT_FALSE(IsYamlTrue(node["missing"]));
}

// --- EmitYaml ---------------------------------------------------------------------------------

TEST(EmitYamlTest, ReproducesKubeadmManifestsByteForByte) {
  for (const std::string& file : KubeadmManifests()) {
    const std::string text = ReadTestData(file);
    ASSERT_FALSE(text.empty()) << file;
    EXPECT_EQ(EmitYaml(Load(text)), text) << file;
  }
}

TEST(EmitYamlTest, ReproducesCanonicalFixturesByteForByte) {
  for (const std::string& file : AllFixtures()) {
    const std::string text = ReadTestData(file);
    EXPECT_EQ(EmitYaml(Load(text)), text) << file;
  }
}

TEST(EmitYamlTest, EmitThenReloadIsSemanticallyEqualForAllFixtures) {
  for (const std::string& file : AllFixtures()) {
    const YAML::Node original = Load(ReadTestData(file));
    const std::string emitted = EmitYaml(original);
    const YAML::Node reloaded = Load(emitted);
    EXPECT_TRUE(SemanticallyEqual(original, reloaded)) << file;
    EXPECT_EQ(EmitYaml(reloaded), emitted) << file;
  }
}

TEST(EmitYamlTest, SameTreeGivesSameBytes) {
  const YAML::Node node = Load(ReadTestData(KubeadmManifests()[1]));
  EXPECT_EQ(EmitYaml(node), EmitYaml(YAML::Clone(node)));
}

TEST(EmitYamlTest, QuotedStringsThatYaml11WouldMisreadStayQuoted) {
  for (const char* value : {"true",       "True",
                            "on",         "yes",
                            "Y",          "n",
                            "off",        "10",
                            "-3",         "1e3",
                            "0x1F",       "0X1F",
                            "0o17",       "017",
                            "1_000",      ".5",
                            "+.inf",      ".NaN",
                            "",           "*",
                            "&a",         "!tag",
                            "null",       "~",
                            "2024-01-02", "2024-01-02T10:00:00Z",
                            "12:30",      "- item",
                            "key: value", "#comment",
                            "trailing ",  " leading",
                            "<<"}) {
    const std::string quoted = "\"" + std::string(value) + "\"";
    // Quoted in the source...
    EXPECT_EQ(EmitYaml(Load("k: " + quoted + "\n")), "k: " + quoted + "\n") << value;
    // ... or built as a string in code.
    const std::string emitted = EmitString(value);
    EXPECT_EQ(emitted, "k: " + quoted + "\n") << value;
    const YAML::Node reloaded = Load(emitted);
    EXPECT_TRUE(IsStringScalar(reloaded["k"])) << value;
    EXPECT_EQ(reloaded["k"].Scalar(), value);
  }
}

TEST(EmitYamlTest, SingleQuotedStringsBecomeDoubleQuotedOnlyWhenNeeded) {
  EXPECT_EQ(EmitYaml(Load("a: 'on'\nb: 'plain'\n")), "a: \"on\"\nb: plain\n");
}

TEST(EmitYamlTest, StringsAYaml11ReaderKeepsAsStringsStayPlain) {
  for (const char* value :
       {"127.0.0.1", "250m", "--flag=value", "v1.27.3", "10.0.1.10:6443", "https://127.0.0.1:2379",
        "Node,RBAC", "/etc/kubernetes/pki", "kube-system", "1.2.3", "0x", "yes-word", "-flag",
        "say \"hi\"", "a#b"}) {
    EXPECT_EQ(EmitString(value), "k: " + std::string(value) + "\n") << value;
    EXPECT_EQ(EmitYaml(Load("k: '" + std::string(value) + "'\n")),
              "k: " + std::string(value) + "\n")
        << value;
  }
}

TEST(EmitYamlTest, PlainScalarsStayPlain) {
  const std::string text =
      "port: 10257\n"
      "readOnly: true\n"
      "ratio: 1.5\n"
      "creationTimestamp: null\n"
      "switch: on\n"
      "status: {}\n"
      "args: []\n";
  EXPECT_EQ(EmitYaml(Load(text)), text);
}

TEST(EmitYamlTest, EscapesInDoubleQuotes) {
  EXPECT_EQ(EmitString("\"quoted\""), "k: \"\\\"quoted\\\"\"\n");
  EXPECT_EQ(EmitString("tab\there"), "k: \"tab\\there\"\n");
  EXPECT_EQ(EmitString("back\\slash "), "k: \"back\\\\slash \"\n");
  EXPECT_EQ(EmitString(std::string("bell\x07")), "k: \"bell\\x07\"\n");
  EXPECT_EQ(EmitString(std::string("del\x7f")), "k: \"del\\x7f\"\n");
  for (const std::string& value :
       std::vector<std::string>{"\"quoted\"", "tab\there", "bell\x07", "del\x7f", "cr\rlf"}) {
    EXPECT_EQ(Load(EmitString(value))["k"].Scalar(), value);
  }
}

TEST(EmitYamlTest, CharactersAReaderWouldRefuseOrFoldAreEscaped) {
  EXPECT_EQ(EmitString("a\xc2\x80z"), "k: \"a\\u0080z\"\n");            // C1 control
  EXPECT_EQ(EmitString("a\xc2\x85z"), "k: \"a\\u0085z\"\n");            // NEL, a YAML 1.1 break
  EXPECT_EQ(EmitString("a\xe2\x80\xa8z"), "k: \"a\\u2028z\"\n");        // LS
  EXPECT_EQ(EmitString("\xef\xbb\xbfz"), "k: \"\\ufeffz\"\n");          // BOM
  EXPECT_EQ(EmitString("a\xef\xbf\xbez"), "k: \"a\\ufffez\"\n");        // not a character
  EXPECT_EQ(EmitString("line\n\xc2\x9f\n"), "k: \"line\\n\\u009f\\n\"\n");  // no block
  EXPECT_EQ(EmitString("caf\xc3\xa9 \xf0\x9f\x98\x80"), "k: caf\xc3\xa9 \xf0\x9f\x98\x80\n");
  for (const std::string& value : std::vector<std::string>{
           "a\xc2\x80z", "a\xc2\x85z", "a\xe2\x80\xa9z", "\xef\xbb\xbf", "x\xef\xbf\xbf",
           "line\n\xc2\x9f\n"}) {
    YAML::Node node;
    node[value] = value;
    const std::string emitted = EmitYaml(node);
    absl::StatusOr<YAML::Node> reloaded = LoadYaml(emitted, "emitted");
    ASSERT_TRUE(reloaded.ok()) << reloaded.status() << "\n" << emitted;
    EXPECT_EQ((*reloaded)[value].Scalar(), value) << emitted;
  }
}

TEST(EmitYamlTest, QuotedKeys) {
  YAML::Node node;
  node["a: b"] = "x";
  node["true"] = "y";
  node["plain"] = "z";
  EXPECT_EQ(EmitYaml(node), "\"a: b\": x\n\"true\": \"y\"\nplain: z\n");
}

TEST(EmitYamlTest, KeysTooLongForAnImplicitKeyAreWrittenExplicitly) {
  const std::string longest(1024, 'k');
  const std::string too_long(1025, 'k');
  const std::string quoted_too_long(1023, '#');  // 1025 bytes with its quotes
  YAML::Node node;
  node["m"][longest] = "a";
  node["m"][too_long] = "b";
  node["m"][quoted_too_long] = "c";
  node["m"]["short"] = "d";
  node["list"].push_back(YAML::Node());
  node["list"][0][too_long]["inner"] = "e";
  node["list"][0][too_long + "x"].push_back("f");
  node["list"][0]["z"] = "g\nh";
  node["list"][0][too_long + "y"] = "i\nj";
  const std::string emitted = EmitYaml(node);
  EXPECT_EQ(emitted, "m:\n"
                     "  " + longest + ": a\n"
                     "  ? " + too_long + "\n"
                     "  : b\n"
                     "  ? \"" + quoted_too_long + "\"\n"
                     "  : c\n"
                     "  short: d\n"
                     "list:\n"
                     "- ? " + too_long + "\n"
                     "  :\n"
                     "    inner: e\n"
                     "  ? " + too_long + "x\n"
                     "  :\n"
                     "  - f\n"
                     "  z: |-\n"
                     "    g\n"
                     "    h\n"
                     "  ? " + too_long + "y\n"
                     "  : |-\n"
                     "    i\n"
                     "    j\n");
  absl::StatusOr<YAML::Node> reloaded = LoadYaml(emitted, "emitted");
  ASSERT_TRUE(reloaded.ok()) << reloaded.status();
  EXPECT_TRUE(SemanticallyEqual(node, *reloaded));
  EXPECT_EQ((*reloaded)["list"][0][too_long + "x"][0].Scalar(), "f");
  EXPECT_EQ(EmitYaml(*reloaded), emitted);
}

TEST(EmitYamlTest, MultiLineStringsBecomeLiteralBlocks) {
  EXPECT_EQ(EmitString("line one\nline two\n"), "k: |\n  line one\n  line two\n");
  EXPECT_EQ(EmitString("line one\nline two"), "k: |-\n  line one\n  line two\n");
  EXPECT_EQ(EmitString("kept\n\n"), "k: |+\n  kept\n\n");
  EXPECT_EQ(EmitString("a\n\nb\n"), "k: |\n  a\n\n  b\n");
  // The first line's leading spaces would be taken for indentation without an indicator.
  EXPECT_EQ(EmitString("  indented\nnot\n"), "k: |2\n    indented\n  not\n");
}

TEST(EmitYamlTest, LiteralBlocksInSequencesAndNestedMaps) {
  YAML::Node node;
  node["list"].push_back(std::string("a\nb"));
  node["map"]["inner"] = std::string("c\nd\n");
  EXPECT_EQ(EmitYaml(node),
            "list:\n"
            "- |-\n"
            "  a\n"
            "  b\n"
            "map:\n"
            "  inner: |\n"
            "    c\n"
            "    d\n");
}

TEST(EmitYamlTest, MultiLineStringsReloadToTheSameText) {
  for (const std::string& value : std::vector<std::string>{
           "a\nb", "a\nb\n", "a\n\n", "a\n\n\n", "\nleading blank", "  lead\nx\n", "\n  lead\nx",
           "x\n  y\n", "a\n   \nb", "a\n\tb", "a\n\n\nb\n\n", "  \nx",
           "#not a comment\n- nor a list", "\n", "\n\n", "a\r\nb\r\n", "a\n\x01"}) {
    YAML::Node node;
    node["k"] = value;
    node["s"].push_back(value);
    node["n"]["m"].push_back(value);
    const std::string emitted = EmitYaml(node);
    absl::StatusOr<YAML::Node> reloaded = LoadYaml(emitted, "emitted");
    ASSERT_TRUE(reloaded.ok()) << reloaded.status() << "\n" << emitted;
    EXPECT_EQ((*reloaded)["k"].Scalar(), value) << emitted;
    EXPECT_EQ((*reloaded)["s"][0].Scalar(), value) << emitted;
    EXPECT_EQ((*reloaded)["n"]["m"][0].Scalar(), value) << emitted;
    EXPECT_TRUE(SemanticallyEqual(node, *reloaded)) << emitted;
  }
}

TEST(EmitYamlTest, TextABlockCannotHoldIsDoubleQuoted) {
  EXPECT_EQ(EmitString("a\r\nb"), "k: \"a\\r\\nb\"\n");
  EXPECT_EQ(EmitString("\n\n"), "k: \"\\n\\n\"\n");
}

TEST(LoadYamlTest, ALoneCarriageReturnIsRefusedWithItsPlace) {
  absl::StatusOr<YAML::Node> lone = LoadYaml("name: kube-1\nkind: Po\r\r*a\n", "pod.yaml");
  ASSERT_FALSE(lone.ok());
  EXPECT_EQ(lone.status().message(),
            "pod.yaml:2:9: a carriage return not followed by a line feed; save the file with \\n "
            "(or \\r\\n) line ends");
  absl::StatusOr<YAML::Node> windows = LoadYaml("name: kube-1\r\nkind: Pod\r\n", "pod.yaml");
  ASSERT_TRUE(windows.ok()) << windows.status();
  EXPECT_EQ((*windows)["kind"].Scalar(), "Pod");
}

TEST(EmitYamlTest, APlainDashFromAFlowListStaysAString) {
  const YAML::Node node = Load("command: [a, -, b]\n");
  EXPECT_EQ(EmitYaml(node), "command:\n- a\n- \"-\"\n- b\n");
  const YAML::Node reloaded = Load(EmitYaml(node));
  EXPECT_TRUE(SemanticallyEqual(node, reloaded)) << EmitYaml(node);
  EXPECT_EQ(EmitYaml(reloaded), EmitYaml(node));
}

TEST(EmitYamlTest, APlainScalarFoldedOverAnEmptyLineReloadsAsTheSameString) {
  // Plain text continued after an empty line holds a line break; it is emitted quoted, and the
  // quoted string means what the plain one did.
  const YAML::Node node = Load("k: v1\n\n   x\n");
  ASSERT_EQ(node["k"].Scalar(), "v1\nx");
  const YAML::Node reloaded = Load(EmitYaml(node));
  EXPECT_EQ(reloaded["k"].Scalar(), "v1\nx");
  EXPECT_TRUE(SemanticallyEqual(node, reloaded)) << EmitYaml(node);
  EXPECT_EQ(EmitYaml(reloaded), EmitYaml(node));
  // A plain scalar the reader takes for another type still differs from the quoted string.
  EXPECT_FALSE(SemanticallyEqual(Load("k: true\n"), Load("k: \"true\"\n")));
}

TEST(EmitYamlTest, NestedSequencesReload) {
  const YAML::Node node = Load("a:\n- - x\n  - \"no\"\n- []\n");
  const YAML::Node reloaded = Load(EmitYaml(node));
  EXPECT_TRUE(SemanticallyEqual(node, reloaded)) << EmitYaml(node);
  EXPECT_EQ(reloaded["a"][0][1].Scalar(), "no");
  EXPECT_TRUE(IsStringScalar(reloaded["a"][0][1]));
}

TEST(EmitYamlTest, RootScalarsAndEmptyCollections) {
  EXPECT_EQ(EmitYaml(YAML::Node(YAML::NodeType::Map)), "{}\n");
  EXPECT_EQ(EmitYaml(YAML::Node(YAML::NodeType::Sequence)), "[]\n");
  EXPECT_EQ(EmitYaml(Load("- a\n- b\n")), "- a\n- b\n");
  EXPECT_EQ(EmitYaml(Load("plain\n")), "plain\n");
}

// --- SemanticallyEqual ------------------------------------------------------------------------

TEST(SemanticallyEqualTest, IgnoresMapKeyOrder) {
  EXPECT_TRUE(
      SemanticallyEqual(Load("a: 1\nb:\n  c: x\n  d: y\n"), Load("b:\n  d: y\n  c: x\na: 1\n")));
}

TEST(SemanticallyEqualTest, KeepsSequenceOrder) {
  EXPECT_FALSE(SemanticallyEqual(Load("a: [x, y]\n"), Load("a: [y, x]\n")));
  EXPECT_TRUE(SemanticallyEqual(Load("a: [x, y]\n"), Load("a:\n- x\n- y\n")));
}

TEST(SemanticallyEqualTest, StringTrueIsNotBoolTrue) {
  EXPECT_FALSE(SemanticallyEqual(Load("a: \"true\"\n"), Load("a: true\n")));
  EXPECT_FALSE(SemanticallyEqual(Load("a: \"10\"\n"), Load("a: 10\n")));
  EXPECT_FALSE(SemanticallyEqual(Load("a: \"null\"\n"), Load("a: null\n")));
  EXPECT_TRUE(SemanticallyEqual(Load("a: \"true\"\n"), Load("a: 'true'\n")));
  EXPECT_TRUE(SemanticallyEqual(Load("a: true\n"), Load("a: true\n")));
}

TEST(SemanticallyEqualTest, QuotingThatChangesNothingIsEqual) {
  EXPECT_TRUE(SemanticallyEqual(Load("a: \"kube-system\"\n"), Load("a: kube-system\n")));
  EXPECT_TRUE(SemanticallyEqual(Load("a: |-\n  x\n"), Load("a: x\n")));
}

TEST(SemanticallyEqualTest, DifferentValuesSizesAndShapes) {
  EXPECT_FALSE(SemanticallyEqual(Load("a: 1\n"), Load("a: 2\n")));
  EXPECT_FALSE(SemanticallyEqual(Load("a: 1\n"), Load("a: 1\nb: 2\n")));
  EXPECT_FALSE(SemanticallyEqual(Load("a: 1\nb: 2\n"), Load("a: 1\nc: 2\n")));
  EXPECT_FALSE(SemanticallyEqual(Load("a: [1]\n"), Load("a: [1, 1]\n")));
  EXPECT_FALSE(SemanticallyEqual(Load("a: {}\n"), Load("a: []\n")));
  EXPECT_FALSE(SemanticallyEqual(Load("a: x\n"), Load("a: [x]\n")));
  EXPECT_FALSE(SemanticallyEqual(Load("a:\n  b:\n  - c: 1\n"), Load("a:\n  b:\n  - c: 2\n")));
}

// --- IsStringScalar and NeedsQuotes -----------------------------------------------------------

TEST(IsStringScalarTest, QuotedBlockAndBuiltAreStringsPlainIsNot) {
  const YAML::Node node = Load("plain: x\ndq: \"x\"\nsq: 'x'\nblock: |\n  x\nmap: {}\n");
  EXPECT_FALSE(IsStringScalar(node["plain"]));
  EXPECT_TRUE(IsStringScalar(node["dq"]));
  EXPECT_TRUE(IsStringScalar(node["sq"]));
  EXPECT_TRUE(IsStringScalar(node["block"]));
  EXPECT_FALSE(IsStringScalar(node["map"]));
  EXPECT_TRUE(IsStringScalar(YAML::Node(std::string("built"))));
}

TEST(NeedsQuotesTest, Table) {
  struct Case {
    const char* text;
    bool needs_quotes;
  };
  const Case cases[] = {
      // YAML 1.1 booleans and nulls.
      {"true", true},
      {"FALSE", true},
      {"yes", true},
      {"No", true},
      {"on", true},
      {"OFF", true},
      {"y", true},
      {"N", true},
      {"null", true},
      {"Null", true},
      {"~", true},
      {"<<", true},
      // Numbers in every form go-yaml v2 reads.
      {"10", true},
      {"-10", true},
      {"+10", true},
      {"0", true},
      {"017", true},
      {"0o17", true},
      {"0x1F", true},
      {"0X1F", true},
      {"0b101", true},
      {"0B101", true},
      {"1_000", true},
      {"1.5", true},
      {"1.", true},
      {".5", true},
      {"1e3", true},
      {"1E-3", true},
      {"-1.5e+3", true},
      {".inf", true},
      {"-.Inf", true},
      {"+.inf", true},
      {"+.INF", true},
      {".nan", true},
      {"12:30", true},
      {"2024-01-02", true},
      {"2024-1-2", true},
      {"2024-01-02 10:00:00", true},
      // Syntax a plain scalar cannot carry.
      {"", true},
      {"*", true},
      {"*ref", true},
      {"&anchor", true},
      {"!tag", true},
      {"|", true},
      {">", true},
      {"'", true},
      {"\"", true},
      {"%", true},
      {"@", true},
      {"`", true},
      {"#", true},
      {",", true},
      {"[", true},
      {"]", true},
      {"{", true},
      {"}", true},
      {"-", true},
      {"- x", true},
      {"?", true},
      {"? x", true},
      {":", true},
      {": x", true},
      {" lead", true},
      {"trail ", true},
      {"ends:", true},
      {"a: b", true},
      {"a #b", true},
      {"tab\there", true},
      {"line\nbreak", true},
      {"del\x7f", true},
      // Strings that stay strings.
      {"127.0.0.1", false},
      {"250m", false},
      {"--flag=value", false},
      {"v1.27.3", false},
      {"1.2.3", false},
      {"10.0.1.10:6443", false},
      {"https://a:1/b", false},
      {"a:b", false},
      {"a#b", false},
      {"-flag", false},
      {"?x", false},
      {":x", false},
      {"kube-system", false},
      {"yes-please", false},
      {"nulls", false},
      {"0x", false},
      {"0xZZ", false},
      {"1e", false},
      {"e3", false},
      {"inf", false},
      {"_", false},
      {"Node,RBAC", false},
      {"*,bootstrapsigner,tokencleaner", true},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(NeedsQuotes(c.text), c.needs_quotes) << "'" << c.text << "'";
  }
}

}  // namespace
}  // namespace handoff
