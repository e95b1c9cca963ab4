#include "coordinator/kube/mirror_pod.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/coordinator/fake_cluster.h"

namespace handoff::kube {
namespace {

using ::handoff::testing::FakeCluster;
using ::handoff::testing::Message;
using ::testing::HasSubstr;

TEST(MirrorPodTest, HashOfTheStaticPodOnANode) {
  FakeCluster cluster;
  std::unique_ptr<KubeClient> client = cluster.Client();
  absl::StatusOr<std::string> hash =
      MirrorPodHash(*client, "ip-10-0-1-10.ec2.internal", "kube-controller-manager");
  ASSERT_TRUE(hash.ok()) << hash.status();
  EXPECT_EQ(*hash, "9f3c8d2b6a0e4f1d7c5b3a2e1d0c9b8a");
  absl::StatusOr<MirrorPod> pod =
      GetMirrorPod(*client, "ip-10-0-1-11.ec2.internal", "kube-controller-manager");
  ASSERT_TRUE(pod.ok()) << pod.status();
  EXPECT_EQ(pod->name, "kube-controller-manager-ip-10-0-1-11.ec2.internal");
  EXPECT_EQ(pod->phase, "Running");
}

TEST(MirrorPodTest, MissingAndNotMirrorPods) {
  FakeCluster cluster;
  std::unique_ptr<KubeClient> client = cluster.Client();
  absl::StatusOr<std::string> missing =
      MirrorPodHash(*client, "ip-10-0-1-12.ec2.internal", "kube-controller-manager");
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(Message(missing.status()),
            "Pod kube-system/kube-controller-manager-ip-10-0-1-12.ec2.internal not found");

  ASSERT_TRUE(cluster.store()
                  .Put(Json::parse(R"({"apiVersion":"v1","kind":"Pod","metadata":{
                      "name":"cloud-controller-manager-ip-10-0-1-12.ec2.internal",
                      "namespace":"kube-system"}})"))
                  .ok());
  absl::StatusOr<std::string> deployed =
      MirrorPodHash(*client, "ip-10-0-1-12.ec2.internal", "cloud-controller-manager");
  EXPECT_EQ(deployed.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(Message(deployed.status()), HasSubstr("is not a mirror pod"));
}

}  // namespace
}  // namespace handoff::kube
