#include "rehearsal/node/node_spec.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace handoff::sandbox::node {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

BootSpec Spec() {
  BootSpec spec;
  spec.name = "ip-172-31-250-10.ec2.internal";
  spec.dir = "/tmp/s/nodes/ip-172-31-250-10.ec2.internal";
  spec.log_dir = "/tmp/s/logs";
  spec.containerd = "/usr/bin/containerd";
  spec.kubelet = "/c/bin/kubelet";
  spec.path = "/c/bin:/usr/bin:/bin";
  spec.kubelet_restart_delay = absl::Seconds(3);
  return spec;
}

TEST(NodeSpecTest, BootArgsReadBackAsTheSpec) {
  absl::StatusOr<BootSpec> parsed = ParseBootArgs(BootArgs(Spec()));
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->name, Spec().name);
  EXPECT_EQ(parsed->dir, Spec().dir);
  EXPECT_EQ(parsed->log_dir, Spec().log_dir);
  EXPECT_EQ(parsed->containerd, Spec().containerd);
  EXPECT_EQ(parsed->kubelet, Spec().kubelet);
  EXPECT_EQ(parsed->path, Spec().path);
  EXPECT_EQ(parsed->kubelet_restart_delay, absl::Seconds(3));
  EXPECT_TRUE(parsed->services);
}

TEST(NodeSpecTest, ANodeWithoutServicesNeedsNoContainerdOrKubelet) {
  BootSpec spec;
  spec.name = "api-lb";
  spec.dir = "/tmp/s/lb";
  spec.log_dir = "/tmp/s/logs";
  spec.services = false;
  EXPECT_THAT(BootArgs(spec), ElementsAre("--name", "api-lb", "--dir", "/tmp/s/lb", "--log-dir",
                                          "/tmp/s/logs", "--no-services"));
  absl::StatusOr<BootSpec> parsed = ParseBootArgs(BootArgs(spec));
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_FALSE(parsed->services);
  EXPECT_EQ(parsed->containerd, "");
}

TEST(NodeSpecTest, BadArgumentsAreNamed) {
  EXPECT_THAT(
      ParseBootArgs({"--name", "Node_1", "--dir", "/d", "--log-dir", "/l"}).status().message(),
      HasSubstr("--name \"Node_1\" is not a hostname"));
  EXPECT_THAT(
      ParseBootArgs({"--name", "n", "--dir", "relative", "--log-dir", "/l"}).status().message(),
      HasSubstr("--dir \"relative\" is not absolute"));
  EXPECT_THAT(ParseBootArgs({"--name", "n", "--dir", "/d", "--log-dir", "/l"}).status().message(),
              HasSubstr("--containerd is required"));
  EXPECT_THAT(ParseBootArgs({"--name", "n", "--bogus", "x"}).status().message(),
              HasSubstr("unknown argument --bogus"));
  EXPECT_THAT(ParseBootArgs({"--name"}).status().message(), HasSubstr("--name needs a value"));
  EXPECT_THAT(ParseBootArgs({"--name", "n", "--dir", "/d", "--log-dir", "/l", "--no-services",
                             "--kubelet-restart-delay", "soon"})
                  .status()
                  .message(),
              HasSubstr("--kubelet-restart-delay \"soon\" is not a duration"));
}

TEST(NodeSpecTest, MountsOverlayTheHostThenBindTheNodesOwnDirectories) {
  const std::vector<NodeMount> mounts = NodeMounts(Spec());
  ASSERT_EQ(mounts.size(), 11u);
  // /etc first, its upper directory the node's own etc/: the node's /etc/kubernetes is
  // <dir>/etc/kubernetes on the host.
  EXPECT_EQ(mounts[0].kind, NodeMount::Kind::kOverlay);
  EXPECT_EQ(mounts[0].target, "/etc");
  EXPECT_EQ(mounts[0].lower, "/etc");
  EXPECT_EQ(mounts[0].upper, Spec().dir + "/etc");
  EXPECT_EQ(mounts[0].work, Spec().dir + "/.node/work/etc");
  EXPECT_EQ(mounts[1].target, "/var/lib");
  EXPECT_EQ(mounts[1].upper, Spec().dir + "/.node/upper/var-lib");
  EXPECT_EQ(mounts[5].kind, NodeMount::Kind::kTmpfs);
  EXPECT_EQ(mounts[5].target, "/run");
  // The binds come after the overlays they sit on.
  EXPECT_EQ(mounts[6].kind, NodeMount::Kind::kBind);
  EXPECT_EQ(mounts[6].target, "/var/lib/kubelet");
  EXPECT_EQ(mounts[6].source, Spec().dir + "/var/lib/kubelet");
  EXPECT_EQ(mounts[10].target, "/var/log/containers");
  // Every source, upper and work directory is made first.
  const std::vector<std::string> dirs = NodeDirectories(Spec());
  EXPECT_EQ(dirs.size(), 15u);
  EXPECT_EQ(dirs.front(), Spec().dir + "/etc");
  EXPECT_EQ(dirs.back(), Spec().dir + "/var/log/containers");
}

}  // namespace
}  // namespace handoff::sandbox::node
