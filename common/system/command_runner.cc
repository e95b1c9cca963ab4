#include "common/system/command_runner.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <optional>
#include <utility>

#include "common/base/strings.h"
#include "common/base/unique_fd.h"

namespace handoff {
namespace {

// How much output is kept (the tail) and how many of its lines go into an error.
constexpr size_t kOutputTailBytes = size_t{64} * 1024;
constexpr size_t kOutputLines = 20;


absl::Status ErrnoError(int error, std::string_view what) {
  return absl::Status(absl::ErrnoToStatusCode(error), StrCat(what, ": ", std::strerror(error)));
}

absl::Status MakePipe(UniqueFd& read_end, UniqueFd& write_end) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return ErrnoError(errno, "pipe2");
  read_end.Reset(fds[0]);
  write_end.Reset(fds[1]);
  return absl::OkStatus();
}

// For messages only: the command line as a shell user would type it.
std::string QuoteForDisplay(const std::vector<std::string>& argv) {
  std::vector<std::string> quoted;
  for (const std::string& item : argv) {
    const bool plain = !item.empty() && std::all_of(item.begin(), item.end(), [](char c) {
      return std::isalnum(static_cast<unsigned char>(c)) || std::strchr("-_./=:,+@%", c);
    });
    if (plain) {
      quoted.push_back(item);
      continue;
    }
    std::string q = "'";
    for (char c : item) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
    quoted.push_back(q + "'");
  }
  return StrCat("`", StrJoin(quoted, " "), "`");
}

// The last kOutputLines lines of `output`, each indented, or "" when there was none.
std::string OutputTail(const std::string& output) {
  std::vector<std::string_view> lines = StrSplit(output, "\n");
  while (!lines.empty() && StripWhitespace(lines.back()).empty()) lines.pop_back();
  if (lines.empty()) return "; no output";
  const size_t first = lines.size() > kOutputLines ? lines.size() - kOutputLines : 0;
  std::string tail = StrCat("; last ", lines.size() - first, " lines of output:");
  for (size_t i = first; i < lines.size(); ++i) StrAppend(&tail, "\n  ", lines[i]);
  return tail;
}

// pidfd_open(2) (Linux 5.3): lets poll() see the child's exit next to its output, so a command
// that exits while a grandchild it left behind still holds the pipe is not waited on until EOF.
// -1 when the kernel (or a seccomp filter) refuses; then exit is noticed at EOF.
int OpenPidFd(pid_t pid) {
#ifdef SYS_pidfd_open
  return static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
#else
  (void)pid;
  return -1;
#endif
}

// What the supervisor needs, prepared before fork (after it, in a child of a threaded process,
// only async-signal-safe calls are allowed: another thread may have held the allocator's lock).
struct Supervision {
  char* const* exec_argv;
  int dev_null;
  int input;   // the command's standard input: dev_null, or a pipe holding Output's input
  int output;  // its standard error, and its standard output unless `answer` is set
  int answer;  // -1, or where its standard output goes (Output)
  int exec_error;
  sigset_t no_signals;
  sigset_t awaited;  // SIGCHLD, and the signals that ask it to stop
  pid_t agent;
};

// Ends this process as the command ended: the same exit code, or death by the same signal.
[[noreturn]] void ExitAs(int status) {
  if (WIFSIGNALED(status)) {
    const int death = WTERMSIG(status);
    // The command dumped its core already if it was to; the supervisor's would only mislead.
    const rlimit no_core = {0, 0};
    ::setrlimit(RLIMIT_CORE, &no_core);
    ::signal(death, SIG_DFL);
    sigset_t only;
    sigemptyset(&only);
    sigaddset(&only, death);
    ::sigprocmask(SIG_UNBLOCK, &only, nullptr);
    ::kill(::getpid(), death);
    ::_exit(128 + death);
  }
  ::_exit(WIFEXITED(status) ? WEXITSTATUS(status) : 127);
}

// The child of fork: the leader of a new process group that runs the command as its own child
// and stays to watch the agent. PR_SET_PDEATHSIG alone would kill only this process, and a
// shell's children (or a restart script's) would outlive the agent; so the parent's death
// signal comes here, and the supervisor kills the whole group, the command and whatever it
// started. Only async-signal-safe calls (and execvp, as before the supervisor).
[[noreturn]] void Supervise(const Supervision& supervision) {
  // Its own process group, so a timeout, or the agent's death, kills whatever the command
  // started too.
  ::setpgid(0, 0);
  // Blocked before the death signal is asked for, so that it waits in sigwaitinfo; SIGCHLD back
  // to its default, as a parent that ignored it would have children reaped unseen.
  ::sigprocmask(SIG_SETMASK, &supervision.awaited, nullptr);
  ::signal(SIGCHLD, SIG_DFL);
  // Sent when the thread that forked dies: that thread waits in Run until the command is over,
  // so this comes only when the agent dies (or is killed).
  ::prctl(PR_SET_PDEATHSIG, SIGTERM);
  // The agent may have died between fork and prctl; then no signal would ever come.
  if (::getppid() != supervision.agent) ::_exit(128 + SIGKILL);

  const pid_t command = ::fork();
  if (command < 0) {
    const int error = errno;
    (void)!::write(supervision.exec_error, &error, sizeof(error));
    ::_exit(127);
  }
  if (command == 0) {
    // A daemon blocks signals to take them on one thread (sigwait); the command must not
    // inherit that mask, nor an ignored SIGPIPE.
    ::sigprocmask(SIG_SETMASK, &supervision.no_signals, nullptr);
    ::signal(SIGPIPE, SIG_DFL);
    ::dup2(supervision.input, STDIN_FILENO);
    ::dup2(supervision.answer >= 0 ? supervision.answer : supervision.output, STDOUT_FILENO);
    ::dup2(supervision.output, STDERR_FILENO);
    ::execvp(supervision.exec_argv[0], supervision.exec_argv);
    int error = errno;
    (void)!::write(supervision.exec_error, &error, sizeof(error));
    ::_exit(127);
  }
  // The agent sees the end of its output and of the exec error pipe only once the command's
  // copies are the last ones.
  ::close(supervision.output);
  if (supervision.answer >= 0) ::close(supervision.answer);
  ::close(supervision.input);
  ::close(supervision.exec_error);
  ::close(supervision.dev_null);

  while (true) {
    siginfo_t info;
    const int received = ::sigwaitinfo(&supervision.awaited, &info);
    if (received < 0) continue;
    if (received == SIGCHLD) {
      int status = 0;
      if (::waitpid(command, &status, WNOHANG) == command) ExitAs(status);
      continue;
    }
    if (::getppid() != supervision.agent) {
      // The agent is gone (the death signal): so is everything it started, this included.
      ::kill(0, SIGKILL);
      ::_exit(128 + SIGKILL);
    }
    // Someone else asked the supervisor to stop (a terminal, a service manager's stop): the
    // command decides what that means, as it would have without a supervisor.
    ::kill(command, received);
  }
}

class ProcessCommandRunner : public CommandRunner {
 public:
  absl::Status Run(const std::vector<std::string>& argv, absl::Duration timeout) override {
    return Execute(argv, std::nullopt, timeout, nullptr);
  }

  absl::StatusOr<std::string> Output(const std::vector<std::string>& argv, std::string_view input,
                                     absl::Duration timeout) override {
    std::string answer;
    absl::Status status = Execute(argv, input, timeout, &answer);
    if (!status.ok()) return status;
    return answer;
  }

 private:
  enum class ReadResult { kData, kNothing, kEnd };

  // Runs `argv`: with `input` (nullopt: /dev/null) on its standard input, and its standard output
  // into `answer` when that is set (else with its standard error, into the error's tail).
  absl::Status Execute(const std::vector<std::string>& argv, std::optional<std::string_view> input,
                       absl::Duration timeout, std::string* answer) {
    if (argv.empty()) return absl::InvalidArgumentError("cannot run an empty command");
    const std::string command = QuoteForDisplay(argv);
    if (input && input->size() > kMaxCommandInput) {
      return absl::InvalidArgumentError(StrCat(command, ": its input is ", input->size(),
                                               " bytes, more than the ", kMaxCommandInput,
                                               " a command is given"));
    }
    // Bounded so that an infinite timeout does not overflow the time point.
    const auto deadline = std::chrono::steady_clock::now() +
                          absl::ToChronoMilliseconds(
                              std::clamp(timeout, absl::ZeroDuration(), absl::Hours(24 * 365)));

    // Everything the child needs is prepared before fork: after fork only async-signal-safe
    // calls are allowed (other threads may hold the allocator's locks).
    std::vector<char*> exec_argv;
    exec_argv.reserve(argv.size() + 1);
    for (const std::string& item : argv) exec_argv.push_back(const_cast<char*>(item.c_str()));
    exec_argv.push_back(nullptr);
    sigset_t no_signals;
    sigemptyset(&no_signals);

    UniqueFd dev_null(::open("/dev/null", O_RDONLY | O_CLOEXEC));
    if (!dev_null.valid()) return ErrnoError(errno, StrCat(command, ": open /dev/null"));
    UniqueFd output_read, output_write, exec_error_read, exec_error_write;
    if (absl::Status s = MakePipe(output_read, output_write); !s.ok()) return s;
    // Carries execvp's errno to the parent; closed by a successful exec (O_CLOEXEC).
    if (absl::Status s = MakePipe(exec_error_read, exec_error_write); !s.ok()) return s;
    // The input is in its pipe before the command starts (it fits: kMaxCommandInput), and the
    // write end closed, so the command reads it and then end of file; nothing here blocks on it.
    UniqueFd input_read, input_write, answer_read, answer_write;
    if (input) {
      if (absl::Status s = MakePipe(input_read, input_write); !s.ok()) return s;
      size_t written = 0;
      while (written < input->size()) {
        const ssize_t n =
            ::write(input_write.get(), input->data() + written, input->size() - written);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return ErrnoError(errno, StrCat(command, ": writing its input"));
        written += static_cast<size_t>(n);
      }
      input_write.Reset();
    }
    if (answer) {
      if (absl::Status s = MakePipe(answer_read, answer_write); !s.ok()) return s;
    }

    Supervision supervision;
    supervision.exec_argv = exec_argv.data();
    supervision.dev_null = dev_null.get();
    supervision.input = input ? input_read.get() : dev_null.get();
    supervision.output = output_write.get();
    supervision.answer = answer ? answer_write.get() : -1;
    supervision.exec_error = exec_error_write.get();
    supervision.no_signals = no_signals;
    sigemptyset(&supervision.awaited);
    for (int awaited : {SIGCHLD, SIGTERM, SIGINT, SIGHUP}) sigaddset(&supervision.awaited, awaited);
    // Taken before fork: the child compares it with getppid() to learn whether the agent died
    // before it asked to be told.
    supervision.agent = ::getpid();

    const pid_t pid = ::fork();
    if (pid < 0) return ErrnoError(errno, StrCat(command, ": fork"));
    if (pid == 0) Supervise(supervision);
    // Also in the parent: kill(-pid) must work even before the child has run setpgid.
    ::setpgid(pid, pid);
    output_write.Reset();
    answer_write.Reset();
    input_read.Reset();
    exec_error_write.Reset();
    dev_null.Reset();

    int exec_errno = 0;
    ssize_t n;
    do {
      n = ::read(exec_error_read.get(), &exec_errno, sizeof(exec_errno));
    } while (n < 0 && errno == EINTR);
    if (n == static_cast<ssize_t>(sizeof(exec_errno))) {
      Reap(pid);
      return absl::Status(
          exec_errno == ENOENT ? absl::StatusCode::kNotFound : absl::ErrnoToStatusCode(exec_errno),
          StrCat("cannot run ", command, ": ", std::strerror(exec_errno)));
    }

    UniqueFd pid_fd(OpenPidFd(pid));
    std::string output;
    std::optional<int> wait_status;
    bool output_open = true;
    bool answer_open = answer != nullptr;
    while (!wait_status) {
      if (!output_open && !answer_open && !pid_fd.valid()) {
        // Without a pidfd, EOF on the output is the sign the command is ending.
        wait_status = Reap(pid);
        break;
      }
      const auto now = std::chrono::steady_clock::now();
      if (now >= deadline) {
        // SIGKILL to the whole group: a command past its deadline gets no chance to linger, nor
        // do its children. Reaped at once so no zombie is left.
        ::kill(-pid, SIGKILL);
        Reap(pid);
        return absl::DeadlineExceededError(StrCat(command, " did not finish within ",
                                                  absl::FormatDuration(timeout), " and was killed",
                                                  OutputTail(output)));
      }
      const int64_t remaining_ms =
          std::chrono::ceil<std::chrono::milliseconds>(deadline - now).count();
      pollfd fds[3];
      nfds_t count = 0;
      const int output_index = output_open ? static_cast<int>(count++) : -1;
      if (output_index >= 0) fds[output_index] = {output_read.get(), POLLIN, 0};
      const int answer_index = answer_open ? static_cast<int>(count++) : -1;
      if (answer_index >= 0) fds[answer_index] = {answer_read.get(), POLLIN, 0};
      const int pid_index = pid_fd.valid() ? static_cast<int>(count++) : -1;
      if (pid_index >= 0) fds[pid_index] = {pid_fd.get(), POLLIN, 0};
      const int ready =
          ::poll(fds, count, static_cast<int>(std::min<int64_t>(remaining_ms, 60000)));
      if (ready < 0 && errno == EINTR) continue;
      if (ready < 0) {
        const int error = errno;
        ::kill(-pid, SIGKILL);
        Reap(pid);
        return ErrnoError(error, StrCat(command, ": poll"));
      }
      if (output_index >= 0 && fds[output_index].revents != 0) {
        output_open = ReadSome(output_read.get(), output) != ReadResult::kEnd;
      }
      if (answer_index >= 0 && fds[answer_index].revents != 0) {
        answer_open = ReadSome(answer_read.get(), *answer) != ReadResult::kEnd;
      }
      if (pid_index >= 0 && fds[pid_index].revents != 0) {
        int status = 0;
        if (::waitpid(pid, &status, WNOHANG) == pid) wait_status = status;
      }
    }
    if (output_open) {
      // The command has exited, so all it wrote is in the pipe. Take that without waiting for
      // EOF, which a grandchild it left behind could hold off.
      ::fcntl(output_read.get(), F_SETFL, O_NONBLOCK);
      while (ReadSome(output_read.get(), output) == ReadResult::kData) {
      }
    }
    if (answer_open) {
      ::fcntl(answer_read.get(), F_SETFL, O_NONBLOCK);
      while (ReadSome(answer_read.get(), *answer) == ReadResult::kData) {
      }
    }

    const int status = *wait_status;
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return absl::OkStatus();
    if (WIFEXITED(status)) {
      return absl::InternalError(
          StrCat(command, " exited with status ", WEXITSTATUS(status), OutputTail(output)));
    }
    if (WIFSIGNALED(status)) {
      return absl::InternalError(StrCat(command, " was killed by signal ", WTERMSIG(status), " (",
                                        strsignal(WTERMSIG(status)), ")", OutputTail(output)));
    }
    return absl::InternalError(
        StrCat(command, " ended with wait status ", status, OutputTail(output)));
  }

  // Appends what one read(2) returns. kNothing: interrupted, or a non-blocking read found the
  // pipe empty; kEnd: EOF or an error.
  static ReadResult ReadSome(int fd, std::string& output) {
    char buffer[4096];
    const ssize_t n = ::read(fd, buffer, sizeof(buffer));
    if (n < 0) return errno == EINTR || errno == EAGAIN ? ReadResult::kNothing : ReadResult::kEnd;
    if (n == 0) return ReadResult::kEnd;
    output.append(buffer, static_cast<size_t>(n));
    if (output.size() > kOutputTailBytes) output.erase(0, output.size() - kOutputTailBytes);
    return ReadResult::kData;
  }

  static int Reap(pid_t pid) {
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    return status;
  }
};

}  // namespace

absl::StatusOr<std::string> CommandRunner::Output(const std::vector<std::string>& argv,
                                                  std::string_view /*input*/,
                                                  absl::Duration /*timeout*/) {
  return absl::UnimplementedError(StrCat(QuoteForDisplay(argv),
                                         " was not run: this command runner cannot give a "
                                         "command input or read its answer"));
}

std::unique_ptr<CommandRunner> NewProcessCommandRunner() {
  return std::make_unique<ProcessCommandRunner>();
}

}  // namespace handoff
