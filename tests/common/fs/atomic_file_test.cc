// AtomicReplace, DurableRemove and EnsureDirectory on the real file system (under a temp dir)
// and on MemoryFileSystem. Their behaviour under crashes is in atomic_file_crash_test.cc.
#include "common/fs/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/memory_file_system.h"

namespace handoff {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr char kManifests[] = "/etc/kubernetes/manifests";
constexpr char kKcm[] = "/etc/kubernetes/manifests/kube-controller-manager.yaml";
constexpr char kKcmTemp[] = "/etc/kubernetes/manifests/.kube-controller-manager.yaml.handoff-tmp";

TEST(TempPathForTest, IsADotfileBesideThePath) {
  EXPECT_EQ(TempPathFor(kKcm), kKcmTemp);
  EXPECT_EQ(TempPathFor("/etc/kubernetes/manifests/.hidden"),
            "/etc/kubernetes/manifests/..hidden.handoff-tmp");
  EXPECT_EQ(TempPathFor("/x"), "/.x.handoff-tmp");
  EXPECT_EQ(TempPathFor("x"), ".x.handoff-tmp");
}

class ScopedUmask {
 public:
  explicit ScopedUmask(mode_t mask) : previous_(::umask(mask)) {}
  ScopedUmask(const ScopedUmask&) = delete;
  ScopedUmask& operator=(const ScopedUmask&) = delete;
  ~ScopedUmask() { ::umask(previous_); }

 private:
  mode_t previous_;
};

class PosixAtomicFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/handoff-atomic-file-XXXXXX";
    ASSERT_NE(::mkdtemp(pattern), nullptr) << "mkdtemp failed";
    root_ = pattern;
    fs_ = NewPosixFileSystem(root_);
    std::filesystem::create_directories(root_ + kManifests);
  }

  void TearDown() override {
    if (root_.empty()) return;
    std::error_code ec;
    std::filesystem::remove_all(root_, ec);
    EXPECT_FALSE(ec) << "cannot remove " << root_ << ": " << ec.message();
  }

  void WriteRealFile(const std::string& host_path, const std::string& content, mode_t mode) {
    const std::string real = root_ + host_path;
    const int fd = ::open(real.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    ASSERT_GE(fd, 0) << real;
    ASSERT_EQ(::write(fd, content.data(), content.size()), static_cast<ssize_t>(content.size()));
    ASSERT_EQ(::fchmod(fd, mode), 0);
    ASSERT_EQ(::close(fd), 0);
  }

  struct stat RealStat(const std::string& host_path) {
    struct stat st {};
    EXPECT_EQ(::stat((root_ + host_path).c_str(), &st), 0) << host_path;
    return st;
  }

  std::string root_;
  std::unique_ptr<FileSystem> fs_;
};

TEST_F(PosixAtomicFileTest, ReplaceKeepsTheModeAndOwnerOfTheReplacedFile) {
  WriteRealFile(kKcm, "old", 0640);
  const bool root = ::geteuid() == 0;
  if (root) {
    ASSERT_EQ(::chown((root_ + kKcm).c_str(), 1234, 4321), 0);
  }
  const ino_t old_inode = RealStat(kKcm).st_ino;

  ASSERT_TRUE(AtomicReplace(*fs_, kKcm, "new content\n").ok());

  EXPECT_EQ(fs_->ReadFile(kKcm).value_or(""), "new content\n");
  struct stat st = RealStat(kKcm);
  EXPECT_EQ(st.st_mode & 07777, 0640u);
  EXPECT_EQ(st.st_uid, root ? 1234u : ::geteuid());
  EXPECT_EQ(st.st_gid, root ? 4321u : ::getegid());
  // A new inode took the name: readers never saw the file being written.
  EXPECT_NE(st.st_ino, old_inode);
  EXPECT_THAT(fs_->ListDirectory(kManifests).value(), ElementsAre("kube-controller-manager.yaml"));
}

TEST_F(PosixAtomicFileTest, NewFileIs0600WhateverTheUmask) {
  ScopedUmask umask(0);
  ASSERT_TRUE(AtomicReplace(*fs_, kKcm, "new").ok());
  EXPECT_EQ(fs_->ReadFile(kKcm).value_or(""), "new");
  struct stat st = RealStat(kKcm);
  EXPECT_EQ(st.st_mode & 07777, 0600u);
  if (::geteuid() == 0) {
    EXPECT_EQ(st.st_uid, 0u);
    EXPECT_EQ(st.st_gid, 0u);
  }
  EXPECT_THAT(fs_->ListDirectory(kManifests).value(), ElementsAre("kube-controller-manager.yaml"));
}

TEST_F(PosixAtomicFileTest, ExplicitAttributesWin) {
  WriteRealFile(kKcm, "old", 0600);
  FileInfo attributes;
  attributes.mode = 0644;
  attributes.uid = ::geteuid();
  attributes.gid = ::getegid();
  ASSERT_TRUE(AtomicReplace(*fs_, kKcm, "new", attributes).ok());
  EXPECT_EQ(RealStat(kKcm).st_mode & 07777, 0644u);
}

TEST_F(PosixAtomicFileTest, StaleTempIsReplacedNotWrittenThrough) {
  WriteRealFile(kKcm, "old", 0600);
  // A symlink left where the temp goes must not be followed out of the directory.
  std::filesystem::create_directories(root_ + "/elsewhere");
  WriteRealFile("/elsewhere/target", "untouched", 0644);
  std::filesystem::create_symlink(root_ + "/elsewhere/target", root_ + kKcmTemp);

  ASSERT_TRUE(AtomicReplace(*fs_, kKcm, "new").ok());

  EXPECT_EQ(fs_->ReadFile(kKcm).value_or(""), "new");
  EXPECT_EQ(fs_->ReadFile("/elsewhere/target").value_or(""), "untouched");
  EXPECT_EQ(RealStat(kKcm).st_mode & 07777, 0600u);
  EXPECT_THAT(fs_->ListDirectory(kManifests).value(), ElementsAre("kube-controller-manager.yaml"));

  // A dangling one too (Stat does not see it, open(O_CREAT) would create its target).
  std::filesystem::create_symlink(root_ + "/elsewhere/created", root_ + kKcmTemp);
  ASSERT_TRUE(AtomicReplace(*fs_, kKcm, "newer").ok());
  EXPECT_EQ(fs_->ReadFile(kKcm).value_or(""), "newer");
  EXPECT_FALSE(fs_->Exists("/elsewhere/created"));
  EXPECT_THAT(fs_->ListDirectory(kManifests).value(), ElementsAre("kube-controller-manager.yaml"));
}

TEST_F(PosixAtomicFileTest, FailureNamesTheStepAndBothPaths) {
  absl::Status status = AtomicReplace(*fs_, "/etc/missing/x.yaml", "x");
  EXPECT_EQ(status.code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(status.message(),
            "replacing /etc/missing/x.yaml via /etc/missing/.x.yaml.handoff-tmp: writing the "
            "temp file failed: open /etc/missing/.x.yaml.handoff-tmp: No such file or directory");

  status = AtomicReplace(*fs_, kManifests, "x");
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(status.message()), HasSubstr("/etc/kubernetes/manifests is a directory"));
}

TEST_F(PosixAtomicFileTest, DurableRemove) {
  WriteRealFile(kKcm, "old", 0600);
  ASSERT_TRUE(DurableRemove(*fs_, kKcm).ok());
  EXPECT_FALSE(fs_->Exists(kKcm));
  // Already absent, and in a directory that does not exist: nothing to do.
  EXPECT_TRUE(DurableRemove(*fs_, kKcm).ok());
  EXPECT_TRUE(DurableRemove(*fs_, "/etc/missing/x.yaml").ok());

  absl::Status status = DurableRemove(*fs_, kManifests);
  EXPECT_FALSE(status.ok());
  EXPECT_THAT(std::string(status.message()),
              HasSubstr("removing /etc/kubernetes/manifests: unlink failed: unlink "
                        "/etc/kubernetes/manifests: "));
}

TEST_F(PosixAtomicFileTest, EnsureDirectoryCreatesEveryMissingComponentWithTheMode) {
  ScopedUmask umask(0077);
  ASSERT_TRUE(EnsureDirectory(*fs_, "/var/lib/handoff/transactions", 0700).ok());
  ASSERT_TRUE(EnsureDirectory(*fs_, "/etc/kubernetes/tmp/", 0755).ok());
  EXPECT_EQ(RealStat("/var").st_mode & 07777, 0700u);
  EXPECT_EQ(RealStat("/var/lib/handoff/transactions").st_mode & 07777, 0700u);
  EXPECT_EQ(RealStat("/etc/kubernetes/tmp").st_mode & 07777, 0755u);
  // An existing directory keeps its mode.
  ASSERT_TRUE(EnsureDirectory(*fs_, kManifests, 0700).ok());
  EXPECT_NE(RealStat(kManifests).st_mode & 07777, 0700u);
  EXPECT_TRUE(EnsureDirectory(*fs_, "/").ok());
}

TEST_F(PosixAtomicFileTest, ReplaceCreatingParentsMakesTheDirectoriesThenTheFile) {
  ScopedUmask umask(0077);
  ASSERT_TRUE(AtomicReplaceCreatingParents(*fs_, "/etc/handoff/pki/agent.crt", "cert", 0644).ok());
  EXPECT_EQ(RealStat("/etc/handoff").st_mode & 07777, 0755u);
  EXPECT_EQ(RealStat("/etc/handoff/pki").st_mode & 07777, 0755u);
  EXPECT_EQ(RealStat("/etc/handoff/pki/agent.crt").st_mode & 07777, 0644u);
  EXPECT_EQ(fs_->ReadFile("/etc/handoff/pki/agent.crt").value_or(""), "cert");
  // Through a file: refused, nothing written.
  WriteRealFile("/etc/handoff/file", "x", 0644);
  EXPECT_EQ(AtomicReplaceCreatingParents(*fs_, "/etc/handoff/file/sub", "y", 0600).code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(fs_->ReadFile("/etc/handoff/file").value_or(""), "x");
}

TEST_F(PosixAtomicFileTest, EnsureDirectoryThroughAFileFails) {
  WriteRealFile("/etc/kubernetes/file", "x", 0644);
  absl::Status status = EnsureDirectory(*fs_, "/etc/kubernetes/file/sub");
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(status.message(),
            "creating directory /etc/kubernetes/file/sub: /etc/kubernetes/file exists and is not "
            "a directory");
  status = EnsureDirectory(*fs_, "relative/dir");
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
}

// The same functions work on the in-memory file system the engine's tests use.
TEST(MemoryAtomicFileTest, ReplaceRemoveAndEnsureDirectory) {
  MemoryFileSystem fs;
  fs.SetFile(kKcm, "old", 0640);
  ASSERT_TRUE(AtomicReplace(fs, kKcm, "new").ok());
  EXPECT_EQ(fs.ReadFile(kKcm).value_or(""), "new");
  EXPECT_EQ(fs.Stat(kKcm)->mode, 0640u);
  EXPECT_FALSE(fs.Exists(kKcmTemp));

  ASSERT_TRUE(EnsureDirectory(fs, "/var/lib/handoff/transactions").ok());
  EXPECT_TRUE(fs.Stat("/var/lib/handoff/transactions")->is_directory);
  EXPECT_EQ(fs.Stat("/var/lib/handoff")->mode, 0700u);
  ASSERT_TRUE(AtomicReplace(fs, "/var/lib/handoff/transactions/journal.yaml", "j").ok());
  EXPECT_EQ(fs.Stat("/var/lib/handoff/transactions/journal.yaml")->mode, 0600u);

  ASSERT_TRUE(DurableRemove(fs, kKcm).ok());
  EXPECT_FALSE(fs.Exists(kKcm));
  EXPECT_TRUE(fs.Exists(kManifests));
  EXPECT_TRUE(DurableRemove(fs, kKcm).ok());
}

}  // namespace
}  // namespace handoff
