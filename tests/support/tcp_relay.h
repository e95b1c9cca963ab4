// Test helper: a TCP relay on 127.0.0.1 in front of a server, behaving as a TCP load balancer
// (haproxy in mode tcp, kubeadm's HA endpoint) does when a backend misbehaves:
//   Quiet()      the connections open now stop relaying (they stay open, silent), as when the
//                API server behind them stops answering in its shutdown grace;
//   HangUp(n)    the next n connections are closed as soon as the client's first bytes arrive
//                (its TLS ClientHello), as when the balancer's backend resets the connection.
// Every other connection is relayed byte for byte. Header-only; threads of its own, joined on
// destruction.
#ifndef HANDOFF_TESTS_SUPPORT_TCP_RELAY_H_
#define HANDOFF_TESTS_SUPPORT_TCP_RELAY_H_

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace handoff::test_support {

class TcpRelay {
 public:
  // Relays to 127.0.0.1:<target>; port() is 0 when the relay could not listen.
  explicit TcpRelay(int target) : target_(target) {
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
  ~TcpRelay() {
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
  // A relay to the port of `url` ("https://127.0.0.1:6443"), with `url` changed to name the
  // relay's port instead; null (and `url` unchanged) when `url` has no port or the relay could
  // not listen. A certificate for 127.0.0.1 holds for the relay's address too.
  static std::unique_ptr<TcpRelay> InFrontOf(std::string& url) {
    const size_t colon = url.rfind(':');
    if (colon == std::string::npos) return nullptr;
    const int target = std::atoi(url.c_str() + colon + 1);
    if (target <= 0) return nullptr;
    auto relay = std::make_unique<TcpRelay>(target);
    if (relay->port() == 0) return nullptr;
    url = url.substr(0, colon + 1) + std::to_string(relay->port());
    return relay;
  }

  TcpRelay(const TcpRelay&) = delete;
  TcpRelay& operator=(const TcpRelay&) = delete;

  int port() const { return port_; }
  // Connections accepted so far, hung up ones included.
  int connections() const { return connections_; }
  void Quiet() { quiet_before_ = connections_.load(); }
  void HangUp(int count) { hang_ups_ = count; }

 private:
  void Accept() {
    while (!stopping_) {
      pollfd events[2] = {{listener_, POLLIN, 0}, {stop_[0], POLLIN, 0}};
      if (::poll(events, 2, -1) <= 0 || events[1].revents != 0) return;
      const int client = ::accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC);
      if (client < 0) continue;
      const int number = ++connections_;
      const bool hang_up = hang_ups_.fetch_sub(1) > 0;
      pumps_.emplace_back([this, client, number, hang_up] {
        if (hang_up) {
          HangUpOn(client);
        } else {
          Pump(client, number);
        }
      });
    }
  }

  void HangUpOn(int client) {
    pollfd events[2] = {{client, POLLIN, 0}, {stop_[0], POLLIN, 0}};
    char buffer[4096];
    if (::poll(events, 2, -1) > 0 && events[0].revents != 0) {
      (void)!::read(client, buffer, sizeof(buffer));
    }
    ::close(client);
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
  std::atomic<int> hang_ups_{0};
  std::thread accepter_;
  std::vector<std::thread> pumps_;  // only the accepter adds to it, and it is joined first
};

}  // namespace handoff::test_support

#endif  // HANDOFF_TESTS_SUPPORT_TCP_RELAY_H_
