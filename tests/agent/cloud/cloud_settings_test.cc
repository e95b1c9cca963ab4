// The settings keys of the cluster-tag check: clusterId and instanceMetadata.endpoint.
#include "agent/engine/settings.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace handoff {
namespace {

using ::testing::HasSubstr;

TEST(CloudSettingsTest, DefaultsAskTheInstanceMetadataWithNoClusterId) {
  absl::StatusOr<Settings> settings = ParseSettings("{}", "s.yaml");
  ASSERT_TRUE(settings.ok()) << settings.status();
  EXPECT_EQ(settings->cluster_id, "");
  EXPECT_EQ(settings->instance_metadata_endpoint, "http://169.254.169.254");
}

TEST(CloudSettingsTest, ReadsBothKeys) {
  absl::StatusOr<Settings> settings = ParseSettings(
      "clusterId: prod-1\ninstanceMetadata:\n  endpoint: http://[fd00:ec2::254]\n", "s.yaml");
  ASSERT_TRUE(settings.ok()) << settings.status();
  EXPECT_EQ(settings->cluster_id, "prod-1");
  EXPECT_EQ(settings->instance_metadata_endpoint, "http://[fd00:ec2::254]");

  settings = ParseSettings("instanceMetadata: {endpoint: \"\"}\n", "s.yaml");
  ASSERT_TRUE(settings.ok()) << settings.status();
  EXPECT_EQ(settings->instance_metadata_endpoint, "");
}

TEST(CloudSettingsTest, BadValuesNameTheFileAndTheKey) {
  absl::StatusOr<Settings> settings = ParseSettings("clusterId: a/b\n", "s.yaml");
  EXPECT_TRUE(absl::IsInvalidArgument(settings.status()));
  EXPECT_THAT(settings.status().message(),
              HasSubstr("s.yaml: clusterId: \"a/b\" is not a cluster id"));

  settings = ParseSettings("instanceMetadata:\n  endpoint: http://169.254.169.254/latest\n",
                           "s.yaml");
  EXPECT_THAT(settings.status().message(),
              HasSubstr("s.yaml: instanceMetadata.endpoint: \"http://169.254.169.254/latest\" "
                        "has a path"));
  settings = ParseSettings("instanceMetadata:\n  endpoint: 169.254.169.254\n", "s.yaml");
  EXPECT_THAT(settings.status().message(), HasSubstr("s.yaml: instanceMetadata.endpoint: "));
  settings = ParseSettings("instanceMetadata:\n  endpiont: x\n", "s.yaml");
  EXPECT_THAT(settings.status().message(),
              HasSubstr("s.yaml: instanceMetadata.endpiont: unknown setting (known here: "
                        "endpoint)"));
  settings = ParseSettings(std::string("clusterId: ") + std::string(107, 'a') + "\n", "s.yaml");
  EXPECT_THAT(settings.status().message(), HasSubstr("is longer than 106 characters"));
}

}  // namespace
}  // namespace handoff
