// What the agent reads from its own client certificate before dialing (OpenSSL).
#ifndef HANDOFF_AGENT_DAEMON_CERTIFICATE_H_
#define HANDOFF_AGENT_DAEMON_CERTIFICATE_H_

#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace handoff {

// The subject common name (CN) of the first certificate in `pem`. InvalidArgument when `pem`
// holds no PEM certificate, or one without a CN.
absl::StatusOr<std::string> CertificateCommonName(std::string_view pem);

// OK when `key_pem` is the private key of the first certificate in `cert_pem`; InvalidArgument
// when it is not a PEM private key or belongs to another certificate.
absl::Status CheckKeyMatchesCertificate(std::string_view cert_pem, std::string_view key_pem);

}  // namespace handoff

#endif  // HANDOFF_AGENT_DAEMON_CERTIFICATE_H_
