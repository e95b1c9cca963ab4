// Which cloud controllers each manager on the node runs, asked of the managers' /healthz?verbose:
// the parsing, the endpoint each manager's argv names, and one sample end to end (the /proc
// reader on a fake /proc tree, the libcurl client, local HTTPS servers answering as the managers
// do).
#include "agent/daemon/controller_probe.h"

#include <memory>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/common/system/fake_proc_tree.h"
#include "tests/common/system/local_http_server.h"
#include "tests/support/fake_clock.h"

namespace handoff {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

// kube-controller-manager 1.26's answer once it leads (trimmed): the generic checks, then one per
// started controller, then the verdict.
constexpr char kLeaderVerbose[] =
    "[+]ping ok\n[+]log ok\n[+]leaderElection ok\n[+]serviceaccount-token ok\n[+]service ok\n"
    "[+]cloud-node-lifecycle ok\n[+]nodeipam ok\n[-]route failed: reason withheld\n"
    "healthz check failed\n";
// A manager waiting for its lease lists no controller.
constexpr char kWaitingVerbose[] =
    "[+]ping ok\n[+]log ok\n[+]leaderElection ok\nhealthz check passed\n";

TEST(HealthzCheckNamesTest, EveryCheckLineNamesACheckWhetherItPassesOrNot) {
  EXPECT_THAT(HealthzCheckNames(kLeaderVerbose),
              ElementsAre("ping", "log", "leaderElection", "serviceaccount-token", "service",
                          "cloud-node-lifecycle", "nodeipam", "route"));
  EXPECT_THAT(HealthzCheckNames("ok"), IsEmpty());
  EXPECT_THAT(HealthzCheckNames("[+]\n[+]a ok"), ElementsAre("a"));
}

TEST(ControllerListEndpointTest, TheManagersOwnSecurePortAndBindAddress) {
  EXPECT_EQ(ControllerListEndpoint("kube-controller-manager", {"kube-controller-manager"})->Url(),
            "https://127.0.0.1:10257/healthz?verbose");
  EXPECT_EQ(ControllerListEndpoint("cloud-controller-manager", {"/bin/aws-cloud-controller-manager"})
                ->Url(),
            "https://127.0.0.1:10258/healthz?verbose");
  EXPECT_EQ(ControllerListEndpoint("kube-controller-manager",
                                   {"kube-controller-manager", "--secure-port", "11257",
                                    "--bind-address=10.0.0.5"})
                ->Url(),
            "https://10.0.0.5:11257/healthz?verbose");
  EXPECT_EQ(ControllerListEndpoint("kube-controller-manager",
                                   {"kube-controller-manager", "--bind-address=0.0.0.0"})
                ->Url(),
            "https://127.0.0.1:10257/healthz?verbose");
  EXPECT_FALSE(
      ControllerListEndpoint("kube-controller-manager", {"kcm", "--secure-port=0"}).has_value());
}

TEST(ControllerProbeTest, EachManagerProcessSaysWhichWatchedControllersItRuns) {
  testing::LocalHttpServer leader(testing::LocalHttpServer::Scheme::kHttps);
  leader.server().Get("/healthz", [](const httplib::Request& request, httplib::Response& response) {
    ASSERT_TRUE(request.has_param("verbose"));
    response.status = 500;  // a failing check: still the full list
    response.set_content(kLeaderVerbose, "text/plain");
  });
  leader.Start();
  testing::LocalHttpServer waiting(testing::LocalHttpServer::Scheme::kHttps);
  waiting.server().Get("/healthz", [](const httplib::Request&, httplib::Response& response) {
    response.set_content(kWaitingVerbose, "text/plain");
  });
  waiting.Start();

  testing::FakeProcTree proc;
  proc.AddProcess(1, {"/sbin/init"}, 1, "systemd");
  proc.AddProcess(100,
                  {"kube-controller-manager", "--bind-address=127.0.0.1",
                   "--secure-port=" + std::to_string(leader.port())},
                  10, "kube-controller");
  proc.AddProcess(200,
                  {"/bin/aws-cloud-controller-manager",
                   "--secure-port=" + std::to_string(waiting.port())},
                  20, "aws-cloud-contr");
  // A second cloud-controller-manager (the kubelet starting its successor) not serving yet.
  proc.AddProcess(201, {"cloud-controller-manager", "--secure-port=1"}, 30, "cloud-controll");
  std::unique_ptr<ProcessTable> processes = NewProcfsProcessTable(proc.root());
  std::unique_ptr<HealthChecker> health = NewCurlHealthChecker();
  FakeClock clock(absl::FromUnixMillis(1800000000123));
  ControllerProbe probe(*processes, *health, clock);

  v1::ControllerSample sample = probe.Sample();
  EXPECT_EQ(sample.observed_unix_ms(), 1800000000123);
  EXPECT_TRUE(sample.error().empty());
  ASSERT_EQ(sample.managers_size(), 3);
  const v1::ManagerControllers& kcm = sample.managers(0);
  EXPECT_EQ(kcm.component(), "kube-controller-manager");
  EXPECT_EQ(kcm.pid(), 100);
  EXPECT_TRUE(kcm.answered()) << kcm.error();
  // Only the watched ones, in the watched order; route's failing check still means started.
  EXPECT_THAT(kcm.controllers(), ElementsAre("route", "service", "cloud-node-lifecycle"));
  const v1::ManagerControllers& ccm = sample.managers(1);
  EXPECT_EQ(ccm.component(), "cloud-controller-manager");
  EXPECT_EQ(ccm.pid(), 200);
  EXPECT_TRUE(ccm.answered()) << ccm.error();
  EXPECT_THAT(ccm.controllers(), IsEmpty());
  const v1::ManagerControllers& starting = sample.managers(2);
  EXPECT_EQ(starting.pid(), 201);
  EXPECT_FALSE(starting.answered());
  EXPECT_THAT(starting.error(), HasSubstr("127.0.0.1:1"));
}

TEST(ControllerProbeTest, AProcRootThatCannotBeReadLeavesTheNodeUnknown) {
  std::unique_ptr<ProcessTable> processes = NewProcfsProcessTable("/nonexistent/proc");
  std::unique_ptr<HealthChecker> health = NewCurlHealthChecker();
  FakeClock clock(absl::FromUnixMillis(1));
  v1::ControllerSample sample = ControllerProbe(*processes, *health, clock).Sample();
  EXPECT_FALSE(sample.error().empty());
  EXPECT_THAT(sample.managers(), IsEmpty());
}

}  // namespace
}  // namespace handoff
