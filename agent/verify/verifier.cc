#include "agent/verify/verifier.h"

#include <algorithm>
#include <charconv>

#include "common/base/strings.h"

namespace handoff {
namespace {

std::string_view Basename(std::string_view path) {
  size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

// spec.containers[container] when the manifest has it, else an undefined node. Read without
// yaml-cpp's throwing operator[] chains, so a malformed manifest yields an empty check.
YAML::Node ContainerOf(const StaticPod& pod, size_t container) {
  const YAML::Node& root = pod.node();
  if (!root.IsMap()) return YAML::Node(YAML::NodeType::Undefined);
  const YAML::Node spec = root["spec"];
  if (!spec.IsDefined() || !spec.IsMap()) return YAML::Node(YAML::NodeType::Undefined);
  const YAML::Node containers = spec["containers"];
  if (!containers.IsDefined() || !containers.IsSequence() || container >= containers.size()) {
    return YAML::Node(YAML::NodeType::Undefined);
  }
  return containers[container];
}

std::vector<std::string> Items(const YAML::Node& container, const char* key) {
  std::vector<std::string> items;
  if (!container.IsDefined() || !container.IsMap()) return items;
  const YAML::Node list = container[key];
  if (!list.IsDefined() || !list.IsSequence()) return items;
  for (const YAML::Node& item : list) items.push_back(item.IsScalar() ? item.Scalar() : "");
  return items;
}

struct HealthDefaults {
  std::string_view component;
  int port;
  std::string_view path;
};

// The components' --secure-port defaults (k8s.io/cloud-provider and kubernetes/kubernetes
// cmd/*/app/options) and the endpoint each serves anonymously.
constexpr HealthDefaults kHealthDefaults[] = {
    {"kube-controller-manager", 10257, "/healthz"},
    {"cloud-controller-manager", 10258, "/healthz"},
    {"kube-scheduler", 10259, "/healthz"},
    {"kube-apiserver", 6443, "/livez"},
};

std::optional<HealthEndpoint> HealthOf(std::string_view component, const StaticPod& pod,
                                       size_t container) {
  return ComponentEndpoint(component, [&](std::string_view name) {
    return pod.GetFlag(container, std::string(name));
  });
}

std::string Quoted(std::string_view item) { return StrCat("\"", item, "\""); }

// Why `argv` is not the argv `check` asks for, or "" when it is.
std::string ArgvMismatch(const ComponentCheck& check, const std::vector<std::string>& argv) {
  if (check.args_subset) {
    for (size_t i = 0; i < check.command.size(); ++i) {
      if (i >= argv.size() || argv[i] != check.command[i]) {
        return StrCat("argv differs at position ", i, ": expected ", Quoted(check.command[i]),
                      ", found ", i < argv.size() ? Quoted(argv[i]) : "nothing");
      }
    }
    const size_t first_arg = std::max<size_t>(check.command.size(), 1);
    for (const std::string& arg : check.args) {
      if (argv.size() <= first_arg ||
          std::find(argv.begin() + first_arg, argv.end(), arg) == argv.end()) {
        return StrCat("argv lacks ", Quoted(arg));
      }
    }
    return "";
  }
  // With a command, argv is command + args from argv[0]; without one the image's entrypoint is
  // argv[0] (whatever it is) and the args start at argv[1].
  std::vector<std::string> expected = check.command;
  expected.insert(expected.end(), check.args.begin(), check.args.end());
  const size_t offset = check.command.empty() ? 1 : 0;
  for (size_t i = 0; i < expected.size(); ++i) {
    const size_t position = offset + i;
    if (position >= argv.size()) {
      return StrCat("argv has ", argv.size(), " items, expected ", offset + expected.size(),
                    " (position ", position, " should be ", Quoted(expected[i]), ")");
    }
    if (argv[position] != expected[i]) {
      return StrCat("argv differs at position ", position, ": expected ", Quoted(expected[i]),
                    ", found ", Quoted(argv[position]));
    }
  }
  const size_t length = offset + expected.size();
  if (argv.size() > length) {
    return StrCat("argv has ", argv.size(), " items, expected ", length, " (unexpected ",
                  Quoted(argv[length]), " at position ", length, ")");
  }
  return "";
}

bool IsOneOf(const ProcessInfo& process, const std::vector<std::string>& binaries) {
  if (process.argv.empty()) return false;
  std::string_view name = Basename(process.argv[0]);
  return std::find(binaries.begin(), binaries.end(), name) != binaries.end();
}

bool SameProcess(const ProcessInfo& a, const ProcessInfo& b) {
  return a.pid == b.pid && a.start_time == b.start_time;
}

}  // namespace

std::optional<HealthEndpoint> ComponentEndpoint(
    std::string_view component,
    const std::function<std::optional<std::string>(std::string_view)>& flag) {
  auto defaults = std::find_if(std::begin(kHealthDefaults), std::end(kHealthDefaults),
                               [&](const HealthDefaults& d) { return d.component == component; });
  // etcd and anything else: no endpoint known here, so only the process is checked.
  if (defaults == std::end(kHealthDefaults)) return std::nullopt;
  HealthEndpoint endpoint;
  endpoint.port = defaults->port;
  endpoint.path = std::string(defaults->path);
  if (std::optional<std::string> port = flag("secure-port")) {
    int value = 0;
    auto [end, error] = std::from_chars(port->data(), port->data() + port->size(), value);
    if (error == std::errc() && end == port->data() + port->size()) {
      // --secure-port=0 turns the HTTPS server off: there is nothing to ask.
      if (value == 0) return std::nullopt;
      endpoint.port = value;
    }
    // An unparsable port keeps the default: the component rejects the flag and never serves,
    // so the check fails, as it should.
  }
  // The wildcard addresses listen on loopback too; loopback is what the agent can always reach.
  std::optional<std::string> bind = flag("bind-address");
  if (bind && !bind->empty() && *bind != "0.0.0.0" && *bind != "::" && *bind != "[::]") {
    endpoint.host = *bind;
  }
  return endpoint;
}

std::vector<std::string> BinariesOf(std::string_view component) {
  if (component == "cloud-controller-manager") {
    return {"aws-cloud-controller-manager", "cloud-controller-manager"};
  }
  return {std::string(component)};
}

bool IsProcessOf(const ProcessInfo& process, const std::vector<std::string>& binaries) {
  return IsOneOf(process, binaries);
}

ComponentCheck CheckForManifest(std::string_view component, const StaticPod* pod,
                                size_t container) {
  ComponentCheck check;
  check.component = std::string(component);
  if (pod == nullptr) {
    check.present = false;
    check.binaries = BinariesOf(component);
    return check;
  }
  const YAML::Node node = ContainerOf(*pod, container);
  check.command = Items(node, "command");
  check.args = Items(node, "args");
  if (!check.command.empty() && !check.command[0].empty()) {
    check.binaries = {std::string(Basename(check.command[0]))};
  } else {
    check.binaries = BinariesOf(component);
  }
  if (node.IsDefined()) check.health = HealthOf(component, *pod, container);
  return check;
}

HealthEndpoint DefaultKubeletHealth() {
  HealthEndpoint health;
  health.scheme = "http";
  health.host = "127.0.0.1";
  health.port = 10248;
  health.path = "/healthz";
  return health;
}

ComponentCheck CheckForKubelet(const std::vector<std::string>& flags, const HealthEndpoint& health,
                               absl::Duration settle) {
  ComponentCheck check;
  check.component = "kubelet";
  check.binaries = {"kubelet"};
  check.args = flags;
  check.args_subset = true;
  check.health = health;
  check.settle = settle;
  return check;
}

Verifier::Verifier(const ProcessTable& processes, HealthChecker& health, Clock& clock,
                   VerifyOptions options)
    : processes_(processes), health_(health), clock_(clock), options_(options) {}

absl::StatusOr<std::vector<ProcessInfo>> Verifier::Running(const ComponentCheck& check) const {
  absl::StatusOr<std::vector<ProcessInfo>> all = processes_.List();
  if (!all.ok()) return all.status();
  std::vector<ProcessInfo> running;
  for (ProcessInfo& process : *all) {
    if (IsOneOf(process, check.binaries)) running.push_back(std::move(process));
  }
  return running;
}

absl::Status Verifier::Wait(
    const ComponentCheck& check, const std::function<void(absl::Time)>& old_gone,
    const std::function<absl::Status(const std::vector<ProcessInfo>&)>& outlived) {
  const absl::Time start = clock_.Now();
  const absl::Time deadline = start + options_.timeout;
  // A zero interval would spin (and never advance a fake clock).
  const absl::Duration interval = std::max(options_.poll_interval, absl::Milliseconds(1));
  bool told = check.before.empty() || !old_gone;
  bool outlived_called =
      check.before.empty() || !outlived || check.stop_within <= absl::ZeroDuration();
  // While settling: the process that passed, and since when.
  std::optional<ProcessInfo> passing;
  absl::Time passing_since;
  while (true) {
    const absl::Time looked = clock_.Now();
    std::optional<std::vector<ProcessInfo>> old_running;
    std::string reason = Look(check, &old_running);
    if (!told && old_running && old_running->empty()) {
      told = true;
      old_gone(looked);
    }
    if (!outlived_called && old_running && !old_running->empty() &&
        looked - start >= check.stop_within) {
      outlived_called = true;
      if (absl::Status acted = outlived(*old_running); !acted.ok()) return acted;
      continue;  // look again at once: what was done may have ended them
    }
    if (reason.empty() && check.settle <= absl::ZeroDuration()) return absl::OkStatus();
    if (reason.empty()) {
      std::optional<ProcessInfo> now_passing;
      absl::StatusOr<std::vector<ProcessInfo>> running = Running(check);
      if (running.ok()) {
        for (const ProcessInfo& process : *running) {
          if (RunsAsChecked(check, process)) now_passing = process;
        }
      }
      if (!now_passing || !passing || !SameProcess(*now_passing, *passing)) {
        passing = now_passing;
        passing_since = looked;
      }
      if (passing && looked - passing_since >= check.settle) return absl::OkStatus();
      reason = StrCat("healthy for ", absl::FormatDuration(looked - passing_since), " of the ",
                      absl::FormatDuration(check.settle), " it must settle");
    } else {
      passing.reset();
    }
    const absl::Time now = clock_.Now();
    if (now >= deadline) {
      return absl::DeadlineExceededError(StrCat(check.component, " not verified after ",
                                                absl::FormatDuration(now - start), ": ", reason));
    }
    // The last look falls on the deadline rather than up to one interval past it.
    const absl::Duration next =
        told ? interval : std::max(std::min(interval, options_.gone_poll_interval),
                                   absl::Milliseconds(1));
    clock_.SleepFor(std::min(next, deadline - now));
  }
}

absl::Status Verifier::CheckNow(const ComponentCheck& check) {
  const std::string reason = Look(check);
  if (reason.empty()) return absl::OkStatus();
  return absl::UnavailableError(reason);
}

std::vector<ProcessInfo> StillRunning(const std::vector<ProcessInfo>& old,
                                      const std::vector<ProcessInfo>& now) {
  std::vector<ProcessInfo> still;
  for (const ProcessInfo& process : old) {
    if (std::any_of(now.begin(), now.end(),
                    [&](const ProcessInfo& p) { return SameProcess(p, process); })) {
      still.push_back(process);
    }
  }
  return still;
}

bool RunsAsChecked(const ComponentCheck& check, const ProcessInfo& process) {
  return IsOneOf(process, check.binaries) && ArgvMismatch(check, process.argv).empty();
}

std::string Verifier::Look(const ComponentCheck& check,
                           std::optional<std::vector<ProcessInfo>>* old_running) {
  // Unknown until the process table is read.
  if (old_running != nullptr) old_running->reset();
  absl::StatusOr<std::vector<ProcessInfo>> running = Running(check);
  if (!running.ok()) return StrCat("cannot list processes: ", running.status().message());

  const std::vector<ProcessInfo> still = StillRunning(check.before, *running);
  if (old_running != nullptr) *old_running = still;
  if (!still.empty()) return StrCat("old process ", still.front().pid, " still running");
  if (!check.present) {
    if (running->empty()) return "";
    return StrCat(check.component, " process ", running->front().pid,
                  " still running after its manifest was removed");
  }

  std::vector<const ProcessInfo*> fresh;
  for (const ProcessInfo& process : *running) {
    const bool old = std::any_of(check.before.begin(), check.before.end(),
                                 [&](const ProcessInfo& b) { return SameProcess(process, b); });
    if (!old) fresh.push_back(&process);
  }
  if (fresh.empty()) return StrCat("no ", check.component, " process running");

  // The newest process is the one the kubelet just started; its mismatch is the one to report
  // if none matches.
  std::sort(fresh.begin(), fresh.end(), [](const ProcessInfo* a, const ProcessInfo* b) {
    return a->start_time != b->start_time ? a->start_time > b->start_time : a->pid > b->pid;
  });
  std::string mismatch;
  const ProcessInfo* match = nullptr;
  for (const ProcessInfo* process : fresh) {
    std::string why = ArgvMismatch(check, process->argv);
    if (why.empty()) {
      match = process;
      break;
    }
    if (mismatch.empty()) {
      mismatch = StrCat(check.component, " process ", process->pid, ": ", why);
    }
  }
  if (match == nullptr) return mismatch;

  if (check.health) {
    absl::Status healthy = health_.Check(*check.health, options_.health_timeout);
    if (!healthy.ok()) {
      return StrCat(check.component, " process ", match->pid,
                    " is not healthy: ", healthy.message());
    }
  }
  return "";
}

}  // namespace handoff
