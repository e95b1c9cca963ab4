// apply's verification against real HTTPS health endpoints (local servers with the test
// certificate, checked through libcurl) and the fake kubelet's process table.
#include <atomic>
#include <sstream>

#include "agent/apply/applier.h"
#include "agent/engine/classify.h"
#include "common/base/strings.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/agent/apply/fake_kubelet.h"
#include "tests/agent/engine/node_fixture.h"
#include "tests/common/system/local_http_server.h"
#include "tests/support/fake_clock.h"
#include "tests/support/fault_injection_file_system.h"

namespace handoff {
namespace {

using ::testing::AllOf;
using testing::FakeKubelet;
using ::testing::HasSubstr;
using testing::LoadNode;
using testing::LocalHttpServer;

constexpr char kKcm[] = "/etc/kubernetes/manifests/kube-controller-manager.yaml";

// A health endpoint whose answer the test sets.
class HealthEndpointServer {
 public:
  HealthEndpointServer() : server_(LocalHttpServer::Scheme::kHttps) {
    server_.server().Get("/healthz", [this](const httplib::Request&, httplib::Response& response) {
      ++requests;
      response.status = status.load();
      response.set_content(status.load() == 200 ? "ok" : "[-]poststarthook failed", "text/plain");
    });
    server_.Start();
  }
  int port() const { return server_.port(); }
  std::atomic<int> status{200};
  std::atomic<int> requests{0};

 private:
  LocalHttpServer server_;
};

class HttpsVerificationTest : public ::testing::Test {
 protected:
  HttpsVerificationTest() : fs_(LoadNode("kubeadm")), kubelet_(fs_, NodePaths{}) {
    // The managers serve their health where the test's HTTPS servers listen.
    std::string kcm = *fs_.ReadFile(kKcm);
    kcm.replace(kcm.find("    - --service-account-private-key-file"), 0,
                StrCat("    - --secure-port=", kcm_health_.port(), "\n"));
    fs_.SetFile(kKcm, kcm);
    settings_.k8s_version = *KubeVersion::Parse("v1.27.6");
    settings_.ccm.image = "registry.k8s.io/provider-aws/cloud-controller-manager:v1.27.1";
    settings_.ccm.extra_args["secure-port"] = std::to_string(ccm_health_.port());
  }

  absl::StatusOr<ApplyReport> Apply(NodeState target) {
    ApplyOptions options;
    options.verify_options.timeout = absl::Seconds(20);
    std::unique_ptr<HealthChecker> curl = NewCurlHealthChecker();
    // kube-apiserver, kube-scheduler and the kubelet answer through the fake kubelet; the two
    // managers through HTTPS.
    RoutingHealth health(*curl, kubelet_, {kcm_health_.port(), ccm_health_.port()});
    Applier applier(Host{fs_, kubelet_, health, clock_, kubelet_, kubelet_}, settings_, options,
                    log_);
    return applier.Apply(target);
  }

  NodeState State() {
    absl::StatusOr<NodeSnapshot> snapshot = ReadNodeSnapshot(fs_, settings_.paths);
    return Classify(*snapshot).state;
  }

  class RoutingHealth : public HealthChecker {
   public:
    RoutingHealth(HealthChecker& real, HealthChecker& fake, std::vector<int> real_ports)
        : real_(real), fake_(fake), real_ports_(std::move(real_ports)) {}
    absl::Status Check(const HealthEndpoint& endpoint, absl::Duration timeout) override {
      const bool real =
          std::find(real_ports_.begin(), real_ports_.end(), endpoint.port) != real_ports_.end();
      return (real ? real_ : fake_).Check(endpoint, timeout);
    }

   private:
    HealthChecker& real_;
    HealthChecker& fake_;
    std::vector<int> real_ports_;
  };

  HealthEndpointServer kcm_health_;
  HealthEndpointServer ccm_health_;
  FaultInjectionFileSystem fs_;
  FakeKubelet kubelet_;
  FakeClock clock_;
  Settings settings_;
  std::ostringstream log_;
};

TEST_F(HttpsVerificationTest, HealthyManagersLetTheMoveThrough) {
  absl::StatusOr<ApplyReport> prepared = Apply(NodeState::kPrepared);
  ASSERT_TRUE(prepared.ok()) << prepared.status();
  ASSERT_TRUE(prepared->ok()) << prepared->failure;
  absl::StatusOr<ApplyReport> migrated = Apply(NodeState::kMigrated);
  ASSERT_TRUE(migrated.ok()) << migrated.status();
  EXPECT_TRUE(migrated->ok()) << migrated->failure;
  EXPECT_EQ(State(), NodeState::kMigrated);
  EXPECT_GT(kcm_health_.requests.load(), 0);
  EXPECT_GT(ccm_health_.requests.load(), 0);
}

TEST_F(HttpsVerificationTest, UnhealthyCloudControllerManagerIsRolledBackWithEverythingBeforeIt) {
  ASSERT_TRUE(Apply(NodeState::kPrepared).ok());
  ccm_health_.status = 500;
  const int kcm_checks_before = kcm_health_.requests.load();
  absl::StatusOr<ApplyReport> report = Apply(NodeState::kMigrated);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_FALSE(report->ok());
  EXPECT_THAT(report->failure, AllOf(HasSubstr("cloud-controller-manager"), HasSubstr("500"),
                                     HasSubstr(StrCat(ccm_health_.port()))));
  EXPECT_EQ(report->rollback_failure, "");
  EXPECT_EQ(State(), NodeState::kPrepared);
  // The kube-controller-manager went first (proven healthy as external), and came back with
  // Leader Migration when the cloud-controller-manager failed: checked both ways.
  EXPECT_GE(kcm_health_.requests.load(), kcm_checks_before + 2);
}

TEST_F(HttpsVerificationTest, RestoredComponentThatStaysUnhealthyIsReported) {
  ASSERT_TRUE(Apply(NodeState::kPrepared).ok());
  kcm_health_.status = 503;
  const int ccm_checks_before = ccm_health_.requests.load();
  absl::StatusOr<ApplyReport> report = Apply(NodeState::kMigrated);
  ASSERT_TRUE(report.ok());
  EXPECT_FALSE(report->ok());
  EXPECT_THAT(report->failure, HasSubstr("kube-controller-manager"));  // its first check failed
  EXPECT_THAT(report->rollback_failure,
              AllOf(HasSubstr("kube-controller-manager"), HasSubstr("503")));
  // The kube-controller-manager goes first: the cloud-controller-manager was never written.
  EXPECT_EQ(ccm_health_.requests.load(), ccm_checks_before);
}

}  // namespace
}  // namespace handoff
