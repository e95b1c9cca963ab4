#include "common/system/health_checker.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <future>
#include <memory>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/common/system/local_http_server.h"

namespace handoff {
namespace {

using ::handoff::testing::LocalHttpServer;
using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;

std::string Message(const absl::Status& status) { return std::string(status.message()); }

TEST(HealthEndpointTest, Url) {
  HealthEndpoint endpoint;
  endpoint.port = 10257;
  EXPECT_EQ(endpoint.Url(), "https://127.0.0.1:10257/healthz");
  endpoint.scheme = "http";
  endpoint.host = "localhost";
  endpoint.port = 10248;
  EXPECT_EQ(endpoint.Url(), "http://localhost:10248/healthz");
}

TEST(HealthEndpointTest, UrlBracketsIpv6Hosts) {
  HealthEndpoint endpoint;
  endpoint.host = "::1";
  endpoint.port = 10258;
  EXPECT_EQ(endpoint.Url(), "https://[::1]:10258/healthz");
  endpoint.host = "fd00:10::5";
  endpoint.path = "/livez";
  endpoint.port = 6443;
  EXPECT_EQ(endpoint.Url(), "https://[fd00:10::5]:6443/livez");
  endpoint.host = "[::1]";  // already bracketed
  EXPECT_EQ(endpoint.Url(), "https://[::1]:6443/livez");
  endpoint.host = "fe80::1%eth0";  // a zone's '%' is escaped (RFC 6874)
  EXPECT_EQ(endpoint.Url(), "https://[fe80::1%25eth0]:6443/livez");
}

// A server whose handlers answer as the test says; /slow blocks until the test releases it.
class HealthCheckerTest : public ::testing::TestWithParam<LocalHttpServer::Scheme> {
 protected:
  void SetUp() override {
    server_ = std::make_unique<LocalHttpServer>(GetParam());
    released_ = release_.get_future().share();
    server_->server().Get("/healthz", [](const httplib::Request&, httplib::Response& response) {
      response.set_content("ok", "text/plain");
    });
    server_->server().Get("/unhealthy", [](const httplib::Request&, httplib::Response& response) {
      response.status = 500;
      response.set_content(
          "[+]ping ok\n[-]leaderElection failed: reason withheld\nhealthz check failed\n",
          "text/plain");
    });
    server_->server().Get("/big", [](const httplib::Request&, httplib::Response& response) {
      response.status = 503;
      response.set_content(std::string(150, 'a') + std::string(10000, 'b'), "text/plain");
    });
    std::shared_future<void> released = released_;
    server_->server().Get("/slow",
                          [released](const httplib::Request&, httplib::Response& response) {
                            released.wait();
                            response.set_content("late", "text/plain");
                          });
    server_->Start();
  }

  void TearDown() override {
    Release();  // before stopping: the server joins its handler threads
    server_.reset();
  }

  void Release() {
    if (!release_called_) release_.set_value();
    release_called_ = true;
  }

  HealthEndpoint Endpoint(const std::string& path) const {
    HealthEndpoint endpoint;
    endpoint.scheme = server_->scheme();
    endpoint.port = server_->port();
    endpoint.path = path;
    return endpoint;
  }

  std::unique_ptr<LocalHttpServer> server_;
  std::promise<void> release_;
  std::shared_future<void> released_;
  bool release_called_ = false;
};

TEST_P(HealthCheckerTest, OkOn200) {
  absl::Status status = NewCurlHealthChecker()->Check(Endpoint("/healthz"), absl::Seconds(10));
  EXPECT_TRUE(status.ok()) << status;
}

TEST_P(HealthCheckerTest, ErrorStatusIsUnavailableWithCodeAndBodyStart) {
  const HealthEndpoint endpoint = Endpoint("/unhealthy");
  absl::Status status = NewCurlHealthChecker()->Check(endpoint, absl::Seconds(10));
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(Message(status), AllOf(HasSubstr(endpoint.Url()), HasSubstr("HTTP 500"),
                                     HasSubstr("[-]leaderElection failed: reason withheld")));
}

TEST_P(HealthCheckerTest, OnlyTheStartOfALongBodyIsKept) {
  absl::Status status = NewCurlHealthChecker()->Check(Endpoint("/big"), absl::Seconds(10));
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(Message(status), AllOf(HasSubstr("HTTP 503"), HasSubstr(std::string(150, 'a')),
                                     HasSubstr("b..."), Not(HasSubstr(std::string(51, 'b')))));
}

TEST_P(HealthCheckerTest, NotFoundIsUnavailable) {
  absl::Status status = NewCurlHealthChecker()->Check(Endpoint("/nope"), absl::Seconds(10));
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(Message(status), HasSubstr("HTTP 404"));
}

TEST_P(HealthCheckerTest, NoAnswerWithinTheTimeoutIsUnavailable) {
  const HealthEndpoint endpoint = Endpoint("/slow");
  const auto start = std::chrono::steady_clock::now();
  absl::Status status = NewCurlHealthChecker()->Check(endpoint, absl::Milliseconds(200));
  const auto elapsed = std::chrono::steady_clock::now() - start;
  Release();
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(Message(status), AllOf(HasSubstr(endpoint.Url()), HasSubstr("timeout of 200ms")));
  EXPECT_LT(elapsed, std::chrono::seconds(10));
}

INSTANTIATE_TEST_SUITE_P(Schemes, HealthCheckerTest,
                         ::testing::Values(LocalHttpServer::Scheme::kHttps,
                                           LocalHttpServer::Scheme::kHttp),
                         [](const ::testing::TestParamInfo<LocalHttpServer::Scheme>& param) {
                           return param.param == LocalHttpServer::Scheme::kHttps ? "Https" : "Http";
                         });

// A TCP socket bound to a loopback port but not listening: connecting to it is refused, and
// holding it keeps the port from being reused by anything else during the test.
class RefusingPort {
 public:
  RefusingPort() {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    EXPECT_GE(fd_, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    address.sin_port = 0;
    EXPECT_EQ(::bind(fd_, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
    socklen_t length = sizeof(address);
    EXPECT_EQ(::getsockname(fd_, reinterpret_cast<sockaddr*>(&address), &length), 0);
    port_ = ntohs(address.sin_port);
  }
  ~RefusingPort() {
    if (fd_ >= 0) ::close(fd_);
  }
  int port() const { return port_; }

 private:
  int fd_ = -1;
  int port_ = 0;
};

TEST(CurlHealthCheckerTest, ConnectionRefusedIsUnavailableNamingTheUrl) {
  RefusingPort refusing;
  HealthEndpoint endpoint;
  endpoint.port = refusing.port();
  absl::Status status = NewCurlHealthChecker()->Check(endpoint, absl::Seconds(10));
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(Message(status), AllOf(HasSubstr(endpoint.Url()), HasSubstr("Connection refused")));
}

TEST(CurlHealthCheckerTest, TlsAgainstAPlainServerIsUnavailable) {
  LocalHttpServer server(LocalHttpServer::Scheme::kHttp);
  server.server().Get("/healthz", [](const httplib::Request&, httplib::Response& response) {
    response.set_content("ok", "text/plain");
  });
  server.Start();
  HealthEndpoint endpoint;  // https
  endpoint.port = server.port();
  absl::Status status = NewCurlHealthChecker()->Check(endpoint, absl::Seconds(10));
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(Message(status), AllOf(HasSubstr(endpoint.Url()), HasSubstr("SSL")));
}

TEST(CurlHealthCheckerTest, UnknownSchemeIsInvalid) {
  HealthEndpoint endpoint;
  endpoint.scheme = "file";
  endpoint.port = 1;
  EXPECT_EQ(NewCurlHealthChecker()->Check(endpoint, absl::Seconds(1)).code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace handoff
