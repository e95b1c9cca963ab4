// `handoffctl rbac apply` against kube-apiserver 1.26's own bootstrap RBAC: the rules it appends
// work for the real RBAC authorizer (403 before, allowed after) and keep every rule there was.
// This binary is the only one that changes the bootstrap RBAC of its control plane.
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/kube/client.h"
#include "coordinator/kube/lease.h"
#include "coordinator/kube/rbac.h"
#include "common/kube/resource.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/real/ctl_runner.h"
#include "tests/real/real_cluster.h"

namespace handoff {
namespace {

using kube::Json;
using ::testing::HasSubstr;

constexpr char kKcmUser[] = "system:kube-controller-manager";
constexpr char kCcmUser[] = "system:cloud-controller-manager";
constexpr char kKcmRole[] = "system::leader-locking-kube-controller-manager";
constexpr char kCcmRole[] = "system::leader-locking-cloud-controller-manager";

Json NewLease(const std::string& name, const std::string& holder) {
  Json lease = Json::object();
  lease["apiVersion"] = "coordination.k8s.io/v1";
  lease["kind"] = "Lease";
  lease["metadata"] = {{"name", name}, {"namespace", "kube-system"}};
  lease["spec"] = {{"holderIdentity", holder}, {"leaseDurationSeconds", 15}};
  return lease;
}

// What the real authorizer lets `client` do to the lease kube-system/`name`: create it (when it
// is missing), then get and update it. Each result is the status code of the attempt.
struct LeaseAccess {
  absl::StatusCode create = absl::StatusCode::kUnknown;
  absl::StatusCode get = absl::StatusCode::kUnknown;
  absl::StatusCode update = absl::StatusCode::kUnknown;
};

LeaseAccess TryLease(kube::KubeClient& client, kube::KubeClient& admin, const std::string& name,
                     const std::string& holder) {
  const kube::ObjectRef ref{&kube::kLeases, "kube-system", name};
  absl::Status removed = admin.Delete(ref);
  EXPECT_TRUE(removed.ok() || absl::IsNotFound(removed)) << removed;
  LeaseAccess access;
  access.create = client.Create(kube::kLeases, "kube-system", NewLease(name, holder)).status().code();
  if (access.create != absl::StatusCode::kOk) {
    // The lease must exist for get and update to be about permission rather than existence.
    absl::StatusOr<Json> created = admin.Create(kube::kLeases, "kube-system", NewLease(name, "admin"));
    EXPECT_TRUE(created.ok()) << created.status();
  }
  absl::StatusOr<Json> got = client.Get(ref);
  access.get = got.status().code();
  absl::StatusOr<Json> current = admin.Get(ref);
  EXPECT_TRUE(current.ok()) << current.status();
  if (current.ok()) {
    Json changed = *current;
    changed["spec"]["holderIdentity"] = holder;
    access.update = client.Update(ref, changed).status().code();
  }
  return access;
}

std::string Codes(const LeaseAccess& access) {
  return absl::StrCat("create ", absl::StatusCodeToString(access.create), ", get ",
                      absl::StatusCodeToString(access.get), ", update ",
                      absl::StatusCodeToString(access.update));
}

TEST(RbacRealTest, ApplyKeepsTheBootstrapRulesAndGrantsTheMigrationLease) {
  HANDOFF_REAL_CLUSTER_OR_SKIP(cluster);
  std::unique_ptr<Clock> clock = NewRealClock();
  absl::StatusOr<std::unique_ptr<kube::KubeClient>> admin =
      cluster.Client(cluster.AdminCredentials(), *clock);
  ASSERT_TRUE(admin.ok()) << admin.status();
  absl::StatusOr<pki::KeyPair> kcm_pair = cluster.IssueClient(kKcmUser);
  absl::StatusOr<pki::KeyPair> ccm_pair = cluster.IssueClient(kCcmUser);
  ASSERT_TRUE(kcm_pair.ok() && ccm_pair.ok());
  absl::StatusOr<std::unique_ptr<kube::KubeClient>> kcm =
      cluster.Client(cluster.Credentials(*kcm_pair), *clock);
  absl::StatusOr<std::unique_ptr<kube::KubeClient>> ccm =
      cluster.Client(cluster.Credentials(*ccm_pair), *clock);
  ASSERT_TRUE(kcm.ok() && ccm.ok());

  const kube::ObjectRef kcm_role_ref{&kube::kRoles, "kube-system", kKcmRole};
  const kube::ObjectRef cluster_role_ref{&sandbox::real::kClusterRoles, "", kKcmUser};
  absl::StatusOr<Json> role_before = (*admin)->Get(kcm_role_ref);
  absl::StatusOr<Json> cluster_role_before = (*admin)->Get(cluster_role_ref);
  ASSERT_TRUE(role_before.ok()) << role_before.status();
  ASSERT_TRUE(cluster_role_before.ok()) << cluster_role_before.status();
  // kubeadm has no Role for the cloud-controller-manager.
  EXPECT_TRUE(absl::IsNotFound(
      (*admin)->Get({&kube::kRoles, "kube-system", kCcmRole}).status()));

  const std::string lease = std::string(kube::kMigrationLeaseName);
  // Before: the kube-controller-manager may create any lease (ClusterRole
  // system:kube-controller-manager allows create on leases, as it needs for its own lock) but
  // neither read nor renew the migration lease; the cloud-controller-manager's user may do
  // nothing.
  const LeaseAccess kcm_before = TryLease(**kcm, **admin, lease, "kcm");
  EXPECT_EQ(kcm_before.create, absl::StatusCode::kOk) << Codes(kcm_before);
  EXPECT_EQ(kcm_before.get, absl::StatusCode::kPermissionDenied) << Codes(kcm_before);
  EXPECT_EQ(kcm_before.update, absl::StatusCode::kPermissionDenied) << Codes(kcm_before);
  const LeaseAccess ccm_before = TryLease(**ccm, **admin, lease, "ccm");
  EXPECT_EQ(ccm_before.create, absl::StatusCode::kPermissionDenied) << Codes(ccm_before);
  EXPECT_EQ(ccm_before.get, absl::StatusCode::kPermissionDenied) << Codes(ccm_before);
  EXPECT_EQ(ccm_before.update, absl::StatusCode::kPermissionDenied) << Codes(ccm_before);
  absl::StatusOr<Json> refused = (*ccm)->Get({&kube::kLeases, "kube-system", lease});
  EXPECT_THAT(std::string(refused.status().message()),
              HasSubstr("system:cloud-controller-manager"));

  const std::string kubeconfig = cluster.dir() + "/admin.conf";
  ASSERT_TRUE(cluster.WriteKubeconfig(kubeconfig, cluster.admin()).ok());
  const std::vector<std::string> apply = {"rbac", "apply", "--kubeconfig", kubeconfig,
                                          "--ccm-user", kCcmUser};
  testing::CtlResult first = testing::RunHandoffctl(apply);
  ASSERT_EQ(first.code, 0) << first.out << first.err;
  EXPECT_THAT(first.out, HasSubstr("rbac: applied 3 change(s)"));

  // Every rule the Role had is still there, as it was, in its place; the ClusterRole is untouched.
  absl::StatusOr<Json> role_after = (*admin)->Get(kcm_role_ref);
  ASSERT_TRUE(role_after.ok()) << role_after.status();
  const Json& rules_before = (*role_before)["rules"];
  const Json& rules_after = (*role_after)["rules"];
  ASSERT_GT(rules_after.size(), rules_before.size()) << rules_after.dump();
  for (size_t i = 0; i < rules_before.size(); ++i) {
    EXPECT_EQ(rules_after[i], rules_before[i]) << "rule " << i;
  }
  absl::StatusOr<Json> cluster_role_after = (*admin)->Get(cluster_role_ref);
  ASSERT_TRUE(cluster_role_after.ok()) << cluster_role_after.status();
  EXPECT_EQ((*cluster_role_after)["rules"], (*cluster_role_before)["rules"]);
  EXPECT_EQ(kube::ResourceVersion(*cluster_role_after), kube::ResourceVersion(*cluster_role_before));

  // After: both identities create, read and renew the migration lease; the
  // cloud-controller-manager also its main lease.
  const LeaseAccess kcm_after = TryLease(**kcm, **admin, lease, "kcm");
  EXPECT_EQ(kcm_after.create, absl::StatusCode::kOk) << Codes(kcm_after);
  EXPECT_EQ(kcm_after.get, absl::StatusCode::kOk) << Codes(kcm_after);
  EXPECT_EQ(kcm_after.update, absl::StatusCode::kOk) << Codes(kcm_after);
  const LeaseAccess ccm_after = TryLease(**ccm, **admin, lease, "ccm");
  EXPECT_EQ(ccm_after.create, absl::StatusCode::kOk) << Codes(ccm_after);
  EXPECT_EQ(ccm_after.get, absl::StatusCode::kOk) << Codes(ccm_after);
  EXPECT_EQ(ccm_after.update, absl::StatusCode::kOk) << Codes(ccm_after);
  const LeaseAccess ccm_main = TryLease(**ccm, **admin, "cloud-controller-manager", "ccm");
  EXPECT_EQ(ccm_main.create, absl::StatusCode::kOk) << Codes(ccm_main);
  EXPECT_EQ(ccm_main.get, absl::StatusCode::kOk) << Codes(ccm_main);
  EXPECT_EQ(ccm_main.update, absl::StatusCode::kOk) << Codes(ccm_main);
  // Only the leases it names: another lease stays out of the cloud-controller-manager's reach.
  EXPECT_EQ(TryLease(**ccm, **admin, "kube-scheduler", "ccm").get,
            absl::StatusCode::kPermissionDenied);

  // A second run writes nothing.
  absl::StatusOr<Json> ccm_role = (*admin)->Get({&kube::kRoles, "kube-system", kCcmRole});
  absl::StatusOr<Json> ccm_binding = (*admin)->Get({&kube::kRoleBindings, "kube-system", kCcmRole});
  ASSERT_TRUE(ccm_role.ok() && ccm_binding.ok());
  testing::CtlResult second = testing::RunHandoffctl(apply);
  ASSERT_EQ(second.code, 0) << second.out << second.err;
  EXPECT_THAT(second.out, HasSubstr("rbac: no changes"));
  EXPECT_EQ(kube::ResourceVersion(*(*admin)->Get(kcm_role_ref)), kube::ResourceVersion(*role_after));
  EXPECT_EQ(kube::ResourceVersion(*(*admin)->Get({&kube::kRoles, "kube-system", kCcmRole})),
            kube::ResourceVersion(*ccm_role));
  EXPECT_EQ(
      kube::ResourceVersion(*(*admin)->Get({&kube::kRoleBindings, "kube-system", kCcmRole})),
      kube::ResourceVersion(*ccm_binding));
}

}  // namespace
}  // namespace handoff
