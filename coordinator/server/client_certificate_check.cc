#include "coordinator/server/client_certificate_check.h"

#include <string_view>
#include <utility>
#include <vector>

#include "agent/base/strings.h"
#include "coordinator/pki/pki.h"
#include "grpcpp/security/tls_certificate_provider.h"
#include "grpcpp/security/tls_certificate_verifier.h"
#include "grpcpp/security/tls_credentials_options.h"

namespace handoff::server {
namespace {

class ClientCertificateVerifier : public grpc::experimental::ExternalCertificateVerifier {
 public:
  ClientCertificateVerifier(std::string ca_pem,
                            std::function<void(const absl::Status&)> on_refused)
      : ca_pem_(std::move(ca_pem)), on_refused_(std::move(on_refused)) {}

  bool Verify(grpc::experimental::TlsCustomVerificationCheckRequest* request,
              std::function<void(grpc::Status)> /*callback*/,
              grpc::Status* sync_status) override {
    const grpc::string_ref leaf = request->peer_cert();
    const grpc::string_ref rest = request->peer_cert_full_chain();
    absl::Status verified;
    if (leaf.empty()) {
      verified = absl::UnauthenticatedError("the client sent no certificate");
    } else {
      // The leaf first, then whatever else the peer sent (untrusted: it may only lead to a CA of
      // ca_pem_). Checked now, at the handshake, as the TLS stack would have.
      verified = pki::VerifyChain(
          ca_pem_, StrCat(std::string_view(leaf.data(), leaf.size()), "\n",
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
  const std::string ca_pem_;
  const std::function<void(const absl::Status&)> on_refused_;
};

}  // namespace

absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> ClientCheckingServerCredentials(
    const std::string& ca_pem, const std::string& cert_pem, const std::string& key_pem,
    std::function<void(const absl::Status&)> on_refused) {
  // gRPC's TLS credentials take the key and certificate as they are and fail each handshake
  // later if they do not belong together; refuse them here, where the error can say so.
  if (absl::Status pair = pki::CheckKeyPair(pki::KeyPair{cert_pem, key_pem}); !pair.ok()) {
    return absl::InvalidArgumentError(StrCat("the coordinator's TLS certificate and key: ",
                                             pair.message()));
  }
  if (absl::StatusOr<pki::CertificateInfo> ca = pki::InspectCertificate(ca_pem); !ca.ok()) {
    return absl::InvalidArgumentError(StrCat("the CA certificate: ", ca.status().message()));
  }
  auto provider = std::make_shared<grpc::experimental::StaticDataCertificateProvider>(
      ca_pem, std::vector<grpc::experimental::IdentityKeyCertPair>{{key_pem, cert_pem}});
  grpc::experimental::TlsServerCredentialsOptions options(provider);
  // The CA too, so that the handshake's CertificateRequest names it to the clients.
  options.watch_root_certs();
  options.watch_identity_key_cert_pairs();
  // The client must send a certificate; the verifier, not gRPC, decides whether it chains.
  options.set_cert_request_type(GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_BUT_DONT_VERIFY);
  options.set_certificate_verifier(
      grpc::experimental::ExternalCertificateVerifier::Create<ClientCertificateVerifier>(
          ca_pem, std::move(on_refused)));
  return grpc::experimental::TlsServerCredentials(options);
}

}  // namespace handoff::server
