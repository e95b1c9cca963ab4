// The CA and leaf certificates of common/pki, checked with OpenSSL directly rather than
// with the module's own readers: chains verify with X509_verify_cert, subjects, names, usages and
// validity are what was asked for, and keys belong to their certificates.
#include "common/pki/pki.h"

#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <memory>
#include <set>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace handoff::pki {
namespace {

using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

const absl::Time kNow = absl::FromUnixSeconds(1'700'000'000);  // 2023-11-14T22:13:20Z

struct X509Free {
  void operator()(X509* p) const { X509_free(p); }
  void operator()(EVP_PKEY* p) const { EVP_PKEY_free(p); }
  void operator()(BIO* p) const { BIO_free_all(p); }
  void operator()(X509_STORE* p) const { X509_STORE_free(p); }
  void operator()(X509_STORE_CTX* p) const { X509_STORE_CTX_free(p); }
  void operator()(GENERAL_NAMES* p) const { GENERAL_NAMES_free(p); }
  void operator()(BASIC_CONSTRAINTS* p) const { BASIC_CONSTRAINTS_free(p); }
};
template <typename T>
using Owned = std::unique_ptr<T, X509Free>;

Owned<X509> Certificate(const std::string& pem) {
  Owned<BIO> bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  Owned<X509> certificate(PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr));
  EXPECT_NE(certificate, nullptr) << pem;
  return certificate;
}

Owned<EVP_PKEY> Key(const std::string& pem) {
  Owned<BIO> bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  Owned<EVP_PKEY> key(PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr));
  EXPECT_NE(key, nullptr) << pem;
  return key;
}

// X509_verify_cert of `leaf` with `ca` as the only trust anchor, at `at`, for `purpose`
// (X509_PURPOSE_SSL_SERVER...; 0 for none). "" when it verifies, else OpenSSL's reason.
std::string Verify(const std::string& ca_pem, const std::string& leaf_pem, absl::Time at,
                   int purpose = 0) {
  Owned<X509> ca = Certificate(ca_pem);
  Owned<X509> leaf = Certificate(leaf_pem);
  if (ca == nullptr || leaf == nullptr) return "unparsable";
  Owned<X509_STORE> store(X509_STORE_new());
  Owned<X509_STORE_CTX> context(X509_STORE_CTX_new());
  X509_STORE_add_cert(store.get(), ca.get());
  X509_STORE_CTX_init(context.get(), store.get(), leaf.get(), nullptr);
  X509_STORE_CTX_set_time(context.get(), 0, absl::ToTimeT(at));
  if (purpose != 0) X509_STORE_CTX_set_purpose(context.get(), purpose);
  if (X509_verify_cert(context.get()) == 1) return "";
  return X509_verify_cert_error_string(X509_STORE_CTX_get_error(context.get()));
}

std::vector<std::string> Entries(const std::string& pem, int nid) {
  Owned<X509> certificate = Certificate(pem);
  std::vector<std::string> values;
  const X509_NAME* name = X509_get_subject_name(certificate.get());
  for (int i = X509_NAME_get_index_by_NID(name, nid, -1); i >= 0;
       i = X509_NAME_get_index_by_NID(name, nid, i)) {
    const ASN1_STRING* data = X509_NAME_ENTRY_get_data(X509_NAME_get_entry(name, i));
    values.emplace_back(reinterpret_cast<const char*>(ASN1_STRING_get0_data(data)),
                        static_cast<size_t>(ASN1_STRING_length(data)));
  }
  return values;
}

// "DNS:localhost", "IP Address:127.0.0.1"... as OpenSSL prints them.
std::vector<std::string> SubjectAltNames(const std::string& pem) {
  Owned<X509> certificate = Certificate(pem);
  Owned<GENERAL_NAMES> names(static_cast<GENERAL_NAMES*>(
      X509_get_ext_d2i(certificate.get(), NID_subject_alt_name, nullptr, nullptr)));
  std::vector<std::string> printed;
  for (int i = 0; names != nullptr && i < sk_GENERAL_NAME_num(names.get()); ++i) {
    Owned<BIO> bio(BIO_new(BIO_s_mem()));
    GENERAL_NAME_print(bio.get(), sk_GENERAL_NAME_value(names.get(), i));
    char* data = nullptr;
    const long size = BIO_ctrl(bio.get(), BIO_CTRL_INFO, 0, &data);
    printed.emplace_back(data, static_cast<size_t>(size));
  }
  return printed;
}

absl::Time TimeOf(const ASN1_TIME* time) {
  struct tm parts {};
  EXPECT_EQ(ASN1_TIME_to_tm(time, &parts), 1);
  return absl::FromTM(parts, absl::UTCTimeZone());
}

KeyPair NewCa(absl::Duration validity = absl::Hours(24 * 365)) {
  absl::StatusOr<KeyPair> ca = CreateCertificateAuthority("handoff-ca", kNow, validity);
  EXPECT_TRUE(ca.ok()) << ca.status();
  return ca.ok() ? *ca : KeyPair{};
}

CertificateRequest AgentRequest(const std::string& node) {
  CertificateRequest request;
  request.common_name = node;
  request.organizations = {"handoff:agents"};
  request.client = true;
  return request;
}

CertificateRequest CoordinatorRequest() {
  CertificateRequest request;
  request.common_name = "handoff-coordinator";
  request.dns_names = {"localhost", "coordinator.handoff.example"};
  request.ip_addresses = {"127.0.0.1", "::1"};
  request.server = true;
  return request;
}

TEST(CertificateAuthorityTest, IsASelfSignedCaWithTheAskedValidity) {
  const KeyPair ca = NewCa(absl::Hours(48));
  Owned<X509> certificate = Certificate(ca.certificate_pem);
  ASSERT_NE(certificate, nullptr);
  EXPECT_EQ(Verify(ca.certificate_pem, ca.certificate_pem, kNow), "");
  EXPECT_EQ(X509_check_ca(certificate.get()), 1);
  EXPECT_THAT(Entries(ca.certificate_pem, NID_commonName), ElementsAre("handoff-ca"));
  EXPECT_THAT(Entries(ca.certificate_pem, NID_organizationName), IsEmpty());
  EXPECT_EQ(TimeOf(X509_get0_notBefore(certificate.get())), kNow - absl::Minutes(5));
  EXPECT_EQ(TimeOf(X509_get0_notAfter(certificate.get())), kNow + absl::Hours(48));
  Owned<BASIC_CONSTRAINTS> constraints(static_cast<BASIC_CONSTRAINTS*>(
      X509_get_ext_d2i(certificate.get(), NID_basic_constraints, nullptr, nullptr)));
  ASSERT_NE(constraints, nullptr);
  EXPECT_NE(constraints->ca, 0);
  EXPECT_EQ(ASN1_INTEGER_get(constraints->pathlen), 0);
  EXPECT_EQ(X509_get_key_usage(certificate.get()),
            static_cast<uint32_t>(KU_KEY_CERT_SIGN | KU_CRL_SIGN));
  EXPECT_EQ(X509_get_signature_nid(certificate.get()), NID_ecdsa_with_SHA256);
  Owned<EVP_PKEY> key = Key(ca.private_key_pem);
  EXPECT_EQ(X509_check_private_key(certificate.get(), key.get()), 1);
  EXPECT_TRUE(EVP_PKEY_is_a(key.get(), "EC"));
  char curve[64] = {};
  size_t length = 0;
  ASSERT_EQ(EVP_PKEY_get_group_name(key.get(), curve, sizeof(curve), &length), 1);
  EXPECT_STREQ(curve, "prime256v1");
  EXPECT_THAT(ca.private_key_pem, HasSubstr("-----BEGIN PRIVATE KEY-----"));
}

TEST(CertificateAuthorityTest, RefusesAnEmptyNameAndAnEmptyValidity) {
  EXPECT_EQ(CreateCertificateAuthority("", kNow, absl::Hours(1)).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(CreateCertificateAuthority("ca", kNow, absl::ZeroDuration()).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(CreateCertificateAuthority("ca", kNow, absl::InfiniteDuration()).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(CertificateAuthorityTest, EachCaHasItsOwnKeyAndSerial) {
  const KeyPair first = NewCa();
  const KeyPair second = NewCa();
  EXPECT_NE(first.private_key_pem, second.private_key_pem);
  EXPECT_NE(InspectCertificate(first.certificate_pem)->serial_hex,
            InspectCertificate(second.certificate_pem)->serial_hex);
  EXPECT_NE(Verify(first.certificate_pem, second.certificate_pem, kNow), "");
}

TEST(IssueCertificateTest, AgentCertificateVerifiesAndCarriesItsIdentity) {
  const KeyPair ca = NewCa();
  CertificateRequest request = AgentRequest("cp-1");
  request.validity = absl::Hours(720);
  absl::StatusOr<KeyPair> agent = IssueCertificate(ca, request, kNow);
  ASSERT_TRUE(agent.ok()) << agent.status();
  EXPECT_EQ(Verify(ca.certificate_pem, agent->certificate_pem, kNow), "");
  EXPECT_EQ(Verify(ca.certificate_pem, agent->certificate_pem, kNow, X509_PURPOSE_SSL_CLIENT), "");
  EXPECT_EQ(Verify(ca.certificate_pem, agent->certificate_pem, kNow, X509_PURPOSE_SSL_SERVER),
            "unsuitable certificate purpose");
  EXPECT_THAT(Entries(agent->certificate_pem, NID_commonName), ElementsAre("cp-1"));
  EXPECT_THAT(Entries(agent->certificate_pem, NID_organizationName), ElementsAre("handoff:agents"));
  EXPECT_THAT(SubjectAltNames(agent->certificate_pem), IsEmpty());

  Owned<X509> certificate = Certificate(agent->certificate_pem);
  Owned<X509> ca_certificate = Certificate(ca.certificate_pem);
  EXPECT_EQ(X509_NAME_cmp(X509_get_issuer_name(certificate.get()),
                          X509_get_subject_name(ca_certificate.get())),
            0);
  EXPECT_EQ(X509_check_ca(certificate.get()), 0);
  EXPECT_EQ(X509_get_key_usage(certificate.get()),
            static_cast<uint32_t>(KU_DIGITAL_SIGNATURE | KU_KEY_ENCIPHERMENT));
  EXPECT_EQ(X509_get_extended_key_usage(certificate.get()), static_cast<uint32_t>(XKU_SSL_CLIENT));
  EXPECT_EQ(X509_get_signature_nid(certificate.get()), NID_ecdsa_with_SHA256);
  EXPECT_EQ(TimeOf(X509_get0_notBefore(certificate.get())), kNow - absl::Minutes(5));
  EXPECT_EQ(TimeOf(X509_get0_notAfter(certificate.get())), kNow + absl::Hours(720));
  const ASN1_INTEGER* serial = X509_get0_serialNumber(certificate.get());
  EXPECT_EQ(serial->type, V_ASN1_INTEGER);  // not V_ASN1_NEG_INTEGER
  EXPECT_LE(serial->length, 16);
  EXPECT_GE(serial->length, 8);  // 128 random bits; shorter only with absurd luck

  Owned<EVP_PKEY> key = Key(agent->private_key_pem);
  EXPECT_EQ(X509_check_private_key(certificate.get(), key.get()), 1);
  Owned<EVP_PKEY> ca_key = Key(ca.private_key_pem);
  EXPECT_NE(X509_check_private_key(certificate.get(), ca_key.get()), 1);
}

TEST(IssueCertificateTest, ValidityWindowIsEnforcedByVerification) {
  const KeyPair ca = NewCa();
  CertificateRequest request = AgentRequest("cp-1");
  request.validity = absl::Hours(1);
  absl::StatusOr<KeyPair> agent = IssueCertificate(ca, request, kNow);
  ASSERT_TRUE(agent.ok()) << agent.status();
  // A peer whose clock is a little behind still accepts it.
  EXPECT_EQ(Verify(ca.certificate_pem, agent->certificate_pem, kNow - absl::Minutes(4)), "");
  EXPECT_EQ(Verify(ca.certificate_pem, agent->certificate_pem, kNow - absl::Minutes(6)),
            "certificate is not yet valid");
  EXPECT_EQ(Verify(ca.certificate_pem, agent->certificate_pem, kNow + absl::Minutes(59)), "");
  EXPECT_EQ(Verify(ca.certificate_pem, agent->certificate_pem, kNow + absl::Minutes(61)),
            "certificate has expired");
}

TEST(IssueCertificateTest, CoordinatorCertificateNamesItsAddresses) {
  const KeyPair ca = NewCa();
  absl::StatusOr<KeyPair> coordinator = IssueCertificate(ca, CoordinatorRequest(), kNow);
  ASSERT_TRUE(coordinator.ok()) << coordinator.status();
  EXPECT_EQ(Verify(ca.certificate_pem, coordinator->certificate_pem, kNow, X509_PURPOSE_SSL_SERVER),
            "");
  EXPECT_EQ(Verify(ca.certificate_pem, coordinator->certificate_pem, kNow, X509_PURPOSE_SSL_CLIENT),
            "unsuitable certificate purpose");
  EXPECT_THAT(SubjectAltNames(coordinator->certificate_pem),
              ElementsAre("DNS:localhost", "DNS:coordinator.handoff.example",
                          "IP Address:127.0.0.1", "IP Address:0:0:0:0:0:0:0:1"));
  Owned<X509> certificate = Certificate(coordinator->certificate_pem);
  EXPECT_EQ(X509_check_host(certificate.get(), "localhost", 0, 0, nullptr), 1);
  EXPECT_EQ(X509_check_host(certificate.get(), "other.example", 0, 0, nullptr), 0);
  EXPECT_EQ(X509_check_ip_asc(certificate.get(), "127.0.0.1", 0), 1);
  EXPECT_EQ(X509_check_ip_asc(certificate.get(), "::1", 0), 1);
  EXPECT_EQ(X509_check_ip_asc(certificate.get(), "10.0.0.1", 0), 0);
  EXPECT_THAT(Entries(coordinator->certificate_pem, NID_organizationName), IsEmpty());
}

TEST(IssueCertificateTest, BothUsagesAndSeveralOrganizationsInOrder) {
  const KeyPair ca = NewCa();
  CertificateRequest request = AgentRequest("both");
  request.organizations = {"first", "second"};
  request.server = true;
  absl::StatusOr<KeyPair> issued = IssueCertificate(ca, request, kNow);
  ASSERT_TRUE(issued.ok()) << issued.status();
  EXPECT_THAT(Entries(issued->certificate_pem, NID_organizationName),
              ElementsAre("first", "second"));
  Owned<X509> certificate = Certificate(issued->certificate_pem);
  EXPECT_EQ(X509_get_extended_key_usage(certificate.get()),
            static_cast<uint32_t>(XKU_SSL_SERVER | XKU_SSL_CLIENT));
}

TEST(IssueCertificateTest, LongNodeNamesAreKept) {
  // X.520 caps a CN at 64 characters; Kubernetes node names run to 253.
  const std::string name = std::string(100, 'n') + ".compute.internal";
  absl::StatusOr<KeyPair> issued = IssueCertificate(NewCa(), AgentRequest(name), kNow);
  ASSERT_TRUE(issued.ok()) << issued.status();
  EXPECT_THAT(Entries(issued->certificate_pem, NID_commonName), ElementsAre(name));
}

TEST(IssueCertificateTest, CertificateFromAnotherCaDoesNotVerify) {
  const KeyPair ca = NewCa();
  const KeyPair other = NewCa();  // the same name, another key
  absl::StatusOr<KeyPair> rogue = IssueCertificate(other, AgentRequest("cp-1"), kNow);
  ASSERT_TRUE(rogue.ok()) << rogue.status();
  EXPECT_EQ(Verify(other.certificate_pem, rogue->certificate_pem, kNow), "");
  // The rogue's authorityKeyIdentifier names the other CA's key, so OpenSSL finds no issuer.
  EXPECT_EQ(Verify(ca.certificate_pem, rogue->certificate_pem, kNow),
            "unable to get local issuer certificate");
  absl::Status verified = VerifyCertificate(ca.certificate_pem, rogue->certificate_pem, kNow);
  EXPECT_EQ(verified.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(verified.message(),
            "the certificate CN=cp-1 does not verify against the CA CN=handoff-ca at "
            "2023-11-14T22:13:20Z: unable to get local issuer certificate (CN=cp-1 was issued by "
            "another CA named CN=handoff-ca, with another key: was the CA made anew?)");
}

TEST(IssueCertificateTest, EveryCertificateHasAFreshKeyAndSerial) {
  const KeyPair ca = NewCa();
  std::set<std::string> keys;
  std::set<std::string> serials;
  for (int i = 0; i < 5; ++i) {
    absl::StatusOr<KeyPair> issued = IssueCertificate(ca, AgentRequest("cp-1"), kNow);
    ASSERT_TRUE(issued.ok()) << issued.status();
    keys.insert(issued->private_key_pem);
    serials.insert(InspectCertificate(issued->certificate_pem)->serial_hex);
  }
  EXPECT_EQ(keys.size(), 5u);
  EXPECT_EQ(serials.size(), 5u);
}

TEST(IssueCertificateTest, NeverOutlivesItsCa) {
  const KeyPair ca = NewCa(absl::Hours(24));
  CertificateRequest request = AgentRequest("cp-1");
  request.validity = absl::Hours(24 * 365);
  absl::StatusOr<KeyPair> issued = IssueCertificate(ca, request, kNow + absl::Hours(1));
  ASSERT_TRUE(issued.ok()) << issued.status();
  EXPECT_EQ(InspectCertificate(issued->certificate_pem)->not_after, kNow + absl::Hours(24));
}

TEST(IssueCertificateTest, RefusesBadRequests) {
  const KeyPair ca = NewCa();
  auto issue = [&ca](const std::function<void(CertificateRequest&)>& change) {
    CertificateRequest request = CoordinatorRequest();
    change(request);
    return IssueCertificate(ca, request, kNow).status();
  };
  absl::Status bad_ip = issue([](CertificateRequest& r) { r.ip_addresses = {"10.0.0.300"}; });
  EXPECT_EQ(bad_ip.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(bad_ip.message(),
            "IP address \"10.0.0.300\" is neither an IPv4 address (10.0.0.1) nor an IPv6 address "
            "(fd00::1)");
  for (const char* ip : {"", "10.0.0.1 ", "10.0.0", "localhost", "::1::2"}) {
    EXPECT_EQ(issue([ip](CertificateRequest& r) { r.ip_addresses = {ip}; }).code(),
              absl::StatusCode::kInvalidArgument)
        << ip;
  }
  for (const char* dns : {"", "a,IP:1.2.3.4", "-bad.example", "a..b", "under_score", "a b"}) {
    EXPECT_EQ(issue([dns](CertificateRequest& r) { r.dns_names = {dns}; }).code(),
              absl::StatusCode::kInvalidArgument)
        << dns;
  }
  EXPECT_TRUE(issue([](CertificateRequest& r) { r.dns_names = {"*.handoff.example"}; }).ok());
  absl::Status empty_cn = issue([](CertificateRequest& r) { r.common_name.clear(); });
  EXPECT_EQ(empty_cn.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(empty_cn.message(), "the common name (CN) is empty");
  EXPECT_EQ(issue([](CertificateRequest& r) { r.common_name = "cp-1\nO=evil"; }).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(issue([](CertificateRequest& r) { r.organizations = {""}; }).code(),
            absl::StatusCode::kInvalidArgument);
  absl::Status no_usage = issue([](CertificateRequest& r) { r.server = false; });
  EXPECT_EQ(no_usage.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(no_usage.message(), HasSubstr("neither server nor client"));
  EXPECT_EQ(issue([](CertificateRequest& r) { r.validity = -absl::Hours(1); }).code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(IssueCertificateTest, RefusesACaThatCannotSign) {
  const KeyPair ca = NewCa(absl::Hours(1));
  const KeyPair other = NewCa();
  absl::Status mismatched =
      IssueCertificate(KeyPair{ca.certificate_pem, other.private_key_pem}, AgentRequest("n"), kNow)
          .status();
  EXPECT_EQ(mismatched.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(mismatched.message(), HasSubstr("does not belong to the CA certificate"));

  absl::Status expired = IssueCertificate(ca, AgentRequest("n"), kNow + absl::Hours(2)).status();
  EXPECT_EQ(expired.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(expired.message(), HasSubstr("is valid from 2023-11-14T22:08:20Z to "
                                           "2023-11-14T23:13:20Z, not at 2023-11-15T00:13:20Z"));

  absl::StatusOr<KeyPair> leaf = IssueCertificate(ca, AgentRequest("n"), kNow);
  ASSERT_TRUE(leaf.ok()) << leaf.status();
  absl::Status not_a_ca = IssueCertificate(*leaf, AgentRequest("m"), kNow).status();
  EXPECT_EQ(not_a_ca.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(not_a_ca.message(), HasSubstr("CN=n is not a CA"));

  EXPECT_EQ(IssueCertificate(KeyPair{"junk", ca.private_key_pem}, AgentRequest("n"), kNow)
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(IssueCertificate(KeyPair{ca.certificate_pem, "junk"}, AgentRequest("n"), kNow)
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(InspectCertificateTest, ReadsWhatWasIssued) {
  const KeyPair ca = NewCa();
  absl::StatusOr<KeyPair> coordinator = IssueCertificate(ca, CoordinatorRequest(), kNow);
  ASSERT_TRUE(coordinator.ok()) << coordinator.status();
  absl::StatusOr<CertificateInfo> info = InspectCertificate(coordinator->certificate_pem);
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(info->common_name, "handoff-coordinator");
  EXPECT_THAT(info->organizations, IsEmpty());
  EXPECT_EQ(info->issuer_common_name, "handoff-ca");
  EXPECT_THAT(info->dns_names, ElementsAre("localhost", "coordinator.handoff.example"));
  EXPECT_THAT(info->ip_addresses, ElementsAre("127.0.0.1", "::1"));
  EXPECT_TRUE(info->server);
  EXPECT_FALSE(info->client);
  EXPECT_FALSE(info->ca);
  EXPECT_EQ(info->not_before, kNow - absl::Minutes(5));
  EXPECT_EQ(info->not_after, kNow + absl::Hours(24 * 365));
  EXPECT_EQ(info->serial_hex.find_first_not_of("0123456789ABCDEF"), std::string::npos);

  absl::StatusOr<CertificateInfo> ca_info = InspectCertificate(ca.certificate_pem);
  ASSERT_TRUE(ca_info.ok());
  EXPECT_TRUE(ca_info->ca);
  EXPECT_FALSE(ca_info->server);
  EXPECT_FALSE(ca_info->client);

  EXPECT_EQ(InspectCertificate("not a certificate").status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(VerifyCertificateTest, ChecksTheChainAndTheTime) {
  const KeyPair ca = NewCa();
  CertificateRequest request = AgentRequest("cp-1");
  request.validity = absl::Hours(1);
  absl::StatusOr<KeyPair> agent = IssueCertificate(ca, request, kNow);
  ASSERT_TRUE(agent.ok()) << agent.status();
  EXPECT_TRUE(VerifyCertificate(ca.certificate_pem, agent->certificate_pem, kNow).ok());
  absl::Status expired =
      VerifyCertificate(ca.certificate_pem, agent->certificate_pem, kNow + absl::Hours(2));
  EXPECT_EQ(expired.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(expired.message(),
            "the certificate CN=cp-1 does not verify against the CA CN=handoff-ca at "
            "2023-11-15T00:13:20Z: certificate has expired (CN=cp-1 is valid from "
            "2023-11-14T22:08:20Z to 2023-11-14T23:13:20Z)");
  EXPECT_EQ(VerifyCertificate("junk", agent->certificate_pem, kNow).code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(VerifyChainTest, NamesTheWindowOfACertificateNotYetValid) {
  const KeyPair ca = NewCa();
  CertificateRequest request = AgentRequest("cp-1");
  request.validity = absl::Hours(1);
  absl::StatusOr<KeyPair> agent = IssueCertificate(ca, request, kNow + absl::Hours(2));
  ASSERT_TRUE(agent.ok()) << agent.status();
  absl::Status early =
      VerifyChain(ca.certificate_pem, agent->certificate_pem, kNow, KeyUsage::kClientAuth);
  EXPECT_EQ(early.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(early.message(),
            "the certificate CN=cp-1 does not verify against the CA CN=handoff-ca at "
            "2023-11-14T22:13:20Z: certificate is not yet valid (CN=cp-1 is valid from "
            "2023-11-15T00:08:20Z to 2023-11-15T01:13:20Z)");
}

TEST(VerifyChainTest, NamesTheCaWhenTheCaIsOutOfItsWindow) {
  const KeyPair ca = NewCa(absl::Hours(2));
  absl::StatusOr<KeyPair> agent = IssueCertificate(ca, AgentRequest("cp-1"), kNow);
  ASSERT_TRUE(agent.ok()) << agent.status();
  absl::Status late = VerifyChain(ca.certificate_pem, agent->certificate_pem,
                                  kNow + absl::Hours(3), KeyUsage::kClientAuth);
  EXPECT_EQ(late.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(late.message(),
              HasSubstr("certificate has expired (the CA CN=handoff-ca is valid from "
                        "2023-11-14T22:08:20Z to 2023-11-15T00:13:20Z)"));
}

TEST(VerifyChainTest, ChecksTheUsageATlsStackWould) {
  const KeyPair ca = NewCa();
  absl::StatusOr<KeyPair> agent = IssueCertificate(ca, AgentRequest("cp-1"), kNow);
  ASSERT_TRUE(agent.ok()) << agent.status();
  EXPECT_TRUE(
      VerifyChain(ca.certificate_pem, agent->certificate_pem, kNow, KeyUsage::kClientAuth).ok());
  absl::Status as_server =
      VerifyChain(ca.certificate_pem, agent->certificate_pem, kNow, KeyUsage::kServerAuth);
  EXPECT_EQ(as_server.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(as_server.message(),
              HasSubstr("unsuitable certificate purpose (CN=cp-1 is not for TLS servers: "
                        "extendedKeyUsage lacks serverAuth)"));
}

TEST(VerifyChainTest, TrustsEveryCaOfABundleAndNamesAForeignIssuer) {
  const KeyPair ca = NewCa();
  absl::StatusOr<KeyPair> other =
      CreateCertificateAuthority("handoff-next-ca", kNow, absl::Hours(9));
  ASSERT_TRUE(other.ok()) << other.status();
  absl::StatusOr<KeyPair> agent = IssueCertificate(*other, AgentRequest("cp-1"), kNow);
  ASSERT_TRUE(agent.ok()) << agent.status();
  EXPECT_TRUE(VerifyChain(ca.certificate_pem + other->certificate_pem, agent->certificate_pem,
                          kNow, KeyUsage::kClientAuth)
                  .ok());
  absl::Status foreign =
      VerifyChain(ca.certificate_pem, agent->certificate_pem, kNow, KeyUsage::kClientAuth);
  EXPECT_EQ(foreign.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(foreign.message(),
              HasSubstr("(CN=cp-1 was issued by CN=handoff-next-ca, not by this CA)"));
  // A certificate the peer sends after its own is never a trust anchor (a TLS client sends its
  // CA along when that CA is in its own trust store).
  absl::Status sent_its_ca = VerifyChain(
      ca.certificate_pem, agent->certificate_pem + other->certificate_pem, kNow,
      KeyUsage::kClientAuth);
  EXPECT_EQ(sent_its_ca.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(sent_its_ca.message(),
              AllOf(HasSubstr("self-signed certificate in certificate chain"),
                    HasSubstr("(CN=cp-1 was issued by CN=handoff-next-ca, not by this CA)")));
}

TEST(CheckKeyPairTest, MatchesOnlyItsOwnKey) {
  const KeyPair ca = NewCa();
  absl::StatusOr<KeyPair> agent = IssueCertificate(ca, AgentRequest("cp-1"), kNow);
  ASSERT_TRUE(agent.ok()) << agent.status();
  EXPECT_TRUE(CheckKeyPair(*agent).ok());
  EXPECT_TRUE(CheckKeyPair(ca).ok());
  absl::Status mismatched = CheckKeyPair(KeyPair{agent->certificate_pem, ca.private_key_pem});
  EXPECT_EQ(mismatched.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(mismatched.message(), "the private key does not belong to the certificate");
}

}  // namespace
}  // namespace handoff::pki
