#include "tests/support/memory_file_system.h"

#include <memory>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace handoff {
namespace {

using ::testing::ElementsAre;

class MemoryFileSystemTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fs_.SetFile("/etc/kubernetes/manifests/kube-controller-manager.yaml", "kcm", 0600);
    fs_.SetFile("/etc/kubernetes/manifests/kube-apiserver.yaml", "apiserver");
    fs_.SetFile("/etc/kubernetes/manifests/.hidden", "");
    fs_.SetFile("/etc/kubernetes/pki/ca.crt", "cert");
    fs_.SetFile("/etc/kubernetesX", "not the directory");
  }

  MemoryFileSystem fs_;
};

TEST_F(MemoryFileSystemTest, ReadFile) {
  absl::StatusOr<std::string> content =
      fs_.ReadFile("/etc/kubernetes/manifests/kube-controller-manager.yaml");
  ASSERT_TRUE(content.ok()) << content.status();
  EXPECT_EQ(*content, "kcm");
  EXPECT_EQ(fs_.ReadFile("/etc/kubernetes/manifests/.hidden").value_or("x"), "");
}

TEST_F(MemoryFileSystemTest, ReadMissingFileIsNotFound) {
  absl::Status status = fs_.ReadFile("/etc/kubernetes/manifests/etcd.yaml").status();
  EXPECT_EQ(status.code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(status.message(), "/etc/kubernetes/manifests/etcd.yaml: no such file");
}

TEST_F(MemoryFileSystemTest, ReadDirectoryIsAnError) {
  absl::Status status = fs_.ReadFile("/etc/kubernetes/manifests").status();
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(status.message(), "/etc/kubernetes/manifests: is a directory, not a file");
}

TEST_F(MemoryFileSystemTest, ListDirectoryGivesSortedNames) {
  absl::StatusOr<std::vector<std::string>> names = fs_.ListDirectory("/etc/kubernetes/manifests");
  ASSERT_TRUE(names.ok()) << names.status();
  EXPECT_THAT(*names,
              ElementsAre(".hidden", "kube-apiserver.yaml", "kube-controller-manager.yaml"));
  EXPECT_THAT(fs_.ListDirectory("/etc/kubernetes/manifests/").value(),
              ElementsAre(".hidden", "kube-apiserver.yaml", "kube-controller-manager.yaml"));
}

TEST_F(MemoryFileSystemTest, ListDirectoryNamesSubdirectoriesOnce) {
  EXPECT_THAT(fs_.ListDirectory("/etc/kubernetes").value(), ElementsAre("manifests", "pki"));
  EXPECT_THAT(fs_.ListDirectory("/etc").value(), ElementsAre("kubernetes", "kubernetesX"));
  EXPECT_THAT(fs_.ListDirectory("/").value(), ElementsAre("etc"));
}

TEST_F(MemoryFileSystemTest, ListMissingDirectoryIsNotFound) {
  absl::Status status = fs_.ListDirectory("/etc/kubernetes/tmp").status();
  EXPECT_EQ(status.code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(status.message(), "/etc/kubernetes/tmp: no such directory");
  // A file is not a directory.
  EXPECT_EQ(fs_.ListDirectory("/etc/kubernetesX").status().code(), absl::StatusCode::kNotFound);
  // A name that only starts like a directory is not inside it.
  EXPECT_EQ(fs_.ListDirectory("/etc/kube").status().code(), absl::StatusCode::kNotFound);
}

TEST_F(MemoryFileSystemTest, StatFileKeepsItsMode) {
  absl::StatusOr<FileInfo> info =
      fs_.Stat("/etc/kubernetes/manifests/kube-controller-manager.yaml");
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_FALSE(info->is_directory);
  EXPECT_EQ(info->mode, 0600u);
  EXPECT_EQ(fs_.Stat("/etc/kubernetes/manifests/kube-apiserver.yaml")->mode, 0644u);
}

TEST_F(MemoryFileSystemTest, StatDirectory) {
  absl::StatusOr<FileInfo> info = fs_.Stat("/etc/kubernetes/manifests");
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_TRUE(info->is_directory);
  EXPECT_EQ(info->mode, 0755u);
  EXPECT_TRUE(fs_.Stat("/").value().is_directory);
}

TEST_F(MemoryFileSystemTest, StatMissingIsNotFound) {
  absl::Status status = fs_.Stat("/etc/kube").status();
  EXPECT_EQ(status.code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(status.message(), "/etc/kube: no such file or directory");
}

TEST_F(MemoryFileSystemTest, Exists) {
  EXPECT_TRUE(fs_.Exists("/etc/kubernetes/pki/ca.crt"));
  EXPECT_TRUE(fs_.Exists("/etc/kubernetes/pki"));
  EXPECT_TRUE(fs_.Exists("/etc/kubernetesX"));
  EXPECT_FALSE(fs_.Exists("/etc/kubernetes/pki/ca.key"));
  EXPECT_FALSE(fs_.Exists("/etc/kube"));
}

TEST_F(MemoryFileSystemTest, SetFileReplacesAndDeleteFileRemoves) {
  fs_.SetFile("/etc/kubernetes/pki/ca.crt", "new", 0400);
  EXPECT_EQ(fs_.ReadFile("/etc/kubernetes/pki/ca.crt").value(), "new");
  EXPECT_EQ(fs_.Stat("/etc/kubernetes/pki/ca.crt")->mode, 0400u);
  fs_.DeleteFile("/etc/kubernetes/pki/ca.crt");
  EXPECT_FALSE(fs_.Exists("/etc/kubernetes/pki/ca.crt"));
  // Its directory held nothing else, so it is gone too.
  EXPECT_FALSE(fs_.Exists("/etc/kubernetes/pki"));
  EXPECT_THAT(fs_.ListDirectory("/etc/kubernetes").value(), ElementsAre("manifests"));
  EXPECT_EQ(fs_.files().count("/etc/kubernetes/pki/ca.crt"), 0u);
  EXPECT_EQ(fs_.files().size(), 4u);
}

// The write side: effective at once, with the errors the real file system gives.

FileInfo Attributes(unsigned mode, unsigned uid = 0, unsigned gid = 0) {
  FileInfo info;
  info.mode = mode;
  info.uid = uid;
  info.gid = gid;
  return info;
}

TEST_F(MemoryFileSystemTest, WriteFileKeepsTheAttributes) {
  ASSERT_TRUE(fs_.WriteFile("/etc/kubernetes/pki/new.crt", "x", Attributes(0640, 12, 34)).ok());
  EXPECT_EQ(fs_.ReadFile("/etc/kubernetes/pki/new.crt").value_or(""), "x");
  absl::StatusOr<FileInfo> info = fs_.Stat("/etc/kubernetes/pki/new.crt");
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_FALSE(info->is_directory);
  EXPECT_EQ(info->mode, 0640u);
  EXPECT_EQ(info->uid, 12u);
  EXPECT_EQ(info->gid, 34u);
  EXPECT_TRUE(fs_.SyncFile("/etc/kubernetes/pki/new.crt").ok());
}

TEST_F(MemoryFileSystemTest, WriteFileNeedsItsDirectory) {
  absl::Status status = fs_.WriteFile("/etc/missing/x", "x", Attributes(0600));
  EXPECT_EQ(status.code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(status.message(), "open /etc/missing/x: no such directory /etc/missing");
  EXPECT_EQ(fs_.WriteFile("/etc/kubernetes", "x", Attributes(0600)).code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(fs_.SyncFile("/etc/missing/x").code(), absl::StatusCode::kNotFound);
}

TEST_F(MemoryFileSystemTest, CreateDirectoryMakesAnEmptyDirectory) {
  ASSERT_TRUE(fs_.CreateDirectory("/var", 0755).ok());
  ASSERT_TRUE(fs_.CreateDirectory("/var/lib", 0700).ok());
  EXPECT_TRUE(fs_.Stat("/var/lib")->is_directory);
  EXPECT_EQ(fs_.Stat("/var/lib")->mode, 0700u);
  EXPECT_THAT(fs_.ListDirectory("/var/lib").value(), ElementsAre());
  EXPECT_THAT(fs_.ListDirectory("/var").value(), ElementsAre("lib"));
  EXPECT_THAT(fs_.ListDirectory("/").value(), ElementsAre("etc", "var"));
  EXPECT_TRUE(fs_.SyncDirectory("/var/lib").ok());
  EXPECT_EQ(fs_.SyncDirectory("/var/nothing").code(), absl::StatusCode::kNotFound);

  EXPECT_EQ(fs_.CreateDirectory("/var/lib", 0700).code(), absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(fs_.CreateDirectory("/etc/kubernetes", 0700).code(), absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(fs_.CreateDirectory("/etc/kubernetesX", 0700).code(), absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(fs_.CreateDirectory("/opt/x", 0700).code(), absl::StatusCode::kNotFound);
}

TEST_F(MemoryFileSystemTest, RemoveDirectoryOnlyWhenEmpty) {
  ASSERT_TRUE(fs_.CreateDirectory("/etc/kubernetes/tmp", 0700).ok());
  ASSERT_TRUE(fs_.CreateDirectory("/etc/kubernetes/tmp/sub", 0700).ok());
  absl::Status status = fs_.RemoveDirectory("/etc/kubernetes/tmp");
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(status.message(), "rmdir /etc/kubernetes/tmp: directory not empty");
  ASSERT_TRUE(fs_.RemoveDirectory("/etc/kubernetes/tmp/sub").ok());
  ASSERT_TRUE(fs_.RemoveDirectory("/etc/kubernetes/tmp").ok());
  EXPECT_FALSE(fs_.Exists("/etc/kubernetes/tmp"));
  EXPECT_EQ(fs_.RemoveDirectory("/etc/kubernetes/tmp").code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(fs_.RemoveDirectory("/etc/kubernetes/pki/ca.crt").code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(fs_.RemoveDirectory("/etc/kubernetes/pki").code(),
            absl::StatusCode::kFailedPrecondition);
  // A directory emptied by RemoveFile can be removed, and its parent stays.
  ASSERT_TRUE(fs_.RemoveFile("/etc/kubernetes/pki/ca.crt").ok());
  ASSERT_TRUE(fs_.RemoveDirectory("/etc/kubernetes/pki").ok());
  EXPECT_THAT(fs_.ListDirectory("/etc/kubernetes").value(), ElementsAre("manifests"));
}

TEST_F(MemoryFileSystemTest, CopyStartsWithoutLocks) {
  absl::StatusOr<std::unique_ptr<FileSystem::Lock>> lock = fs_.TryLock("/etc/kubernetes/lock");
  ASSERT_TRUE(lock.ok());
  MemoryFileSystem copy = fs_;
  EXPECT_TRUE(copy.Exists("/etc/kubernetes/lock"));
  EXPECT_TRUE(copy.TryLock("/etc/kubernetes/lock").ok());
  EXPECT_EQ(fs_.TryLock("/etc/kubernetes/lock").status().code(), absl::StatusCode::kUnavailable);
}

TEST_F(MemoryFileSystemTest, RenameMovesContentAndAttributes) {
  ASSERT_TRUE(fs_.WriteFile("/etc/kubernetes/pki/.ca.crt.tmp", "new", Attributes(0600)).ok());
  ASSERT_TRUE(fs_.Rename("/etc/kubernetes/pki/.ca.crt.tmp", "/etc/kubernetes/pki/ca.crt").ok());
  EXPECT_EQ(fs_.ReadFile("/etc/kubernetes/pki/ca.crt").value_or(""), "new");
  EXPECT_EQ(fs_.Stat("/etc/kubernetes/pki/ca.crt")->mode, 0600u);
  EXPECT_FALSE(fs_.Exists("/etc/kubernetes/pki/.ca.crt.tmp"));
  absl::Status status = fs_.Rename("/etc/kubernetes/pki/.ca.crt.tmp", "/etc/kubernetes/pki/x");
  EXPECT_EQ(status.code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(fs_.Rename("/etc/kubernetes/pki/ca.crt", "/etc/kubernetes/manifests").code(),
            absl::StatusCode::kFailedPrecondition);
}

TEST_F(MemoryFileSystemTest, RemoveFileLeavesItsDirectory) {
  ASSERT_TRUE(fs_.RemoveFile("/etc/kubernetes/pki/ca.crt").ok());
  EXPECT_FALSE(fs_.Exists("/etc/kubernetes/pki/ca.crt"));
  // Unlike DeleteFile, as unlink(2): the directory stays, empty.
  EXPECT_TRUE(fs_.Stat("/etc/kubernetes/pki")->is_directory);
  EXPECT_THAT(fs_.ListDirectory("/etc/kubernetes/pki").value(), ElementsAre());
  absl::Status status = fs_.RemoveFile("/etc/kubernetes/pki/ca.crt");
  EXPECT_EQ(status.code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(status.message(), "unlink /etc/kubernetes/pki/ca.crt: no such file");
  EXPECT_EQ(fs_.RemoveFile("/etc/kubernetes").code(), absl::StatusCode::kFailedPrecondition);
}

TEST_F(MemoryFileSystemTest, TryLockIsExclusiveUntilTheLockIsDestroyed) {
  absl::StatusOr<std::unique_ptr<FileSystem::Lock>> lock = fs_.TryLock("/etc/kubernetes/lock");
  ASSERT_TRUE(lock.ok()) << lock.status();
  EXPECT_EQ(fs_.Stat("/etc/kubernetes/lock")->mode, 0600u);
  absl::Status second = fs_.TryLock("/etc/kubernetes/lock").status();
  EXPECT_EQ(second.code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(second.message(), "/etc/kubernetes/lock is locked by another holder");
  lock->reset();
  EXPECT_TRUE(fs_.TryLock("/etc/kubernetes/lock").ok());
  EXPECT_EQ(fs_.TryLock("/var/lock").status().code(), absl::StatusCode::kNotFound);
}

TEST(MemoryFileSystemEmptyTest, RootAlwaysExists) {
  MemoryFileSystem fs;
  EXPECT_TRUE(fs.Stat("/")->is_directory);
  EXPECT_THAT(fs.ListDirectory("/").value(), ElementsAre());
  EXPECT_TRUE(fs.WriteFile("/x", "x", Attributes(0600)).ok());
  EXPECT_THAT(fs.ListDirectory("/").value(), ElementsAre("x"));
}

TEST(FileSystemExistsTest, OtherErrorsCountAsExisting) {
  // A file system that cannot look answers "exists", so that nobody concludes "absent".
  class DeniedFileSystem : public FileSystem {
   public:
    absl::StatusOr<std::string> ReadFile(const std::string&, const ReadLimit&) const override {
      return absl::PermissionDeniedError("denied");
    }
    absl::StatusOr<FileInfo> Stat(const std::string& path) const override {
      if (path == "/missing") return absl::NotFoundError("missing");
      return absl::PermissionDeniedError("denied");
    }
    absl::StatusOr<std::vector<std::string>> ListDirectory(const std::string&) const override {
      return absl::PermissionDeniedError("denied");
    }
    absl::Status WriteFile(const std::string&, std::string_view, const FileInfo&) override {
      return absl::PermissionDeniedError("denied");
    }
    absl::Status SyncFile(const std::string&) override {
      return absl::PermissionDeniedError("denied");
    }
    absl::Status Rename(const std::string&, const std::string&) override {
      return absl::PermissionDeniedError("denied");
    }
    absl::Status RemoveFile(const std::string&) override {
      return absl::PermissionDeniedError("denied");
    }
    absl::Status SyncDirectory(const std::string&) override {
      return absl::PermissionDeniedError("denied");
    }
    absl::Status CreateDirectory(const std::string&, unsigned) override {
      return absl::PermissionDeniedError("denied");
    }
    absl::Status RemoveDirectory(const std::string&) override {
      return absl::PermissionDeniedError("denied");
    }
    absl::StatusOr<std::unique_ptr<Lock>> TryLock(const std::string&) override {
      return absl::PermissionDeniedError("denied");
    }
  };
  DeniedFileSystem fs;
  EXPECT_TRUE(fs.Exists("/etc/shadow"));
  EXPECT_FALSE(fs.Exists("/missing"));
}

}  // namespace
}  // namespace handoff
