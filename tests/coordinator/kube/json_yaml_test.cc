#include "common/kube/json_yaml.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace handoff::kube {
namespace {

using ::testing::HasSubstr;
using ::testing::SizeIs;

// The one object of a YAML text, as JSON text.
std::string ObjectJson(const std::string& yaml) {
  absl::StatusOr<std::vector<Json>> objects = ParseObjects(yaml, "test.yaml");
  EXPECT_TRUE(objects.ok()) << objects.status();
  if (!objects.ok() || objects->size() != 1) return "";
  return objects->front().dump();
}

std::string Refusal(const std::string& text) {
  absl::StatusOr<std::vector<Json>> objects = ParseObjects(text, "test.yaml");
  EXPECT_FALSE(objects.ok()) << text;
  return std::string(objects.status().message());
}

TEST(JsonYamlTest, JsonToYamlKeepsOrderAndTypes) {
  Json object = Json::parse(R"({"kind":"ConfigMap","metadata":{"name":"x","labels":{}},
      "data":{"enabled":"true","count":"10","text":"line1\nline2\n"},
      "spec":{"replicas":3,"paused":false,"ratio":0.5,"none":null,"list":[]}})");
  EXPECT_EQ(JsonToYaml(object),
            "kind: ConfigMap\n"
            "metadata:\n"
            "  name: x\n"
            "  labels: {}\n"
            "data:\n"
            "  enabled: \"true\"\n"
            "  count: \"10\"\n"
            "  text: |\n"
            "    line1\n"
            "    line2\n"
            "spec:\n"
            "  replicas: 3\n"
            "  paused: false\n"
            "  ratio: 0.5\n"
            "  none: null\n"
            "  list: []\n");
}

TEST(JsonYamlTest, YamlToJsonResolvesPlainScalars) {
  absl::StatusOr<std::vector<Json>> objects = ParseObjects(
      "kind: X\n"
      "a: \"true\"\n"
      "b: true\n"
      "c: 15\n"
      "d: '15'\n"
      "e: 1.5\n"
      "f: ~\n"
      "g: 10.96.0.0/12\n"
      "h: \"\"\n",
      "test.yaml");
  ASSERT_TRUE(objects.ok()) << objects.status();
  EXPECT_EQ((*objects)[0].dump(),
            R"({"kind":"X","a":"true","b":true,"c":15,"d":"15","e":1.5,"f":null,)"
            R"("g":"10.96.0.0/12","h":""})");
}

TEST(JsonYamlTest, DocumentsListsAndArrays) {
  absl::StatusOr<std::vector<Json>> objects = ParseObjects(
      "kind: A\n---\n---\nkind: BList\nitems:\n- kind: B1\n- kind: B2\n", "multi.yaml");
  ASSERT_TRUE(objects.ok()) << objects.status();
  ASSERT_THAT(*objects, SizeIs(3));
  EXPECT_EQ((*objects)[2]["kind"], "B2");
  objects = ParseObjects(R"([{"kind":"A"},{"kind":"List","items":[{"kind":"C"}]}])", "a.json");
  ASSERT_TRUE(objects.ok()) << objects.status();
  EXPECT_THAT(*objects, SizeIs(2));
  EXPECT_THAT(std::string(ParseObjects("kind: [", "bad.yaml").status().message()),
              HasSubstr("bad.yaml:"));
  EXPECT_THAT(std::string(ParseObjects("{nope", "bad.json").status().message()),
              HasSubstr("bad.json: not valid JSON"));
  EXPECT_THAT(std::string(ParseObjects("- 1\n- 2\n", "scalars.yaml").status().message()),
              HasSubstr("expected a Kubernetes object"));
}

TEST(JsonYamlTest, AliasesAndDeepNestingAreRefused) {
  EXPECT_THAT(std::string(ParseObjects("kind: A\n---\nkind: &k B\nx: *k\n", "seed.yaml")
                              .status()
                              .message()),
              HasSubstr("seed.yaml:3:7: YAML anchors and aliases are not accepted (&k"));
  EXPECT_THAT(
      std::string(ParseObjects(std::string(200, '[') + std::string(200, ']'), "deep.json")
                      .status()
                      .message()),
      HasSubstr("deep.json:1: lists nest deeper than 16 levels"));
  EXPECT_THAT(std::string(ParseObjects("a: " + std::string(200, '[') + std::string(200, ']'),
                                       "deep.yaml")
                              .status()
                              .message()),
              HasSubstr("deep.yaml:1:103: the document nests deeper than 100 levels"));
}

TEST(JsonYamlTest, NumbersResolveAsSigsK8sIoYamlReadsThem) {
  // go-yaml v2's resolve(): ParseInt and ParseUint with base 0 after dropping '_', then a
  // YAML-style float; JSON written by Go prints a float with an integer value as an integer.
  EXPECT_EQ(ObjectJson("kind: X\n"
                       "hex: 0x1F\n"
                       "octal: 017\n"
                       "octal_o: 0o17\n"
                       "binary: 0b101\n"
                       "negative_hex: -0x10\n"
                       "underscores: 1_000\n"
                       "not_octal: 09\n"
                       "exponent: 1e3\n"
                       "fraction: 1.0\n"
                       "dot: .5\n"
                       "int64_min: -9223372036854775808\n"
                       "uint64_max: 18446744073709551615\n"
                       "past_uint64: 18446744073709551616\n"
                       "signed_uint64: +18446744073709551615\n"
                       "huge: 1e300\n"
                       "subnormal: 5e-324\n"
                       "underflow: 1e-400\n"
                       "overflow: 1e400\n"
                       "date: 2024-01-02\n"
                       "version: 1.2.3\n"
                       "sign: '-'\n"),
            R"({"kind":"X","hex":31,"octal":15,"octal_o":15,"binary":5,"negative_hex":-16,)"
            R"("underscores":1000,"not_octal":9,"exponent":1000,"fraction":1,"dot":0.5,)"
            R"("int64_min":-9223372036854775808,"uint64_max":18446744073709551615,)"
            R"("past_uint64":1.8446744073709552e+19,"signed_uint64":1.8446744073709552e+19,)"
            R"("huge":1e+300,"subnormal":5e-324,"underflow":0,"overflow":"1e400",)"
            R"("date":"2024-01-02","version":"1.2.3","sign":"-"})");
}

TEST(JsonYamlTest, NumbersComeBackFromTheirYaml) {
  const Json object = Json::parse(
      R"({"kind":"ConfigMap","n":[0,-1,1.5,-0.0,1e300,1E-300,9223372036854775807,)"
      R"(-9223372036854775808,18446744073709551615,1.7976931348623157e308,5e-324,0.1,)"
      R"(100000000000000000000]})");
  absl::StatusOr<std::vector<Json>> reparsed = ParseObjects(JsonToYaml(object), "emitted.yaml");
  ASSERT_TRUE(reparsed.ok()) << reparsed.status();
  ASSERT_THAT(*reparsed, SizeIs(1));
  EXPECT_EQ(reparsed->front(), object) << JsonToYaml(object);
  EXPECT_TRUE(reparsed->front()["n"][8].is_number_unsigned());
  EXPECT_TRUE(reparsed->front()["n"][10].is_number_float());
}

TEST(JsonYamlTest, TagsAndKeys) {
  EXPECT_EQ(ObjectJson("kind: X\n"
                       "a: !!str 10\n"
                       "b: !!int \"10\"\n"
                       "c: !!float 1\n"
                       "d: !custom yes\n"
                       "yes: 1\n"
                       "0x10: 2\n"
                       "\"0x11\": 3\n"),
            R"({"kind":"X","a":"10","b":10,"c":1,"d":"yes","true":1,"16":2,"0x11":3})");
  EXPECT_THAT(Refusal("kind: X\na: !!int abc\n"),
              HasSubstr("test.yaml:2:4: 'abc' is not a int as its tag says"));
  EXPECT_THAT(Refusal("kind: X\na: !!binary aGk=\n"), HasSubstr("test.yaml:2:4: !!binary"));
  EXPECT_THAT(Refusal("kind: X\n1.5: a\n"), HasSubstr("test.yaml:2:1: the mapping key '1.5'"));
  EXPECT_THAT(Refusal("kind: X\n18446744073709551615: a\n"),
              HasSubstr("the mapping key '18446744073709551615'"));
  EXPECT_THAT(Refusal("kind: X\non: 1\ntrue: 2\n"),
              HasSubstr("test.yaml:3:1: the key 'true' is the member \"true\" again"));
}

TEST(JsonYamlTest, FloatsJsonCannotHoldAreRefused) {
  for (const std::string value : {".inf", "-.Inf", "+.INF", ".nan", "!!float .NaN"}) {
    EXPECT_THAT(Refusal("kind: X\nv: " + value + "\n"),
                HasSubstr("test.yaml:2:4: " + value.substr(value.rfind(' ') + 1) +
                          " is a float JSON cannot hold"));
  }
  EXPECT_EQ(ObjectJson("kind: X\nv: \".inf\"\n"), R"({"kind":"X","v":".inf"})");
}

TEST(JsonYamlTest, TextThatIsNotUtf8IsRefusedWhereItBreaks) {
  EXPECT_THAT(Refusal("kind: X\nname: caf\xe9\n"),
              HasSubstr("test.yaml:2:10: byte 17 is not UTF-8"));
  // In a comment too: the API server's YAML reader refuses the whole body.
  EXPECT_THAT(Refusal("# \xff\nkind: X\n"), HasSubstr("test.yaml:1:3: byte 2 is not UTF-8"));
  EXPECT_THAT(Refusal("{\"kind\": \"X\", \"a\": \"\xc0\xaf\"}"),
              HasSubstr("test.yaml:1:21: byte 20 is not UTF-8"));  // overlong '/'
  EXPECT_THAT(Refusal("kind: \xed\xa0\x80\n"), HasSubstr("byte 6 is not UTF-8"));  // surrogate
  EXPECT_THAT(Refusal("kind: \xf4\x90\x80\x80\n"), HasSubstr("byte 6 is not UTF-8"));
  EXPECT_THAT(Refusal("kind: \xe2\x82"), HasSubstr("byte 6 is not UTF-8"));  // cut short
  EXPECT_EQ(ObjectJson("kind: \"caf\xc3\xa9 \xf0\x9f\x98\x80\"\n"),
            "{\"kind\":\"caf\xc3\xa9 \xf0\x9f\x98\x80\"}");
}

}  // namespace
}  // namespace handoff::kube
