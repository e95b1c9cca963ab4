#include "agent/daemon/certificate.h"

#include <memory>
#include <string>

#include "common/base/strings.h"
#include "common/pki/pki.h"
#include "openssl/err.h"
#include "openssl/evp.h"
#include "openssl/pem.h"
#include "openssl/x509.h"

namespace handoff {
namespace {

using Bio = std::unique_ptr<BIO, decltype(&BIO_free)>;
using Certificate = std::unique_ptr<X509, decltype(&X509_free)>;

Bio MemoryBio(std::string_view pem) {
  return Bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())), &BIO_free);
}

Certificate ReadCertificate(std::string_view pem) {
  Bio bio = MemoryBio(pem);
  if (bio == nullptr) return Certificate(nullptr, &X509_free);
  Certificate certificate(PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr), &X509_free);
  // A failed parse leaves errors on this thread's OpenSSL queue, where gRPC's TLS would find them.
  if (certificate == nullptr) ERR_clear_error();
  return certificate;
}

}  // namespace

absl::StatusOr<std::string> CertificateCommonName(std::string_view pem) {
  Certificate certificate = ReadCertificate(pem);
  if (certificate == nullptr) {
    return absl::InvalidArgumentError("not a PEM certificate (-----BEGIN CERTIFICATE-----)");
  }
  const X509_NAME* name = X509_get_subject_name(certificate.get());
  for (int i = 0; i < X509_NAME_entry_count(name); ++i) {
    const X509_NAME_ENTRY* entry = X509_NAME_get_entry(name, i);
    if (OBJ_obj2nid(X509_NAME_ENTRY_get_object(entry)) != NID_commonName) continue;
    const ASN1_STRING* data = X509_NAME_ENTRY_get_data(entry);
    std::string value(reinterpret_cast<const char*>(ASN1_STRING_get0_data(data)),
                      static_cast<size_t>(ASN1_STRING_length(data)));
    if (!value.empty()) return value;
  }
  return absl::InvalidArgumentError(
      "the certificate's subject has no common name (CN); an agent's CN is its node's name");
}

absl::Status CheckKeyMatchesCertificate(std::string_view cert_pem, std::string_view key_pem) {
  Certificate certificate = ReadCertificate(cert_pem);
  if (certificate == nullptr) {
    return absl::InvalidArgumentError("not a PEM certificate (-----BEGIN CERTIFICATE-----)");
  }
  Bio bio = MemoryBio(key_pem);
  std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)> key(
      bio == nullptr ? nullptr : PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr),
      &EVP_PKEY_free);
  if (key == nullptr) {
    ERR_clear_error();
    return absl::InvalidArgumentError("not a PEM private key (-----BEGIN ... PRIVATE KEY-----)");
  }
  if (X509_check_private_key(certificate.get(), key.get()) != 1) {
    ERR_clear_error();
    return absl::InvalidArgumentError("the key does not belong to the certificate");
  }
  return absl::OkStatus();
}

absl::Status CheckClientCertificate(std::string_view cert_pem, std::string_view ca_pem,
                                    absl::Time now) {
  return pki::VerifyChain(std::string(ca_pem), std::string(cert_pem), now,
                          pki::KeyUsage::kClientAuth);
}

std::string DescribeCertificate(std::string_view cert_pem) {
  absl::StatusOr<pki::CertificateInfo> info = pki::InspectCertificate(std::string(cert_pem));
  if (!info.ok()) return "";
  return StrCat("CN=", info->common_name, ", issued by CN=", info->issuer_common_name,
                ", valid until ",
                absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", info->not_after, absl::UTCTimeZone()));
}

absl::StatusOr<std::shared_ptr<rpc::TlsMaterial>> AgentTlsMaterial(
    const rpc::ClientTls& pems, const rpc::TlsFiles& files, absl::Duration refresh_interval,
    const std::string& node_name, std::shared_ptr<spdlog::logger> logger) {
  if (files.cert_file.empty()) {
    return rpc::TlsMaterial::Fixed(rpc::TlsPems{pems.ca_pem, pems.cert_pem, pems.key_pem});
  }
  rpc::TlsWatchOptions options;
  options.refresh_interval = refresh_interval;
  const std::string cert_file = files.cert_file;
  // The coordinator knows the agent as its certificate's CN: another name would be another node.
  options.check = [cert_file, node_name](const rpc::TlsPems& read) -> absl::Status {
    absl::StatusOr<std::string> name = CertificateCommonName(read.cert_pem);
    if (!name.ok()) {
      return absl::InvalidArgumentError(StrCat(cert_file, ": ", name.status().message()));
    }
    if (*name != node_name) {
      return absl::InvalidArgumentError(StrCat(cert_file, ": the certificate names ", *name,
                                               ", not this node (", node_name, ")"));
    }
    return absl::OkStatus();
  };
  options.on_reloaded = [cert_file, node_name, logger](const rpc::TlsPems& now) {
    logger->info("{} replaced: the next connection presents {}", cert_file,
                 DescribeCertificate(now.cert_pem));
    if (absl::Status usable = CheckClientCertificate(now.cert_pem, now.ca_pem, absl::Now());
        !usable.ok()) {
      logger->warn("{}: the coordinator will refuse the replaced certificate: {} (handoffctl "
                   "certs issue --node {})",
                   cert_file, std::string(usable.message()), node_name);
    }
  };
  options.on_refused = [logger](const absl::Status& refused) {
    logger->warn("{}", std::string(refused.message()));
  };
  return rpc::TlsMaterial::Watch(files, std::move(options));
}

}  // namespace handoff
