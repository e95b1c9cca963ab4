// handoff-sandbox-kubelet: the simulated kubelet of `handoffctl sandbox`. Run as "kubelet"
// (argv[0]) it is the kubelet (sandbox_kubelet.h); as anything else it manages one
// (kubelet_control.h):
//   handoff-sandbox-kubelet start --root DIR --standin PATH [kubelet flags...]
//   handoff-sandbox-kubelet restart --root DIR
//   handoff-sandbox-kubelet stop --root DIR [--pods]
//   handoff-sandbox-kubelet crictl --root DIR ps -o json   (the node's running pods, cri_listing.h)
// and, hidden (the kubelet spawns it in a real pod's place, pod_exec.h):
//   handoff-sandbox-kubelet pod-exec --hostname NODE --binary PATH --scratch DIR [--mount ...]
//                                    -- ARGV...
// Exit codes: 0 done, 1 failed, 2 bad usage; pod-exec: 127 when the pod cannot be set up.
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <climits>
#include <iostream>
#include <string>
#include <vector>

#include "agent/manifest/flag_list.h"
#include "common/base/strings.h"
#include "common/fs/host_path.h"
#include "common/fs/file_system.h"
#include "rehearsal/kubelet/cri_listing.h"
#include "rehearsal/kubelet/kubelet_control.h"
#include "rehearsal/kubelet/pod_state.h"
#include "rehearsal/kubelet/kubelet_options.h"
#include "rehearsal/kubelet/pod_exec.h"
#include "rehearsal/kubelet/sandbox_kubelet.h"

namespace {

constexpr char kUsage[] =
    "usage: handoff-sandbox-kubelet start --root DIR --standin PATH [--records FILE]\n"
    "                                     [--real-bin-dir DIR] [--node-name NAME]\n"
    "                                     [--pod-manifest-path PATH]\n"
    "                                     [--healthz-bind-address ADDR] [--healthz-port PORT]\n"
    "                                     [--file-check-frequency DURATION] [other flags]\n"
    "       handoff-sandbox-kubelet restart --root DIR\n"
    "       handoff-sandbox-kubelet stop --root DIR [--pods]\n"
    "       handoff-sandbox-kubelet crictl --root DIR ps -o json\n"
    "Run as argv[0] \"kubelet\" (as `start` does) it is the node's kubelet.\n";

int Fail(const absl::Status& status) {
  std::cerr << "handoff-sandbox-kubelet: " << status.message() << "\n";
  return 1;
}

int RunKubelet(const std::vector<std::string>& args) {
  absl::StatusOr<handoff::sandbox::KubeletOptions> options =
      handoff::sandbox::ParseKubeletOptions(args);
  if (!options.ok()) {
    std::cerr << "kubelet: " << options.status().message() << "\n";
    return 2;
  }
  spdlog::set_default_logger(spdlog::stderr_logger_mt("kubelet"));
  spdlog::set_pattern("%Y-%m-%dT%H:%M:%S.%e %L kubelet[%P] %v");
  absl::Status status = handoff::sandbox::RunSandboxKubelet(*options);
  if (!status.ok()) {
    spdlog::error("{}", std::string(status.message()));
    return 1;
  }
  return 0;
}

// crictl --root DIR ps -o json: the only form the agent's proof runs.
int ListContainers(const std::vector<std::string>& args) {
  if (args.size() != 5 || args[0] != "--root" || args[1].empty() || args[2] != "ps" ||
      args[3] != "-o" || args[4] != "json") {
    std::cerr << "handoff-sandbox-kubelet crictl: only `crictl --root DIR ps -o json` is "
                 "modelled\n"
              << kUsage;
    return 2;
  }
  const std::unique_ptr<handoff::FileSystem> fs = handoff::NewPosixFileSystem(args[1]);
  absl::StatusOr<handoff::sandbox::PodProcesses> pods = handoff::sandbox::LoadPodState(*fs);
  if (!pods.ok()) return Fail(pods.status());
  std::cout << handoff::sandbox::CriListing(*pods, handoff::BaseName(args[1]),
                                            handoff::sandbox::RunningSince);
  return 0;
}

std::string SelfExecutable() {
  char path[PATH_MAX];
  const ssize_t n = ::readlink("/proc/self/exe", path, sizeof(path) - 1);
  if (n <= 0) return "";
  return std::string(path, static_cast<size_t>(n));
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (argc > 0 && handoff::BaseName(argv[0]) == "kubelet") return RunKubelet(args);
  if (args.empty()) {
    std::cerr << kUsage;
    return 2;
  }
  const std::string command = args[0];
  args.erase(args.begin());
  if (command == handoff::sandbox::kPodExecCommand) {
    absl::StatusOr<handoff::sandbox::PodExecSpec> spec =
        handoff::sandbox::ParsePodExecArgs(args);
    if (!spec.ok()) {
      std::cerr << "handoff-sandbox-kubelet: " << spec.status().message() << "\n";
      return 2;
    }
    // Returns only when the pod could not be set up; its stderr is the pod's log.
    const absl::Status failed = handoff::sandbox::ExecInPod(*spec, environ);
    std::cerr << "handoff-sandbox-kubelet: " << failed.message() << "\n";
    return 127;
  }
  if (command == "crictl") return ListContainers(args);
  const handoff::sandbox::ControlOptions options;
  if (command == "start") {
    const std::string binary = SelfExecutable();
    if (binary.empty()) return Fail(absl::InternalError("cannot read /proc/self/exe"));
    absl::Status status = handoff::sandbox::StartKubelet(binary, args, options, std::cout);
    if (absl::IsInvalidArgument(status)) {
      std::cerr << "handoff-sandbox-kubelet start: " << status.message() << "\n" << kUsage;
      return 2;
    }
    return status.ok() ? 0 : Fail(status);
  }
  if (command == "restart" || command == "stop") {
    const handoff::FlagList flags(args);
    std::optional<std::string> root = flags.Get("root");
    std::vector<std::string> names = flags.Names();
    for (const std::string& name : names) {
      if (name != "root" && !(command == "stop" && name == "pods")) {
        std::cerr << "handoff-sandbox-kubelet " << command << ": unknown flag --" << name << "\n"
                  << kUsage;
        return 2;
      }
    }
    if (!root || root->empty() || *root == "true") {
      std::cerr << "handoff-sandbox-kubelet " << command << ": --root DIR is required\n" << kUsage;
      return 2;
    }
    absl::Status status = command == "restart"
                              ? handoff::sandbox::RestartKubelet(*root, options, std::cout)
                              : handoff::sandbox::StopKubelet(*root, flags.Get("pods").has_value(),
                                                              options, std::cout);
    return status.ok() ? 0 : Fail(status);
  }
  std::cerr << "handoff-sandbox-kubelet: unknown command " << command << "\n" << kUsage;
  return 2;
}
