#include "rehearsal/kubelet/pod_binaries.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace handoff::sandbox {
namespace {

using ::testing::HasSubstr;

constexpr char kStandin[] = "/opt/handoff/bin/handoff-standin";
constexpr char kDir[] = "/cache/components/bin";
constexpr char kKcm[] = "/cache/components/bin/kube-controller-manager";
constexpr char kCcm[] = "/cache/components/bin/aws-cloud-controller-manager";

struct Row {
  const char* image;
  const char* path;  // what runs with --real-bin-dir kDir
  bool real;
  bool note;
};

TEST(PodBinariesTest, ImagesMapToTheirBinaries) {
  const Row rows[] = {
      {"registry.k8s.io/kube-controller-manager:v1.26.13", kKcm, true, false},
      {"registry.k8s.io/kube-controller-manager:v1.26.9", kKcm, true, false},
      {"k8s.gcr.io/kube-controller-manager:v1.26.0", kKcm, true, false},
      {"kube-controller-manager:v1.26.1", kKcm, true, false},
      {"rancher/hardened-kubernetes:v1.26.9-rke2r1", kStandin, false, false},
      {"registry.k8s.io/kube-controller-manager:v1.27.6", kKcm, true, true},
      {"registry.k8s.io/kube-controller-manager:v1.25.4", kStandin, false, false},
      {"registry.k8s.io/kube-controller-manager:v1.28.0", kStandin, false, false},
      {"registry.k8s.io/kube-controller-manager@sha256:0123", kStandin, false, false},
      {"registry.k8s.io/provider-aws/cloud-controller-manager:v1.27.1", kCcm, true, false},
      {"registry.k8s.io/provider-aws/cloud-controller-manager:v1.27.2", kCcm, true, false},
      {"registry.k8s.io/provider-aws/cloud-controller-manager:v1.26.1", kStandin, false, false},
      {"registry.k8s.io/provider-gcp/cloud-controller-manager:v1.27.1", kStandin, false, false},
      {"registry.k8s.io/kube-apiserver:v1.26.13", kStandin, false, false},
      {"registry.k8s.io/kube-scheduler:v1.26.13", kStandin, false, false},
      {"registry.k8s.io/kube-apiserver:v1.27.6", kStandin, false, false},
      {"busybox", kStandin, false, false},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.image);
    const PodBinary binary = PodBinaryFor(row.image, kStandin, kDir);
    EXPECT_EQ(binary.path, row.path);
    EXPECT_EQ(binary.real, row.real);
    EXPECT_EQ(!binary.note.empty(), row.note) << binary.note;
    // Without --real-bin-dir: the stand-in, whatever the image.
    const PodBinary standin = PodBinaryFor(row.image, kStandin, "");
    EXPECT_EQ(standin.path, kStandin);
    EXPECT_FALSE(standin.real);
    EXPECT_EQ(standin.note, "");
  }
}

TEST(PodBinariesTest, TheNextReleasesControllerManagerSaysWhatRunsInstead) {
  const PodBinary binary =
      PodBinaryFor("registry.k8s.io/kube-controller-manager:v1.27.6", kStandin, "/c/bin/");
  EXPECT_EQ(binary.path, "/c/bin/kube-controller-manager");
  EXPECT_THAT(binary.note, HasSubstr("registry.k8s.io/kube-controller-manager:v1.27.6 runs "
                                     "/c/bin/kube-controller-manager (1.26)"));
  EXPECT_THAT(binary.note, HasSubstr("no 1.27 kube-controller-manager is built"));
}

}  // namespace
}  // namespace handoff::sandbox
