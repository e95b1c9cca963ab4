// The Kubernetes client's transport against the real kube-apiserver through a TCP relay that can
// go quiet, as a TCP load balancer does when the API server behind a connection stops answering
// (a node's kube-apiserver in its 30 s shutdown grace) while the others still answer. libcurl
// speaks HTTP/2 to the real server, and an HTTP/2 connection outlives a stream that timed out:
// the next request must not be sent on it.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "coordinator/kube/http_transport.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/real/real_cluster.h"

namespace handoff {
namespace {

// Relays every connection on 127.0.0.1:<port()> to 127.0.0.1:<target>. Quiet() stops relaying
// on the connections open now (they stay open, silent); later ones are relayed as before.
class Relay {
 public:
  explicit Relay(int target) : target_(target) {
    listener_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof(address);
    if (listener_ < 0 || ::bind(listener_, reinterpret_cast<sockaddr*>(&address), length) != 0 ||
        ::listen(listener_, 16) != 0 ||
        ::getsockname(listener_, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
      return;
    }
    if (::pipe2(stop_, O_CLOEXEC) != 0) return;
    port_ = ntohs(address.sin_port);
    accepter_ = std::thread([this] { Accept(); });
  }
  ~Relay() {
    stopping_ = true;
    if (accepter_.joinable()) {
      (void)!::write(stop_[1], "x", 1);
      accepter_.join();
    }
    for (std::thread& pump : pumps_) pump.join();
    for (int fd : {listener_, stop_[0], stop_[1]}) {
      if (fd >= 0) ::close(fd);
    }
  }

  int port() const { return port_; }
  int connections() const { return connections_; }
  void Quiet() { quiet_before_ = connections_.load(); }

 private:
  void Accept() {
    while (!stopping_) {
      pollfd events[2] = {{listener_, POLLIN, 0}, {stop_[0], POLLIN, 0}};
      if (::poll(events, 2, -1) <= 0 || events[1].revents != 0) return;
      const int client = ::accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC);
      if (client < 0) continue;
      const int number = ++connections_;
      pumps_.emplace_back([this, client, number] { Pump(client, number); });
    }
  }

  void Pump(int client, int number) {
    const int server = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(static_cast<uint16_t>(target_));
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (server >= 0 &&
        ::connect(server, reinterpret_cast<const sockaddr*>(&address), sizeof(address)) == 0) {
      char buffer[16384];
      while (!stopping_) {
        pollfd events[3] = {{client, POLLIN, 0}, {server, POLLIN, 0}, {stop_[0], POLLIN, 0}};
        if (::poll(events, 3, -1) <= 0 || events[2].revents != 0) break;
        // Gone quiet: what arrives is read and dropped, nothing is passed on either way.
        const bool quiet = number <= quiet_before_;
        bool closed = false;
        for (int side = 0; side < 2 && !closed; ++side) {
          if (events[side].revents == 0) continue;
          const ssize_t n = ::read(events[side].fd, buffer, sizeof(buffer));
          if (n <= 0) {
            closed = true;
          } else if (!quiet) {
            closed = ::send(events[1 - side].fd, buffer, static_cast<size_t>(n), MSG_NOSIGNAL) != n;
          }
        }
        if (closed) break;
      }
    }
    if (server >= 0) ::close(server);
    ::close(client);
  }

  int target_;
  int listener_ = -1;
  int port_ = 0;
  int stop_[2] = {-1, -1};
  std::atomic<bool> stopping_{false};
  std::atomic<int> connections_{0};
  std::atomic<int> quiet_before_{0};
  std::thread accepter_;
  std::vector<std::thread> pumps_;  // only the accepter adds to it, and it is joined first
};

kube::HttpRequest Get(absl::Duration timeout) {
  kube::HttpRequest request;
  request.method = "GET";
  request.path = "/version";
  request.timeout = timeout;
  return request;
}

TEST(CurlTransportRealTest, ARequestAfterATimeoutDoesNotWaitOnTheQuietConnection) {
  HANDOFF_REAL_CLUSTER_OR_SKIP(cluster);
  kube::ClusterCredentials credentials = cluster.AdminCredentials();
  const size_t colon = credentials.server.rfind(':');
  ASSERT_NE(colon, std::string::npos) << credentials.server;
  Relay relay(std::stoi(credentials.server.substr(colon + 1)));
  ASSERT_GT(relay.port(), 0);
  // The API server's certificate names 127.0.0.1, which the relay's address is too.
  credentials.server = credentials.server.substr(0, colon + 1) + std::to_string(relay.port());
  absl::StatusOr<std::unique_ptr<kube::HttpTransport>> transport =
      kube::NewCurlTransport(credentials);
  ASSERT_TRUE(transport.ok()) << transport.status();

  absl::StatusOr<kube::HttpResponse> first = (*transport)->Send(Get(absl::Seconds(10)));
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(first->status, 200);
  EXPECT_EQ(relay.connections(), 1);

  relay.Quiet();
  absl::StatusOr<kube::HttpResponse> quiet = (*transport)->Send(Get(absl::Seconds(1)));
  EXPECT_EQ(quiet.status().code(), absl::StatusCode::kDeadlineExceeded) << quiet.status();

  // A retry on the quiet connection would time out too; over a new one the server answers.
  absl::StatusOr<kube::HttpResponse> next = (*transport)->Send(Get(absl::Seconds(5)));
  ASSERT_TRUE(next.ok()) << next.status();
  EXPECT_EQ(next->status, 200);
  EXPECT_EQ(relay.connections(), 2);
}

}  // namespace
}  // namespace handoff
