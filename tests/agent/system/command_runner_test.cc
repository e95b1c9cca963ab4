#include "agent/system/command_runner.h"

#include <chrono>
#include <csignal>
#include <string>

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

}  // namespace
}  // namespace handoff
