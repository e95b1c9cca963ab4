#include "common/kube/resource.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace handoff::kube {
namespace {

using ::testing::HasSubstr;

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

}  // namespace
}  // namespace handoff::kube
