#include "agent/system/command_runner.h"

#include <fcntl.h>
#include <poll.h>
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

#include "agent/base/strings.h"

namespace handoff {
namespace {

// How much output is kept (the tail) and how many of its lines go into an error.
constexpr size_t kOutputTailBytes = size_t{64} * 1024;
constexpr size_t kOutputLines = 20;

class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  UniqueFd(UniqueFd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  UniqueFd& operator=(UniqueFd&& other) noexcept {
    if (this != &other) Reset(std::exchange(other.fd_, -1));
    return *this;
  }
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  ~UniqueFd() { Reset(); }

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  void Reset(int fd = -1) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = fd;
  }

 private:
  int fd_ = -1;
};

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

class ProcessCommandRunner : public CommandRunner {
 public:
  absl::Status Run(const std::vector<std::string>& argv, absl::Duration timeout) override {
    if (argv.empty()) return absl::InvalidArgumentError("cannot run an empty command");
    const std::string command = QuoteForDisplay(argv);
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

    const pid_t pid = ::fork();
    if (pid < 0) return ErrnoError(errno, StrCat(command, ": fork"));
    if (pid == 0) {
      // Its own process group, so a timeout kills whatever the command started too.
      ::setpgid(0, 0);
      // A daemon blocks signals to take them on one thread (sigwait); the command must not
      // inherit that mask, nor an ignored SIGPIPE.
      ::sigprocmask(SIG_SETMASK, &no_signals, nullptr);
      ::signal(SIGPIPE, SIG_DFL);
      ::dup2(dev_null.get(), STDIN_FILENO);
      ::dup2(output_write.get(), STDOUT_FILENO);
      ::dup2(output_write.get(), STDERR_FILENO);
      ::execvp(exec_argv[0], exec_argv.data());
      int error = errno;
      (void)!::write(exec_error_write.get(), &error, sizeof(error));
      ::_exit(127);
    }
    // Also in the parent: kill(-pid) must work even before the child has run setpgid.
    ::setpgid(pid, pid);
    output_write.Reset();
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
    while (!wait_status) {
      if (!output_open && !pid_fd.valid()) {
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
      pollfd fds[2];
      nfds_t count = 0;
      const int output_index = output_open ? static_cast<int>(count++) : -1;
      if (output_index >= 0) fds[output_index] = {output_read.get(), POLLIN, 0};
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

 private:
  enum class ReadResult { kData, kNothing, kEnd };

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

std::unique_ptr<CommandRunner> NewProcessCommandRunner() {
  return std::make_unique<ProcessCommandRunner>();
}

}  // namespace handoff
