// The API cases handoff relies on, run against the fake API server (rehearsal/fakeapi) and
// against the real kube-apiserver 1.26 alike: the same requests must get the same status codes,
// the same metav1.Status bodies and the same semantics (optimistic concurrency, label selectors,
// authorization). Where the fake cannot answer as the real server does, the difference is listed
// in rehearsal/fakeapi/README.md instead of a case here. Cases that need the fake's clock or
// its fault injection stay in tests/coordinator/.
#include <atomic>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/pki/pki.h"
#include "common/system/clock.h"
#include "common/kube/client.h"
#include "common/kube/http_transport.h"
#include "common/kube/resource.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "rehearsal/fakeapi/api_store.h"
#include "tests/coordinator/fake_cluster.h"
#include "tests/real/real_cluster.h"
#include "tests/support/fake_clock.h"

namespace handoff {
namespace {

using kube::Json;
using ::testing::HasSubstr;
using ::testing::UnorderedElementsAreArray;
// Key order does not matter when comparing bodies.
using PlainJson = nlohmann::json;

// Who the cases talk to: an administrator (group system:masters) and users with no rights.
class Backend {
 public:
  virtual ~Backend() = default;
  virtual kube::ClusterCredentials Admin() = 0;
  // Authenticated by a client certificate for `user`, no groups, no RBAC bindings.
  virtual kube::ClusterCredentials As(const std::string& user) = 0;
};

// The fake, authorising as the real server's RBAC does for these users: system:masters may do
// everything, anyone else nothing.
class FakeBackend : public Backend {
 public:
  FakeBackend() : cluster_(/*seed=*/false) {
    cluster_.store().SetAuthorizer([](const fakeapi::Access& access) {
      for (const std::string& group : access.user.groups) {
        if (group == "system:masters") return true;
      }
      return false;
    });
  }
  kube::ClusterCredentials Admin() override { return cluster_.Credentials(); }
  kube::ClusterCredentials As(const std::string& user) override {
    const pki::KeyPair test_ca{testing::ReadTestdata("kube-tls/ca.crt"),
                               testing::ReadTestdata("kube-tls/ca.key")};
    pki::CertificateRequest request;
    request.common_name = user;
    request.client = true;
    absl::StatusOr<pki::KeyPair> pair = pki::IssueCertificate(test_ca, request, absl::Now());
    EXPECT_TRUE(pair.ok()) << pair.status();
    kube::ClusterCredentials credentials = cluster_.Credentials();
    credentials.client_cert_pem = pair.ok() ? pair->certificate_pem : "";
    credentials.client_key_pem = pair.ok() ? pair->private_key_pem : "";
    credentials.identity = user;
    return credentials;
  }

 private:
  testing::FakeCluster cluster_;
};

class RealBackend : public Backend {
 public:
  explicit RealBackend(sandbox::real::RealControlPlane& plane) : plane_(plane) {}
  kube::ClusterCredentials Admin() override { return plane_.AdminCredentials(); }
  kube::ClusterCredentials As(const std::string& user) override {
    absl::StatusOr<pki::KeyPair> pair = plane_.IssueClient(user);
    EXPECT_TRUE(pair.ok()) << pair.status();
    return plane_.Credentials(pair.ok() ? *pair : pki::KeyPair{});
  }

 private:
  sandbox::real::RealControlPlane& plane_;
};

struct Answer {
  int status = 0;
  PlainJson body;
};

class ApiConformanceTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (GetParam() == "fake") {
      backend_ = std::make_unique<FakeBackend>();
    } else {
      HANDOFF_REAL_CLUSTER_OR_SKIP(plane);
      backend_ = std::make_unique<RealBackend>(plane);
    }
    admin_ = Client(backend_->Admin());
  }

  std::unique_ptr<kube::KubeClient> Client(const kube::ClusterCredentials& credentials) {
    absl::StatusOr<std::unique_ptr<kube::HttpTransport>> transport =
        kube::NewCurlTransport(credentials);
    EXPECT_TRUE(transport.ok()) << transport.status();
    kube::ClientOptions options = kube::ClientOptionsFor(credentials);
    options.max_retries = 0;
    return std::make_unique<kube::KubeClient>(*std::move(transport), clock_, options);
  }

  // One request as the server answers it, body parsed.
  Answer Send(const kube::ClusterCredentials& credentials, const std::string& method,
              const std::string& path, const std::string& body = "") {
    absl::StatusOr<std::unique_ptr<kube::HttpTransport>> transport =
        kube::NewCurlTransport(credentials);
    EXPECT_TRUE(transport.ok()) << transport.status();
    if (!transport.ok()) return {};
    kube::HttpRequest request;
    request.method = method;
    request.path = path;
    request.body = body;
    request.timeout = absl::Seconds(10);
    absl::StatusOr<kube::HttpResponse> response = (*transport)->Send(request);
    EXPECT_TRUE(response.ok()) << response.status();
    if (!response.ok()) return {};
    Answer answer;
    answer.status = response->status;
    answer.body = PlainJson::parse(response->body, nullptr, /*allow_exceptions=*/false);
    return answer;
  }

  // A name no other case (or earlier run against the same server) uses.
  static std::string UniqueName(const std::string& stem) {
    static std::atomic<int> counter{0};
    return absl::StrCat("conformance-", stem, "-", ++counter);
  }

  static Json ConfigMap(const std::string& name, const Json& labels = Json::object()) {
    Json object = Json::object();
    object["apiVersion"] = "v1";
    object["kind"] = "ConfigMap";
    object["metadata"] = {{"name", name}, {"namespace", "kube-system"}};
    if (!labels.empty()) object["metadata"]["labels"] = labels;
    object["data"] = {{"key", "value"}};
    return object;
  }

  static Json Lease(const std::string& name, const std::string& holder) {
    Json object = Json::object();
    object["apiVersion"] = "coordination.k8s.io/v1";
    object["kind"] = "Lease";
    object["metadata"] = {{"name", name}, {"namespace", "kube-system"}};
    object["spec"] = {{"holderIdentity", holder},
                      {"leaseDurationSeconds", 15},
                      {"acquireTime", "2026-01-02T03:04:05.000000Z"},
                      {"renewTime", "2026-01-02T03:04:05.000000Z"},
                      {"leaseTransitions", 0}};
    return object;
  }

  // The metav1.Status body of an error, as apimachinery's errors package writes it.
  static PlainJson Failure(int code, const std::string& reason, const std::string& message,
                           const PlainJson& details = nullptr) {
    PlainJson body = {{"kind", "Status"},   {"apiVersion", "v1"}, {"metadata", PlainJson::object()},
                      {"status", "Failure"}, {"message", message}, {"reason", reason},
                      {"code", code}};
    if (!details.is_null()) body["details"] = details;
    return body;
  }

  static std::string ConfigMapPath(const std::string& name = "") {
    return name.empty() ? "/api/v1/namespaces/kube-system/configmaps"
                        : "/api/v1/namespaces/kube-system/configmaps/" + name;
  }

  FakeClock clock_;
  std::unique_ptr<Backend> backend_;
  std::unique_ptr<kube::KubeClient> admin_;
};

TEST_P(ApiConformanceTest, CreateGetUpdateDelete) {
  const std::string name = UniqueName("crud");
  absl::StatusOr<Json> created = admin_->Create(kube::kConfigMaps, "kube-system", ConfigMap(name));
  ASSERT_TRUE(created.ok()) << created.status();
  EXPECT_EQ(kube::ObjectNamespace(*created), "kube-system");
  EXPECT_FALSE(kube::StringAt(*created, {"metadata", "uid"}).empty());
  EXPECT_FALSE(kube::StringAt(*created, {"metadata", "creationTimestamp"}).empty());
  const std::string version = kube::ResourceVersion(*created);
  ASSERT_FALSE(version.empty());

  const kube::ObjectRef ref{&kube::kConfigMaps, "kube-system", name};
  absl::StatusOr<Json> got = admin_->Get(ref);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(kube::StringAt(*got, {"kind"}), "ConfigMap");
  EXPECT_EQ(kube::StringAt(*got, {"apiVersion"}), "v1");
  EXPECT_EQ(kube::ResourceVersion(*got), version);
  EXPECT_EQ(kube::StringAt(*got, {"metadata", "uid"}),
            kube::StringAt(*created, {"metadata", "uid"}));
  EXPECT_EQ(kube::StringAt(*got, {"data", "key"}), "value");

  Json changed = *got;
  changed["data"]["key"] = "changed";
  absl::StatusOr<Json> updated = admin_->Update(ref, changed);
  ASSERT_TRUE(updated.ok()) << updated.status();
  EXPECT_NE(kube::ResourceVersion(*updated), version);
  EXPECT_EQ(kube::StringAt(*updated, {"data", "key"}), "changed");
  EXPECT_EQ(kube::StringAt(*updated, {"metadata", "uid"}),
            kube::StringAt(*created, {"metadata", "uid"}));
  EXPECT_EQ(kube::StringAt(*updated, {"metadata", "creationTimestamp"}),
            kube::StringAt(*created, {"metadata", "creationTimestamp"}));

  ASSERT_TRUE(admin_->Delete(ref).ok());
  EXPECT_TRUE(absl::IsNotFound(admin_->Get(ref).status()));
}

TEST_P(ApiConformanceTest, DeleteAnswersWithASuccessStatus) {
  const std::string name = UniqueName("delete");
  absl::StatusOr<Json> created = admin_->Create(kube::kConfigMaps, "kube-system", ConfigMap(name));
  ASSERT_TRUE(created.ok()) << created.status();
  Answer answer = Send(backend_->Admin(), "DELETE", ConfigMapPath(name));
  EXPECT_EQ(answer.status, 200);
  EXPECT_EQ(answer.body, PlainJson({{"kind", "Status"},
                                    {"apiVersion", "v1"},
                                    {"metadata", PlainJson::object()},
                                    {"status", "Success"},
                                    {"details",
                                     {{"name", name},
                                      {"kind", "configmaps"},
                                      {"uid", kube::StringAt(*created, {"metadata", "uid"})}}}}));
  Answer again = Send(backend_->Admin(), "DELETE", ConfigMapPath(name));
  EXPECT_EQ(again.status, 404);
}

TEST_P(ApiConformanceTest, MissingObjectIs404WithTheStatusBody) {
  const std::string name = UniqueName("missing");
  Answer config_map = Send(backend_->Admin(), "GET", ConfigMapPath(name));
  EXPECT_EQ(config_map.status, 404);
  EXPECT_EQ(config_map.body,
            Failure(404, "NotFound", absl::StrCat("configmaps \"", name, "\" not found"),
                    {{"name", name}, {"kind", "configmaps"}}));
  Answer lease = Send(backend_->Admin(), "GET",
                      "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/" + name);
  EXPECT_EQ(lease.status, 404);
  EXPECT_EQ(lease.body,
            Failure(404, "NotFound",
                    absl::StrCat("leases.coordination.k8s.io \"", name, "\" not found"),
                    {{"name", name}, {"group", "coordination.k8s.io"}, {"kind", "leases"}}));
  // A resource the server does not serve at all.
  Answer unknown = Send(backend_->Admin(), "GET", "/api/v1/namespaces/kube-system/widgets");
  EXPECT_EQ(unknown.status, 404);
  EXPECT_EQ(unknown.body, Failure(404, "NotFound", "the server could not find the requested resource",
                                  PlainJson::object()));
  // Updating a missing ConfigMap does not create it.
  Answer update = Send(backend_->Admin(), "PUT", ConfigMapPath(name), ConfigMap(name).dump());
  EXPECT_EQ(update.status, 404);
  EXPECT_EQ(update.body, config_map.body);
  // Through the client: NotFound, naming the object.
  absl::StatusOr<Json> got = admin_->Get({&kube::kConfigMaps, "kube-system", name});
  EXPECT_TRUE(absl::IsNotFound(got.status())) << got.status();
  EXPECT_THAT(std::string(got.status().message()), HasSubstr(name));
}

TEST_P(ApiConformanceTest, CreatingAnExistingObjectIs409AlreadyExists) {
  const std::string name = UniqueName("exists");
  ASSERT_TRUE(admin_->Create(kube::kConfigMaps, "kube-system", ConfigMap(name)).ok());
  Answer answer = Send(backend_->Admin(), "POST", ConfigMapPath(), ConfigMap(name).dump());
  EXPECT_EQ(answer.status, 409);
  EXPECT_EQ(answer.body,
            Failure(409, "AlreadyExists", absl::StrCat("configmaps \"", name, "\" already exists"),
                    {{"name", name}, {"kind", "configmaps"}}));
  EXPECT_TRUE(absl::IsAlreadyExists(
      admin_->Create(kube::kConfigMaps, "kube-system", ConfigMap(name)).status()));
}

TEST_P(ApiConformanceTest, StaleResourceVersionIs409Conflict) {
  const std::string name = UniqueName("stale");
  absl::StatusOr<Json> created = admin_->Create(kube::kConfigMaps, "kube-system", ConfigMap(name));
  ASSERT_TRUE(created.ok()) << created.status();
  const kube::ObjectRef ref{&kube::kConfigMaps, "kube-system", name};
  Json first = *created;
  first["data"]["key"] = "first";
  ASSERT_TRUE(admin_->Update(ref, first).ok());

  Json second = *created;  // still the version read before the first write
  second["data"]["key"] = "second";
  Answer answer = Send(backend_->Admin(), "PUT", ConfigMapPath(name), second.dump());
  EXPECT_EQ(answer.status, 409);
  EXPECT_EQ(answer.body,
            Failure(409, "Conflict",
                    absl::StrCat("Operation cannot be fulfilled on configmaps \"", name,
                                 "\": the object has been modified; please apply your changes to "
                                 "the latest version and try again"),
                    {{"name", name}, {"kind", "configmaps"}}));
  absl::StatusOr<Json> refused = admin_->Update(ref, second);
  EXPECT_TRUE(absl::IsAborted(refused.status())) << refused.status();
  absl::StatusOr<Json> now = admin_->Get(ref);
  ASSERT_TRUE(now.ok());
  EXPECT_EQ(kube::StringAt(*now, {"data", "key"}), "first");

  // Without a resourceVersion the update is unconditional.
  Json blind = second;
  blind["metadata"].erase("resourceVersion");
  absl::StatusOr<Json> written = admin_->Update(ref, blind);
  ASSERT_TRUE(written.ok()) << written.status();
  EXPECT_EQ(kube::StringAt(*written, {"data", "key"}), "second");
}

TEST_P(ApiConformanceTest, MutateReadsModifiesAndWritesOnce) {
  const std::string name = UniqueName("mutate");
  ASSERT_TRUE(admin_->Create(kube::kConfigMaps, "kube-system", ConfigMap(name)).ok());
  const kube::ObjectRef ref{&kube::kConfigMaps, "kube-system", name};
  absl::StatusOr<kube::MutateResult> result =
      admin_->Mutate(ref, [](Json& object) -> absl::StatusOr<bool> {
        object["data"]["added"] = "yes";
        return true;
      });
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_TRUE(result->changed);
  EXPECT_EQ(result->conflicts, 0);
  EXPECT_EQ(kube::StringAt(result->object, {"data", "added"}), "yes");
  absl::StatusOr<kube::MutateResult> unchanged =
      admin_->Mutate(ref, [](Json&) -> absl::StatusOr<bool> { return false; });
  ASSERT_TRUE(unchanged.ok());
  EXPECT_FALSE(unchanged->changed);
  EXPECT_EQ(kube::ResourceVersion(unchanged->object), kube::ResourceVersion(result->object));
}

TEST_P(ApiConformanceTest, NameThatDiffersFromTheUrlIs400) {
  const std::string name = UniqueName("url");
  absl::StatusOr<Json> created = admin_->Create(kube::kConfigMaps, "kube-system", ConfigMap(name));
  ASSERT_TRUE(created.ok());
  Json other = *created;
  other["metadata"]["name"] = name + "-other";
  Answer answer = Send(backend_->Admin(), "PUT", ConfigMapPath(name), other.dump());
  EXPECT_EQ(answer.status, 400);
  EXPECT_EQ(answer.body,
            Failure(400, "BadRequest",
                    absl::StrCat("the name of the object (", name,
                                 "-other) does not match the name on the URL (", name, ")")));
}

TEST_P(ApiConformanceTest, ObjectWithoutNameIs422Invalid) {
  Json nameless = ConfigMap("");
  nameless["metadata"].erase("name");
  Answer answer = Send(backend_->Admin(), "POST", ConfigMapPath(), nameless.dump());
  EXPECT_EQ(answer.status, 422);
  EXPECT_EQ(answer.body,
            Failure(422, "Invalid",
                    "ConfigMap \"\" is invalid: metadata.name: Required value: name or "
                    "generateName is required",
                    {{"kind", "ConfigMap"},
                     {"causes", PlainJson::array({{{"reason", "FieldValueRequired"},
                                                   {"message", "Required value: name or "
                                                               "generateName is required"},
                                                   {"field", "metadata.name"}}})}}));
  absl::StatusOr<Json> refused = admin_->Create(kube::kConfigMaps, "kube-system", nameless);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument) << refused.status();
}

TEST_P(ApiConformanceTest, UnauthorisedUserIs403WithTheRbacMessage) {
  const std::string name = UniqueName("forbidden");
  ASSERT_TRUE(admin_->Create(kube::kConfigMaps, "kube-system", ConfigMap(name)).ok());
  const std::string user = "conformance-nobody";
  const kube::ClusterCredentials nobody = backend_->As(user);

  Answer get = Send(nobody, "GET", ConfigMapPath(name));
  EXPECT_EQ(get.status, 403);
  EXPECT_EQ(get.body, Failure(403, "Forbidden",
                              absl::StrCat("configmaps \"", name, "\" is forbidden: User \"", user,
                                           "\" cannot get resource \"configmaps\" in API group "
                                           "\"\" in the namespace \"kube-system\""),
                              {{"name", name}, {"kind", "configmaps"}}));
  Answer create = Send(nobody, "POST", ConfigMapPath(), ConfigMap(name + "-new").dump());
  EXPECT_EQ(create.status, 403);
  EXPECT_EQ(create.body, Failure(403, "Forbidden",
                                 absl::StrCat("configmaps is forbidden: User \"", user,
                                              "\" cannot create resource \"configmaps\" in API "
                                              "group \"\" in the namespace \"kube-system\""),
                                 {{"kind", "configmaps"}}));
  Answer nodes = Send(nobody, "GET", "/api/v1/nodes");
  EXPECT_EQ(nodes.status, 403);
  EXPECT_EQ(nodes.body, Failure(403, "Forbidden",
                                absl::StrCat("nodes is forbidden: User \"", user,
                                             "\" cannot list resource \"nodes\" in API group "
                                             "\"\" at the cluster scope"),
                                {{"kind", "nodes"}}));
  Answer lease = Send(nobody, "PUT",
                      "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/" + name,
                      Lease(name, "x").dump());
  EXPECT_EQ(lease.status, 403);
  EXPECT_EQ(lease.body,
            Failure(403, "Forbidden",
                    absl::StrCat("leases.coordination.k8s.io \"", name, "\" is forbidden: User \"",
                                 user,
                                 "\" cannot update resource \"leases\" in API group "
                                 "\"coordination.k8s.io\" in the namespace \"kube-system\""),
                    {{"name", name}, {"group", "coordination.k8s.io"}, {"kind", "leases"}}));

  // Without a certificate: system:anonymous, also refused.
  kube::ClusterCredentials anonymous = backend_->Admin();
  anonymous.client_cert_pem.clear();
  anonymous.client_key_pem.clear();
  Answer anonymous_get = Send(anonymous, "GET", ConfigMapPath(name));
  EXPECT_EQ(anonymous_get.status, 403);
  EXPECT_THAT(anonymous_get.body["message"].get<std::string>(),
              HasSubstr("User \"system:anonymous\" cannot get"));

  // Through the client: PermissionDenied naming the user.
  absl::StatusOr<Json> refused = Client(nobody)->Get({&kube::kConfigMaps, "kube-system", name});
  EXPECT_TRUE(absl::IsPermissionDenied(refused.status())) << refused.status();
  EXPECT_THAT(std::string(refused.status().message()), HasSubstr(user));
}

TEST_P(ApiConformanceTest, ListFiltersByLabelSelector) {
  const std::string run = UniqueName("labels");
  const std::vector<std::pair<std::string, Json>> objects = {
      {run + "-a", {{"run", run}, {"tier", "a"}}},
      {run + "-b", {{"run", run}, {"tier", "b"}}},
      {run + "-none", {{"run", run}}},
      {run + "-other", {{"run", run + "-x"}, {"tier", "a"}}},
  };
  for (const auto& [name, labels] : objects) {
    ASSERT_TRUE(admin_->Create(kube::kConfigMaps, "kube-system", ConfigMap(name, labels)).ok());
  }
  auto names = [&](const std::string& selector) {
    absl::StatusOr<std::vector<Json>> items =
        admin_->List(kube::kConfigMaps, "kube-system", selector);
    EXPECT_TRUE(items.ok()) << selector << ": " << items.status();
    std::vector<std::string> found;
    if (items.ok()) {
      for (const Json& item : *items) found.push_back(kube::ObjectName(item));
    }
    return found;
  };
  const std::string same = "run=" + run;
  EXPECT_THAT(names(same + ",tier=a"), UnorderedElementsAreArray({run + "-a"}));
  EXPECT_THAT(names(same + ",tier==b"), UnorderedElementsAreArray({run + "-b"}));
  // != also matches objects without the label.
  EXPECT_THAT(names(same + ",tier!=a"), UnorderedElementsAreArray({run + "-b", run + "-none"}));
  EXPECT_THAT(names(same + ",tier"), UnorderedElementsAreArray({run + "-a", run + "-b"}));
  EXPECT_THAT(names(same + ",!tier"), UnorderedElementsAreArray({run + "-none"}));
  EXPECT_THAT(names(same), UnorderedElementsAreArray({run + "-a", run + "-b", run + "-none"}));

  // A list carries its kind and the collection's resourceVersion; items do not repeat the kind.
  Answer list = Send(backend_->Admin(), "GET",
                     ConfigMapPath() + "?labelSelector=" + kube::EscapeQueryValue(same));
  EXPECT_EQ(list.status, 200);
  EXPECT_EQ(list.body["kind"], "ConfigMapList");
  EXPECT_EQ(list.body["apiVersion"], "v1");
  EXPECT_FALSE(list.body["metadata"]["resourceVersion"].get<std::string>().empty());
  ASSERT_EQ(list.body["items"].size(), 3u);
  EXPECT_FALSE(list.body["items"][0].contains("kind"));
}

TEST_P(ApiConformanceTest, LeaseAcquireRenewAndLoseARace) {
  const std::string name = UniqueName("lease");
  const kube::ObjectRef ref{&kube::kLeases, "kube-system", name};
  // Candidate A acquires by creating the lease; B's create then fails: it exists.
  absl::StatusOr<Json> acquired = admin_->Create(kube::kLeases, "kube-system", Lease(name, "a"));
  ASSERT_TRUE(acquired.ok()) << acquired.status();
  EXPECT_TRUE(absl::IsAlreadyExists(
      admin_->Create(kube::kLeases, "kube-system", Lease(name, "b")).status()));

  // Both read it; A renews first; B's takeover, based on what it read, is refused.
  absl::StatusOr<Json> read_by_b = admin_->Get(ref);
  ASSERT_TRUE(read_by_b.ok());
  Json renewal = *acquired;
  renewal["spec"]["renewTime"] = "2026-01-02T03:04:15.000000Z";
  absl::StatusOr<Json> renewed = admin_->Update(ref, renewal);
  ASSERT_TRUE(renewed.ok()) << renewed.status();
  EXPECT_EQ(kube::StringAt(*renewed, {"spec", "renewTime"}), "2026-01-02T03:04:15.000000Z");
  Json takeover = *read_by_b;
  takeover["spec"]["holderIdentity"] = "b";
  takeover["spec"]["leaseTransitions"] = 1;
  EXPECT_TRUE(absl::IsAborted(admin_->Update(ref, takeover).status()));
  absl::StatusOr<Json> now = admin_->Get(ref);
  ASSERT_TRUE(now.ok());
  EXPECT_EQ(kube::StringAt(*now, {"spec", "holderIdentity"}), "a");
  EXPECT_EQ((*now)["spec"]["leaseDurationSeconds"], 15);
}

TEST_P(ApiConformanceTest, LeaseTimesMustBeMicroTime) {
  // metav1.MicroTime parses exactly six fractional digits (RFC3339Micro); client-go always
  // writes them. Anything else is refused before the object is stored.
  const std::string name = UniqueName("microtime");
  const std::string path = "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases";
  for (const std::string& bad : {std::string("2026-01-02T03:04:05Z"),
                                 std::string("2026-01-02T03:04:05.5Z")}) {
    Json lease = Lease(name, "a");
    lease["spec"]["renewTime"] = bad;
    Answer answer = Send(backend_->Admin(), "POST", path, lease.dump());
    EXPECT_EQ(answer.status, 400) << bad;
    EXPECT_EQ(answer.body,
              Failure(400, "BadRequest",
                      absl::StrCat("Lease in version \"v1\" cannot be handled as a Lease: parsing "
                                   "time \"",
                                   bad, "\" as \"2006-01-02T15:04:05.000000Z07:00\": cannot parse \"",
                                   bad.substr(19), "\" as \".000000\"")))
        << bad;
  }
  Json lease = Lease(name, "a");
  lease["spec"]["renewTime"] = "2026-01-02T03:04:05.500000Z";
  absl::StatusOr<Json> created = admin_->Create(kube::kLeases, "kube-system", lease);
  ASSERT_TRUE(created.ok()) << created.status();
  EXPECT_EQ(kube::StringAt(*created, {"spec", "renewTime"}), "2026-01-02T03:04:05.500000Z");
  EXPECT_EQ(kube::StringAt(*created, {"spec", "acquireTime"}), "2026-01-02T03:04:05.000000Z");
}

TEST_P(ApiConformanceTest, NodeStatusIsKeptOnCreate) {
  const std::string name = UniqueName("node");
  Json node = Json::object();
  node["apiVersion"] = "v1";
  node["kind"] = "Node";
  node["metadata"] = {{"name", name},
                      {"labels", {{"node-role.kubernetes.io/control-plane", ""}}}};
  node["spec"] = {{"providerID", "aws:///us-east-1a/i-0123456789abcdef0"}};
  node["status"] = {
      {"addresses", Json::array({Json{{"type", "InternalIP"}, {"address", "10.0.1.5"}}})}};
  absl::StatusOr<Json> created = admin_->Create(kube::kNodes, "", node);
  ASSERT_TRUE(created.ok()) << created.status();
  absl::StatusOr<Json> got = admin_->Get({&kube::kNodes, "", name});
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(kube::StringAt(*got, {"spec", "providerID"}), "aws:///us-east-1a/i-0123456789abcdef0");
  EXPECT_EQ((*got)["status"]["addresses"][0]["address"], "10.0.1.5");
  ASSERT_TRUE(admin_->Delete({&kube::kNodes, "", name}).ok());
}

// SubjectAccessReview, as the preflight's rbac check asks it (coordinator/preflight): answered by
// the RBAC authorizer from a Role and RoleBinding, with the same reason, and never stored.
TEST_P(ApiConformanceTest, SubjectAccessReviewAnswersFromTheRoleBindings) {
  const std::string user = UniqueName("reviewed");
  const std::string role = UniqueName("lease-user");
  const std::string lease = UniqueName("lease");
  Json role_object = Json::object();
  role_object["apiVersion"] = "rbac.authorization.k8s.io/v1";
  role_object["kind"] = "Role";
  role_object["metadata"] = {{"name", role}, {"namespace", "kube-system"}};
  role_object["rules"] = Json::array({Json{{"apiGroups", {"coordination.k8s.io"}},
                                           {"resources", {"leases"}},
                                           {"resourceNames", {lease}},
                                           {"verbs", {"get", "update"}}}});
  ASSERT_TRUE(admin_->Create(kube::kRoles, "kube-system", role_object).ok());
  Json binding = Json::object();
  binding["apiVersion"] = "rbac.authorization.k8s.io/v1";
  binding["kind"] = "RoleBinding";
  binding["metadata"] = {{"name", role}, {"namespace", "kube-system"}};
  binding["subjects"] = Json::array(
      {Json{{"kind", "User"}, {"apiGroup", "rbac.authorization.k8s.io"}, {"name", user}}});
  binding["roleRef"] = {
      {"apiGroup", "rbac.authorization.k8s.io"}, {"kind", "Role"}, {"name", role}};
  ASSERT_TRUE(admin_->Create(kube::kRoleBindings, "kube-system", binding).ok());

  const std::string path = "/apis/authorization.k8s.io/v1/subjectaccessreviews";
  auto review = [&](const std::string& verb, const std::string& name) {
    PlainJson body = {{"apiVersion", "authorization.k8s.io/v1"},
                      {"kind", "SubjectAccessReview"},
                      {"spec",
                       {{"user", user},
                        {"groups", {"system:authenticated"}},
                        {"resourceAttributes",
                         {{"namespace", "kube-system"},
                          {"verb", verb},
                          {"group", "coordination.k8s.io"},
                          {"resource", "leases"},
                          {"name", name}}}}}};
    return Send(backend_->Admin(), "POST", path, body.dump());
  };
  // The real authorizer reads the bindings through an informer: await the new one.
  Answer allowed = review("get", lease);
  const absl::Time deadline = absl::Now() + absl::Seconds(20);
  while (allowed.body["status"].value("allowed", false) == false && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(20));
    allowed = review("get", lease);
  }
  EXPECT_EQ(allowed.status, 201);
  EXPECT_EQ(allowed.body["status"],
            PlainJson({{"allowed", true},
                       {"reason", absl::StrCat("RBAC: allowed by RoleBinding \"", role,
                                               "/kube-system\" of Role \"", role, "\" to User \"",
                                               user, "\"")}}));
  EXPECT_EQ(allowed.body["spec"]["user"], user);

  Answer other_verb = review("delete", lease);
  EXPECT_EQ(other_verb.status, 201);
  EXPECT_EQ(other_verb.body["status"], PlainJson({{"allowed", false}}));
  Answer other_lease = review("get", lease + "-other");
  EXPECT_EQ(other_lease.body["status"], PlainJson({{"allowed", false}}));

  // Reviews are answered, not kept.
  Answer list = Send(backend_->Admin(), "GET", path);
  EXPECT_EQ(list.status, 405);
  EXPECT_EQ(list.body["reason"], "MethodNotAllowed");
}

INSTANTIATE_TEST_SUITE_P(FakeAndReal, ApiConformanceTest, ::testing::Values("fake", "real"),
                         [](const ::testing::TestParamInfo<std::string>& param) {
                           return param.param;
                         });

}  // namespace
}  // namespace handoff
