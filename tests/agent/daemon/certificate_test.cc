#include "agent/daemon/certificate.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/agent/engine/node_fixture.h"

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

}  // namespace
}  // namespace handoff
