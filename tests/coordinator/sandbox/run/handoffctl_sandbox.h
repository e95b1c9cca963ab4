// Test helper: `handoffctl sandbox` run as the operator runs it, in a temp directory removed
// afterwards; its exit code and everything it printed.
#ifndef HANDOFF_TESTS_COORDINATOR_SANDBOX_RUN_HANDOFFCTL_SANDBOX_H_
#define HANDOFF_TESTS_COORDINATOR_SANDBOX_RUN_HANDOFFCTL_SANDBOX_H_

#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "coordinator/sandbox/process.h"
#include "gtest/gtest.h"

namespace handoff::sandbox::testing {

struct SandboxOutcome {
  int exit_code = -1;
  std::string output;  // stdout and stderr
};

// Runs `handoffctl` (a path) `sandbox --dir <temp> flags...`. A run still going after `timeout`
// is a test failure and is interrupted (SIGINT: the sandbox tears its processes down).
inline SandboxOutcome RunHandoffctlSandbox(const std::string& handoffctl,
                                           const std::vector<std::string>& flags,
                                           absl::Duration timeout) {
  std::string pattern = std::filesystem::path(::testing::TempDir()) / "sandbox-run-XXXXXX";
  EXPECT_NE(mkdtemp(pattern.data()), nullptr);
  std::vector<std::string> argv = {handoffctl, "sandbox", "--dir", pattern + "/sandbox"};
  argv.insert(argv.end(), flags.begin(), flags.end());
  const std::string log = pattern + "/output.log";
  absl::StatusOr<std::unique_ptr<Process>> process = Process::Spawn(argv, log);
  SandboxOutcome run;
  if (!process.ok()) {
    ADD_FAILURE() << process.status();
    return run;
  }
  int status = 0;
  if (!(*process)->WaitFor(timeout, &status)) {
    ADD_FAILURE() << "handoffctl sandbox did not finish within " << absl::FormatDuration(timeout);
    status = (*process)->Stop(SIGINT, absl::Seconds(60));
  }
  run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::ifstream in(log);
  std::stringstream text;
  text << in.rdbuf();
  run.output = text.str();
  std::filesystem::remove_all(pattern);
  return run;
}

}  // namespace handoff::sandbox::testing

#endif  // HANDOFF_TESTS_COORDINATOR_SANDBOX_RUN_HANDOFFCTL_SANDBOX_H_
