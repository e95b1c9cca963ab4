#include "common/system/metrics_server.h"

#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <exception>
#include <optional>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "prometheus/exposer.h"
#include "prometheus/registry.h"

namespace handoff {
namespace {

// civetweb's worker threads (one per connection being served) and how long a connection may take
// to send its request.
constexpr int kWorkers = 16;
constexpr int kRequestTimeoutMs = 3000;

struct HostPort {
  std::string host;
  int port = 0;
};

absl::StatusOr<HostPort> ParseListen(const std::string& listen) {
  const size_t colon = listen.rfind(':');
  const auto invalid = [&](const std::string& why) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", listen, "' is not HOST:PORT (", why, "), e.g. 127.0.0.1:7451"));
  };
  if (colon == std::string::npos || colon == 0) return invalid("no host");
  HostPort parsed;
  parsed.host = listen.substr(0, colon);
  const std::string port = listen.substr(colon + 1);
  // civetweb reads more than HOST:PORT in its listening_ports option (a list after a comma,
  // "s" for TLS, "r" for redirects): only a plain name or address and a number reach it.
  for (char c : parsed.host) {
    const bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                       c == '.' || c == '-';
    if (!plain) return invalid("the host is an IPv4 address or a name");
  }
  if (port.empty() || port.find_first_not_of("0123456789") != std::string::npos ||
      !absl::SimpleAtoi(port, &parsed.port) || parsed.port > 65535) {
    return invalid("the port is a number from 0 to 65535");
  }
  return parsed;
}

// civetweb says only that it could not bind; the same bind here says why (EADDRINUSE,
// EADDRNOTAVAIL, a name that does not resolve).
std::string WhyNotBound(const HostPort& address) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV | AI_PASSIVE;
  addrinfo* found = nullptr;
  const std::string port = std::to_string(address.port);
  if (int error = getaddrinfo(address.host.c_str(), port.c_str(), &hints, &found); error != 0) {
    return absl::StrCat("cannot resolve ", address.host, ": ", gai_strerror(error));
  }
  std::string reason = "the HTTP server refused the address";
  for (addrinfo* candidate = found; candidate != nullptr; candidate = candidate->ai_next) {
    const int fd = socket(candidate->ai_family, candidate->ai_socktype | SOCK_CLOEXEC,
                          candidate->ai_protocol);
    if (fd < 0) {
      reason = std::strerror(errno);
      continue;
    }
    const int on = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on));  // as civetweb binds
    const int bound = bind(fd, candidate->ai_addr, candidate->ai_addrlen);
    const int bind_errno = errno;
    close(fd);
    if (bound != 0) {
      reason = std::strerror(bind_errno);
      break;
    }
  }
  freeaddrinfo(found);
  return reason;
}

}  // namespace

bool MetricsOff(const std::string& listen) { return listen.empty() || listen == "off"; }

std::optional<std::string> ExposureWarning(const std::string& listen) {
  absl::StatusOr<HostPort> address = ParseListen(listen);
  if (!address.ok()) return std::nullopt;
  const std::string& host = address->host;
  if (host == "localhost" || host.rfind("127.", 0) == 0) return std::nullopt;
  return absl::StrCat(
      "metrics are served on ", listen,
      ", not a loopback address: whoever reaches it reads the rollout's metrics and can hold the ",
      kWorkers,
      " connections it serves at once; bind 127.0.0.1 unless Prometheus scrapes from another "
      "machine, and then let a firewall admit only Prometheus");
}

absl::StatusOr<std::unique_ptr<MetricsServer>> MetricsServer::Start(
    const std::string& listen, std::shared_ptr<prometheus::Registry> registry) {
  absl::StatusOr<HostPort> address = ParseListen(listen);
  if (!address.ok()) return address.status();
  std::unique_ptr<MetricsServer> server(new MetricsServer());
  server->registry_ = std::move(registry);
  server->host_ = address->host;
  try {
    // civetweb gives each connection a worker thread until its request is read: with two
    // threads and civetweb's 30 s for a request, two idle connections kept every scrape out for
    // 30 s. kWorkers threads, and kRequestTimeoutMs for a request to arrive, take many idle
    // connections renewed every few seconds to hold Prometheus off, and then only briefly.
    server->exposer_ = std::make_unique<prometheus::Exposer>(
        std::vector<std::string>{"listening_ports", listen, "num_threads", std::to_string(kWorkers),
                                 "request_timeout_ms", std::to_string(kRequestTimeoutMs)});
  } catch (const std::exception& error) {
    return absl::UnavailableError(
        absl::StrCat("cannot serve metrics on ", listen, ": ", WhyNotBound(*address)));
  }
  server->exposer_->RegisterCollectable(server->registry_);
  const std::vector<int> ports = server->exposer_->GetListeningPorts();
  server->port_ = ports.empty() ? address->port : ports.front();
  return server;
}

MetricsServer::~MetricsServer() = default;

std::string MetricsServer::url() const {
  return absl::StrCat("http://", host_, ":", port_, "/metrics");
}

}  // namespace handoff
