#include "rehearsal/kubelet/sandbox_kubelet.h"

#include <dirent.h>
#include <httplib.h>
#include <poll.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <thread>

#include "common/base/strings.h"
#include "common/fs/atomic_file.h"
#include "common/fs/file_system.h"
#include "common/fs/host_path.h"
#include "common/system/service_lifecycle.h"
#include "rehearsal/kubelet/node_heartbeat.h"
#include "rehearsal/kubelet/pod_binaries.h"
#include "rehearsal/kubelet/pod_exec.h"
#include "rehearsal/kubelet/pod_spec.h"
#include "rehearsal/kubelet/pod_state.h"
#include "rehearsal/kubelet/pod_sync.h"
#include "rehearsal/kubelet/process_control.h"
#include "rehearsal/monitor/run_record.h"
#include "rehearsal/sandbox/httplib_serving.h"

namespace handoff::sandbox {
namespace {

constexpr char kDefaultPath[] = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

int64_t RealtimeNanos() {
  timespec now;
  clock_gettime(CLOCK_REALTIME, &now);
  return static_cast<int64_t>(now.tv_sec) * 1'000'000'000 + now.tv_nsec;
}

// One pod as the kubelet tracks it.
struct Pod {
  PodStatus status;
  std::optional<ProcessHandle> process;  // set exactly when status.running
  std::string component;
  std::string start_error;  // the last start failure logged, so it is logged once
  std::string note_logged;  // the last PodBinary note logged, so it is logged once
};

class Kubelet {
 public:
  explicit Kubelet(const KubeletOptions& options)
      : options_(options), fs_(NewPosixFileSystem(options.root)), notifier_(NewNullNotifier()) {}

  ~Kubelet() { Shutdown(); }

  absl::Status Run();

 private:
  absl::Status Setup();
  void Shutdown();
  absl::Status StartHealthz();
  void EnsureWatch();
  void DrainInotify();
  void Relist();
  void Reconcile();
  void Adopt();
  absl::Status StartPod(const std::string& name, Pod& pod, const PodSpec& spec);
  absl::Status PrepareVolumes(const PodSpec& spec);
  void HandleExit(const std::string& name, Pod& pod);
  void SaveState();
  void Record(const std::string& event, const std::string& component, int pid,
              const std::string& status);
  void LinkProcess(int pid);
  void UnlinkProcess(int pid);
  void ClearProcessView();
  std::string HostPath(std::string_view path) const { return StrCat(options_.root, path); }

  KubeletOptions options_;
  std::mt19937 random_{std::random_device{}()};  // the changed pods' restart jitter
  std::unique_ptr<FileSystem> fs_;
  std::unique_ptr<FileSystem::Lock> lock_;
  std::unique_ptr<ServiceNotifier> notifier_;
  UniqueFd stop_fd_;  // an eventfd, readable once a stop was requested
  std::unique_ptr<ServiceLifecycle> lifecycle_;
  UniqueFd inotify_fd_;
  int watch_ = -1;
  std::unique_ptr<httplib::Server> server_;
  // Stops the accept loop only once it runs: httplib's stop() before that is lost, and the join
  // would then wait forever (a SIGTERM right after the start).
  HttplibServingThread serving_;
  std::unique_ptr<NodeHeartbeat> heartbeat_;  // with --kubeconfig
  std::string healthz_url_;
  DesiredPods desired_;
  std::vector<std::string> logged_problems_;
  std::map<std::string, Pod> pods_;
  std::optional<SteadyTime> wake_at_;
  bool shut_down_ = false;
};

absl::Status Kubelet::Setup() {
  // Signals first, before the health server's thread exists (service_lifecycle.h); a stop wakes
  // the poll loop through stop_fd_. The sandbox, not systemd, runs the kubelet: nothing to
  // notify. cpp-httplib writes to sockets a client may have closed.
  stop_fd_ = UniqueFd(eventfd(0, EFD_CLOEXEC));
  if (!stop_fd_.valid()) return absl::InternalError(StrCat("eventfd: ", std::strerror(errno)));
  ServiceLifecycleOptions lifecycle_options;
  lifecycle_options.logger = spdlog::default_logger();
  lifecycle_options.stop_means = "the pods keep running";
  absl::StatusOr<std::unique_ptr<ServiceLifecycle>> lifecycle =
      ServiceLifecycle::Start(std::move(lifecycle_options), *notifier_);
  if (!lifecycle.ok()) return lifecycle.status();
  lifecycle_ = *std::move(lifecycle);
  lifecycle_->SetOnStop([fd = stop_fd_.get()] {
    const uint64_t one = 1;
    // The loop stops only once the eventfd is readable, so an interrupted write is retried.
    while (::write(fd, &one, sizeof(one)) < 0 && errno == EINTR) {
    }
  });
  ::signal(SIGPIPE, SIG_IGN);

  for (const char* dir : {"/run", "/var/lib/kubelet", kPodLogDir, kProcViewDir}) {
    if (absl::Status made = EnsureDirectory(*fs_, dir, 0755); !made.ok()) return made;
  }
  absl::StatusOr<std::unique_ptr<FileSystem::Lock>> lock = fs_->TryLock(kKubeletLockFile);
  if (!lock.ok()) {
    return absl::FailedPreconditionError(StrCat("another sandbox kubelet serves ", options_.root,
                                                " (it holds ", HostPath(kKubeletLockFile),
                                                "): ", lock.status().message()));
  }
  lock_ = *std::move(lock);
  if (absl::Status pid = AtomicReplace(*fs_, kKubeletPidFile, StrCat(::getpid(), "\n"),
                                       FileInfo{false, 0644, 0, 0});
      !pid.ok()) {
    return pid;
  }
  ClearProcessView();
  LinkProcess(::getpid());
  Adopt();
  if (absl::Status healthz = StartHealthz(); !healthz.ok()) return healthz;
  if (!options_.kubeconfig.empty()) {
    absl::StatusOr<std::unique_ptr<NodeHeartbeat>> heartbeat =
        NodeHeartbeat::Start(*fs_, options_.kubeconfig, options_.node_name,
                             absl::FromChrono(options_.node_lease_renew_interval));
    if (!heartbeat.ok()) return heartbeat.status();
    heartbeat_ = *std::move(heartbeat);
  }
  inotify_fd_ = UniqueFd(inotify_init1(IN_NONBLOCK | IN_CLOEXEC));
  if (!inotify_fd_.valid()) {
    return absl::InternalError(StrCat("inotify_init1: ", std::strerror(errno)));
  }
  spdlog::info("sandbox kubelet for node {} (root {}): manifests in {}, pods run {}{}, health {}",
               options_.node_name, options_.root, HostPath(options_.pod_manifest_path),
               options_.standin,
               options_.real_bin_dir.empty()
                   ? ""
                   : StrCat(" or the real binaries in ", options_.real_bin_dir),
               healthz_url_);
  return absl::OkStatus();
}

absl::Status Kubelet::StartHealthz() {
  server_ = std::make_unique<httplib::Server>();
  const std::string pid = StrCat(::getpid());
  server_->Get("/healthz", [pid](const httplib::Request&, httplib::Response& response) {
    response.set_header("X-Sandbox-Kubelet-Pid", pid);
    response.set_content("ok", "text/plain");
  });
  const int port = BindHttplib(*server_, options_.healthz_bind_address, options_.healthz_port);
  if (port <= 0) {
    return absl::UnavailableError(StrCat("cannot serve /healthz on ", options_.healthz_bind_address,
                                         ":", options_.healthz_port,
                                         " (in use by another node's kubelet?)"));
  }
  const bool v6 = StrContains(options_.healthz_bind_address, ":");
  healthz_url_ = StrCat("http://", v6 ? "[" : "", options_.healthz_bind_address, v6 ? "]" : "", ":",
                        port, "/healthz");
  serving_.Start(*server_);
  return AtomicReplace(*fs_, kKubeletHealthzFile, StrCat(::getpid(), " ", healthz_url_, "\n"),
                       FileInfo{false, 0644, 0, 0});
}

void Kubelet::Shutdown() {
  if (shut_down_) return;
  shut_down_ = true;
  heartbeat_.reset();
  serving_.Stop();
  UnlinkProcess(::getpid());
  // Only the lock holder wrote the pid and health files, and only while they still name this
  // process are they its own.
  if (lock_ != nullptr) {
    const std::string pid = StrCat(::getpid());
    absl::StatusOr<std::string> pid_file = fs_->ReadFile(kKubeletPidFile);
    if (pid_file.ok() && StripWhitespace(*pid_file) == pid) (void)fs_->RemoveFile(kKubeletPidFile);
    absl::StatusOr<std::string> healthz = fs_->ReadFile(kKubeletHealthzFile);
    if (healthz.ok() && StartsWith(*healthz, pid + " ")) (void)fs_->RemoveFile(kKubeletHealthzFile);
  }
  lock_.reset();
}

void Kubelet::Adopt() {
  // Like a kubelet that finds its containers again through the runtime after a restart: what
  // still runs is kept, and replaced only if its manifest now says otherwise (Reconcile).
  absl::StatusOr<PodProcesses> saved = LoadPodState(*fs_);
  if (!saved.ok()) {
    spdlog::warn("ignoring {}: {}", HostPath(kPodStatePath), std::string(saved.status().message()));
    return;
  }
  for (const auto& [name, process] : *saved) {
    absl::StatusOr<ProcessHandle> handle = OpenProcess(process.pid, process.start_time);
    if (!handle.ok()) {
      // It ended while no kubelet watched it: nobody recorded that yet. The record's time is
      // now, later than the real exit, which errs on the side of a longer run.
      spdlog::info("pod {}: process {} ended while the kubelet was down", name, process.pid);
      Record("process-exit", process.component, process.pid, "unknown");
      continue;
    }
    Pod& pod = pods_[name];
    pod.status.running = true;
    pod.status.running_hash = process.hash;
    pod.component = process.component;
    pod.process = *std::move(handle);
    LinkProcess(process.pid);
    spdlog::info("pod {}: adopted process {}", name, process.pid);
  }
  SaveState();
}

void Kubelet::EnsureWatch() {
  if (watch_ >= 0) return;
  // The real file source retries its watch too when the directory is missing
  // (pkg/kubelet/config/file_linux.go startWatch, with back-off).
  watch_ =
      inotify_add_watch(inotify_fd_.get(), HostPath(options_.pod_manifest_path).c_str(),
                        IN_CREATE | IN_CLOSE_WRITE | IN_MODIFY | IN_DELETE | IN_MOVED_FROM |
                            IN_MOVED_TO | IN_ATTRIB | IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR);
}

void Kubelet::DrainInotify() {
  alignas(inotify_event) char buffer[8192];
  while (true) {
    const ssize_t n = ::read(inotify_fd_.get(), buffer, sizeof(buffer));
    if (n <= 0) return;  // EAGAIN: drained
    for (ssize_t offset = 0; offset < n;) {
      const auto* event = reinterpret_cast<const inotify_event*>(buffer + offset);
      if (event->mask & (IN_IGNORED | IN_DELETE_SELF | IN_MOVE_SELF)) {
        if (event->wd == watch_) watch_ = -1;
      }
      offset += static_cast<ssize_t>(sizeof(inotify_event) + event->len);
    }
  }
}

void Kubelet::Relist() {
  // Every event leads to a full re-list rather than to reading the one file named (as
  // file_linux.go does): the outcome is what the next periodic re-list would give anyway,
  // including the removal of a pod whose file no longer parses (file.go extractFromDir).
  std::vector<ManifestFile> files;
  const std::string dir = options_.pod_manifest_path;
  absl::StatusOr<std::vector<std::string>> names = fs_->ListDirectory(dir);
  std::vector<std::string> problems;
  if (!names.ok()) {
    // file.go listConfig: a missing directory is an empty set of pods.
    problems.push_back(StrCat("cannot list ", HostPath(dir), ": ", names.status().message()));
  } else {
    for (const std::string& name : *names) {
      if (StartsWith(name, ".")) continue;
      const std::string path = StrCat(dir, "/", name);
      absl::StatusOr<FileInfo> info = fs_->Stat(path);
      if (!info.ok()) continue;  // removed meanwhile
      if (info->is_directory) {
        problems.push_back(StrCat(HostPath(path), " is a directory, not recursing into it"));
        continue;
      }
      absl::StatusOr<std::string> content = fs_->ReadFile(path);
      if (!content.ok()) continue;
      files.push_back({name, *content});
    }
  }
  desired_ = PodsFromManifests(std::move(files), dir, options_.node_name);
  problems.insert(problems.end(), desired_.problems.begin(), desired_.problems.end());
  if (problems != logged_problems_) {
    for (const std::string& problem : problems) spdlog::warn("{}", problem);
    logged_problems_ = problems;
  }
}

void Kubelet::Reconcile() {
  using Action = PodDecision::Action;
  std::set<std::string> names;
  for (const auto& [name, spec] : desired_.pods) names.insert(name);
  for (const auto& [name, pod] : pods_) names.insert(name);
  wake_at_.reset();
  const SteadyTime now = std::chrono::steady_clock::now();
  for (const std::string& name : names) {
    auto desired = desired_.pods.find(name);
    const PodSpec* spec = desired == desired_.pods.end() ? nullptr : &desired->second;
    Pod& pod = pods_[name];
    const PodDecision decision = DecidePod(spec, pod.status, now);
    switch (decision.action) {
      case Action::kNothing:
        break;
      case Action::kStart:
        if (absl::Status started = StartPod(name, pod, *spec); !started.ok()) {
          // Tried again on the next re-list, like a container that cannot be created.
          if (pod.start_error != started.message()) {
            spdlog::error("pod {}: {}", name, std::string(started.message()));
            pod.start_error = std::string(started.message());
          }
        }
        break;
      case Action::kTerminate:
        spdlog::info("pod {}: stopping process {} ({})", name, pod.process->pid,
                     spec == nullptr ? "its manifest is gone" : "its manifest changed");
        pod.status.terminate_sent = now;
        if (absl::Status sent = SendSignal(*pod.process, SIGTERM); !sent.ok()) {
          spdlog::error("pod {}: {}", name, std::string(sent.message()));
        }
        break;
      case Action::kKill:
        spdlog::info("pod {}: process {} still runs after the grace period; SIGKILL", name,
                     pod.process->pid);
        pod.status.kill_sent = true;
        if (absl::Status sent = SendSignal(*pod.process, SIGKILL); !sent.ok()) {
          spdlog::error("pod {}: {}", name, std::string(sent.message()));
        }
        break;
    }
    if (decision.wake_at && (!wake_at_ || *decision.wake_at < *wake_at_)) {
      wake_at_ = decision.wake_at;
    }
  }
  // Forget pods that neither run nor are wanted (their back-off too: a manifest that comes
  // back is a new pod).
  for (auto it = pods_.begin(); it != pods_.end();) {
    if (!it->second.status.running && desired_.pods.count(it->first) == 0) {
      it = pods_.erase(it);
    } else {
      ++it;
    }
  }
}

absl::Status Kubelet::PrepareVolumes(const PodSpec& spec) {
  // pkg/volume/hostpath/host_path.go checkType: *OrCreate types are created, File and Directory
  // must already be there as such; the kubelet does not start the pod otherwise.
  for (const HostPathMount& mount : spec.mounts) {
    const std::string& path = mount.host_path;
    absl::StatusOr<FileInfo> info = fs_->Stat(path);
    const auto failed = [&](std::string_view why) {
      return absl::FailedPreconditionError(
          StrCat("MountVolume.SetUp failed for volume \"", mount.name,
                 "\": hostPath type check failed: ", HostPath(path), " ", why));
    };
    if (mount.type == "DirectoryOrCreate") {
      if (!info.ok()) {
        if (absl::Status made = EnsureDirectory(*fs_, path, 0755); !made.ok()) return made;
      } else if (!info->is_directory) {
        return failed("is not a directory");
      }
    } else if (mount.type == "FileOrCreate") {
      if (!info.ok()) {
        if (absl::Status made = fs_->WriteFile(path, "", FileInfo{false, 0644, 0, 0}); !made.ok()) {
          return failed(StrCat("cannot be created: ", made.message()));
        }
      } else if (info->is_directory) {
        return failed("is not a file");
      }
    } else if (mount.type == "File") {
      if (!info.ok() || info->is_directory) return failed("is not a file");
    } else if (mount.type == "Directory") {
      if (!info.ok() || !info->is_directory) return failed("is not a directory");
    }
  }
  return absl::OkStatus();
}

absl::Status Kubelet::StartPod(const std::string& name, Pod& pod, const PodSpec& spec) {
  if (absl::Status volumes = PrepareVolumes(spec); !volumes.ok()) return volumes;
  const PodBinary binary = PodBinaryFor(spec.image, options_.standin, options_.real_bin_dir);
  SpawnOptions spawn;
  spawn.output = HostPath(StrCat(kPodLogDir, "/", name, ".log"));
  if (binary.real) {
    // The pod-exec helper becomes the manager by execve: the pid spawned is the manager's.
    // /proc/self/exe is resolved in the child, so it is this kubelet's binary even if the file
    // was replaced since.
    PodExecSpec exec;
    exec.hostname = options_.node_name;
    exec.binary = binary.path;
    exec.scratch_dir = HostPath(kPodRootDir);
    for (const HostPathMount& mount : spec.mounts) {
      exec.mounts.push_back({HostPath(mount.host_path), mount.mount_path, mount.read_only});
    }
    exec.argv = spec.argv;
    spawn.path = "/proc/self/exe";
    spawn.argv = {"handoff-sandbox-kubelet", kPodExecCommand};
    for (std::string& arg : PodExecArgs(exec)) spawn.argv.push_back(std::move(arg));
    spawn.env = ContainerEnvironment(spec, options_.node_name, kDefaultPath);
    if (!binary.note.empty() && pod.note_logged != binary.note) {
      spdlog::warn("pod {}: {}", name, binary.note);
      pod.note_logged = binary.note;
    }
  } else {
    spawn.path = options_.standin;
    spawn.argv = spec.argv;
    spawn.env = PodEnvironment(
        spec, PodContext{options_.node_name, options_.records, options_.root}, kDefaultPath);
  }
  absl::StatusOr<ProcessHandle> process = SpawnDetached(spawn);
  if (!process.ok()) return process.status();
  const SteadyTime now = std::chrono::steady_clock::now();
  if (pod.status.crashed) pod.status.back_off = NextBackOff(pod.status.back_off, spec.hash, now);
  pod.status.crashed = false;
  pod.status.running = true;
  pod.status.running_hash = spec.hash;
  pod.status.terminate_sent.reset();
  pod.status.kill_sent = false;
  pod.component = spec.component;
  pod.start_error.clear();
  const int pid = process->pid;
  pod.process = *std::move(process);
  LinkProcess(pid);
  // The log line, then the record, then the state file: whoever sees the pod in the state file
  // finds its record written, and whoever sees the record finds the log line.
  spdlog::info("pod {}: started process {} ({}) from {}: {}", name, pid, binary.path, spec.file,
               StrJoin(spec.argv, " "));
  Record("process-start", spec.component, pid, "");
  SaveState();
  return absl::OkStatus();
}

void Kubelet::HandleExit(const std::string& name, Pod& pod) {
  const std::string status = ReapExitStatus(*pod.process);
  const int pid = pod.process->pid;
  // A process that went while nobody asked it to crashed: the kubelet restarts it under
  // back-off (restartPolicy Always, the static pods' default).
  pod.status.crashed = !pod.status.terminate_sent;
  if (pod.status.terminate_sent) {
    // Stopped for a change of its manifest: the next manifest's pod waits out the real
    // kubelet's retry back-off, jittered as flowcontrol jitters it.
    std::uniform_real_distribution<double> jitter(0.0, options_.pod_restart_jitter);
    const auto delay = std::chrono::duration_cast<SteadyDuration>(options_.pod_restart_delay *
                                                                  (1.0 + jitter(random_)));
    pod.status.restart_not_before = std::chrono::steady_clock::now() + delay;
    pod.status.stopped_hash = pod.status.running_hash;
  }
  pod.status.running = false;
  pod.status.running_hash.clear();
  pod.status.terminate_sent.reset();
  pod.status.kill_sent = false;
  pod.process.reset();
  UnlinkProcess(pid);
  Record("process-exit", pod.component, pid, status);
  SaveState();
  spdlog::info("pod {}: process {} ended ({}){}", name, pid, status,
               pod.status.crashed ? " by itself" : "");
}

void Kubelet::SaveState() {
  PodProcesses processes;
  for (const auto& [name, pod] : pods_) {
    if (!pod.status.running) continue;
    processes[name] = PodProcess{pod.process->pid, pod.process->start_time, pod.status.running_hash,
                                 pod.component};
  }
  if (absl::Status saved = SavePodState(*fs_, processes); !saved.ok()) {
    spdlog::error("cannot record the pods: {}", std::string(saved.message()));
  }
}

void Kubelet::Record(const std::string& event, const std::string& component, int pid,
                     const std::string& status) {
  if (options_.records.empty()) return;
  RunRecord record;
  record.t_ns = RealtimeNanos();
  record.node = options_.node_name;
  record.component = component;
  record.pid = pid;
  record.event = event;
  record.status = status;
  if (absl::Status appended = AppendRunRecord(options_.records, record); !appended.ok()) {
    spdlog::error("cannot append to {}: {}", options_.records, std::string(appended.message()));
  }
}

void Kubelet::LinkProcess(int pid) {
  const std::string link = HostPath(StrCat(kProcViewDir, "/", pid));
  ::unlink(link.c_str());
  if (::symlink(StrCat("/proc/", pid).c_str(), link.c_str()) != 0) {
    spdlog::warn("cannot link {}: {}", link, std::strerror(errno));
  }
}

void Kubelet::UnlinkProcess(int pid) { ::unlink(HostPath(StrCat(kProcViewDir, "/", pid)).c_str()); }

void Kubelet::ClearProcessView() {
  // Entries of a previous kubelet (its own, its pods'): the adopted pods are linked again.
  const std::string dir = HostPath(kProcViewDir);
  DIR* listing = ::opendir(dir.c_str());
  if (listing == nullptr) return;
  while (const dirent* entry = ::readdir(listing)) {
    if (entry->d_name[0] == '.') continue;
    ::unlink(StrCat(dir, "/", entry->d_name).c_str());
  }
  ::closedir(listing);
}

absl::Status Kubelet::Run() {
  if (absl::Status setup = Setup(); !setup.ok()) return setup;
  SteadyTime next_relist = std::chrono::steady_clock::now();
  while (true) {
    SteadyTime now = std::chrono::steady_clock::now();
    bool changed = false;
    if (now >= next_relist) {
      EnsureWatch();
      changed = true;
      next_relist = now + options_.file_check_frequency;
    }
    if (changed) {
      Relist();
      Reconcile();
    }

    std::vector<pollfd> fds = {{stop_fd_.get(), POLLIN, 0}, {inotify_fd_.get(), POLLIN, 0}};
    std::vector<std::string> watched;
    for (const auto& [name, pod] : pods_) {
      if (!pod.process) continue;
      fds.push_back({pod.process->pidfd.get(), POLLIN, 0});
      watched.push_back(name);
    }
    SteadyTime until = next_relist;
    if (wake_at_ && *wake_at_ < until) until = *wake_at_;
    now = std::chrono::steady_clock::now();
    const auto timeout = std::chrono::duration_cast<std::chrono::milliseconds>(until - now);
    // Rounded up, so that a wake-up never comes just before its deadline and spins.
    const int timeout_ms = static_cast<int>(std::max<int64_t>(0, timeout.count() + 1));
    const int ready = ::poll(fds.data(), fds.size(), timeout_ms);
    if (ready < 0 && errno != EINTR) {
      return absl::InternalError(StrCat("poll: ", std::strerror(errno)));
    }
    if (ready <= 0) {
      Reconcile();  // a grace period or back-off may have ended
      continue;
    }
    if (fds[0].revents & POLLIN) {
      Shutdown();
      return absl::OkStatus();
    }
    bool relist = false;
    if (fds[1].revents & POLLIN) {
      DrainInotify();
      relist = true;
    }
    for (size_t i = 2; i < fds.size(); ++i) {
      if (fds[i].revents == 0) continue;
      Pod& pod = pods_[watched[i - 2]];
      if (pod.process && HasExited(*pod.process)) HandleExit(watched[i - 2], pod);
    }
    if (relist) {
      EnsureWatch();
      Relist();
    }
    Reconcile();
  }
}

}  // namespace

absl::Status RunSandboxKubelet(const KubeletOptions& options) {
  Kubelet kubelet(options);
  return kubelet.Run();
}

}  // namespace handoff::sandbox
