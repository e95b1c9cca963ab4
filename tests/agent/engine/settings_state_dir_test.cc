// The state dir rule: never where the kubelet reads, compared lexically and after symlinks.
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <string>

#include "agent/engine/settings.h"
#include "common/fs/file_system.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/memory_file_system.h"

namespace handoff {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

NodePaths WithStateDir(const std::string& state_dir) {
  NodePaths paths;
  paths.state_dir = state_dir;
  return paths;
}

TEST(CheckStateDirTest, TheDefaultsAndAnyDirectoryOfItsOwnAreFine) {
  EXPECT_TRUE(CheckStateDir(NodePaths(), "s.yaml").ok());
  EXPECT_TRUE(CheckStateDir(WithStateDir("/srv/handoff"), "s.yaml").ok());
  // Beside the manifest dir, or above it, is not inside it.
  EXPECT_TRUE(CheckStateDir(WithStateDir("/etc/kubernetes/manifests-handoff"), "s.yaml").ok());
  EXPECT_TRUE(CheckStateDir(WithStateDir("/etc/kubernetes"), "s.yaml").ok());
  // Without a managed flags file (RKE2) there is no kubelet directory to keep out of.
  NodePaths rke2 = WithStateDir("/var/lib/kubelet/handoff");
  rke2.kubelet_flags_file = "";
  EXPECT_TRUE(CheckStateDir(rke2, "s.yaml").ok());
}

TEST(CheckStateDirTest, TheManifestDirAndBelowAreRefusedNamingTheFileAndField) {
  for (const char* state_dir :
       {"/etc/kubernetes/manifests", "/etc/kubernetes/manifests/", "/etc/kubernetes/manifests/x",
        "/etc/kubernetes/./manifests/../manifests/handoff", "//etc//kubernetes//manifests"}) {
    SCOPED_TRACE(state_dir);
    absl::Status status = CheckStateDir(WithStateDir(state_dir), "/etc/handoff/settings.yaml");
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(status.message()),
                AllOf(HasSubstr("/etc/handoff/settings.yaml: paths.stateDir: "),
                      HasSubstr("/etc/kubernetes/manifests"),
                      HasSubstr("where the kubelet loads every file")));
  }
  EXPECT_EQ(CheckStateDir(WithStateDir("/etc/kubernetes/manifests"), "s.yaml").message(),
            "s.yaml: paths.stateDir: /etc/kubernetes/manifests is /etc/kubernetes/manifests, the "
            "static pod manifest directory (paths.manifestDir), where the kubelet loads every "
            "file: handoff's lock, journal and backups would be taken for broken manifests; give "
            "handoff a directory of its own, e.g. /var/lib/handoff");
}

TEST(CheckStateDirTest, TheKubeletsOwnDirectoryIsRefused) {
  absl::Status status = CheckStateDir(WithStateDir("/var/lib/kubelet/handoff"), "s.yaml");
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(status.message()),
              AllOf(HasSubstr("is inside /var/lib/kubelet"), HasSubstr("paths.kubeletFlagsFile")));
}

TEST(CheckStateDirTest, ARelativeStateDirIsRefused) {
  EXPECT_THAT(std::string(CheckStateDir(WithStateDir("state"), "s.yaml").message()),
              HasSubstr("s.yaml: paths.stateDir: state is not an absolute path"));
}

TEST(CheckStateDirTest, AManifestDirOfTheSettingsIsTheOneCompared) {
  NodePaths paths = WithStateDir("/var/lib/rancher/rke2/agent/pod-manifests/state");
  paths.manifest_dir = "/var/lib/rancher/rke2/agent/pod-manifests";
  EXPECT_FALSE(CheckStateDir(paths, "s.yaml").ok());
  paths.state_dir = "/etc/kubernetes/manifests";
  EXPECT_TRUE(CheckStateDir(paths, "s.yaml").ok());
}

TEST(CheckStateDirTest, ASymlinkIntoTheManifestDirIsRefusedOnTheRealFileSystem) {
  char pattern[] = "/tmp/handoff-state-dir-XXXXXX";
  ASSERT_NE(::mkdtemp(pattern), nullptr);
  const std::string root = pattern;
  std::filesystem::create_directories(root + "/etc/kubernetes/manifests");
  std::filesystem::create_directories(root + "/srv");
  // Absolute, as an operator would write it: inside the root it names the root's manifest dir.
  std::filesystem::create_directory_symlink("/etc/kubernetes/manifests", root + "/srv/handoff");
  std::unique_ptr<FileSystem> fs = NewPosixFileSystem(root);
  const NodePaths paths = WithStateDir("/srv/handoff/state");
  EXPECT_TRUE(CheckStateDir(paths, "s.yaml").ok()) << "lexically it is elsewhere";
  absl::Status status = CheckStateDir(paths, "s.yaml", fs.get());
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(status.message()),
              HasSubstr("s.yaml: paths.stateDir: /srv/handoff/state resolves to "
                        "/etc/kubernetes/manifests/state, inside /etc/kubernetes/manifests"));
  // A manifest dir that is itself a link is followed too.
  std::filesystem::remove_all(root + "/etc/kubernetes/manifests");
  std::filesystem::create_directories(root + "/data/manifests");
  std::filesystem::create_directory_symlink("../../data/manifests",
                                            root + "/etc/kubernetes/manifests");
  EXPECT_THAT(std::string(CheckStateDir(WithStateDir("/data/manifests/handoff"), "s.yaml",
                                        fs.get())
                              .message()),
              HasSubstr("inside /etc/kubernetes/manifests (/data/manifests)"));
  // Without symlinks (a MemoryFileSystem) only the lexical rule applies.
  MemoryFileSystem memory;
  EXPECT_TRUE(CheckStateDir(WithStateDir("/srv/handoff/state"), "s.yaml", &memory).ok());
  std::filesystem::remove_all(root);
}

}  // namespace
}  // namespace handoff
