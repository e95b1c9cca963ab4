// The coordinator's check of its clients' TLS certificates, in place of gRPC's own: gRPC 1.51
// fails the handshake of a certificate it refuses with only "certificate verify failed" (on
// stderr, at most), where this names the certificate and why (expired, not yet valid, issued by
// another CA, not a client certificate) in the coordinator's log.
#ifndef HANDOFF_COORDINATOR_SERVER_CLIENT_CERTIFICATE_CHECK_H_
#define HANDOFF_COORDINATOR_SERVER_CLIENT_CERTIFICATE_CHECK_H_

#include <functional>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "grpcpp/security/server_credentials.h"

namespace handoff::server {

// Server credentials that require a client certificate and verify it as OpenSSL would for a TLS
// server (pki::VerifyChain: the chain to a CA of `ca_pem`, its only trust anchors; every
// certificate's validity at the time of the handshake, by the wall clock as every TLS stack
// reads it; clientAuth), serving `cert_pem` with `key_pem`. gRPC's TLS still checks that the
// client holds the key of the certificate it sent; only the chain check is done here. A refused
// handshake calls `on_refused` with the reason (on a gRPC thread; it must not block) and never
// reaches a service. InvalidArgument when the key is not the certificate's or a PEM does not
// parse.
absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> ClientCheckingServerCredentials(
    const std::string& ca_pem, const std::string& cert_pem, const std::string& key_pem,
    std::function<void(const absl::Status&)> on_refused);

}  // namespace handoff::server

#endif  // HANDOFF_COORDINATOR_SERVER_CLIENT_CERTIFICATE_CHECK_H_
