#include "coordinator/kube/resource.h"

#include "coordinator/kube/json_yaml.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace handoff::kube {
namespace {

using ::testing::HasSubstr;
using ::testing::SizeIs;

TEST(ResourceTest, Paths) {
  EXPECT_EQ(ObjectPath({&kLeases, "kube-system", "cloud-provider-extraction-migration"}),
            "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/"
            "cloud-provider-extraction-migration");
  EXPECT_EQ(ObjectPath({&kRoles, "kube-system", "system::leader-locking-kube-controller-manager"}),
            "/apis/rbac.authorization.k8s.io/v1/namespaces/kube-system/roles/"
            "system::leader-locking-kube-controller-manager");
  EXPECT_EQ(ObjectPath({&kNodes, "", "ip-10-0-1-10.ec2.internal"}),
            "/api/v1/nodes/ip-10-0-1-10.ec2.internal");
  EXPECT_EQ(CollectionPath(kPods, "kube-system"), "/api/v1/namespaces/kube-system/pods");
  EXPECT_EQ(CollectionPath(kConfigMaps, ""), "/api/v1/configmaps");
  EXPECT_EQ(ObjectPath({&kConfigMaps, "a b", "x/y"}), "/api/v1/namespaces/a%20b/configmaps/x%2Fy");
}

TEST(ResourceTest, NamesAndLookups) {
  EXPECT_EQ(kRoles.QualifiedName(), "roles.rbac.authorization.k8s.io");
  EXPECT_EQ(kPods.QualifiedName(), "pods");
  EXPECT_EQ(kLeases.ApiVersion(), "coordination.k8s.io/v1");
  EXPECT_EQ(kNodes.ApiVersion(), "v1");
  EXPECT_EQ(FindResourceTypeByKind("rbac.authorization.k8s.io/v1", "RoleBinding"), &kRoleBindings);
  EXPECT_EQ(FindResourceTypeByKind("v1", "Secret"), nullptr);
  EXPECT_EQ(FindResourceTypeByPath("", "v1", "configmaps"), &kConfigMaps);
  EXPECT_EQ((ObjectRef{&kRoles, "kube-system", "x"}.ToString()), "Role kube-system/x");
  EXPECT_EQ((ObjectRef{&kNodes, "", "n"}.ToString()), "Node n");
}

TEST(ResourceTest, Escaping) {
  EXPECT_EQ(EscapeQueryValue("node-role.kubernetes.io/control-plane"),
            "node-role.kubernetes.io%2Fcontrol-plane");
  EXPECT_EQ(EscapeQueryValue("a=b,c!=d"), "a%3Db%2Cc%21%3Dd");
  EXPECT_EQ(Unescape("a%3Db%2fc"), "a=b/c");
  EXPECT_EQ(Unescape("bad%2"), std::nullopt);
  EXPECT_EQ(Unescape("bad%zz"), std::nullopt);
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

}  // namespace
}  // namespace handoff::kube
