#include "rehearsal/kubelet/process_control.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>

#include "common/base/strings.h"

namespace handoff::sandbox {
namespace {

// Through syscall(2): glibc 2.36's <sys/pidfd.h> declares the wrappers without extern "C", so
// C++ cannot link them.
int PidfdOpen(int pid) { return static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)); }
int PidfdSendSignal(int pidfd, int signal) {
  return static_cast<int>(::syscall(SYS_pidfd_send_signal, pidfd, signal, nullptr, 0));
}

absl::Status ErrnoError(int error, std::string_view what) {
  return absl::Status(absl::ErrnoToStatusCode(error), StrCat(what, ": ", std::strerror(error)));
}

std::optional<std::string> ReadWholeFile(const std::string& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return std::nullopt;
  std::string content;
  char buffer[4096];
  while (true) {
    ssize_t n = ::read(fd.get(), buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return std::nullopt;
    if (n == 0) break;
    content.append(buffer, static_cast<size_t>(n));
  }
  return content;
}

// Owns the C arrays posix_spawn takes.
class CStrings {
 public:
  explicit CStrings(const std::vector<std::string>& items) {
    for (const std::string& item : items) pointers_.push_back(const_cast<char*>(item.c_str()));
    pointers_.push_back(nullptr);
  }
  char* const* get() { return pointers_.data(); }

 private:
  std::vector<char*> pointers_;
};

}  // namespace

std::optional<ProcStat> ReadProcStat(int pid) {
  std::optional<std::string> stat = ReadWholeFile(StrCat("/proc/", pid, "/stat"));
  if (!stat) return std::nullopt;
  // Field 2 is "(comm)", and comm may hold spaces and parentheses: count from the last ')'
  // (proc(5)).
  const size_t paren = stat->rfind(')');
  if (paren == std::string::npos) return std::nullopt;
  std::vector<std::string_view> fields =
      StrSplit(std::string_view(*stat).substr(paren + 1), " \n", true);
  constexpr size_t kStartTimeAfterComm = 22 - 3;  // fields[0] is field 3 (state)
  if (fields.size() <= kStartTimeAfterComm || fields[0].size() != 1) return std::nullopt;
  ProcStat result;
  result.state = fields[0][0];
  std::string_view start = fields[kStartTimeAfterComm];
  auto [end, error] = std::from_chars(start.data(), start.data() + start.size(), result.start_time);
  if (error != std::errc() || end != start.data() + start.size()) return std::nullopt;
  return result;
}

std::optional<std::vector<std::string>> ReadCmdline(int pid) {
  std::optional<std::string> cmdline = ReadWholeFile(StrCat("/proc/", pid, "/cmdline"));
  if (!cmdline || cmdline->empty()) return std::nullopt;
  std::string_view rest(*cmdline);
  if (rest.back() == '\0') rest.remove_suffix(1);
  std::vector<std::string> argv;
  while (true) {
    const size_t nul = rest.find('\0');
    argv.emplace_back(rest.substr(0, nul));
    if (nul == std::string_view::npos) break;
    rest.remove_prefix(nul + 1);
  }
  return argv;
}

absl::StatusOr<ProcessHandle> OpenProcess(int pid, std::optional<std::uint64_t> start_time) {
  ProcessHandle process;
  process.pid = pid;
  process.pidfd = UniqueFd(PidfdOpen(pid));
  if (!process.pidfd.valid()) {
    if (errno == ESRCH) return absl::NotFoundError(StrCat("no process ", pid));
    return ErrnoError(errno, StrCat("pidfd_open ", pid));
  }
  // The pidfd names whatever process had the pid when it was opened. Reading the start time
  // afterwards tells whether that is the process we mean: had it exited and the pid been reused
  // in between, the start time would differ.
  std::optional<ProcStat> stat = ReadProcStat(pid);
  if (!stat) return absl::NotFoundError(StrCat("no process ", pid));
  if (start_time && stat->start_time != *start_time) {
    return absl::NotFoundError(StrCat("process ", pid, " started at ", stat->start_time,
                                      ", not at ", *start_time, ": the pid was reused"));
  }
  process.start_time = stat->start_time;
  if (stat->state == 'Z' || stat->state == 'X' || HasExited(process)) {
    return absl::NotFoundError(StrCat("process ", pid, " has exited"));
  }
  return process;
}

absl::StatusOr<ProcessHandle> SpawnDetached(const SpawnOptions& options) {
  posix_spawn_file_actions_t actions;
  posix_spawnattr_t attributes;
  posix_spawn_file_actions_init(&actions);
  posix_spawnattr_init(&attributes);
  sigset_t none;
  sigemptyset(&none);
  sigset_t all;
  sigfillset(&all);
  // A session of its own: no terminal's SIGHUP or SIGINT reaches it, and a signal to the
  // kubelet's process group does not either. The kubelet blocks SIGTERM for its signalfd and
  // ignores SIGPIPE; the pod must not inherit either.
  posix_spawnattr_setflags(&attributes,
                           POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  posix_spawnattr_setsigmask(&attributes, &none);
  posix_spawnattr_setsigdefault(&attributes, &all);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, options.output.c_str(),
                                   O_WRONLY | O_CREAT | O_APPEND, 0644);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  // Descriptors without O_CLOEXEC (cpp-httplib's listening socket is one) would otherwise
  // outlive the kubelet in its pods and keep its health port bound.
  posix_spawn_file_actions_addclosefrom_np(&actions, 3);
  posix_spawn_file_actions_addchdir_np(&actions, "/");

  std::vector<std::string> argv = options.argv;
  std::vector<std::string> env = options.env;
  CStrings c_argv(argv);
  CStrings c_env(env);
  pid_t pid = 0;
  const int error =
      posix_spawn(&pid, options.path.c_str(), &actions, &attributes, c_argv.get(), c_env.get());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attributes);
  if (error != 0) {
    return ErrnoError(error,
                      StrCat("cannot start ", options.path, " (output to ", options.output, ")"));
  }
  ProcessHandle process;
  process.pid = pid;
  process.child = true;
  // Our child: its pid cannot be reused before we reap it, so neither call can name another
  // process.
  process.pidfd = UniqueFd(PidfdOpen(pid));
  if (!process.pidfd.valid()) return ErrnoError(errno, StrCat("pidfd_open ", pid));
  if (std::optional<ProcStat> stat = ReadProcStat(pid)) process.start_time = stat->start_time;
  return process;
}

bool HasExited(const ProcessHandle& process) {
  return WaitForExit(process, std::chrono::milliseconds(0));
}

bool WaitForExit(const ProcessHandle& process, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    pollfd fd = {process.pidfd.get(), POLLIN, 0};
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    const int ready = ::poll(&fd, 1, static_cast<int>(std::max<long>(0, left.count())));
    if (ready > 0) return true;
    if (ready == 0) return false;
    if (errno != EINTR) return false;
  }
}

std::string ReapExitStatus(const ProcessHandle& process) {
  if (!process.child) return "unknown";
  siginfo_t info;
  std::memset(&info, 0, sizeof(info));
  int result;
  do {
    result = ::waitid(P_PIDFD, static_cast<id_t>(process.pidfd.get()), &info, WEXITED | WNOHANG);
  } while (result < 0 && errno == EINTR);
  if (result < 0 || info.si_pid == 0) return "unknown";
  if (info.si_code == CLD_EXITED) return StrCat("exit ", info.si_status);
  return StrCat("signal ", info.si_status);
}

absl::Status SendSignal(const ProcessHandle& process, int signal) {
  if (PidfdSendSignal(process.pidfd.get(), signal) == 0) return absl::OkStatus();
  if (errno == ESRCH) return absl::OkStatus();
  return ErrnoError(errno, StrCat("signal ", signal, " to process ", process.pid));
}

}  // namespace handoff::sandbox
