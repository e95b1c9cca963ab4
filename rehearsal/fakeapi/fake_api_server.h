// The fake API server on the network: ApiStore behind HTTP/1.1 (http_wire.h, api_http.h), over
// TLS with the test CA (or plain HTTP), on 127.0.0.1 and a port the kernel picks by default. The
// user is the client certificate's CN (groups: its O entries), else the bearer token's user; a
// request with neither is system:anonymous, and an unknown token gets 401.
//
// Connections: one thread multiplexes every connection (epoll) and serves each request as soon as
// its bytes are in, so a connection that sends nothing, or sends slowly, holds no thread and
// delays no one else. Every phase of a connection is bounded in time, as kube-apiserver bounds it
// (the defaults below), and a connection's memory is bounded by the header and body limits. When
// max_connections are open, a new connection closes the one that has been quiet longest. Timeouts
// run on the system's monotonic clock.
#ifndef HANDOFF_REHEARSAL_FAKEAPI_FAKE_API_SERVER_H_
#define HANDOFF_REHEARSAL_FAKEAPI_FAKE_API_SERVER_H_

#include <map>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "rehearsal/fakeapi/api_store.h"

namespace handoff::fakeapi {

struct FakeApiServerOptions {
  std::string host = "127.0.0.1";
  int port = 0;  // 0: any free port
  // The server's certificate and key (PEM files). Both empty: plain HTTP.
  std::string cert_file;
  std::string key_file;
  // CA (PEM file) that client certificates must chain to; "" accepts no client certificates.
  // Clients without a certificate are still served (tokens, anonymous), as kube-apiserver does.
  std::string client_ca_file;
  // Bearer token -> user.
  std::map<std::string, UserInfo> tokens;

  // Time limits, kube-apiserver's http.Server's (k8s.io/apiserver/pkg/server/secure_serving.go)
  // unless said. A connection that misses one is closed without an answer.
  // A new connection's TLS handshake, and then its first request's line and headers, each get
  // this long (ReadHeaderTimeout), as does every later request's head from its first byte.
  absl::Duration read_header_timeout = absl::Seconds(32);
  // A connection between requests waits this long for the next one (IdleTimeout).
  absl::Duration idle_timeout = absl::Seconds(90);
  // Once a request's head is in, its body must arrive within this, and once an answer is
  // written, the client must take it within this. Go's server sets no such limit; 60 s is
  // kube-apiserver's request timeout (--request-timeout).
  absl::Duration request_timeout = absl::Seconds(60);
  // Open connections at most (kube-apiserver has no such cap; the fake's file descriptors do).
  int max_connections = 1024;
};

class FakeApiServer {
 public:
  // Binds and serves on a thread of its own. Borrows `store`, which must outlive the server.
  static absl::StatusOr<std::unique_ptr<FakeApiServer>> Start(ApiStore& store,
                                                              FakeApiServerOptions options);
  // Stops serving and joins the thread.
  ~FakeApiServer();
  FakeApiServer(const FakeApiServer&) = delete;
  FakeApiServer& operator=(const FakeApiServer&) = delete;

  // Closes the listening socket and every connection at once, and joins the thread. Idempotent;
  // call from any thread but the server's.
  void Stop();
  int port() const;
  // "https://127.0.0.1:PORT" (or http://).
  std::string url() const;

  class Impl;
  // Use Start().
  explicit FakeApiServer(std::unique_ptr<Impl> impl);

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace handoff::fakeapi

#endif  // HANDOFF_REHEARSAL_FAKEAPI_FAKE_API_SERVER_H_
