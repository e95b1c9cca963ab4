// ReadFile reads regular files only, and no more of them than the limit for their kind.
#include "common/fs/read_limit.h"

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

#include "common/fs/file_system.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/fault_injection_file_system.h"
#include "tests/support/memory_file_system.h"

namespace handoff {
namespace {

namespace stdfs = std::filesystem;
using ::testing::HasSubstr;

TEST(FormatByteSizeTest, UnitsAndDecimals) {
  EXPECT_EQ(FormatByteSize(0), "0 bytes");
  EXPECT_EQ(FormatByteSize(1), "1 byte");
  EXPECT_EQ(FormatByteSize(1023), "1023 bytes");
  EXPECT_EQ(FormatByteSize(1024), "1 KiB");
  EXPECT_EQ(FormatByteSize(1536), "1.5 KiB");
  EXPECT_EQ(FormatByteSize(kMiB), "1 MiB");
  EXPECT_EQ(FormatByteSize(5452595), "5.2 MiB");
  EXPECT_EQ(FormatByteSize(uint64_t{3} << 30), "3 GiB");
}

TEST(CheckReadSizeTest, NamesTheFileItsSizeTheLimitAndTheKind) {
  EXPECT_TRUE(CheckReadSize("/x", kMiB, kStaticPodManifestRead).ok());
  absl::Status status = CheckReadSize("/etc/kubernetes/manifests/x.yaml", 5452595,
                                      kStaticPodManifestRead);
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(status.message(),
            "/etc/kubernetes/manifests/x.yaml: 5.2 MiB is larger than the 1 MiB limit for a "
            "static pod manifest");
  // Just over: exact numbers, since rounded ones would look equal.
  EXPECT_EQ(CheckReadSize("/s.yaml", kMiB + 1, kSettingsRead).message(),
            "/s.yaml: 1048577 bytes is larger than the 1 MiB (1048576 bytes) limit for a settings "
            "file");
}

TEST(MemoryFileSystemReadLimitTest, RefusesAFileOverTheLimit) {
  MemoryFileSystem memory;
  memory.SetFile("/etc/big", std::string(2048, 'x'));
  const ReadLimit limit{"test file", 1024};
  EXPECT_THAT(memory.ReadFile("/etc/big", limit).status().message(),
              HasSubstr("/etc/big: 2 KiB is larger than the 1 KiB limit for a test file"));
  EXPECT_EQ(memory.ReadFile("/etc/big").value_or("").size(), 2048u);
  FaultInjectionFileSystem faulty(memory);
  EXPECT_EQ(faulty.ReadFile("/etc/big", limit).status().code(),
            absl::StatusCode::kFailedPrecondition);
}

class PosixReadLimitTest : public ::testing::TestWithParam<RootResolution> {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/handoff-read-limit-XXXXXX";
    ASSERT_NE(::mkdtemp(pattern), nullptr);
    root_ = pattern;
    stdfs::create_directories(root_ + "/etc/kubernetes/manifests");
    fs_ = NewPosixFileSystemWithResolution(root_, GetParam());
  }
  void TearDown() override { stdfs::remove_all(root_); }

  std::string root_;
  std::unique_ptr<FileSystem> fs_;
};

TEST_P(PosixReadLimitTest, AFifoIsRefusedWithoutWaitingForAWriter) {
  const std::string fifo = "/etc/kubernetes/manifests/zz.yaml";
  ASSERT_EQ(::mkfifo((root_ + fifo).c_str(), 0600), 0);
  absl::Status status = fs_->ReadFile(fifo, kStaticPodManifestRead).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(status.message(),
            "/etc/kubernetes/manifests/zz.yaml: is a FIFO (named pipe), not a regular file; "
            "handoff reads a static pod manifest only from a regular file");
  // Stat sees it without opening it for reading either.
  EXPECT_FALSE(fs_->Stat(fifo)->is_directory);
  // Nor does a write wait for a reader: it is refused.
  EXPECT_FALSE(fs_->WriteFile(fifo, "x", FileInfo{false, 0600, 0, 0}).ok());
}

TEST_P(PosixReadLimitTest, ASocketIsRefused) {
  const std::string path = root_ + "/etc/sock";
  const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  ASSERT_LT(path.size(), sizeof(address.sun_path));
  path.copy(address.sun_path, path.size());
  ASSERT_EQ(::bind(fd, reinterpret_cast<const sockaddr*>(&address), sizeof(address)), 0);
  EXPECT_THAT(fs_->ReadFile("/etc/sock", kSettingsRead).status().message(),
              HasSubstr("/etc/sock: is a socket, not a regular file"));
  ::close(fd);
}

TEST_P(PosixReadLimitTest, AFileOverTheLimitIsRefusedBeforeItIsRead) {
  const std::string path = "/etc/kubernetes/manifests/x.yaml";
  // Sparse: 5 GiB on paper, nothing on disk, and never read.
  {
    std::ofstream create(root_ + path);
  }
  ASSERT_EQ(::truncate((root_ + path).c_str(), 5LL << 30), 0);
  absl::Status status = fs_->ReadFile(path, kStaticPodManifestRead).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(status.message(),
            "/etc/kubernetes/manifests/x.yaml: 5 GiB is larger than the 1 MiB limit for a static "
            "pod manifest");
}

TEST_P(PosixReadLimitTest, AFileAtTheLimitIsRead) {
  std::ofstream(root_ + "/etc/exact") << std::string(1024, 'x');
  EXPECT_EQ(fs_->ReadFile("/etc/exact", ReadLimit{"test file", 1024}).value_or("").size(), 1024u);
}

INSTANTIATE_TEST_SUITE_P(Resolutions, PosixReadLimitTest,
                         ::testing::Values(RootResolution::kAuto, RootResolution::kWalk),
                         [](const ::testing::TestParamInfo<RootResolution>& resolution) {
                           return resolution.param == RootResolution::kAuto ? "Auto" : "Walk";
                         });

TEST(HostReadLimitTest, ASymlinkToDevZeroIsRefused) {
  char pattern[] = "/tmp/handoff-read-limit-host-XXXXXX";
  ASSERT_NE(::mkdtemp(pattern), nullptr);
  const std::string dir = pattern;
  stdfs::create_symlink("/dev/zero", dir + "/zz.yaml");
  absl::Status status =
      NewPosixFileSystem("/")->ReadFile(dir + "/zz.yaml", kStaticPodManifestRead).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(status.message(), HasSubstr("zz.yaml: is a character device, not a regular file"));
  EXPECT_THAT(NewPosixFileSystem("")->ReadFile("/dev/zero", kSettingsRead).status().message(),
              HasSubstr("/dev/zero: is a character device"));
  stdfs::remove_all(dir);
}

TEST(HostReadLimitTest, AFileWhoseSizeTheKernelDoesNotKnowStopsAtTheLimit) {
  // /proc files report size 0 and are read until EOF: the limit still holds.
  absl::Status status =
      NewPosixFileSystem("/")->ReadFile("/proc/self/status", ReadLimit{"test file", 16}).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(status.message(), HasSubstr("/proc/self/status: more than the 16 bytes limit"));
  EXPECT_TRUE(NewPosixFileSystem("/")->ReadFile("/proc/self/status").ok());
}

}  // namespace
}  // namespace handoff
