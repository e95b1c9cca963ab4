// HTTP to the Kubernetes API server, injected: the client speaks through an HttpTransport, which
// is libcurl against a real (or the fake) API server, or a scripted fake in unit tests.
#ifndef HANDOFF_COMMON_KUBE_HTTP_TRANSPORT_H_
#define HANDOFF_COMMON_KUBE_HTTP_TRANSPORT_H_

#include <map>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/kube/kubeconfig.h"

namespace handoff::kube {

struct HttpRequest {
  std::string method = "GET";  // GET, POST, PUT, DELETE
  std::string path;            // absolute path and query: "/api/v1/nodes?labelSelector=..."
  std::string body;            // JSON for POST and PUT
  absl::Duration timeout = absl::Seconds(30);
};

struct HttpResponse {
  int status = 0;
  std::string body;
  std::map<std::string, std::string> headers;  // names in lower case
};

// Sends one request to the cluster's API server. Any HTTP status is a response; a Status error
// means there was none, and its code says whether the server may have seen the request:
//   Unavailable         nothing was sent (cannot resolve or connect, or the server hung up
//                       during the TLS handshake): safe to retry any request;
//   DeadlineExceeded    no answer within the timeout: the server may have processed it;
//   Internal            the exchange broke after sending: the server may have processed it;
//   FailedPrecondition  TLS or configuration problem (untrusted certificate, bad client key):
//                       retrying will not help.
// Implementations are thread-compatible.
class HttpTransport {
 public:
  virtual ~HttpTransport() = default;
  virtual absl::StatusOr<HttpResponse> Send(const HttpRequest& request) = 0;
};

// libcurl with the credentials of a kubeconfig: the server's certificate is verified against the
// kubeconfig's CA (only that CA) unless it sets insecure-skip-tls-verify; the client certificate
// and key, or the bearer token, authenticate. No proxy is used, no redirect followed.
absl::StatusOr<std::unique_ptr<HttpTransport>> NewCurlTransport(
    const ClusterCredentials& credentials);

}  // namespace handoff::kube

#endif  // HANDOFF_COMMON_KUBE_HTTP_TRANSPORT_H_
