#include "common/system/process_table.h"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>  // program_invocation_name (glibc)
#include <csignal>
#include <memory>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/common/system/fake_proc_tree.h"

namespace handoff {
namespace {

using ::handoff::testing::FakeProcTree;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

std::vector<int> Pids(const std::vector<ProcessInfo>& processes) {
  std::vector<int> pids;
  pids.reserve(processes.size());
  for (const ProcessInfo& process : processes) pids.push_back(process.pid);
  return pids;
}

const ProcessInfo* Find(const std::vector<ProcessInfo>& processes, int pid) {
  auto it = std::find_if(processes.begin(), processes.end(),
                         [pid](const ProcessInfo& p) { return p.pid == pid; });
  return it == processes.end() ? nullptr : &*it;
}

TEST(ProcfsProcessTableTest, ReadsArgvAndStartTimeOfEveryProcess) {
  FakeProcTree proc;
  proc.AddProcess(1, {"/sbin/init"}, 5);
  proc.AddProcess(4242,
                  {"kube-controller-manager", "--bind-address=127.0.0.1", "--leader-elect=true"},
                  987654321, "kube-controller");
  proc.AddProcess(300, {"/usr/bin/kubelet", "--v=2"}, 77, "kubelet");

  absl::StatusOr<std::vector<ProcessInfo>> processes = NewProcfsProcessTable(proc.root())->List();
  ASSERT_TRUE(processes.ok()) << processes.status();
  EXPECT_THAT(Pids(*processes), ElementsAre(1, 300, 4242));  // sorted by pid
  const ProcessInfo* kcm = Find(*processes, 4242);
  ASSERT_NE(kcm, nullptr);
  EXPECT_THAT(kcm->argv, ElementsAre("kube-controller-manager", "--bind-address=127.0.0.1",
                                     "--leader-elect=true"));
  EXPECT_EQ(kcm->start_time, 987654321u);
  EXPECT_EQ(Find(*processes, 300)->start_time, 77u);
}

TEST(ProcfsProcessTableTest, CommWithSpacesAndParenthesesIsParsedFromTheLastParen) {
  FakeProcTree proc;
  // A process may name itself anything: "a) 1 2 (b" would shift every field when split naively.
  proc.AddProcess(10, {"weird"}, 123456, "a) 1 2 (b) )");
  proc.AddProcess(11, {"spaces"}, 42, "my proc name");

  absl::StatusOr<std::vector<ProcessInfo>> processes = NewProcfsProcessTable(proc.root())->List();
  ASSERT_TRUE(processes.ok()) << processes.status();
  ASSERT_THAT(Pids(*processes), ElementsAre(10, 11));
  EXPECT_EQ((*processes)[0].start_time, 123456u);
  EXPECT_EQ((*processes)[1].start_time, 42u);
}

TEST(ProcfsProcessTableTest, SkipsVanishedProcessesKernelThreadsAndOtherEntries) {
  FakeProcTree proc;
  proc.AddProcess(100, {"survivor"}, 9);
  // Exited between the listing and the read: the directory is there, its files are not.
  proc.WriteFile(200, "stat", FakeProcTree::StatLine(200, "gone", 1));
  proc.MakeDir("201");
  // Exited after cmdline was read: stat is missing.
  proc.WriteFile(202, "cmdline", std::string("half\0", 5));
  // A kernel thread: empty cmdline.
  proc.AddProcess(2, {}, 1, "kthreadd");
  // A stat line too short to hold field 22, and one without the comm's parentheses.
  proc.WriteFile(300, "cmdline", std::string("short\0", 6));
  proc.WriteFile(300, "stat", "300 (short) S 1 2 3\n");
  proc.WriteFile(301, "cmdline", std::string("noparen\0", 8));
  proc.WriteFile(301, "stat", "301 noparen S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20\n");
  // Not processes.
  proc.MakeDir("self");
  proc.MakeDir("sys");
  proc.MakeDir("12ab");
  proc.WriteFile(400, "unrelated", "");  // creates 400/ without cmdline

  absl::StatusOr<std::vector<ProcessInfo>> processes = NewProcfsProcessTable(proc.root())->List();
  ASSERT_TRUE(processes.ok()) << processes.status();
  EXPECT_THAT(Pids(*processes), ElementsAre(100));
}

TEST(ProcfsProcessTableTest, SplitsCmdlineAtNulsKeepingEmptyArguments) {
  FakeProcTree proc;
  proc.WriteFile(7, "cmdline", std::string("sh\0-c\0\0echo\0", 12));
  proc.WriteFile(7, "stat", FakeProcTree::StatLine(7, "sh", 70));
  // A process that rewrote its argv (setproctitle style) may leave no trailing NUL.
  proc.WriteFile(8, "cmdline", "nginx: worker process");
  proc.WriteFile(8, "stat", FakeProcTree::StatLine(8, "nginx", 80));

  absl::StatusOr<std::vector<ProcessInfo>> processes = NewProcfsProcessTable(proc.root())->List();
  ASSERT_TRUE(processes.ok()) << processes.status();
  ASSERT_EQ(processes->size(), 2u);
  EXPECT_THAT((*processes)[0].argv, ElementsAre("sh", "-c", "", "echo"));
  EXPECT_THAT((*processes)[1].argv, ElementsAre("nginx: worker process"));
}

TEST(ProcfsProcessTableTest, EmptyRootListsNothing) {
  FakeProcTree proc;
  absl::StatusOr<std::vector<ProcessInfo>> processes = NewProcfsProcessTable(proc.root())->List();
  ASSERT_TRUE(processes.ok()) << processes.status();
  EXPECT_THAT(*processes, IsEmpty());
}

TEST(ProcfsProcessTableTest, MissingRootIsAnErrorNamingIt) {
  FakeProcTree proc;
  const std::string missing = proc.root() + "/no-such-proc";
  absl::StatusOr<std::vector<ProcessInfo>> processes = NewProcfsProcessTable(missing)->List();
  ASSERT_FALSE(processes.ok());
  EXPECT_EQ(processes.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(processes.status().message()), HasSubstr(missing));
}

TEST(ProcfsProcessTableTest, RealProcListsThisTestProcess) {
  absl::StatusOr<std::vector<ProcessInfo>> processes = NewProcfsProcessTable("/proc")->List();
  ASSERT_TRUE(processes.ok()) << processes.status();
  const ProcessInfo* self = Find(*processes, static_cast<int>(::getpid()));
  ASSERT_NE(self, nullptr) << "pid " << ::getpid() << " not listed";
  ASSERT_FALSE(self->argv.empty());
  // glibc keeps argv[0] as program_invocation_name.
  EXPECT_EQ(self->argv[0], program_invocation_name);
  EXPECT_GT(self->start_time, 0u);

  // The same process keeps the same identity on the next look.
  absl::StatusOr<std::vector<ProcessInfo>> again = NewProcfsProcessTable("/proc")->List();
  ASSERT_TRUE(again.ok()) << again.status();
  const ProcessInfo* self_again = Find(*again, static_cast<int>(::getpid()));
  ASSERT_NE(self_again, nullptr);
  EXPECT_EQ(self_again->start_time, self->start_time);
}

// A child that waits for a signal; killed and reaped when the test ends.
class Child {
 public:
  Child() {
    pid_ = ::fork();
    if (pid_ == 0) {
      while (true) ::pause();
    }
  }
  ~Child() {
    if (pid_ > 0 && !reaped_) {
      ::kill(pid_, SIGKILL);
      Reap();
    }
  }
  pid_t pid() const { return pid_; }
  // Waits for it to end; returns the signal that ended it (0 when it exited).
  int Reap() {
    int status = 0;
    while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
    reaped_ = true;
    return WIFSIGNALED(status) ? WTERMSIG(status) : 0;
  }

 private:
  pid_t pid_ = -1;
  bool reaped_ = false;
};

TEST(PidfdSignallerTest, SignalsTheListedProcessOnlyWhileItIsStillThatProcess) {
  Child child;
  ASSERT_GT(child.pid(), 0);
  absl::StatusOr<std::vector<ProcessInfo>> listed = NewProcfsProcessTable("/proc")->List();
  ASSERT_TRUE(listed.ok()) << listed.status();
  const ProcessInfo* found = Find(*listed, child.pid());
  ASSERT_NE(found, nullptr);
  const ProcessInfo process = *found;
  std::unique_ptr<ProcessSignaller> signals = NewPidfdSignaller("/proc");

  // Another start time: the pid names another process now, which must not be signalled.
  ProcessInfo reused = process;
  reused.start_time += 1;
  absl::Status status = signals->Signal(reused, SIGTERM);
  EXPECT_EQ(status.code(), absl::StatusCode::kNotFound) << status;
  EXPECT_THAT(std::string(status.message()), HasSubstr("another process"));
  EXPECT_EQ(::waitpid(child.pid(), nullptr, WNOHANG), 0) << "the child was signalled";

  EXPECT_TRUE(signals->Signal(process, SIGTERM).ok());
  EXPECT_EQ(child.Reap(), SIGTERM);
  // Gone (and reaped): nothing to signal.
  status = signals->Signal(process, SIGKILL);
  EXPECT_EQ(status.code(), absl::StatusCode::kNotFound) << status;
  EXPECT_THAT(std::string(status.message()), HasSubstr("has exited"));
}

}  // namespace
}  // namespace handoff
