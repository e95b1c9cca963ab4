#include "rehearsal/sandbox/process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/base/strings.h"

extern char** environ;

namespace handoff::sandbox {

absl::StatusOr<std::unique_ptr<Process>> Process::Spawn(const std::vector<std::string>& argv,
                                                        const std::string& log) {
  if (argv.empty()) return absl::InvalidArgumentError("no command");
  std::vector<char*> args;
  for (const std::string& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
  args.push_back(nullptr);

  // The log is opened here, so that a log that cannot be written is reported as such rather
  // than as posix_spawn's failure to start the program.
  const int log_fd = open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (log_fd < 0) {
    return absl::InternalError(
        StrCat("cannot start ", argv[0], ": its log ", log, ": ", std::strerror(errno)));
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, log_fd, STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, log_fd, STDERR_FILENO);
  posix_spawnattr_t attributes;
  posix_spawnattr_init(&attributes);
  // The sandbox blocks SIGINT/SIGTERM on its threads to take them on one; its children must get
  // them as usual.
  sigset_t none;
  sigemptyset(&none);
  posix_spawnattr_setsigmask(&attributes, &none);
  sigset_t defaults;
  sigemptyset(&defaults);
  sigaddset(&defaults, SIGINT);
  sigaddset(&defaults, SIGTERM);
  sigaddset(&defaults, SIGPIPE);
  posix_spawnattr_setsigdefault(&attributes, &defaults);
  posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  pid_t pid = -1;
  int error = posix_spawn(&pid, args[0], &actions, &attributes, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attributes);
  close(log_fd);
  if (error != 0) {
    return absl::InternalError(StrCat("cannot start ", argv[0], ": ", std::strerror(error)));
  }
  return std::unique_ptr<Process>(new Process(pid));
}

Process::~Process() {
  if (pid_ > 0) Stop(SIGKILL, absl::ZeroDuration());
}

int Process::Wait() {
  if (pid_ <= 0) return -1;
  int status = 0;
  while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
  pid_ = -1;
  return status;
}

bool Process::WaitFor(absl::Duration timeout, int* status) {
  if (pid_ <= 0) return true;
  // A pidfd becomes readable when the process exits: no polling loop with sleeps.
  int pidfd = static_cast<int>(syscall(SYS_pidfd_open, pid_, 0));
  if (pidfd >= 0) {
    pollfd event{pidfd, POLLIN, 0};
    int ready = poll(&event, 1, static_cast<int>(absl::ToInt64Milliseconds(timeout)));
    close(pidfd);
    if (ready <= 0) return false;
  }
  int result = Wait();
  if (status != nullptr) *status = result;
  return true;
}

int Process::Stop(int signal, absl::Duration grace) {
  if (pid_ <= 0) return -1;
  kill(pid_, signal);
  int status = 0;
  if (signal != SIGKILL && !WaitFor(grace, &status)) {
    kill(pid_, SIGKILL);
    return Wait();
  }
  return signal == SIGKILL ? Wait() : status;
}

std::string DescribeWaitStatus(int status) {
  if (WIFEXITED(status)) return StrCat("exit ", WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return StrCat("signal ", WTERMSIG(status));
  return StrCat("status ", status);
}

}  // namespace handoff::sandbox
