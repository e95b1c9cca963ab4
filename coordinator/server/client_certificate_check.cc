#include "coordinator/server/client_certificate_check.h"

#include <string>
#include <string_view>
#include <utility>

#include "common/base/strings.h"
#include "common/pki/pki.h"
#include "grpcpp/security/tls_certificate_verifier.h"
#include "grpcpp/security/tls_credentials_options.h"
#include "spdlog/spdlog.h"

namespace handoff::server {
namespace {

class ClientCertificateVerifier : public grpc::experimental::ExternalCertificateVerifier {
 public:
  ClientCertificateVerifier(std::shared_ptr<const rpc::TlsMaterial> tls,
                            std::function<void(const absl::Status&)> on_refused)
      : tls_(std::move(tls)), on_refused_(std::move(on_refused)) {}

  bool Verify(grpc::experimental::TlsCustomVerificationCheckRequest* request,
              std::function<void(grpc::Status)> /*callback*/,
              grpc::Status* sync_status) override {
    const grpc::string_ref leaf = request->peer_cert();
    const grpc::string_ref rest = request->peer_cert_full_chain();
    absl::Status verified;
    if (leaf.empty()) {
      verified = absl::UnauthenticatedError("the client sent no certificate");
    } else {
      // The leaf first, then whatever else the peer sent (untrusted: it may only lead to a CA
      // served now). Checked now, at the handshake, as the TLS stack would have.
      verified = pki::VerifyChain(
          tls_->Current().ca_pem,
          StrCat(std::string_view(leaf.data(), leaf.size()), "\n",
                 std::string_view(rest.data(), rest.size())),
          absl::Now(), pki::KeyUsage::kClientAuth);
    }
    if (verified.ok()) {
      *sync_status = grpc::Status::OK;
    } else {
      if (on_refused_) on_refused_(verified);
      *sync_status =
          grpc::Status(grpc::StatusCode::UNAUTHENTICATED, std::string(verified.message()));
    }
    return true;  // synchronous: nothing to cancel
  }

  void Cancel(grpc::experimental::TlsCustomVerificationCheckRequest* /*request*/) override {}

 private:
  const std::shared_ptr<const rpc::TlsMaterial> tls_;
  const std::function<void(const absl::Status&)> on_refused_;
};

}  // namespace

absl::StatusOr<std::shared_ptr<rpc::TlsMaterial>> CoordinatorTlsMaterial(
    const rpc::TlsPems& pems, const rpc::TlsFiles& files, absl::Duration refresh_interval) {
  if (files.cert_file.empty()) {
    absl::StatusOr<std::shared_ptr<rpc::TlsMaterial>> fixed = rpc::TlsMaterial::Fixed(pems);
    if (!fixed.ok()) {
      return absl::InvalidArgumentError(
          StrCat("the coordinator's TLS material: ", fixed.status().message()));
    }
    return fixed;
  }
  rpc::TlsWatchOptions options;
  options.refresh_interval = refresh_interval;
  const std::string cert_file = files.cert_file;
  options.on_reloaded = [cert_file](const rpc::TlsPems& now) {
    absl::StatusOr<pki::CertificateInfo> info = pki::InspectCertificate(now.cert_pem);
    if (!info.ok()) return;  // checked before it was taken
    spdlog::info("{} replaced: new connections get CN={}, serial {}, valid until {}", cert_file,
                 info->common_name, info->serial_hex,
                 absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", info->not_after, absl::UTCTimeZone()));
    // Served all the same (it is what the operator put there), but said now rather than left
    // to the clients' "certificate verify failed".
    const absl::Time now_time = absl::Now();
    if (absl::Status verified =
            pki::VerifyChain(now.ca_pem, now.cert_pem, now_time, pki::KeyUsage::kServerAuth);
        !verified.ok()) {
      spdlog::warn("{}: agents and operators will refuse the replaced certificate: {}",
                   cert_file, std::string(verified.message()));
    } else if (pki::ExpiresSoon(*info, now_time)) {
      spdlog::warn("{}: the replaced certificate expires soon ({})", cert_file,
                   absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", info->not_after, absl::UTCTimeZone()));
    }
  };
  options.on_refused = [](const absl::Status& refused) {
    spdlog::warn("{}", std::string(refused.message()));
  };
  return rpc::TlsMaterial::Watch(files, std::move(options));
}

std::shared_ptr<grpc::ServerCredentials> ClientCheckingServerCredentials(
    std::shared_ptr<const rpc::TlsMaterial> tls,
    std::function<void(const absl::Status&)> on_refused) {
  grpc::experimental::TlsServerCredentialsOptions options(tls->provider());
  // The CA too, so that the handshake's CertificateRequest names it to the clients.
  options.watch_root_certs();
  options.watch_identity_key_cert_pairs();
  // The client must send a certificate; the verifier, not gRPC, decides whether it chains.
  options.set_cert_request_type(GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_BUT_DONT_VERIFY);
  options.set_certificate_verifier(
      grpc::experimental::ExternalCertificateVerifier::Create<ClientCertificateVerifier>(
          std::move(tls), std::move(on_refused)));
  return grpc::experimental::TlsServerCredentials(options);
}

}  // namespace handoff::server
