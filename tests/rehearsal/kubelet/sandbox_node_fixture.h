// A simulated node for the sandbox kubelet's process tests: a temp root with the kubelet's
// layout, the real handoff-sandbox-kubelet binary started through its `start` command, and the
// test stand-in as the pods' program. The test process is a child subreaper, as the sandbox's
// orchestrator is, so that the kubelets and pods reparented to it are reaped.
#ifndef HANDOFF_TESTS_REHEARSAL_KUBELET_SANDBOX_NODE_FIXTURE_H_
#define HANDOFF_TESTS_REHEARSAL_KUBELET_SANDBOX_NODE_FIXTURE_H_

#include <fcntl.h>
#include <httplib.h>
#include <signal.h>
#include <spawn.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "common/base/strings.h"
#include "gtest/gtest.h"
#include "rehearsal/kubelet/kubelet_options.h"
#include "rehearsal/kubelet/pod_state.h"
#include "rehearsal/kubelet/process_control.h"
#include "rehearsal/monitor/run_record.h"

extern char** environ;

namespace handoff::sandbox::testing {

struct CommandResult {
  int exit_code = -1;
  std::string output;  // stdout and stderr
};

inline std::string ReadText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream content;
  content << in.rdbuf();
  return content.str();
}

// Whether `pid` runs and was started at `start_time` (a zombie does not run).
inline bool Running(int pid, std::uint64_t start_time) {
  std::optional<ProcStat> stat = ReadProcStat(pid);
  return stat && stat->start_time == start_time && stat->state != 'Z' && stat->state != 'X';
}

// /proc/<pid>/environ as NAME → value.
inline std::map<std::string, std::string> Environment(int pid) {
  std::map<std::string, std::string> env;
  const std::string text = ReadText(StrCat("/proc/", pid, "/environ"));
  for (std::string_view item : StrSplit(text, std::string_view("\0", 1), true)) {
    const size_t eq = item.find('=');
    if (eq != std::string_view::npos) env[std::string(item.substr(0, eq))] = item.substr(eq + 1);
  }
  return env;
}

// A pod manifest whose first container runs `command` + `args` (no command: args only).
inline std::string PodManifest(
    const std::string& name, const std::vector<std::string>& command,
    const std::vector<std::string>& args,
    const std::string& image = "registry.k8s.io/kube-controller-manager:v1.26.9") {
  std::string yaml = StrCat("apiVersion: v1\nkind: Pod\nmetadata:\n  name: ", name,
                            "\n  namespace: kube-system\nspec:\n  containers:\n  - name: ", name,
                            "\n    image: ", image, "\n");
  if (!command.empty()) {
    yaml += "    command:\n";
    for (const std::string& item : command) StrAppend(&yaml, "    - ", item, "\n");
  }
  if (!args.empty()) {
    yaml += "    args:\n";
    for (const std::string& item : args) StrAppend(&yaml, "    - ", item, "\n");
  }
  yaml +=
      "    volumeMounts:\n"
      "    - mountPath: /etc/kubernetes/controller-manager.conf\n"
      "      name: kubeconfig\n"
      "      readOnly: true\n"
      "    - mountPath: /etc/kubernetes/pki\n"
      "      name: k8s-certs\n"
      "      readOnly: true\n"
      "  hostNetwork: true\n"
      "  volumes:\n"
      "  - hostPath:\n"
      "      path: /etc/kubernetes/controller-manager.conf\n"
      "      type: FileOrCreate\n"
      "    name: kubeconfig\n"
      "  - hostPath:\n"
      "      path: /etc/kubernetes/pki\n"
      "      type: DirectoryOrCreate\n"
      "    name: k8s-certs\n";
  return yaml;
}

class SandboxNodeTest : public ::testing::Test {
 protected:
  static constexpr std::chrono::seconds kWaitLimit{20};

  void SetUp() override {
    ASSERT_EQ(prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0), 0);
    char dir[] = "/tmp/sandbox-kubelet-test-XXXXXX";
    ASSERT_NE(mkdtemp(dir), nullptr);
    root_ = dir;
    node_ = "cp-1";
    records_ = root_ + "/records/cp-1.jsonl";
    std::filesystem::create_directories(root_ + "/etc/kubernetes/manifests");
    std::filesystem::create_directories(root_ + "/standin");
    std::filesystem::create_directories(root_ + "/records");
  }

  void TearDown() override {
    Control({"stop", "--root", root_, "--pods"});
    // Anything still linked in the node's process view (a test that failed half-way).
    std::error_code error;
    for (const auto& entry : std::filesystem::directory_iterator(root_ + kProcViewDir, error)) {
      const int pid = std::atoi(entry.path().filename().c_str());
      if (pid > 0) ::kill(pid, SIGKILL);
    }
    ReapOrphans();
    std::filesystem::remove_all(root_, error);
  }

  std::vector<std::string> BaseFlags() const {
    return {"--root", root_, "--standin=" HANDOFF_TEST_STANDIN_BIN, "--records", records_,
            "--node-name=" + node_, "--healthz-port=0", "--healthz-bind-address=127.0.0.1",
            // Long: these tests see manifest changes through inotify alone.
            "--file-check-frequency=1h",
            // Flags of the real kubelet that the sandbox's accepts and ignores.
            "--container-runtime-endpoint", "unix:///run/containerd/containerd.sock",
            "--cloud-provider=aws"};
  }

  // Runs handoff-sandbox-kubelet with `args` and waits for it.
  CommandResult Control(const std::vector<std::string>& args) {
    std::vector<std::string> argv = {HANDOFF_SANDBOX_KUBELET_BIN};
    argv.insert(argv.end(), args.begin(), args.end());
    std::vector<char*> c_argv;
    for (std::string& item : argv) c_argv.push_back(item.data());
    c_argv.push_back(nullptr);
    const std::string output_path = root_ + "/control-output";
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 1, output_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                     0644);
    posix_spawn_file_actions_adddup2(&actions, 1, 2);
    pid_t pid = 0;
    CommandResult result;
    if (posix_spawn(&pid, argv[0].c_str(), &actions, nullptr, c_argv.data(), environ) != 0) {
      posix_spawn_file_actions_destroy(&actions);
      return result;
    }
    posix_spawn_file_actions_destroy(&actions);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    result.output = ReadText(output_path);
    return result;
  }

  void StartKubelet() {
    std::vector<std::string> args = {"start"};
    for (const std::string& flag : BaseFlags()) args.push_back(flag);
    args.insert(args.end(), extra_flags_.begin(), extra_flags_.end());
    CommandResult started = Control(args);
    ASSERT_EQ(started.exit_code, 0) << started.output << KubeletLog();
  }

  static void ReapOrphans() {
    while (waitpid(-1, nullptr, WNOHANG) > 0) {
    }
  }

  // Polls `condition` until it holds or kWaitLimit passes; reaps orphans meanwhile.
  bool WaitFor(const std::function<bool()>& condition) {
    const auto deadline = std::chrono::steady_clock::now() + kWaitLimit;
    while (true) {
      ReapOrphans();
      if (condition()) return true;
      if (std::chrono::steady_clock::now() >= deadline) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }

  std::string ManifestPath(const std::string& file) const {
    return StrCat(root_, "/etc/kubernetes/manifests/", file);
  }

  // The way handoff writes: a dotfile temp in the same directory, then rename(2).
  void WriteManifestAtomically(const std::string& file, const std::string& content) {
    const std::string temp = ManifestPath("." + file + ".tmp");
    {
      std::ofstream out(temp, std::ios::binary);
      out << content;
    }
    ASSERT_EQ(std::rename(temp.c_str(), ManifestPath(file).c_str()), 0);
  }

  PodProcesses Pods() const {
    const std::string text = ReadText(root_ + kPodStatePath);
    if (text.empty()) return {};
    absl::StatusOr<PodProcesses> pods = ParsePodState(text, "sandbox-pods.json");
    return pods.ok() ? *pods : PodProcesses();
  }

  std::optional<PodProcess> Pod(const std::string& name) const {
    PodProcesses pods = Pods();
    auto it = pods.find(name);
    if (it == pods.end()) return std::nullopt;
    return it->second;
  }

  // Waits for pod `name` to run a process other than `not_pid` that is ready, and returns it.
  // Ready means the test stand-in has written $HANDOFF_SANDBOX_ROOT/standin/<pid>, which it does
  // after blocking SIGTERM: before that, a SIGTERM ends it by the default action ("signal 15"),
  // as it would a real component that has not yet installed its handlers.
  std::optional<PodProcess> WaitForPod(const std::string& name, int not_pid = 0) {
    std::optional<PodProcess> found;
    WaitFor([&] {
      found = Pod(name);
      return found && found->pid != not_pid && Running(found->pid, found->start_time) &&
             std::filesystem::exists(StrCat(root_, "/standin/", found->pid));
    });
    if (!found || found->pid == not_pid) return std::nullopt;
    return found;
  }

  std::vector<RunRecord> Records() const {
    std::vector<RunRecord> records;
    const std::string text = ReadText(records_);
    for (std::string_view line : StrSplit(text, "\n", true)) {
      absl::StatusOr<RunRecord> record = ParseRunRecord(std::string(line));
      if (record.ok()) records.push_back(*record);
    }
    return records;
  }

  std::vector<RunRecord> RecordsOf(const std::string& event, int64_t pid) const {
    std::vector<RunRecord> found;
    for (const RunRecord& record : Records()) {
      if (record.event == event && record.pid == pid) found.push_back(record);
    }
    return found;
  }

  std::string KubeletLog() const {
    return StrCat("\n--- kubelet log ---\n", ReadText(root_ + kKubeletLogFile));
  }

  int KubeletPid() const { return std::atoi(ReadText(root_ + kKubeletPidFile).c_str()); }

  // GET on the running kubelet's /healthz: the status and the body.
  std::pair<int, std::string> Healthz() const {
    const std::string text = ReadText(root_ + kKubeletHealthzFile);
    const size_t space = text.find(' ');
    if (space == std::string::npos) return {0, ""};
    const std::string url(StripWhitespace(std::string_view(text).substr(space + 1)));
    const size_t path = url.find('/', url.find("://") + 3);
    httplib::Client client(url.substr(0, path));
    httplib::Result result = client.Get(url.substr(path).c_str());
    if (!result) return {0, ""};
    return {result->status, result->body};
  }

  std::string root_;
  std::string node_;
  std::string records_;
  std::vector<std::string> extra_flags_;  // given to `start` after BaseFlags()
};

}  // namespace handoff::sandbox::testing

#endif  // HANDOFF_TESTS_REHEARSAL_KUBELET_SANDBOX_NODE_FIXTURE_H_
