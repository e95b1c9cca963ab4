// The simulated kubelet running the real kube-controller-manager 1.26 (tests/real/components.sh
// builds it) from a manifest, the way a rehearsal does: in the pod's own root, where a static Go
// binary needs nothing else. Skipped with the reason when the binary is absent; failing then
// when HANDOFF_REQUIRE_REAL=1.
#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "rehearsal/real/components.h"
#include "tests/rehearsal/kubelet/sandbox_node_fixture.h"

namespace handoff::sandbox::testing {
namespace {

using ::testing::HasSubstr;

// Where kube-controller-manager 1.26 was built while components.sh is being finished.
constexpr char kInterimBinDir[] = "/tmp/kb/bin";

class RealBinariesTest : public SandboxNodeTest {
 protected:
  void SetUp() override {
    SandboxNodeTest::SetUp();
    const bool required = std::getenv("HANDOFF_REQUIRE_REAL") != nullptr &&
                          std::string(std::getenv("HANDOFF_REQUIRE_REAL")) == "1";
    absl::StatusOr<real::Components> components = real::FindComponents(
        real::ProcessEnvironment(), {real::kKubeControllerManager});
    if (components.ok()) {
      bin_dir_ = components->dir + "/bin";
      version_ = components->VersionOf(real::kKubeControllerManager);
    } else if (::access(StrCat(kInterimBinDir, "/kube-controller-manager").c_str(), X_OK) == 0) {
      bin_dir_ = kInterimBinDir;
    } else if (required) {
      GTEST_FAIL() << "HANDOFF_REQUIRE_REAL=1 and " << components.status().message();
    } else {
      GTEST_SKIP() << components.status().message();
    }
    if (::geteuid() != 0) {
      if (required) GTEST_FAIL() << "real pods need root (mount and UTS namespaces)";
      GTEST_SKIP() << "real pods need root (mount and UTS namespaces)";
    }
    extra_flags_ = {"--real-bin-dir", bin_dir_};
  }

  std::string bin_dir_;
  std::string version_;  // from versions.txt; "" for the interim build, which has none
};

TEST_F(RealBinariesTest, KubeletStartsTheRealKubeControllerManagerFromAManifest) {
  StartKubelet();
  WriteManifestAtomically(
      "kube-controller-manager.yaml",
      PodManifest("kube-controller-manager", {"kube-controller-manager", "--version"}, {},
                  "registry.k8s.io/kube-controller-manager:v1.26.13"));
  std::optional<RunRecord> exited;
  ASSERT_TRUE(WaitFor([&] {
    for (const RunRecord& record : Records()) {
      if (record.event == "process-exit" && record.component == "kube-controller-manager") {
        exited = record;
        return true;
      }
    }
    return false;
  })) << KubeletLog();
  EXPECT_EQ(exited->status, "exit 0") << KubeletLog();
  const std::string log = ReadText(root_ + "/var/log/pods/kube-controller-manager.log");
  EXPECT_THAT(log, HasSubstr(version_.empty() ? "Kubernetes v" : StrCat("Kubernetes ", version_)))
      << log;
  EXPECT_THAT(KubeletLog(), HasSubstr(StrCat("started process ", exited->pid, " (", bin_dir_,
                                             "/kube-controller-manager)")));
}

}  // namespace
}  // namespace handoff::sandbox::testing
