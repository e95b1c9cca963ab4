#include "agent/daemon/controller_probe.h"

#include <algorithm>

#include "agent/verify/verifier.h"
#include "common/base/strings.h"

namespace handoff {
namespace {

// Enough for every check line of a manager (a few dozen short lines), with room to spare.
constexpr size_t kMaxHealthzBody = 64 * 1024;

constexpr std::string_view kManagers[] = {"kube-controller-manager", "cloud-controller-manager"};

// The value of `--name` in argv ("--name=value" or "--name" "value"); the last one wins, as
// with pflag.
std::optional<std::string> FlagValue(const std::vector<std::string>& argv, std::string_view name) {
  std::optional<std::string> value;
  const std::string flag = StrCat("--", name);
  for (size_t i = 1; i < argv.size(); ++i) {
    std::string_view item = argv[i];
    if (item == flag) {
      if (i + 1 < argv.size()) value = argv[i + 1];
    } else if (StartsWith(item, flag + "=")) {
      value = std::string(item.substr(flag.size() + 1));
    }
  }
  return value;
}

}  // namespace

std::vector<std::string> DefaultWatchedControllers() {
  return {"route", "service", "cloud-node-lifecycle"};
}

std::vector<std::string> HealthzCheckNames(std::string_view body) {
  std::vector<std::string> names;
  while (!body.empty()) {
    size_t end = body.find('\n');
    std::string_view line = body.substr(0, end);
    body = end == std::string_view::npos ? std::string_view() : body.substr(end + 1);
    if (!StartsWith(line, "[+]") && !StartsWith(line, "[-]")) continue;
    line.remove_prefix(3);
    size_t space = line.find(' ');
    std::string_view name = line.substr(0, space);
    if (!name.empty()) names.emplace_back(name);
  }
  return names;
}

std::optional<HealthEndpoint> ControllerListEndpoint(std::string_view component,
                                                     const std::vector<std::string>& argv) {
  std::optional<HealthEndpoint> endpoint =
      ComponentEndpoint(component, [&](std::string_view name) { return FlagValue(argv, name); });
  if (endpoint) endpoint->path = "/healthz?verbose";
  return endpoint;
}

ControllerProbe::ControllerProbe(const ProcessTable& processes, HealthChecker& health,
                                 Clock& clock, ControllerProbeOptions options)
    : processes_(processes), health_(health), clock_(clock), options_(std::move(options)) {}

v1::ControllerSample ControllerProbe::Sample() {
  v1::ControllerSample sample;
  sample.set_observed_unix_ms(absl::ToUnixMillis(clock_.Now()));
  absl::StatusOr<std::vector<ProcessInfo>> processes = processes_.List();
  if (!processes.ok()) {
    sample.set_error(std::string(processes.status().message()));
    return sample;
  }
  for (std::string_view component : kManagers) {
    const std::vector<std::string> binaries = BinariesOf(component);
    for (const ProcessInfo& process : *processes) {
      if (!IsProcessOf(process, binaries)) continue;
      v1::ManagerControllers* manager = sample.add_managers();
      manager->set_component(std::string(component));
      manager->set_pid(process.pid);
      std::optional<HealthEndpoint> endpoint = ControllerListEndpoint(component, process.argv);
      if (!endpoint) {
        manager->set_error("--secure-port=0: it serves no /healthz to ask");
        continue;
      }
      absl::StatusOr<HttpAnswer> answer =
          health_.Get(*endpoint, options_.timeout, kMaxHealthzBody);
      if (!answer.ok()) {
        manager->set_error(std::string(answer.status().message()));
        continue;
      }
      std::vector<std::string> checks = HealthzCheckNames(answer->body);
      // 500 is what /healthz says while a check fails; it still lists every check.
      if ((answer->status != 200 && answer->status != 500) || checks.empty()) {
        manager->set_error(StrCat("GET ", endpoint->Url(), ": HTTP ", answer->status,
                                  ", no list of checks"));
        continue;
      }
      manager->set_answered(true);
      for (const std::string& controller : options_.controllers) {
        if (std::find(checks.begin(), checks.end(), controller) != checks.end()) {
          manager->add_controllers(controller);
        }
      }
    }
  }
  return sample;
}

}  // namespace handoff
