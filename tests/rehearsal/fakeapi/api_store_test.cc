// The fake API server's behaviour, request by request, without HTTP.
#include "rehearsal/fakeapi/api_store.h"

#include "common/base/strings.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/coordinator/fake_cluster.h"
#include "tests/support/fake_clock.h"

namespace handoff::fakeapi {
namespace {

using ::handoff::testing::ReadTestdata;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr char kRolePath[] =
    "/apis/rbac.authorization.k8s.io/v1/namespaces/kube-system/roles/"
    "system::leader-locking-kube-controller-manager";

class ApiStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(store_.Seed(ReadTestdata("cluster/kubeadm.yaml"), "kubeadm.yaml").ok());
  }

  ApiResponse Do(const std::string& method, const std::string& path, const std::string& body = "",
                 std::optional<UserInfo> user = UserInfo{"admin", {"system:masters"}}) {
    ApiRequest request;
    request.method = method;
    const size_t question = path.find('?');
    request.path = path.substr(0, question);
    if (question != std::string::npos) {
      const std::string query = path.substr(question + 1);
      const size_t equals = query.find('=');
      request.query[query.substr(0, equals)] = query.substr(equals + 1);
    }
    request.body = body;
    request.user = std::move(user);
    return store_.Handle(request);
  }

  static Json Body(const ApiResponse& response) { return Json::parse(response.body); }

  FakeClock clock_;
  ApiStore store_{clock_};
};

TEST_F(ApiStoreTest, SeedGivesEveryObjectAResourceVersion) {
  EXPECT_EQ(store_.resource_version(), 1012);
  ApiResponse response = Do("GET", kRolePath);
  EXPECT_EQ(response.status, 200);
  const Json role = Body(response);
  EXPECT_EQ(role["kind"], "Role");
  EXPECT_EQ(role["apiVersion"], "rbac.authorization.k8s.io/v1");
  EXPECT_EQ(role["metadata"]["resourceVersion"], "1001");
  EXPECT_EQ(role["metadata"]["uid"], "5f0c2d6e-8f6b-4a53-9d0e-2b1a7c3e9f01");
  EXPECT_EQ(role["metadata"]["annotations"]["rbac.authorization.kubernetes.io/autoupdate"], "true");
}

TEST_F(ApiStoreTest, ListsWithLabelSelectors) {
  auto names = [this](const std::string& path) {
    std::vector<std::string> out;
    const Json list = Body(Do("GET", path));
    EXPECT_EQ(list["kind"], "NodeList");
    for (const Json& item : list["items"]) {
      EXPECT_FALSE(item.contains("kind"));  // as the real server lists them
      out.push_back(item["metadata"]["name"]);
    }
    return out;
  };
  EXPECT_EQ(names("/api/v1/nodes").size(), 5u);
  EXPECT_THAT(names("/api/v1/nodes?labelSelector=node-role.kubernetes.io/control-plane"),
              ElementsAre("ip-10-0-1-10.ec2.internal", "ip-10-0-1-11.ec2.internal",
                          "ip-10-0-1-12.ec2.internal"));
  EXPECT_THAT(names("/api/v1/nodes?labelSelector=!node-role.kubernetes.io/control-plane,"
                    "topology.kubernetes.io/zone=us-east-1b"),
              ElementsAre("ip-10-0-2-21.ec2.internal"));
  EXPECT_THAT(names("/api/v1/nodes?labelSelector=topology.kubernetes.io/zone!=us-east-1a,"
                    "node-role.kubernetes.io/control-plane"),
              ElementsAre("ip-10-0-1-11.ec2.internal", "ip-10-0-1-12.ec2.internal"));
  EXPECT_EQ(Do("GET", "/api/v1/nodes?labelSelector=zone in (a,b)").status, 400);
  // Namespaced lists: one namespace, or all.
  EXPECT_EQ(Body(Do("GET", "/api/v1/namespaces/kube-system/pods"))["items"].size(), 2u);
  EXPECT_EQ(Body(Do("GET", "/api/v1/namespaces/default/pods"))["items"].size(), 0u);
  EXPECT_EQ(Body(Do("GET", "/api/v1/pods"))["items"].size(), 2u);
}

TEST_F(ApiStoreTest, CreateUpdateConflictDelete) {
  const std::string leases = "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases";
  ApiResponse created =
      Do("POST", leases, R"({"metadata":{"name":"m"},"spec":{"holderIdentity":"a_1"}})");
  EXPECT_EQ(created.status, 201);
  Json lease = Body(created);
  EXPECT_EQ(lease["metadata"]["namespace"], "kube-system");
  EXPECT_EQ(lease["metadata"]["resourceVersion"], "1013");
  EXPECT_EQ(lease["metadata"]["creationTimestamp"], "2023-11-14T22:13:20Z");
  EXPECT_EQ(lease["kind"], "Lease");

  ApiResponse again = Do("POST", leases, R"({"metadata":{"name":"m"}})");
  EXPECT_EQ(again.status, 409);
  EXPECT_EQ(
      again.body,
      R"({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",)"
      R"("message":"leases.coordination.k8s.io \"m\" already exists","reason":"AlreadyExists",)"
      R"("details":{"name":"m","group":"coordination.k8s.io","kind":"leases"},"code":409})");

  lease["spec"]["holderIdentity"] = "b_2";
  ApiResponse updated = Do("PUT", leases + "/m", lease.dump());
  EXPECT_EQ(updated.status, 200);
  EXPECT_EQ(Body(updated)["metadata"]["resourceVersion"], "1014");
  EXPECT_EQ(Body(updated)["metadata"]["uid"], lease["metadata"]["uid"]);

  // `lease` still carries 1013: stale.
  ApiResponse stale = Do("PUT", leases + "/m", lease.dump());
  EXPECT_EQ(stale.status, 409);
  EXPECT_EQ(stale.body,
            R"({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":)"
            R"("Operation cannot be fulfilled on leases.coordination.k8s.io \"m\": the object has )"
            R"(been modified; please apply your changes to the latest version and try again",)"
            R"("reason":"Conflict","details":{"name":"m","group":"coordination.k8s.io",)"
            R"("kind":"leases"},"code":409})");

  // Without a resourceVersion the update is unconditional, as for these types in kube-apiserver.
  lease["metadata"].erase("resourceVersion");
  EXPECT_EQ(Do("PUT", leases + "/m", lease.dump()).status, 200);

  EXPECT_EQ(Do("DELETE", leases + "/m").status, 200);
  ApiResponse gone = Do("GET", leases + "/m");
  EXPECT_EQ(gone.status, 404);
  EXPECT_EQ(Body(gone)["message"], "leases.coordination.k8s.io \"m\" not found");
  EXPECT_EQ(Do("PUT", leases + "/m", lease.dump()).status, 404);
  EXPECT_EQ(Do("DELETE", leases + "/m").status, 404);
}

TEST_F(ApiStoreTest, ValidationErrors) {
  const std::string roles = "/apis/rbac.authorization.k8s.io/v1/namespaces/kube-system/roles";
  ApiResponse nameless = Do("POST", roles, R"({"rules":[]})");
  EXPECT_EQ(nameless.status, 422);
  EXPECT_EQ(Body(nameless)["message"],
            "Role.rbac.authorization.k8s.io \"\" is invalid: metadata.name: Required value: name "
            "or generateName is required");
  ApiResponse renamed = Do("PUT", roles + "/a", R"({"metadata":{"name":"b"}})");
  EXPECT_EQ(renamed.status, 400);
  EXPECT_EQ(Body(renamed)["message"],
            "the name of the object (b) does not match the name on the URL (a)");
  EXPECT_EQ(Do("POST", roles, R"({"metadata":{"name":"x","namespace":"default"}})").status, 400);
  EXPECT_EQ(Do("POST", roles, "not json").status, 400);
  EXPECT_EQ(Do("POST", roles, R"({"kind":"Lease","metadata":{"name":"x"}})").status, 400);
  EXPECT_EQ(Do("GET", "/apis/apps/v1/namespaces/kube-system/deployments").status, 404);
  EXPECT_EQ(Do("GET", "/api/v1/namespaces/kube-system/nodes/x").status, 404);
  EXPECT_EQ(Body(Do("GET", "/api/v1/pods/x"))["message"],
            "the server could not find the requested resource");
  EXPECT_EQ(Do("GET", "/healthz").status, 404);
  EXPECT_EQ(Do("PATCH", kRolePath, "{}").status, 405);
  EXPECT_EQ(Do("GET", "/api/v1/nodes?watch=true").status, 405);
}

// As kube-apiserver 1.26 answers (tests/real/api_conformance_test.cc runs both).
TEST_F(ApiStoreTest, InvalidDetailsNameTheKindAndTheCause) {
  const std::string roles = "/apis/rbac.authorization.k8s.io/v1/namespaces/kube-system/roles";
  const Json details = Body(Do("POST", roles, R"({"rules":[]})"))["details"];
  EXPECT_EQ(details["group"], "rbac.authorization.k8s.io");
  EXPECT_EQ(details["kind"], "Role");
  ASSERT_EQ(details["causes"].size(), 1u);
  EXPECT_EQ(details["causes"][0]["field"], "metadata.name");
  EXPECT_EQ(details["causes"][0]["reason"], "FieldValueRequired");
  EXPECT_TRUE(Body(Do("GET", "/healthz")).contains("details"));
}

TEST_F(ApiStoreTest, LeaseTimesMustHaveSixFractionalDigits) {
  const std::string leases = "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases";
  auto lease = [](const std::string& renew_time) {
    return StrCat(R"({"metadata":{"name":"l"},"spec":{"holderIdentity":"a","renewTime":")",
                  renew_time, R"("}})");
  };
  ApiResponse seconds = Do("POST", leases, lease("2026-01-02T03:04:05Z"));
  EXPECT_EQ(seconds.status, 400);
  EXPECT_EQ(Body(seconds)["message"],
            "Lease in version \"v1\" cannot be handled as a Lease: parsing time "
            "\"2026-01-02T03:04:05Z\" as \"2006-01-02T15:04:05.000000Z07:00\": cannot parse \"Z\" "
            "as \".000000\"");
  EXPECT_EQ(Do("POST", leases, lease("2026-01-02T03:04:05.123456789Z")).status, 400);
  EXPECT_EQ(Do("POST", leases, lease("2026-01-02T03:04:05.123456Z")).status, 201);
  ApiResponse update = Do("PUT", leases + "/l", lease("2026-01-02T03:04:06.5Z"));
  EXPECT_EQ(update.status, 400);
  EXPECT_EQ(Do("PUT", leases + "/l", lease("2026-01-02T03:04:06.500000Z")).status, 200);
}

TEST_F(ApiStoreTest, DeleteNamesTheUidOfWhatWasDeleted) {
  const std::optional<Json> role =
      store_.Get(kube::kRoles, "kube-system", "system::leader-locking-kube-controller-manager");
  ASSERT_TRUE(role.has_value());
  ApiResponse deleted = Do("DELETE", kRolePath);
  EXPECT_EQ(deleted.status, 200);
  EXPECT_EQ(Body(deleted)["details"]["uid"], kube::StringAt(*role, {"metadata", "uid"}));
}

TEST_F(ApiStoreTest, ForbiddenMessagesAsTheRealServerWritesThem) {
  store_.Forbid("bob", "get", "roles");
  store_.Forbid("bob", "list", "nodes");
  store_.Forbid("*", "create", "leases");
  const UserInfo bob{"bob", {}};
  ApiResponse get = Do("GET", kRolePath, "", bob);
  EXPECT_EQ(get.status, 403);
  EXPECT_EQ(
      get.body,
      R"({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":)"
      R"("roles.rbac.authorization.k8s.io \"system::leader-locking-kube-controller-manager\" )"
      R"(is forbidden: User \"bob\" cannot get resource \"roles\" in API group )"
      R"(\"rbac.authorization.k8s.io\" in the namespace \"kube-system\"","reason":"Forbidden",)"
      R"("details":{"name":"system::leader-locking-kube-controller-manager",)"
      R"("group":"rbac.authorization.k8s.io","kind":"roles"},"code":403})");
  EXPECT_EQ(Body(Do("GET", "/api/v1/nodes", "", bob))["message"],
            "nodes is forbidden: User \"bob\" cannot list resource \"nodes\" in API group \"\" at "
            "the cluster scope");
  EXPECT_EQ(Body(Do("POST", "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases",
                    R"({"metadata":{"name":"x"}})"))["message"],
            "leases.coordination.k8s.io is forbidden: User \"admin\" cannot create resource "
            "\"leases\" in API group \"coordination.k8s.io\" in the namespace \"kube-system\"");
  // Others may still read.
  EXPECT_EQ(Do("GET", kRolePath).status, 200);
  // Anonymous requests are denied; failed authentication is 401.
  EXPECT_EQ(Do("GET", kRolePath, "", UserInfo{std::string(kAnonymousUser), {}}).status, 403);
  ApiResponse unauthorized = Do("GET", kRolePath, "", std::nullopt);
  EXPECT_EQ(unauthorized.status, 401);
  EXPECT_EQ(unauthorized.body,
            R"({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",)"
            R"("message":"Unauthorized","reason":"Unauthorized","code":401})");
}

TEST_F(ApiStoreTest, CustomAuthorizer) {
  store_.SetAuthorizer(
      [](const Access& access) { return access.verb == "get" && access.type->plural == "leases"; });
  EXPECT_EQ(Do("GET",
               "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/"
               "kube-controller-manager")
                .status,
            200);
  EXPECT_EQ(Do("GET", kRolePath).status, 403);
}

TEST_F(ApiStoreTest, InjectedConflictsLookLikeAnotherWriter) {
  store_.InjectConflicts(kube::kRoles, "kube-system",
                         "system::leader-locking-kube-controller-manager", 1,
                         [](Json& role) { role["metadata"]["labels"]["other"] = "writer"; });
  Json role = Body(Do("GET", kRolePath));
  ApiResponse first = Do("PUT", kRolePath, role.dump());
  EXPECT_EQ(first.status, 409);
  Json fresh = Body(Do("GET", kRolePath));
  EXPECT_EQ(fresh["metadata"]["labels"]["other"], "writer");
  EXPECT_NE(fresh["metadata"]["resourceVersion"], role["metadata"]["resourceVersion"]);
  EXPECT_EQ(Do("PUT", kRolePath, fresh.dump()).status, 200);
}

TEST_F(ApiStoreTest, InjectedFailuresAndTheRequestLog) {
  store_.FailNextRequests(2, 503, "GET");
  EXPECT_EQ(Do("DELETE", "/api/v1/nodes/nope").status, 404);  // not a GET: served
  ApiResponse failed = Do("GET", kRolePath);
  EXPECT_EQ(failed.status, 503);
  EXPECT_EQ(Body(failed)["reason"], "ServiceUnavailable");
  EXPECT_EQ(Do("GET", kRolePath).status, 503);
  EXPECT_EQ(Do("GET", kRolePath).status, 200);
  store_.FailNextRequests(1, 429);
  ApiResponse busy = Do("GET", kRolePath);
  EXPECT_EQ(busy.status, 429);
  EXPECT_EQ(busy.headers.at("Retry-After"), "1");
  std::vector<std::string> log;
  for (const RequestRecord& record : store_.requests()) {
    log.push_back(record.method + " " + std::to_string(record.status) + " " + record.user);
  }
  EXPECT_THAT(log, ElementsAre("DELETE 404 admin", "GET 503 admin", "GET 503 admin",
                               "GET 200 admin", "GET 429 admin"));
  store_.ClearRequests();
  EXPECT_TRUE(store_.requests().empty());
}

TEST_F(ApiStoreTest, PutAndSeedErrors) {
  EXPECT_THAT(std::string(store_
                              .Put(Json::parse(R"({"apiVersion":"v1","kind":"Secret",
      "metadata":{"name":"x"}})"))
                              .message()),
              HasSubstr("does not model v1 Secret"));
  EXPECT_THAT(std::string(store_
                              .Seed("kind: Role\napiVersion: rbac.authorization.k8s.io/v1\n"
                                    "metadata: {namespace: x}\n",
                                    "seed.yaml")
                              .message()),
              HasSubstr("seed.yaml: Role without metadata.name"));
  // Put replaces, keeping the uid.
  std::optional<Json> before = store_.Get(kube::kNodes, "", "ip-10-0-2-20.ec2.internal");
  Json node = *before;
  node["metadata"].erase("uid");
  node["spec"]["providerID"] = "";
  ASSERT_TRUE(store_.Put(node).ok());
  std::optional<Json> after = store_.Get(kube::kNodes, "", "ip-10-0-2-20.ec2.internal");
  EXPECT_EQ((*after)["metadata"]["uid"], (*before)["metadata"]["uid"]);
  EXPECT_NE((*after)["metadata"]["resourceVersion"], (*before)["metadata"]["resourceVersion"]);
  EXPECT_TRUE(store_.Remove(kube::kNodes, "", "ip-10-0-2-20.ec2.internal"));
  EXPECT_FALSE(store_.Remove(kube::kNodes, "", "ip-10-0-2-20.ec2.internal"));
}

}  // namespace
}  // namespace handoff::fakeapi
