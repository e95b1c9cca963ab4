// Where `handoffctl sandbox` finds the programs it starts, on real directories laid out as a
// build tree and as the Debian package installs them (access(X_OK) decides, as in the sandbox).
#include "rehearsal/sandbox/sandbox_binaries.h"

#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace handoff::sandbox {
namespace {

using ::testing::HasSubstr;

bool Executable(const std::string& path) { return access(path.c_str(), X_OK) == 0; }

class SandboxBinariesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = std::filesystem::path(::testing::TempDir()) / "sandbox-binaries-XXXXXX";
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    root_ = pattern;
  }
  void TearDown() override { std::filesystem::remove_all(root_); }

  // An executable file (the lookup runs nothing) at root_/relative.
  void Program(const std::string& relative, mode_t mode = 0755) {
    const std::filesystem::path path = std::filesystem::path(root_) / relative;
    std::filesystem::create_directories(path.parent_path());
    std::ofstream(path) << "#!/bin/sh\n";
    ASSERT_EQ(chmod(path.c_str(), mode), 0);
  }

  // handoffctl and the daemons in usr/bin, the helpers in usr/lib/handoff: the package's layout.
  void InstallPackageLayout() {
    for (const char* name : {"handoffctl", "handoff-coordinator", "handoff-agent"}) {
      Program(std::string("usr/bin/") + name);
    }
    for (const char* name :
         {"handoff-standin", "handoff-sandbox-kubelet", "handoff-sandbox-node"}) {
      Program(std::string("usr/lib/handoff/") + name);
    }
  }

  std::string root_;
};

TEST_F(SandboxBinariesTest, ABuildTreeHasEveryProgramBesideHandoffctl) {
  for (const char* name : {"handoffctl", "handoff-coordinator", "handoff-agent", "handoff-standin",
                           "handoff-sandbox-kubelet", "handoff-sandbox-node"}) {
    Program(std::string("build/bin/") + name);
  }
  absl::StatusOr<SandboxBinaries> found =
      LocateSandboxBinaries("", root_ + "/build/bin", Executable);
  ASSERT_TRUE(found.ok()) << found.status();
  EXPECT_EQ(found->daemons_dir, root_ + "/build/bin");
  EXPECT_EQ(found->helpers_dir, root_ + "/build/bin");
}

TEST_F(SandboxBinariesTest, ThePackageHasTheDaemonsInUsrBinAndTheHelpersInUsrLibHandoff) {
  InstallPackageLayout();
  absl::StatusOr<SandboxBinaries> found = LocateSandboxBinaries("", root_ + "/usr/bin", Executable);
  ASSERT_TRUE(found.ok()) << found.status();
  EXPECT_EQ(found->daemons_dir, root_ + "/usr/bin");
  EXPECT_EQ(found->helpers_dir, root_ + "/usr/lib/handoff");
}

TEST_F(SandboxBinariesTest, AMissingHelperNamesBothPlacesLookedIn) {
  InstallPackageLayout();
  std::filesystem::remove(root_ + "/usr/lib/handoff/handoff-sandbox-kubelet");
  absl::StatusOr<SandboxBinaries> found = LocateSandboxBinaries("", root_ + "/usr/bin", Executable);
  ASSERT_FALSE(found.ok());
  EXPECT_EQ(found.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(found.status().message(),
              HasSubstr("handoff-sandbox-kubelet is missing: looked in " + root_ + "/usr/bin and " +
                        root_ + "/usr/lib/handoff"));
  EXPECT_THAT(found.status().message(), HasSubstr("install the handoff package"));
}

TEST_F(SandboxBinariesTest, HelpersSplitBetweenTheTwoPlacesAreRefused) {
  InstallPackageLayout();
  std::filesystem::rename(root_ + "/usr/lib/handoff/handoff-standin",
                          root_ + "/usr/bin/handoff-standin");
  absl::StatusOr<SandboxBinaries> found = LocateSandboxBinaries("", root_ + "/usr/bin", Executable);
  ASSERT_FALSE(found.ok());
  EXPECT_THAT(found.status().message(),
              HasSubstr("handoff-standin, handoff-sandbox-kubelet and handoff-sandbox-node are not "
                        "all in " +
                        root_ + "/usr/bin or " + root_ + "/usr/lib/handoff"));
}

TEST_F(SandboxBinariesTest, AFileThatIsNotExecutableDoesNotCount) {
  InstallPackageLayout();
  Program("usr/lib/handoff/handoff-standin", 0644);
  absl::StatusOr<SandboxBinaries> found = LocateSandboxBinaries("", root_ + "/usr/bin", Executable);
  ASSERT_FALSE(found.ok());
  EXPECT_THAT(found.status().message(), HasSubstr("handoff-standin is missing"));
}

TEST_F(SandboxBinariesTest, AMissingDaemonIsNamedWithItsPath) {
  InstallPackageLayout();
  std::filesystem::remove(root_ + "/usr/bin/handoff-agent");
  absl::StatusOr<SandboxBinaries> found = LocateSandboxBinaries("", root_ + "/usr/bin", Executable);
  ASSERT_FALSE(found.ok());
  EXPECT_THAT(found.status().message(), HasSubstr(root_ + "/usr/bin/handoff-agent is missing"));
}

TEST_F(SandboxBinariesTest, BinDirHoldsEveryProgramAndNothingElseIsLookedAt) {
  InstallPackageLayout();
  for (const char* name : {"handoff-coordinator", "handoff-agent", "handoff-standin",
                           "handoff-sandbox-kubelet", "handoff-sandbox-node"}) {
    Program(std::string("opt/handoff/") + name);
  }
  absl::StatusOr<SandboxBinaries> found =
      LocateSandboxBinaries(root_ + "/opt/handoff", root_ + "/usr/bin", Executable);
  ASSERT_TRUE(found.ok()) << found.status();
  EXPECT_EQ(found->daemons_dir, root_ + "/opt/handoff");
  EXPECT_EQ(found->helpers_dir, root_ + "/opt/handoff");

  // A --bin-dir without the helpers is not completed from ../lib/handoff.
  std::filesystem::remove(root_ + "/opt/handoff/handoff-standin");
  found = LocateSandboxBinaries(root_ + "/opt/handoff", root_ + "/usr/bin", Executable);
  ASSERT_FALSE(found.ok());
  EXPECT_THAT(found.status().message(),
              HasSubstr("handoff-standin is missing: looked in " + root_ + "/opt/handoff;"));
  EXPECT_THAT(found.status().message(), HasSubstr("pass another --bin-dir"));
}

TEST(SandboxBinariesNamesTest, OnlyTheStandinAndTheSimulatedKubeletAreHelpers) {
  EXPECT_TRUE(IsSandboxHelper("handoff-standin"));
  EXPECT_TRUE(IsSandboxHelper("handoff-sandbox-kubelet"));
  EXPECT_TRUE(IsSandboxHelper("handoff-sandbox-node"));
  EXPECT_FALSE(IsSandboxHelper("handoff-agent"));
  EXPECT_FALSE(IsSandboxHelper("handoff-coordinator"));
  EXPECT_EQ(SandboxDaemonsDir("", "/usr/bin"), "/usr/bin");
  EXPECT_EQ(SandboxDaemonsDir("/opt/handoff", "/usr/bin"), "/opt/handoff");
}

}  // namespace
}  // namespace handoff::sandbox
