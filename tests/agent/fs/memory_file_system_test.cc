#include "agent/fs/memory_file_system.h"

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

TEST_F(MemoryFileSystemTest, SetFileReplacesAndRemoveFileRemoves) {
  fs_.SetFile("/etc/kubernetes/pki/ca.crt", "new", 0400);
  EXPECT_EQ(fs_.ReadFile("/etc/kubernetes/pki/ca.crt").value(), "new");
  EXPECT_EQ(fs_.Stat("/etc/kubernetes/pki/ca.crt")->mode, 0400u);
  fs_.RemoveFile("/etc/kubernetes/pki/ca.crt");
  EXPECT_FALSE(fs_.Exists("/etc/kubernetes/pki/ca.crt"));
  // Its directory held nothing else, so it is gone too.
  EXPECT_FALSE(fs_.Exists("/etc/kubernetes/pki"));
  EXPECT_THAT(fs_.ListDirectory("/etc/kubernetes").value(), ElementsAre("manifests"));
  EXPECT_EQ(fs_.files().count("/etc/kubernetes/pki/ca.crt"), 0u);
  EXPECT_EQ(fs_.files().size(), 4u);
}

TEST(FileSystemExistsTest, OtherErrorsCountAsExisting) {
  // A file system that cannot look answers "exists", so that nobody concludes "absent".
  class DeniedFileSystem : public FileSystem {
   public:
    absl::StatusOr<std::string> ReadFile(const std::string&) const override {
      return absl::PermissionDeniedError("denied");
    }
    absl::StatusOr<FileInfo> Stat(const std::string& path) const override {
      if (path == "/missing") return absl::NotFoundError("missing");
      return absl::PermissionDeniedError("denied");
    }
    absl::StatusOr<std::vector<std::string>> ListDirectory(const std::string&) const override {
      return absl::PermissionDeniedError("denied");
    }
  };
  DeniedFileSystem fs;
  EXPECT_TRUE(fs.Exists("/etc/shadow"));
  EXPECT_FALSE(fs.Exists("/missing"));
}

}  // namespace
}  // namespace handoff
