#include "rehearsal/monitor/process_watcher.h"

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "common/base/strings.h"
#include "rehearsal/monitor/run_record.h"

namespace handoff::sandbox {
namespace {

int64_t NowNs(clockid_t clock) {
  timespec now{};
  ::clock_gettime(clock, &now);
  return static_cast<int64_t>(now.tv_sec) * 1000000000 + now.tv_nsec;
}

// /proc/<pid>/stat's start time is in clock ticks after boot (CLOCK_BOOTTIME): the wall-clock
// time of that instant.
int64_t StartedNs(uint64_t start_ticks) {
  const int64_t boot_ns = NowNs(CLOCK_REALTIME) - NowNs(CLOCK_BOOTTIME);
  const int64_t hz = ::sysconf(_SC_CLK_TCK);
  return boot_ns + static_cast<int64_t>(start_ticks) * (1000000000 / (hz > 0 ? hz : 100));
}

std::string_view Basename(std::string_view path) {
  const size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

}  // namespace

std::string_view ControlPlaneComponentOf(const ProcessInfo& process) {
  if (process.argv.empty()) return "";
  const std::string_view name = Basename(process.argv[0]);
  for (std::string_view component :
       {"kube-apiserver", "kube-controller-manager", "kube-scheduler", "etcd"}) {
    if (name == component) return component;
  }
  if (name == "aws-cloud-controller-manager" || name == "cloud-controller-manager") {
    return "cloud-controller-manager";
  }
  return "";
}

bool IsManager(std::string_view component) {
  return component == "kube-controller-manager" || component == "cloud-controller-manager";
}

ManagerProcessWatcher::ManagerProcessWatcher(std::string records_dir,
                                             std::vector<WatchedNode> nodes,
                                             std::unique_ptr<ProcessTable> processes,
                                             std::string proc_root, absl::Duration poll_interval)
    : records_dir_(std::move(records_dir)),
      nodes_(std::move(nodes)),
      processes_(std::move(processes)),
      proc_root_(std::move(proc_root)),
      poll_interval_(poll_interval),
      epoll_(::epoll_create1(EPOLL_CLOEXEC)),
      wake_(::eventfd(0, EFD_CLOEXEC)) {
  epoll_event wake{};
  wake.events = EPOLLIN;
  wake.data.fd = wake_.get();
  ::epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, wake_.get(), &wake);
  thread_ = std::thread([this] { WaitForExits(); });
}

ManagerProcessWatcher::~ManagerProcessWatcher() {
  const uint64_t one = 1;
  (void)!::write(wake_.get(), &one, sizeof(one));
  if (thread_.joinable()) thread_.join();
}

absl::Status ManagerProcessWatcher::Append(const Watched& watched, bool exit) {
  if (!IsManager(watched.component)) return absl::OkStatus();
  RunRecord record;
  record.t_ns = exit ? watched.exited_ns.value_or(0) : watched.started_ns;
  record.node = watched.node;
  record.component = watched.component;
  record.pid = watched.pid;
  record.event = exit ? kProcessExit : kProcessStart;
  if (exit) record.status = "unknown";
  return AppendRunRecord(StrCat(records_dir_, "/", watched.node, ".processes.jsonl"), record);
}

absl::Status ManagerProcessWatcher::Poll() {
  std::lock_guard<std::mutex> polling(poll_mu_);
  absl::StatusOr<std::vector<ProcessInfo>> listed = processes_->List();
  if (!listed.ok()) return listed.status();
  absl::Status first_error;
  for (const ProcessInfo& process : *listed) {
    const std::string_view component = ControlPlaneComponentOf(process);
    if (component.empty()) continue;
    const std::pair<int64_t, uint64_t> key{process.pid, process.start_time};
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (watched_.count(key) > 0) continue;
    }
    std::error_code error;
    const std::string netns =
        std::filesystem::read_symlink(StrCat(proc_root_, "/", process.pid, "/ns/net"), error);
    if (error) continue;  // gone already, or not ours to read
    const WatchedNode* node = nullptr;
    for (const WatchedNode& candidate : nodes_) {
      if (candidate.netns == netns) node = &candidate;
    }
    if (node == nullptr) continue;  // a manager of something else on this machine
    Watched watched;
    watched.node = node->name;
    watched.component = std::string(component);
    watched.pid = process.pid;
    watched.start_ticks = process.start_time;
    watched.started_ns = StartedNs(process.start_time);
    watched.pidfd = UniqueFd(static_cast<int>(::syscall(SYS_pidfd_open, process.pid, 0)));
    if (!watched.pidfd.valid()) watched.exited_ns = NowNs(CLOCK_REALTIME);  // exited meanwhile
    first_error.Update(Append(watched, /*exit=*/false));
    if (watched.exited_ns) first_error.Update(Append(watched, /*exit=*/true));
    std::lock_guard<std::mutex> lock(mu_);
    Watched& kept = watched_[key] = std::move(watched);
    if (kept.pidfd.valid()) {
      epoll_event event{};
      event.events = EPOLLIN;
      event.data.fd = kept.pidfd.get();
      ::epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, kept.pidfd.get(), &event);
    }
  }
  return first_error;
}

void ManagerProcessWatcher::WaitForExits() {
  while (true) {
    epoll_event events[16];
    const int ready = ::epoll_wait(epoll_.get(), events, 16,
                                   static_cast<int>(absl::ToInt64Milliseconds(poll_interval_)));
    if (ready < 0 && errno == EINTR) continue;
    if (ready < 0) return;
    if (ready == 0) {
      (void)Poll();
      continue;
    }
    const int64_t now_ns = NowNs(CLOCK_REALTIME);
    for (int i = 0; i < ready; ++i) {
      if (events[i].data.fd == wake_.get()) return;
      std::lock_guard<std::mutex> lock(mu_);
      for (auto& [key, watched] : watched_) {
        if (watched.pidfd.get() != events[i].data.fd) continue;
        ::epoll_ctl(epoll_.get(), EPOLL_CTL_DEL, watched.pidfd.get(), nullptr);
        watched.exited_ns = now_ns;
        watched.pidfd.Reset();
        (void)Append(watched, /*exit=*/true);
      }
    }
  }
}

std::vector<WatchedProcess> ManagerProcessWatcher::History() const {
  std::vector<WatchedProcess> history;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [key, watched] : watched_) {
      history.push_back(
          {watched.node, watched.component, watched.pid, watched.started_ns, watched.exited_ns});
    }
  }
  std::sort(history.begin(), history.end(), [](const WatchedProcess& a, const WatchedProcess& b) {
    return a.started_ns < b.started_ns;
  });
  return history;
}

std::optional<int64_t> ManagerProcessWatcher::ProcessAt(const std::string& node,
                                                        std::string_view component,
                                                        int64_t t_ns) const {
  constexpr int64_t kStartRounding = 20000000;  // 20 ms: the clock tick and the conversion
  std::lock_guard<std::mutex> lock(mu_);
  const Watched* best = nullptr;
  for (const auto& [key, watched] : watched_) {
    if (watched.node != node || watched.component != component) continue;
    if (watched.started_ns > t_ns + kStartRounding) continue;
    if (watched.exited_ns && *watched.exited_ns < t_ns) continue;
    if (best == nullptr || watched.started_ns > best->started_ns) best = &watched;
  }
  if (best == nullptr) return std::nullopt;
  return best->pid;
}

}  // namespace handoff::sandbox
