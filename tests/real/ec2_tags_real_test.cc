// The agent's EC2 reader (agent/cloud/ec2_tags.h) against the fake AWS the managers use (moto's
// EC2 API, the fake instance metadata with an instance profile): the cluster tag as the
// cloud-controller-manager sees it at start, before and after the tag is removed in the fake AWS.
// Needs the components (tests/real/components.sh): without them the case skips, or fails when
// HANDOFF_REQUIRE_REAL=1.
#include <signal.h>
#include <stdlib.h>

#include <filesystem>
#include <string>

#include "agent/cloud/ec2_tags.h"
#include "common/base/strings.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "rehearsal/real/components.h"
#include "rehearsal/real/control_plane.h"
#include "rehearsal/real/fake_aws.h"
#include "tests/real/require_components.h"

namespace handoff {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Pair;

// A loopback address of its own: the fake metadata listens on the node's address.
constexpr char kNodeIp[] = "127.0.78.1";

class Ec2TagsRealTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!sandbox::testing::CanRunOnRealComponents({sandbox::real::kFakeAws}, "the fake AWS")) {
      GTEST_SKIP();
    }
    char pattern[] = "/tmp/handoff-ec2-tags-XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    dir_ = pattern;
    absl::StatusOr<sandbox::real::Components> components = sandbox::real::FindComponents(
        sandbox::real::ProcessEnvironment(), {sandbox::real::kFakeAws});
    ASSERT_TRUE(components.ok()) << components.status();
    absl::StatusOr<int> imds_port = sandbox::real::PickFreePort();
    ASSERT_TRUE(imds_port.ok()) << imds_port.status();
    const std::string ready = dir_ + "/fake-aws.json";
    absl::StatusOr<sandbox::real::RunningFakeAws> started = sandbox::real::StartFakeAws(
        {components->Binary(sandbox::real::kFakeAws), "--cluster-id", "prod", "--imds-port",
         StrCat(*imds_port), "--ready-file", ready, "--node", StrCat("cp-1=", kNodeIp)},
        ready, dir_ + "/fake-aws.log");
    ASSERT_TRUE(started.ok()) << started.status();
    fake_aws_ = *std::move(started);
    ASSERT_EQ(fake_aws_.aws.instances.size(), 1u);
    instance_id_ = fake_aws_.aws.instances[0].instance_id;
    metadata_.endpoint = StrCat("http://", kNodeIp, ":", fake_aws_.aws.imds_port);
    metadata_.timeout = absl::Seconds(10);
    ec2_ = Ec2EndpointFor(AwsCloudConfig{"prod", fake_aws_.aws.ec2_url, fake_aws_.aws.region},
                          fake_aws_.aws.instances[0].zone);
  }

  void TearDown() override {
    if (fake_aws_.process) fake_aws_.process->Stop(SIGTERM, absl::Seconds(10));
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }

  // Changes the instance's tags in the fake AWS as an operator's aws command would.
  void Ec2(const std::string& action, const std::string& key, const std::string& value) {
    absl::StatusOr<AwsHttpAnswer> answer =
        CallEc2(ec2_, {"AKIDOPERATOR", "operator-secret", ""}, action,
                {{"ResourceId.1", instance_id_}, {"Tag.1.Key", key}, {"Tag.1.Value", value}},
                absl::Seconds(10));
    ASSERT_TRUE(answer.ok()) << answer.status();
    ASSERT_EQ(answer->status, 200) << answer->body;
  }

  std::string dir_;
  sandbox::real::RunningFakeAws fake_aws_;
  std::string instance_id_;
  InstanceMetadataOptions metadata_;
  Ec2Endpoint ec2_;
};

TEST_F(Ec2TagsRealTest, TheInstanceProfileShowsTheClusterTagAsTheManagersSeeIt) {
  absl::StatusOr<std::map<std::string, std::string>> tags =
      ReadClusterTagsFromEc2(metadata_, instance_id_, ec2_);
  ASSERT_TRUE(tags.ok()) << tags.status();
  EXPECT_THAT(*tags, ElementsAre(Pair("prod", "owned")));

  Ec2("DeleteTags", "kubernetes.io/cluster/prod", "owned");
  tags = ReadClusterTagsFromEc2(metadata_, instance_id_, ec2_);
  ASSERT_TRUE(tags.ok()) << tags.status();
  EXPECT_TRUE(tags->empty()) << "the tag removed in the fake AWS is gone for the agent too";

  Ec2("CreateTags", "kubernetes.io/cluster/prod", "borrowed");
  tags = ReadClusterTagsFromEc2(metadata_, instance_id_, ec2_);
  ASSERT_TRUE(tags.ok()) << tags.status();
  EXPECT_THAT(*tags, ElementsAre(Pair("prod", "borrowed")));
}

TEST_F(Ec2TagsRealTest, AnInstanceEc2DoesNotKnowIsNotFound) {
  absl::StatusOr<std::map<std::string, std::string>> tags =
      ReadClusterTagsFromEc2(metadata_, "i-00000000000000000", ec2_);
  ASSERT_EQ(tags.status().code(), absl::StatusCode::kNotFound) << tags.status();
  EXPECT_THAT(std::string(tags.status().message()), HasSubstr("InvalidInstanceID.NotFound"));
}

}  // namespace
}  // namespace handoff
