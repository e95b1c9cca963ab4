#include "rehearsal/standin/health_server.h"

#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/base/strings.h"
#include "common/pki/pki.h"
#include "httplib.h"
#include "rehearsal/sandbox/httplib_serving.h"

namespace handoff::standin {
namespace {

constexpr absl::Duration kCertificateValidity = absl::Hours(24 * 365);

bool IsUnspecified(const std::string& address) {
  return address == "0.0.0.0" || address == "::" || address.empty();
}

absl::StatusOr<pki::KeyPair> ServingCertificate(const HealthServerOptions& options,
                                                absl::Time now) {
  const std::string stamp = StrCat(absl::ToUnixSeconds(now));
  // As k8s.io/client-go/util/cert GenerateSelfSignedCertKey: a CA made for the occasion, whose
  // key is discarded once it has signed the serving certificate.
  absl::StatusOr<pki::KeyPair> ca =
      pki::CreateCertificateAuthority(StrCat("localhost-ca@", stamp), now, kCertificateValidity);
  if (!ca.ok()) return ca.status();
  pki::CertificateRequest request;
  request.common_name = StrCat("localhost@", stamp);
  request.organizations = {options.component};
  request.dns_names = {"localhost"};
  request.ip_addresses = {"127.0.0.1"};
  if (!IsUnspecified(options.bind_address) && options.bind_address != "127.0.0.1") {
    request.ip_addresses.push_back(options.bind_address);
  }
  request.server = true;
  request.validity = kCertificateValidity;
  return pki::IssueCertificate(*ca, request, now);
}

bool LoadKeyPair(SSL_CTX& ctx, const pki::KeyPair& pair) {
  std::unique_ptr<BIO, decltype(&BIO_free)> cert_bio(
      BIO_new_mem_buf(pair.certificate_pem.data(), static_cast<int>(pair.certificate_pem.size())),
      &BIO_free);
  std::unique_ptr<BIO, decltype(&BIO_free)> key_bio(
      BIO_new_mem_buf(pair.private_key_pem.data(), static_cast<int>(pair.private_key_pem.size())),
      &BIO_free);
  if (cert_bio == nullptr || key_bio == nullptr) return false;
  std::unique_ptr<X509, decltype(&X509_free)> cert(
      PEM_read_bio_X509(cert_bio.get(), nullptr, nullptr, nullptr), &X509_free);
  std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)> key(
      PEM_read_bio_PrivateKey(key_bio.get(), nullptr, nullptr, nullptr), &EVP_PKEY_free);
  return cert != nullptr && key != nullptr && SSL_CTX_use_certificate(&ctx, cert.get()) == 1 &&
         SSL_CTX_use_PrivateKey(&ctx, key.get()) == 1 && SSL_CTX_check_private_key(&ctx) == 1;
}

}  // namespace

class HealthServer::Impl {
 public:
  ~Impl() { Stop(); }

  absl::Status Start(const HealthServerOptions& options, absl::Time now) {
    absl::StatusOr<pki::KeyPair> pair = ServingCertificate(options, now);
    if (!pair.ok()) {
      return absl::InternalError(
          StrCat("cannot make the serving certificate: ", pair.status().message()));
    }
    server_ = std::make_unique<httplib::SSLServer>([&pair](SSL_CTX& ctx) {
      SSL_CTX_set_min_proto_version(&ctx, TLS1_2_VERSION);
      return LoadKeyPair(ctx, *pair);
    });
    if (!server_->is_valid()) {
      return absl::InternalError("cannot set up TLS with the generated serving certificate");
    }
    // httplib's default sets SO_REUSEPORT, which would let a second process bind the same port
    // and share its connections; Go's net.Listen (the real components) sets only SO_REUSEADDR.
    server_->set_socket_options([](socket_t sock) {
      int yes = 1;
      setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
    });
    server_->set_keep_alive_timeout(2);
    server_->set_tcp_nodelay(true);
    for (const std::string& path : options.paths) {
      server_->Get(path, [marker = options.unhealthy_marker, checks = options.checks](
                             const httplib::Request& request, httplib::Response& response) {
        const bool unhealthy = !marker.empty() && access(marker.c_str(), F_OK) == 0;
        if (request.has_param("verbose")) {
          // k8s.io/apiserver/pkg/server/healthz: one line per check, then the verdict.
          std::string body = "[+]ping ok\n[+]log ok\n";
          body += unhealthy ? "[-]leaderElection failed: reason withheld\n"
                            : "[+]leaderElection ok\n";
          if (checks) {
            for (const std::string& name : checks->Names()) body += "[+]" + name + " ok\n";
          }
          body += unhealthy ? "healthz check failed\n" : "healthz check passed\n";
          response.status = unhealthy ? 500 : 200;
          response.set_content(body, "text/plain; charset=utf-8");
          return;
        }
        if (unhealthy) {
          response.status = 500;
          response.set_content("unhealthy: " + marker + " exists", "text/plain; charset=utf-8");
          return;
        }
        response.status = 200;
        response.set_content("ok", "text/plain; charset=utf-8");
      });
    }
    const std::string host = options.bind_address.empty() ? "0.0.0.0" : options.bind_address;
    port_ = sandbox::BindHttplib(*server_, host, options.port);
    if (port_ <= 0) {
      return absl::UnavailableError(
          StrCat("failed to listen on ", host, ":", options.port,
                 " (--bind-address, --secure-port): the address is in use or not on this host"));
    }
    serving_.Start(*server_);
    return absl::OkStatus();
  }

  void Stop() { serving_.Stop(); }

  int port() const { return port_; }

 private:
  std::unique_ptr<httplib::SSLServer> server_;
  sandbox::HttplibServingThread serving_;  // after server_: stops before it goes
  int port_ = 0;
};

HealthServer::HealthServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
HealthServer::~HealthServer() = default;

absl::StatusOr<std::unique_ptr<HealthServer>> HealthServer::Start(
    const HealthServerOptions& options, absl::Time now) {
  auto impl = std::make_unique<Impl>();
  if (absl::Status started = impl->Start(options, now); !started.ok()) return started;
  return std::make_unique<HealthServer>(std::move(impl));
}

void HealthServer::Stop() { impl_->Stop(); }
int HealthServer::port() const { return impl_->port(); }

void NamedChecks::Add(const std::string& name) {
  std::lock_guard<std::mutex> lock(mutex_);
  names_.push_back(name);
}

void NamedChecks::Clear() {
  std::lock_guard<std::mutex> lock(mutex_);
  names_.clear();
}

std::vector<std::string> NamedChecks::Names() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return names_;
}

}  // namespace handoff::standin
