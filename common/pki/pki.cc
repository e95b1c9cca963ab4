#include "common/pki/pki.h"

#include <arpa/inet.h>
#include <openssl/asn1.h>
#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <ctime>
#include <initializer_list>
#include <memory>
#include <string_view>

#include "absl/strings/escaping.h"
#include "common/base/strings.h"

namespace handoff::pki {
namespace {

// Clients and servers disagree about the time by a little; a certificate that starts exactly now
// would be refused for a few seconds by a peer whose clock runs behind.
constexpr absl::Duration kClockSkew = absl::Minutes(5);

// Frees each kind of OpenSSL object with its own function. ASN1_INTEGER, ASN1_IA5STRING and
// ASN1_OCTET_STRING are all ASN1_STRING.
struct OpenSslFree {
  void operator()(BIO* p) const { BIO_free_all(p); }
  void operator()(X509* p) const { X509_free(p); }
  void operator()(X509_EXTENSION* p) const { X509_EXTENSION_free(p); }
  void operator()(X509_STORE* p) const { X509_STORE_free(p); }
  void operator()(X509_STORE_CTX* p) const { X509_STORE_CTX_free(p); }
  void operator()(EVP_PKEY* p) const { EVP_PKEY_free(p); }
  void operator()(EVP_PKEY_CTX* p) const { EVP_PKEY_CTX_free(p); }
  void operator()(BIGNUM* p) const { BN_free(p); }
  void operator()(ASN1_STRING* p) const { ASN1_STRING_free(p); }
  void operator()(GENERAL_NAME* p) const { GENERAL_NAME_free(p); }
  void operator()(GENERAL_NAMES* p) const { GENERAL_NAMES_free(p); }
  void operator()(char* p) const { OPENSSL_free(p); }
  void operator()(STACK_OF(X509) * p) const { sk_X509_pop_free(p, X509_free); }
};
template <typename T>
using Owned = std::unique_ptr<T, OpenSslFree>;

// OpenSSL's queued errors, oldest first. Reading them empties this thread's queue, so that a later
// failure does not report them again.
std::string OpenSslErrors() {
  std::string text;
  while (const unsigned long code = ERR_get_error()) {
    char buffer[512];
    ERR_error_string_n(code, buffer, sizeof(buffer));
    StrAppend(&text, text.empty() ? "" : "; ", buffer);
  }
  return text.empty() ? std::string("no OpenSSL error recorded") : text;
}

absl::Status OpenSslError(std::string_view what) {
  return absl::InternalError(StrCat(what, ": ", OpenSslErrors()));
}

absl::StatusOr<Owned<BIO>> ReadBio(const std::string& pem) {
  if (pem.size() > static_cast<size_t>(INT_MAX)) {
    return absl::InvalidArgumentError("PEM text too large");
  }
  Owned<BIO> bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  if (bio == nullptr) return OpenSslError("allocating an OpenSSL BIO");
  return bio;
}

// `what` names the PEM in messages ("the CA certificate").
absl::StatusOr<Owned<X509>> ParseCertificate(const std::string& pem, std::string_view what) {
  absl::StatusOr<Owned<BIO>> bio = ReadBio(pem);
  if (!bio.ok()) return bio.status();
  Owned<X509> certificate(PEM_read_bio_X509(bio->get(), nullptr, nullptr, nullptr));
  if (certificate == nullptr) {
    return absl::InvalidArgumentError(
        StrCat(what, " is not a PEM certificate (-----BEGIN CERTIFICATE-----): ", OpenSslErrors()));
  }
  return certificate;
}

// Every certificate of `pem`, in order; InvalidArgument when there is none.
absl::StatusOr<std::vector<Owned<X509>>> ParseCertificates(const std::string& pem,
                                                           std::string_view what) {
  absl::StatusOr<Owned<BIO>> bio = ReadBio(pem);
  if (!bio.ok()) return bio.status();
  std::vector<Owned<X509>> certificates;
  while (true) {
    Owned<X509> certificate(PEM_read_bio_X509(bio->get(), nullptr, nullptr, nullptr));
    if (certificate == nullptr) break;
    certificates.push_back(std::move(certificate));
  }
  if (certificates.empty()) {
    return absl::InvalidArgumentError(
        StrCat(what, " is not a PEM certificate (-----BEGIN CERTIFICATE-----): ", OpenSslErrors()));
  }
  // The read that ended the loop queued "no start line".
  ERR_clear_error();
  return certificates;
}

absl::StatusOr<Owned<EVP_PKEY>> ParsePrivateKey(const std::string& pem, std::string_view what) {
  absl::StatusOr<Owned<BIO>> bio = ReadBio(pem);
  if (!bio.ok()) return bio.status();
  Owned<EVP_PKEY> key(PEM_read_bio_PrivateKey(bio->get(), nullptr, nullptr, nullptr));
  if (key == nullptr) {
    return absl::InvalidArgumentError(StrCat(
        what,
        " is not an unencrypted PEM private key (-----BEGIN PRIVATE KEY-----): ", OpenSslErrors()));
  }
  return key;
}

absl::StatusOr<std::string> ContentsOf(BIO* bio) {
  char* data = nullptr;
  const long size = BIO_ctrl(bio, BIO_CTRL_INFO, 0, &data);
  if (size < 0 || (size > 0 && data == nullptr)) return OpenSslError("reading an OpenSSL BIO");
  return std::string(data, static_cast<size_t>(size));
}

absl::StatusOr<KeyPair> Encode(X509* certificate, EVP_PKEY* key) {
  Owned<BIO> certificate_bio(BIO_new(BIO_s_mem()));
  Owned<BIO> key_bio(BIO_new(BIO_s_mem()));
  if (certificate_bio == nullptr || key_bio == nullptr) {
    return OpenSslError("allocating an OpenSSL BIO");
  }
  if (PEM_write_bio_X509(certificate_bio.get(), certificate) != 1) {
    return OpenSslError("encoding the certificate as PEM");
  }
  // PKCS#8 without a passphrase: the agent, the coordinator and handoffctl read their keys
  // unattended; the files' modes (0600) protect them.
  if (PEM_write_bio_PrivateKey(key_bio.get(), key, nullptr, nullptr, 0, nullptr, nullptr) != 1) {
    return OpenSslError("encoding the private key as PEM");
  }
  absl::StatusOr<std::string> certificate_pem = ContentsOf(certificate_bio.get());
  if (!certificate_pem.ok()) return certificate_pem.status();
  absl::StatusOr<std::string> key_pem = ContentsOf(key_bio.get());
  if (!key_pem.ok()) return key_pem.status();
  return KeyPair{*std::move(certificate_pem), *std::move(key_pem)};
}

absl::StatusOr<Owned<EVP_PKEY>> GenerateKey() {
  Owned<EVP_PKEY_CTX> context(EVP_PKEY_CTX_new_from_name(nullptr, "EC", nullptr));
  if (context == nullptr) return OpenSslError("creating an EC key generator");
  if (EVP_PKEY_keygen_init(context.get()) <= 0 ||
      EVP_PKEY_CTX_set_group_name(context.get(), "P-256") <= 0) {
    return OpenSslError("setting up P-256 key generation");
  }
  EVP_PKEY* key = nullptr;
  if (EVP_PKEY_generate(context.get(), &key) <= 0) return OpenSslError("generating a P-256 key");
  return Owned<EVP_PKEY>(key);
}

// 128 random bits, as CA/Browser Forum practice asks for at least 64, so that serials never
// collide and cannot be predicted.
absl::StatusOr<Owned<ASN1_STRING>> RandomSerial() {
  unsigned char bytes[16];
  do {
    if (RAND_bytes(bytes, sizeof(bytes)) != 1) return OpenSslError("drawing a random serial");
    // A DER INTEGER is signed; RFC 5280 4.1.2.2 wants a positive serial.
    bytes[0] &= 0x7f;
  } while (std::all_of(std::begin(bytes), std::end(bytes), [](unsigned char b) { return b == 0; }));
  Owned<BIGNUM> number(BN_bin2bn(bytes, sizeof(bytes), nullptr));
  if (number == nullptr) return OpenSslError("converting the serial");
  Owned<ASN1_STRING> serial(BN_to_ASN1_INTEGER(number.get(), nullptr));
  if (serial == nullptr) return OpenSslError("converting the serial");
  return serial;
}

absl::Time TimeOf(const ASN1_TIME* time) {
  struct tm parts {};
  if (time == nullptr || ASN1_TIME_to_tm(time, &parts) != 1) return absl::InfinitePast();
  return absl::FromTM(parts, absl::UTCTimeZone());
}

std::string Timestamp(absl::Time time) {
  return absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", time, absl::UTCTimeZone());
}

// A subject or issuer field: anything printable, since node and operator names come from
// elsewhere; a control character would only ever be a mistake or an attack on a log.
absl::Status CheckSubjectField(std::string_view field, const std::string& value) {
  if (value.empty()) return absl::InvalidArgumentError(StrCat(field, " is empty"));
  for (const char c : value) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte < 0x20 || byte == 0x7f) {
      return absl::InvalidArgumentError(
          StrCat(field, " \"", absl::CHexEscape(value), "\" contains a control character"));
    }
  }
  return absl::OkStatus();
}

// A host name as RFC 1123 has it, optionally with a leading "*." wildcard label.
bool IsHostName(std::string_view name) {
  if (name.empty() || name.size() > 253) return false;
  name = StripPrefix(name, "*.");
  for (std::string_view label : StrSplit(name, ".")) {
    if (label.empty() || label.size() > 63 || label.front() == '-' || label.back() == '-') {
      return false;
    }
    for (const char c : label) {
      if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
            c == '-')) {
        return false;
      }
    }
  }
  return true;
}

// The address in network byte order (4 or 16 bytes), or an error. inet_pton rather than
// OpenSSL's a2i_IPADDRESS, which takes "10.0.0.1 junk" for 10.0.0.1.
absl::StatusOr<std::string> ParseIpAddress(const std::string& text) {
  unsigned char address[16];
  if (inet_pton(AF_INET, text.c_str(), address) == 1) {
    return std::string(reinterpret_cast<const char*>(address), 4);
  }
  if (inet_pton(AF_INET6, text.c_str(), address) == 1) {
    return std::string(reinterpret_cast<const char*>(address), 16);
  }
  return absl::InvalidArgumentError(
      StrCat("IP address \"", absl::CHexEscape(text),
             "\" is neither an IPv4 address (10.0.0.1) nor an IPv6 address (fd00::1)"));
}

absl::Status AddNameEntry(X509_NAME* name, int nid, const std::string& value) {
  // UTF8String (RFC 5280's choice), given as a fixed type rather than MBSTRING_UTF8: the latter
  // applies X.520's 64-character limit, and Kubernetes node names may be up to 253 characters.
  if (X509_NAME_add_entry_by_NID(name, nid, V_ASN1_UTF8STRING,
                                 reinterpret_cast<const unsigned char*>(value.data()),
                                 static_cast<int>(value.size()), -1, 0) != 1) {
    return OpenSslError(StrCat("adding ", OBJ_nid2sn(nid), "=", value, " to the subject"));
  }
  return absl::OkStatus();
}

// A certificate with a random serial, `key`'s public key, the subject O=... CN=... and the
// validity period; the issuer, the extensions and the signature are up to the caller.
absl::StatusOr<Owned<X509>> NewCertificate(const std::string& common_name,
                                           const std::vector<std::string>& organizations,
                                           EVP_PKEY* key, absl::Time not_before,
                                           absl::Time not_after) {
  Owned<X509> certificate(X509_new());
  if (certificate == nullptr) return OpenSslError("allocating a certificate");
  if (X509_set_version(certificate.get(), X509_VERSION_3) != 1) {
    return OpenSslError("setting the certificate version");
  }
  absl::StatusOr<Owned<ASN1_STRING>> serial = RandomSerial();
  if (!serial.ok()) return serial.status();
  if (X509_set_serialNumber(certificate.get(), serial->get()) != 1) {
    return OpenSslError("setting the serial");
  }
  X509_NAME* subject = X509_get_subject_name(certificate.get());
  for (const std::string& organization : organizations) {
    if (absl::Status added = AddNameEntry(subject, NID_organizationName, organization);
        !added.ok()) {
      return added;
    }
  }
  if (absl::Status added = AddNameEntry(subject, NID_commonName, common_name); !added.ok()) {
    return added;
  }
  if (ASN1_TIME_set(X509_getm_notBefore(certificate.get()), absl::ToTimeT(not_before)) == nullptr ||
      ASN1_TIME_set(X509_getm_notAfter(certificate.get()), absl::ToTimeT(not_after)) == nullptr) {
    return OpenSslError("setting the validity period");
  }
  if (X509_set_pubkey(certificate.get(), key) != 1) return OpenSslError("setting the public key");
  return certificate;
}

// Adds an extension written in openssl.cnf syntax. Only for fixed values: names from the caller
// go through AddSubjectAltName, where a comma cannot smuggle in another entry.
absl::Status AddExtension(X509* certificate, X509V3_CTX& context, int nid, const char* value) {
  Owned<X509_EXTENSION> extension(X509V3_EXT_nconf_nid(nullptr, &context, nid, value));
  if (extension == nullptr || X509_add_ext(certificate, extension.get(), -1) != 1) {
    return OpenSslError(StrCat("adding the extension ", OBJ_nid2sn(nid), " = ", value));
  }
  return absl::OkStatus();
}

struct Extension {
  int nid;
  const char* value;  // openssl.cnf syntax
};

absl::Status AddExtensions(X509* certificate, X509V3_CTX& context,
                           std::initializer_list<Extension> extensions) {
  for (const Extension& extension : extensions) {
    if (absl::Status added = AddExtension(certificate, context, extension.nid, extension.value);
        !added.ok()) {
      return added;
    }
  }
  return absl::OkStatus();
}

absl::Status AddSubjectAltName(X509* certificate, const std::vector<std::string>& dns_names,
                               const std::vector<std::string>& ip_addresses) {
  if (dns_names.empty() && ip_addresses.empty()) return absl::OkStatus();
  Owned<GENERAL_NAMES> names(sk_GENERAL_NAME_new_null());
  if (names == nullptr) return OpenSslError("allocating subjectAltName");
  auto add = [&names](int type, std::string_view bytes) -> absl::Status {
    Owned<GENERAL_NAME> name(GENERAL_NAME_new());
    Owned<ASN1_STRING> value(type == GEN_DNS ? ASN1_IA5STRING_new() : ASN1_OCTET_STRING_new());
    if (name == nullptr || value == nullptr ||
        ASN1_STRING_set(value.get(), bytes.data(), static_cast<int>(bytes.size())) != 1) {
      return OpenSslError("building a subjectAltName entry");
    }
    GENERAL_NAME_set0_value(name.get(), type, value.release());
    if (sk_GENERAL_NAME_push(names.get(), name.get()) <= 0) {
      return OpenSslError("building subjectAltName");
    }
    name.release();  // the stack owns it now
    return absl::OkStatus();
  };
  for (const std::string& dns_name : dns_names) {
    if (absl::Status added = add(GEN_DNS, dns_name); !added.ok()) return added;
  }
  for (const std::string& ip_address : ip_addresses) {
    absl::StatusOr<std::string> bytes = ParseIpAddress(ip_address);
    if (!bytes.ok()) return bytes.status();
    if (absl::Status added = add(GEN_IPADD, *bytes); !added.ok()) return added;
  }
  if (X509_add1_ext_i2d(certificate, NID_subject_alt_name, names.get(), 0, X509V3_ADD_DEFAULT) !=
      1) {
    return OpenSslError("adding subjectAltName");
  }
  return absl::OkStatus();
}

absl::Status Sign(X509* certificate, EVP_PKEY* key) {
  if (X509_sign(certificate, key, EVP_sha256()) <= 0) {
    return OpenSslError("signing the certificate");
  }
  return absl::OkStatus();
}

// X.509 times end at 9999-12-31T23:59:59Z (RFC 5280 4.1.2.5).
absl::Status CheckValidity(std::string_view what, absl::Time now, absl::Duration validity) {
  if (validity <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError(
        StrCat(what, " ", absl::FormatDuration(validity), " is not positive"));
  }
  const absl::Time last =
      absl::FromCivil(absl::CivilSecond(9999, 12, 31, 23, 59, 59), absl::UTCTimeZone());
  if (validity == absl::InfiniteDuration() || now + validity > last) {
    return absl::InvalidArgumentError(StrCat(what, " ", absl::FormatDuration(validity),
                                             " ends after 9999-12-31, which X.509 cannot express"));
  }
  return absl::OkStatus();
}

absl::Status CheckRequest(const CertificateRequest& request, absl::Time now) {
  if (absl::Status checked = CheckSubjectField("the common name (CN)", request.common_name);
      !checked.ok()) {
    return checked;
  }
  for (const std::string& organization : request.organizations) {
    if (absl::Status checked = CheckSubjectField("an organization (O)", organization);
        !checked.ok()) {
      return checked;
    }
  }
  for (const std::string& dns_name : request.dns_names) {
    if (!IsHostName(dns_name)) {
      return absl::InvalidArgumentError(
          StrCat("DNS name \"", absl::CHexEscape(dns_name),
                 "\" is not a host name (letters, digits and '-' in dot-separated labels)"));
    }
  }
  for (const std::string& ip_address : request.ip_addresses) {
    if (absl::StatusOr<std::string> parsed = ParseIpAddress(ip_address); !parsed.ok()) {
      return parsed.status();
    }
  }
  if (!request.server && !request.client) {
    return absl::InvalidArgumentError(
        StrCat("the certificate for ", request.common_name,
               " would allow neither server nor client authentication; ask for at least one"));
  }
  return CheckValidity("validity", now, request.validity);
}

CertificateInfo Describe(X509* certificate) {
  CertificateInfo info;
  const X509_NAME* subject = X509_get_subject_name(certificate);
  for (int i = 0; i < X509_NAME_entry_count(subject); ++i) {
    const X509_NAME_ENTRY* entry = X509_NAME_get_entry(subject, i);
    const int nid = OBJ_obj2nid(X509_NAME_ENTRY_get_object(entry));
    const ASN1_STRING* data = X509_NAME_ENTRY_get_data(entry);
    std::string value(reinterpret_cast<const char*>(ASN1_STRING_get0_data(data)),
                      static_cast<size_t>(ASN1_STRING_length(data)));
    if (nid == NID_commonName) info.common_name = std::move(value);
    if (nid == NID_organizationName) info.organizations.push_back(std::move(value));
  }
  const X509_NAME* issuer = X509_get_issuer_name(certificate);
  const int issuer_cn = X509_NAME_get_index_by_NID(issuer, NID_commonName, -1);
  if (issuer_cn >= 0) {
    const ASN1_STRING* data = X509_NAME_ENTRY_get_data(X509_NAME_get_entry(issuer, issuer_cn));
    info.issuer_common_name.assign(reinterpret_cast<const char*>(ASN1_STRING_get0_data(data)),
                                   static_cast<size_t>(ASN1_STRING_length(data)));
  }
  Owned<GENERAL_NAMES> names(static_cast<GENERAL_NAMES*>(
      X509_get_ext_d2i(certificate, NID_subject_alt_name, nullptr, nullptr)));
  for (int i = 0; names != nullptr && i < sk_GENERAL_NAME_num(names.get()); ++i) {
    const GENERAL_NAME* name = sk_GENERAL_NAME_value(names.get(), i);
    int type = 0;
    const auto* value = static_cast<const ASN1_STRING*>(GENERAL_NAME_get0_value(name, &type));
    const auto* bytes = ASN1_STRING_get0_data(value);
    const int length = ASN1_STRING_length(value);
    if (type == GEN_DNS) {
      info.dns_names.emplace_back(reinterpret_cast<const char*>(bytes),
                                  static_cast<size_t>(length));
    } else if (type == GEN_IPADD && (length == 4 || length == 16)) {
      char text[INET6_ADDRSTRLEN + 1] = {};
      if (inet_ntop(length == 4 ? AF_INET : AF_INET6, bytes, text, sizeof(text)) != nullptr) {
        info.ip_addresses.emplace_back(text);
      }
    }
  }
  // The extension flags are only valid after OpenSSL has cached the extensions, which
  // X509_get_extension_flags does itself.
  const uint32_t flags = X509_get_extension_flags(certificate);
  info.ca = (flags & EXFLAG_CA) != 0;
  if ((flags & EXFLAG_XKUSAGE) != 0) {
    const uint32_t usages = X509_get_extended_key_usage(certificate);
    info.server = (usages & XKU_SSL_SERVER) != 0;
    info.client = (usages & XKU_SSL_CLIENT) != 0;
  }
  info.not_before = TimeOf(X509_get0_notBefore(certificate));
  info.not_after = TimeOf(X509_get0_notAfter(certificate));
  Owned<BIGNUM> serial(ASN1_INTEGER_to_BN(X509_get0_serialNumber(certificate), nullptr));
  if (serial != nullptr) {
    Owned<char> hex(BN_bn2hex(serial.get()));
    if (hex != nullptr) info.serial_hex = hex.get();
  }
  return info;
}

}  // namespace

absl::StatusOr<KeyPair> CreateCertificateAuthority(const std::string& common_name, absl::Time now,
                                                   absl::Duration validity) {
  ERR_clear_error();
  if (absl::Status checked = CheckSubjectField("the CA's common name (CN)", common_name);
      !checked.ok()) {
    return checked;
  }
  if (absl::Status checked = CheckValidity("CA validity", now, validity); !checked.ok()) {
    return checked;
  }
  absl::StatusOr<Owned<EVP_PKEY>> key = GenerateKey();
  if (!key.ok()) return key.status();
  absl::StatusOr<Owned<X509>> certificate =
      NewCertificate(common_name, {}, key->get(), now - kClockSkew, now + validity);
  if (!certificate.ok()) return certificate.status();
  X509* ca = certificate->get();
  if (X509_set_issuer_name(ca, X509_get_subject_name(ca)) != 1) {
    return OpenSslError("setting the issuer");
  }
  X509V3_CTX context;
  X509V3_set_ctx(&context, ca, ca, nullptr, nullptr, 0);
  // pathlen:0: this CA signs handoff's leaf certificates only, never another CA.
  if (absl::Status added = AddExtensions(ca, context,
                                         {{NID_basic_constraints, "critical,CA:TRUE,pathlen:0"},
                                          {NID_key_usage, "critical,keyCertSign,cRLSign"},
                                          {NID_subject_key_identifier, "hash"}});
      !added.ok()) {
    return added;
  }
  if (absl::Status signature = Sign(ca, key->get()); !signature.ok()) return signature;
  return Encode(ca, key->get());
}

absl::StatusOr<KeyPair> IssueCertificate(const KeyPair& ca, const CertificateRequest& request,
                                         absl::Time now) {
  ERR_clear_error();
  if (absl::Status checked = CheckRequest(request, now); !checked.ok()) return checked;
  absl::StatusOr<Owned<X509>> ca_certificate =
      ParseCertificate(ca.certificate_pem, "the CA certificate");
  if (!ca_certificate.ok()) return ca_certificate.status();
  absl::StatusOr<Owned<EVP_PKEY>> ca_key = ParsePrivateKey(ca.private_key_pem, "the CA key");
  if (!ca_key.ok()) return ca_key.status();
  if (X509_check_private_key(ca_certificate->get(), ca_key->get()) != 1) {
    ERR_clear_error();
    return absl::InvalidArgumentError(
        "the CA key does not belong to the CA certificate; use the ca.key made together with "
        "this ca.crt");
  }
  const CertificateInfo ca_info = Describe(ca_certificate->get());
  if (X509_check_ca(ca_certificate->get()) != 1) {
    return absl::FailedPreconditionError(
        StrCat("the certificate CN=", ca_info.common_name,
               " is not a CA (basicConstraints CA:TRUE with keyCertSign); it cannot sign "
               "certificates"));
  }
  if (now < ca_info.not_before || now > ca_info.not_after) {
    return absl::FailedPreconditionError(
        StrCat("the CA CN=", ca_info.common_name, " is valid from ", Timestamp(ca_info.not_before),
               " to ", Timestamp(ca_info.not_after), ", not at ", Timestamp(now),
               "; certificates it signed now would not verify"));
  }

  absl::StatusOr<Owned<EVP_PKEY>> key = GenerateKey();
  if (!key.ok()) return key.status();
  absl::StatusOr<Owned<X509>> certificate =
      NewCertificate(request.common_name, request.organizations, key->get(), now - kClockSkew,
                     std::min(now + request.validity, ca_info.not_after));
  if (!certificate.ok()) return certificate.status();
  X509* leaf = certificate->get();
  if (X509_set_issuer_name(leaf, X509_get_subject_name(ca_certificate->get())) != 1) {
    return OpenSslError("setting the issuer");
  }
  X509V3_CTX context;
  X509V3_set_ctx(&context, ca_certificate->get(), leaf, nullptr, nullptr, 0);
  const char* usages = request.server && request.client ? "serverAuth,clientAuth"
                       : request.server                 ? "serverAuth"
                                                        : "clientAuth";
  // keyid without ":always": a CA made elsewhere may lack a subjectKeyIdentifier, and then the
  // leaf simply has no authorityKeyIdentifier (verification matches by name).
  if (absl::Status added =
          AddExtensions(leaf, context,
                        {{NID_basic_constraints, "critical,CA:FALSE"},
                         {NID_key_usage, "critical,digitalSignature,keyEncipherment"},
                         {NID_ext_key_usage, usages},
                         {NID_subject_key_identifier, "hash"},
                         {NID_authority_key_identifier, "keyid"}});
      !added.ok()) {
    return added;
  }
  if (absl::Status added = AddSubjectAltName(leaf, request.dns_names, request.ip_addresses);
      !added.ok()) {
    return added;
  }
  if (absl::Status signature = Sign(leaf, ca_key->get()); !signature.ok()) return signature;
  return Encode(leaf, key->get());
}

bool ExpiresSoon(const CertificateInfo& info, absl::Time now) {
  const absl::Duration left = info.not_after - now;
  return left < std::min(absl::Hours(24 * 30), (info.not_after - info.not_before) / 2);
}

absl::StatusOr<CertificateInfo> InspectCertificate(const std::string& pem) {
  ERR_clear_error();
  absl::StatusOr<Owned<X509>> certificate = ParseCertificate(pem, "the text");
  if (!certificate.ok()) return certificate.status();
  return Describe(certificate->get());
}

absl::StatusOr<std::string> PublicKeyPin(const std::string& pem) {
  ERR_clear_error();
  absl::StatusOr<Owned<X509>> certificate = ParseCertificate(pem, "the text");
  if (!certificate.ok()) return certificate.status();
  unsigned char* der = nullptr;
  const int length = i2d_X509_PUBKEY(X509_get_X509_PUBKEY(certificate->get()), &der);
  if (length <= 0) return OpenSslError("encoding the certificate's public key");
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int digest_length = 0;
  const int hashed =
      EVP_Digest(der, static_cast<size_t>(length), digest, &digest_length, EVP_sha256(), nullptr);
  OPENSSL_free(der);
  if (hashed != 1) return OpenSslError("hashing the certificate's public key");
  std::string hex = "sha256:";
  constexpr char kDigits[] = "0123456789abcdef";
  for (unsigned int i = 0; i < digest_length; ++i) {
    hex.push_back(kDigits[digest[i] >> 4]);
    hex.push_back(kDigits[digest[i] & 0xf]);
  }
  return hex;
}

absl::Status VerifyCertificate(const std::string& ca_pem, const std::string& certificate_pem,
                               absl::Time at) {
  return VerifyChain(ca_pem, certificate_pem, at, KeyUsage::kAny);
}

absl::Status VerifyChain(const std::string& ca_pem, const std::string& chain_pem, absl::Time at,
                         KeyUsage usage) {
  ERR_clear_error();
  absl::StatusOr<std::vector<Owned<X509>>> cas = ParseCertificates(ca_pem, "the CA certificate");
  if (!cas.ok()) return cas.status();
  absl::StatusOr<std::vector<Owned<X509>>> chain = ParseCertificates(chain_pem, "the certificate");
  if (!chain.ok()) return chain.status();
  X509* leaf = chain->front().get();

  Owned<X509_STORE> store(X509_STORE_new());
  Owned<X509_STORE_CTX> context(X509_STORE_CTX_new());
  Owned<STACK_OF(X509)> untrusted(sk_X509_new_null());
  if (store == nullptr || context == nullptr || untrusted == nullptr) {
    return OpenSslError("allocating an X509 store");
  }
  std::vector<std::string> ca_names;
  for (const Owned<X509>& ca : *cas) {
    if (X509_STORE_add_cert(store.get(), ca.get()) != 1) return OpenSslError("adding the CA");
    ca_names.push_back(StrCat("CN=", Describe(ca.get()).common_name));
  }
  // The peer's intermediates, if any, only lead to a trust anchor of `ca_pem`; never one.
  for (size_t i = 1; i < chain->size(); ++i) {
    if (sk_X509_push(untrusted.get(), (*chain)[i].get()) == 0) {
      return OpenSslError("collecting the chain");
    }
    X509_up_ref((*chain)[i].get());
  }
  if (X509_STORE_CTX_init(context.get(), store.get(), leaf, untrusted.get()) != 1) {
    return OpenSslError("setting up verification");
  }
  X509_STORE_CTX_set_time(context.get(), 0, absl::ToTimeT(at));
  // The purposes a TLS stack checks: a server verifying a client asks for sslclient, and so on.
  if (usage != KeyUsage::kAny &&
      X509_STORE_CTX_set_purpose(context.get(), usage == KeyUsage::kClientAuth
                                                    ? X509_PURPOSE_SSL_CLIENT
                                                    : X509_PURPOSE_SSL_SERVER) != 1) {
    return OpenSslError("setting the purpose");
  }
  if (X509_verify_cert(context.get()) == 1) return absl::OkStatus();

  const int error = X509_STORE_CTX_get_error(context.get());
  ERR_clear_error();
  const CertificateInfo leaf_info = Describe(leaf);
  std::string reason = X509_verify_cert_error_string(error);
  X509* failed = X509_STORE_CTX_get_current_cert(context.get());
  const CertificateInfo failed_info = failed != nullptr ? Describe(failed) : leaf_info;
  const std::string failed_name = StrCat(
      failed == nullptr || failed == leaf ? "" : (failed_info.ca ? "the CA " : "the certificate "),
      "CN=", failed_info.common_name);
  switch (error) {
    case X509_V_ERR_CERT_HAS_EXPIRED:
    case X509_V_ERR_CERT_NOT_YET_VALID:
    case X509_V_ERR_ERROR_IN_CERT_NOT_BEFORE_FIELD:
    case X509_V_ERR_ERROR_IN_CERT_NOT_AFTER_FIELD:
      StrAppend(&reason, " (", failed_name, " is valid from ", Timestamp(failed_info.not_before),
                " to ", Timestamp(failed_info.not_after), ")");
      break;
    case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT:
    case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY:
    case X509_V_ERR_UNABLE_TO_VERIFY_LEAF_SIGNATURE:
    case X509_V_ERR_CERT_SIGNATURE_FAILURE:
    case X509_V_ERR_DEPTH_ZERO_SELF_SIGNED_CERT:
    case X509_V_ERR_SELF_SIGNED_CERT_IN_CHAIN: {
      // The certificate whose issuer is not trusted: the one that failed, except when the peer
      // sent its own CA along (a TLS client does, when that CA is in its trust store) and OpenSSL
      // stops at that CA, whose issuer is itself.
      const bool sent_its_ca = error == X509_V_ERR_SELF_SIGNED_CERT_IN_CHAIN;
      const CertificateInfo& subject = sent_its_ca ? leaf_info : failed_info;
      // The issuer's name is in the certificate; a CA made anew keeps the old one's name but not
      // its key, which is worth saying, since the names then read the same.
      const std::string& issuer = subject.issuer_common_name;
      const bool same_name =
          std::find(ca_names.begin(), ca_names.end(), StrCat("CN=", issuer)) != ca_names.end();
      StrAppend(&reason, " (", sent_its_ca ? StrCat("CN=", leaf_info.common_name) : failed_name,
                " was issued by ", same_name ? "another CA named " : "", "CN=", issuer,
                same_name ? ", with another key: was the CA made anew?" : ", not by this CA",
                ")");
      break;
    }
    case X509_V_ERR_INVALID_PURPOSE:
      StrAppend(&reason, " (", failed_name,
                " is not for TLS ", usage == KeyUsage::kClientAuth ? "clients" : "servers",
                ": extendedKeyUsage lacks ",
                usage == KeyUsage::kClientAuth ? "clientAuth" : "serverAuth", ")");
      break;
    default:
      if (failed != nullptr && failed != leaf) StrAppend(&reason, " (", failed_name, ")");
      break;
  }
  return absl::FailedPreconditionError(
      StrCat("the certificate CN=", leaf_info.common_name, " does not verify against the CA ",
             StrJoin(ca_names, ", "), " at ", Timestamp(at), ": ", reason));
}

absl::Status CheckKeyPair(const KeyPair& pair) {
  ERR_clear_error();
  absl::StatusOr<Owned<X509>> certificate =
      ParseCertificate(pair.certificate_pem, "the certificate");
  if (!certificate.ok()) return certificate.status();
  absl::StatusOr<Owned<EVP_PKEY>> key = ParsePrivateKey(pair.private_key_pem, "the key");
  if (!key.ok()) return key.status();
  if (X509_check_private_key(certificate->get(), key->get()) != 1) {
    ERR_clear_error();
    return absl::InvalidArgumentError("the private key does not belong to the certificate");
  }
  return absl::OkStatus();
}

}  // namespace handoff::pki
