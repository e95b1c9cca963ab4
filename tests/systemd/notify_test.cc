// The daemons as systemd runs them (Type=notify): the real handoff-coordinator and handoff-agent
// binaries started with NOTIFY_SOCKET naming a datagram socket this test bound, as systemd's is,
// and WATCHDOG_USEC/WATCHDOG_PID as WatchdogSec= sets them. Each sends READY=1 with its status
// once ready, WATCHDOG=1 while it runs, and STOPPING=1 on SIGTERM.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::StartsWith;

std::string Testdata(const std::string& relative) {
  return std::string(HANDOFF_TESTDATA_DIR) + "/" + relative;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// A daemon in a child process, its stderr in `log`; SIGKILLed when destroyed if still running.
class Daemon {
 public:
  // `environment`: extra NAME=VALUE entries. WATCHDOG_PID is set to the child's own pid, as
  // systemd sets it, when `watchdog_usec` is not empty.
  Daemon(const std::vector<std::string>& argv, const std::vector<std::string>& environment,
         const std::string& watchdog_usec, const std::string& log) {
    std::vector<std::string> env = environment;
    if (!watchdog_usec.empty()) env.push_back("WATCHDOG_USEC=" + watchdog_usec);
    // Filled in by the child with its pid before exec (only async-signal-safe calls there).
    char watchdog_pid[32] = "WATCHDOG_PID=";
    std::vector<char*> args;
    for (const std::string& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
    args.push_back(nullptr);
    std::vector<char*> envp;
    for (const std::string& entry : env) envp.push_back(const_cast<char*>(entry.c_str()));
    if (!watchdog_usec.empty()) envp.push_back(watchdog_pid);
    envp.push_back(nullptr);
    pid_ = fork();
    if (pid_ == 0) {
      if (!watchdog_usec.empty()) {
        char digits[16];
        int n = 0;
        for (pid_t pid = getpid(); pid > 0; pid /= 10) {
          digits[n++] = static_cast<char>('0' + pid % 10);
        }
        char* end = watchdog_pid + sizeof("WATCHDOG_PID=") - 1;
        while (n > 0) *end++ = digits[--n];
        *end = '\0';
      }
      const int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
      if (fd >= 0) {
        dup2(fd, STDOUT_FILENO);
        dup2(fd, STDERR_FILENO);
      }
      sigset_t none;
      sigemptyset(&none);
      sigprocmask(SIG_SETMASK, &none, nullptr);
      execve(args[0], args.data(), envp.data());
      _exit(127);
    }
  }
  ~Daemon() {
    if (pid_ > 0) Stop(SIGKILL);
  }
  // Sends `signal` and returns the wait status.
  int Stop(int signal) {
    kill(pid_, signal);
    int status = 0;
    waitpid(pid_, &status, 0);
    pid_ = -1;
    return status;
  }

 private:
  pid_t pid_ = -1;
};

class NotifyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = fs::path(::testing::TempDir()) / "notify-XXXXXX";
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }
  void TearDown() override {
    for (int fd : sockets_) close(fd);
    if (HasFailure()) {
      for (const auto& entry : fs::directory_iterator(dir_)) {
        if (entry.path().extension() == ".log") {
          std::cerr << entry.path() << ":\n" << ReadFile(entry.path()) << "\n";
        }
      }
    }
    fs::remove_all(dir_);
  }

  // A datagram socket as systemd's notification socket; returns its path ("" on failure).
  std::string BindNotifySocket(const std::string& name, int* fd) {
    const std::string path = dir_ + "/" + name;
    *fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    if (*fd < 0 || path.size() >= sizeof(address.sun_path)) return "";
    sockets_.push_back(*fd);
    std::strncpy(address.sun_path, path.c_str(), sizeof(address.sun_path) - 1);
    if (bind(*fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0) return "";
    return path;
  }

  // The next notification on `fd`, waiting up to a minute ("" when none came).
  static std::string Receive(int fd) {
    pollfd ready = {fd, POLLIN, 0};
    if (poll(&ready, 1, 60'000) != 1) return "";
    char buffer[4096];
    const ssize_t n = recv(fd, buffer, sizeof(buffer), 0);
    return n <= 0 ? "" : std::string(buffer, static_cast<size_t>(n));
  }
  // Notifications on `fd` until one starts with `prefix` (that one), skipping the others; ""
  // when none came within a minute of the last.
  static std::string ReceiveUntil(int fd, const std::string& prefix) {
    while (true) {
      const std::string message = Receive(fd);
      if (message.empty() || message.rfind(prefix, 0) == 0) return message;
    }
  }

  std::vector<std::string> TlsFlags(const std::string& identity) {
    return {"--ca",   Testdata("handoff-tls/ca.crt"),
            "--cert", Testdata("handoff-tls/" + identity + ".crt"),
            "--key",  Testdata("handoff-tls/" + identity + ".key")};
  }

  std::string dir_;
  std::vector<int> sockets_;
};

TEST_F(NotifyTest, BothDaemonsTellSystemdWhenTheyAreReadyAliveAndStopping) {
  int coordinator_fd = -1;
  const std::string coordinator_socket = BindNotifySocket("coordinator.sock", &coordinator_fd);
  ASSERT_FALSE(coordinator_socket.empty()) << std::strerror(errno);
  std::vector<std::string> coordinator_argv = {HANDOFF_COORDINATOR_BIN,
                                               "--listen",
                                               "127.0.0.1:0",
                                               "--state-dir",
                                               dir_ + "/coordinator",
                                               "--nodes",
                                               "cp-1",
                                               "--no-cluster-checks"};
  for (const std::string& flag : TlsFlags("coordinator")) coordinator_argv.push_back(flag);
  // A watchdog of 2s: WATCHDOG=1 at least every second.
  Daemon coordinator(coordinator_argv, {"NOTIFY_SOCKET=" + coordinator_socket}, "2000000",
                     dir_ + "/coordinator.log");

  // Its first notification: nothing before it is ready.
  const std::string ready = Receive(coordinator_fd);
  const std::string serving = "READY=1\nSTATUS=serving on port ";
  ASSERT_THAT(ready, StartsWith(serving));
  EXPECT_THAT(ready, HasSubstr(" for nodes cp-1; rollout not started "));
  const std::string port =
      ready.substr(serving.size(), ready.find(' ', serving.size()) - serving.size());
  EXPECT_EQ(ReceiveUntil(coordinator_fd, "WATCHDOG=1"), "WATCHDOG=1");

  // The agent, on a copy of a kubeadm node, dials that coordinator.
  int agent_fd = -1;
  const std::string agent_socket = BindNotifySocket("agent.sock", &agent_fd);
  ASSERT_FALSE(agent_socket.empty()) << std::strerror(errno);
  const std::string root = dir_ + "/node";
  fs::copy(Testdata("nodes/kubeadm"), root, fs::copy_options::recursive);
  std::vector<std::string> agent_argv = {HANDOFF_AGENT_BIN, "run",  "--coordinator",
                                         "127.0.0.1:" + port, "--root", root,
                                         "--no-verify"};
  for (const std::string& flag : TlsFlags("cp-1")) agent_argv.push_back(flag);
  Daemon agent(agent_argv, {"NOTIFY_SOCKET=" + agent_socket}, "2000000", dir_ + "/agent.log");
  EXPECT_EQ(Receive(agent_fd),
            "STATUS=reading the command log; recovering an interrupted move, if any");
  EXPECT_EQ(Receive(agent_fd), "READY=1\nSTATUS=connected to the coordinator at 127.0.0.1:" +
                                   port + " as node cp-1 (no rollout yet)");
  EXPECT_EQ(ReceiveUntil(agent_fd, "WATCHDOG=1"), "WATCHDOG=1");

  const int agent_status = agent.Stop(SIGTERM);
  EXPECT_TRUE(WIFEXITED(agent_status) && WEXITSTATUS(agent_status) == 0) << agent_status;
  EXPECT_EQ(ReceiveUntil(agent_fd, "STOPPING=1"),
            "STOPPING=1\nSTATUS=stopping; accepting no more commands; a running one finishes "
            "first");
  const int coordinator_status = coordinator.Stop(SIGTERM);
  EXPECT_TRUE(WIFEXITED(coordinator_status) && WEXITSTATUS(coordinator_status) == 0)
      << coordinator_status;
  EXPECT_EQ(ReceiveUntil(coordinator_fd, "STOPPING=1"),
            "STOPPING=1\nSTATUS=stopping; running calls get 10s");
}

}  // namespace
