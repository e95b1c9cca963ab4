// The daemons' /metrics endpoint: serves its registry on the address asked for, port 0 picks one,
// and an address it cannot bind is refused with the reason.
#include "common/system/metrics_server.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "prometheus/counter.h"
#include "prometheus/registry.h"
#include "tests/common/system/metrics_scrape.h"

namespace handoff {
namespace {

using ::testing::HasSubstr;
using ::testing::Optional;

TEST(MetricsServerTest, ServesTheRegistryOnTheChosenLoopbackPort) {
  auto registry = std::make_shared<prometheus::Registry>();
  prometheus::BuildCounter()
      .Name("handoff_test_events_total")
      .Help("Events in the test")
      .Register(*registry)
      .Add({{"kind", "a"}})
      .Increment(3);
  absl::StatusOr<std::unique_ptr<MetricsServer>> server =
      MetricsServer::Start("127.0.0.1:0", registry);
  ASSERT_TRUE(server.ok()) << server.status();
  EXPECT_GT((*server)->port(), 0);
  EXPECT_EQ((*server)->url(),
            "http://127.0.0.1:" + std::to_string((*server)->port()) + "/metrics");
  std::optional<std::string> text = testing::Scrape((*server)->url());
  ASSERT_TRUE(text.has_value());
  EXPECT_THAT(testing::SampleValue(*text, "handoff_test_events_total{kind=\"a\"}"),
              Optional(3.0));
  EXPECT_THAT(*text, HasSubstr("# HELP handoff_test_events_total Events in the test"));
  if (testing::HavePromtool()) {
    EXPECT_EQ(testing::PromtoolProblems(*text), "") << *text;
  }
}

// The probe's case: two idle TCP connections kept every scrape out for 30 s (the exposer had two
// threads, and civetweb waits 30 s for a request). Now even sixteen, as many as it serves at
// once, delay a scrape by 3 s at most: the scrape's own timeout (20 s) is well above that.
TEST(MetricsServerTest, IdleConnectionsDoNotKeepScrapesOut) {
  auto registry = std::make_shared<prometheus::Registry>();
  prometheus::BuildCounter()
      .Name("handoff_test_scrapes_total")
      .Help("h")
      .Register(*registry)
      .Add({});
  absl::StatusOr<std::unique_ptr<MetricsServer>> server =
      MetricsServer::Start("127.0.0.1:0", registry);
  ASSERT_TRUE(server.ok()) << server.status();
  for (const int idle : {2, 16}) {
    std::vector<int> connections;
    for (int i = 0; i < idle; ++i) {
      const int fd = socket(AF_INET, SOCK_STREAM, 0);
      ASSERT_GE(fd, 0);
      sockaddr_in address{};
      address.sin_family = AF_INET;
      address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      address.sin_port = htons(static_cast<uint16_t>((*server)->port()));
      ASSERT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
      connections.push_back(fd);  // connected, and never a byte sent
    }
    std::optional<std::string> text = testing::Scrape((*server)->url());
    EXPECT_TRUE(text.has_value()) << idle << " idle connections kept the scrape out";
    for (const int fd : connections) close(fd);
  }
}

TEST(MetricsServerTest, OnlyANonLoopbackAddressIsWarnedOf) {
  EXPECT_EQ(ExposureWarning("127.0.0.1:7451"), std::nullopt);
  EXPECT_EQ(ExposureWarning("127.0.1.4:0"), std::nullopt);
  EXPECT_EQ(ExposureWarning("localhost:7451"), std::nullopt);
  EXPECT_THAT(ExposureWarning("0.0.0.0:7451"),
              Optional(HasSubstr("metrics are served on 0.0.0.0:7451, not a loopback address")));
  EXPECT_THAT(ExposureWarning("10.0.1.5:7451"), Optional(HasSubstr("bind 127.0.0.1 unless")));
}

TEST(MetricsServerTest, APortInUseIsRefusedWithTheReason) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
  ASSERT_EQ(listen(fd, 1), 0);
  socklen_t length = sizeof(address);
  ASSERT_EQ(getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length), 0);
  const std::string taken = "127.0.0.1:" + std::to_string(ntohs(address.sin_port));
  absl::StatusOr<std::unique_ptr<MetricsServer>> server =
      MetricsServer::Start(taken, std::make_shared<prometheus::Registry>());
  close(fd);
  ASSERT_FALSE(server.ok());
  EXPECT_TRUE(absl::IsUnavailable(server.status())) << server.status();
  EXPECT_THAT(server.status().message(),
              HasSubstr("cannot serve metrics on " + taken + ": Address already in use"));
}

TEST(MetricsServerTest, OnlyHostAndPortAreAccepted) {
  for (const std::string listen :
       {"7451", ":7451", "127.0.0.1:", "127.0.0.1:http", "127.0.0.1:65536", "127.0.0.1:7451s",
        "127.0.0.1:7451,0.0.0.0:7452", "127.0.0.1:80r"}) {
    absl::StatusOr<std::unique_ptr<MetricsServer>> server =
        MetricsServer::Start(listen, std::make_shared<prometheus::Registry>());
    ASSERT_FALSE(server.ok()) << listen;
    EXPECT_TRUE(absl::IsInvalidArgument(server.status())) << listen << ": " << server.status();
    EXPECT_THAT(server.status().message(), HasSubstr("'" + listen + "' is not HOST:PORT"));
  }
}

TEST(MetricsServerTest, OffAndEmptyTurnMetricsOff) {
  EXPECT_TRUE(MetricsOff(""));
  EXPECT_TRUE(MetricsOff("off"));
  EXPECT_FALSE(MetricsOff("127.0.0.1:7451"));
}

}  // namespace
}  // namespace handoff
