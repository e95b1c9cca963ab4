// A stand-in for a node's kubelet and the processes it runs, for apply tests. It models what
// handoff relies on: every file in the manifest directory not starting with "." runs as a
// process whose argv is its container's command + args (the image entrypoint first for an
// args-only container); a changed manifest gets a new process (new pid), a removed one none;
// the kubelet runs with what its unit gives it (kubelet.service, its drop-ins and environment
// files, as systemd merges them; on a node without one, its flags file's args) and re-reads
// them only when restarted. Knobs make
// it misbehave the way real nodes do. Its pods' processes can be signalled, which ends them.
#ifndef HANDOFF_TESTS_AGENT_APPLY_FAKE_KUBELET_H_
#define HANDOFF_TESTS_AGENT_APPLY_FAKE_KUBELET_H_

#include <map>
#include <set>
#include <string>
#include <vector>

#include "agent/engine/settings.h"
#include "agent/kubelet/kubelet_command_line.h"
#include "agent/manifest/kubelet_flags.h"
#include "agent/manifest/static_pod.h"
#include "common/base/strings.h"
#include "common/fs/file_system.h"
#include "common/system/command_runner.h"
#include "common/system/health_checker.h"
#include "common/system/process_table.h"
#include "common/systemd/unit_file.h"

namespace handoff::testing {

class FakeKubelet : public ProcessTable,
                    public CommandRunner,
                    public HealthChecker,
                    public ProcessSignaller {
 public:
  FakeKubelet(const FileSystem& fs, NodePaths paths) : fs_(fs), paths_(std::move(paths)) {
    RestartKubelet();
  }

  // ProcessTable: the kubelet notices manifest changes when asked (as if by inotify).
  absl::StatusOr<std::vector<ProcessInfo>> List() const override {
    Sync();
    std::vector<ProcessInfo> list;
    for (const auto& [pod, process] : pods_) list.push_back(process.info);
    list.push_back(kubelet_);
    return list;
  }

  // CommandRunner: the restart command restarts the kubelet; every command is recorded.
  absl::Status Run(const std::vector<std::string>& argv, absl::Duration) override {
    commands.push_back(StrJoin(argv, " "));
    if (argv == std::vector<std::string>{"systemctl", "restart", "kubelet"}) {
      if (fail_kubelet_restart)
        return absl::InternalError("systemctl: Job for kubelet.service failed");
      RestartKubelet();
      return absl::OkStatus();
    }
    return absl::NotFoundError(StrCat(argv.empty() ? "" : argv[0], ": command not found"));
  }

  // HealthChecker: every endpoint answers 200 unless its port is marked unhealthy.
  absl::Status Check(const HealthEndpoint& endpoint, absl::Duration) override {
    ++health_checks;
    if (unhealthy_ports.count(endpoint.port)) {
      return absl::UnavailableError(StrCat(endpoint.Url(), ": 500 Internal Server Error"));
    }
    return absl::OkStatus();
  }

  // ProcessSignaller: any signal ends a pod's process (a kubelet's own pid is not signalled
  // here). A pod whose process was ended while its change was dropped (`frozen`) runs nothing
  // until the kubelet restarts, as the real kubelet's pod worker still holds the old pod.
  absl::Status Signal(const ProcessInfo& process, int signal) override {
    signals.push_back(StrCat(signal, " ", process.pid));
    for (auto it = pods_.begin(); it != pods_.end(); ++it) {
      if (it->second.info.pid != process.pid || it->second.info.start_time != process.start_time) {
        continue;
      }
      if (unstoppable.count(it->first)) {
        return absl::PermissionDeniedError(
            StrCat("signal ", signal, " to process ", process.pid, ": Operation not permitted"));
      }
      if (frozen.count(it->first)) held_.insert(it->first);
      pods_.erase(it);
      return absl::OkStatus();
    }
    return absl::NotFoundError(StrCat("process ", process.pid, " has exited"));
  }

  // Knobs.
  std::set<int> unhealthy_ports;
  // Pods (by name) whose manifest changes the kubelet drops, as a v1.26 kubelet does before it
  // has read all its pod sources: the old process keeps running and nothing replaces it; once it
  // is ended, no process runs until the kubelet restarts (which forgets the knob, as a restarted
  // kubelet has read its sources).
  std::set<std::string> frozen;
  // Pods (by name) whose process no signal can end (EPERM).
  std::set<std::string> unstoppable;
  // Pods (by name) started with one more argument than their manifest says.
  std::map<std::string, std::string> extra_arg;
  bool fail_kubelet_restart = false;

  std::vector<std::string> commands;
  std::vector<std::string> signals;  // "<signal> <pid>", in order
  int health_checks = 0;

  const ProcessInfo& kubelet() const { return kubelet_; }

 private:
  struct Pod {
    std::string content;
    ProcessInfo info;
  };

  void RestartKubelet() {
    frozen.clear();
    held_.clear();
    kubelet_.pid = next_pid_++;
    kubelet_.start_time = static_cast<std::uint64_t>(kubelet_.pid);
    if (StartFromUnit()) return;
    kubelet_.argv = {"/usr/bin/kubelet", "--config=/var/lib/kubelet/config.yaml"};
    if (paths_.kubelet_flags_file.empty()) return;
    absl::StatusOr<std::string> text = fs_.ReadFile(paths_.kubelet_flags_file);
    if (!text.ok()) return;
    absl::StatusOr<KubeletFlagsFile> flags = KubeletFlagsFile::Parse(*text, "");
    if (!flags.ok()) return;
    for (const std::string& item : flags->flags().items()) kubelet_.argv.push_back(item);
  }

  // As systemd starts it, when the node has a kubelet.service: its argv is the unit's expanded
  // command line. A unit that does not start leaves the kubelet down (no argv).
  bool StartFromUnit() {
    absl::StatusOr<std::vector<systemd::UnitFileText>> files =
        systemd::FindUnitFiles(fs_, "kubelet.service");
    if (absl::IsNotFound(files.status())) return false;
    kubelet_.argv.clear();
    if (!files.ok()) return true;
    KubeletUnit unit;
    unit.unit_files = *files;
    unit.specifiers.unit_name = "kubelet.service";
    absl::StatusOr<systemd::ServiceCommand> command =
        systemd::MergeServiceCommand(unit.unit_files, unit.specifiers);
    if (!command.ok()) return true;
    absl::StatusOr<std::map<std::string, std::string>> environment =
        systemd::ReadEnvironmentFiles(fs_, *command);
    if (!environment.ok()) return true;
    unit.environment = *environment;
    absl::StatusOr<EffectiveKubelet> kubelet = ReadEffectiveKubelet(unit);
    if (kubelet.ok()) kubelet_.argv = kubelet->argv;
    return true;
  }

  // Const because listing processes is a read; what the kubelet has done meanwhile is state the
  // fake catches up with here.
  void Sync() const {
    std::map<std::string, std::string> seen;  // pod name → manifest content
    absl::StatusOr<std::vector<std::string>> names = fs_.ListDirectory(paths_.manifest_dir);
    if (names.ok()) {
      for (const std::string& name : *names) {
        if (StartsWith(name, ".")) continue;
        absl::StatusOr<std::string> content = fs_.ReadFile(StrCat(paths_.manifest_dir, "/", name));
        if (!content.ok()) continue;
        absl::StatusOr<StaticPod> pod = StaticPod::Parse(*content, name);
        if (!pod.ok()) continue;  // a file that does not parse runs nothing
        seen[pod->PodName()] = *content;
      }
    }
    for (auto it = pods_.begin(); it != pods_.end();) {
      if (!seen.count(it->first) && !frozen.count(it->first)) {
        it = pods_.erase(it);
      } else {
        ++it;
      }
    }
    for (const auto& [name, content] : seen) {
      if (held_.count(name)) continue;
      auto it = pods_.find(name);
      if (it != pods_.end() && (it->second.content == content || frozen.count(name))) continue;
      absl::StatusOr<StaticPod> pod = StaticPod::Parse(content, name);
      absl::StatusOr<size_t> container = pod->FindContainer(name);
      const size_t c = container.ok() ? *container : 0;
      Pod process;
      process.content = content;
      process.info.pid = next_pid_++;
      process.info.start_time = static_cast<std::uint64_t>(process.info.pid);
      const YAML::Node& root = pod->node();
      if (!root["spec"]["containers"][c]["command"].IsDefined()) {
        process.info.argv.push_back("/bin/aws-cloud-controller-manager");  // the image entrypoint
      }
      for (const std::string& item : pod->Argv(c)) process.info.argv.push_back(item);
      if (auto extra = extra_arg.find(name); extra != extra_arg.end()) {
        process.info.argv.push_back(extra->second);
      }
      pods_[name] = process;
    }
  }

  const FileSystem& fs_;
  NodePaths paths_;
  mutable std::map<std::string, Pod> pods_;
  std::set<std::string> held_;  // pods ended while frozen: nothing runs until a restart
  ProcessInfo kubelet_;
  mutable int next_pid_ = 100;
};

}  // namespace handoff::testing

#endif  // HANDOFF_TESTS_AGENT_APPLY_FAKE_KUBELET_H_
