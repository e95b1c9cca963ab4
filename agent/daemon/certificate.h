// What the agent reads from its own client certificate before dialing (OpenSSL), and whether the
// coordinator would accept it.
#ifndef HANDOFF_AGENT_DAEMON_CERTIFICATE_H_
#define HANDOFF_AGENT_DAEMON_CERTIFICATE_H_

#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "proto/rpc/channel.h"
#include "proto/rpc/tls_material.h"
#include "spdlog/logger.h"

namespace handoff {

// The subject common name (CN) of the first certificate in `pem`. InvalidArgument when `pem`
// holds no PEM certificate, or one without a CN.
absl::StatusOr<std::string> CertificateCommonName(std::string_view pem);

// OK when `key_pem` is the private key of the first certificate in `cert_pem`; InvalidArgument
// when it is not a PEM private key or belongs to another certificate.
absl::Status CheckKeyMatchesCertificate(std::string_view cert_pem, std::string_view key_pem);

// OK when the first certificate of `cert_pem` is a TLS client certificate that chains to a
// certificate of `ca_pem` and is valid at `now`, as the coordinator checks it at every handshake
// (against the same handoff CA, which also signs the coordinator's certificate). InvalidArgument
// when a PEM does not parse; FailedPrecondition otherwise, naming the certificate, the reason,
// and its validity window when that is the reason.
absl::Status CheckClientCertificate(std::string_view cert_pem, std::string_view ca_pem,
                                    absl::Time now);

// "CN=cp-1, issued by CN=handoff-ca, valid until 2027-05-01T12:00:00Z", for log lines that
// must say which certificate a coordinator may have refused; "" when `cert_pem` does not parse.
std::string DescribeCertificate(std::string_view cert_pem);

// The agent's TLS material: with `files.cert_file` set, the files (as read now) watched every
// `refresh_interval`, so that a reconnect presents a replaced certificate without a restart;
// a replacement whose certificate no longer names `node_name` is refused like one whose key is
// not the certificate's, with a warning, and the previous one kept. A reload is logged with the
// new certificate, and with a warning when the coordinator would refuse it now. Otherwise
// `pems` as they are. InvalidArgument naming the file (or PEM) when the material is unusable.
absl::StatusOr<std::shared_ptr<rpc::TlsMaterial>> AgentTlsMaterial(
    const rpc::ClientTls& pems, const rpc::TlsFiles& files, absl::Duration refresh_interval,
    const std::string& node_name, std::shared_ptr<spdlog::logger> logger);

}  // namespace handoff

#endif  // HANDOFF_AGENT_DAEMON_CERTIFICATE_H_
