#include "common/system/service_notifier.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>

#include "gtest/gtest.h"

namespace handoff {
namespace {

// systemd's side of sd_notify: an AF_UNIX datagram socket, named in $NOTIFY_SOCKET for the
// duration of the test.
class NotifySocketTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = std::filesystem::path(::testing::TempDir()) / "notify-XXXXXX";
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
    path_ = dir_ + "/notify.sock";
    fd_ = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    ASSERT_GE(fd_, 0);
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    ASSERT_LT(path_.size(), sizeof(address.sun_path));
    std::strncpy(address.sun_path, path_.c_str(), sizeof(address.sun_path) - 1);
    ASSERT_EQ(bind(fd_, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0)
        << std::strerror(errno);
    setenv("NOTIFY_SOCKET", path_.c_str(), 1);
  }
  void TearDown() override {
    unsetenv("NOTIFY_SOCKET");
    unsetenv("WATCHDOG_USEC");
    unsetenv("WATCHDOG_PID");
    if (fd_ >= 0) close(fd_);
    std::filesystem::remove_all(dir_);
  }
  // The next datagram (sd_notify has sent it before it returned).
  std::string Receive() {
    char buffer[4096];
    const ssize_t n = recv(fd_, buffer, sizeof(buffer), MSG_DONTWAIT);
    return n < 0 ? std::string("(nothing: ") + std::strerror(errno) + ")"
                 : std::string(buffer, static_cast<size_t>(n));
  }

  std::string dir_;
  std::string path_;
  int fd_ = -1;
};

TEST_F(NotifySocketTest, SendsEachNotificationAsOneDatagram) {
  std::unique_ptr<ServiceNotifier> notifier = NewSystemdNotifier();
  notifier->Notify("READY=1\nSTATUS=serving on port 7450");
  notifier->Notify("WATCHDOG=1");
  EXPECT_EQ(Receive(), "READY=1\nSTATUS=serving on port 7450");
  EXPECT_EQ(Receive(), "WATCHDOG=1");
  // Left for the daemon's later notifications.
  EXPECT_STREQ(std::getenv("NOTIFY_SOCKET"), path_.c_str());
}

TEST_F(NotifySocketTest, TheWatchdogIntervalIsHalfOfWatchdogSecForThisProcessOnly) {
  setenv("WATCHDOG_USEC", "30000000", 1);
  setenv("WATCHDOG_PID", std::to_string(getpid()).c_str(), 1);
  EXPECT_EQ(NewSystemdNotifier()->WatchdogInterval(), absl::Seconds(15));
  // Meant for another process (a parent that exec'd this one without clearing it).
  setenv("WATCHDOG_PID", std::to_string(getpid() + 1).c_str(), 1);
  EXPECT_EQ(NewSystemdNotifier()->WatchdogInterval(), absl::InfiniteDuration());
  unsetenv("WATCHDOG_USEC");
  unsetenv("WATCHDOG_PID");
  EXPECT_EQ(NewSystemdNotifier()->WatchdogInterval(), absl::InfiniteDuration());
}

TEST(SystemdNotifierTest, WithoutNotifySocketNothingIsSentAndNothingFails) {
  unsetenv("NOTIFY_SOCKET");
  std::unique_ptr<ServiceNotifier> notifier = NewSystemdNotifier();
  notifier->Notify("READY=1");
  EXPECT_EQ(notifier->WatchdogInterval(), absl::InfiniteDuration());
}

}  // namespace
}  // namespace handoff
