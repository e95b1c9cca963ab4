#include "agent/cloud/instance_tags.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "agent/cloud/cluster_tag_step.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "httplib.h"
#include "rehearsal/imds/fake_imds.h"

namespace handoff {
namespace {

using sandbox::FakeImds;
using sandbox::FakeImdsOptions;
using ::testing::ElementsAre;
using ::testing::AllOf;
using ::testing::HasSubstr;
using Outcome = ClusterTagCheck::Outcome;

constexpr char kInstance[] = "i-0123456789abcdef0";
constexpr char kCommand[] =
    "aws ec2 describe-tags --filters Name=resource-id,Values=i-0123456789abcdef0 "
    "Name=key,Values=kubernetes.io/cluster/prod";

std::unique_ptr<FakeImds> StartImds(std::optional<std::map<std::string, std::string>> tags,
                                    bool answer = true) {
  FakeImdsOptions options;
  options.instance_id = kInstance;
  options.tags = std::move(tags);
  options.answer = answer;
  absl::StatusOr<std::unique_ptr<FakeImds>> imds = FakeImds::Start(options);
  EXPECT_TRUE(imds.ok()) << imds.status();
  return imds.ok() ? *std::move(imds) : nullptr;
}

InstanceMetadataOptions At(const std::string& endpoint) {
  InstanceMetadataOptions options;
  options.endpoint = endpoint;
  return options;
}

// A loopback port nothing listens on: bound (so the kernel picks a free one), then closed.
int ClosedPort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
  socklen_t size = sizeof(address);
  EXPECT_EQ(getsockname(fd, reinterpret_cast<sockaddr*>(&address), &size), 0);
  close(fd);
  return ntohs(address.sin_port);
}

TEST(CheckClusterTagTest, ConfirmsOwnedAndShared) {
  for (const std::string value : {"owned", "shared"}) {
    auto imds = StartImds(std::map<std::string, std::string>{
        {"Name", "control-plane-1"}, {"kubernetes.io/cluster/prod", value}});
    absl::StatusOr<ClusterTagCheck> check = CheckClusterTag("prod", At(imds->endpoint()));
    ASSERT_TRUE(check.ok()) << check.status();
    EXPECT_EQ(check->outcome, Outcome::kConfirmed);
    EXPECT_EQ(check->message, "instance i-0123456789abcdef0 carries kubernetes.io/cluster/prod=" +
                                  value);
    EXPECT_EQ(imds->tokens_issued(), 1);  // one session for every request
    EXPECT_EQ(imds->unauthorized_requests(), 0);
  }
}

TEST(CheckClusterTagTest, RefusesAnotherValueNamingIt) {
  auto imds = StartImds(std::map<std::string, std::string>{{"kubernetes.io/cluster/prod", "yes"}});
  absl::StatusOr<ClusterTagCheck> check = CheckClusterTag("prod", At(imds->endpoint()));
  EXPECT_TRUE(absl::IsFailedPrecondition(check.status())) << check.status();
  EXPECT_THAT(check.status().message(),
              HasSubstr("instance i-0123456789abcdef0 has the tag kubernetes.io/cluster/prod=yes; "
                        "the cloud-controller-manager takes only instances tagged owned or "
                        "shared"));
}

TEST(CheckClusterTagTest, TagsNotShownLeavesTheCheckToTheOperator) {
  auto imds = StartImds(std::nullopt);  // tags/instance: 404
  absl::StatusOr<ClusterTagCheck> check = CheckClusterTag("prod", At(imds->endpoint()));
  ASSERT_TRUE(check.ok()) << check.status();
  EXPECT_EQ(check->outcome, Outcome::kNotVisible);
  EXPECT_EQ(check->message,
            std::string("instance i-0123456789abcdef0 does not show its tags in the instance "
                        "metadata (tags/instance: HTTP 404; they are off unless the instance "
                        "allows them); check the tag yourself: `") +
                kCommand + "` must show the value owned or shared");
}

TEST(CheckClusterTagTest, TagsShownWithoutTheKeySaysWhyItCannotBeThere) {
  // What a real instance that allows tags in its metadata shows: keys without '/'.
  auto imds = StartImds(std::map<std::string, std::string>{{"Name", "control-plane-1"}});
  absl::StatusOr<ClusterTagCheck> check = CheckClusterTag("prod", At(imds->endpoint()));
  ASSERT_TRUE(check.ok()) << check.status();
  EXPECT_EQ(check->outcome, Outcome::kNotVisible);
  EXPECT_THAT(check->message, HasSubstr("AWS never shows a key with '/' there"));
  EXPECT_THAT(check->message, HasSubstr("work-with-tags-in-IMDS.html"));
  EXPECT_THAT(check->message, HasSubstr(kCommand));
}

TEST(CheckClusterTagTest, NothingListeningIsNotVisible) {
  const std::string endpoint = "http://127.0.0.1:" + std::to_string(ClosedPort());
  absl::StatusOr<ClusterTagCheck> check = CheckClusterTag("prod", At(endpoint));
  ASSERT_TRUE(check.ok()) << check.status();
  EXPECT_EQ(check->outcome, Outcome::kNotVisible);
  EXPECT_THAT(check->message, HasSubstr("the instance metadata (" + endpoint +
                                        "/latest/api/token) did not answer"));
  // No instance id was learnt: the command names the placeholder.
  EXPECT_THAT(check->message,
              HasSubstr("Values=<instance-id> Name=key,Values=kubernetes.io/cluster/prod"));
}

TEST(CheckClusterTagTest, NoAnswerWithinTheTimeoutIsNotVisible) {
  auto imds = StartImds(std::nullopt, /*answer=*/false);
  InstanceMetadataOptions options = At(imds->endpoint());
  options.timeout = absl::Milliseconds(200);
  absl::StatusOr<ClusterTagCheck> check = CheckClusterTag("prod", options);
  ASSERT_TRUE(check.ok()) << check.status();
  EXPECT_EQ(check->outcome, Outcome::kNotVisible);
  EXPECT_THAT(check->message, HasSubstr("did not answer within 200ms"));
  EXPECT_THAT(check->message, HasSubstr("check the tag yourself"));
}

TEST(FakeImdsTest, RequiresTheSessionToken) {
  // The check passes only because it sends the token: the fake refuses a request without it as
  // an instance that requires IMDSv2 does. Asked directly, without the PUT, it answers 401.
  auto imds =
      StartImds(std::map<std::string, std::string>{{"kubernetes.io/cluster/prod", "owned"}});
  InstanceMetadataOptions options = At(imds->endpoint());
  ASSERT_EQ(CheckClusterTag("prod", options)->outcome, Outcome::kConfirmed);
  EXPECT_EQ(imds->unauthorized_requests(), 0);

  httplib::Client client("127.0.0.1", imds->port());
  httplib::Result no_token = client.Get("/latest/meta-data/instance-id");
  ASSERT_TRUE(no_token);
  EXPECT_EQ(no_token->status, 401);
  httplib::Result wrong = client.Get("/latest/meta-data/instance-id",
                                     {{"X-aws-ec2-metadata-token", "made-up"}});
  ASSERT_TRUE(wrong);
  EXPECT_EQ(wrong->status, 401);
  EXPECT_EQ(imds->unauthorized_requests(), 2);
  httplib::Result no_ttl = client.Put("/latest/api/token", "", "text/plain");
  ASSERT_TRUE(no_ttl);
  EXPECT_EQ(no_ttl->status, 400);
}

TEST(CheckClusterTagTest, EmptyOrMalformedClusterIdIsInvalid) {
  auto imds = StartImds(std::nullopt);
  EXPECT_TRUE(absl::IsInvalidArgument(CheckClusterTag("", At(imds->endpoint())).status()));
  EXPECT_TRUE(absl::IsInvalidArgument(CheckClusterTag("a/b", At(imds->endpoint())).status()));
  EXPECT_EQ(imds->tokens_issued(), 0);  // refused before asking anything
}

TEST(CheckClusterTagTest, EmptyEndpointAsksNothing) {
  absl::StatusOr<ClusterTagCheck> check = CheckClusterTag("prod", At(""));
  ASSERT_TRUE(check.ok()) << check.status();
  EXPECT_EQ(check->outcome, Outcome::kNotVisible);
  EXPECT_THAT(check->message, HasSubstr("instanceMetadata.endpoint is \"\""));
}

TEST(ClusterTagNotesTest, OnlyStoppedToExternalIsChecked) {
  auto imds = StartImds(std::map<std::string, std::string>{{"kubernetes.io/cluster/prod", "bad"}});
  const InstanceMetadataOptions options = At(imds->endpoint());
  for (auto [from, to] : {std::pair{NodeState::kInTree, NodeState::kStopped},
                          std::pair{NodeState::kExternal, NodeState::kFinalized},
                          std::pair{NodeState::kExternal, NodeState::kStopped},
                          std::pair{NodeState::kInTree, NodeState::kPrepared}}) {
    absl::StatusOr<std::vector<std::string>> notes = ClusterTagNotes(from, to, "prod", options);
    ASSERT_TRUE(notes.ok()) << notes.status();
    EXPECT_TRUE(notes->empty());
  }
  EXPECT_EQ(imds->tokens_issued(), 0);
  EXPECT_TRUE(absl::IsFailedPrecondition(
      ClusterTagNotes(NodeState::kStopped, NodeState::kExternal, "prod", options).status()));
}

TEST(ClusterTagNotesTest, NoClusterIdIsANoteNotARefusal) {
  absl::StatusOr<std::vector<std::string>> notes =
      ClusterTagNotes(NodeState::kStopped, NodeState::kExternal, "", At(""));
  ASSERT_TRUE(notes.ok()) << notes.status();
  ASSERT_EQ(notes->size(), 1u);
  EXPECT_THAT(notes->front(), HasSubstr("set clusterId in the settings so handoff can check"));
  EXPECT_THAT(notes->front(),
              HasSubstr("`aws ec2 describe-tags --filters Name=resource-id,Values=<instance-id> "
                        "Name=key,Values=kubernetes.io/cluster/<id>`"));
}

TEST(ClusterTagBeforeMoveTest, MoveSettingsNameTheClusterAndTheNodeTheEndpoint) {
  auto imds =
      StartImds(std::map<std::string, std::string>{{"kubernetes.io/cluster/prod", "owned"}});
  Settings node;
  node.instance_metadata_endpoint = imds->endpoint();
  Settings move;  // the coordinator's: default endpoint, which this test could not reach
  move.cluster_id = "prod";
  BeforeMoveHook hook = ClusterTagBeforeMove(node);
  absl::StatusOr<std::vector<std::string>> notes =
      hook(NodeState::kStopped, NodeState::kExternal, move);
  ASSERT_TRUE(notes.ok()) << notes.status();
  EXPECT_THAT(*notes,
              ElementsAre("instance i-0123456789abcdef0 carries kubernetes.io/cluster/prod=owned"));

  node.cluster_id = "prod";  // the node's own id serves when the move names none
  notes = ClusterTagBeforeMove(node)(NodeState::kStopped, NodeState::kExternal, Settings());
  ASSERT_TRUE(notes.ok()) << notes.status();
  EXPECT_THAT(*notes,
              ElementsAre("instance i-0123456789abcdef0 carries kubernetes.io/cluster/prod=owned"));
}

TEST(InstanceIdentityTest, ReadsTheInstancesIdHostnameAndZone) {
  FakeImdsOptions options;
  options.instance_id = kInstance;
  options.local_hostname = "ip-10-0-1-10.ec2.internal";
  options.availability_zone = "us-east-1a";
  absl::StatusOr<std::unique_ptr<FakeImds>> imds = FakeImds::Start(options);
  ASSERT_TRUE(imds.ok()) << imds.status();
  absl::StatusOr<InstanceIdentity> identity = ReadInstanceIdentity(At((*imds)->endpoint()));
  ASSERT_TRUE(identity.ok()) << identity.status();
  EXPECT_EQ(identity->instance_id, kInstance);
  EXPECT_EQ(identity->local_hostname, "ip-10-0-1-10.ec2.internal");
  EXPECT_EQ(identity->availability_zone, "us-east-1a");
  EXPECT_EQ((*imds)->unauthorized_requests(), 0);
}

TEST(InstanceIdentityTest, UnavailableWhenTheMetadataDoesNotAnswerOrIsOff) {
  std::unique_ptr<FakeImds> silent = StartImds(std::nullopt, /*answer=*/false);
  ASSERT_NE(silent, nullptr);
  InstanceMetadataOptions options = At(silent->endpoint());
  options.timeout = absl::Milliseconds(300);
  absl::StatusOr<InstanceIdentity> identity = ReadInstanceIdentity(options);
  EXPECT_TRUE(absl::IsUnavailable(identity.status())) << identity.status();
  EXPECT_THAT(std::string(identity.status().message()), HasSubstr("did not answer within"));
  identity = ReadInstanceIdentity(At(""));
  EXPECT_TRUE(absl::IsUnavailable(identity.status())) << identity.status();
  EXPECT_THAT(std::string(identity.status().message()), HasSubstr("instanceMetadata.endpoint"));
}

TEST(InstanceIdentityTest, TheEcrRegistryIsTheIdentityDocumentsAccountAndRegion) {
  FakeImdsOptions options;
  options.account_id = "210987654321";
  options.availability_zone = "eu-west-1b";
  absl::StatusOr<std::unique_ptr<FakeImds>> imds = FakeImds::Start(options);
  ASSERT_TRUE(imds.ok()) << imds.status();
  absl::StatusOr<std::string> registry = ReadEcrRegistry(At((*imds)->endpoint()));
  ASSERT_TRUE(registry.ok()) << registry.status();
  EXPECT_EQ(*registry, "210987654321.dkr.ecr.eu-west-1.amazonaws.com");
  EXPECT_EQ(EcrRegistryOf("210987654321", "cn-north-1"),
            "210987654321.dkr.ecr.cn-north-1.amazonaws.com.cn");

  // A document without an account of twelve digits names no registry.
  options.account_id = "";
  imds = FakeImds::Start(options);
  ASSERT_TRUE(imds.ok()) << imds.status();
  registry = ReadEcrRegistry(At((*imds)->endpoint()));
  EXPECT_TRUE(absl::IsUnavailable(registry.status())) << registry.status();
  EXPECT_THAT(std::string(registry.status().message()),
              AllOf(HasSubstr("dynamic/instance-identity/document"),
                    HasSubstr("worker.ecrRegistry")));
  EXPECT_TRUE(absl::IsUnavailable(ReadEcrRegistry(At("")).status()));
}

}  // namespace
}  // namespace handoff
