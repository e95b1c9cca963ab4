// Test helper: `handoffctl sandbox` run as the operator runs it, in a temp directory of the
// test's; its exit code, everything it printed, and (with HandoffctlSandbox) what the run left in
// its directory.
#ifndef HANDOFF_TESTS_REHEARSAL_SANDBOX_RUN_HANDOFFCTL_SANDBOX_H_
#define HANDOFF_TESTS_REHEARSAL_SANDBOX_RUN_HANDOFFCTL_SANDBOX_H_

#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstdint>
#include <deque>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <ostream>
#include <sstream>
#include <string>
#include <system_error>
#include <vector>

#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "rehearsal/sandbox/process.h"

namespace handoff::sandbox::testing {

struct SandboxOutcome {
  int64_t pid = 0;  // handoffctl's
  int exit_code = -1;
  std::string output;  // stdout and stderr
};

inline std::string ReadText(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// The last `lines` lines of the file at `path`, under a heading naming it, into `out`.
inline void PrintTail(const std::filesystem::path& path, size_t lines, std::ostream& out) {
  std::deque<std::string> kept;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) {
    kept.push_back(std::move(line));
    if (kept.size() > lines) kept.pop_front();
  }
  out << "== the last " << kept.size() << " lines of " << path.string() << " ==\n";
  for (const std::string& line : kept) out << line << "\n";
}

// What the run in `run_dir` (its sandbox in run_dir/sandbox) left, copied into
// `keep_root`/<run_dir's name>: the run's logs and every container's the kubelets kept, the
// coordinator's last status (logs/handoffctl-status.txt), the timeline, the monitor's records;
// nothing else (the nodes' file systems, the database). Into `out`, for a CI log that has nothing
// else: that status, the last lines of the coordinator's log and of each agent's, and where the
// rest is. Returns the directory it kept them in.
inline std::filesystem::path KeepFailedRun(const std::string& run_dir, const std::string& keep_root,
                                           int exit_code, std::ostream& out) {
  namespace fs = std::filesystem;
  const fs::path from(run_dir);
  const fs::path to = fs::path(keep_root) / from.filename();
  std::error_code walk;
  for (fs::recursive_directory_iterator
           it(from, fs::directory_options::skip_permission_denied, walk),
       end;
       !walk && it != end; it.increment(walk)) {
    std::error_code ignored;
    const std::string extension = it->path().extension().string();
    if (it->is_symlink(ignored) || !it->is_regular_file(ignored) ||
        (extension != ".log" && extension != ".txt" && extension != ".svg" &&
         extension != ".jsonl")) {
      continue;
    }
    const fs::path target = to / it->path().lexically_relative(from);
    fs::create_directories(target.parent_path(), ignored);
    fs::copy_file(it->path(), target, fs::copy_options::overwrite_existing, ignored);
  }
  const fs::path logs = to / "sandbox" / "logs";
  out << "handoffctl sandbox exited " << exit_code << "; what it left is kept in " << to.string()
      << "\n";
  const std::string status = ReadText((logs / "handoffctl-status.txt").string());
  out << "== the coordinator's last status (handoffctl status) ==\n"
      << (status.empty() ? std::string("(none: the coordinator was not running)\n") : status);
  PrintTail(logs / "coordinator.log", 60, out);
  std::vector<fs::path> agents;
  std::error_code listed;
  for (const auto& entry : fs::directory_iterator(logs, listed)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("agent-", 0) == 0 && entry.path().extension() == ".log") {
      agents.push_back(entry.path());
    }
  }
  std::sort(agents.begin(), agents.end());
  for (const fs::path& agent : agents) PrintTail(agent, 25, out);
  out << "timeline: " << (to / "sandbox" / "timeline.svg").string() << "\n";
  return to;
}

// Runs `handoffctl` (a path) `sandbox --keep --dir <temp>/sandbox flags...` in the constructor,
// so that the test can read what the run leaves behind; the directory goes with the object. A
// run still going after `timeout` is a test failure and is interrupted (SIGINT: the sandbox
// tears its processes down). A run that exits otherwise than the test expects
// (`expected_exit_code`) keeps its logs (KeepLogs).
class HandoffctlSandbox {
 public:
  HandoffctlSandbox(const std::string& handoffctl, const std::vector<std::string>& flags,
                    absl::Duration timeout, int expected_exit_code = 0) {
    dir_ = std::filesystem::path(::testing::TempDir()) / "sandbox-run-XXXXXX";
    EXPECT_NE(mkdtemp(dir_.data()), nullptr);
    std::vector<std::string> argv = {handoffctl, "sandbox", "--keep", "--dir", sandbox_dir()};
    argv.insert(argv.end(), flags.begin(), flags.end());
    absl::StatusOr<std::unique_ptr<Process>> process = Process::Spawn(argv, dir_ + "/output.log");
    if (!process.ok()) {
      ADD_FAILURE() << process.status();
      return;
    }
    run_.pid = (*process)->pid();
    int status = 0;
    if (!(*process)->WaitFor(timeout, &status)) {
      ADD_FAILURE() << "handoffctl sandbox did not finish within " << absl::FormatDuration(timeout);
      status = (*process)->Stop(SIGINT, absl::Seconds(60));
    }
    run_.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    run_.output = ReadText(dir_ + "/output.log");
    if (run_.exit_code != expected_exit_code) KeepLogs();
  }
  ~HandoffctlSandbox() {
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }
  HandoffctlSandbox(const HandoffctlSandbox&) = delete;
  HandoffctlSandbox& operator=(const HandoffctlSandbox&) = delete;

  const SandboxOutcome& run() const { return run_; }
  std::string sandbox_dir() const { return dir_ + "/sandbox"; }

 private:
  // A run that failed unexpectedly is kept under $HANDOFF_KEEP_FAILED_RUNS, when it is set.
  void KeepLogs() const {
    const char* keep = getenv("HANDOFF_KEEP_FAILED_RUNS");
    if (keep == nullptr || *keep == '\0') return;
    KeepFailedRun(dir_, keep, run_.exit_code, std::cerr);
  }

  std::string dir_;
  SandboxOutcome run_;
};

// The outcome only; the directory is removed before it returns.
inline SandboxOutcome RunHandoffctlSandbox(const std::string& handoffctl,
                                           const std::vector<std::string>& flags,
                                           absl::Duration timeout, int expected_exit_code = 0) {
  return HandoffctlSandbox(handoffctl, flags, timeout, expected_exit_code).run();
}

}  // namespace handoff::sandbox::testing

#endif  // HANDOFF_TESTS_REHEARSAL_SANDBOX_RUN_HANDOFFCTL_SANDBOX_H_
