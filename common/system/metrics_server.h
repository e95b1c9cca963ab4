// The daemons' Prometheus endpoint: prometheus-cpp's pull Exposer (civetweb) serving one registry
// as the text exposition format on http://HOST:PORT/metrics, bound to that address only. A
// connection that sends no request within 3 s is dropped, and 16 are served at once, so idle
// connections do not keep scrapes out.
//
// Thread safety: the exposer serves scrapes on civetweb's threads of its own; start it after the
// daemon has blocked the signals it takes on one thread, so that those threads inherit the mask.
// The registry's metrics may be updated from any thread while it serves.
#ifndef HANDOFF_COMMON_SYSTEM_METRICS_SERVER_H_
#define HANDOFF_COMMON_SYSTEM_METRICS_SERVER_H_

#include <memory>
#include <optional>
#include <string>

#include "absl/status/statusor.h"

namespace prometheus {
class Exposer;
class Registry;
}  // namespace prometheus

namespace handoff {

// True for a --metrics-listen value that turns metrics off: "" or "off".
bool MetricsOff(const std::string& listen);

// What to warn of a --metrics-listen address that is not a loopback one (127.x, localhost);
// nullopt for a loopback address or one that is not HOST:PORT.
std::optional<std::string> ExposureWarning(const std::string& listen);

class MetricsServer {
 public:
  // Serves `registry` on `listen` ("HOST:PORT"; HOST an IPv4 address or a name, port 0 picks a
  // free one). InvalidArgument when `listen` is not HOST:PORT; Unavailable when it cannot be
  // bound (the reason, e.g. the port is in use or the address is not this host's). The message
  // names `listen`, not the flag: the caller adds that.
  static absl::StatusOr<std::unique_ptr<MetricsServer>> Start(
      const std::string& listen, std::shared_ptr<prometheus::Registry> registry);
  // Stops serving (waits for scrapes in progress).
  ~MetricsServer();

  MetricsServer(const MetricsServer&) = delete;
  MetricsServer& operator=(const MetricsServer&) = delete;

  // The port bound (the chosen one when `listen` asked for 0).
  int port() const { return port_; }
  // Where Prometheus scrapes: "http://HOST:PORT/metrics".
  std::string url() const;

 private:
  MetricsServer() = default;

  std::shared_ptr<prometheus::Registry> registry_;
  std::unique_ptr<prometheus::Exposer> exposer_;
  std::string host_;
  int port_ = 0;
};

}  // namespace handoff

#endif  // HANDOFF_COMMON_SYSTEM_METRICS_SERVER_H_
