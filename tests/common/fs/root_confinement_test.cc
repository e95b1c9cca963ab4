// Every path of a PosixFileSystem with a root resolves inside it as in a chroot: symlinks
// (relative and absolute), "..", and the last component of a write. Each case runs with openat2
// (RESOLVE_IN_ROOT), where the kernel has it, and with the walk that stands in for it.
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>

#include "common/fs/atomic_file.h"
#include "common/fs/file_system.h"
#include "common/fs/root_resolver.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace handoff {
namespace {

namespace stdfs = std::filesystem;
using ::testing::HasSubstr;

// Every file under `dir` with its content (a symlink as "-> target"), to prove nothing changed.
std::map<std::string, std::string> Tree(const stdfs::path& dir) {
  std::map<std::string, std::string> files;
  for (const auto& entry : stdfs::recursive_directory_iterator(dir)) {
    if (entry.is_symlink()) {
      files[entry.path().string()] = "-> " + stdfs::read_symlink(entry.path()).string();
    } else if (entry.is_regular_file()) {
      std::ifstream in(entry.path(), std::ios::binary);
      std::ostringstream content;
      content << in.rdbuf();
      files[entry.path().string()] = content.str();
    } else {
      files[entry.path().string()] = "(directory)";
    }
  }
  return files;
}

enum class Method { kOpenat2, kWalk };

class RootConfinementTest : public ::testing::TestWithParam<Method> {
 protected:
  void SetUp() override {
    if (GetParam() == Method::kOpenat2 && !RootResolver::KernelHasOpenat2()) {
      GTEST_SKIP() << "the kernel has no openat2(2); the walk is tested on its own";
    }
    char pattern[] = "/tmp/handoff-confine-XXXXXX";
    ASSERT_NE(::mkdtemp(pattern), nullptr);
    base_ = pattern;
    root_ = base_ + "/root";
    outside_ = base_ + "/outside";
    stdfs::create_directories(root_ + "/etc/kubernetes");
    stdfs::create_directories(outside_ + "/manifests");
    Write(outside_ + "/manifests/kube-controller-manager.yaml", "outside");
    fs_ = NewPosixFileSystemWithResolution(
        root_, GetParam() == Method::kWalk ? RootResolution::kWalk : RootResolution::kAuto);
  }
  void TearDown() override {
    if (!base_.empty()) stdfs::remove_all(base_);
  }

  static void Write(const std::string& real_path, const std::string& content) {
    stdfs::create_directories(stdfs::path(real_path).parent_path());
    std::ofstream(real_path, std::ios::binary) << content;
  }

  std::string base_;
  std::string root_;
  std::string outside_;
  std::unique_ptr<FileSystem> fs_;
};

TEST_P(RootConfinementTest, AbsoluteSymlinkToADirectoryOutsideResolvesInsideTheRoot) {
  // The host path of a directory outside the root, as an absolute link target: in a chroot it
  // names <root><target>, which does not exist.
  stdfs::create_directory_symlink(outside_ + "/manifests", root_ + "/etc/kubernetes/manifests");
  const auto before = Tree(outside_);
  const std::string kcm = "/etc/kubernetes/manifests/kube-controller-manager.yaml";

  EXPECT_TRUE(absl::IsNotFound(fs_->ReadFile(kcm).status()));
  EXPECT_TRUE(absl::IsNotFound(fs_->Stat(kcm).status()));
  EXPECT_TRUE(absl::IsNotFound(fs_->ListDirectory("/etc/kubernetes/manifests").status()));
  EXPECT_TRUE(absl::IsNotFound(AtomicReplace(*fs_, kcm, "written")));
  EXPECT_TRUE(absl::IsNotFound(fs_->RemoveFile(kcm)));
  EXPECT_TRUE(absl::IsNotFound(fs_->CreateDirectory("/etc/kubernetes/manifests/sub", 0700)));
  EXPECT_TRUE(absl::IsNotFound(fs_->TryLock("/etc/kubernetes/manifests/lock").status()));
  EXPECT_EQ(Tree(outside_), before);

  // The same target made inside the root is what the link reaches.
  Write(root_ + outside_ + "/manifests/kube-controller-manager.yaml", "inside");
  EXPECT_EQ(fs_->ReadFile(kcm).value_or(""), "inside");
  ASSERT_TRUE(AtomicReplace(*fs_, kcm, "written").ok());
  EXPECT_EQ(fs_->ReadFile(kcm).value_or(""), "written");
  EXPECT_EQ(Tree(outside_), before);
}

TEST_P(RootConfinementTest, RelativeSymlinkClimbingOutStopsAtTheRoot) {
  // Enough ".." to leave any root: they stop at it, as "/.." is "/".
  stdfs::create_directory_symlink("../../../../../../../../outside/manifests",
                                  root_ + "/etc/kubernetes/manifests");
  const auto before = Tree(outside_);
  const std::string kcm = "/etc/kubernetes/manifests/kube-controller-manager.yaml";
  EXPECT_TRUE(absl::IsNotFound(fs_->ReadFile(kcm).status()));
  EXPECT_TRUE(absl::IsNotFound(fs_->WriteFile(kcm, "x", FileInfo{false, 0600, 0, 0})));
  Write(root_ + "/outside/manifests/kube-controller-manager.yaml", "inside");
  EXPECT_EQ(fs_->ReadFile(kcm).value_or(""), "inside");
  EXPECT_EQ(Tree(outside_), before);
}

TEST_P(RootConfinementTest, DotDotChainsStayInside) {
  Write(root_ + "/etc/x", "inside");
  Write(base_ + "/etc/x", "outside");
  EXPECT_EQ(fs_->ReadFile("/../../../../etc/x").value_or(""), "inside");
  EXPECT_EQ(fs_->ReadFile("/etc/kubernetes/../../../etc/x").value_or(""), "inside");
  EXPECT_EQ(fs_->ReadFile("../../etc/x").value_or(""), "inside");
  ASSERT_TRUE(fs_->WriteFile("/../../etc/y", "w", FileInfo{false, 0600, 0, 0}).ok());
  EXPECT_TRUE(stdfs::exists(root_ + "/etc/y"));
  EXPECT_FALSE(stdfs::exists(base_ + "/etc/y"));
}

TEST_P(RootConfinementTest, SymlinkedFileFollowsInsideTheRoot) {
  // A manifest that is a symlink to an absolute path reads the file of that path in the root.
  Write(root_ + "/srv/kcm.yaml", "inside");
  stdfs::create_symlink("/srv/kcm.yaml", root_ + "/etc/kubernetes/kcm.yaml");
  stdfs::create_symlink(outside_ + "/manifests/kube-controller-manager.yaml",
                        root_ + "/etc/kubernetes/escape.yaml");
  EXPECT_EQ(fs_->ReadFile("/etc/kubernetes/kcm.yaml").value_or(""), "inside");
  EXPECT_TRUE(absl::IsNotFound(fs_->ReadFile("/etc/kubernetes/escape.yaml").status()));
  // A symlink at the end of a name is the link itself for unlink and rename, as in a chroot.
  const auto before = Tree(outside_);
  ASSERT_TRUE(fs_->RemoveFile("/etc/kubernetes/escape.yaml").ok());
  EXPECT_FALSE(stdfs::is_symlink(root_ + "/etc/kubernetes/escape.yaml"));
  ASSERT_TRUE(fs_->Rename("/etc/kubernetes/kcm.yaml", "/etc/kubernetes/moved.yaml").ok());
  EXPECT_TRUE(stdfs::is_symlink(root_ + "/etc/kubernetes/moved.yaml"));
  EXPECT_EQ(Tree(outside_), before);
}

TEST_P(RootConfinementTest, DanglingAbsoluteSymlinkCreatesItsTargetInsideTheRoot) {
  stdfs::create_directories(root_ + "/var/lib/handoff");
  stdfs::create_directories(base_ + "/var/lib/handoff");
  stdfs::create_symlink(base_ + "/var/lib/handoff/lock", root_ + "/etc/lock");
  stdfs::create_directories(root_ + base_ + "/var/lib/handoff");
  absl::StatusOr<std::unique_ptr<FileSystem::Lock>> lock = fs_->TryLock("/etc/lock");
  ASSERT_TRUE(lock.ok()) << lock.status();
  EXPECT_TRUE(stdfs::exists(root_ + base_ + "/var/lib/handoff/lock"));
  EXPECT_FALSE(stdfs::exists(base_ + "/var/lib/handoff/lock"));
}

TEST_P(RootConfinementTest, SymlinkLoopsEndInAnError) {
  stdfs::create_symlink("b", root_ + "/etc/a");
  stdfs::create_symlink("a", root_ + "/etc/b");
  absl::Status status = fs_->ReadFile("/etc/a").status();
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition) << status;
  EXPECT_THAT(status.message(), HasSubstr("Too many levels of symbolic links"));
}

TEST_P(RootConfinementTest, FortySymlinksAreFollowedAndTheFortyFirstIsNot) {
  Write(root_ + "/etc/target", "end");
  // link0 -> link1 -> ... -> link<n-1> -> target: n links.
  auto chain = [&](const std::string& prefix, int n) {
    for (int i = 0; i < n; ++i) {
      const std::string next = i + 1 < n ? prefix + std::to_string(i + 1) : "target";
      stdfs::create_symlink(next, root_ + "/etc/" + prefix + std::to_string(i));
    }
  };
  chain("ok", 40);
  chain("long", 41);
  EXPECT_EQ(fs_->ReadFile("/etc/ok0").value_or(""), "end");
  EXPECT_EQ(fs_->ReadFile("/etc/long0").status().code(), absl::StatusCode::kFailedPrecondition);
}

TEST_P(RootConfinementTest, RealPathResolvesInsideTheRoot) {
  stdfs::create_directories(root_ + "/srv/state");
  stdfs::create_directory_symlink("/etc/kubernetes", root_ + "/srv/state/k");
  stdfs::create_directory_symlink("../../etc/kubernetes/manifests", root_ + "/srv/m");
  EXPECT_EQ(fs_->RealPath("/srv/state/k/manifests").value_or(""), "/etc/kubernetes/manifests");
  EXPECT_EQ(fs_->RealPath("/srv/m/handoff").value_or(""), "/etc/kubernetes/manifests/handoff");
  EXPECT_EQ(fs_->RealPath("/srv/missing/../state/./k").value_or(""), "/srv/state/k");
  EXPECT_EQ(fs_->RealPath("/../..").value_or(""), "/");
  EXPECT_EQ(fs_->RealPath("relative").status().code(), absl::StatusCode::kInvalidArgument);
}

INSTANTIATE_TEST_SUITE_P(Methods, RootConfinementTest,
                         ::testing::Values(Method::kOpenat2, Method::kWalk),
                         [](const ::testing::TestParamInfo<Method>& method) {
                           return method.param == Method::kWalk ? "Walk" : "Openat2";
                         });

TEST(RootResolverTest, SlashAndEmptyRootAreNotConfined) {
  EXPECT_FALSE(RootResolver("/", RootResolver::Method::kAuto).confined());
  EXPECT_FALSE(RootResolver("//", RootResolver::Method::kWalk).confined());
  EXPECT_FALSE(RootResolver("", RootResolver::Method::kAuto).confined());
  EXPECT_TRUE(RootResolver("/tmp", RootResolver::Method::kAuto).confined());
}

TEST(RootResolverTest, HostRootFollowsSymlinksAsTheHostDoes) {
  char pattern[] = "/tmp/handoff-confine-host-XXXXXX";
  ASSERT_NE(::mkdtemp(pattern), nullptr);
  const std::string dir = pattern;
  std::ofstream(dir + "/file") << "content";
  stdfs::create_symlink(dir + "/file", dir + "/link");
  std::unique_ptr<FileSystem> host = NewPosixFileSystem("/");
  EXPECT_EQ(host->ReadFile(dir + "/link").value_or(""), "content");
  EXPECT_EQ(host->RealPath(dir + "/link").value_or(""), stdfs::canonical(dir + "/file").string());
  stdfs::remove_all(dir);
}

}  // namespace
}  // namespace handoff
