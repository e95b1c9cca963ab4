#include "rehearsal/kubelet/pod_exec.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace handoff::sandbox {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

PodExecSpec Spec() {
  PodExecSpec spec;
  spec.hostname = "cp-1";
  spec.binary = "/cache/bin/kube-controller-manager";
  spec.scratch_dir = "/n/cp-1/run/sandbox-pod-root";
  spec.mounts = {{"/n/cp-1/etc/kubernetes/pki", "/etc/kubernetes/pki", true},
                 {"/n/cp-1/var/lib/x", "/var/lib/x", false}};
  // Items that look like the helper's own flags belong to the container after "--".
  spec.argv = {"kube-controller-manager", "--hostname", "--", "--mount", "--v=2"};
  return spec;
}

TEST(PodExecTest, ArgsRoundTrip) {
  const std::vector<std::string> args = PodExecArgs(Spec());
  EXPECT_THAT(args, ElementsAre("--hostname", "cp-1", "--binary",
                                "/cache/bin/kube-controller-manager", "--scratch",
                                "/n/cp-1/run/sandbox-pod-root", "--mount", "ro",
                                "/n/cp-1/etc/kubernetes/pki", "/etc/kubernetes/pki", "--mount",
                                "rw", "/n/cp-1/var/lib/x", "/var/lib/x", "--",
                                "kube-controller-manager", "--hostname", "--", "--mount", "--v=2"));
  absl::StatusOr<PodExecSpec> parsed = ParsePodExecArgs(args);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->hostname, "cp-1");
  EXPECT_EQ(parsed->binary, "/cache/bin/kube-controller-manager");
  EXPECT_EQ(parsed->scratch_dir, "/n/cp-1/run/sandbox-pod-root");
  EXPECT_EQ(parsed->mounts, Spec().mounts);
  EXPECT_EQ(parsed->argv, Spec().argv);
}

TEST(PodExecTest, BadArgsAreNamed) {
  EXPECT_THAT(std::string(ParsePodExecArgs({"--hostname"}).status().message()),
              HasSubstr("--hostname needs a value"));
  EXPECT_THAT(std::string(ParsePodExecArgs({"--mount", "yes", "/a", "/b"}).status().message()),
              HasSubstr("--mount needs three values: ro|rw HOST_PATH CONTAINER_PATH"));
  EXPECT_THAT(std::string(ParsePodExecArgs({"--color"}).status().message()),
              HasSubstr("unknown argument --color"));
  const std::string missing(ParsePodExecArgs({"--binary", "kcm", "--"}).status().message());
  EXPECT_THAT(missing, HasSubstr("--hostname"));
  EXPECT_THAT(missing, HasSubstr("--binary (an absolute path)"));
  EXPECT_THAT(missing, HasSubstr("--scratch (an absolute path)"));
  EXPECT_THAT(missing, HasSubstr("the argv after --"));
  EXPECT_THAT(std::string(ParsePodExecArgs({"--hostname", "n", "--binary", "/b", "--scratch", "/s",
                                            "--mount", "ro", "rel", "/c", "--", "x"})
                              .status()
                              .message()),
              HasSubstr("absolute paths in --mount rel /c"));
}

TEST(PodExecTest, BinaryIsWhereTheImageKeepsIt) {
  EXPECT_EQ(ContainerBinaryPath("kube-controller-manager"),
            "/usr/local/bin/kube-controller-manager");
  EXPECT_EQ(ContainerBinaryPath("/bin/aws-cloud-controller-manager"),
            "/bin/aws-cloud-controller-manager");
  EXPECT_EQ(ContainerBinaryPath("bin/x"), "/bin/x");
}

}  // namespace
}  // namespace handoff::sandbox
