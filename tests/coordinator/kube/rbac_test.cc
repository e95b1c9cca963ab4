#include "coordinator/kube/rbac.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/coordinator/fake_cluster.h"

namespace handoff::kube {
namespace {

using ::handoff::testing::FakeCluster;
using ::handoff::testing::Message;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::SizeIs;

constexpr char kKcmRole[] = "system::leader-locking-kube-controller-manager";
constexpr char kCcmRole[] = "system::leader-locking-cloud-controller-manager";

// The Role as Kubernetes 1.26 bootstraps it: configmap rules only.
Json Role126() {
  return Json::parse(R"({
    "kind": "Role", "apiVersion": "rbac.authorization.k8s.io/v1",
    "metadata": {"name": "system::leader-locking-kube-controller-manager",
                 "namespace": "kube-system", "resourceVersion": "7"},
    "rules": [
      {"verbs": ["watch"], "apiGroups": [""], "resources": ["configmaps"]},
      {"verbs": ["get", "update"], "apiGroups": [""], "resources": ["configmaps"],
       "resourceNames": ["kube-controller-manager"]}]})");
}

// The Role as newer releases bootstrap it: leases without a name restriction.
Json RoleWithLeases() {
  Json role = Role126();
  role["rules"].push_back(Json::parse(R"({"verbs": ["get", "watch", "list", "create", "update"],
      "apiGroups": ["coordination.k8s.io"], "resources": ["leases"]})"));
  return role;
}

TEST(RoleAllowsTest, MatchesAsTheRbacAuthorizer) {
  Json role = Json::parse(R"({"rules": [
      {"verbs": ["get"], "apiGroups": ["coordination.k8s.io"], "resources": ["leases"],
       "resourceNames": ["a"]},
      {"verbs": ["*"], "apiGroups": ["*"], "resources": ["configmaps"]}]})");
  EXPECT_TRUE(RoleAllows(role, "get", "coordination.k8s.io", "leases", "a"));
  EXPECT_FALSE(RoleAllows(role, "get", "coordination.k8s.io", "leases", "b"));
  EXPECT_FALSE(RoleAllows(role, "update", "coordination.k8s.io", "leases", "a"));
  // A request without a name never matches a rule that names objects.
  EXPECT_FALSE(RoleAllows(role, "get", "coordination.k8s.io", "leases", ""));
  EXPECT_TRUE(RoleAllows(role, "delete", "", "configmaps", ""));
  EXPECT_TRUE(RoleAllows(role, "create", "apps", "configmaps", "x"));
  EXPECT_FALSE(RoleAllows(Json::object(), "get", "", "configmaps", ""));
}

TEST(EnsureLeaseRulesTest, AppendsTwoRulesToThe126Role) {
  Json role = Role126();
  const Json original_rules = role["rules"];
  std::vector<std::string> reasons =
      EnsureLeaseRules(role, {"cloud-provider-extraction-migration"});
  EXPECT_THAT(reasons, SizeIs(2));
  ASSERT_EQ(role["rules"].size(), 4u);
  EXPECT_EQ(role["rules"][0].dump(), original_rules[0].dump());
  EXPECT_EQ(role["rules"][1].dump(), original_rules[1].dump());
  EXPECT_EQ(
      role["rules"][2].dump(),
      R"({"verbs":["create","get","list","update","watch"],"apiGroups":["coordination.k8s.io"],)"
      R"("resources":["leases"],"resourceNames":["cloud-provider-extraction-migration"]})");
  EXPECT_EQ(role["rules"][3].dump(),
            R"({"verbs":["create"],"apiGroups":["coordination.k8s.io"],"resources":["leases"]})");
  // Idempotent.
  EXPECT_THAT(EnsureLeaseRules(role, {"cloud-provider-extraction-migration"}), IsEmpty());
}

TEST(EnsureLeaseRulesTest, NothingToAddWhenLeasesAreAllowedAlready) {
  Json role = RoleWithLeases();
  EXPECT_THAT(EnsureLeaseRules(role, {"cloud-provider-extraction-migration"}), IsEmpty());
  EXPECT_EQ(role.dump(), RoleWithLeases().dump());
}

TEST(EnsureLeaseRulesTest, OnlyTheUnnamedCreateWhenTheNamedRuleExists) {
  Json role = Role126();
  role["rules"].push_back(Json::parse(R"({"verbs": ["create", "list", "get", "update", "watch"],
      "apiGroups": ["coordination.k8s.io"], "resources": ["leases"],
      "resourceNames": ["cloud-provider-extraction-migration"]})"));
  std::vector<std::string> reasons =
      EnsureLeaseRules(role, {"cloud-provider-extraction-migration"});
  ASSERT_THAT(reasons, SizeIs(1));
  EXPECT_THAT(reasons[0], HasSubstr("create on leases: a create request has no name"));
}

TEST(PlanRbacTest, Kubeadm126Cluster) {
  RbacState state;
  state.kcm_role = Role126();
  RbacPlan plan = PlanRbac(state, RbacOptions());
  EXPECT_THAT(plan.problems, IsEmpty());
  ASSERT_THAT(plan.changes, SizeIs(3));
  EXPECT_EQ(plan.changes[0].Headline(), "update Role kube-system/" + std::string(kKcmRole));
  EXPECT_EQ(plan.changes[1].Headline(), "create Role kube-system/" + std::string(kCcmRole));
  EXPECT_EQ(plan.changes[2].Headline(), "create RoleBinding kube-system/" + std::string(kCcmRole));
  EXPECT_EQ(
      plan.changes[2].after["subjects"].dump(),
      R"([{"kind":"User","apiGroup":"rbac.authorization.k8s.io","name":"system:kube-controller-manager"}])");
  EXPECT_EQ(
      plan.changes[2].after["roleRef"].dump(),
      R"({"apiGroup":"rbac.authorization.k8s.io","kind":"Role","name":"system::leader-locking-cloud-controller-manager"})");
  const Json& ccm = plan.changes[1].after;
  EXPECT_TRUE(
      RoleAllows(ccm, "update", "coordination.k8s.io", "leases", "cloud-controller-manager"));
  EXPECT_TRUE(RoleAllows(ccm, "get", "coordination.k8s.io", "leases",
                         "cloud-provider-extraction-migration"));
  EXPECT_TRUE(RoleAllows(ccm, "create", "coordination.k8s.io", "leases", ""));
  EXPECT_FALSE(
      RoleAllows(ccm, "update", "coordination.k8s.io", "leases", "kube-controller-manager"));
}

TEST(PlanRbacTest, NothingWhenEverythingIsInPlace) {
  RbacOptions options;
  RbacState state;
  state.kcm_role = RoleWithLeases();
  state.ccm_role = NewCcmRole(options);
  state.ccm_binding = NewCcmRoleBinding(options);
  RbacPlan plan = PlanRbac(state, options);
  EXPECT_TRUE(plan.empty());
  EXPECT_THAT(plan.problems, IsEmpty());
}

TEST(PlanRbacTest, ServiceAccountSubjectIsAddedToAnExistingBinding) {
  RbacOptions options;
  absl::StatusOr<Subject> subject = ServiceAccountSubject("kube-system/cloud-controller-manager");
  ASSERT_TRUE(subject.ok());
  RbacState state;
  state.kcm_role = RoleWithLeases();
  state.ccm_role = NewCcmRole(options);
  state.ccm_binding = NewCcmRoleBinding(options);  // binds the User
  options.ccm_subject = *subject;
  RbacPlan plan = PlanRbac(state, options);
  ASSERT_THAT(plan.changes, SizeIs(1));
  EXPECT_EQ(plan.changes[0].Headline(), "update RoleBinding kube-system/" + std::string(kCcmRole));
  EXPECT_THAT(plan.changes[0].reasons,
              ElementsAre("bind ServiceAccount kube-system/cloud-controller-manager"));
  EXPECT_EQ(
      plan.changes[0].after["subjects"][1].dump(),
      R"({"kind":"ServiceAccount","name":"cloud-controller-manager","namespace":"kube-system"})");
  EXPECT_FALSE(ServiceAccountSubject("cloud-controller-manager").ok());
}

TEST(PlanRbacTest, MissingKubeControllerManagerRoleIsAProblem) {
  RbacPlan plan = PlanRbac(RbacState(), RbacOptions());
  ASSERT_THAT(plan.problems, SizeIs(1));
  EXPECT_THAT(plan.problems[0],
              HasSubstr("Role kube-system/system::leader-locking-kube-controller-manager does not "
                        "exist; the API server creates it at startup"));
}

TEST(PlanRbacTest, BindingToAnotherRoleIsAProblem) {
  RbacOptions options;
  RbacState state;
  state.kcm_role = RoleWithLeases();
  state.ccm_role = NewCcmRole(options);
  state.ccm_binding = NewCcmRoleBinding(options);
  (*state.ccm_binding)["roleRef"]["name"] = "something-else";
  RbacPlan plan = PlanRbac(state, options);
  ASSERT_THAT(plan.problems, SizeIs(1));
  EXPECT_THAT(plan.problems[0], HasSubstr("binds Role something-else, not Role "
                                          "system::leader-locking-cloud-controller-manager; a "
                                          "RoleBinding's roleRef cannot be changed"));
}

TEST(RbacChangeTest, DiffShowsOnlyTheAppendedRules) {
  RbacState state;
  state.kcm_role = Role126();
  (*state.kcm_role)["metadata"]["managedFields"] = Json::array({Json::object({{"manager", "x"}})});
  RbacPlan plan = PlanRbac(state, RbacOptions());
  EXPECT_EQ(plan.changes[0].Diff(),
            "--- a/kube-system/roles/system::leader-locking-kube-controller-manager.yaml\n"
            "+++ b/kube-system/roles/system::leader-locking-kube-controller-manager.yaml\n"
            "@@ -20,3 +20,21 @@\n"
            "   - configmaps\n"
            "   resourceNames:\n"
            "   - kube-controller-manager\n"
            "+- verbs:\n"
            "+  - create\n"
            "+  - get\n"
            "+  - list\n"
            "+  - update\n"
            "+  - watch\n"
            "+  apiGroups:\n"
            "+  - coordination.k8s.io\n"
            "+  resources:\n"
            "+  - leases\n"
            "+  resourceNames:\n"
            "+  - cloud-provider-extraction-migration\n"
            "+- verbs:\n"
            "+  - create\n"
            "+  apiGroups:\n"
            "+  - coordination.k8s.io\n"
            "+  resources:\n"
            "+  - leases\n");
}

// Against the fake API server seeded with a kubeadm 1.26 cluster.
class ApplyRbacTest : public ::testing::Test {
 protected:
  std::string RawRole(const std::string& name) {
    std::optional<Json> role = cluster_.store().Get(kRoles, "kube-system", name);
    return role ? role->dump() : "";
  }
  FakeCluster cluster_;
};

TEST_F(ApplyRbacTest, KeepsExistingRulesByteForByteAndIsIdempotent) {
  const Json before = *cluster_.store().Get(kRoles, "kube-system", kKcmRole);
  std::unique_ptr<KubeClient> client = cluster_.Client();
  absl::StatusOr<RbacApplyResult> result = ApplyRbac(*client, RbacOptions());
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_THAT(result->applied, SizeIs(3));
  EXPECT_EQ(result->conflicts, 0);

  const Json after = *cluster_.store().Get(kRoles, "kube-system", kKcmRole);
  ASSERT_EQ(after["rules"].size(), before["rules"].size() + 2);
  for (size_t i = 0; i < before["rules"].size(); ++i) {
    EXPECT_EQ(after["rules"][i].dump(), before["rules"][i].dump()) << "rule " << i;
  }
  EXPECT_EQ(after["metadata"]["annotations"].dump(), before["metadata"]["annotations"].dump());
  EXPECT_EQ(after["metadata"]["uid"], before["metadata"]["uid"]);
  EXPECT_TRUE(RoleAllows(after, "update", "coordination.k8s.io", "leases",
                         "cloud-provider-extraction-migration"));

  // The cloud-controller-manager's Role and RoleBinding were created.
  std::optional<Json> ccm_role = cluster_.store().Get(kRoles, "kube-system", kCcmRole);
  ASSERT_TRUE(ccm_role.has_value());
  EXPECT_TRUE(
      RoleAllows(*ccm_role, "get", "coordination.k8s.io", "leases", "cloud-controller-manager"));
  std::optional<Json> binding = cluster_.store().Get(kRoleBindings, "kube-system", kCcmRole);
  ASSERT_TRUE(binding.has_value());
  EXPECT_EQ(StringAt(*binding, {"roleRef", "name"}), kCcmRole);
  EXPECT_EQ((*binding)["subjects"][0]["name"], "system:kube-controller-manager");

  // Again: nothing to do, nothing written.
  const int64_t version = cluster_.store().resource_version();
  cluster_.store().ClearRequests();
  absl::StatusOr<RbacApplyResult> again = ApplyRbac(*client, RbacOptions());
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_THAT(again->applied, IsEmpty());
  EXPECT_EQ(cluster_.store().resource_version(), version);
  for (const auto& request : cluster_.store().requests()) EXPECT_EQ(request.method, "GET");
}

TEST_F(ApplyRbacTest, StaleResourceVersionIsRetriedOnTheFreshRole) {
  // While handoff edits the Role, the API server's RBAC reconciliation (or an operator) adds a
  // rule; the retry must keep it and still append ours.
  cluster_.store().InjectConflicts(kRoles, "kube-system", kKcmRole, 1, [](Json& role) {
    role["rules"].push_back(Json::parse(
        R"({"verbs":["get"],"apiGroups":[""],"resources":["configmaps"],"resourceNames":["x"]})"));
  });
  absl::StatusOr<RbacApplyResult> result = ApplyRbac(*cluster_.Client(), RbacOptions());
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->conflicts, 1);
  const Json after = *cluster_.store().Get(kRoles, "kube-system", kKcmRole);
  ASSERT_EQ(after["rules"].size(), 5u);
  EXPECT_EQ(after["rules"][2]["resourceNames"][0], "x");
  EXPECT_EQ(after["rules"][3]["resourceNames"][0], "cloud-provider-extraction-migration");
}

TEST_F(ApplyRbacTest, RoleCreatedMeanwhileIsUpdatedInstead) {
  // Someone creates the cloud-controller-manager's Role (without the migration lease) between
  // handoff's read and its create.
  class CreateFirst : public HttpTransport {
   public:
    CreateFirst(std::unique_ptr<HttpTransport> next, fakeapi::ApiStore& store)
        : next_(std::move(next)), store_(store) {}
    absl::StatusOr<HttpResponse> Send(const HttpRequest& request) override {
      if (request.method == "POST" && EndsWith(request.path, "/roles") && !done_) {
        done_ = true;
        Json role = Json::parse(R"({"apiVersion":"rbac.authorization.k8s.io/v1","kind":"Role",
            "metadata":{"name":"system::leader-locking-cloud-controller-manager",
                        "namespace":"kube-system"},
            "rules":[{"verbs":["get","update"],"apiGroups":["coordination.k8s.io"],
                      "resources":["leases"],"resourceNames":["cloud-controller-manager"]}]})");
        EXPECT_TRUE(store_.Put(role).ok());
      }
      return next_->Send(request);
    }

   private:
    std::unique_ptr<HttpTransport> next_;
    fakeapi::ApiStore& store_;
    bool done_ = false;
  };
  absl::StatusOr<std::unique_ptr<HttpTransport>> curl = NewCurlTransport(cluster_.Credentials());
  ASSERT_TRUE(curl.ok());
  KubeClient client(std::make_unique<CreateFirst>(*std::move(curl), cluster_.store()),
                    cluster_.clock(), ClientOptionsFor(cluster_.Credentials()));
  absl::StatusOr<RbacApplyResult> result = ApplyRbac(client, RbacOptions());
  ASSERT_TRUE(result.ok()) << result.status();
  const Json role = *cluster_.store().Get(kRoles, "kube-system", kCcmRole);
  ASSERT_EQ(role["rules"].size(), 3u);
  EXPECT_EQ(role["rules"][0]["verbs"].dump(), R"(["get","update"])");  // theirs, kept
  EXPECT_TRUE(RoleAllows(role, "watch", "coordination.k8s.io", "leases",
                         "cloud-provider-extraction-migration"));
}

TEST_F(ApplyRbacTest, RefusesWithoutTheKubeControllerManagerRole) {
  cluster_.store().Remove(kRoles, "kube-system", kKcmRole);
  const int64_t version = cluster_.store().resource_version();
  absl::StatusOr<RbacApplyResult> result = ApplyRbac(*cluster_.Client(), RbacOptions());
  EXPECT_EQ(result.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(Message(result.status()), HasSubstr("does not exist"));
  EXPECT_EQ(cluster_.store().resource_version(), version);
}

TEST_F(ApplyRbacTest, ForbiddenIsReported) {
  cluster_.store().Forbid("handoff-operator", "create", "roles");
  absl::StatusOr<RbacApplyResult> result = ApplyRbac(*cluster_.Client(), RbacOptions());
  EXPECT_EQ(result.status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(Message(result.status()),
              HasSubstr("forbidden: handoff-operator cannot create roles.rbac.authorization.k8s.io "
                        "system::leader-locking-cloud-controller-manager in kube-system"));
}

}  // namespace
}  // namespace handoff::kube
