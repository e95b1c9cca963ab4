#include "rehearsal/node/kubelet_unit.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/memory_file_system.h"

namespace handoff::sandbox::node {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

MemoryFileSystem PackageInstalled() {
  MemoryFileSystem fs;
  for (const auto& [path, text] : KubeletPackageFiles("/c/bin/kubelet")) fs.SetFile(path, text);
  return fs;
}

TEST(KubeletUnitTest, TheKubeletRunsAsKubeadmsDropInStartsIt) {
  MemoryFileSystem fs = PackageInstalled();
  fs.SetFile("/var/lib/kubelet/kubeadm-flags.env",
             "KUBELET_KUBEADM_ARGS=\"--container-runtime-endpoint=unix:///run/containerd/"
             "containerd.sock --cloud-provider=aws  --node-ip=172.31.250.10\"\n");
  fs.SetFile("/etc/default/kubelet", "KUBELET_EXTRA_ARGS=--v=2 \"--node-labels=a=b c\"\n");
  absl::StatusOr<std::vector<std::string>> argv = KubeletArgv(fs, "cp-1");
  ASSERT_TRUE(argv.ok()) << argv.status();
  EXPECT_THAT(
      *argv,
      ElementsAre("/c/bin/kubelet", "--bootstrap-kubeconfig=/etc/kubernetes/bootstrap-kubelet.conf",
                  "--kubeconfig=/etc/kubernetes/kubelet.conf",
                  "--config=/var/lib/kubelet/config.yaml",
                  "--container-runtime-endpoint=unix:///run/containerd/containerd.sock",
                  "--cloud-provider=aws", "--node-ip=172.31.250.10", "--v=2",
                  "--node-labels=a=b c"));
}

TEST(KubeletUnitTest, WithoutEitherFileTheDropInsOwnFlagsOnly) {
  MemoryFileSystem fs = PackageInstalled();
  absl::StatusOr<std::vector<std::string>> argv = KubeletArgv(fs, "cp-1");
  ASSERT_TRUE(argv.ok()) << argv.status();
  EXPECT_EQ(argv->size(), 4u);
}

TEST(KubeletUnitTest, AnOperatorsDropInIsReadAsSystemdWouldReadIt) {
  MemoryFileSystem fs = PackageInstalled();
  fs.SetFile("/etc/systemd/system/kubelet.service.d/20-aws.conf",
             "[Service]\nExecStart=\nExecStart=/c/bin/kubelet --cloud-provider=aws "
             "--hostname-override=%H\n");
  absl::StatusOr<std::vector<std::string>> argv = KubeletArgv(fs, "worker-1");
  ASSERT_TRUE(argv.ok()) << argv.status();
  EXPECT_THAT(*argv, ElementsAre("/c/bin/kubelet", "--cloud-provider=aws",
                                 "--hostname-override=worker-1"));
  // A second ExecStart without the reset: systemd refuses the unit, and so does the node.
  fs.SetFile("/etc/systemd/system/kubelet.service.d/30-x.conf",
             "[Service]\nExecStart=/c/bin/kubelet --v=9\n");
  EXPECT_THAT(KubeletArgv(fs, "worker-1").status().message(), HasSubstr("a second ExecStart="));
}

}  // namespace
}  // namespace handoff::sandbox::node
