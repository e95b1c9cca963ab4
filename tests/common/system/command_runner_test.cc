#include "common/system/command_runner.h"

#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "common/base/strings.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace handoff {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;

std::string Message(const absl::Status& status) { return std::string(status.message()); }

TEST(ProcessCommandRunnerTest, ZeroExitIsOk) {
  EXPECT_TRUE(NewProcessCommandRunner()->Run({"true"}, absl::Seconds(30)).ok());
}

TEST(ProcessCommandRunnerTest, NonZeroExitNamesCommandAndStatus) {
  absl::Status status = NewProcessCommandRunner()->Run({"false"}, absl::Seconds(30));
  EXPECT_EQ(status.code(), absl::StatusCode::kInternal);
  EXPECT_THAT(Message(status), HasSubstr("`false` exited with status 1"));
}

TEST(ProcessCommandRunnerTest, ErrorCarriesStdoutAndStderr) {
  absl::Status status = NewProcessCommandRunner()->Run(
      {"sh", "-c", "echo out; echo err >&2; exit 3"}, absl::Seconds(30));
  EXPECT_EQ(status.code(), absl::StatusCode::kInternal);
  EXPECT_THAT(Message(status),
              AllOf(HasSubstr("`sh -c 'echo out; echo err >&2; exit 3'`"),
                    HasSubstr("exited with status 3"), HasSubstr("\n  out"), HasSubstr("\n  err")));
}

TEST(ProcessCommandRunnerTest, KeepsOnlyTheLastTwentyLines) {
  absl::Status status = NewProcessCommandRunner()->Run(
      {"sh", "-c", "i=1; while [ $i -le 30 ]; do echo line$i; i=$((i+1)); done; exit 1"},
      absl::Seconds(30));
  EXPECT_THAT(Message(status), AllOf(HasSubstr("last 20 lines of output"), HasSubstr("line11\n"),
                                     HasSubstr("line30"), Not(HasSubstr("line10\n"))));
}

TEST(ProcessCommandRunnerTest, MissingBinaryIsNotFound) {
  absl::Status status =
      NewProcessCommandRunner()->Run({"handoff-no-such-binary", "--flag"}, absl::Seconds(30));
  EXPECT_EQ(status.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(Message(status), AllOf(HasSubstr("cannot run `handoff-no-such-binary --flag`"),
                                     HasSubstr("No such file or directory")));
}

TEST(ProcessCommandRunnerTest, EmptyCommandIsInvalid) {
  EXPECT_EQ(NewProcessCommandRunner()->Run({}, absl::Seconds(1)).code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(ProcessCommandRunnerTest, OutputFeedsTheInputAndReturnsOnlyStandardOutput) {
  absl::StatusOr<std::string> answer = NewProcessCommandRunner()->Output(
      {"sh", "-c", "echo progress >&2; tr a-z A-Z"}, "{\"image\": \"x\"}\n", absl::Seconds(30));
  ASSERT_TRUE(answer.ok()) << answer.status();
  EXPECT_EQ(*answer, "{\"IMAGE\": \"X\"}\n");
}

TEST(ProcessCommandRunnerTest, OutputOfAFailedCommandIsItsErrorWithStandardError) {
  absl::StatusOr<std::string> answer = NewProcessCommandRunner()->Output(
      {"sh", "-c", "cat >/dev/null; echo answer-$((1+1)); echo no credentials >&2; exit 1"},
      "request", absl::Seconds(30));
  ASSERT_FALSE(answer.ok());
  EXPECT_EQ(answer.status().code(), absl::StatusCode::kInternal);
  EXPECT_THAT(Message(answer.status()),
              AllOf(HasSubstr("exited with status 1"), HasSubstr("\n  no credentials"),
                    Not(HasSubstr("answer-2"))));
}

TEST(ProcessCommandRunnerTest, OutputWithoutInputReadsEndOfFile) {
  absl::StatusOr<std::string> answer =
      NewProcessCommandRunner()->Output({"sh", "-c", "wc -c"}, "", absl::Seconds(30));
  ASSERT_TRUE(answer.ok()) << answer.status();
  EXPECT_EQ(std::string(StripWhitespace(*answer)), "0");
}

TEST(ProcessCommandRunnerTest, OutputRefusesAnInputLargerThanAPipe) {
  absl::StatusOr<std::string> answer = NewProcessCommandRunner()->Output(
      {"cat"}, std::string(kMaxCommandInput + 1, 'x'), absl::Seconds(30));
  EXPECT_EQ(answer.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(Message(answer.status()), HasSubstr("more than the 65536"));
}

TEST(ProcessCommandRunnerTest, OutputTakesAnInputAsLargeAsAPipe) {
  // cat writes the 64 KiB back while the runner reads it: neither side waits on the other.
  absl::StatusOr<std::string> answer = NewProcessCommandRunner()->Output(
      {"cat"}, std::string(kMaxCommandInput, 'x'), absl::Seconds(30));
  ASSERT_TRUE(answer.ok()) << answer.status();
  EXPECT_EQ(*answer, std::string(kMaxCommandInput, 'x'));
}

TEST(ProcessCommandRunnerTest, TimeoutKillsTheCommandPromptly) {
  const auto start = std::chrono::steady_clock::now();
  absl::Status status = NewProcessCommandRunner()->Run({"sleep", "30"}, absl::Milliseconds(200));
  const auto elapsed = std::chrono::steady_clock::now() - start;
  EXPECT_EQ(status.code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_THAT(Message(status),
              AllOf(HasSubstr("`sleep 30` did not finish within 200ms and was killed")));
  EXPECT_LT(elapsed, std::chrono::seconds(10));
}

TEST(ProcessCommandRunnerTest, TimeoutKeepsOutputSoFar) {
  absl::Status status = NewProcessCommandRunner()->Run({"sh", "-c", "echo started; exec sleep 30"},
                                                       absl::Milliseconds(200));
  EXPECT_EQ(status.code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_THAT(Message(status), HasSubstr("\n  started"));
}

TEST(ProcessCommandRunnerTest, DeathBySignalIsReported) {
  absl::Status status =
      NewProcessCommandRunner()->Run({"sh", "-c", "kill -TERM $$"}, absl::Seconds(30));
  EXPECT_EQ(status.code(), absl::StatusCode::kInternal);
  EXPECT_THAT(Message(status), HasSubstr("killed by signal 15"));
}

// A daemon blocks signals to take them with sigwait; the command must not inherit that mask, or
// it could not be stopped.
TEST(ProcessCommandRunnerTest, CommandDoesNotInheritBlockedSignals) {
  sigset_t block, previous;
  sigemptyset(&block);
  sigaddset(&block, SIGTERM);
  ASSERT_EQ(pthread_sigmask(SIG_BLOCK, &block, &previous), 0);
  absl::Status status =
      NewProcessCommandRunner()->Run({"sh", "-c", "kill -TERM $$; exit 0"}, absl::Seconds(30));
  ASSERT_EQ(pthread_sigmask(SIG_SETMASK, &previous, nullptr), 0);
  EXPECT_THAT(Message(status), HasSubstr("killed by signal 15"));
}

// The command exits but leaves a background child holding its output pipe: the runner reports
// the command's exit instead of waiting for that child.
TEST(ProcessCommandRunnerTest, ReturnsWhenTheCommandExitsEvenIfAChildHoldsTheOutput) {
  const auto start = std::chrono::steady_clock::now();
  absl::Status status = NewProcessCommandRunner()->Run(
      {"sh", "-c", "sleep 30 & echo child=$!; exit 4"}, absl::Seconds(20));
  const auto elapsed = std::chrono::steady_clock::now() - start;
  EXPECT_EQ(status.code(), absl::StatusCode::kInternal) << status;
  EXPECT_THAT(Message(status), AllOf(HasSubstr("exited with status 4"), HasSubstr("child=")));
  EXPECT_LT(elapsed, std::chrono::seconds(10));
  // Do not leave the background sleep behind.
  const std::string message = Message(status);
  const size_t at = message.rfind("child=");
  if (at != std::string::npos) {
    const pid_t child = static_cast<pid_t>(std::stol(message.substr(at + 6)));
    if (child > 0) ::kill(child, SIGKILL);
  }
}

// Whether `pid` is gone: no such process, or a zombie nobody has reaped yet (in a container the
// reaper of orphans may be slow, or absent).
bool ProcessIsGone(pid_t pid) {
  if (::kill(pid, 0) != 0) return errno == ESRCH;
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return true;
  const size_t paren = line.rfind(')');
  return paren != std::string::npos && paren + 2 < line.size() &&
         (line[paren + 2] == 'Z' || line[paren + 2] == 'X');
}

// Polls `done` until it holds or `limit` passes; the result of the last look.
template <typename Predicate>
bool AwaitWithin(std::chrono::milliseconds limit, Predicate done) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (!done()) {
    if (std::chrono::steady_clock::now() >= deadline) return done();
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

// The pid a command wrote to `path`, once it is there.
std::optional<pid_t> AwaitPidFile(const std::string& path) {
  std::optional<pid_t> pid;
  AwaitWithin(std::chrono::seconds(20), [&] {
    std::ifstream in(path);
    long value = 0;
    if (in >> value && value > 0) pid = static_cast<pid_t>(value);
    return pid.has_value();
  });
  return pid;
}

class OrphanTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/handoff-runner-XXXXXX";
    ASSERT_NE(::mkdtemp(pattern), nullptr);
    dir_ = pattern;
  }
  void TearDown() override {
    for (pid_t pid : cleanup_) ::kill(pid, SIGKILL);
    std::filesystem::remove_all(dir_);
  }
  // A command whose shell starts a long sleep in the background, writes the sleep's pid, and
  // waits for it: the sleep is a grandchild of the runner's child.
  std::vector<std::string> SleepingCommand(const std::string& pid_file) {
    return {"sh", "-c", "sleep 1000 & echo $! > " + pid_file + ".tmp && mv " + pid_file +
                            ".tmp " + pid_file + "; wait"};
  }

  std::string dir_;
  std::vector<pid_t> cleanup_;
};

// The agent killed mid-command (kill -9, an OOM kill): what the command started dies with it.
TEST_F(OrphanTest, ACommandStillRunningDiesWithTheAgent) {
  const std::string pid_file = dir_ + "/sleep.pid";
  const std::vector<std::string> command = SleepingCommand(pid_file);
  // The "agent": a process of its own that runs the command, so that the test can kill it.
  const pid_t agent = ::fork();
  ASSERT_GE(agent, 0);
  if (agent == 0) {
    absl::Status status = NewProcessCommandRunner()->Run(command, absl::Hours(1));
    ::_exit(status.ok() ? 0 : 1);
  }
  std::optional<pid_t> sleeper = AwaitPidFile(pid_file);
  ASSERT_TRUE(sleeper.has_value()) << "the command never wrote " << pid_file;
  cleanup_.push_back(*sleeper);
  ASSERT_FALSE(ProcessIsGone(*sleeper));

  ASSERT_EQ(::kill(agent, SIGKILL), 0);
  int status = 0;
  ASSERT_EQ(::waitpid(agent, &status, 0), agent);
  EXPECT_TRUE(AwaitWithin(std::chrono::seconds(20), [&] { return ProcessIsGone(*sleeper); }))
      << "the command's child " << *sleeper << " outlived the agent";
}

TEST_F(OrphanTest, ATimeoutKillsEverythingTheCommandStarted) {
  const std::string pid_file = dir_ + "/sleep.pid";
  // Long enough for the shell to write the pid file on a loaded machine.
  absl::Status status = NewProcessCommandRunner()->Run(SleepingCommand(pid_file), absl::Seconds(3));
  EXPECT_EQ(status.code(), absl::StatusCode::kDeadlineExceeded) << status;
  std::optional<pid_t> sleeper = AwaitPidFile(pid_file);
  ASSERT_TRUE(sleeper.has_value());
  cleanup_.push_back(*sleeper);
  EXPECT_TRUE(AwaitWithin(std::chrono::seconds(20), [&] { return ProcessIsGone(*sleeper); }));
}

// A signal sent to the supervisor by someone other than the agent's death (a terminal's ^C, a
// service manager) goes to the command, which decides; the exit is reported as the command's.
TEST_F(OrphanTest, ASignalToTheSupervisorReachesTheCommand) {
  const std::string pid_file = dir_ + "/shell.pid";
  std::thread signaller([&] {
    // The command's shell writes its own pid; its parent is the supervisor.
    std::optional<pid_t> shell = AwaitPidFile(pid_file);
    if (!shell) return;
    std::ifstream stat("/proc/" + std::to_string(*shell) + "/stat");
    std::string line;
    std::getline(stat, line);
    const size_t paren = line.rfind(')');
    if (paren == std::string::npos) return;
    std::istringstream fields(line.substr(paren + 2));
    char state;
    pid_t parent = 0;
    fields >> state >> parent;
    if (parent > 0) ::kill(parent, SIGTERM);
  });
  absl::Status status = NewProcessCommandRunner()->Run(
      {"sh", "-c", "echo $$ > " + pid_file + ".tmp && mv " + pid_file + ".tmp " + pid_file +
                       "; exec sleep 1000"},
      absl::Seconds(60));
  signaller.join();
  EXPECT_THAT(Message(status), HasSubstr("killed by signal 15"));
}

}  // namespace
}  // namespace handoff
