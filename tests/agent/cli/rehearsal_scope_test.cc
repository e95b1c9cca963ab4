// A rehearsal on a copy of a node's files (--root other than "/") reaches nothing of the machine
// it runs on: no command runs unless the operator names it (the default `systemctl restart
// kubelet` restarted the host's kubelet), and the process table read (and signalled) is the
// root's own /proc, never the host's (which held other workloads' kube-controller-managers).
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "agent/cli/agent_cli.h"
#include "agent/cli/host_scope.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/agent/cli/file_tree.h"
#include "tests/agent/cli/run_agent.h"

namespace handoff {
namespace {

namespace stdfs = std::filesystem;
using ::testing::AllOf;
using ::testing::Each;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;

// What the commands asked of the host: each command run and each process table opened.
struct HostLog {
  std::mutex mutex;
  std::vector<std::vector<std::string>> commands;
  std::vector<std::string> proc_roots;
};

class RecordingCommandRunner : public CommandRunner {
 public:
  explicit RecordingCommandRunner(std::shared_ptr<HostLog> log) : log_(std::move(log)) {}
  absl::Status Run(const std::vector<std::string>& argv, absl::Duration) override {
    std::lock_guard<std::mutex> lock(log_->mutex);
    log_->commands.push_back(argv);
    return absl::OkStatus();
  }

 private:
  std::shared_ptr<HostLog> log_;
};

class RehearsalScopeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/handoff-rehearsal-XXXXXX";
    ASSERT_NE(::mkdtemp(pattern), nullptr);
    temp_ = pattern;
    root_ = (temp_ / "node").string();
    stdfs::copy(stdfs::path(HANDOFF_TESTDATA_DIR) / "nodes" / "kubeadm", root_,
                stdfs::copy_options::recursive);
    environment_ = RealAgentEnvironment();
    std::shared_ptr<HostLog> log = log_;
    environment_.open_commands = [log]() -> std::unique_ptr<CommandRunner> {
      return std::make_unique<RecordingCommandRunner>(log);
    };
    environment_.open_processes = [log](const std::string& proc_root) {
      {
        std::lock_guard<std::mutex> lock(log->mutex);
        log->proc_roots.push_back(proc_root);
      }
      return NewProcfsProcessTable(proc_root);
    };
    // One step at a time: the node is prepared first, which leaves the kubelet's flags alone.
    Result prepared = Run({"apply", "--to", "prepared", "--root", root_, "--no-verify"});
    ASSERT_EQ(prepared.code, kExitOk) << prepared.out << prepared.err;
    ASSERT_THAT(log_->commands, IsEmpty());
    log_->proc_roots.clear();
  }
  void TearDown() override { stdfs::remove_all(temp_); }

  Result Run(std::vector<std::string> args) { return RunAgent(std::move(args), environment_); }

  // `apply --to migrated` on the copy: the move that gives the kubelet --cloud-provider=external.
  std::vector<std::string> ToMigrated(std::vector<std::string> more) const {
    std::vector<std::string> args = {
        "apply",
        "--to",
        "migrated",
        "--root",
        root_,
        "--settings",
        std::string(HANDOFF_TESTDATA_DIR) + "/nodes/kubeadm.settings.yaml"};
    args.insert(args.end(), more.begin(), more.end());
    return args;
  }
  std::string KubeletFlags() const {
    std::ifstream in(root_ + "/var/lib/kubelet/kubeadm-flags.env");
    return std::string(std::istreambuf_iterator<char>(in), {});
  }

  stdfs::path temp_;
  std::string root_;
  std::shared_ptr<HostLog> log_ = std::make_shared<HostLog>();
  AgentEnvironment environment_;
};

// The probe's case: the move changes the copy's kubeadm-flags.env, and the host's kubelet was
// restarted for it.
TEST_F(RehearsalScopeTest, AMoveOnACopyRunsNoCommandItWasNotGiven) {
  Result result = Run(ToMigrated({"--no-verify"}));
  ASSERT_EQ(result.code, kExitOk) << result.out << result.err;
  EXPECT_THAT(KubeletFlags(), HasSubstr("--cloud-provider=external"));
  EXPECT_THAT(log_->commands, IsEmpty());
  EXPECT_THAT(result.out, HasSubstr("note: the kubelet's flags file changed and no kubelet was "
                                    "restarted: no kubelet restart command was named "
                                    "(--kubelet-restart-command)"));
}

TEST_F(RehearsalScopeTest, ACommandTheOperatorNamesIsRun) {
  Result result = Run(ToMigrated({"--no-verify", "--kubelet-restart-command", "restart-it now"}));
  ASSERT_EQ(result.code, kExitOk) << result.out << result.err;
  EXPECT_THAT(log_->commands, ElementsAre(ElementsAre("restart-it", "now")));
  EXPECT_THAT(result.out, Not(HasSubstr("no kubelet was restarted")));
}

// Verification on a copy would read the host's processes (and could signal them, to stop a pod
// "left running"); it reads the copy's /proc, which a copy lacks, and says how to rehearse.
TEST_F(RehearsalScopeTest, VerifyingOnACopyReadsOnlyTheCopysProcessTable) {
  const auto before = Tree(temp_);
  Result result = Run(ToMigrated({"--timeout", "1s", "--kubelet-restart-command", "restart-it"}));
  EXPECT_EQ(result.code, kExitRefused) << result.out << result.err;
  EXPECT_THAT(result.err, AllOf(HasSubstr("the node's processes, and they cannot be read (opendir " +
                                          root_ + "/proc: No such file or directory)"),
                                HasSubstr("nothing was written"),
                                HasSubstr("pass --no-verify to only write the files")));
  EXPECT_THAT(log_->proc_roots, Each(root_ + "/proc"));
  EXPECT_THAT(log_->commands, IsEmpty());
  EXPECT_EQ(Tree(temp_), before);
}

// With a process table named but no restart command, a move that changes the kubelet's flags
// could never be verified: refused before anything is written, rather than rolled back.
TEST_F(RehearsalScopeTest, AVerifiedKubeletChangeWithoutARestartCommandIsRefusedUpFront) {
  stdfs::create_directory(temp_ / "proc");
  const auto before = Tree(temp_);
  Result result = Run(ToMigrated({"--proc-root", (temp_ / "proc").string(), "--timeout", "1s"}));
  EXPECT_EQ(result.code, kExitRefused) << result.out << result.err;
  EXPECT_THAT(result.err,
              AllOf(HasSubstr("/var/lib/kubelet/kubeadm-flags.env would change, and no kubelet "
                              "restart command was named"),
                    HasSubstr("nothing was written")));
  EXPECT_THAT(log_->proc_roots, Each((temp_ / "proc").string()));
  EXPECT_EQ(Tree(temp_), before);
}

// The daemon's controller sampler reads the same table: under --root, the root's /proc only.
TEST_F(RehearsalScopeTest, TheDaemonOnACopyIsScopedToIt) {
  const std::string tls = std::string(HANDOFF_TESTDATA_DIR) + "/handoff-tls/";
  Result result = Run({"run", "--coordinator", "127.0.0.1:1", "--ca", tls + "ca.crt", "--cert",
                       tls + "cp-1.crt", "--key", tls + "cp-1.key", "--root", root_});
  EXPECT_EQ(result.code, kExitRefused) << result.out << result.err;
  EXPECT_THAT(result.err, HasSubstr(root_ + "/proc cannot be read"));
  EXPECT_THAT(log_->proc_roots, ElementsAre(root_ + "/proc"));
  EXPECT_THAT(log_->commands, IsEmpty());
}

class ScopeToRootTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/handoff-scope-XXXXXX";
    ASSERT_NE(::mkdtemp(pattern), nullptr);
    temp_ = pattern;
    stdfs::create_directories(temp_ / "copy" / "etc");
  }
  void TearDown() override { stdfs::remove_all(temp_); }

  absl::StatusOr<HostScope> Scope(const std::string& root, const std::string& proc_root = "",
                                  const std::string& restart = "") {
    return ScopeToRoot(*NewPosixFileSystem("/"), *NewPosixFileSystem(root), root, proc_root,
                       restart);
  }

  stdfs::path temp_;
};

TEST_F(ScopeToRootTest, TheHostsOwnRootHowEverWrittenIsTheNode) {
  stdfs::create_directory_symlink("/", temp_ / "slash");
  for (const std::string& root : {std::string("/"), std::string("//"), temp_.string() + "/../..",
                                  (temp_ / "slash").string()}) {
    absl::StatusOr<HostScope> scope = Scope(root);
    ASSERT_TRUE(scope.ok()) << root << ": " << scope.status();
    EXPECT_TRUE(scope->on_node) << root;
    EXPECT_EQ(scope->proc_root, "/proc") << root;
    EXPECT_THAT(scope->kubelet_restart, ElementsAre("systemctl", "restart", "kubelet")) << root;
  }
}

TEST_F(ScopeToRootTest, ACopyGetsItsOwnProcAndNoCommand) {
  const std::string copy = (temp_ / "copy").string();
  absl::StatusOr<HostScope> scope = Scope(copy);
  ASSERT_TRUE(scope.ok()) << scope.status();
  EXPECT_FALSE(scope->on_node);
  EXPECT_EQ(scope->proc_root, copy + "/proc");
  EXPECT_THAT(scope->kubelet_restart, IsEmpty());
}

// A /proc in the copy that is a link leads, as in a chroot, inside the copy: an absolute target
// and one that climbs past the root alike.
TEST_F(ScopeToRootTest, AProcLinkInTheCopyStaysInsideIt) {
  const std::string copy = (temp_ / "copy").string();
  for (const std::string& target : {std::string("/run/proc"), std::string("../../../../run/proc")}) {
    stdfs::remove(temp_ / "copy" / "proc");
    stdfs::create_directory_symlink(target, temp_ / "copy" / "proc");
    absl::StatusOr<HostScope> scope = Scope(copy);
    ASSERT_TRUE(scope.ok()) << scope.status();
    EXPECT_EQ(scope->proc_root, copy + "/run/proc") << target;
  }
  // A link to "/proc" names itself in the copy: never the host's, refused with the reason.
  stdfs::remove(temp_ / "copy" / "proc");
  stdfs::create_directory_symlink("/proc", temp_ / "copy" / "proc");
  absl::StatusOr<HostScope> scope = Scope(copy);
  EXPECT_EQ(scope.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(scope.status().message()),
              HasSubstr("cannot resolve /proc: /proc: Too many levels of symbolic links"));
}

TEST_F(ScopeToRootTest, WhatTheOperatorNamesWins) {
  absl::StatusOr<HostScope> scope = Scope((temp_ / "copy").string(), "/run/p", "restart  it");
  ASSERT_TRUE(scope.ok()) << scope.status();
  EXPECT_EQ(scope->proc_root, "/run/p");
  EXPECT_THAT(scope->kubelet_restart, ElementsAre("restart", "it"));
  scope = Scope("/", "/run/p", "restart it");
  ASSERT_TRUE(scope.ok()) << scope.status();
  EXPECT_EQ(scope->proc_root, "/run/p");
  EXPECT_THAT(scope->kubelet_restart, ElementsAre("restart", "it"));
}

}  // namespace
}  // namespace handoff
