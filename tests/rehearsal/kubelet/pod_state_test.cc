#include "rehearsal/kubelet/pod_state.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/memory_file_system.h"

namespace handoff::sandbox {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;

TEST(PodStateTest, RoundTripsThroughTheFile) {
  MemoryFileSystem fs;
  PodProcesses pods;
  pods["kube-controller-manager"] =
      PodProcess{123, 98765, "00ff00ff00ff00ff", "kube-controller-manager"};
  pods["cloud-controller-manager"] = PodProcess{124, 98766, "aa", "cloud-controller-manager"};
  ASSERT_TRUE(SavePodState(fs, pods).ok());
  absl::StatusOr<PodProcesses> loaded = LoadPodState(fs);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(*loaded, pods);
  // Written the audited way: no temp file left beside it.
  absl::StatusOr<std::vector<std::string>> names = fs.ListDirectory("/var/lib/kubelet");
  ASSERT_TRUE(names.ok());
  EXPECT_THAT(*names, ::testing::ElementsAre("sandbox-pods.json"));
}

TEST(PodStateTest, NoFileIsNoPods) {
  MemoryFileSystem fs;
  absl::StatusOr<PodProcesses> loaded = LoadPodState(fs);
  ASSERT_TRUE(loaded.ok());
  EXPECT_THAT(*loaded, IsEmpty());
}

TEST(PodStateTest, BadContentIsNamed) {
  EXPECT_THAT(std::string(ParsePodState("{", "f.json").status().message()),
              HasSubstr("f.json: not JSON"));
  EXPECT_THAT(std::string(ParsePodState("[]", "f.json").status().message()),
              HasSubstr("f.json: expected {\"pods\": {...}}"));
  EXPECT_THAT(
      std::string(ParsePodState(R"({"pods": {"kcm": {"pid": "1"}}})", "f.json").status().message()),
      HasSubstr("f.json: pods.kcm: needs pid, startTime"));
  EXPECT_THAT(
      std::string(
          ParsePodState(R"({"pods": {"kcm": {"pid": 0, "startTime": 1, "manifestHash": "h"}}})",
                        "f.json")
              .status()
              .message()),
      HasSubstr("pods.kcm.pid: must be positive"));
}

}  // namespace
}  // namespace handoff::sandbox
