#include "common/fs/output_file.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>

#include "common/fs/file_system.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace handoff {
namespace {

using ::testing::HasSubstr;

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

struct stat LinkStat(const std::string& path) {
  struct stat st {};
  EXPECT_EQ(::lstat(path.c_str(), &st), 0) << path << ": " << std::strerror(errno);
  return st;
}

class OutputFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::path(::testing::TempDir()) / "output-file-XXXXXX";
    ASSERT_NE(::mkdtemp(dir_.data()), nullptr);
    fs_ = NewPosixFileSystem("/");
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string Path(const std::string& name) const { return dir_ + "/" + name; }
  void Write(const std::string& name, const std::string& text, mode_t mode) {
    std::ofstream(Path(name)) << text;
    ASSERT_EQ(::chmod(Path(name).c_str(), mode), 0);
  }

  std::string dir_;
  std::unique_ptr<FileSystem> fs_;
};

TEST_F(OutputFileTest, ANewFileGetsTheModeGivenAndTheCallersOwner) {
  ASSERT_TRUE(WriteOutputFile(*fs_, Path("out.yaml"), "new\n", 0600).ok());
  EXPECT_EQ(Slurp(Path("out.yaml")), "new\n");
  const struct stat st = LinkStat(Path("out.yaml"));
  EXPECT_TRUE(S_ISREG(st.st_mode));
  EXPECT_EQ(st.st_mode & 07777, 0600u);
  EXPECT_EQ(st.st_uid, ::geteuid());
}

TEST_F(OutputFileTest, ARegularFileIsReplacedKeepingItsPermissionsButNoSetIdBits) {
  Write("kept", "old", 0640);
  ASSERT_TRUE(WriteOutputFile(*fs_, Path("kept"), "new", 0600).ok());
  EXPECT_EQ(Slurp(Path("kept")), "new");
  EXPECT_EQ(LinkStat(Path("kept")).st_mode & 07777, 0640u);

  Write("setuid", "old", 04755);
  ASSERT_TRUE(WriteOutputFile(*fs_, Path("setuid"), "new", 0600).ok());
  EXPECT_EQ(LinkStat(Path("setuid")).st_mode & 07777, 0755u);
}

TEST_F(OutputFileTest, ASymlinkIsWrittenThroughAndStaysALink) {
  Write("target", "old", 0644);
  std::filesystem::create_symlink("target", Path("link"));
  ASSERT_TRUE(WriteOutputFile(*fs_, Path("link"), "new", 0600).ok());
  EXPECT_TRUE(S_ISLNK(LinkStat(Path("link")).st_mode));
  EXPECT_EQ(Slurp(Path("target")), "new");
  EXPECT_EQ(LinkStat(Path("target")).st_mode & 07777, 0644u);

  // A dangling link names the file to create.
  std::filesystem::create_symlink(Path("created"), Path("dangling"));
  ASSERT_TRUE(WriteOutputFile(*fs_, Path("dangling"), "made", 0600).ok());
  EXPECT_TRUE(S_ISLNK(LinkStat(Path("dangling")).st_mode));
  EXPECT_EQ(Slurp(Path("created")), "made");
}

TEST_F(OutputFileTest, ANameWithoutADirectoryIsWrittenInTheWorkingDirectory) {
  // `-o cluster.yaml`: the file is written and its directory, ".", synced; no error after the
  // write (the exit code would say nothing was written).
  const std::filesystem::path before = std::filesystem::current_path();
  std::filesystem::current_path(dir_);
  const absl::Status written = WriteOutputFile(*fs_, "cluster.yaml", "here\n", 0600);
  std::filesystem::current_path(before);
  ASSERT_TRUE(written.ok()) << written;
  EXPECT_EQ(Slurp(Path("cluster.yaml")), "here\n");
}

// Every kind of thing at the path, directly and behind a symlink: only a regular file (or
// nothing) is written; everything else is refused by name and left exactly as it was.
TEST_F(OutputFileTest, OnlyARegularFileOrNothingIsEverWritten) {
  struct Kind {
    std::string name;
    std::string said;  // what the error calls it
    bool writable;
  };
  // Made by the loop below: a regular file, nothing, a directory, a FIFO, a socket, and
  // /dev/null (a character device; linked to, as a test must not replace the host's).
  const Kind kinds[] = {{"regular", "", true},
                        {"absent", "", true},
                        {"directory", "is a directory", false},
                        {"fifo", "is a FIFO (named pipe)", false},
                        {"socket", "is a socket", false},
                        {"device", "is a character device", false}};
  int socket_fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  ASSERT_GE(socket_fd, 0);
  for (const Kind& kind : kinds) {
    for (const bool through_link : {false, true}) {
      SCOPED_TRACE(kind.name + (through_link ? " behind a symlink" : ""));
      const std::string target = Path(kind.name + (through_link ? "-linked" : ""));
      if (kind.name == "regular") {
        std::ofstream(target) << "old";
      } else if (kind.name == "directory") {
        ASSERT_TRUE(std::filesystem::create_directory(target));
      } else if (kind.name == "fifo") {
        ASSERT_EQ(::mkfifo(target.c_str(), 0600), 0);
      } else if (kind.name == "socket" && !through_link) {
        sockaddr_un address{};
        address.sun_family = AF_UNIX;
        ASSERT_LT(target.size(), sizeof(address.sun_path));
        std::strncpy(address.sun_path, target.c_str(), sizeof(address.sun_path) - 1);
        ASSERT_EQ(::bind(socket_fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0)
            << std::strerror(errno);
      }
      std::string named = target;
      if (kind.name == "device" && !through_link) {
        named = Path("device-link");
        std::filesystem::create_symlink("/dev/null", named);
      } else if (kind.name == "device") {
        named = Path("device-link-link");
        std::filesystem::create_symlink(Path("device-link"), named);
      } else if (kind.name == "socket" && through_link) {
        named = Path("socket-link");
        std::filesystem::create_symlink(Path("socket"), named);
      } else if (through_link) {
        named = Path(kind.name + "-link");
        std::filesystem::create_symlink(target, named);
      }
      const std::string written_to =
          kind.name == "socket" && through_link ? Path("socket") : target;
      struct stat before {};
      const bool existed = ::stat(named.c_str(), &before) == 0;

      const absl::Status status = WriteOutputFile(*fs_, named, "new", 0600);
      if (kind.writable) {
        ASSERT_TRUE(status.ok()) << status;
        EXPECT_EQ(Slurp(written_to), "new");
      } else {
        EXPECT_TRUE(absl::IsFailedPrecondition(status)) << status;
        EXPECT_THAT(status.message(), HasSubstr(named));
        EXPECT_THAT(status.message(), HasSubstr(kind.said));
        struct stat after {};
        ASSERT_EQ(::stat(named.c_str(), &after), 0);
        EXPECT_EQ(after.st_ino, before.st_ino);
        EXPECT_EQ(after.st_mode, before.st_mode);
        EXPECT_EQ(after.st_rdev, before.st_rdev);
      }
      if (through_link) {
        EXPECT_TRUE(S_ISLNK(LinkStat(named).st_mode));
      }
      EXPECT_EQ(existed, kind.name != "absent");
      // No temp file left beside it.
      for (const auto& entry : std::filesystem::directory_iterator(dir_)) {
        EXPECT_THAT(entry.path().filename().string(), ::testing::Not(HasSubstr("handoff-tmp")));
      }
    }
  }
  ::close(socket_fd);
}

// The probe's case without touching the host's /dev/null: a device node of its own (root only).
TEST_F(OutputFileTest, ADeviceNodeIsRefusedAndLeftInPlace) {
  const std::string device = Path("null");
  if (::mknod(device.c_str(), S_IFCHR | 0666, makedev(1, 3)) != 0) {
    GTEST_SKIP() << "mknod: " << std::strerror(errno) << " (needs root)";
  }
  const absl::Status status = WriteOutputFile(*fs_, device, "new", 0600);
  EXPECT_TRUE(absl::IsFailedPrecondition(status)) << status;
  EXPECT_THAT(status.message(), HasSubstr(device + " is a character device, not a regular file"));
  const struct stat st = LinkStat(device);
  EXPECT_TRUE(S_ISCHR(st.st_mode));
  EXPECT_EQ(st.st_rdev, makedev(1, 3));
}

}  // namespace
}  // namespace handoff
