// What the agent reads from its own client certificate before dialing (OpenSSL), and whether the
// coordinator would accept it.
#ifndef HANDOFF_AGENT_DAEMON_CERTIFICATE_H_
#define HANDOFF_AGENT_DAEMON_CERTIFICATE_H_

#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

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

}  // namespace handoff

#endif  // HANDOFF_AGENT_DAEMON_CERTIFICATE_H_
