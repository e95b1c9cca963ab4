#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/fs/file_system.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace handoff {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// Every test gets a fresh directory under /tmp, used as the file system's root and removed after;
// each runs with openat2 (where the kernel has it) and with the walk that stands in for it.
class PosixFileSystemTest : public ::testing::TestWithParam<RootResolution> {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/handoff-posix-fs-XXXXXX";
    ASSERT_NE(::mkdtemp(pattern), nullptr) << "mkdtemp failed";
    root_ = pattern;
    fs_ = NewPosixFileSystemWithResolution(root_, GetParam());
  }

  void TearDown() override {
    if (root_.empty()) return;
    std::error_code ec;
    std::filesystem::remove_all(root_, ec);
    EXPECT_FALSE(ec) << "cannot remove " << root_ << ": " << ec.message();
  }

  // Creates `host_path` under the root with its parent directories.
  void WriteFile(const std::string& host_path, const std::string& content, mode_t mode = 0644) {
    const std::string real = root_ + host_path;
    std::filesystem::create_directories(std::filesystem::path(real).parent_path());
    const int fd = ::open(real.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    ASSERT_GE(fd, 0) << real;
    ASSERT_EQ(::write(fd, content.data(), content.size()), static_cast<ssize_t>(content.size()));
    ASSERT_EQ(::fchmod(fd, mode), 0);
    ASSERT_EQ(::close(fd), 0);
  }

  // The mode and owner of `host_path` under the root, as the kernel has them.
  struct stat RealStat(const std::string& host_path) {
    struct stat st {};
    EXPECT_EQ(::stat((root_ + host_path).c_str(), &st), 0) << host_path;
    return st;
  }

  std::string root_;
  std::unique_ptr<FileSystem> fs_;
};

// Sets the process umask for one scope.
class ScopedUmask {
 public:
  explicit ScopedUmask(mode_t mask) : previous_(::umask(mask)) {}
  ScopedUmask(const ScopedUmask&) = delete;
  ScopedUmask& operator=(const ScopedUmask&) = delete;
  ~ScopedUmask() { ::umask(previous_); }

 private:
  mode_t previous_;
};

FileInfo Attributes(unsigned mode, unsigned uid = ::geteuid(), unsigned gid = ::getegid()) {
  FileInfo info;
  info.mode = mode;
  info.uid = uid;
  info.gid = gid;
  return info;
}

TEST_P(PosixFileSystemTest, ReadFileUnderTheRoot) {
  WriteFile("/etc/kubernetes/manifests/kube-controller-manager.yaml", "apiVersion: v1\n");
  absl::StatusOr<std::string> content =
      fs_->ReadFile("/etc/kubernetes/manifests/kube-controller-manager.yaml");
  ASSERT_TRUE(content.ok()) << content.status();
  EXPECT_EQ(*content, "apiVersion: v1\n");
}

TEST_P(PosixFileSystemTest, ReadsLargeAndBinaryFilesWhole) {
  std::string content;
  for (int i = 0; i < 200000; ++i) content.push_back(static_cast<char>(i % 251));
  WriteFile("/var/lib/blob", content);
  absl::StatusOr<std::string> read = fs_->ReadFile("/var/lib/blob");
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(read->size(), content.size());
  EXPECT_TRUE(*read == content);
  WriteFile("/empty", "");
  EXPECT_EQ(fs_->ReadFile("/empty").value_or("x"), "");
}

TEST_P(PosixFileSystemTest, ReadMissingFileIsNotFoundAndNamesTheHostPath) {
  absl::Status status = fs_->ReadFile("/etc/kubernetes/manifests/etcd.yaml").status();
  EXPECT_EQ(status.code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(status.message(), "/etc/kubernetes/manifests/etcd.yaml: No such file or directory");
  // Below a file, as below nothing, is NotFound.
  WriteFile("/etc/file", "x");
  EXPECT_EQ(fs_->ReadFile("/etc/file/child").status().code(), absl::StatusCode::kNotFound);
}

TEST_P(PosixFileSystemTest, ReadDirectoryIsAnError) {
  WriteFile("/etc/kubernetes/manifests/a.yaml", "a");
  absl::Status status = fs_->ReadFile("/etc/kubernetes/manifests").status();
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(status.message(), "/etc/kubernetes/manifests: is a directory, not a file");
}

TEST_P(PosixFileSystemTest, UnreadableFileIsPermissionDenied) {
  if (::geteuid() == 0) GTEST_SKIP() << "root reads files whatever their mode";
  WriteFile("/etc/secret", "x", 0000);
  absl::Status status = fs_->ReadFile("/etc/secret").status();
  EXPECT_EQ(status.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(std::string(status.message()), HasSubstr("/etc/secret: "));
  EXPECT_TRUE(fs_->Exists("/etc/secret"));
}

TEST_P(PosixFileSystemTest, ListDirectoryGivesSortedNames) {
  WriteFile("/etc/kubernetes/manifests/kube-scheduler.yaml", "");
  WriteFile("/etc/kubernetes/manifests/kube-apiserver.yaml", "");
  WriteFile("/etc/kubernetes/manifests/.kube-apiserver.yaml.tmp", "");
  WriteFile("/etc/kubernetes/manifests/etcd.yaml", "");
  WriteFile("/etc/kubernetes/manifests/sub/x", "");
  absl::StatusOr<std::vector<std::string>> names = fs_->ListDirectory("/etc/kubernetes/manifests");
  ASSERT_TRUE(names.ok()) << names.status();
  EXPECT_THAT(*names, ElementsAre(".kube-apiserver.yaml.tmp", "etcd.yaml", "kube-apiserver.yaml",
                                  "kube-scheduler.yaml", "sub"));
}

TEST_P(PosixFileSystemTest, ListEmptyAndMissingDirectories) {
  std::filesystem::create_directories(root_ + "/etc/empty");
  absl::StatusOr<std::vector<std::string>> names = fs_->ListDirectory("/etc/empty");
  ASSERT_TRUE(names.ok()) << names.status();
  EXPECT_TRUE(names->empty());
  absl::Status status = fs_->ListDirectory("/etc/missing").status();
  EXPECT_EQ(status.code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(status.message(), "/etc/missing: No such file or directory");
  WriteFile("/etc/file", "x");
  EXPECT_EQ(fs_->ListDirectory("/etc/file").status().code(), absl::StatusCode::kNotFound);
}

TEST_P(PosixFileSystemTest, StatReportsModeAndKind) {
  WriteFile("/etc/kubernetes/manifests/kube-apiserver.yaml", "x", 0600);
  absl::StatusOr<FileInfo> info = fs_->Stat("/etc/kubernetes/manifests/kube-apiserver.yaml");
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_FALSE(info->is_directory);
  EXPECT_EQ(info->mode, 0600u);
  EXPECT_EQ(info->uid, ::geteuid());
  EXPECT_EQ(info->gid, ::getegid());

  ASSERT_EQ(::chmod((root_ + "/etc/kubernetes/manifests").c_str(), 0750), 0);
  absl::StatusOr<FileInfo> dir = fs_->Stat("/etc/kubernetes/manifests");
  ASSERT_TRUE(dir.ok()) << dir.status();
  EXPECT_TRUE(dir->is_directory);
  EXPECT_EQ(dir->mode, 0750u);
}

TEST_P(PosixFileSystemTest, StatMissingIsNotFound) {
  absl::Status status = fs_->Stat("/etc/nothing").status();
  EXPECT_EQ(status.code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(status.message(), "/etc/nothing: No such file or directory");
}

TEST_P(PosixFileSystemTest, ExistsLooksUnderTheRootOnly) {
  WriteFile("/etc/kubernetes/admin.conf", "x");
  EXPECT_TRUE(fs_->Exists("/etc/kubernetes/admin.conf"));
  EXPECT_TRUE(fs_->Exists("/etc/kubernetes"));
  EXPECT_TRUE(fs_->Exists("/"));
  EXPECT_FALSE(fs_->Exists("/etc/kubernetes/kubelet.conf"));
  // /tmp exists on the host but not under the root.
  EXPECT_FALSE(fs_->Exists("/tmp"));
}

TEST_P(PosixFileSystemTest, DotDotDoesNotLeaveTheRoot) {
  WriteFile("/etc/x", "inside");
  // As on the host, where "/.." is "/".
  EXPECT_EQ(fs_->ReadFile("/../etc/x").value_or(""), "inside");
  EXPECT_EQ(fs_->ReadFile("/etc/../../../etc/x").value_or(""), "inside");
  // ".." follows what the path resolved to, as the kernel does: through a directory that does
  // not exist there is nothing to come back from.
  EXPECT_TRUE(absl::IsNotFound(fs_->ReadFile("/etc/./sub/../x").status()));
  std::filesystem::create_directory(root_ + "/etc/sub");
  EXPECT_EQ(fs_->ReadFile("/etc/./sub/../x").value_or(""), "inside");
  // The root's parent (/tmp) holds the root directory itself; from inside it is not visible.
  const std::string root_name = root_.substr(root_.rfind('/') + 1);
  EXPECT_FALSE(fs_->Exists("/../" + root_name));
}

TEST_P(PosixFileSystemTest, RootWithTrailingSlashAndSlashRoot) {
  WriteFile("/etc/x", "content");
  std::unique_ptr<FileSystem> trailing = NewPosixFileSystem(root_ + "/");
  EXPECT_EQ(trailing->ReadFile("/etc/x").value_or(""), "content");
  // With "/" (or no root) host paths are used as they are.
  std::unique_ptr<FileSystem> host = NewPosixFileSystem("/");
  EXPECT_EQ(host->ReadFile(root_ + "/etc/x").value_or(""), "content");
  EXPECT_EQ(NewPosixFileSystem("")->ReadFile(root_ + "/etc/x").value_or(""), "content");
}

// The write side.

TEST_P(PosixFileSystemTest, WriteFileGetsTheModeAskedForWhateverTheUmask) {
  WriteFile("/etc/kubernetes/manifests/etcd.yaml", "x");
  {
    ScopedUmask umask(0077);
    ASSERT_TRUE(fs_->WriteFile("/etc/kubernetes/manifests/a.yaml", "a", Attributes(0644)).ok());
  }
  {
    ScopedUmask umask(0);
    ASSERT_TRUE(fs_->WriteFile("/etc/kubernetes/manifests/b.yaml", "b", Attributes(0600)).ok());
  }
  EXPECT_EQ(RealStat("/etc/kubernetes/manifests/a.yaml").st_mode & 07777, 0644u);
  EXPECT_EQ(RealStat("/etc/kubernetes/manifests/b.yaml").st_mode & 07777, 0600u);
  EXPECT_EQ(fs_->ReadFile("/etc/kubernetes/manifests/a.yaml").value_or(""), "a");
  EXPECT_EQ(fs_->Stat("/etc/kubernetes/manifests/b.yaml")->mode, 0600u);
}

TEST_P(PosixFileSystemTest, WriteFileOverAFileReplacesContentAndMode) {
  WriteFile("/etc/x", "a much longer old content", 0644);
  ASSERT_TRUE(fs_->WriteFile("/etc/x", "new", Attributes(0600)).ok());
  EXPECT_EQ(fs_->ReadFile("/etc/x").value_or(""), "new");
  EXPECT_EQ(RealStat("/etc/x").st_mode & 07777, 0600u);
  // Binary data and nothing at all are written as they are.
  std::string binary;
  for (int i = 0; i < 300000; ++i) binary.push_back(static_cast<char>(i % 256));
  ASSERT_TRUE(fs_->WriteFile("/etc/x", binary, Attributes(0600)).ok());
  EXPECT_TRUE(fs_->ReadFile("/etc/x").value_or("") == binary);
  ASSERT_TRUE(fs_->WriteFile("/etc/x", "", Attributes(0600)).ok());
  EXPECT_EQ(fs_->ReadFile("/etc/x").value_or("x"), "");
}

TEST_P(PosixFileSystemTest, WriteFileSetsTheOwnerOnlyAsRoot) {
  WriteFile("/etc/placeholder", "");
  ASSERT_TRUE(fs_->WriteFile("/etc/x", "x", Attributes(0640, 1234, 4321)).ok());
  struct stat st = RealStat("/etc/x");
  if (::geteuid() == 0) {
    EXPECT_EQ(st.st_uid, 1234u);
    EXPECT_EQ(st.st_gid, 4321u);
  } else {
    // Not root: the file is ours, and writing it is not an error.
    EXPECT_EQ(st.st_uid, ::geteuid());
  }
  EXPECT_EQ(st.st_mode & 07777, 0640u);
}

TEST_P(PosixFileSystemTest, WriteFileInAMissingDirectoryNamesTheCallAndPath) {
  absl::Status status = fs_->WriteFile("/etc/missing/x.yaml", "x", Attributes(0600));
  EXPECT_EQ(status.code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(status.message(), "open /etc/missing/x.yaml: No such file or directory");
}

TEST_P(PosixFileSystemTest, SyncFileAndSyncDirectory) {
  WriteFile("/etc/kubernetes/x", "x");
  EXPECT_TRUE(fs_->SyncFile("/etc/kubernetes/x").ok());
  EXPECT_TRUE(fs_->SyncDirectory("/etc/kubernetes").ok());
  EXPECT_TRUE(fs_->SyncDirectory("/").ok());

  absl::Status status = fs_->SyncFile("/etc/kubernetes/y");
  EXPECT_EQ(status.code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(status.message(), "open /etc/kubernetes/y: No such file or directory");
  status = fs_->SyncDirectory("/etc/nothing");
  EXPECT_EQ(status.code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(status.message(), "open /etc/nothing: No such file or directory");
  status = fs_->SyncDirectory("/etc/kubernetes/x");
  EXPECT_EQ(status.code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(status.message(), "open /etc/kubernetes/x: Not a directory");
}

TEST_P(PosixFileSystemTest, RenameReplacesTheTarget) {
  WriteFile("/etc/.x.tmp", "new", 0600);
  WriteFile("/etc/x", "old", 0644);
  const ino_t inode = RealStat("/etc/.x.tmp").st_ino;
  ASSERT_TRUE(fs_->Rename("/etc/.x.tmp", "/etc/x").ok());
  EXPECT_EQ(fs_->ReadFile("/etc/x").value_or(""), "new");
  EXPECT_EQ(RealStat("/etc/x").st_ino, inode);
  EXPECT_FALSE(fs_->Exists("/etc/.x.tmp"));

  absl::Status status = fs_->Rename("/etc/.x.tmp", "/etc/x");
  EXPECT_EQ(status.code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(status.message(), "rename /etc/.x.tmp to /etc/x: No such file or directory");
}

TEST_P(PosixFileSystemTest, RemoveFile) {
  WriteFile("/etc/x", "x");
  ASSERT_TRUE(fs_->RemoveFile("/etc/x").ok());
  EXPECT_FALSE(fs_->Exists("/etc/x"));
  EXPECT_TRUE(fs_->Exists("/etc"));
  absl::Status status = fs_->RemoveFile("/etc/x");
  EXPECT_EQ(status.code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(status.message(), "unlink /etc/x: No such file or directory");
}

TEST_P(PosixFileSystemTest, CreateDirectoryGetsTheModeAskedForWhateverTheUmask) {
  {
    ScopedUmask umask(0077);
    ASSERT_TRUE(fs_->CreateDirectory("/etc", 0755).ok());
  }
  {
    ScopedUmask umask(0);
    ASSERT_TRUE(fs_->CreateDirectory("/etc/handoff", 0700).ok());
  }
  EXPECT_TRUE(S_ISDIR(RealStat("/etc").st_mode));
  EXPECT_EQ(RealStat("/etc").st_mode & 07777, 0755u);
  EXPECT_EQ(RealStat("/etc/handoff").st_mode & 07777, 0700u);

  absl::Status status = fs_->CreateDirectory("/etc/handoff", 0700);
  EXPECT_EQ(status.code(), absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(status.message(), "mkdir /etc/handoff: File exists");
  status = fs_->CreateDirectory("/var/lib/handoff", 0700);
  EXPECT_EQ(status.code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(status.message(), "mkdir /var/lib/handoff: No such file or directory");
}

TEST_P(PosixFileSystemTest, RemoveDirectoryOnlyWhenEmpty) {
  WriteFile("/var/lib/handoff/tx/files/0", "backup");
  absl::Status status = fs_->RemoveDirectory("/var/lib/handoff/tx/files");
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(status.message(), "rmdir /var/lib/handoff/tx/files: Directory not empty");
  ASSERT_TRUE(fs_->RemoveFile("/var/lib/handoff/tx/files/0").ok());
  ASSERT_TRUE(fs_->RemoveDirectory("/var/lib/handoff/tx/files").ok());
  ASSERT_TRUE(fs_->RemoveDirectory("/var/lib/handoff/tx").ok());
  EXPECT_FALSE(fs_->Exists("/var/lib/handoff/tx"));
  status = fs_->RemoveDirectory("/var/lib/handoff/tx");
  EXPECT_EQ(status.code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(status.message(), "rmdir /var/lib/handoff/tx: No such file or directory");
}

TEST_P(PosixFileSystemTest, TryLockIsExclusiveAcrossFileSystemsAndReleasedOnDestruction) {
  std::filesystem::create_directories(root_ + "/run/handoff");
  // flock(2) locks belong to the open file description, so two file systems in one process
  // exclude each other as two agents would.
  std::unique_ptr<FileSystem> other = NewPosixFileSystem(root_);
  absl::StatusOr<std::unique_ptr<FileSystem::Lock>> first = fs_->TryLock("/run/handoff/lock");
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(RealStat("/run/handoff/lock").st_mode & 07777, 0600u);

  absl::StatusOr<std::unique_ptr<FileSystem::Lock>> second = other->TryLock("/run/handoff/lock");
  EXPECT_EQ(second.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(second.status().message(),
            "/run/handoff/lock is locked by another process (flock: Resource temporarily "
            "unavailable)");
  // The same file system does not get it twice either.
  EXPECT_EQ(fs_->TryLock("/run/handoff/lock").status().code(), absl::StatusCode::kUnavailable);
  // Another path is another lock.
  EXPECT_TRUE(other->TryLock("/run/handoff/other-lock").ok());

  first->reset();
  absl::StatusOr<std::unique_ptr<FileSystem::Lock>> third = other->TryLock("/run/handoff/lock");
  EXPECT_TRUE(third.ok()) << third.status();
}

TEST_P(PosixFileSystemTest, TryLockInAMissingDirectoryNamesThePath) {
  absl::Status status = fs_->TryLock("/run/handoff/lock").status();
  EXPECT_EQ(status.code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(status.message(), "open /run/handoff/lock: No such file or directory");
}

TEST_P(PosixFileSystemTest, WritesStayUnderTheRoot) {
  WriteFile("/etc/placeholder", "");
  ASSERT_TRUE(fs_->WriteFile("/../etc/x", "inside", Attributes(0600)).ok());
  EXPECT_EQ(fs_->ReadFile("/etc/x").value_or(""), "inside");
  ASSERT_TRUE(fs_->CreateDirectory("/../../var", 0755).ok());
  EXPECT_TRUE(std::filesystem::is_directory(root_ + "/var"));
  ASSERT_TRUE(fs_->Rename("/etc/x", "/../etc/y").ok());
  EXPECT_EQ(fs_->ReadFile("/etc/y").value_or(""), "inside");
  ASSERT_TRUE(fs_->RemoveFile("/etc/../etc/y").ok());
  EXPECT_FALSE(fs_->Exists("/etc/y"));
}

INSTANTIATE_TEST_SUITE_P(Resolutions, PosixFileSystemTest,
                         ::testing::Values(RootResolution::kAuto, RootResolution::kWalk),
                         [](const ::testing::TestParamInfo<RootResolution>& resolution) {
                           return resolution.param == RootResolution::kAuto ? "Auto" : "Walk";
                         });

}  // namespace
}  // namespace handoff
