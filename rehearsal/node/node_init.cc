#include "rehearsal/node/node_init.h"

#include <fcntl.h>
#include <linux/sched.h>
#include <net/if.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "absl/time/clock.h"
#include "common/base/strings.h"
#include "common/base/unique_fd.h"
#include "common/fs/file_system.h"
#include "rehearsal/node/first_process.h"
#include "rehearsal/node/kubelet_unit.h"
#include "rehearsal/node/text_file.h"

namespace handoff::sandbox::node {
namespace {

absl::Status Errno(const std::string& what) {
  return absl::InternalError(StrCat(what, ": ", std::strerror(errno)));
}

void Log(const std::string& line) {
  std::cerr << absl::FormatTime("%Y-%m-%dT%H:%M:%E3SZ", absl::Now(), absl::UTCTimeZone())
            << " node-init: " << line << std::endl;
}

absl::Status MakeDirs(const std::string& path) {
  std::error_code error;
  std::filesystem::create_directories(path, error);
  if (error) return absl::InternalError(StrCat("mkdir ", path, ": ", error.message()));
  return absl::OkStatus();
}

absl::Status Mount(const NodeMount& mount) {
  absl::Status made = MakeDirs(mount.target);
  if (!made.ok()) return made;
  switch (mount.kind) {
    case NodeMount::Kind::kOverlay: {
      const std::string options =
          StrCat("lowerdir=", mount.lower, ",upperdir=", mount.upper, ",workdir=", mount.work);
      if (::mount("overlay", mount.target.c_str(), "overlay", 0, options.c_str()) != 0) {
        return Errno(StrCat("mount overlay on ", mount.target, " (", options, ")"));
      }
      return absl::OkStatus();
    }
    case NodeMount::Kind::kTmpfs:
      if (::mount("tmpfs", mount.target.c_str(), "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755") != 0) {
        return Errno(StrCat("mount tmpfs on ", mount.target));
      }
      return absl::OkStatus();
    case NodeMount::Kind::kBind:
      if (::mount(mount.source.c_str(), mount.target.c_str(), nullptr, MS_BIND | MS_REC, nullptr) !=
          0) {
        return Errno(StrCat("bind ", mount.source, " on ", mount.target));
      }
      return absl::OkStatus();
  }
  return absl::OkStatus();
}

// The loopback interface up: the node's own addresses (127.0.0.1, and whatever the sandbox adds
// to lo) answer from the start.
absl::Status LoopbackUp() {
  UniqueFd fd(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return Errno("socket");
  ifreq request{};
  std::strncpy(request.ifr_name, "lo", IFNAMSIZ - 1);
  if (::ioctl(fd.get(), SIOCGIFFLAGS, &request) != 0) return Errno("SIOCGIFFLAGS lo");
  request.ifr_flags = static_cast<short>(request.ifr_flags | IFF_UP | IFF_RUNNING);
  if (::ioctl(fd.get(), SIOCSIFFLAGS, &request) != 0) return Errno("SIOCSIFFLAGS lo");
  return absl::OkStatus();
}

absl::Status SetUpNode(const BootSpec& spec) {
  // Nothing mounted here may reach the host's mount table.
  if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) {
    return Errno("make / private");
  }
  if (::mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr) != 0) {
    return Errno("mount /proc");
  }
  if (::sethostname(spec.name.data(), spec.name.size()) != 0) return Errno("sethostname");
  for (const std::string& dir : NodeDirectories(spec)) {
    absl::Status made = MakeDirs(dir);
    if (!made.ok()) return made;
  }
  for (const NodeMount& mount : NodeMounts(spec)) {
    absl::Status mounted = Mount(mount);
    if (!mounted.ok()) return mounted;
  }
  absl::Status made = MakeDirs(std::filesystem::path(kControlSocket).parent_path());
  if (!made.ok()) return made;
  // kubeadm's preflight wants forwarding on; this is the node's own network namespace.
  std::ofstream forward("/proc/sys/net/ipv4/ip_forward");
  forward << "1\n";
  return LoopbackUp();
}

// One service of the node: its process, and when it may start again.
struct Service {
  std::string name;
  std::string log;
  absl::Duration restart_delay;
  pid_t pid = -1;
  bool restarting = false;  // stopped on request: start again as soon as it exits
  bool stopped = false;     // stop-kubelet: not started again until restart-kubelet
  std::vector<int> stop_waiting;  // control clients to answer once it has exited
  absl::Time not_before = absl::InfinitePast();
  std::vector<int> waiting;  // control clients to answer once it runs again
};

class NodeInit {
 public:
  explicit NodeInit(const BootSpec& spec) : spec_(spec) {
    containerd_.name = "containerd";
    containerd_.log = StrCat(spec.log_dir, "/containerd-", spec.name, ".log");
    containerd_.restart_delay = absl::Seconds(1);
    kubelet_.name = "kubelet";
    kubelet_.log = StrCat(spec.log_dir, "/kubelet-", spec.name, ".log");
    kubelet_.restart_delay = spec.kubelet_restart_delay;
  }

  int Run();

 private:
  absl::Status Listen();
  // Starts `service` when it is due and may start; true when it runs afterwards.
  void MaybeStart(Service& service);
  absl::Status InstallKubeletUnit();
  std::optional<std::vector<std::string>> ArgvOf(const Service& service);
  void Reap();
  void Accept();
  void Handle(int client);
  void Answer(int client, const std::string& line);
  void AnswerWaiting(Service& service);
  void StopAll();

  const BootSpec& spec_;
  // The node's own file system, from inside its mount namespace.
  std::unique_ptr<FileSystem> fs_ = NewPosixFileSystem("/");
  Service containerd_;
  Service kubelet_;
  UniqueFd signals_;
  UniqueFd listener_;
  bool stopping_ = false;
};

// The kubelet's unit files as the package installs them, unless the node has its own already
// (a node booted again keeps what was written to it).
absl::Status NodeInit::InstallKubeletUnit() {
  for (const auto& [path, text] : KubeletPackageFiles(spec_.kubelet)) {
    if (std::filesystem::exists(path)) continue;
    if (absl::Status made = MakeDirs(std::filesystem::path(path).parent_path().string());
        !made.ok()) {
      return made;
    }
    if (absl::Status written = WriteText(path, text); !written.ok()) return written;
  }
  return absl::OkStatus();
}

std::optional<std::vector<std::string>> NodeInit::ArgvOf(const Service& service) {
  if (&service == &containerd_) {
    return std::vector<std::string>{spec_.containerd, "--config", kContainerdConfig};
  }
  // kubeadm's kubelet-start phase writes the configuration, then restarts the kubelet; until
  // then systemd's kubelet fails and is restarted every 10 s. Starting it once the file exists
  // is what that comes to.
  if (!std::filesystem::exists(kKubeletConfig)) return std::nullopt;
  absl::StatusOr<std::vector<std::string>> argv = KubeletArgv(*fs_, spec_.name);
  if (!argv.ok()) {
    Log(StrCat("kubelet not started: ", argv.status().message()));
    return std::nullopt;
  }
  return *argv;
}

void NodeInit::MaybeStart(Service& service) {
  if (!spec_.services || stopping_ || service.stopped || service.pid > 0 ||
      absl::Now() < service.not_before) {
    return;
  }
  std::optional<std::vector<std::string>> argv = ArgvOf(service);
  if (!argv) return;
  const pid_t pid = ::fork();
  if (pid < 0) {
    Log(StrCat("fork for ", service.name, ": ", std::strerror(errno)));
    service.not_before = absl::Now() + service.restart_delay;
    return;
  }
  if (pid == 0) {
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    ::setsid();
    const int log = ::open(service.log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    const int null = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (log < 0 || null < 0) _exit(126);
    ::dup2(null, STDIN_FILENO);
    ::dup2(log, STDOUT_FILENO);
    ::dup2(log, STDERR_FILENO);
    ::setenv("PATH", spec_.path.c_str(), 1);
    std::vector<char*> args;
    for (std::string& arg : *argv) args.push_back(arg.data());
    args.push_back(nullptr);
    ::execv(args[0], args.data());
    _exit(127);
  }
  service.pid = pid;
  service.restarting = false;
  Log(StrCat("started ", service.name, " (pid ", pid, "): ", StrJoin(*argv, " ")));
  AnswerWaiting(service);
}

void NodeInit::AnswerWaiting(Service& service) {
  for (int client : service.waiting) Answer(client, StrCat("ok ", service.pid));
  service.waiting.clear();
}

void NodeInit::Reap() {
  while (true) {
    int status = 0;
    const pid_t pid = ::waitpid(-1, &status, WNOHANG);
    if (pid <= 0) return;
    for (Service* service : {&containerd_, &kubelet_}) {
      if (service->pid != pid) continue;
      service->pid = -1;
      const std::string how = WIFEXITED(status) ? StrCat("exit ", WEXITSTATUS(status))
                                                : StrCat("signal ", WTERMSIG(status));
      for (int client : service->stop_waiting) Answer(client, StrCat("ok ", pid));
      service->stop_waiting.clear();
      if (service->stopped) {
        Log(StrCat(service->name, " stopped (", how, "): not started again until restarted"));
      } else if (service->restarting) {
        Log(StrCat(service->name, " stopped (", how, "): starting it again"));
        service->not_before = absl::InfinitePast();
      } else {
        Log(StrCat(service->name, " exited (", how, "): starting it again in ",
                   absl::FormatDuration(service->restart_delay)));
        service->not_before = absl::Now() + service->restart_delay;
      }
    }
  }
}

absl::Status NodeInit::Listen() {
  ::unlink(kControlSocket);
  listener_ = UniqueFd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!listener_.valid()) return Errno("socket");
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::strncpy(address.sun_path, kControlSocket, sizeof(address.sun_path) - 1);
  if (::bind(listener_.get(), reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0) {
    return Errno(StrCat("bind ", kControlSocket));
  }
  if (::listen(listener_.get(), 16) != 0) return Errno("listen");
  return absl::OkStatus();
}

void NodeInit::Answer(int client, const std::string& line) {
  const std::string text = StrCat(line, "\n");
  (void)!::write(client, text.data(), text.size());
  ::close(client);
}

void NodeInit::Accept() {
  while (true) {
    const int client = ::accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC);
    if (client < 0) return;
    Handle(client);
  }
}

void NodeInit::Handle(int client) {
  // A command is one short line, sent at once by a local client: read it with a bounded wait.
  std::string line;
  char buffer[256];
  const absl::Time deadline = absl::Now() + absl::Seconds(2);
  while (line.find('\n') == std::string::npos && line.size() < sizeof(buffer)) {
    pollfd event{client, POLLIN, 0};
    const int wait_ms =
        static_cast<int>(std::max<int64_t>(0, absl::ToInt64Milliseconds(deadline - absl::Now())));
    if (::poll(&event, 1, wait_ms) <= 0) break;
    const ssize_t got = ::read(client, buffer, sizeof(buffer));
    if (got <= 0) break;
    line.append(buffer, static_cast<size_t>(got));
  }
  const std::string command(StripWhitespace(line));
  if (command == "status") {
    Answer(client,
           StrCat("kubelet ", kubelet_.pid > 0 ? std::to_string(kubelet_.pid) : "-", " containerd ",
                  containerd_.pid > 0 ? std::to_string(containerd_.pid) : "-"));
  } else if (command == "restart-kubelet") {
    Log("restart-kubelet requested");
    kubelet_.waiting.push_back(client);
    kubelet_.stopped = false;
    if (kubelet_.pid > 0) {
      kubelet_.restarting = true;
      ::kill(kubelet_.pid, SIGTERM);
    } else {
      kubelet_.not_before = absl::InfinitePast();
      MaybeStart(kubelet_);
    }
  } else if (command == "stop-kubelet") {
    Log("stop-kubelet requested");
    kubelet_.stopped = true;
    if (kubelet_.pid <= 0) {
      Answer(client, "ok -");
      return;
    }
    kubelet_.stop_waiting.push_back(client);
    ::kill(kubelet_.pid, SIGTERM);
  } else if (command == "kill-kubelet") {
    if (kubelet_.pid <= 0) {
      Answer(client, "error the kubelet is not running");
      return;
    }
    Log(StrCat("kill-kubelet requested: SIGKILL to ", kubelet_.pid));
    ::kill(kubelet_.pid, SIGKILL);
    Answer(client, StrCat("ok ", kubelet_.pid));
  } else {
    Answer(client, StrCat("error unknown command \"", command, "\""));
  }
}

void NodeInit::StopAll() {
  stopping_ = true;
  for (Service* service : {&kubelet_, &containerd_}) {
    if (service->pid <= 0) continue;
    ::kill(service->pid, SIGTERM);
    const absl::Time deadline = absl::Now() + absl::Seconds(10);
    while (service->pid > 0 && absl::Now() < deadline) {
      Reap();
      if (service->pid > 0) ::usleep(20000);
    }
    if (service->pid > 0) ::kill(service->pid, SIGKILL);
  }
}

int NodeInit::Run() {
  sigset_t handled;
  sigemptyset(&handled);
  for (int signal : {SIGCHLD, SIGTERM, SIGINT, SIGHUP}) sigaddset(&handled, signal);
  ::sigprocmask(SIG_BLOCK, &handled, nullptr);
  signals_ = UniqueFd(::signalfd(-1, &handled, SFD_CLOEXEC | SFD_NONBLOCK));
  if (!signals_.valid()) {
    Log(StrCat("signalfd: ", std::strerror(errno)));
    return 1;
  }
  absl::Status ready = SetUpNode(spec_);
  if (ready.ok() && spec_.services) ready = InstallKubeletUnit();
  if (ready.ok()) ready = Listen();
  if (ready.ok()) ready = WriteText(ReadyFile(spec_), "ready\n");
  if (!ready.ok()) {
    Log(StrCat("the node cannot be set up: ", ready.message()));
    return 1;
  }
  Log(StrCat("node ", spec_.name, " is up"));
  while (true) {
    MaybeStart(containerd_);
    MaybeStart(kubelet_);
    // Wake for the next due restart, and every 200 ms while the kubelet waits for kubeadm's
    // configuration (nothing signals a file that kubeadm writes).
    absl::Duration wait = absl::Seconds(60);
    const absl::Time now = absl::Now();
    for (const Service* service : {&containerd_, &kubelet_}) {
      if (service->pid <= 0 && service->not_before > now) {
        wait = std::min(wait, service->not_before - now);
      }
    }
    if (spec_.services && kubelet_.pid <= 0) wait = std::min(wait, absl::Milliseconds(200));
    pollfd events[2] = {{signals_.get(), POLLIN, 0}, {listener_.get(), POLLIN, 0}};
    const int wait_ms = static_cast<int>(std::max<int64_t>(0, absl::ToInt64Milliseconds(wait)));
    if (::poll(events, 2, wait_ms) < 0 && errno != EINTR) {
      Log(StrCat("poll: ", std::strerror(errno)));
      return 1;
    }
    if (events[0].revents & POLLIN) {
      signalfd_siginfo info{};
      while (::read(signals_.get(), &info, sizeof(info)) == sizeof(info)) {
        if (info.ssi_signo == SIGTERM || info.ssi_signo == SIGINT) {
          Log("stopping: the kubelet, then containerd");
          StopAll();
          return 0;
        }
      }
      Reap();
    }
    if (events[1].revents & POLLIN) Accept();
  }
}

}  // namespace

std::string PidFile(const BootSpec& spec) { return StrCat(spec.dir, "/.node/pid"); }
std::string ReadyFile(const BootSpec& spec) { return StrCat(spec.dir, "/.node/ready"); }

int RunNodeInit(const BootSpec& spec) {
  NodeInit init(spec);
  return init.Run();
}

int BootNode(const BootSpec& spec) {
  const pid_t starter = ::getppid();
  // The node dies with whoever started it: a crashed sandbox leaves no node behind.
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != starter) return 1;
  if (absl::Status made = MakeDirs(StrCat(spec.dir, "/.node")); !made.ok()) {
    std::cerr << "handoff-sandbox-node boot: " << made.message() << "\n";
    return 1;
  }
  if (::unshare(CLONE_NEWNS | CLONE_NEWUTS | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWPID) != 0) {
    std::cerr << "handoff-sandbox-node boot: unshare: " << std::strerror(errno)
              << " (needs root)\n";
    return 1;
  }
  FirstProcess init;
  init.who = "handoff-sandbox-node boot";
  init.forwarded = {SIGTERM, SIGINT};
  init.setup_failed = 1;
  // PID 1 of the node: the kernel kills the whole node when it exits.
  init.child = [&spec] { return RunNodeInit(spec); };
  init.started = [&spec](pid_t pid) {
    absl::Status written = WriteText(PidFile(spec), StrCat(pid, "\n"));
    if (!written.ok()) std::cerr << "handoff-sandbox-node boot: " << written.message() << "\n";
    return written.ok();
  };
  return RunFirstProcess(init);
}

}  // namespace handoff::sandbox::node
