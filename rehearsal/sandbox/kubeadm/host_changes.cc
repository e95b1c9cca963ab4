#include "rehearsal/sandbox/kubeadm/host_changes.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <thread>

#include "absl/time/clock.h"
#include "common/base/strings.h"
#include "common/system/command_runner.h"
#include "nlohmann/json.hpp"
#include "rehearsal/node/text_file.h"

namespace handoff::sandbox::kubeadm {
namespace {

using Json = nlohmann::json;
using node::ReadText;

std::string SysctlPath(const std::string& root, const std::string& name) {
  std::string relative = name;
  std::replace(relative.begin(), relative.end(), '.', '/');
  return StrCat(root, "/", relative);
}

// flock(2) on the records directory while it lives: runs decide about the shared sysctls one at
// a time. The kernel drops the lock with the process, however it ends.
class RecordsLock {
 public:
  explicit RecordsLock(const std::string& records_dir)
      : fd_(::open(records_dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)) {
    while (fd_ >= 0 && ::flock(fd_, LOCK_EX) != 0 && errno == EINTR) {
    }
  }
  ~RecordsLock() {
    if (fd_ >= 0) ::close(fd_);
  }
  RecordsLock(const RecordsLock&) = delete;
  RecordsLock& operator=(const RecordsLock&) = delete;

 private:
  int fd_;
};

// The record of a run other than the one in `own_path` whose owner still runs and which holds
// the host's sysctls.
std::optional<HostChangeRecord> LiveRunHoldingSysctls(const std::string& records_dir,
                                                      const std::string& own_path) {
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(records_dir, error)) {
    if (entry.path().extension() != ".json" || entry.path() == own_path) continue;
    std::optional<std::string> text = ReadText(entry.path());
    if (!text) continue;
    absl::StatusOr<HostChangeRecord> record = ParseHostChangeRecord(*text, entry.path());
    if (record.ok() && !record->sysctls.empty() && StillRuns(record->owner)) return *record;
  }
  return std::nullopt;
}

// Puts the sysctls of `record` (kept in `path`) back, unless a live run still holds them.
std::vector<std::string> GiveBackSysctls(const HostChangeRecord& record, const std::string& path,
                                         const HostPaths& paths,
                                         const std::function<void(const std::string&)>& say) {
  if (record.sysctls.empty()) return {};
  std::optional<HostChangeRecord> holder = LiveRunHoldingSysctls(paths.records_dir, path);
  if (holder) {
    say(StrCat("left the kubelet's sysctls to the run still using them (pid ", holder->owner.pid,
               ", ", holder->dir, ")"));
    return {};
  }
  return RestoreSysctls(record, say, paths.sysctl_root);
}

Json ProcessJson(const HostProcess& process) {
  return Json{{"pid", process.pid}, {"start_ticks", process.start_ticks}};
}

// Waits until none of `processes` runs, for at most `timeout`.
void AwaitGone(const std::vector<HostProcess>& processes, absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  while (absl::Now() < deadline) {
    bool any = false;
    for (const HostProcess& process : processes) any = any || StillRuns(process);
    if (!any) return;
    // A killed process's exit is not an event this process can wait on (it is not our child).
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

// Removes `dir` and every directory under it, deepest first. cgroup directories hold only
// kernel files, which rmdir(2) takes with them.
absl::Status RemoveCgroupTree(const std::string& dir) {
  std::error_code error;
  if (!std::filesystem::exists(dir, error)) return absl::OkStatus();
  std::vector<std::string> dirs;
  for (auto it = std::filesystem::recursive_directory_iterator(dir, error);
       !error && it != std::filesystem::recursive_directory_iterator(); it.increment(error)) {
    if (it->is_directory(error) && !it->is_symlink(error)) dirs.push_back(it->path());
  }
  std::sort(dirs.begin(), dirs.end(),
            [](const std::string& a, const std::string& b) { return a.size() > b.size(); });
  dirs.push_back(dir);
  for (const std::string& path : dirs) {
    if (::rmdir(path.c_str()) != 0 && errno != ENOENT) {
      return absl::FailedPreconditionError(StrCat("rmdir ", path, ": ", std::strerror(errno)));
    }
  }
  return absl::OkStatus();
}

}  // namespace

const std::vector<std::string>& KubeletSysctls() {
  static const std::vector<std::string> kSysctls = {
      "vm.overcommit_memory", "vm.panic_on_oom",          "kernel.panic",
      "kernel.panic_on_oops", "kernel.keys.root_maxkeys", "kernel.keys.root_maxbytes"};
  return kSysctls;
}

HostProcess CurrentProcess(int64_t pid) {
  HostProcess process;
  process.pid = pid;
  std::optional<std::string> stat = ReadText(StrCat("/proc/", pid, "/stat"));
  if (!stat) return process;
  // "pid (comm) S ppid ...": the command may hold spaces and parentheses; field 22 is the 20th
  // after the last ')'. A zombie has finished: it runs no more.
  const size_t close = stat->rfind(')');
  if (close == std::string::npos || close + 2 >= stat->size() || (*stat)[close + 2] == 'Z') {
    return process;
  }
  std::istringstream fields(stat->substr(close + 2));
  std::string field;
  for (int i = 3; i <= 22 && fields >> field; ++i) {
    if (i == 22) process.start_ticks = std::strtoull(field.c_str(), nullptr, 10);
  }
  return process;
}

bool StillRuns(const HostProcess& process) {
  if (process.pid <= 0 || process.start_ticks == 0) return false;
  const HostProcess now = CurrentProcess(process.pid);
  return now.start_ticks == process.start_ticks;
}

std::string FormatHostChangeRecord(const HostChangeRecord& record) {
  Json nodes = Json::array();
  for (const HostProcess& process : record.processes) nodes.push_back(ProcessJson(process));
  Json json{{"owner", ProcessJson(record.owner)},
            {"dir", record.dir},
            {"keep", record.keep},
            {"links", record.links},
            {"cgroup_roots", record.cgroup_roots},
            {"sysctls", record.sysctls},
            {"processes", nodes}};
  return json.dump(2) + "\n";
}

absl::StatusOr<HostChangeRecord> ParseHostChangeRecord(const std::string& text,
                                                       const std::string& source) {
  Json json = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!json.is_object()) return absl::InvalidArgumentError(StrCat(source, ": not a JSON object"));
  HostChangeRecord record;
  auto process = [&](const Json& value, const std::string& field) -> absl::StatusOr<HostProcess> {
    if (!value.is_object() || !value.contains("pid") || !value["pid"].is_number_integer() ||
        !value.contains("start_ticks") || !value["start_ticks"].is_number_unsigned()) {
      return absl::InvalidArgumentError(StrCat(source, ": ", field, " is not {pid, start_ticks}"));
    }
    return HostProcess{value["pid"].get<int64_t>(), value["start_ticks"].get<uint64_t>()};
  };
  try {
    absl::StatusOr<HostProcess> owner = process(json.value("owner", Json()), "owner");
    if (!owner.ok()) return owner.status();
    record.owner = *owner;
    record.dir = json.at("dir").get<std::string>();
    record.keep = json.at("keep").get<bool>();
    record.links = json.at("links").get<std::vector<std::string>>();
    record.cgroup_roots = json.at("cgroup_roots").get<std::vector<std::string>>();
    record.sysctls = json.at("sysctls").get<std::map<std::string, std::string>>();
    for (const Json& node : json.at("processes")) {
      absl::StatusOr<HostProcess> parsed = process(node, "processes[]");
      if (!parsed.ok()) return parsed.status();
      record.processes.push_back(*parsed);
    }
  } catch (const Json::exception& e) {
    return absl::InvalidArgumentError(StrCat(source, ": ", e.what()));
  }
  for (const std::string& root : record.cgroup_roots) {
    // Only the run's own roots, never a hierarchy's top: a record is input to rmdir.
    if (root.size() < 2 || root.front() != '/' || root.find("..") != std::string::npos) {
      return absl::InvalidArgumentError(StrCat(source, ": cgroup root \"", root, "\""));
    }
  }
  for (const auto& [name, value] : record.sysctls) {
    const auto& known = KubeletSysctls();
    if (std::find(known.begin(), known.end(), name) == known.end()) {
      return absl::InvalidArgumentError(StrCat(source, ": sysctl ", name, " is not the kubelet's"));
    }
  }
  return record;
}

std::vector<std::string> CgroupRootDirs(const std::string& cgroup_fs, const std::string& root) {
  std::vector<std::string> dirs;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(cgroup_fs, error)) {
    // Each hierarchy is a directory; the v1 aliases ("cpu,cpuacct" → "cpu") are symlinks.
    if (!entry.is_directory(error) || entry.is_symlink(error)) continue;
    dirs.push_back(StrCat(entry.path().string(), root));
  }
  std::sort(dirs.begin(), dirs.end());
  return dirs;
}

std::vector<std::string> UndoHostChanges(const HostChangeRecord& record,
                                         const std::function<void(const std::string&)>& say) {
  std::vector<std::string> failures;
  std::vector<HostProcess> running;
  for (const HostProcess& process : record.processes) {
    if (!StillRuns(process)) continue;
    // A node's first process takes every process of the node with it.
    ::kill(static_cast<pid_t>(process.pid), SIGKILL);
    running.push_back(process);
  }
  if (!running.empty()) {
    AwaitGone(running, absl::Seconds(10));
    say(StrCat("stopped ", running.size(),
               " process(es) of the run (a node's with everything "
               "in it)"));
  }
  for (auto link = record.links.rbegin(); link != record.links.rend(); ++link) {
    if (!std::filesystem::exists(StrCat("/sys/class/net/", *link))) continue;
    absl::Status deleted =
        NewProcessCommandRunner()->Run({"ip", "link", "delete", *link}, absl::Seconds(10));
    if (deleted.ok()) {
      say(StrCat("deleted the network interface ", *link));
    } else if (std::filesystem::exists(StrCat("/sys/class/net/", *link))) {
      failures.push_back(std::string(deleted.message()));
    }
  }
  for (const std::string& root : record.cgroup_roots) {
    for (const std::string& dir : CgroupRootDirs("/sys/fs/cgroup", root)) {
      absl::Status removed;
      // A killed container leaves its cgroup once the kernel has reaped it.
      for (int attempt = 0; attempt < 50; ++attempt) {
        removed = RemoveCgroupTree(dir);
        if (removed.ok()) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
      if (!removed.ok()) failures.push_back(std::string(removed.message()));
    }
  }
  if (!record.cgroup_roots.empty()) {
    say(StrCat("removed the cgroups ", StrJoin(record.cgroup_roots, ", ")));
  }
  if (!record.keep && !record.dir.empty()) {
    std::error_code error;
    std::filesystem::remove_all(record.dir, error);
    if (error) failures.push_back(StrCat("cannot remove ", record.dir, ": ", error.message()));
  }
  return failures;
}

std::vector<std::string> RestoreSysctls(const HostChangeRecord& record,
                                        const std::function<void(const std::string&)>& say,
                                        const std::string& sysctl_root) {
  std::vector<std::string> failures;
  for (const auto& [name, value] : record.sysctls) {
    std::optional<std::string> now = ReadText(SysctlPath(sysctl_root, name));
    if (now && StripWhitespace(*now) == value) continue;
    std::ofstream out(SysctlPath(sysctl_root, name));
    out << value << "\n";
    if (!out.flush()) {
      failures.push_back(StrCat("cannot restore ", name, " = ", value));
    } else {
      say(StrCat("restored ", name, " = ", value, " (the kubelet had set ",
                 now ? std::string(StripWhitespace(*now)) : "?", ")"));
    }
  }
  return failures;
}

absl::StatusOr<HostChanges> HostChanges::Begin(const std::string& dir, bool keep,
                                               const HostPaths& paths) {
  const std::string& records_dir = paths.records_dir;
  std::error_code error;
  std::filesystem::create_directories(records_dir, error);
  if (error) {
    return absl::FailedPreconditionError(
        StrCat("cannot create ", records_dir, ": ", error.message()));
  }
  HostChanges changes;
  changes.paths_ = paths;
  changes.record_.owner = CurrentProcess(::getpid());
  changes.record_.dir = dir;
  changes.record_.keep = keep;
  changes.path_ = StrCat(records_dir, "/", ::getpid(), ".json");
  absl::Status saved = changes.Save();
  if (!saved.ok()) return saved;
  return changes;
}

absl::Status HostChanges::Save() { return node::WriteText(path_, FormatHostChangeRecord(record_)); }

absl::Status HostChanges::WillCreateLink(const std::string& name) {
  record_.links.push_back(name);
  return Save();
}

absl::Status HostChanges::WillFillCgroupRoot(const std::string& root) {
  record_.cgroup_roots.push_back(root);
  return Save();
}

absl::Status HostChanges::WillStartKubelets() {
  RecordsLock lock(paths_.records_dir);
  // Another run's kubelets may have changed them already: that run recorded the host's values.
  const std::optional<HostChangeRecord> holder = LiveRunHoldingSysctls(paths_.records_dir, path_);
  for (const std::string& name : KubeletSysctls()) {
    if (record_.sysctls.count(name) > 0) continue;
    if (holder) {
      auto value = holder->sysctls.find(name);
      if (value != holder->sysctls.end()) record_.sysctls[name] = value->second;
      continue;
    }
    std::optional<std::string> value = ReadText(SysctlPath(paths_.sysctl_root, name));
    if (value) record_.sysctls[name] = std::string(StripWhitespace(*value));
  }
  return Save();
}

absl::Status HostChanges::Started(const HostProcess& process) {
  record_.processes.push_back(process);
  return Save();
}

std::vector<std::string> HostChanges::Undo(const std::function<void(const std::string&)>& say) {
  std::vector<std::string> failures = UndoHostChanges(record_, say);
  RecordsLock lock(paths_.records_dir);
  for (std::string& failure : GiveBackSysctls(record_, path_, paths_, say)) {
    failures.push_back(std::move(failure));
  }
  if (failures.empty()) ::unlink(path_.c_str());
  return failures;
}

std::vector<std::string> CleanStaleRuns(const std::function<void(const std::string&)>& say,
                                        const HostPaths& paths) {
  const std::string& records_dir = paths.records_dir;
  std::vector<std::string> lines;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(records_dir, error)) {
    if (entry.path().extension() != ".json") continue;
    std::optional<std::string> text = ReadText(entry.path());
    if (!text) continue;
    absl::StatusOr<HostChangeRecord> record = ParseHostChangeRecord(*text, entry.path());
    if (!record.ok()) {
      lines.push_back(StrCat("left alone: ", record.status().message()));
      continue;
    }
    if (StillRuns(record->owner)) continue;  // another sandbox, still running
    say(StrCat("cleaning up after an earlier run that did not finish (pid ", record->owner.pid,
               ", ", record->dir, ")"));
    std::vector<std::string> failures = UndoHostChanges(*record, say);
    RecordsLock lock(records_dir);
    for (std::string& failure : GiveBackSysctls(*record, entry.path(), paths, say)) {
      failures.push_back(std::move(failure));
    }
    if (failures.empty()) {
      std::filesystem::remove(entry.path(), error);
      lines.push_back(StrCat("cleaned up after the earlier run in ", record->dir));
    } else {
      for (std::string& failure : failures) lines.push_back(std::move(failure));
    }
  }
  return lines;
}

}  // namespace handoff::sandbox::kubeadm
