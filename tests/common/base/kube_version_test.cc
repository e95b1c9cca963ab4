#include "common/base/kube_version.h"

#include <string>

#include "gtest/gtest.h"

namespace handoff {
namespace {

KubeVersion V(int major, int minor, int patch = -1) { return KubeVersion{major, minor, patch}; }

TEST(KubeVersionTest, ParsesFullAndShortForms) {
  struct Case {
    const char* text;
    KubeVersion want;
  };
  for (const Case& c : {Case{"v1.27.3", V(1, 27, 3)}, Case{"1.27.3", V(1, 27, 3)},
                        Case{"v1.27", V(1, 27)}, Case{"V1.28.0", V(1, 28, 0)},
                        Case{"v1.26.5-rke2r1", V(1, 26, 5)}, Case{"v1.26.5-eks-1-26", V(1, 26, 5)},
                        Case{"v1.27.2+k3s1", V(1, 27, 2)}, Case{"v1.29.0-rc.1", V(1, 29, 0)}}) {
    absl::StatusOr<KubeVersion> version = KubeVersion::Parse(c.text);
    ASSERT_TRUE(version.ok()) << c.text << ": " << version.status();
    EXPECT_EQ(*version, c.want) << c.text;
  }
}

TEST(KubeVersionTest, RejectsWhatIsNotAVersion) {
  for (const char* text : {"", "v", "v1", "1", "v1.", "v1.x", "v1.27.", "v1.27.3.4", "v1.-2",
                           "v1.27.-1", " v1.27", "latest", "v1.27.3 ", "-v1.27"}) {
    absl::StatusOr<KubeVersion> version = KubeVersion::Parse(text);
    EXPECT_FALSE(version.ok()) << "'" << text << "' parsed as " << version->ToString();
  }
  absl::Status status = KubeVersion::Parse("latest").status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message(), "'latest' is not a Kubernetes version; write it as v1.27.3 or v1.27");
}

TEST(KubeVersionTest, ToStringRoundTrips) {
  EXPECT_EQ(V(1, 27, 3).ToString(), "v1.27.3");
  EXPECT_EQ(V(1, 27).ToString(), "v1.27");
  EXPECT_EQ(V(1, 27, 0).ToString(), "v1.27.0");
  EXPECT_EQ(KubeVersion::Parse(V(1, 26, 9).ToString()).value(), V(1, 26, 9));
}

TEST(KubeVersionTest, AtLeastComparesMajorAndMinorOnly) {
  const KubeVersion v = V(1, 26, 5);
  EXPECT_TRUE(v.AtLeast(1, 26));
  EXPECT_TRUE(v.AtLeast(1, 25));
  EXPECT_TRUE(v.AtLeast(0, 99));
  EXPECT_FALSE(v.AtLeast(1, 27));
  EXPECT_FALSE(v.AtLeast(2, 0));
  EXPECT_TRUE(V(2, 0).AtLeast(1, 30));
  EXPECT_TRUE(V(1, 26, 0).AtLeast(1, 26));
}

TEST(KubeVersionTest, EqualityIncludesPatch) {
  EXPECT_EQ(V(1, 27, 3), V(1, 27, 3));
  EXPECT_FALSE(V(1, 27, 3) == V(1, 27));
  EXPECT_FALSE(V(1, 27, 3) == V(1, 28, 3));
}

TEST(KubeVersionTest, FromImageReadsTheTag) {
  struct Case {
    const char* image;
    KubeVersion want;
  };
  for (const Case& c :
       {Case{"registry.k8s.io/kube-controller-manager:v1.26.5", V(1, 26, 5)},
        Case{"registry:5000/kube-apiserver:v1.26.1", V(1, 26, 1)},
        Case{"kube-apiserver:v1.27.3", V(1, 27, 3)},
        Case{"docker.io/rancher/hardened-kubernetes:v1.26.5-rke2r1", V(1, 26, 5)},
        Case{"602401143452.dkr.ecr.us-west-2.amazonaws.com/eks/kube-proxy:v1.26.5-eks-1-26",
             V(1, 26, 5)},
        Case{"registry.k8s.io/kube-apiserver:v1.26.1@sha256:"
             "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
             V(1, 26, 1)}}) {
    absl::StatusOr<KubeVersion> version = KubeVersion::FromImage(c.image);
    ASSERT_TRUE(version.ok()) << c.image << ": " << version.status();
    EXPECT_EQ(*version, c.want) << c.image;
  }
}

TEST(KubeVersionTest, FromImageWithoutTagIsAnError) {
  absl::Status status = KubeVersion::FromImage("registry:5000/kube-apiserver").status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(
      status.message(),
      "image 'registry:5000/kube-apiserver' has no tag, so its Kubernetes version is unknown");
}

TEST(KubeVersionTest, DigestIsNotAVersion) {
  absl::Status status =
      KubeVersion::FromImage("registry.k8s.io/kube-apiserver@sha256:0123456789abcdef").status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message(),
            "image 'registry.k8s.io/kube-apiserver@sha256:0123456789abcdef' has no tag, so its "
            "Kubernetes version is unknown");
}

TEST(KubeVersionTest, FromImageWithNonVersionTag) {
  absl::Status status = KubeVersion::FromImage("registry.k8s.io/kube-apiserver:latest").status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message(),
            "image 'registry.k8s.io/kube-apiserver:latest' has tag 'latest', which does not name a "
            "Kubernetes version");
  EXPECT_FALSE(KubeVersion::FromImage("kube-apiserver:v1").ok());
}

TEST(ImageRefTest, SplitsRepositoryAndTag) {
  ImageRef ref = ImageRef::Parse("registry.k8s.io/kube-apiserver:v1.26.9");
  EXPECT_EQ(ref.repository, "registry.k8s.io/kube-apiserver");
  EXPECT_EQ(ref.tag, "v1.26.9");

  ref = ImageRef::Parse("registry:5000/kube-apiserver:v1.26.1");
  EXPECT_EQ(ref.repository, "registry:5000/kube-apiserver");
  EXPECT_EQ(ref.tag, "v1.26.1");

  ref = ImageRef::Parse("registry:5000/kube-apiserver");
  EXPECT_EQ(ref.repository, "registry:5000/kube-apiserver");
  EXPECT_EQ(ref.tag, "");

  ref = ImageRef::Parse("busybox");
  EXPECT_EQ(ref.repository, "busybox");
  EXPECT_EQ(ref.tag, "");
}

TEST(ImageRefTest, DigestStaysInRepository) {
  ImageRef ref = ImageRef::Parse("registry.k8s.io/kube-apiserver@sha256:abc123");
  EXPECT_EQ(ref.repository, "registry.k8s.io/kube-apiserver@sha256:abc123");
  EXPECT_EQ(ref.tag, "");

  ref = ImageRef::Parse("registry:5000/kube-apiserver:v1.26.1@sha256:abc123");
  EXPECT_EQ(ref.repository, "registry:5000/kube-apiserver@sha256:abc123");
  EXPECT_EQ(ref.tag, "v1.26.1");
}

TEST(ImageRefTest, WithTagReplacesTheTag) {
  EXPECT_EQ(ImageRef::Parse("registry.k8s.io/kube-apiserver:v1.26.9").WithTag("v1.27.3"),
            "registry.k8s.io/kube-apiserver:v1.27.3");
  EXPECT_EQ(ImageRef::Parse("registry:5000/kube-apiserver:v1.26.1").WithTag("v1.27.0"),
            "registry:5000/kube-apiserver:v1.27.0");
  EXPECT_EQ(ImageRef::Parse("registry:5000/kube-apiserver").WithTag("v1.27.0"),
            "registry:5000/kube-apiserver:v1.27.0");
}

TEST(ImageRefTest, WithTagDropsTheDigestThatWouldPinTheOldImage) {
  EXPECT_EQ(ImageRef::Parse("registry.k8s.io/kube-apiserver@sha256:abc123").WithTag("v1.27.3"),
            "registry.k8s.io/kube-apiserver:v1.27.3");
  EXPECT_EQ(
      ImageRef::Parse("registry:5000/kube-apiserver:v1.26.1@sha256:abc123").WithTag("v1.27.3"),
      "registry:5000/kube-apiserver:v1.27.3");
}

}  // namespace
}  // namespace handoff
