#include "agent/manifest/kubelet_flags.h"

#include <fstream>
#include <optional>
#include <sstream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace handoff {
namespace {

using ::testing::ElementsAre;
using ::testing::Optional;

std::string ReadTestData(const std::string& relative) {
  std::ifstream in(std::string(HANDOFF_TESTDATA_DIR) + "/" + relative, std::ios::binary);
  EXPECT_TRUE(in) << "cannot open testdata " << relative;
  std::ostringstream content;
  content << in.rdbuf();
  return content.str();
}

constexpr char kSource[] = "/var/lib/kubelet/kubeadm-flags.env";

TEST(KubeletFlagsFileTest, ParsesKubeadmFile) {
  const std::string text = ReadTestData("nodes/kubeadm/var/lib/kubelet/kubeadm-flags.env");
  absl::StatusOr<KubeletFlagsFile> file = KubeletFlagsFile::Parse(text, kSource);
  ASSERT_TRUE(file.ok()) << file.status();
  EXPECT_THAT(file->flags().items(),
              ElementsAre("--cloud-config=/etc/kubernetes/cloud.conf", "--cloud-provider=aws",
                          "--container-runtime-endpoint=unix:///var/run/containerd/containerd.sock",
                          "--pod-infra-container-image=registry.k8s.io/pause:3.9"));
  EXPECT_THAT(file->flags().Get("cloud-provider"), Optional(std::string("aws")));
  // Unchanged, it emits the same bytes.
  EXPECT_EQ(file->Emit(), text);
}

TEST(KubeletFlagsFileTest, EditsKeepEveryOtherLine) {
  const std::string text =
      "# Written by kubeadm\n"
      "OTHER=1\n"
      "KUBELET_KUBEADM_ARGS=\"--cloud-provider=aws --node-ip=10.0.1.10\"\n"
      "\n"
      "# trailing comment\n";
  absl::StatusOr<KubeletFlagsFile> file = KubeletFlagsFile::Parse(text, kSource);
  ASSERT_TRUE(file.ok()) << file.status();
  file->flags().Set("cloud-provider", "external");
  file->flags().Remove("node-ip");
  file->flags().Set("v", "2");
  EXPECT_EQ(file->Emit(),
            "# Written by kubeadm\n"
            "OTHER=1\n"
            "KUBELET_KUBEADM_ARGS=\"--cloud-provider=external --v=2\"\n"
            "\n"
            "# trailing comment\n");
}

TEST(KubeletFlagsFileTest, ExtraWhiteSpaceInsideTheValueIsNotAFlag) {
  absl::StatusOr<KubeletFlagsFile> file =
      KubeletFlagsFile::Parse("KUBELET_KUBEADM_ARGS=\"  --a=1 \t --b=2  \"\n", kSource);
  ASSERT_TRUE(file.ok()) << file.status();
  EXPECT_THAT(file->flags().items(), ElementsAre("--a=1", "--b=2"));
  EXPECT_EQ(file->Emit(), "KUBELET_KUBEADM_ARGS=\"--a=1 --b=2\"\n");
}

TEST(KubeletFlagsFileTest, EmptyValue) {
  absl::StatusOr<KubeletFlagsFile> file =
      KubeletFlagsFile::Parse("KUBELET_KUBEADM_ARGS=\"\"\n", kSource);
  ASSERT_TRUE(file.ok()) << file.status();
  EXPECT_TRUE(file->flags().items().empty());
  file->flags().Set("cloud-provider", "external");
  EXPECT_EQ(file->Emit(), "KUBELET_KUBEADM_ARGS=\"--cloud-provider=external\"\n");
}

TEST(KubeletFlagsFileTest, CommentedOutLineIsNotTheArgsLine) {
  absl::StatusOr<KubeletFlagsFile> file = KubeletFlagsFile::Parse(
      "#KUBELET_KUBEADM_ARGS=\"--old\"\nKUBELET_KUBEADM_ARGS=\"--new=1\"\n", kSource);
  ASSERT_TRUE(file.ok()) << file.status();
  EXPECT_THAT(file->flags().items(), ElementsAre("--new=1"));
  EXPECT_EQ(file->Emit(), "#KUBELET_KUBEADM_ARGS=\"--old\"\nKUBELET_KUBEADM_ARGS=\"--new=1\"\n");
}

TEST(KubeletFlagsFileTest, MissingLineIsAnError) {
  absl::Status status = KubeletFlagsFile::Parse("OTHER=1\n", kSource).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message(),
            "/var/lib/kubelet/kubeadm-flags.env: no KUBELET_KUBEADM_ARGS=\"...\" line; is this "
            "kubeadm's flags file?");
  EXPECT_EQ(KubeletFlagsFile::Parse("", kSource).status().code(),
            absl::StatusCode::kInvalidArgument);
  // A variable whose name only starts the same is another variable.
  EXPECT_FALSE(KubeletFlagsFile::Parse("KUBELET_KUBEADM_ARGS_X=\"--a=1\"\n", kSource).ok());
}

TEST(KubeletFlagsFileTest, DuplicateLineIsAnError) {
  absl::Status status =
      KubeletFlagsFile::Parse(
          "KUBELET_KUBEADM_ARGS=\"--a=1\"\n# note\nKUBELET_KUBEADM_ARGS=\"--b=2\"\n", kSource)
          .status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message(),
            "/var/lib/kubelet/kubeadm-flags.env:3: KUBELET_KUBEADM_ARGS is set again (first on "
            "line 1); keep one line");
}

TEST(KubeletFlagsFileTest, SingleQuotedValueIsAnError) {
  absl::Status status =
      KubeletFlagsFile::Parse("# x\nKUBELET_KUBEADM_ARGS='--a=1'\n", kSource).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message(),
            "/var/lib/kubelet/kubeadm-flags.env:2: expected KUBELET_KUBEADM_ARGS=\"--flag=value "
            "...\" (one double-quoted value, as kubeadm writes it)");
}

TEST(KubeletFlagsFileTest, UnquotedValueIsAnError) {
  EXPECT_EQ(KubeletFlagsFile::Parse("KUBELET_KUBEADM_ARGS=--a=1\n", kSource).status().message(),
            "/var/lib/kubelet/kubeadm-flags.env:1: expected KUBELET_KUBEADM_ARGS=\"--flag=value "
            "...\" (one double-quoted value, as kubeadm writes it)");
  EXPECT_FALSE(KubeletFlagsFile::Parse("KUBELET_KUBEADM_ARGS=\"\n", kSource).ok());
  EXPECT_FALSE(KubeletFlagsFile::Parse("KUBELET_KUBEADM_ARGS=\"--a=1\" extra\n", kSource).ok());
}

TEST(KubeletFlagsFileTest, QuotesOrBackslashesInsideTheValueAreErrors) {
  for (const char* text :
       {"KUBELET_KUBEADM_ARGS=\"--node-labels='a=b'\"\n", "KUBELET_KUBEADM_ARGS=\"--a=\"b\"\"\n",
        "KUBELET_KUBEADM_ARGS=\"--a=b\\ c\"\n"}) {
    absl::Status status = KubeletFlagsFile::Parse(text, kSource).status();
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << text;
    EXPECT_EQ(status.message(),
              "/var/lib/kubelet/kubeadm-flags.env:1: quotes or backslashes inside the value are "
              "not supported; edit this file by hand")
        << text;
  }
}

TEST(KubeletFlagsFileTest, FileWithoutFinalNewlineGetsOne) {
  absl::StatusOr<KubeletFlagsFile> file =
      KubeletFlagsFile::Parse("KUBELET_KUBEADM_ARGS=\"--a=1\"", kSource);
  ASSERT_TRUE(file.ok()) << file.status();
  EXPECT_EQ(file->Emit(), "KUBELET_KUBEADM_ARGS=\"--a=1\"\n");
}

}  // namespace
}  // namespace handoff
