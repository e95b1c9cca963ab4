// handoff-sandbox-node as the kubeadm sandbox runs it: a node booted without services (as the
// load balancer's is), commands run in it, its control socket, and nothing of it left on the host
// once it is gone. Needs root (namespaces, mounts); skipped otherwise.
#include <poll.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/time/clock.h"
#include "common/base/strings.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "rehearsal/node/node_enter.h"
#include "rehearsal/node/node_init.h"
#include "rehearsal/node/node_spec.h"
#include "rehearsal/sandbox/process.h"

namespace handoff::sandbox::node {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

std::string ReadText(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

class NodeBootTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "needs root (namespaces and mounts)";
    char pattern[] = "/tmp/handoff-node-test-XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    dir_ = pattern;
    spec_.name = "node-under-test";
    spec_.dir = dir_ + "/node";
    spec_.log_dir = dir_;
    spec_.services = false;
    std::vector<std::string> argv = {HANDOFF_SANDBOX_NODE_BIN, "boot"};
    for (std::string& arg : BootArgs(spec_)) argv.push_back(std::move(arg));
    absl::StatusOr<std::unique_ptr<Process>> boot = Process::Spawn(argv, dir_ + "/boot.log");
    ASSERT_TRUE(boot.ok()) << boot.status();
    boot_ = *std::move(boot);
    // The ready file appears once the node's mounts are made; nothing signals it.
    const absl::Time deadline = absl::Now() + absl::Seconds(20);
    while (!std::filesystem::exists(ReadyFile(spec_)) && absl::Now() < deadline) {
      ASSERT_FALSE(boot_->WaitFor(absl::Milliseconds(20), nullptr)) << ReadText(dir_ + "/boot.log");
    }
    ASSERT_TRUE(std::filesystem::exists(ReadyFile(spec_))) << ReadText(dir_ + "/boot.log");
    init_ = std::stoi(ReadText(PidFile(spec_)));
  }
  void TearDown() override {
    boot_.reset();  // SIGKILL: the node's first process dies with it
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }

  // Runs `argv` on the node; its output and exit code.
  std::pair<int, std::string> Enter(const std::vector<std::string>& argv) {
    EnterSpec spec;
    spec.pid = init_;
    spec.argv = argv;
    std::vector<std::string> full = {HANDOFF_SANDBOX_NODE_BIN, "enter"};
    for (std::string& arg : EnterArgs(spec)) full.push_back(std::move(arg));
    const std::string log = dir_ + "/enter.log";
    std::filesystem::remove(log);
    absl::StatusOr<std::unique_ptr<Process>> run = Process::Spawn(full, log);
    if (!run.ok()) return {-1, std::string(run.status().message())};
    int status = 0;
    (*run)->WaitFor(absl::Seconds(20), &status);
    return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, ReadText(log)};
  }

  std::string dir_;
  BootSpec spec_;
  std::unique_ptr<Process> boot_;
  pid_t init_ = 0;
};

TEST_F(NodeBootTest, ACommandOnTheNodeSeesTheNodesNameMountsAndProcessesOnly) {
  auto [code, out] = Enter({"sh", "-c",
                            "hostname; ls /proc | grep -c '^[0-9]'; "
                            "grep -c ' /run ' /proc/self/mounts; "
                            "cat /proc/1/cmdline | tr '\\0' ' '"});
  EXPECT_EQ(code, 0) << out;
  std::vector<std::string_view> lines = StrSplit(out, "\n", true);
  ASSERT_GE(lines.size(), 4u) << out;
  EXPECT_EQ(lines[0], "node-under-test");
  // The node's first process, sh, and what sh runs: nothing of the host's.
  EXPECT_LE(std::stoi(std::string(lines[1])), 6) << out;
  EXPECT_EQ(lines[2], "1");  // its own /run
  EXPECT_THAT(std::string(lines[3]), HasSubstr("handoff-sandbox-node boot --name node-under-test"));
  // The host's hostname and mount table are untouched.
  char host[256] = {};
  gethostname(host, sizeof(host));
  EXPECT_NE(std::string(host), "node-under-test");
  EXPECT_THAT(ReadText("/proc/self/mounts"), Not(HasSubstr(spec_.dir)));
}

TEST_F(NodeBootTest, ACommandsExitCodeAndTheNodesEtcAreTheNodes) {
  EXPECT_EQ(Enter({"sh", "-c", "exit 7"}).first, 7);
  EXPECT_EQ(Enter({"no-such-program-anywhere"}).first, 127);
  // A file the node writes in /etc lands in its own etc/ on the host, not in the host's /etc.
  EXPECT_EQ(Enter({"sh", "-c", "echo mine > /etc/handoff-node-test"}).first, 0);
  EXPECT_EQ(ReadText(spec_.dir + "/etc/handoff-node-test"), "mine\n");
  EXPECT_FALSE(std::filesystem::exists("/etc/handoff-node-test"));
}

TEST_F(NodeBootTest, TheControlSocketAnswersThroughTheNodesRoot) {
  const std::string socket = StrCat("/proc/", init_, "/root", kControlSocket);
  absl::StatusOr<std::string> status = SendControl(socket, "status", absl::Seconds(5));
  ASSERT_TRUE(status.ok()) << status.status();
  EXPECT_EQ(*status, "kubelet - containerd -");
  absl::StatusOr<std::string> kill = SendControl(socket, "kill-kubelet", absl::Seconds(5));
  ASSERT_TRUE(kill.ok());
  EXPECT_EQ(*kill, "error the kubelet is not running");
  // systemctl stop on a stopped service succeeds; the kubelet stays stopped.
  absl::StatusOr<std::string> stop = SendControl(socket, "stop-kubelet", absl::Seconds(5));
  ASSERT_TRUE(stop.ok());
  EXPECT_EQ(*stop, "ok -");
  EXPECT_EQ(*SendControl(socket, "status", absl::Seconds(5)), "kubelet - containerd -");
  absl::StatusOr<std::string> unknown = SendControl(socket, "reboot", absl::Seconds(5));
  ASSERT_TRUE(unknown.ok());
  EXPECT_EQ(*unknown, "error unknown command \"reboot\"");
}

TEST_F(NodeBootTest, KillingTheBootProcessTakesTheWholeNodeWithIt) {
  // A process left running on the node, as a pod's would be.
  EnterSpec spec;
  spec.pid = init_;
  const std::string started = dir_ + "/sleeper-started";
  spec.argv = {"sh", "-c", StrCat("touch ", started, "; exec sleep 1000")};
  std::vector<std::string> argv = {HANDOFF_SANDBOX_NODE_BIN, "enter"};
  for (std::string& arg : EnterArgs(spec)) argv.push_back(std::move(arg));
  absl::StatusOr<std::unique_ptr<Process>> sleeper = Process::Spawn(argv, dir_ + "/sleep.log");
  ASSERT_TRUE(sleeper.ok());
  // The sleeper says it runs on the node with a file; nothing else tells.
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  while (!std::filesystem::exists(started) && absl::Now() < deadline) {
    ASSERT_FALSE((*sleeper)->WaitFor(absl::Milliseconds(20), nullptr))
        << ReadText(dir_ + "/sleep.log");
  }
  // Readable once the node's first process has exited.
  const int init_exited = static_cast<int>(syscall(SYS_pidfd_open, init_, 0));
  ASSERT_GE(init_exited, 0);
  boot_->Stop(SIGKILL, absl::ZeroDuration());
  int status = 0;
  // The node's PID namespace ends with its first process: the kernel kills the sleeper with it,
  // and `enter` reports that as the command's death by SIGKILL.
  ASSERT_TRUE((*sleeper)->WaitFor(absl::Seconds(10), &status));
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 128 + SIGKILL)
      << DescribeWaitStatus(status);
  // The node's first process has exited too (a zombie until something reaps it).
  pollfd exited{init_exited, POLLIN, 0};
  EXPECT_EQ(poll(&exited, 1, 10000), 1);
  close(init_exited);
}

}  // namespace
}  // namespace handoff::sandbox::node
