#include "coordinator/fakeapi/fake_api_server.h"

#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <atomic>
#include <thread>

#include "agent/base/strings.h"
#include "coordinator/kube/kubeconfig.h"
#include "httplib.h"

namespace handoff::fakeapi {
namespace {

// The subject of the client's verified certificate: CN is the user, each O a group (as
// kube-apiserver's x509 authenticator reads it). std::nullopt when there is no certificate.
std::optional<UserInfo> CertificateUser(const SSL* ssl) {
  if (ssl == nullptr) return std::nullopt;
  std::unique_ptr<X509, decltype(&X509_free)> cert(SSL_get1_peer_certificate(ssl), &X509_free);
  if (cert == nullptr || SSL_get_verify_result(ssl) != X509_V_OK) return std::nullopt;
  const kube::CertificateSubject subject = kube::SubjectOfCertificate(cert.get());
  UserInfo user;
  user.name = subject.common_name;
  user.groups = subject.organizations;
  if (user.name.empty()) return std::nullopt;
  user.groups.emplace_back("system:authenticated");
  return user;
}

}  // namespace

class FakeApiServer::Impl {
 public:
  Impl(ApiStore& store, FakeApiServerOptions options)
      : store_(store), options_(std::move(options)) {}

  ~Impl() { Stop(); }

  absl::Status Start() {
    const bool tls = !options_.cert_file.empty() || !options_.key_file.empty();
    if (tls) {
      if (options_.cert_file.empty() || options_.key_file.empty()) {
        return absl::InvalidArgumentError("TLS needs both a certificate and a key file");
      }
      std::string error;
      auto server = std::make_unique<httplib::SSLServer>(
          [this, &error](SSL_CTX& ctx) { return ConfigureTls(ctx, error); });
      if (!server->is_valid()) {
        return absl::InvalidArgumentError(StrCat("cannot set up TLS: ", error));
      }
      server_ = std::move(server);
      scheme_ = "https";
    } else {
      server_ = std::make_unique<httplib::Server>();
      scheme_ = "http";
    }
    // Idle keep-alive connections hold a server thread; short, so Stop() never waits long.
    server_->set_keep_alive_timeout(2);
    // httplib writes a response's head and body separately; with Nagle's algorithm on, the body
    // waits for the client's delayed ACK (40ms on Linux) on every request.
    server_->set_tcp_nodelay(true);
    auto handler = [this](const httplib::Request& request, httplib::Response& response) {
      Serve(request, response);
    };
    server_->Get(".*", handler);
    server_->Post(".*", handler);
    server_->Put(".*", handler);
    server_->Delete(".*", handler);
    server_->Patch(".*", handler);

    if (options_.port == 0) {
      port_ = server_->bind_to_any_port(options_.host);
    } else {
      port_ = server_->bind_to_port(options_.host, options_.port) ? options_.port : -1;
    }
    if (port_ <= 0) {
      return absl::UnavailableError(StrCat("cannot listen on ", options_.host, ":", options_.port));
    }
    thread_ = std::thread([this] {
      server_->listen_after_bind();
      serving_done_ = true;
    });
    return absl::OkStatus();
  }

  void Stop() {
    if (!thread_.joinable()) return;
    // httplib 0.11 (Debian 12) has no wait_until_ready(), and stop() does nothing until the
    // thread has entered its accept loop (is_running()); that happens right after the thread
    // starts, without waiting on anything, so yielding until then is short and bounded.
    while (!server_->is_running() && !serving_done_) std::this_thread::yield();
    server_->stop();
    thread_.join();
  }

  int port() const { return port_; }
  std::string url() const { return StrCat(scheme_, "://", options_.host, ":", port_); }

 private:
  bool ConfigureTls(SSL_CTX& ctx, std::string& error) {
    SSL_CTX_set_min_proto_version(&ctx, TLS1_2_VERSION);
    if (SSL_CTX_use_certificate_chain_file(&ctx, options_.cert_file.c_str()) != 1) {
      error = StrCat("cannot load the certificate ", options_.cert_file);
      return false;
    }
    if (SSL_CTX_use_PrivateKey_file(&ctx, options_.key_file.c_str(), SSL_FILETYPE_PEM) != 1 ||
        SSL_CTX_check_private_key(&ctx) != 1) {
      error = StrCat("cannot load the key ", options_.key_file, " or it does not match ",
                     options_.cert_file);
      return false;
    }
    if (!options_.client_ca_file.empty()) {
      if (SSL_CTX_load_verify_locations(&ctx, options_.client_ca_file.c_str(), nullptr) != 1) {
        error = StrCat("cannot load the client CA ", options_.client_ca_file);
        return false;
      }
      SSL_CTX_set_client_CA_list(&ctx, SSL_load_client_CA_file(options_.client_ca_file.c_str()));
      // Ask for a certificate and verify one that is sent, but serve clients without one (tokens,
      // anonymous), as kube-apiserver does.
      SSL_CTX_set_verify(&ctx, SSL_VERIFY_PEER, nullptr);
      // With peer verification on, OpenSSL refuses to resume a session (libcurl resumes when it
      // reconnects) unless the context has a session id context: "internal error" alert.
      static constexpr unsigned char kSessionContext[] = "handoff-fake-apiserver";
      SSL_CTX_set_session_id_context(&ctx, kSessionContext, sizeof(kSessionContext) - 1);
    }
    return true;
  }

  void Serve(const httplib::Request& http, httplib::Response& response) {
    ApiRequest request;
    request.method = http.method;
    request.path = http.path;
    for (const auto& [key, value] : http.params) request.query[key] = value;
    request.body = http.body;
    request.user = Authenticate(http);
    ApiResponse answer = store_.Handle(request);
    response.status = answer.status;
    for (const auto& [name, value] : answer.headers) response.set_header(name, value);
    response.set_content(answer.body, "application/json");
  }

  std::optional<UserInfo> Authenticate(const httplib::Request& http) const {
    if (std::optional<UserInfo> user = CertificateUser(http.ssl)) return user;
    const std::string authorization = http.get_header_value("Authorization");
    if (StartsWith(authorization, "Bearer ")) {
      auto it = options_.tokens.find(authorization.substr(7));
      if (it == options_.tokens.end()) return std::nullopt;  // 401
      UserInfo user = it->second;
      user.groups.emplace_back("system:authenticated");
      return user;
    }
    return UserInfo{std::string(kAnonymousUser), {"system:unauthenticated"}};
  }

  ApiStore& store_;
  FakeApiServerOptions options_;
  std::unique_ptr<httplib::Server> server_;
  std::string scheme_;
  std::thread thread_;
  std::atomic<bool> serving_done_{false};
  int port_ = 0;
};

FakeApiServer::FakeApiServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

FakeApiServer::~FakeApiServer() = default;

absl::StatusOr<std::unique_ptr<FakeApiServer>> FakeApiServer::Start(ApiStore& store,
                                                                    FakeApiServerOptions options) {
  auto impl = std::make_unique<Impl>(store, std::move(options));
  if (absl::Status started = impl->Start(); !started.ok()) return started;
  return std::make_unique<FakeApiServer>(std::move(impl));
}

void FakeApiServer::Stop() { impl_->Stop(); }
int FakeApiServer::port() const { return impl_->port(); }
std::string FakeApiServer::url() const { return impl_->url(); }

}  // namespace handoff::fakeapi
