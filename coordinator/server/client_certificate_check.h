// The coordinator's check of its clients' TLS certificates, in place of gRPC's own: gRPC 1.51
// fails the handshake of a certificate it refuses with only "certificate verify failed" (on
// stderr, at most), where this names the certificate and why (expired, not yet valid, issued by
// another CA, not a client certificate) in the coordinator's log.
#ifndef HANDOFF_COORDINATOR_SERVER_CLIENT_CERTIFICATE_CHECK_H_
#define HANDOFF_COORDINATOR_SERVER_CLIENT_CERTIFICATE_CHECK_H_

#include <functional>
#include <memory>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "grpcpp/security/server_credentials.h"
#include "proto/rpc/tls_material.h"

namespace handoff::server {

// Server credentials that require a client certificate and verify it as OpenSSL would for a TLS
// server (pki::VerifyChain: the chain to a CA of the CA `tls` holds at the handshake, its only
// trust anchors; every certificate's validity at the time of the handshake, by the wall clock as
// every TLS stack reads it; clientAuth), serving the certificate and key `tls` holds then: with
// watched material, new connections get replaced files without a restart. gRPC's TLS still
// checks that the client holds the key of the certificate it sent; only the chain check is done
// here. A refused handshake calls `on_refused` with the reason (on a gRPC thread; it must not
// block) and never reaches a service. The credentials keep `tls` alive.
// The coordinator's own TLS material: the files watched every `refresh_interval` when
// `files.cert_file` is set (reloads logged at info, refused replacements as warnings, and a
// reloaded certificate that clients would refuse, or that expires soon, as a warning too),
// otherwise `pems` as they are. InvalidArgument, naming the file or the PEM, when a CA or
// certificate does not parse or the key is not the certificate's.
absl::StatusOr<std::shared_ptr<rpc::TlsMaterial>> CoordinatorTlsMaterial(
    const rpc::TlsPems& pems, const rpc::TlsFiles& files, absl::Duration refresh_interval);

std::shared_ptr<grpc::ServerCredentials> ClientCheckingServerCredentials(
    std::shared_ptr<const rpc::TlsMaterial> tls,
    std::function<void(const absl::Status&)> on_refused);

}  // namespace handoff::server

#endif  // HANDOFF_COORDINATOR_SERVER_CLIENT_CERTIFICATE_CHECK_H_
