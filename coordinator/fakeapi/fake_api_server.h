// The fake API server on the network: ApiStore behind cpp-httplib, over TLS with the test CA (or
// plain HTTP), on 127.0.0.1 and a port the kernel picks by default. The user is the client
// certificate's CN (groups: its O entries), else the bearer token's user; a request with neither
// is system:anonymous, and an unknown token gets 401.
#ifndef HANDOFF_COORDINATOR_FAKEAPI_FAKE_API_SERVER_H_
#define HANDOFF_COORDINATOR_FAKEAPI_FAKE_API_SERVER_H_

#include <map>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "coordinator/fakeapi/api_store.h"

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

#endif  // HANDOFF_COORDINATOR_FAKEAPI_FAKE_API_SERVER_H_
