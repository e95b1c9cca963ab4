#include "agent/cloud/ec2_tags.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "rehearsal/imds/fake_imds.h"

namespace handoff {
namespace {

using ::testing::HasSubstr;
using ::testing::Pair;
using ::testing::UnorderedElementsAre;

// moto's DescribeInstances answer for one instance (its shape: EC2's 2016-11-15 XML), cut to what
// surrounds the tags: the block devices' and network interfaces' own <item>s come first.
constexpr char kAnswer[] =
    R"(<?xml version="1.0" encoding="utf-8"?>
<DescribeInstancesResponse xmlns="http://ec2.amazonaws.com/doc/2016-11-15"><reservationSet><item>
<reservationId>r-39ee83db559155f15</reservationId><ownerId>123456789012</ownerId><groupSet/>
<instancesSet><item><architecture>x86_64</architecture><blockDeviceMapping><item>
<deviceName>/dev/sda1</deviceName><ebs><volumeId>vol-c09aeaf2b317d19e9</volumeId></ebs></item>
</blockDeviceMapping><networkInterfaceSet><item><groupSet><item><groupId>sg-16b62899e55bff016</groupId>
<groupName>default</groupName></item></groupSet></item></networkInterfaceSet>
<tagSet><item><key>kubernetes.io/cluster/prod</key><value>owned</value></item><item><key>Name</key>
<value>cp-1</value></item><item><key>kubernetes.io/cluster/a&amp;b</key><value>shared</value></item>
</tagSet><instanceId>i-7f097e3628ef4756d</instanceId><privateDnsName>ip-10-194-161-167.ec2.internal</privateDnsName>
</item></instancesSet></item></reservationSet><requestId>request-id</requestId></DescribeInstancesResponse>)";

TEST(Ec2TagsTest, ReadsTheInstancesClusterTagsOnly) {
  absl::StatusOr<std::map<std::string, std::string>> tags =
      ParseDescribeInstancesTags(kAnswer, "i-7f097e3628ef4756d");
  ASSERT_TRUE(tags.ok()) << tags.status();
  EXPECT_THAT(*tags, UnorderedElementsAre(Pair("prod", "owned"), Pair("a&b", "shared")));
}

TEST(Ec2TagsTest, AnInstanceWithoutClusterTagsHasNone) {
  std::string answer = kAnswer;
  for (const std::string cut :
       {"<item><key>kubernetes.io/cluster/prod</key><value>owned</value></item>",
        "<item><key>kubernetes.io/cluster/a&amp;b</key><value>shared</value></item>"}) {
    answer.erase(answer.find(cut), cut.size());
  }
  absl::StatusOr<std::map<std::string, std::string>> tags =
      ParseDescribeInstancesTags(answer, "i-7f097e3628ef4756d");
  ASSERT_TRUE(tags.ok()) << tags.status();
  EXPECT_TRUE(tags->empty());
}

TEST(Ec2TagsTest, AnotherInstancesAnswerIsNotFound) {
  EXPECT_EQ(ParseDescribeInstancesTags(kAnswer, "i-0000000000000000a").status().code(),
            absl::StatusCode::kNotFound);
}

TEST(Ec2TagsTest, EveryErrorAnswerSaysEc2sCodeAndMessage) {
  // moto's answer for an unknown instance, word for word; the others as EC2 words them.
  constexpr char kNotFound[] =
      R"(<?xml version="1.0" encoding="utf-8"?>
<Response xmlns="http://ec2.amazonaws.com/doc/2016-11-15"><Errors><Error><Code>InvalidInstanceID.NotFound</Code><Message>The instance ID 'i-00000000000000000' does not exist</Message></Error></Errors><RequestID>request-id</RequestID></Response>)";
  absl::Status status = ParseDescribeInstancesTags(kNotFound, "i-00000000000000000").status();
  EXPECT_EQ(status.code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(status.message(),
            "EC2 refused DescribeInstances for i-00000000000000000: InvalidInstanceID.NotFound: "
            "The instance ID 'i-00000000000000000' does not exist");
  for (const char* code : {"UnauthorizedOperation", "AuthFailure", "SignatureDoesNotMatch"}) {
    const std::string answer = std::string("<Response><Errors><Error><Code>") + code +
                               "</Code><Message>no</Message></Error></Errors></Response>";
    EXPECT_EQ(ParseDescribeInstancesTags(answer, "i-1").status().code(),
              absl::StatusCode::kPermissionDenied)
        << code;
  }
  status = ParseDescribeInstancesTags(
               "<Response><Errors><Error><Code>RequestLimitExceeded</Code><Message>slow "
               "down</Message></Error></Errors></Response>",
               "i-1")
               .status();
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(std::string(status.message()), HasSubstr("RequestLimitExceeded: slow down"));
  EXPECT_EQ(ParseDescribeInstancesTags("<html>proxy error</html>", "i-1").status().code(),
            absl::StatusCode::kUnavailable);
  EXPECT_EQ(ParseDescribeInstancesTags("not xml <", "i-1").status().code(),
            absl::StatusCode::kUnavailable);
}

TEST(Ec2TagsTest, TheEndpointIsTheCloudConfigsOverrideElseTheRegionsOwn) {
  Ec2Endpoint endpoint = Ec2EndpointFor(AwsCloudConfig{}, "eu-west-1b");
  EXPECT_EQ(endpoint.url, "https://ec2.eu-west-1.amazonaws.com");
  EXPECT_EQ(endpoint.region, "eu-west-1");
  endpoint =
      Ec2EndpointFor(AwsCloudConfig{"prod", "http://10.0.0.1:8700", "us-east-1"}, "eu-west-1b");
  EXPECT_EQ(endpoint.url, "http://10.0.0.1:8700");
  EXPECT_EQ(endpoint.region, "us-east-1");
  // No SigningRegion: the instance's region signs.
  endpoint = Ec2EndpointFor(AwsCloudConfig{"prod", "http://10.0.0.1:8700", ""}, "eu-west-1b");
  EXPECT_EQ(endpoint.region, "eu-west-1");
}

TEST(Ec2TagsTest, AnInstanceWithoutAnInstanceProfileCannotAskEc2) {
  // The fake metadata, like an instance launched without a profile, has no
  // iam/security-credentials/: nothing is sent to EC2 (whose address here answers nothing).
  absl::StatusOr<std::unique_ptr<sandbox::FakeImds>> imds =
      sandbox::FakeImds::Start(sandbox::FakeImdsOptions{});
  ASSERT_TRUE(imds.ok()) << imds.status();
  InstanceMetadataOptions metadata;
  metadata.endpoint = (*imds)->endpoint();
  absl::StatusOr<std::map<std::string, std::string>> tags =
      ReadClusterTagsFromEc2(metadata, "i-0123456789abcdef0", {"http://127.0.0.1:9", "us-east-1"});
  ASSERT_EQ(tags.status().code(), absl::StatusCode::kFailedPrecondition) << tags.status();
  EXPECT_THAT(std::string(tags.status().message()),
              HasSubstr("instance i-0123456789abcdef0 has no instance profile"));
}

TEST(Ec2TagsTest, NoMetadataEndpointAsksNothing) {
  InstanceMetadataOptions metadata;
  metadata.endpoint = "";
  EXPECT_EQ(
      ReadClusterTagsFromEc2(metadata, "i-1", {"http://127.0.0.1:9", "us-east-1"}).status().code(),
      absl::StatusCode::kUnavailable);
}

}  // namespace
}  // namespace handoff
