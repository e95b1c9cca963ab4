#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "agent/fs/file_system.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace handoff {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// Every test gets a fresh directory under /tmp, used as the file system's root and removed after.
class PosixFileSystemTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/handoff-posix-fs-XXXXXX";
    ASSERT_NE(::mkdtemp(pattern), nullptr) << "mkdtemp failed";
    root_ = pattern;
    fs_ = NewPosixFileSystem(root_);
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

  std::string root_;
  std::unique_ptr<FileSystem> fs_;
};

TEST_F(PosixFileSystemTest, ReadFileUnderTheRoot) {
  WriteFile("/etc/kubernetes/manifests/kube-controller-manager.yaml", "apiVersion: v1\n");
  absl::StatusOr<std::string> content =
      fs_->ReadFile("/etc/kubernetes/manifests/kube-controller-manager.yaml");
  ASSERT_TRUE(content.ok()) << content.status();
  EXPECT_EQ(*content, "apiVersion: v1\n");
}

TEST_F(PosixFileSystemTest, ReadsLargeAndBinaryFilesWhole) {
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

TEST_F(PosixFileSystemTest, ReadMissingFileIsNotFoundAndNamesTheHostPath) {
  absl::Status status = fs_->ReadFile("/etc/kubernetes/manifests/etcd.yaml").status();
  EXPECT_EQ(status.code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(status.message(), "/etc/kubernetes/manifests/etcd.yaml: No such file or directory");
  // Below a file, as below nothing, is NotFound.
  WriteFile("/etc/file", "x");
  EXPECT_EQ(fs_->ReadFile("/etc/file/child").status().code(), absl::StatusCode::kNotFound);
}

TEST_F(PosixFileSystemTest, ReadDirectoryIsAnError) {
  WriteFile("/etc/kubernetes/manifests/a.yaml", "a");
  absl::Status status = fs_->ReadFile("/etc/kubernetes/manifests").status();
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(status.message(), "/etc/kubernetes/manifests: is a directory, not a file");
}

TEST_F(PosixFileSystemTest, UnreadableFileIsPermissionDenied) {
  if (::geteuid() == 0) GTEST_SKIP() << "root reads files whatever their mode";
  WriteFile("/etc/secret", "x", 0000);
  absl::Status status = fs_->ReadFile("/etc/secret").status();
  EXPECT_EQ(status.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(std::string(status.message()), HasSubstr("/etc/secret: "));
  EXPECT_TRUE(fs_->Exists("/etc/secret"));
}

TEST_F(PosixFileSystemTest, ListDirectoryGivesSortedNames) {
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

TEST_F(PosixFileSystemTest, ListEmptyAndMissingDirectories) {
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

TEST_F(PosixFileSystemTest, StatReportsModeAndKind) {
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

TEST_F(PosixFileSystemTest, StatMissingIsNotFound) {
  absl::Status status = fs_->Stat("/etc/nothing").status();
  EXPECT_EQ(status.code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(status.message(), "/etc/nothing: No such file or directory");
}

TEST_F(PosixFileSystemTest, ExistsLooksUnderTheRootOnly) {
  WriteFile("/etc/kubernetes/admin.conf", "x");
  EXPECT_TRUE(fs_->Exists("/etc/kubernetes/admin.conf"));
  EXPECT_TRUE(fs_->Exists("/etc/kubernetes"));
  EXPECT_TRUE(fs_->Exists("/"));
  EXPECT_FALSE(fs_->Exists("/etc/kubernetes/kubelet.conf"));
  // /tmp exists on the host but not under the root.
  EXPECT_FALSE(fs_->Exists("/tmp"));
}

TEST_F(PosixFileSystemTest, DotDotDoesNotLeaveTheRoot) {
  WriteFile("/etc/x", "inside");
  // As on the host, where "/.." is "/".
  EXPECT_EQ(fs_->ReadFile("/../etc/x").value_or(""), "inside");
  EXPECT_EQ(fs_->ReadFile("/etc/../../../etc/x").value_or(""), "inside");
  EXPECT_EQ(fs_->ReadFile("/etc/./sub/../x").value_or(""), "inside");
  // The root's parent (/tmp) holds the root directory itself; from inside it is not visible.
  const std::string root_name = root_.substr(root_.rfind('/') + 1);
  EXPECT_FALSE(fs_->Exists("/../" + root_name));
}

TEST_F(PosixFileSystemTest, RootWithTrailingSlashAndSlashRoot) {
  WriteFile("/etc/x", "content");
  std::unique_ptr<FileSystem> trailing = NewPosixFileSystem(root_ + "/");
  EXPECT_EQ(trailing->ReadFile("/etc/x").value_or(""), "content");
  // With "/" (or no root) host paths are used as they are.
  std::unique_ptr<FileSystem> host = NewPosixFileSystem("/");
  EXPECT_EQ(host->ReadFile(root_ + "/etc/x").value_or(""), "content");
  EXPECT_EQ(NewPosixFileSystem("")->ReadFile(root_ + "/etc/x").value_or(""), "content");
}

}  // namespace
}  // namespace handoff
