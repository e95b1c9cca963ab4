// Health endpoints of control-plane components over HTTP(S).
#ifndef HANDOFF_COMMON_SYSTEM_HEALTH_CHECKER_H_
#define HANDOFF_COMMON_SYSTEM_HEALTH_CHECKER_H_

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace handoff {

struct HealthEndpoint {
  std::string scheme = "https";
  std::string host = "127.0.0.1";
  int port = 0;
  std::string path = "/healthz";
  std::string Url() const;  // "https://127.0.0.1:10257/healthz" (IPv6 hosts bracketed)
};

// What a GET answered.
struct HttpAnswer {
  long status = 0;
  std::string body;        // at most the `max_body` asked for
  bool truncated = false;  // the body was longer
};

class HealthChecker {
 public:
  virtual ~HealthChecker() = default;
  // OK when a GET answers 200 within `timeout`; otherwise Unavailable with the URL and what went
  // wrong (connection refused, TLS error, timeout, or the status code and the start of the body).
  virtual absl::Status Check(const HealthEndpoint& endpoint, absl::Duration timeout) = 0;
  // The answer to a GET, whatever its status (a failing /healthz?verbose still lists its
  // checks); Unavailable when none came within `timeout`. Checkers that only check health
  // leave it Unimplemented.
  virtual absl::StatusOr<HttpAnswer> Get(const HealthEndpoint& endpoint, absl::Duration timeout,
                                         size_t max_body);
};

// libcurl. The serving certificate is not verified: the kube-controller-manager and
// cloud-controller-manager serve self-signed certificates on loopback, and their /healthz is
// anonymous; what matters is that the restarted process answers 200.
std::unique_ptr<HealthChecker> NewCurlHealthChecker();

}  // namespace handoff

#endif  // HANDOFF_COMMON_SYSTEM_HEALTH_CHECKER_H_
