#include "rehearsal/kubelet/kubelet_control.h"

#include <httplib.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <charconv>
#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>
#include <thread>

#include "agent/manifest/flag_list.h"
#include "agent/manifest/kubelet_flags.h"
#include "common/base/strings.h"
#include "common/fs/atomic_file.h"
#include "common/fs/file_system.h"
#include "common/fs/host_path.h"
#include "rehearsal/kubelet/kubelet_options.h"
#include "rehearsal/kubelet/pod_state.h"
#include "rehearsal/kubelet/pod_sync.h"
#include "rehearsal/kubelet/process_control.h"
#include "rehearsal/monitor/run_record.h"

namespace handoff::sandbox {
namespace {

// Between looks at a starting kubelet: short, since a start takes milliseconds; bounded by
// options.health_timeout.
constexpr std::chrono::milliseconds kHealthPollInterval{50};
constexpr size_t kLogTailLines = 10;

// `root` absolute, as ParseKubeletOptions makes --root.
std::string Root(const std::string& root) {
  if (StartsWith(root, "/")) return TrimTrailingSlashes(root);
  char cwd[4096];
  if (::getcwd(cwd, sizeof(cwd)) == nullptr) return root;
  return TrimTrailingSlashes(StrCat(cwd, "/", root));
}

absl::StatusOr<KubeletBaseArgs> ReadBaseArgs(const FileSystem& fs, const std::string& root) {
  absl::StatusOr<std::string> text = fs.ReadFile(kKubeletBaseArgsFile);
  if (absl::IsNotFound(text.status())) {
    return absl::FailedPreconditionError(
        StrCat("no kubelet was started on ", root, " (", root, kKubeletBaseArgsFile,
               " is missing); run `handoff-sandbox-kubelet start --root ", root, " ...` first"));
  }
  if (!text.ok()) return text.status();
  const nlohmann::json json = nlohmann::json::parse(*text, nullptr, false);
  KubeletBaseArgs base;
  if (json.is_discarded() || !json.is_object() || !json.contains("binary") ||
      !json["binary"].is_string() || !json.contains("args") || !json["args"].is_array()) {
    return absl::InvalidArgumentError(
        StrCat(root, kKubeletBaseArgsFile, ": expected {\"binary\": \"...\", \"args\": [...]}"));
  }
  base.binary = json["binary"].get<std::string>();
  for (const nlohmann::json& arg : json["args"]) {
    if (!arg.is_string()) {
      return absl::InvalidArgumentError(
          StrCat(root, kKubeletBaseArgsFile, ": args must be strings"));
    }
    base.args.push_back(arg.get<std::string>());
  }
  return base;
}

// The kubelet that runs on `root` now, by its pid file: a process whose argv[0] is "kubelet"
// and whose --root is `root` (so that a reused pid is never signalled).
std::optional<ProcessHandle> RunningKubelet(const FileSystem& fs, const std::string& root) {
  absl::StatusOr<std::string> text = fs.ReadFile(kKubeletPidFile);
  if (!text.ok()) return std::nullopt;
  const std::string_view pid_text = StripWhitespace(*text);
  int pid = 0;
  auto [end, error] = std::from_chars(pid_text.data(), pid_text.data() + pid_text.size(), pid);
  if (error != std::errc() || end != pid_text.data() + pid_text.size() || pid <= 0) {
    return std::nullopt;
  }
  absl::StatusOr<ProcessHandle> process = OpenProcess(pid, std::nullopt);
  if (!process.ok()) return std::nullopt;
  std::optional<std::vector<std::string>> argv = ReadCmdline(pid);
  if (!argv || BaseName((*argv)[0]) != "kubelet") return std::nullopt;
  absl::StatusOr<KubeletOptions> options =
      ParseKubeletOptions(std::vector<std::string>(argv->begin() + 1, argv->end()));
  if (!options.ok() || options->root != root) return std::nullopt;
  return *std::move(process);
}

std::string LogTail(const std::string& path) {
  absl::StatusOr<std::string> text = NewPosixFileSystem("/")->ReadFile(path);
  if (!text.ok()) return "";
  std::vector<std::string_view> lines = StrSplit(*text, "\n", true);
  if (lines.size() > kLogTailLines) lines.erase(lines.begin(), lines.end() - kLogTailLines);
  return StrCat("\n  ", StrJoin(lines, "\n  "));
}

// Whether the kubelet `pid` answers on its health URL (from kKubeletHealthzFile) with its own
// pid: another process on the same address does not count.
bool AnswersHealthz(const FileSystem& fs, int pid, std::string* url) {
  absl::StatusOr<std::string> text = fs.ReadFile(kKubeletHealthzFile);
  if (!text.ok()) return false;
  const std::string prefix = StrCat(pid, " ");
  if (!StartsWith(*text, prefix)) return false;
  *url = std::string(StripWhitespace(std::string_view(*text).substr(prefix.size())));
  const size_t path_start = url->find('/', url->find("://") + 3);
  if (path_start == std::string::npos) return false;
  httplib::Client client(url->substr(0, path_start));
  client.set_connection_timeout(1, 0);
  client.set_read_timeout(1, 0);
  httplib::Result result = client.Get(url->substr(path_start).c_str());
  return result && result->status == 200 &&
         result->get_header_value("X-Sandbox-Kubelet-Pid") == StrCat(pid);
}

absl::Status Launch(FileSystem& fs, const std::string& root, const ControlOptions& options,
                    std::ostream& out) {
  KubeletBaseArgs base;
  absl::StatusOr<std::vector<std::string>> argv = KubeletArgv(root, &base);
  if (!argv.ok()) return argv.status();
  if (absl::Status dir = EnsureDirectory(fs, ParentPath(kKubeletLogFile), 0755); !dir.ok()) {
    return dir;
  }
  SpawnOptions spawn;
  spawn.path = base.binary;
  spawn.argv = *argv;
  spawn.output = StrCat(root, kKubeletLogFile);
  for (char** variable = environ; *variable != nullptr; ++variable) spawn.env.push_back(*variable);
  absl::StatusOr<ProcessHandle> kubelet = SpawnDetached(spawn);
  if (!kubelet.ok()) return kubelet.status();

  const auto deadline = std::chrono::steady_clock::now() + options.health_timeout;
  std::string url;
  while (true) {
    if (AnswersHealthz(fs, kubelet->pid, &url)) break;
    if (HasExited(*kubelet)) {
      return absl::UnavailableError(StrCat(
          "the kubelet (pid ", kubelet->pid, ") exited (", ReapExitStatus(*kubelet),
          ") before answering /healthz; the end of ", spawn.output, ":", LogTail(spawn.output)));
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      return absl::DeadlineExceededError(
          StrCat("the kubelet (pid ", kubelet->pid, ") did not answer /healthz",
                 url.empty() ? "" : StrCat(" on ", url), " within ", options.health_timeout.count(),
                 "ms; the end of ", spawn.output, ":", LogTail(spawn.output)));
    }
    std::this_thread::sleep_for(kHealthPollInterval);
  }
  out << "kubelet for " << root << " running (pid " << kubelet->pid << "), healthy at " << url
      << ": " << StrJoin(*argv, " ") << "\n";
  return absl::OkStatus();
}

void StopPods(FileSystem& fs, const std::string& root, std::ostream& out) {
  absl::StatusOr<PodProcesses> pods = LoadPodState(fs);
  if (!pods.ok()) {
    out << "cannot read the pods: " << pods.status().message() << "\n";
    return;
  }
  KubeletOptions kubelet;
  if (absl::StatusOr<KubeletBaseArgs> base = ReadBaseArgs(fs, root); base.ok()) {
    if (absl::StatusOr<KubeletOptions> parsed = ParseKubeletOptions(base->args); parsed.ok()) {
      kubelet = *parsed;
    }
  }
  std::vector<std::pair<PodProcess, ProcessHandle>> running;
  for (const auto& [name, pod] : *pods) {
    absl::StatusOr<ProcessHandle> process = OpenProcess(pod.pid, pod.start_time);
    if (!process.ok()) continue;
    (void)SendSignal(*process, SIGTERM);
    out << "stopping pod " << name << " (pid " << pod.pid << ")\n";
    running.emplace_back(pod, *std::move(process));
  }
  const auto deadline = std::chrono::steady_clock::now() + kStopGracePeriod;
  for (auto& [pod, process] : running) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (!WaitForExit(process, std::max(left, std::chrono::milliseconds(0)))) {
      (void)SendSignal(process, SIGKILL);
      WaitForExit(process, std::chrono::milliseconds(5'000));
    }
    ::unlink(StrCat(root, kProcViewDir, "/", pod.pid).c_str());
    if (!kubelet.records.empty()) {
      timespec now;
      clock_gettime(CLOCK_REALTIME, &now);
      RunRecord record;
      record.t_ns = static_cast<int64_t>(now.tv_sec) * 1'000'000'000 + now.tv_nsec;
      record.node = kubelet.node_name;
      record.component = pod.component;
      record.pid = pod.pid;
      record.event = "process-exit";
      record.status = "unknown";
      (void)AppendRunRecord(kubelet.records, record);
    }
  }
  if (absl::Status saved = SavePodState(fs, {}); !saved.ok()) {
    out << "cannot record the pods as stopped: " << saved.message() << "\n";
  }
}

}  // namespace

absl::StatusOr<std::vector<std::string>> KubeletArgv(const std::string& root,
                                                     KubeletBaseArgs* base) {
  std::unique_ptr<FileSystem> fs = NewPosixFileSystem(Root(root));
  absl::StatusOr<KubeletBaseArgs> read = ReadBaseArgs(*fs, Root(root));
  if (!read.ok()) return read.status();
  std::vector<std::string> argv = {"kubelet"};
  argv.insert(argv.end(), read->args.begin(), read->args.end());
  // The kubeadm drop-in reads the file with EnvironmentFile=- (optional) and expands
  // $KUBELET_KUBEADM_ARGS after the base flags, so its flags win.
  absl::StatusOr<std::string> flags_text = fs->ReadFile(kKubeletFlagsFile);
  if (flags_text.ok()) {
    absl::StatusOr<KubeletFlagsFile> flags =
        KubeletFlagsFile::Parse(*flags_text, StrCat(Root(root), kKubeletFlagsFile));
    if (!flags.ok()) return flags.status();
    argv.insert(argv.end(), flags->flags().items().begin(), flags->flags().items().end());
  } else if (!absl::IsNotFound(flags_text.status())) {
    return flags_text.status();
  }
  absl::StatusOr<KubeletOptions> options =
      ParseKubeletOptions(std::vector<std::string>(argv.begin() + 1, argv.end()));
  if (!options.ok()) {
    return absl::InvalidArgumentError(StrCat("the kubelet's command line for ", root,
                                             " is not valid: ", options.status().message()));
  }
  if (base != nullptr) *base = *std::move(read);
  return argv;
}

absl::Status StartKubelet(const std::string& binary, const std::vector<std::string>& args,
                          const ControlOptions& options, std::ostream& out) {
  absl::StatusOr<KubeletOptions> parsed = ParseKubeletOptions(args);
  if (!parsed.ok()) return parsed.status();
  const std::string root = parsed->root;
  std::unique_ptr<FileSystem> fs = NewPosixFileSystem(root);
  if (std::optional<ProcessHandle> running = RunningKubelet(*fs, root)) {
    return absl::FailedPreconditionError(
        StrCat("a kubelet already runs on ", root, " (pid ", running->pid, "); use restart"));
  }
  // Relative paths are made absolute now: the kubelet runs in "/".
  FlagList absolute(args);
  absolute.Set("root", root);
  absolute.Set("standin", parsed->standin);
  if (!parsed->records.empty()) absolute.Set("records", parsed->records);
  if (!parsed->real_bin_dir.empty()) absolute.Set("real-bin-dir", parsed->real_bin_dir);
  if (absl::Status dir = EnsureDirectory(*fs, ParentPath(kKubeletBaseArgsFile), 0755); !dir.ok()) {
    return dir;
  }
  nlohmann::json json;
  json["binary"] = binary;
  json["args"] = absolute.items();
  if (absl::Status written = AtomicReplace(*fs, kKubeletBaseArgsFile, json.dump(2) + "\n",
                                           FileInfo{false, 0644, 0, 0});
      !written.ok()) {
    return written;
  }
  return Launch(*fs, root, options, out);
}

absl::Status StopKubelet(const std::string& root_arg, bool stop_pods, const ControlOptions& options,
                         std::ostream& out) {
  const std::string root = Root(root_arg);
  std::unique_ptr<FileSystem> fs = NewPosixFileSystem(root);
  if (std::optional<ProcessHandle> kubelet = RunningKubelet(*fs, root)) {
    if (absl::Status sent = SendSignal(*kubelet, SIGTERM); !sent.ok()) return sent;
    if (!WaitForExit(*kubelet, options.stop_timeout)) {
      // systemd's TimeoutStopSec: after it, SIGKILL.
      out << "kubelet (pid " << kubelet->pid << ") still runs after "
          << options.stop_timeout.count() << "ms; SIGKILL\n";
      if (absl::Status sent = SendSignal(*kubelet, SIGKILL); !sent.ok()) return sent;
      if (!WaitForExit(*kubelet, options.stop_timeout)) {
        return absl::DeadlineExceededError(
            StrCat("the kubelet (pid ", kubelet->pid, ") did not exit after SIGKILL"));
      }
    }
    out << "kubelet for " << root << " (pid " << kubelet->pid << ") stopped\n";
  } else {
    out << "no kubelet runs on " << root << "\n";
  }
  if (stop_pods) StopPods(*fs, root, out);
  return absl::OkStatus();
}

absl::Status RestartKubelet(const std::string& root_arg, const ControlOptions& options,
                            std::ostream& out) {
  const std::string root = Root(root_arg);
  std::unique_ptr<FileSystem> fs = NewPosixFileSystem(root);
  // Checked before the old kubelet is stopped, so that a node that cannot be restarted keeps it.
  if (absl::StatusOr<std::vector<std::string>> argv = KubeletArgv(root, nullptr); !argv.ok()) {
    return argv.status();
  }
  if (absl::Status stopped = StopKubelet(root, false, options, out); !stopped.ok()) return stopped;
  return Launch(*fs, root, options, out);
}

}  // namespace handoff::sandbox
