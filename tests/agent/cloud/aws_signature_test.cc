#include "agent/cloud/aws_signature.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace handoff {
namespace {

using ::testing::ElementsAre;
using ::testing::Pair;

// The signatures below are botocore 1.43's (SigV4Auth("ec2", "us-east-1").add_auth on the same
// request, in the fake AWS's venv): the AWS SDKs' own implementation, not this one's.
constexpr char kBody[] =
    "Action=DescribeInstances&Version=2016-11-15&InstanceId.1=i-0a1b2c3d4e5f60710";

absl::Time SignedAt() {
  return absl::FromCivil(absl::CivilSecond(2026, 11, 29, 16, 44, 41), absl::UTCTimeZone());
}

AwsCredentials Example(std::string token) {
  return {"AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", std::move(token)};
}

TEST(AwsSignatureTest, SignsAsBotocoreDoes) {
  const auto headers =
      SignPost({"10.0.0.1:8700", kBody}, Example(""), "us-east-1", "ec2", SignedAt());
  EXPECT_THAT(
      headers,
      ElementsAre(
          Pair("content-type", "application/x-www-form-urlencoded; charset=utf-8"),
          Pair("host", "10.0.0.1:8700"), Pair("x-amz-date", "20261129T164441Z"),
          Pair("authorization",
               "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20261129/us-east-1/ec2/aws4_request, "
               "SignedHeaders=content-type;host;x-amz-date, "
               "Signature=6215a8843966e231edf53dcc31d968020e65186f0768e0e6f6a7fccd11f35540")));
}

TEST(AwsSignatureTest, AnInstanceProfilesSessionTokenIsSentAndSigned) {
  const auto headers = SignPost({"10.0.0.1:8700", kBody}, Example("session-token-example"),
                                "us-east-1", "ec2", SignedAt());
  ASSERT_EQ(headers.size(), 5u);
  EXPECT_THAT(headers[3], Pair("x-amz-security-token", "session-token-example"));
  EXPECT_THAT(headers[4],
              Pair("authorization",
                   "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20261129/us-east-1/ec2/aws4_request, "
                   "SignedHeaders=content-type;host;x-amz-date;x-amz-security-token, "
                   "Signature=2fc28df9fd9010164baf602ada3257e67aa653059b5dff026d6bed2603c2c04d"));
}

TEST(AwsSignatureTest, AnotherRegionBodyOrSecretSignsDifferently) {
  const std::string base =
      SignPost({"10.0.0.1:8700", kBody}, Example(""), "us-east-1", "ec2", SignedAt()).back().second;
  EXPECT_NE(
      SignPost({"10.0.0.1:8700", kBody}, Example(""), "eu-west-1", "ec2", SignedAt()).back().second,
      base);
  EXPECT_NE(SignPost({"10.0.0.1:8700", std::string(kBody) + "0"}, Example(""), "us-east-1", "ec2",
                     SignedAt())
                .back()
                .second,
            base);
  AwsCredentials other = Example("");
  other.secret_access_key.back() = 'X';
  EXPECT_NE(SignPost({"10.0.0.1:8700", kBody}, other, "us-east-1", "ec2", SignedAt()).back().second,
            base);
}

TEST(AwsSignatureTest, FormEncodingKeepsOnlyUnreservedCharacters) {
  EXPECT_EQ(FormEncode("kubernetes.io/cluster/prod"), "kubernetes.io%2Fcluster%2Fprod");
  EXPECT_EQ(FormEncode("a b+c=d&e~f_g-h"), "a%20b%2Bc%3Dd%26e~f_g-h");
  EXPECT_EQ(FormEncode("\xc3\xa9"), "%C3%A9");
}

}  // namespace
}  // namespace handoff
