#include "common/kube/client.h"

#include <deque>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/coordinator/fake_cluster.h"
#include "tests/support/fake_clock.h"
#include "tests/support/tcp_relay.h"

namespace handoff::kube {
namespace {

using ::handoff::testing::FakeCluster;
using ::handoff::testing::Message;
using ::handoff::testing::ReadTestdata;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

// Answers from a script and records what was asked; shares its state with the test.
struct Script {
  std::deque<absl::StatusOr<HttpResponse>> answers;
  std::vector<HttpRequest> requests;
};

class ScriptedTransport : public HttpTransport {
 public:
  explicit ScriptedTransport(Script& script) : script_(script) {}
  absl::StatusOr<HttpResponse> Send(const HttpRequest& request) override {
    script_.requests.push_back(request);
    if (script_.answers.empty()) return absl::InternalError("script exhausted");
    absl::StatusOr<HttpResponse> answer = script_.answers.front();
    script_.answers.pop_front();
    return answer;
  }

 private:
  Script& script_;
};

HttpResponse Response(int status, std::string body = "{}") {
  HttpResponse response;
  response.status = status;
  response.body = std::move(body);
  return response;
}

class ClientRetryTest : public ::testing::Test {
 protected:
  KubeClient Client() {
    ClientOptions options;
    options.kubeconfig = "/root/.kube/config";
    options.identity = "kubernetes-admin";
    return KubeClient(std::make_unique<ScriptedTransport>(script_), clock_, options);
  }
  const ObjectRef lease_{&kLeases, "kube-system", "kube-controller-manager"};
  Script script_;
  FakeClock clock_;
};

TEST_F(ClientRetryTest, RetriesServerErrorsWithBackoffOnTheClock) {
  script_.answers = {Response(500), Response(503), Response(200, R"({"metadata":{"name":"x"}})")};
  KubeClient client = Client();
  const absl::Time start = clock_.Now();
  absl::StatusOr<Json> lease = client.Get(lease_);
  ASSERT_TRUE(lease.ok()) << lease.status();
  EXPECT_EQ(client.requests_sent(), 3);
  EXPECT_EQ(clock_.Now() - start, absl::Milliseconds(500) + absl::Seconds(1));
  EXPECT_EQ(script_.requests[0].path,
            "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/kube-controller-manager");
}

TEST_F(ClientRetryTest, GivesUpAfterThreeRetries) {
  for (int i = 0; i < 10; ++i) script_.answers.push_back(Response(503, R"({"message":"down"})"));
  KubeClient client = Client();
  absl::StatusOr<Json> lease = client.Get(lease_);
  EXPECT_EQ(client.requests_sent(), 4);
  EXPECT_EQ(lease.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(Message(lease.status()),
            "get Lease kube-system/kube-controller-manager: HTTP 503 after 4 attempt(s): down");
}

TEST_F(ClientRetryTest, HonoursRetryAfterOn429EvenForCreate) {
  HttpResponse busy = Response(429);
  busy.headers["retry-after"] = "3";
  script_.answers = {busy, Response(201, R"({"metadata":{"name":"x"}})")};
  KubeClient client = Client();
  const absl::Time start = clock_.Now();
  absl::StatusOr<Json> created =
      client.Create(kLeases, "kube-system", Json::parse(R"({"metadata":{"name":"x"}})"));
  ASSERT_TRUE(created.ok()) << created.status();
  EXPECT_EQ(clock_.Now() - start, absl::Seconds(3));
  EXPECT_EQ(script_.requests[1].method, "POST");
}

TEST_F(ClientRetryTest, CreateIsNotRepeatedAfterAServerError) {
  script_.answers = {Response(500, R"({"message":"etcdserver: request timed out"})"),
                     Response(201)};
  KubeClient client = Client();
  absl::StatusOr<Json> created =
      client.Create(kLeases, "kube-system", Json::parse(R"({"metadata":{"name":"x"}})"));
  EXPECT_EQ(client.requests_sent(), 1);
  EXPECT_EQ(Message(created.status()),
            "create Lease kube-system/x: HTTP 500 after 1 attempt(s): etcdserver: request timed "
            "out");
}

TEST_F(ClientRetryTest, ConnectionErrorsAreRetriedForEveryMethod) {
  script_.answers = {absl::UnavailableError("connection refused"),
                     Response(201, R"({"metadata":{"name":"x"}})")};
  KubeClient client = Client();
  EXPECT_TRUE(
      client.Create(kLeases, "kube-system", Json::parse(R"({"metadata":{"name":"x"}})")).ok());
  EXPECT_EQ(client.requests_sent(), 2);
}

TEST_F(ClientRetryTest, TimeoutsAreRetriedOnlyWhenSafe) {
  script_.answers = {absl::DeadlineExceededError("no answer"), Response(200, "{}")};
  KubeClient client = Client();
  EXPECT_TRUE(client.Get(lease_).ok());
  script_.answers = {absl::DeadlineExceededError("no answer"), Response(201, "{}")};
  absl::StatusOr<Json> created =
      client.Create(kLeases, "kube-system", Json::parse(R"({"metadata":{"name":"x"}})"));
  EXPECT_EQ(created.status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_EQ(client.requests_sent(), 3);
}

TEST_F(ClientRetryTest, TlsProblemsAreNotRetried) {
  script_.answers = {absl::FailedPreconditionError("certificate not trusted")};
  KubeClient client = Client();
  absl::StatusOr<Json> lease = client.Get(lease_);
  EXPECT_EQ(lease.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(Message(lease.status()),
            "get Lease kube-system/kube-controller-manager: certificate not trusted");
  EXPECT_EQ(client.requests_sent(), 1);
}

TEST_F(ClientRetryTest, LabelSelectorIsEscaped) {
  script_.answers = {Response(200, R"({"items":[{"metadata":{"name":"a"}}]})")};
  KubeClient client = Client();
  absl::StatusOr<std::vector<Json>> nodes =
      client.List(kNodes, "", "node-role.kubernetes.io/control-plane");
  ASSERT_TRUE(nodes.ok());
  EXPECT_EQ(nodes->size(), 1u);
  EXPECT_EQ(script_.requests[0].path,
            "/api/v1/nodes?labelSelector=node-role.kubernetes.io%2Fcontrol-plane");
}

// Against the fake API server over TLS.
class ClientTest : public ::testing::Test {
 protected:
  FakeCluster cluster_;
};

TEST_F(ClientTest, GetListCreateUpdateDelete) {
  std::unique_ptr<KubeClient> client = cluster_.Client();
  absl::StatusOr<Json> role = client->Get(
      ObjectRef{&kRoles, "kube-system", "system::leader-locking-kube-controller-manager"});
  ASSERT_TRUE(role.ok()) << role.status();
  EXPECT_EQ(StringAt(*role, {"kind"}), "Role");

  absl::StatusOr<std::vector<Json>> control_plane =
      client->List(kNodes, "", "node-role.kubernetes.io/control-plane");
  ASSERT_TRUE(control_plane.ok()) << control_plane.status();
  EXPECT_EQ(control_plane->size(), 3u);

  Json lease = Json::parse(R"({"apiVersion":"coordination.k8s.io/v1","kind":"Lease",
      "metadata":{"name":"probe"},"spec":{"holderIdentity":"a_1"}})");
  absl::StatusOr<Json> created = client->Create(kLeases, "kube-system", lease);
  ASSERT_TRUE(created.ok()) << created.status();
  const std::string version = ResourceVersion(*created);
  EXPECT_FALSE(version.empty());
  (*created)["spec"]["holderIdentity"] = "b_2";
  const ObjectRef ref{&kLeases, "kube-system", "probe"};
  absl::StatusOr<Json> updated = client->Update(ref, *created);
  ASSERT_TRUE(updated.ok()) << updated.status();
  EXPECT_NE(ResourceVersion(*updated), version);
  // The version just replaced is stale now.
  absl::StatusOr<Json> stale = client->Update(ref, *created);
  EXPECT_EQ(stale.status().code(), absl::StatusCode::kAborted);
  EXPECT_THAT(Message(stale.status()),
              AllOf(HasSubstr("update Lease kube-system/probe: conflict"),
                    HasSubstr("Operation cannot be fulfilled on leases.coordination.k8s.io "
                              "\"probe\": the object has been modified")));
  EXPECT_TRUE(client->Delete(ref).ok());
  EXPECT_EQ(client->Get(ref).status().code(), absl::StatusCode::kNotFound);
}

TEST_F(ClientTest, NotFoundNamesTheObject) {
  std::unique_ptr<KubeClient> client = cluster_.Client();
  absl::StatusOr<Json> role = client->Get(ObjectRef{&kRoles, "kube-system", "nope"});
  EXPECT_EQ(role.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(Message(role.status()), "Role kube-system/nope not found");
}

TEST_F(ClientTest, AlreadyExistsOnCreate) {
  std::unique_ptr<KubeClient> client = cluster_.Client();
  absl::StatusOr<Json> created =
      client->Create(kLeases, "kube-system",
                     Json::parse(R"({"metadata":{"name":"kube-controller-manager"},"spec":{}})"));
  EXPECT_EQ(created.status().code(), absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(Message(created.status()), "Lease kube-system/kube-controller-manager already exists");
}

TEST_F(ClientTest, ForbiddenSaysWhoCannotDoWhat) {
  cluster_.store().Forbid("handoff-operator", "update", "roles");
  std::unique_ptr<KubeClient> client = cluster_.Client();
  const ObjectRef ref{&kRoles, "kube-system", "system::leader-locking-kube-controller-manager"};
  absl::StatusOr<Json> role = client->Get(ref);
  ASSERT_TRUE(role.ok()) << role.status();
  absl::StatusOr<Json> updated = client->Update(ref, *role);
  EXPECT_EQ(updated.status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(Message(updated.status()),
            "forbidden: handoff-operator cannot update roles.rbac.authorization.k8s.io "
            "system::leader-locking-kube-controller-manager in kube-system (the server said: "
            "roles.rbac.authorization.k8s.io \"system::leader-locking-kube-controller-manager\" is "
            "forbidden: User \"handoff-operator\" cannot update resource \"roles\" in API group "
            "\"rbac.authorization.k8s.io\" in the namespace \"kube-system\"); use a kubeconfig "
            "whose user may update roles, e.g. /etc/kubernetes/admin.conf on a control-plane "
            "node");
}

TEST_F(ClientTest, ForbiddenClusterScopedList) {
  cluster_.store().Forbid("handoff-operator", "list", "nodes");
  absl::StatusOr<std::vector<Json>> nodes = cluster_.Client()->List(kNodes, "");
  EXPECT_EQ(Message(nodes.status()),
            "forbidden: handoff-operator cannot list nodes at the cluster scope (the server said: "
            "nodes is forbidden: User \"handoff-operator\" cannot list resource \"nodes\" in API "
            "group \"\" at the cluster scope); use a kubeconfig whose user may list nodes, e.g. "
            "/etc/kubernetes/admin.conf on a control-plane node");
}

TEST_F(ClientTest, UnauthorizedPointsAtTheKubeconfig) {
  ClusterCredentials credentials = cluster_.Credentials();
  credentials.client_cert_pem.clear();
  credentials.client_key_pem.clear();
  credentials.bearer_token = "stolen-or-stale";
  credentials.identity = "operator";
  absl::StatusOr<Json> role =
      cluster_.Client(credentials)->Get(ObjectRef{&kRoles, "kube-system", "x"});
  EXPECT_EQ(role.status().code(), absl::StatusCode::kUnauthenticated);
  EXPECT_EQ(Message(role.status()),
            "unauthorized: check the credentials in test-kubeconfig (user \"operator\"); the API "
            "server rejected them on get Role kube-system/x (the server said: Unauthorized)");
}

TEST_F(ClientTest, BearerTokenAuthenticates) {
  ClusterCredentials credentials = cluster_.Credentials();
  credentials.client_cert_pem.clear();
  credentials.client_key_pem.clear();
  credentials.bearer_token = "operator-token";
  EXPECT_TRUE(cluster_.Client(credentials)->List(kNodes, "").ok());
  EXPECT_EQ(cluster_.store().requests().back().user, "token-operator");
}

TEST_F(ClientTest, UntrustedServerCertificateIsRefused) {
  ClusterCredentials credentials = cluster_.Credentials();
  // A CA that did not sign the server's certificate.
  credentials.ca_pem = ReadTestdata("tls/server.crt");
  absl::StatusOr<std::vector<Json>> nodes = cluster_.Client(credentials)->List(kNodes, "");
  EXPECT_EQ(nodes.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(Message(nodes.status()),
              AllOf(HasSubstr("the API server's certificate is not trusted"),
                    HasSubstr("certificate-authority(-data)")));
  EXPECT_TRUE(cluster_.store().requests().empty());
}

TEST_F(ClientTest, InsecureSkipVerifyConnectsToAnyCertificate) {
  ClusterCredentials credentials = cluster_.Credentials();
  credentials.ca_pem.clear();
  credentials.insecure_skip_tls_verify = true;
  EXPECT_TRUE(cluster_.Client(credentials)->List(kNodes, "").ok());
}

TEST_F(ClientTest, ConnectionRefusedAfterRetries) {
  std::unique_ptr<KubeClient> client = cluster_.Client();
  cluster_.server().Stop();
  const absl::Time start = cluster_.clock().Now();
  absl::StatusOr<std::vector<Json>> nodes = client->List(kNodes, "");
  EXPECT_EQ(nodes.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(Message(nodes.status()),
              AllOf(HasSubstr("list nodes at the cluster scope: GET " + cluster_.url()),
                    HasSubstr("check that the API server is up"), HasSubstr("(after 4 attempts)")));
  EXPECT_EQ(cluster_.clock().Now() - start, absl::Milliseconds(3500));
}

// A TCP load balancer whose backend resets closes the client's connection in the middle of the
// TLS handshake: nothing was sent, so even a create is safe to repeat, and the next connection
// reaches a server that answers.
TEST_F(ClientTest, AServerHangingUpInTheHandshakeIsRetried) {
  ClusterCredentials credentials = cluster_.Credentials();
  std::unique_ptr<test_support::TcpRelay> relay =
      test_support::TcpRelay::InFrontOf(credentials.server);
  ASSERT_NE(relay, nullptr) << credentials.server;

  relay->HangUp(1);
  absl::StatusOr<std::unique_ptr<HttpTransport>> transport = NewCurlTransport(credentials);
  ASSERT_TRUE(transport.ok()) << transport.status();
  HttpRequest request;
  request.path = "/api/v1/nodes";
  absl::StatusOr<HttpResponse> hung_up = (*transport)->Send(request);
  EXPECT_EQ(hung_up.status().code(), absl::StatusCode::kUnavailable) << hung_up.status();
  EXPECT_THAT(Message(hung_up.status()),
              AllOf(HasSubstr("the server closed the connection during the TLS handshake"),
                    HasSubstr("nothing was sent")));
  EXPECT_TRUE(cluster_.store().requests().empty());

  relay->HangUp(2);
  std::unique_ptr<KubeClient> client = cluster_.Client(credentials);
  absl::StatusOr<Json> created =
      client->Create(kLeases, "kube-system", Json::parse(R"({"metadata":{"name":"probe"}})"));
  ASSERT_TRUE(created.ok()) << created.status();
  EXPECT_EQ(client->requests_sent(), 3);
  EXPECT_EQ(cluster_.store().requests().size(), 1u);
  EXPECT_EQ(relay->connections(), 4);
}

TEST_F(ClientTest, ServerErrorsRetriedAgainstTheFakeServer) {
  cluster_.store().FailNextRequests(2, 503);
  std::unique_ptr<KubeClient> client = cluster_.Client();
  absl::StatusOr<std::vector<Json>> nodes = client->List(kNodes, "");
  ASSERT_TRUE(nodes.ok()) << nodes.status();
  EXPECT_EQ(nodes->size(), 5u);
  EXPECT_EQ(client->requests_sent(), 3);
  EXPECT_EQ(cluster_.store().requests().size(), 3u);
}

TEST_F(ClientTest, MutateReappliesAfterAStaleResourceVersion) {
  const ObjectRef ref{&kLeases, "kube-system", "kube-controller-manager"};
  // Two other writers get in first; each bumps leaseTransitions.
  cluster_.store().InjectConflicts(*ref.type, ref.ns, ref.name, 2, [](Json& lease) {
    lease["spec"]["leaseTransitions"] = lease["spec"]["leaseTransitions"].get<int>() + 1;
  });
  std::unique_ptr<KubeClient> client = cluster_.Client();
  int calls = 0;
  absl::StatusOr<MutateResult> result = client->Mutate(ref, [&calls](Json& lease) {
    ++calls;
    lease["metadata"]["labels"]["handoff"] = "seen";
    return absl::StatusOr<bool>(true);
  });
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_TRUE(result->changed);
  EXPECT_EQ(result->conflicts, 2);
  EXPECT_EQ(calls, 3);
  std::optional<Json> stored = cluster_.store().Get(kLeases, "kube-system", ref.name);
  ASSERT_TRUE(stored.has_value());
  // Both the other writers' changes and ours.
  EXPECT_EQ((*stored)["spec"]["leaseTransitions"], 5);
  EXPECT_EQ((*stored)["metadata"]["labels"]["handoff"], "seen");
  std::vector<std::string> methods;
  for (const auto& request : cluster_.store().requests()) {
    methods.push_back(request.method + " " + std::to_string(request.status));
  }
  EXPECT_THAT(methods,
              ElementsAre("GET 200", "PUT 409", "GET 200", "PUT 409", "GET 200", "PUT 200"));
}

TEST_F(ClientTest, MutateGivesUpAfterTooManyConflicts) {
  const ObjectRef ref{&kLeases, "kube-system", "kube-controller-manager"};
  cluster_.store().InjectConflicts(*ref.type, ref.ns, ref.name, 100);
  absl::StatusOr<MutateResult> result = cluster_.Client()->Mutate(ref, [](Json& lease) {
    lease["spec"]["holderIdentity"] = "me_1";
    return absl::StatusOr<bool>(true);
  });
  EXPECT_EQ(result.status().code(), absl::StatusCode::kAborted);
  EXPECT_THAT(Message(result.status()),
              HasSubstr("update Lease kube-system/kube-controller-manager: gave up after 6 "
                        "conflicts"));
}

TEST_F(ClientTest, MutateWithoutChangeWritesNothing) {
  const ObjectRef ref{&kLeases, "kube-system", "kube-controller-manager"};
  const int64_t before = cluster_.store().resource_version();
  absl::StatusOr<MutateResult> result =
      cluster_.Client()->Mutate(ref, [](Json&) { return absl::StatusOr<bool>(false); });
  ASSERT_TRUE(result.ok());
  EXPECT_FALSE(result->changed);
  EXPECT_EQ(cluster_.store().resource_version(), before);
}

}  // namespace
}  // namespace handoff::kube
