// Certificates for handoff's mutual TLS and for the sandbox: a CA, and leaf certificates it
// signs (EC P-256, SHA-256), with the subject and names each party needs. Built on OpenSSL.
// Pure functions of their inputs except for key generation and serials (fresh randomness each
// call). Thread-safe.
#ifndef HANDOFF_COMMON_PKI_PKI_H_
#define HANDOFF_COMMON_PKI_PKI_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace handoff::pki {

// A certificate and its private key, both PEM (the key as PKCS#8, "BEGIN PRIVATE KEY").
struct KeyPair {
  std::string certificate_pem;
  std::string private_key_pem;
};

struct CertificateRequest {
  std::string common_name;                 // CN
  std::vector<std::string> organizations;  // O, in order ("handoff:agents")
  std::vector<std::string> dns_names;      // subjectAltName DNS entries
  std::vector<std::string> ip_addresses;   // subjectAltName IP entries ("127.0.0.1", "::1")
  bool server = false;                     // extendedKeyUsage serverAuth
  bool client = false;                     // extendedKeyUsage clientAuth
  absl::Duration validity = absl::Hours(24 * 365);
};

// A self-signed CA (basicConstraints CA:TRUE with pathlen 0, keyCertSign and cRLSign) named
// `common_name`, valid from `now` minus 5 minutes (clock skew) for `validity`. InvalidArgument
// for an empty name or a validity that is not positive.
absl::StatusOr<KeyPair> CreateCertificateAuthority(const std::string& common_name, absl::Time now,
                                                   absl::Duration validity);

// A leaf certificate signed by `ca` (whose key must match its certificate), with a fresh key,
// a random serial, CA:FALSE, digitalSignature+keyEncipherment, and the request's names and
// usages. It is valid from `now` minus 5 minutes for `request.validity`, but never past the CA's
// notAfter: a chain stops verifying when its CA expires, so a longer leaf would only mislead.
// InvalidArgument for an empty CN, a name with control characters, a DNS name that is not a
// host name, an IP that does not parse, a validity that is not positive, a request with neither
// server nor client usage, or a CA whose PEMs do not parse or do not belong together.
// FailedPrecondition when `ca` is not a CA certificate or is not valid at `now`.
absl::StatusOr<KeyPair> IssueCertificate(const KeyPair& ca, const CertificateRequest& request,
                                         absl::Time now);

// What a certificate says, as InspectCertificate reads it.
struct CertificateInfo {
  std::string common_name;
  std::vector<std::string> organizations;
  std::string issuer_common_name;  // the CN of the CA that signed it
  std::vector<std::string> dns_names;
  std::vector<std::string> ip_addresses;  // in inet_ntop(3) form
  bool ca = false;                        // basicConstraints CA:TRUE
  bool server = false;                    // extendedKeyUsage serverAuth
  bool client = false;                    // extendedKeyUsage clientAuth
  absl::Time not_before;
  absl::Time not_after;
  std::string serial_hex;  // upper-case hex, no separators
};

// The first certificate of `pem`. InvalidArgument when there is none.
absl::StatusOr<CertificateInfo> InspectCertificate(const std::string& pem);

// "sha256:<64 lower-case hex digits>": the SHA-256 of the DER SubjectPublicKeyInfo of the first
// certificate of `pem`, the form `kubeadm join --discovery-token-ca-cert-hash` pins a cluster
// CA with. InvalidArgument when `pem` holds no certificate.
absl::StatusOr<std::string> PublicKeyPin(const std::string& pem);

// Whether a certificate valid at `now` is worth a warning about its coming expiry: 30 days before
// it, as kubeadm's `certs check-expiration` warns, but never in the first half of its life, so a
// short-lived certificate (the sandbox's last a day) does not warn at every start.
bool ExpiresSoon(const CertificateInfo& info, absl::Time now);

// The extendedKeyUsage VerifyChain requires of the certificate, as a TLS stack would.
enum class KeyUsage { kAny, kClientAuth, kServerAuth };

// OK when the first certificate of `chain_pem` chains to a certificate of `ca_pem` (each one
// there a trust anchor; the certificates after the first in `chain_pem` are untrusted
// intermediates, as a TLS peer sends them), every certificate on the way is valid at `at`, and
// the first allows `usage`. InvalidArgument when a PEM does not parse. FailedPrecondition
// otherwise, with OpenSSL's reason and what a person needs to act on it: "the certificate CN=cp-1
// does not verify against the CA CN=handoff-ca at <at>: certificate has expired (CN=cp-1 is valid
// from <notBefore> to <notAfter>)"; for a certificate of another CA, the issuer it names (and,
// when that is this CA's name, that the CA was made anew); the CA itself when it is the one
// that failed.
absl::Status VerifyChain(const std::string& ca_pem, const std::string& chain_pem, absl::Time at,
                         KeyUsage usage);

// VerifyChain for any usage.
absl::Status VerifyCertificate(const std::string& ca_pem, const std::string& certificate_pem,
                               absl::Time at);

// OK when `pair.private_key_pem` is the private key of `pair.certificate_pem`. InvalidArgument
// when either does not parse or they do not match.
absl::Status CheckKeyPair(const KeyPair& pair);

}  // namespace handoff::pki

#endif  // HANDOFF_COMMON_PKI_PKI_H_
