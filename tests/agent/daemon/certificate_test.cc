#include "agent/daemon/certificate.h"

#include "common/base/strings.h"
#include "common/pki/pki.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "spdlog/sinks/ringbuffer_sink.h"
#include "tests/agent/engine/node_fixture.h"
#include "tests/common/pki/tls_test_files.h"

namespace handoff {
namespace {

using testing::ReadTestdata;

TEST(CertificateTest, CommonNameIsTheNodeName) {
  absl::StatusOr<std::string> name = CertificateCommonName(ReadTestdata("handoff-tls/cp-3.crt"));
  ASSERT_TRUE(name.ok()) << name.status();
  EXPECT_EQ(*name, "cp-3");
}

TEST(CertificateTest, NotACertificate) {
  absl::StatusOr<std::string> name = CertificateCommonName(ReadTestdata("handoff-tls/cp-3.key"));
  ASSERT_FALSE(name.ok());
  EXPECT_THAT(std::string(name.status().message()), ::testing::HasSubstr("not a PEM certificate"));
}

TEST(CertificateTest, KeyMustBelongToTheCertificate) {
  EXPECT_TRUE(CheckKeyMatchesCertificate(ReadTestdata("handoff-tls/cp-1.crt"),
                                         ReadTestdata("handoff-tls/cp-1.key"))
                  .ok());
  absl::Status other = CheckKeyMatchesCertificate(ReadTestdata("handoff-tls/cp-1.crt"),
                                                  ReadTestdata("handoff-tls/cp-2.key"));
  EXPECT_THAT(std::string(other.message()), ::testing::HasSubstr("does not belong"));
  absl::Status garbage =
      CheckKeyMatchesCertificate(ReadTestdata("handoff-tls/cp-1.crt"), "not a key");
  EXPECT_THAT(std::string(garbage.message()), ::testing::HasSubstr("not a PEM private key"));
}

// Certificates made for these tests around a fixed time; the checks take the time as an input.
class ClientCertificateCheckTest : public ::testing::Test {
 protected:
  static constexpr int64_t kNowSeconds = 1'800'000'000;  // 2027-01-15T08:00:00Z

  void SetUp() override {
    absl::StatusOr<pki::KeyPair> ca = pki::CreateCertificateAuthority(
        "handoff-ca", now_ - absl::Hours(24 * 30), absl::Hours(24 * 365));
    ASSERT_TRUE(ca.ok()) << ca.status();
    ca_ = *ca;
  }

  pki::KeyPair Issue(absl::Time at, absl::Duration validity, bool client = true) {
    pki::CertificateRequest request;
    request.common_name = "cp-1";
    request.organizations = {"handoff:agents"};
    request.client = client;
    request.server = !client;
    request.validity = validity;
    absl::StatusOr<pki::KeyPair> issued = pki::IssueCertificate(ca_, request, at);
    EXPECT_TRUE(issued.ok()) << issued.status();
    return issued.ok() ? *issued : pki::KeyPair{};
  }

  const absl::Time now_ = absl::FromUnixSeconds(kNowSeconds);
  pki::KeyPair ca_;
};

TEST_F(ClientCertificateCheckTest, AValidCertificatePasses) {
  const pki::KeyPair agent = Issue(now_, absl::Hours(24));
  EXPECT_TRUE(CheckClientCertificate(agent.certificate_pem, ca_.certificate_pem, now_).ok());
  EXPECT_EQ(DescribeCertificate(agent.certificate_pem),
            "CN=cp-1, issued by CN=handoff-ca, valid until 2027-01-16T08:00:00Z");
}

TEST_F(ClientCertificateCheckTest, ExpiryIsWorthAWarningInTheLast30DaysAndTheLastHalfOfItsLife) {
  // A day-long certificate warns only in its second half, a long-lived one 30 days before.
  absl::StatusOr<pki::CertificateInfo> day =
      pki::InspectCertificate(Issue(now_, absl::Hours(24)).certificate_pem);
  ASSERT_TRUE(day.ok());
  const absl::Time day_middle = day->not_before + (day->not_after - day->not_before) / 2;
  EXPECT_FALSE(pki::ExpiresSoon(*day, day->not_before));
  EXPECT_FALSE(pki::ExpiresSoon(*day, day_middle - absl::Minutes(1)));
  EXPECT_TRUE(pki::ExpiresSoon(*day, day_middle + absl::Minutes(1)));
  absl::StatusOr<pki::CertificateInfo> long_lived =
      pki::InspectCertificate(Issue(now_, absl::Hours(24 * 300)).certificate_pem);
  ASSERT_TRUE(long_lived.ok());
  EXPECT_FALSE(pki::ExpiresSoon(*long_lived, long_lived->not_after - absl::Hours(24 * 31)));
  EXPECT_TRUE(pki::ExpiresSoon(*long_lived, long_lived->not_after - absl::Hours(24 * 29)));
}

TEST_F(ClientCertificateCheckTest, AnExpiredCertificateIsNamedWithItsDates) {
  const pki::KeyPair agent = Issue(now_ - absl::Hours(48), absl::Hours(24));
  absl::Status checked = CheckClientCertificate(agent.certificate_pem, ca_.certificate_pem, now_);
  EXPECT_EQ(checked.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(checked.message(),
            "the certificate CN=cp-1 does not verify against the CA CN=handoff-ca at "
            "2027-01-15T08:00:00Z: certificate has expired (CN=cp-1 is valid from "
            "2027-01-13T07:55:00Z to 2027-01-14T08:00:00Z)");
}

TEST_F(ClientCertificateCheckTest, ACertificateNotYetValidIsNamedWithItsDates) {
  const pki::KeyPair agent = Issue(now_ + absl::Hours(24), absl::Hours(24));
  absl::Status checked = CheckClientCertificate(agent.certificate_pem, ca_.certificate_pem, now_);
  EXPECT_EQ(checked.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(checked.message(),
              ::testing::HasSubstr("certificate is not yet valid (CN=cp-1 is valid from "
                                   "2027-01-16T07:55:00Z to 2027-01-17T08:00:00Z)"));
}

TEST_F(ClientCertificateCheckTest, ACertificateOfAnotherCaOrNotForClientsIsRefused) {
  absl::Status foreign = CheckClientCertificate(ReadTestdata("handoff-tls/cp-1.crt"),
                                                ca_.certificate_pem, now_);
  EXPECT_EQ(foreign.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(foreign.message(), ::testing::HasSubstr("issued by CN=handoff-test-ca"));
  absl::Status server_only = CheckClientCertificate(
      Issue(now_, absl::Hours(1), /*client=*/false).certificate_pem, ca_.certificate_pem, now_);
  EXPECT_THAT(server_only.message(), ::testing::HasSubstr("is not for TLS clients"));
  EXPECT_EQ(CheckClientCertificate("junk", ca_.certificate_pem, now_).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(DescribeCertificate("junk"), "");
}

// The agent's watched TLS files: a replacement must still name this node, and one the
// coordinator would refuse is taken with a warning.
TEST(AgentTlsMaterialTest, ReplacementMustNameThisNodeAndIsLogged) {
  const pki::KeyPair ca = testing::NewCa();
  const pki::KeyPair first = testing::Issue(ca, "cp-1", false);
  const pki::KeyPair second = testing::Issue(ca, "cp-1", false);
  testing::TlsFilesDir dir;
  dir.WriteCa(ca.certificate_pem);
  dir.WriteIdentity(first);
  auto sink = std::make_shared<spdlog::sinks::ringbuffer_sink_mt>(16);
  auto logger = std::make_shared<spdlog::logger>("test", sink);
  absl::StatusOr<std::shared_ptr<rpc::TlsMaterial>> tls =
      AgentTlsMaterial(rpc::ClientTls(), dir.files(), absl::Hours(1), "cp-1", logger);
  ASSERT_TRUE(tls.ok()) << tls.status();
  auto last_line = [&sink] {
    std::vector<std::string> lines = sink->last_formatted();
    return lines.empty() ? std::string() : lines.back();
  };

  dir.WriteIdentity(second);
  EXPECT_TRUE((*tls)->Refresh().ok());
  EXPECT_THAT(last_line(), ::testing::HasSubstr(StrCat(dir.Path("tls.crt"),
                                                       " replaced: the next connection presents "
                                                       "CN=cp-1, issued by CN=handoff-ca")));

  dir.WriteIdentity(testing::Issue(ca, "cp-2", false));
  absl::Status refused = (*tls)->Refresh();
  EXPECT_THAT(std::string(refused.message()),
              ::testing::HasSubstr(StrCat(dir.Path("tls.crt"),
                                          ": the certificate names cp-2, not this node (cp-1)")));
  EXPECT_THAT(last_line(), ::testing::HasSubstr("the certificate names cp-2"));
  EXPECT_EQ((*tls)->Current().cert_pem, second.certificate_pem);

  const pki::KeyPair other_ca = testing::NewCa();
  dir.WriteIdentity(testing::Issue(other_ca, "cp-1", false));
  EXPECT_TRUE((*tls)->Refresh().ok());
  EXPECT_THAT(last_line(), ::testing::HasSubstr("the coordinator will refuse the replaced "
                                                "certificate"));

  // Without files: the PEMs as they are.
  absl::StatusOr<std::shared_ptr<rpc::TlsMaterial>> fixed = AgentTlsMaterial(
      rpc::ClientTls{ca.certificate_pem, first.certificate_pem, first.private_key_pem, ""},
      rpc::TlsFiles(), absl::Hours(1), "cp-1", logger);
  ASSERT_TRUE(fixed.ok()) << fixed.status();
  EXPECT_EQ((*fixed)->Current().cert_pem, first.certificate_pem);
}

}  // namespace
}  // namespace handoff
