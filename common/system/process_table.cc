#include "common/system/process_table.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <optional>
#include <utility>

#include "common/base/strings.h"

namespace handoff {
namespace {

// The whole file, or nullopt when it cannot be read. On /proc that is routine: the process exited
// between the directory listing and the read (ENOENT on open, ESRCH on read), or belongs to a
// namespace or user whose files are hidden from us. Either way the process is not one we can
// identify, so it is skipped rather than failing the listing.
std::optional<std::string> ReadWholeFile(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  std::string content;
  char buffer[4096];
  while (true) {
    ssize_t n = ::read(fd, buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      ::close(fd);
      return std::nullopt;
    }
    if (n == 0) break;
    content.append(buffer, static_cast<size_t>(n));
  }
  ::close(fd);
  return content;
}

std::optional<int> ParsePid(std::string_view name) {
  if (name.empty() ||
      !std::all_of(name.begin(), name.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return std::nullopt;
  }
  int pid = 0;
  auto [end, error] = std::from_chars(name.data(), name.data() + name.size(), pid);
  if (error != std::errc() || end != name.data() + name.size() || pid <= 0) return std::nullopt;
  return pid;
}

// cmdline holds the arguments each followed by a NUL. Empty items in the middle are real (empty)
// arguments and are kept.
std::vector<std::string> SplitCmdline(std::string_view cmdline) {
  if (!cmdline.empty() && cmdline.back() == '\0') cmdline.remove_suffix(1);
  std::vector<std::string> argv;
  while (true) {
    size_t nul = cmdline.find('\0');
    argv.emplace_back(cmdline.substr(0, nul));
    if (nul == std::string_view::npos) break;
    cmdline.remove_prefix(nul + 1);
  }
  return argv;
}

// Field 22 (starttime) of /proc/<pid>/stat. Field 2 is "(comm)" and comm may itself contain
// spaces and parentheses (a process can name itself anything up to 15 bytes), so fields are
// counted from the last ')' (proc(5)).
std::optional<std::uint64_t> ParseStartTime(std::string_view stat) {
  size_t paren = stat.rfind(')');
  if (paren == std::string_view::npos) return std::nullopt;
  std::vector<std::string_view> fields = StrSplit(stat.substr(paren + 1), " \n", true);
  constexpr size_t kStartTimeAfterComm = 22 - 3;  // fields[0] is field 3 (state)
  if (fields.size() <= kStartTimeAfterComm) return std::nullopt;
  std::string_view field = fields[kStartTimeAfterComm];
  std::uint64_t start_time = 0;
  auto [end, error] = std::from_chars(field.data(), field.data() + field.size(), start_time);
  if (error != std::errc() || end != field.data() + field.size()) return std::nullopt;
  return start_time;
}

class ProcfsProcessTable : public ProcessTable {
 public:
  explicit ProcfsProcessTable(std::string proc_root) : proc_root_(std::move(proc_root)) {}

  absl::StatusOr<std::vector<ProcessInfo>> List() const override {
    std::vector<int> pids;
    DIR* dir = ::opendir(proc_root_.c_str());
    if (dir == nullptr) {
      int error = errno;
      return absl::Status(absl::ErrnoToStatusCode(error),
                          StrCat("opendir ", proc_root_, ": ", std::strerror(error)));
    }
    while (true) {
      errno = 0;
      const dirent* entry = ::readdir(dir);
      if (entry == nullptr) {
        int error = errno;
        ::closedir(dir);
        if (error != 0) {
          return absl::Status(absl::ErrnoToStatusCode(error),
                              StrCat("readdir ", proc_root_, ": ", std::strerror(error)));
        }
        break;
      }
      if (std::optional<int> pid = ParsePid(entry->d_name)) pids.push_back(*pid);
    }
    std::sort(pids.begin(), pids.end());

    std::vector<ProcessInfo> processes;
    for (int pid : pids) {
      const std::string dir_path = StrCat(proc_root_, "/", pid);
      std::optional<std::string> cmdline = ReadWholeFile(dir_path + "/cmdline");
      // Kernel threads (and zombies) have an empty cmdline: nothing to match on.
      if (!cmdline || cmdline->empty()) continue;
      std::optional<std::string> stat = ReadWholeFile(dir_path + "/stat");
      if (!stat) continue;
      std::optional<std::uint64_t> start_time = ParseStartTime(*stat);
      if (!start_time) continue;
      ProcessInfo info;
      info.pid = pid;
      info.argv = SplitCmdline(*cmdline);
      info.start_time = *start_time;
      processes.push_back(std::move(info));
    }
    return processes;
  }

 private:
  std::string proc_root_;
};

class PidfdSignaller : public ProcessSignaller {
 public:
  explicit PidfdSignaller(std::string proc_root) : proc_root_(std::move(proc_root)) {}

  absl::Status Signal(const ProcessInfo& process, int signal) override {
    const std::string who = StrCat("process ", process.pid);
    // Through syscall(2): Debian 12's glibc declares the wrappers in <sys/pidfd.h> without C
    // linkage, so C++ cannot link them.
    const int fd = static_cast<int>(::syscall(SYS_pidfd_open, process.pid, 0));
    if (fd < 0) {
      const int error = errno;
      if (error == ESRCH) return absl::NotFoundError(StrCat(who, " has exited"));
      return absl::Status(absl::ErrnoToStatusCode(error),
                          StrCat("pidfd_open ", who, ": ", std::strerror(error)));
    }
    // The pidfd now pins the process: if the start time matches, the signal below reaches the
    // process that was listed, however soon after this its pid is freed and reused.
    std::optional<std::string> stat = ReadWholeFile(StrCat(proc_root_, "/", process.pid, "/stat"));
    std::optional<std::uint64_t> start_time = stat ? ParseStartTime(*stat) : std::nullopt;
    if (!start_time || *start_time != process.start_time) {
      ::close(fd);
      return absl::NotFoundError(StrCat(who, " has exited (its pid now names another process)"));
    }
    const long sent = ::syscall(SYS_pidfd_send_signal, fd, signal, nullptr, 0);
    const int error = errno;
    ::close(fd);
    if (sent == 0) return absl::OkStatus();
    if (error == ESRCH) return absl::NotFoundError(StrCat(who, " has exited"));
    return absl::Status(absl::ErrnoToStatusCode(error),
                        StrCat("signal ", signal, " to ", who, ": ", std::strerror(error)));
  }

 private:
  std::string proc_root_;
};

}  // namespace

std::unique_ptr<ProcessTable> NewProcfsProcessTable(std::string proc_root) {
  return std::make_unique<ProcfsProcessTable>(std::move(proc_root));
}

std::unique_ptr<ProcessSignaller> NewPidfdSignaller(std::string proc_root) {
  return std::make_unique<PidfdSignaller>(std::move(proc_root));
}

}  // namespace handoff
