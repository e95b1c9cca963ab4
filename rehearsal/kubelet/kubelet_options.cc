#include "rehearsal/kubelet/kubelet_options.h"

#include <unistd.h>

#include <charconv>
#include <optional>

#include "absl/time/time.h"
#include "agent/manifest/flag_list.h"
#include "common/base/strings.h"
#include "common/fs/host_path.h"

namespace handoff::sandbox {
namespace {

std::string Absolute(const std::string& path) {
  if (StartsWith(path, "/")) return TrimTrailingSlashes(path);
  char cwd[4096];
  if (::getcwd(cwd, sizeof(cwd)) == nullptr) return path;
  return TrimTrailingSlashes(StrCat(cwd, "/", path));
}

}  // namespace

absl::StatusOr<KubeletOptions> ParseKubeletOptions(const std::vector<std::string>& args) {
  const FlagList flags(args);
  KubeletOptions options;
  std::vector<std::string> problems;
  // A flag given without a value reads as "true" (pflag's bare boolean); none of these is one.
  auto get = [&](const char* name) -> std::optional<std::string> {
    std::vector<FlagOccurrence> found = flags.Find(name);
    if (found.empty()) return std::nullopt;
    if (!found.back().value) {
      problems.push_back(StrCat("--", name, " needs a value"));
      return std::nullopt;
    }
    return found.back().value;
  };

  if (std::optional<std::string> root = get("root"); root && !root->empty()) {
    options.root = Absolute(*root);
  } else {
    problems.push_back("--root is required (the node's root directory)");
  }
  if (std::optional<std::string> path = get("pod-manifest-path")) {
    if (!StartsWith(*path, "/")) {
      problems.push_back(
          StrCat("--pod-manifest-path must be an absolute path under --root, not ", *path));
    }
    options.pod_manifest_path = TrimTrailingSlashes(*path);
  }
  if (std::optional<std::string> address = get("healthz-bind-address")) {
    options.healthz_bind_address = *address;
  }
  if (std::optional<std::string> port = get("healthz-port")) {
    int value = -1;
    auto [end, error] = std::from_chars(port->data(), port->data() + port->size(), value);
    if (error != std::errc() || end != port->data() + port->size() || value < 0 || value > 65535) {
      problems.push_back(StrCat("--healthz-port must be a port number (0-65535), not ", *port));
    }
    options.healthz_port = value;
  }
  if (std::optional<std::string> standin = get("standin"); standin && !standin->empty()) {
    options.standin = Absolute(*standin);
  } else {
    problems.push_back("--standin is required (the program the pods run)");
  }
  if (std::optional<std::string> dir = get("real-bin-dir"); dir && !dir->empty()) {
    options.real_bin_dir = Absolute(*dir);
  }
  if (std::optional<std::string> records = get("records"); records && !records->empty()) {
    options.records = Absolute(*records);
  }
  if (std::optional<std::string> node = get("node-name"); node && !node->empty()) {
    options.node_name = *node;
  } else if (!options.root.empty()) {
    options.node_name = BaseName(options.root);
  }
  if (std::optional<std::string> frequency = get("file-check-frequency")) {
    absl::Duration duration;
    if (!absl::ParseDuration(*frequency, &duration) || duration <= absl::ZeroDuration()) {
      problems.push_back(
          StrCat("--file-check-frequency must be a positive duration (\"1s\", "
                 "\"500ms\"), not ",
                 *frequency));
    } else {
      options.file_check_frequency =
          std::chrono::milliseconds(std::max<int64_t>(1, absl::ToInt64Milliseconds(duration)));
    }
  }
  if (std::optional<std::string> delay = get("pod-restart-delay")) {
    absl::Duration duration;
    if (!absl::ParseDuration(*delay, &duration) || duration < absl::ZeroDuration()) {
      problems.push_back(StrCat(
          "--pod-restart-delay must be a duration (\"10s\", \"700ms\", \"0s\"), not ", *delay));
    } else {
      options.pod_restart_delay = std::chrono::milliseconds(absl::ToInt64Milliseconds(duration));
    }
  }
  if (std::optional<std::string> jitter = get("pod-restart-jitter")) {
    char* end = nullptr;
    const double value = std::strtod(jitter->c_str(), &end);
    if (jitter->empty() || *end != '\0' || !(value >= 0.0 && value <= 1.0)) {
      problems.push_back(
          StrCat("--pod-restart-jitter must be a fraction from 0 to 1 (\"0.5\"), not ", *jitter));
    } else {
      options.pod_restart_jitter = value;
    }
  }
  if (std::optional<std::string> kubeconfig = get("kubeconfig"); kubeconfig && !kubeconfig->empty()) {
    if (!StartsWith(*kubeconfig, "/")) {
      problems.push_back(
          StrCat("--kubeconfig must be an absolute path under --root, not ", *kubeconfig));
    } else {
      options.kubeconfig = *kubeconfig;
    }
  }
  if (std::optional<std::string> interval = get("node-lease-renew-interval")) {
    absl::Duration duration;
    if (!absl::ParseDuration(*interval, &duration) || duration <= absl::ZeroDuration()) {
      problems.push_back(StrCat(
          "--node-lease-renew-interval must be a positive duration (\"10s\", \"1s\"), not ",
          *interval));
    } else {
      options.node_lease_renew_interval =
          std::chrono::milliseconds(std::max<int64_t>(1, absl::ToInt64Milliseconds(duration)));
    }
  }
  if (!problems.empty()) return absl::InvalidArgumentError(StrJoin(problems, "; "));
  return options;
}

}  // namespace handoff::sandbox
