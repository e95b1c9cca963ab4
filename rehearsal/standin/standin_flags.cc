#include "rehearsal/standin/standin_flags.h"

#include <arpa/inet.h>

#include <charconv>
#include <functional>

#include "common/base/strings.h"

namespace handoff::standin {
namespace {

constexpr std::string_view kKubeControllerManager = "kube-controller-manager";
constexpr std::string_view kCloudControllerManager = "cloud-controller-manager";
constexpr std::string_view kAwsCloudControllerManager = "aws-cloud-controller-manager";
constexpr std::string_view kKubeApiserver = "kube-apiserver";
constexpr std::string_view kKubeScheduler = "kube-scheduler";
constexpr std::string_view kWorkload = "workload";

// Secure ports: kube-controller-manager 10257, cloud-controller-manager 10258
// (k8s.io/cloud-provider options), kube-apiserver 6443, kube-scheduler 10259.
int DefaultSecurePort(Role role) {
  switch (role) {
    case Role::kKubeControllerManager:
      return 10257;
    case Role::kCloudControllerManager:
      return 10258;
    case Role::kKubeApiserver:
      return 6443;
    case Role::kKubeScheduler:
      return 10259;
    case Role::kWorkload:
      return 0;
  }
  return 0;
}

// strconv.ParseBool, which pflag uses for boolean flags.
std::optional<bool> ParseGoBool(std::string_view text) {
  for (std::string_view yes : {"1", "t", "T", "TRUE", "true", "True"}) {
    if (text == yes) return true;
  }
  for (std::string_view no : {"0", "f", "F", "FALSE", "false", "False"}) {
    if (text == no) return false;
  }
  return std::nullopt;
}

enum class Kind { kBool, kString, kDuration, kInt, kStringList };

struct Flag {
  Kind kind;
  std::function<absl::Status(std::string_view flag, std::string_view value)> set;
};

absl::Status BadValue(std::string_view flag, std::string_view value, std::string_view expected) {
  return absl::InvalidArgumentError(
      StrCat("invalid value \"", value, "\" for --", flag, ": ", expected));
}

Flag BoolFlag(bool& target) {
  return {Kind::kBool, [&target](std::string_view flag, std::string_view value) {
            std::optional<bool> parsed = ParseGoBool(value);
            if (!parsed) return BadValue(flag, value, "want true or false");
            target = *parsed;
            return absl::OkStatus();
          }};
}

Flag StringFlag(std::string& target) {
  return {Kind::kString, [&target](std::string_view, std::string_view value) {
            target = std::string(value);
            return absl::OkStatus();
          }};
}

Flag DurationFlag(absl::Duration& target) {
  return {Kind::kDuration, [&target](std::string_view flag, std::string_view value) {
            absl::Duration parsed;
            if (!absl::ParseDuration(std::string(value), &parsed) ||
                parsed == absl::InfiniteDuration() || parsed == -absl::InfiniteDuration()) {
              return BadValue(flag, value, "want a duration such as 15s, 700ms or 1m30s");
            }
            target = parsed;
            return absl::OkStatus();
          }};
}

Flag PortFlag(int& target) {
  return {Kind::kInt, [&target](std::string_view flag, std::string_view value) {
            int parsed = -1;
            const char* end = value.data() + value.size();
            auto [ptr, error] = std::from_chars(value.data(), end, parsed);
            if (error != std::errc() || ptr != end || parsed < 0 || parsed > 65535) {
              return BadValue(flag, value, "want a port number from 0 to 65535");
            }
            target = parsed;
            return absl::OkStatus();
          }};
}

// pflag's StringSlice: comma-separated; the first use replaces the default, later ones append.
Flag StringListFlag(std::vector<std::string>& target, bool& replaced) {
  return {Kind::kStringList, [&target, &replaced](std::string_view, std::string_view value) {
            if (!replaced) target.clear();
            replaced = true;
            for (std::string_view item : StrSplit(value, ",", /*skip_empty=*/true)) {
              target.emplace_back(StripWhitespace(item));
            }
            return absl::OkStatus();
          }};
}

absl::Status ValidateBindAddress(std::string_view address) {
  unsigned char buffer[sizeof(in6_addr)];
  const std::string text(address);
  if (inet_pton(AF_INET, text.c_str(), buffer) == 1 ||
      inet_pton(AF_INET6, text.c_str(), buffer) == 1) {
    return absl::OkStatus();
  }
  return BadValue("bind-address", address, "want an IP address such as 127.0.0.1 or 0.0.0.0");
}

// client-go's NewLeaderElector refuses these (tools/leaderelection/leaderelection.go), and the
// managers' option validation checks the first (ValidateLeaderElectionConfiguration).
absl::Status ValidateElection(const StandinOptions& options) {
  if (options.lease_duration <= absl::ZeroDuration() ||
      options.renew_deadline <= absl::ZeroDuration() ||
      options.retry_period <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError(
        "--leader-elect-lease-duration, --leader-elect-renew-deadline and "
        "--leader-elect-retry-period must all be greater than zero");
  }
  if (options.lease_duration <= options.renew_deadline) {
    return absl::InvalidArgumentError(
        StrCat("--leader-elect-lease-duration (", absl::FormatDuration(options.lease_duration),
               ") must be greater than --leader-elect-renew-deadline (",
               absl::FormatDuration(options.renew_deadline), ")"));
  }
  if (options.renew_deadline <= options.retry_period * 1.2) {
    return absl::InvalidArgumentError(
        StrCat("--leader-elect-renew-deadline (", absl::FormatDuration(options.renew_deadline),
               ") must be greater than 1.2 × --leader-elect-retry-period (",
               absl::FormatDuration(options.retry_period), ")"));
  }
  // Endpoints and ConfigMap locks (and the multi-locks built on them) are gone from client-go;
  // the leases lock is the one that still works.
  if (options.resource_lock != "leases") {
    return absl::InvalidArgumentError(StrCat("--leader-elect-resource-lock=", options.resource_lock,
                                             " is not supported; use leases (the default)"));
  }
  if (options.resource_name.empty() || options.resource_namespace.empty()) {
    return absl::InvalidArgumentError(
        "--leader-elect-resource-name and --leader-elect-resource-namespace must not be empty");
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<Role> RoleFromArgv0(std::string_view argv0) {
  const size_t slash = argv0.rfind('/');
  const std::string_view name = slash == std::string_view::npos ? argv0 : argv0.substr(slash + 1);
  if (name == kKubeControllerManager) return Role::kKubeControllerManager;
  if (name == kCloudControllerManager || name == kAwsCloudControllerManager) {
    return Role::kCloudControllerManager;
  }
  if (name == kKubeApiserver) return Role::kKubeApiserver;
  if (name == kKubeScheduler) return Role::kKubeScheduler;
  if (name == kWorkload) return Role::kWorkload;
  return absl::InvalidArgumentError(StrCat(
      "the stand-in plays the component named by argv[0], and '", name,
      "' is none of them: run it as kube-controller-manager, cloud-controller-manager, "
      "aws-cloud-controller-manager, kube-apiserver, kube-scheduler, workload or "
      "ecr-credential-provider (exec with argv[0] set, as the sandbox's kubelet does)"));
}

std::string_view RoleName(Role role) {
  switch (role) {
    case Role::kKubeControllerManager:
      return kKubeControllerManager;
    case Role::kCloudControllerManager:
      return kCloudControllerManager;
    case Role::kKubeApiserver:
      return kKubeApiserver;
    case Role::kKubeScheduler:
      return kKubeScheduler;
    case Role::kWorkload:
      return kWorkload;
  }
  return kKubeControllerManager;
}

std::optional<leadermigration::Component> ManagerOf(Role role) {
  switch (role) {
    case Role::kKubeControllerManager:
      return leadermigration::Component::kKubeControllerManager;
    case Role::kCloudControllerManager:
      return leadermigration::Component::kCloudControllerManager;
    default:
      return std::nullopt;
  }
}

KubeVersion DefaultVersion(Role role) {
  return role == Role::kCloudControllerManager ? KubeVersion{1, 27, -1} : KubeVersion{1, 26, -1};
}

absl::StatusOr<StandinOptions> ParseStandinFlags(Role role, const std::vector<std::string>& args) {
  StandinOptions options;
  options.secure_port = DefaultSecurePort(role);
  if (std::optional<leadermigration::Component> manager = ManagerOf(role)) {
    options.resource_name = std::string(leadermigration::ComponentName(*manager));
  }
  bool controllers_replaced = false;
  const std::vector<std::pair<std::string_view, Flag>> known = {
      {"kubeconfig", StringFlag(options.kubeconfig)},
      {"leader-elect", BoolFlag(options.leader_elect)},
      {"leader-elect-lease-duration", DurationFlag(options.lease_duration)},
      {"leader-elect-renew-deadline", DurationFlag(options.renew_deadline)},
      {"leader-elect-retry-period", DurationFlag(options.retry_period)},
      {"leader-elect-resource-lock", StringFlag(options.resource_lock)},
      {"leader-elect-resource-name", StringFlag(options.resource_name)},
      {"leader-elect-resource-namespace", StringFlag(options.resource_namespace)},
      {"cloud-provider", StringFlag(options.cloud_provider)},
      {"controllers", StringListFlag(options.controllers, controllers_replaced)},
      {"allocate-node-cidrs", BoolFlag(options.allocate_node_cidrs)},
      {"configure-cloud-routes", BoolFlag(options.configure_cloud_routes)},
      {"cluster-cidr", StringFlag(options.cluster_cidr)},
      {"enable-leader-migration", BoolFlag(options.enable_leader_migration)},
      {"leader-migration-config", StringFlag(options.leader_migration_config)},
      {"bind-address", StringFlag(options.bind_address)},
      {"secure-port", PortFlag(options.secure_port)},
  };
  auto find = [&known](std::string_view name) -> const Flag* {
    for (const auto& [flag_name, flag] : known) {
      if (flag_name == name) return &flag;
    }
    return nullptr;
  };

  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg == "--" || !StartsWith(arg, "-") || arg == "-") {
      return absl::InvalidArgumentError(StrCat(RoleName(role),
                                               " does not take any arguments, got \"", arg,
                                               "\" (flags are written --name=value)"));
    }
    std::string_view body = StripPrefix(StripPrefix(arg, "-"), "-");
    const size_t equals = body.find('=');
    const std::string_view name = body.substr(0, equals);
    std::optional<std::string_view> value;
    if (equals != std::string_view::npos) value = body.substr(equals + 1);

    const Flag* flag = find(name);
    if (flag == nullptr) {
      // Not modelled: skip it and, unless it is written with '=' or is followed by another flag,
      // its value.
      std::string ignored = arg;
      if (!value && i + 1 < args.size() && !StartsWith(args[i + 1], "-")) {
        StrAppend(&ignored, " ", args[++i]);
      }
      options.ignored_flags.push_back(std::move(ignored));
      continue;
    }
    if (flag->kind == Kind::kBool) {
      if (absl::Status set = flag->set(name, value.value_or("true")); !set.ok()) return set;
      continue;
    }
    if (!value) {
      if (i + 1 >= args.size()) {
        return absl::InvalidArgumentError(StrCat("flag needs an argument: --", name));
      }
      value = args[++i];
    }
    if (absl::Status set = flag->set(name, *value); !set.ok()) return set;
  }

  if (absl::Status address = ValidateBindAddress(options.bind_address); !address.ok()) {
    return address;
  }
  if (ManagerOf(role) && options.leader_elect) {
    if (absl::Status election = ValidateElection(options); !election.ok()) return election;
  }
  return options;
}

}  // namespace handoff::standin
