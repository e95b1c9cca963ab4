#include "agent/cloud/aws_cloud_config.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace handoff {
namespace {

using ::testing::HasSubstr;

TEST(AwsCloudConfigTest, ReadsTheClusterIdAndTheEc2Override) {
  // As kubeadm clusters on AWS point the providers at VPC endpoints.
  absl::StatusOr<AwsCloudConfig> config = ParseAwsCloudConfig(
      "[Global]\n"
      "KubernetesClusterID = prod\n"
      "\n"
      "[ServiceOverride \"1\"]\n"
      "Service = ec2\n"
      "Region = us-east-1\n"
      "URL = https://vpce-0123.ec2.us-east-1.vpce.amazonaws.com\n"
      "SigningRegion = us-east-1\n"
      "\n"
      "[ServiceOverride \"2\"]\n"
      "Service = elasticloadbalancing\n"
      "URL = https://elb.example\n",
      "/etc/kubernetes/cloud.conf");
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->cluster_id, "prod");
  EXPECT_EQ(config->ec2_url, "https://vpce-0123.ec2.us-east-1.vpce.amazonaws.com");
  EXPECT_EQ(config->ec2_signing_region, "us-east-1");
}

TEST(AwsCloudConfigTest, NamesCompareWithoutCaseValuesMayBeQuotedAndCommentsAreSkipped) {
  absl::StatusOr<AwsCloudConfig> config = ParseAwsCloudConfig(
      "; the in-tree provider's file\n"
      "[global]\n"
      "kubernetesclusterid = \"prod;a\"  # quoted: the ';' is the value's\n"
      "Zone = us-east-1a\n"
      "[serviceoverride \"7\"]\n"
      "SERVICE = EC2\n"
      "url = http://10.0.0.1:8700\n",
      "cloud.conf");
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->cluster_id, "prod;a");
  EXPECT_EQ(config->ec2_url, "http://10.0.0.1:8700");
  EXPECT_EQ(config->ec2_signing_region, "");
}

TEST(AwsCloudConfigTest, TheOlderClusterTagKeyServesWhenTheIdIsNotSet) {
  absl::StatusOr<AwsCloudConfig> config =
      ParseAwsCloudConfig("[Global]\nKubernetesClusterTag = legacy\n", "cloud.conf");
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->cluster_id, "legacy");
  config = ParseAwsCloudConfig(
      "[Global]\nKubernetesClusterID = prod\nKubernetesClusterTag = legacy\n", "cloud.conf");
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->cluster_id, "prod");
}

TEST(AwsCloudConfigTest, AnEmptyFileSetsNothing) {
  absl::StatusOr<AwsCloudConfig> config = ParseAwsCloudConfig("", "cloud.conf");
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->cluster_id, "");
  EXPECT_EQ(config->ec2_url, "");
}

TEST(AwsCloudConfigTest, ALineOfNeitherKindIsRefusedNamingTheFileAndLine) {
  absl::StatusOr<AwsCloudConfig> config =
      ParseAwsCloudConfig("[Global]\nKubernetesClusterID prod\n", "/etc/kubernetes/cloud.conf");
  ASSERT_EQ(config.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(config.status().message()),
              HasSubstr("/etc/kubernetes/cloud.conf line 2: neither a [section] nor key = value"));
  config = ParseAwsCloudConfig("[Global\n", "cloud.conf");
  ASSERT_EQ(config.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(config.status().message()), HasSubstr("cloud.conf line 1"));
}

}  // namespace
}  // namespace handoff
