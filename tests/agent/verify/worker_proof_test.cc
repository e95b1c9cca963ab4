// The worker's proofs after its kubelet's restart: the same Node (uid) Ready with a Lease renewed
// since, no container restarted, and the credential provider answering; and each way one fails.
#include "agent/verify/worker_proof.h"

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "agent/verify/credential_probe.h"
#include "common/base/strings.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/fake_clock.h"

namespace handoff {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr char kNode[] = "ip-10-0-1-7.ec2.internal";
constexpr char kRegistry[] = "123456789012.dkr.ecr.us-east-1.amazonaws.com";
constexpr char kProvider[] = "/usr/libexec/kubelet-image-credential-provider-plugins/"
                             "ecr-credential-provider";

std::string Rfc3339(absl::Time at) {
  return absl::FormatTime("%Y-%m-%dT%H:%M:%E6SZ", at, absl::UTCTimeZone());
}

std::string NodeJson(const std::string& uid, bool ready) {
  return StrCat(R"({"apiVersion":"v1","kind":"Node","metadata":{"name":")", kNode,
                R"(","uid":")", uid,
                R"("},"status":{"conditions":[{"type":"MemoryPressure","status":"False"},)",
                R"({"type":"Ready","status":")", ready ? "True" : "False", R"("}]}})");
}

std::string LeaseJson(absl::Time renewed, const std::string& holder = kNode) {
  return StrCat(R"({"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"name":")",
                kNode, R"(","namespace":"kube-node-lease"},"spec":{"holderIdentity":")", holder,
                R"(","leaseDurationSeconds":40,"renewTime":")", Rfc3339(renewed), R"("}})");
}

// As `crictl ps -o json` prints it (cri-tools 1.26), abridged to the fields read.
std::string Container(const std::string& id, const std::string& sandbox, const std::string& name,
                      const std::string& pod) {
  return StrCat(R"({"id":")", id, R"(","podSandboxId":")", sandbox, R"(","metadata":{"name":")",
                name, R"(","attempt":0},"state":"CONTAINER_RUNNING",)",
                R"("createdAt":"1700000000123456789","labels":{"io.kubernetes.container.name":")",
                name, R"(","io.kubernetes.pod.name":")", pod,
                R"(","io.kubernetes.pod.namespace":"default"}})");
}
std::string Containers(const std::vector<std::string>& items) {
  return StrCat(R"({"containers":[)", StrJoin(items, ","), "]}");
}

std::string Answer(const std::string& registry, const std::string& password = "token") {
  return StrCat(R"({"kind":"CredentialProviderResponse",)",
                R"("apiVersion":"credentialprovider.kubelet.k8s.io/v1","cacheKeyType":"Registry",)",
                R"("auth":{")", registry, R"(":{"username":"AWS","password":")", password,
                R"("}}})");
}

// The API server's answers by path, which the test changes between Before and After.
class PathTransport : public kube::HttpTransport {
 public:
  explicit PathTransport(std::map<std::string, std::string>& objects) : objects_(objects) {}
  absl::StatusOr<kube::HttpResponse> Send(const kube::HttpRequest& request) override {
    auto it = objects_.find(request.path);
    if (it == objects_.end()) return kube::HttpResponse{404, R"({"kind":"Status","code":404})", {}};
    return kube::HttpResponse{200, it->second, {}};
  }

 private:
  std::map<std::string, std::string>& objects_;
};

// crictl and the credential provider, by argv; records what the provider was asked.
class AnsweringCommands : public CommandRunner {
 public:
  absl::Status Run(const std::vector<std::string>& argv, absl::Duration) override {
    return absl::InternalError(StrCat("unexpected command ", StrJoin(argv, " ")));
  }
  absl::StatusOr<std::string> Output(const std::vector<std::string>& argv, std::string_view input,
                                     absl::Duration) override {
    if (argv.at(0) == "crictl") return containers;
    asked.push_back({argv, std::string(input)});
    return provider;
  }
  absl::StatusOr<std::string> containers;
  absl::StatusOr<std::string> provider;
  std::vector<std::pair<std::vector<std::string>, std::string>> asked;
};

kube::ClientOptions NoRetries() {
  kube::ClientOptions options;
  options.max_retries = 0;
  return options;
}

class WorkerProofTest : public ::testing::Test {
 protected:
  WorkerProofTest()
      : client_(std::make_unique<PathTransport>(objects_), clock_, NoRetries()) {
    objects_[StrCat("/api/v1/nodes/", kNode)] = NodeJson("uid-1", true);
    objects_[StrCat("/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/", kNode)] =
        LeaseJson(clock_.Now() - absl::Seconds(4));
    commands_.containers = Containers({Container("aaaa1111", "sb-web", "web", "web-0"),
                                       Container("bbbb2222", "sb-proxy", "kube-proxy", "proxy")});
    commands_.provider = Answer(kRegistry);
    call_.binary = kProvider;
    call_.api_version = "credentialprovider.kubelet.k8s.io/v1";
  }

  std::unique_ptr<WorkerKubeletProof> Proof(bool names_provider = true) {
    WorkerProofOptions options;
    options.node_name = kNode;
    options.ecr_registry = kRegistry;
    options.timeout = absl::Seconds(30);
    return std::make_unique<WorkerKubeletProof>(
        options, client_, commands_, clock_,
        [this, names_provider]() -> absl::StatusOr<std::optional<CredentialProviderCall>> {
          if (!names_provider) return std::optional<CredentialProviderCall>();
          return std::optional<CredentialProviderCall>(call_);
        });
  }
  // What a restarted kubelet does: renews its Lease `after` the restart.
  void RenewLease(absl::Duration after) {
    objects_[StrCat("/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/", kNode)] =
        LeaseJson(clock_.Now() + after);
  }

  std::map<std::string, std::string> objects_;
  FakeClock clock_;
  kube::KubeClient client_;
  AnsweringCommands commands_;
  CredentialProviderCall call_;
};

TEST_F(WorkerProofTest, HoldsForTheSameNodeRenewingItsLeaseWithNothingRestarted) {
  auto proof = Proof();
  ASSERT_TRUE(proof->Before().ok());
  RenewLease(absl::Milliseconds(2500));
  absl::StatusOr<std::string> proven = proof->After();
  ASSERT_TRUE(proven.ok()) << proven.status();
  EXPECT_THAT(*proven, AllOf(HasSubstr("Node ip-10-0-1-7.ec2.internal (uid uid-1) Ready"),
                             HasSubstr("Lease renewed 2.5s after the restart"),
                             HasSubstr("2 container(s) not restarted"),
                             HasSubstr(StrCat(kProvider, " answered for ", kRegistry))));
  ASSERT_EQ(commands_.asked.size(), 1u);
  EXPECT_EQ(commands_.asked[0].first, std::vector<std::string>{kProvider});
  EXPECT_EQ(commands_.asked[0].second,
            StrCat(R"({"apiVersion":"credentialprovider.kubelet.k8s.io/v1",)",
                   R"("kind":"CredentialProviderRequest","image":")", kRegistry,
                   "/handoff-credential-probe:latest\"}\n"));
}

TEST_F(WorkerProofTest, WaitsForTheLeaseAndTheReadyCondition) {
  objects_[StrCat("/api/v1/nodes/", kNode)] = NodeJson("uid-1", false);
  // Each poll's sleep moves the kubelet on: Ready after the second look, its Lease after the
  // fourth.
  int looks = 0;
  struct Stepping : Clock {
    Stepping(FakeClock& clock, std::function<void()> on_sleep)
        : inner(clock), step(std::move(on_sleep)) {}
    absl::Time Now() override { return inner.Now(); }
    void SleepFor(absl::Duration d) override {
      inner.SleepFor(d);
      step();
    }
    FakeClock& inner;
    std::function<void()> step;
  };
  Stepping stepping(clock_, [&] {
    ++looks;
    if (looks == 2) objects_[StrCat("/api/v1/nodes/", kNode)] = NodeJson("uid-1", true);
    if (looks == 4) RenewLease(absl::ZeroDuration());
  });
  WorkerProofOptions options;
  options.node_name = kNode;
  options.ecr_registry = kRegistry;
  WorkerKubeletProof stepped(options, client_, commands_, stepping,
                             [] { return std::optional<CredentialProviderCall>(); });
  ASSERT_TRUE(stepped.Before().ok());
  absl::StatusOr<std::string> proven = stepped.After();
  ASSERT_TRUE(proven.ok()) << proven.status();
  EXPECT_EQ(looks, 4);
  EXPECT_THAT(*proven, HasSubstr("no credential provider named"));
  EXPECT_TRUE(commands_.asked.empty());
}

TEST_F(WorkerProofTest, ANodeRegisteredAnewFails) {
  auto proof = Proof();
  ASSERT_TRUE(proof->Before().ok());
  objects_[StrCat("/api/v1/nodes/", kNode)] = NodeJson("uid-2", true);
  RenewLease(absl::Seconds(1));
  absl::StatusOr<std::string> proven = proof->After();
  EXPECT_EQ(proven.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(proven.status().message()),
              AllOf(HasSubstr("uid uid-1 before, uid-2 after"), HasSubstr("registered it anew")));
}

TEST_F(WorkerProofTest, ALeaseNotRenewedSinceTheRestartTimesOut) {
  auto proof = Proof();
  ASSERT_TRUE(proof->Before().ok());
  const absl::Time restarted = clock_.Now();
  absl::StatusOr<std::string> proven = proof->After();
  EXPECT_EQ(proven.status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_THAT(std::string(proven.status().message()),
              AllOf(HasSubstr("was not Ready with a heartbeat within 30s"),
                    HasSubstr("its Lease not renewed since the restart")));
  EXPECT_GE(clock_.Now() - restarted, absl::Seconds(30));
}

TEST_F(WorkerProofTest, ALeaseHeldByAnotherNameIsNoHeartbeat) {
  auto proof = Proof();
  ASSERT_TRUE(proof->Before().ok());
  objects_[StrCat("/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/", kNode)] =
      LeaseJson(clock_.Now() + absl::Seconds(1), "ip-10-0-1-7");
  EXPECT_EQ(proof->After().status().code(), absl::StatusCode::kDeadlineExceeded);
}

TEST_F(WorkerProofTest, AContainerRestartedByTheKubeletFails) {
  auto proof = Proof();
  ASSERT_TRUE(proof->Before().ok());
  RenewLease(absl::Seconds(1));
  commands_.containers = Containers({Container("cccc3333", "sb-web", "web", "web-0"),
                                     Container("bbbb2222", "sb-proxy", "kube-proxy", "proxy")});
  absl::StatusOr<std::string> proven = proof->After();
  EXPECT_EQ(proven.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(proven.status().message()),
              AllOf(HasSubstr("container web of pod default/web-0 was restarted"),
                    HasSubstr("aaaa1111 is gone, cccc3333 runs in its place"),
                    Not(HasSubstr("kube-proxy"))));
}

TEST_F(WorkerProofTest, APodRecreatedInANewSandboxFails) {
  auto proof = Proof();
  ASSERT_TRUE(proof->Before().ok());
  RenewLease(absl::Seconds(1));
  commands_.containers = Containers({Container("dddd4444", "sb-web-2", "web", "web-0"),
                                     Container("bbbb2222", "sb-proxy", "kube-proxy", "proxy")});
  EXPECT_THAT(std::string(proof->After().status().message()),
              HasSubstr("runs in a new pod sandbox"));
}

TEST_F(WorkerProofTest, APodDeletedMeanwhileIsNoRestart) {
  auto proof = Proof();
  ASSERT_TRUE(proof->Before().ok());
  RenewLease(absl::Seconds(1));
  commands_.containers = Containers({Container("bbbb2222", "sb-proxy", "kube-proxy", "proxy")});
  EXPECT_TRUE(proof->After().ok());
}

TEST_F(WorkerProofTest, ACredentialProviderWithoutCredentialsFails) {
  auto proof = Proof();
  ASSERT_TRUE(proof->Before().ok());
  RenewLease(absl::Seconds(1));
  commands_.provider = Answer("999999999999.dkr.ecr.eu-west-1.amazonaws.com", "secret-token");
  absl::StatusOr<std::string> proven = proof->After();
  EXPECT_EQ(proven.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(proven.status().message()),
              AllOf(HasSubstr("with credentials for 999999999999.dkr.ecr.eu-west-1.amazonaws.com "
                              "only"),
                    Not(HasSubstr("secret-token"))));
}

TEST_F(WorkerProofTest, ACredentialProviderThatFailsIsNamed) {
  auto proof = Proof();
  ASSERT_TRUE(proof->Before().ok());
  RenewLease(absl::Seconds(1));
  commands_.provider = absl::NotFoundError("cannot run `ecr-credential-provider`");
  EXPECT_THAT(std::string(proof->After().status().message()),
              AllOf(HasSubstr(StrCat("credential provider ", kProvider, " did not answer")),
                    HasSubstr("it is the operator's to install")));
}

TEST_F(WorkerProofTest, AnUnreadableNodeRefusesBeforeTheRestart) {
  objects_.clear();
  EXPECT_THAT(std::string(Proof()->Before().message()),
              AllOf(HasSubstr("this kubelet's Node ip-10-0-1-7.ec2.internal cannot be read"),
                    HasSubstr("not found")));
}

TEST_F(WorkerProofTest, UnlistableContainersRefuseBeforeTheRestart) {
  commands_.containers = absl::NotFoundError("cannot run `crictl ps -o json`");
  EXPECT_THAT(std::string(Proof()->Before().message()),
              HasSubstr("the node's containers cannot be listed"));
}

TEST(CriContainersTest, ReadsCrictlsAnswer) {
  absl::StatusOr<std::vector<CriContainer>> listed =
      ParseCriContainers(Containers({Container("aaaa1111", "sb-web", "web", "web-0")}));
  ASSERT_TRUE(listed.ok()) << listed.status();
  ASSERT_EQ(listed->size(), 1u);
  EXPECT_EQ((*listed)[0].id, "aaaa1111");
  EXPECT_EQ((*listed)[0].pod_sandbox_id, "sb-web");
  EXPECT_EQ((*listed)[0].name, "web");
  EXPECT_EQ((*listed)[0].pod, "default/web-0");
  EXPECT_EQ((*listed)[0].created_at, "1700000000123456789");
  EXPECT_TRUE(ParseCriContainers(R"({"containers":[]})")->empty());
}

TEST(CriContainersTest, RefusesWhatIsNotAContainerList) {
  for (const char* answer : {"", "[]", "{}", R"({"containers":{}})", R"({"containers":[{}]})",
                             "{\"containers\":[{\"id\":"}) {
    EXPECT_EQ(ParseCriContainers(answer).status().code(), absl::StatusCode::kInvalidArgument)
        << answer;
  }
}

TEST(CredentialProviderResponseTest, NamesWhatIsWrong) {
  const std::string v1 = "credentialprovider.kubelet.k8s.io/v1";
  EXPECT_TRUE(CheckCredentialProviderResponse(Answer(kRegistry), v1, kRegistry, "p").ok());
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"not json", "not JSON"},
      {R"({"kind":"Status"})", "with kind \"Status\""},
      {R"({"kind":"CredentialProviderResponse","apiVersion":"credentialprovider.kubelet.k8s.io/v1beta1","auth":{}})",
       "not the request's credentialprovider.kubelet.k8s.io/v1"},
      {R"({"kind":"CredentialProviderResponse","apiVersion":"credentialprovider.kubelet.k8s.io/v1","auth":{}})",
       "no credentials"},
      {Answer(kRegistry, ""), "an empty username or password"},
  };
  for (const auto& [answer, expected] : cases) {
    absl::Status status = CheckCredentialProviderResponse(answer, v1, kRegistry, "p");
    EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition) << answer;
    EXPECT_THAT(std::string(status.message()),
                AllOf(HasSubstr(expected), HasSubstr("would pull no image from ECR")))
        << answer;
  }
}

}  // namespace
}  // namespace handoff
