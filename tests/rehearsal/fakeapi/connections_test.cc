// The fake API server's connections under clients that misbehave: idle, slow, lying or endless
// ones must neither starve other clients nor bring the server down.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/kube/http_transport.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "rehearsal/fakeapi/fake_api_server.h"
#include "tests/coordinator/fake_cluster.h"

namespace handoff::fakeapi {
namespace {

using ::handoff::testing::FakeCluster;
using ::testing::HasSubstr;
using ::testing::StartsWith;

// Generous: these bound a wait for something that happens in milliseconds when all is well.
constexpr auto kPatience = std::chrono::seconds(10);
constexpr char kGetNodes[] = "GET /api/v1/nodes HTTP/1.1\r\nHost: fake\r\n\r\n";

// A TCP client that writes exactly what a test says.
class RawClient {
 public:
  explicit RawClient(int port) : fd_(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) {
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(static_cast<uint16_t>(port));
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    connected_ = fd_ >= 0 &&
                 connect(fd_, reinterpret_cast<const sockaddr*>(&address), sizeof(address)) == 0;
  }
  ~RawClient() {
    if (fd_ >= 0) close(fd_);
  }
  RawClient(const RawClient&) = delete;
  RawClient& operator=(const RawClient&) = delete;

  bool connected() const { return connected_; }

  bool Send(std::string_view bytes) {
    while (!bytes.empty()) {
      const ssize_t n = send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
      if (n <= 0) return false;
      bytes.remove_prefix(static_cast<size_t>(n));
    }
    return true;
  }

  // Waits up to `timeout` for bytes or the end of the stream; reads what is there. False when
  // nothing came in time.
  bool ReadSome(std::chrono::milliseconds timeout) {
    pollfd want{fd_, POLLIN, 0};
    if (poll(&want, 1, static_cast<int>(timeout.count())) <= 0) return false;
    char buffer[64 * 1024];
    const ssize_t n = recv(fd_, buffer, sizeof(buffer), 0);
    if (n <= 0) {
      closed_ = true;
    } else {
      received_.append(buffer, static_cast<size_t>(n));
    }
    return true;
  }

  // Reads until the server closes the connection (or kPatience runs out): what it sent.
  std::string ReadUntilClosed() {
    const auto deadline = std::chrono::steady_clock::now() + kPatience;
    while (!closed_ && std::chrono::steady_clock::now() < deadline) {
      ReadSome(std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now()));
    }
    return received_;
  }

  // Reads one whole response (head and Content-Length body); std::nullopt if none came.
  std::optional<std::string> ReadResponse() {
    const auto deadline = std::chrono::steady_clock::now() + kPatience;
    while (std::chrono::steady_clock::now() < deadline) {
      const size_t head_end = received_.find("\r\n\r\n");
      if (head_end != std::string::npos) {
        const size_t length_at = received_.find("Content-Length: ");
        const size_t length =
            length_at < head_end ? std::stoul(received_.substr(length_at + 16)) : 0;
        if (received_.size() >= head_end + 4 + length) {
          std::string response = received_.substr(0, head_end + 4 + length);
          received_.erase(0, response.size());
          return response;
        }
      }
      if (closed_) return std::nullopt;
      ReadSome(std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now()));
    }
    return std::nullopt;
  }

  bool closed() const { return closed_; }
  int fd() const { return fd_; }

 private:
  int fd_;
  bool connected_ = false;
  bool closed_ = false;
  std::string received_;
};

// The store (kubeadm cluster, anonymous users may do everything) behind plain HTTP.
class PlainServer {
 public:
  explicit PlainServer(FakeApiServerOptions options = FakeApiServerOptions()) {
    store_.SetAuthorizer([](const Access&) { return true; });
    absl::StatusOr<std::unique_ptr<FakeApiServer>> server = FakeApiServer::Start(store_, options);
    EXPECT_TRUE(server.ok()) << server.status();
    if (server.ok()) server_ = *std::move(server);
  }
  FakeApiServer& server() { return *server_; }
  int port() const { return server_ == nullptr ? 0 : server_->port(); }

  // A fresh connection's GET: its status line, or "" when none came.
  std::string GetNodes() {
    RawClient client(port());
    if (!client.connected() || !client.Send(kGetNodes)) return "";
    std::optional<std::string> response = client.ReadResponse();
    return response ? response->substr(0, response->find("\r\n")) : "";
  }

 private:
  ApiStore store_;
  std::unique_ptr<FakeApiServer> server_;
};

absl::StatusOr<kube::HttpResponse> Send(const kube::ClusterCredentials& credentials,
                                        const std::string& method, const std::string& path,
                                        const std::string& body = "") {
  absl::StatusOr<std::unique_ptr<kube::HttpTransport>> transport =
      kube::NewCurlTransport(credentials);
  if (!transport.ok()) return transport.status();
  kube::HttpRequest request;
  request.method = method;
  request.path = path;
  request.body = body;
  request.timeout = absl::Seconds(10);
  return (*transport)->Send(request);
}

// Room for `connections` client sockets and as many server sockets in this process.
void RaiseFileLimit(size_t connections) {
  rlimit limit{};
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &limit), 0);
  const rlim_t wanted = 2 * connections + 256;
  if (limit.rlim_cur < wanted) {
    ASSERT_GE(limit.rlim_max, wanted) << "the hard limit on open files is too low for this test";
    limit.rlim_cur = wanted;
    ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &limit), 0);
  }
}

TEST(FakeApiServerConnectionsTest, IdleAndSlowConnectionsDoNotStarveOthers) {
  // The issue's case over TLS: hundreds of connections that never finish a handshake or a
  // request, then a client with a real request. It used to wait two minutes.
  constexpr int kIdle = 500;
  RaiseFileLimit(kIdle);
  FakeCluster cluster;
  const int port = cluster.server().port();
  std::vector<std::unique_ptr<RawClient>> idle;
  for (int i = 0; i < kIdle; ++i) {
    idle.push_back(std::make_unique<RawClient>(port));
    ASSERT_TRUE(idle.back()->connected()) << i;
    // Every other one starts a TLS ClientHello and stops after a byte.
    if (i % 2 == 1) {
      ASSERT_TRUE(idle.back()->Send("\x16"));
    }
  }
  absl::StatusOr<kube::HttpResponse> response =
      Send(cluster.Credentials(), "GET", "/api/v1/nodes");
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(response->status, 200);

  idle.clear();
  response = Send(cluster.Credentials(), "GET", "/api/v1/nodes");
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(response->status, 200);
}

TEST(FakeApiServerConnectionsTest, OverTheCapTheQuietestConnectionMakesRoom) {
  FakeApiServerOptions options;
  options.max_connections = 4;
  PlainServer server(options);
  std::vector<std::unique_ptr<RawClient>> idle;
  for (int i = 0; i < 4; ++i) idle.push_back(std::make_unique<RawClient>(server.port()));
  // The server has accepted all four once the last one is served.
  RawClient active(server.port());
  ASSERT_TRUE(active.Send(kGetNodes));
  std::optional<std::string> response = active.ReadResponse();
  ASSERT_TRUE(response);
  EXPECT_THAT(*response, StartsWith("HTTP/1.1 200 OK\r\n"));
  // Five were open: the first idle one was closed to make room; the active one stays open.
  EXPECT_EQ(idle.front()->ReadUntilClosed(), "");
  EXPECT_TRUE(idle.front()->closed());
  ASSERT_TRUE(active.Send(kGetNodes));
  EXPECT_TRUE(active.ReadResponse());
}

TEST(FakeApiServerConnectionsTest, ATricklingHeadIsCutOffAtTheHeaderTimeout) {
  FakeApiServerOptions options;
  options.read_header_timeout = absl::Milliseconds(300);
  PlainServer server(options);
  RawClient loris(server.port());
  ASSERT_TRUE(loris.Send("GET /api/v1/nodes HTTP/1.1\r\nHost: fake\r\n"));
  // One header byte every 20 ms keeps the connection busy but never ends the head.
  const auto deadline = std::chrono::steady_clock::now() + kPatience;
  while (!loris.closed() && std::chrono::steady_clock::now() < deadline) {
    if (!loris.Send("X")) break;  // the server has closed
    loris.ReadSome(std::chrono::milliseconds(20));
  }
  EXPECT_EQ(loris.ReadUntilClosed(), "") << "closed without an answer, as Go's server does";
  EXPECT_TRUE(loris.closed());
  EXPECT_EQ(server.GetNodes(), "HTTP/1.1 200 OK");
}

TEST(FakeApiServerConnectionsTest, ASilentConnectionIsClosed) {
  FakeApiServerOptions options;
  options.read_header_timeout = absl::Milliseconds(200);
  PlainServer server(options);
  RawClient silent(server.port());
  EXPECT_EQ(silent.ReadUntilClosed(), "");
  EXPECT_TRUE(silent.closed());
}

TEST(FakeApiServerConnectionsTest, AStalledTlsHandshakeIsClosed) {
  ApiStore store;
  FakeApiServerOptions options;
  options.cert_file = ::handoff::testing::Testdata("kube-tls/server.crt");
  options.key_file = ::handoff::testing::Testdata("kube-tls/server.key");
  options.read_header_timeout = absl::Milliseconds(200);
  absl::StatusOr<std::unique_ptr<FakeApiServer>> server = FakeApiServer::Start(store, options);
  ASSERT_TRUE(server.ok()) << server.status();
  RawClient stalled((*server)->port());
  ASSERT_TRUE(stalled.Send("\x16\x03\x01"));  // the start of a ClientHello
  EXPECT_EQ(stalled.ReadUntilClosed(), "");
  EXPECT_TRUE(stalled.closed());
}

TEST(FakeApiServerConnectionsTest, AnIdleKeepAliveConnectionIsClosed) {
  FakeApiServerOptions options;
  options.idle_timeout = absl::Milliseconds(200);
  PlainServer server(options);
  RawClient client(server.port());
  ASSERT_TRUE(client.Send(kGetNodes));
  ASSERT_TRUE(client.ReadResponse());
  EXPECT_EQ(client.ReadUntilClosed(), "");
  EXPECT_TRUE(client.closed());
}

TEST(FakeApiServerConnectionsTest, AContentLengthThatLiesIsCutOffAtTheRequestTimeout) {
  FakeApiServerOptions options;
  options.request_timeout = absl::Milliseconds(300);
  PlainServer server(options);
  RawClient liar(server.port());
  ASSERT_TRUE(liar.Send(
      "POST /api/v1/namespaces/default/configmaps HTTP/1.1\r\nHost: fake\r\n"
      "Content-Length: 100\r\n\r\n{\"short\":1}"));
  EXPECT_EQ(liar.ReadUntilClosed(), "");
  EXPECT_TRUE(liar.closed());
  EXPECT_EQ(server.GetNodes(), "HTTP/1.1 200 OK");
}

TEST(FakeApiServerConnectionsTest, AHeadWithoutEndGets431) {
  PlainServer server;
  RawClient client(server.port());
  ASSERT_TRUE(client.Send("GET /api/v1/nodes HTTP/1.1\r\nHost: fake\r\n"));
  const std::string line = "X-Filler: " + std::string(1000, 'a') + "\r\n";
  // Until the server answers (past 1 MiB of head), or refuses more bytes.
  for (int sent = 0; sent < 2000 && !client.ReadSome(std::chrono::milliseconds(0)); ++sent) {
    if (!client.Send(line)) break;
  }
  std::optional<std::string> response = client.ReadResponse();
  ASSERT_TRUE(response);
  EXPECT_THAT(*response, StartsWith("HTTP/1.1 431 Request Header Fields Too Large\r\n"));
  EXPECT_EQ(client.ReadUntilClosed(), "");
  EXPECT_EQ(server.GetNodes(), "HTTP/1.1 200 OK");
}

TEST(FakeApiServerConnectionsTest, AnEndlessChunkedBodyGets413) {
  PlainServer server;
  RawClient client(server.port());
  ASSERT_TRUE(client.Send(
      "POST /api/v1/namespaces/default/configmaps HTTP/1.1\r\nHost: fake\r\n"
      "Transfer-Encoding: chunked\r\n\r\n"));
  const std::string chunk = "10000\r\n" + std::string(0x10000, 'x') + "\r\n";
  // 64 KiB chunks until the server answers: it must, past 3 MiB.
  for (int sent = 0; sent < 200 && !client.ReadSome(std::chrono::milliseconds(0)); ++sent) {
    if (!client.Send(chunk)) break;
  }
  std::optional<std::string> response = client.ReadResponse();
  ASSERT_TRUE(response);
  EXPECT_THAT(*response, StartsWith("HTTP/1.1 413 Request Entity Too Large\r\n"));
  EXPECT_THAT(*response, HasSubstr("Connection: close\r\n"));
  EXPECT_THAT(*response, HasSubstr(R"("reason":"RequestEntityTooLarge")"));
  EXPECT_EQ(server.GetNodes(), "HTTP/1.1 200 OK");
}

TEST(FakeApiServerConnectionsTest, PipelinedRequestsAreAnsweredInOrder) {
  PlainServer server;
  RawClient client(server.port());
  ASSERT_TRUE(client.Send(std::string(kGetNodes) +
                          "GET /api/v1/nodes/nope HTTP/1.1\r\nHost: fake\r\n\r\n" + kGetNodes));
  for (const char* status : {"HTTP/1.1 200", "HTTP/1.1 404", "HTTP/1.1 200"}) {
    std::optional<std::string> response = client.ReadResponse();
    ASSERT_TRUE(response);
    EXPECT_THAT(*response, StartsWith(status));
  }
}

TEST(FakeApiServerConnectionsTest, ExpectContinueGetsAnInterimAnswer) {
  PlainServer server;
  RawClient client(server.port());
  const std::string body =
      R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"},"data":{}})";
  ASSERT_TRUE(client.Send(
      "POST /api/v1/namespaces/default/configmaps HTTP/1.1\r\nHost: fake\r\n"
      "Expect: 100-continue\r\nContent-Length: " +
      std::to_string(body.size()) + "\r\n\r\n"));
  std::optional<std::string> interim = client.ReadResponse();
  ASSERT_TRUE(interim);
  EXPECT_EQ(*interim, "HTTP/1.1 100 Continue\r\n\r\n");
  ASSERT_TRUE(client.Send(body));
  std::optional<std::string> response = client.ReadResponse();
  ASSERT_TRUE(response);
  EXPECT_THAT(*response, StartsWith("HTTP/1.1 201 Created\r\n"));
}

TEST(FakeApiServerConnectionsTest, StopClosesConnectionsAndRefusesNewOnes) {
  PlainServer server;
  const int port = server.port();
  RawClient open(port);
  ASSERT_TRUE(open.connected());
  server.server().Stop();
  EXPECT_EQ(open.ReadUntilClosed(), "");
  EXPECT_TRUE(open.closed());
  EXPECT_FALSE(RawClient(port).connected());
}

TEST(FakeApiServerConnectionsTest, OverTlsTheIssuesDeepLeaseAndAnOversizedBodyLeaveItServing) {
  FakeCluster cluster;
  const std::string deep =
      R"({"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"name":"deep"},)"
      R"("spec":{"x":)" +
      std::string(100'000, '[') + std::string(100'000, ']') + "}}";
  absl::StatusOr<kube::HttpResponse> response =
      Send(cluster.Credentials(), "POST",
           "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases", deep);
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(response->status, 400);
  EXPECT_THAT(response->body, HasSubstr("exceeded max depth"));

  const std::string big =
      R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"big"},"data":{"k":")" +
      std::string(4 << 20, 'x') + R"("}})";
  response = Send(cluster.Credentials(), "POST", "/api/v1/namespaces/kube-system/configmaps", big);
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(response->status, 413);
  EXPECT_EQ(kube::Json::parse(response->body),
            kube::Json::parse(R"({"kind":"Status","apiVersion":"v1","metadata":{},)"
                              R"("status":"Failure","message":"Request entity too large: )"
                              R"(limit is 3145728","reason":"RequestEntityTooLarge","code":413})"));

  response = Send(cluster.Credentials(), "GET", "/api/v1/nodes");
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(response->status, 200);
}

}  // namespace
}  // namespace handoff::fakeapi
