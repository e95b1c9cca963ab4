#include "ctl/ctl_cli.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <ostream>
#include <vector>

#include "common/base/strings.h"
#include "common/fs/read_limit.h"
#include "common/system/signal_watcher.h"
#include "ctl/command_context.h"

namespace handoff::ctl {
namespace {

constexpr char kDescription[] =
    "handoffctl checks and prepares the cluster side of moving the cloud controllers from the\n"
    "in-tree AWS provider in kube-controller-manager to the AWS cloud-controller-manager with\n"
    "Leader Migration, and drives the rolling move that handoff-coordinator runs (a\n"
    "handoff-agent moves each control-plane node).\n"
    "The cluster, through a kubeconfig (--kubeconfig; on a control-plane node\n"
    "/etc/kubernetes/admin.conf):\n"
    "  preflight       every check before the first move (read-only; with --coordinator also\n"
    "                  each node's agent)\n"
    "  rbac            let both managers use the migration lease (appends rules, never replaces)\n"
    "  lease           who holds the migration lease, and so runs the cloud controllers\n"
    "  verify nodes    every Node has an AWS providerID and no uninitialized taint\n"
    "  kubeadm-config  make kubeadm's stored configuration external too, so that a later\n"
    "                  `kubeadm upgrade` does not undo the move\n"
    "The rollout, through the coordinator (--coordinator HOST:PORT or $HANDOFF_COORDINATOR,\n"
    "mutual TLS with an operator certificate):\n"
    "  plan            the moves a goal takes, in order, and each node's file diffs\n"
    "  start           begin moving towards migrated (or finalized)\n"
    "  status          the rollout and every node; --watch follows it\n"
    "  pause, resume   stop sending moves, and go on\n"
    "  abort           halt the rollout until the operator decides\n"
    "  rollback        walk the nodes back to prepared or in-tree\n"
    "  finalize        turn Leader Migration off once every node is migrated\n"
    "  history, nodes  the audit history; the nodes as the coordinator knows them\n"
    "The certificates of that mutual TLS, as files (no cluster, no coordinator):\n"
    "  certs           create the handoff CA (init) and the coordinator's, agents' and\n"
    "                  operators' certificates (issue)\n";

std::atomic<bool> g_interrupted{false};

}  // namespace

CommandContext::CommandContext(std::ostream& out, std::ostream& err,
                               const CtlEnvironment& environment)
    : out_(out), err_(err), environment_(environment) {}

Clock& CommandContext::clock() {
  if (clock_ == nullptr) clock_ = environment_.open_clock();
  return *clock_;
}

absl::StatusOr<Settings> CommandContext::ReadSettings(const std::string& path) {
  if (path.empty()) return Settings{};
  std::unique_ptr<FileSystem> files = environment_.open_files();
  absl::StatusOr<std::string> text = files->ReadFile(path, kSettingsRead);
  if (!text.ok()) {
    return absl::Status(text.status().code(), StrCat("--settings: ", text.status().message()));
  }
  return ParseSettings(*text, path);
}

int CommandContext::Fail(const absl::Status& status) {
  err_ << "handoffctl: " << status.message() << "\n";
  return kExitRefused;
}

absl::StatusOr<std::unique_ptr<kube::KubeClient>> CommandContext::Connect(
    const ConnectionOptions& options) {
  std::string path = options.kubeconfig;
  if (path.empty()) {
    // kubectl merges every file of a colon-separated $KUBECONFIG; handoff reads the first one.
    std::vector<std::string_view> listed;
    std::optional<std::string> variable = environment_.get_env("KUBECONFIG");
    if (variable) listed = StrSplit(*variable, ":", /*skip_empty=*/true);
    if (!listed.empty()) {
      path = std::string(listed.front());
    } else if (std::optional<std::string> home = environment_.get_env("HOME"); home) {
      path = StrCat(*home, "/.kube/config");
    } else {
      return absl::InvalidArgumentError(
          "no kubeconfig: pass --kubeconfig FILE (on a control-plane node: "
          "/etc/kubernetes/admin.conf), or set KUBECONFIG");
    }
  }
  absl::Duration timeout;
  if (!absl::ParseDuration(options.request_timeout, &timeout) || timeout <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError(StrCat("--request-timeout \"", options.request_timeout,
                                             "\" is not a positive duration such as 30s or 1m"));
  }
  std::unique_ptr<FileSystem> files = environment_.open_files();
  absl::StatusOr<kube::ClusterCredentials> credentials =
      kube::LoadKubeconfig(*files, path, options.context);
  if (!credentials.ok()) return credentials.status();
  for (const std::string& warning : credentials->warnings) err_ << "WARNING: " << warning << "\n";
  absl::StatusOr<std::unique_ptr<kube::HttpTransport>> transport =
      environment_.open_transport(*credentials);
  if (!transport.ok()) return transport.status();
  kube::ClientOptions client_options = kube::ClientOptionsFor(*credentials);
  client_options.request_timeout = timeout;
  return std::make_unique<kube::KubeClient>(*std::move(transport), clock(), client_options);
}

void AddConnectionOptions(CLI::App& command, ConnectionOptions& options) {
  command.add_option("--kubeconfig", options.kubeconfig,
                     "Kubeconfig to reach the cluster with (default: $KUBECONFIG, else "
                     "~/.kube/config; on a control-plane node /etc/kubernetes/admin.conf)");
  command.add_option("--context", options.context,
                     "Kubeconfig context to use instead of its current-context");
  command.add_option("--request-timeout", options.request_timeout,
                     "How long one API request may take, e.g. 30s (default), 1m");
}

absl::StatusOr<std::unique_ptr<OperatorClient>> CommandContext::ConnectCoordinator(
    const CoordinatorOptions& options, CoordinatorEndpoint& endpoint) {
  std::unique_ptr<FileSystem> files = environment_.open_files();
  absl::StatusOr<CoordinatorEndpoint> resolved =
      ResolveCoordinatorEndpoint(options, environment_.get_env, *files);
  if (!resolved.ok()) return resolved.status();
  endpoint = *std::move(resolved);
  if (!environment_.open_coordinator) {
    return absl::FailedPreconditionError("this handoffctl cannot talk to a coordinator");
  }
  return environment_.open_coordinator(endpoint);
}

void AddCoordinatorOptions(CLI::App& command, CoordinatorOptions& options, bool watch) {
  command.add_option("--coordinator", options.address,
                     "The coordinator's gRPC address, HOST:PORT (default: $HANDOFF_COORDINATOR)");
  command.add_option("--ca", options.ca,
                     StrCat("The handoff CA the coordinator's certificate must chain to (default: "
                            "$HANDOFF_CA, else ",
                            kDefaultCaPath, ")"));
  command.add_option("--cert", options.cert,
                     StrCat("Your operator certificate, O=handoff:operators; its CN is recorded "
                            "in the history (default: $HANDOFF_CERT, else ",
                            kDefaultCertPath, ")"));
  command.add_option(
      "--key", options.key,
      StrCat("The certificate's private key (default: $HANDOFF_KEY, else ", kDefaultKeyPath, ")"));
  command.add_option("--server-name", options.server_name,
                     "The name the coordinator's certificate must carry, when it is not the "
                     "host of --coordinator");
  command.add_option("--timeout", options.timeout,
                     watch ? "How long a call may take, e.g. 30s (default), 1m; with --watch, how "
                             "long to wait for the first status"
                           : "How long the call may take, e.g. 30s (default), 1m");
  if (watch) {
    command.add_option("--watch-timeout", options.watch_timeout,
                       "With --watch: when to stop watching, e.g. 24h (default), 30m");
    command.add_option(
        "--reconnect-timeout", options.reconnect_timeout,
        "With --watch: when the coordinator goes away after the watch began (a restart, a "
        "crash), how long to keep trying to reach it again before giving up with exit code 3, "
        "e.g. 2m (default); 0 gives up at once");
  }
}

void AddCcmIdentityOptions(CLI::App& command, CcmIdentityFlags& flags) {
  CLI::Option* user = command.add_option(
      "--ccm-user", flags.user,
      "User the cloud-controller-manager authenticates as (default "
      "system:kube-controller-manager: handoff's manifest reuses the kube-controller-manager's "
      "kubeconfig)");
  command
      .add_option("--ccm-service-account", flags.service_account,
                  "Instead of --ccm-user: the cloud-controller-manager's service account, as "
                  "NAMESPACE/NAME (e.g. kube-system/cloud-controller-manager)")
      ->excludes(user);
}

absl::Status ApplyCcmIdentity(const CcmIdentityFlags& flags, kube::RbacOptions& options) {
  if (!flags.user.empty()) options.ccm_subject = kube::Subject{"User", flags.user, ""};
  if (!flags.service_account.empty()) {
    absl::StatusOr<kube::Subject> subject = kube::ServiceAccountSubject(flags.service_account);
    if (!subject.ok()) {
      return absl::InvalidArgumentError(
          StrCat("--ccm-service-account: ", subject.status().message()));
    }
    options.ccm_subject = *subject;
  }
  return absl::OkStatus();
}

void AddOutputOption(CLI::App& command, std::string& format) {
  command.add_option("-o,--output", format, "Output format: text (default) or json")
      ->check(CLI::IsMember({"text", "json"}));
}

CtlEnvironment RealCtlEnvironment() {
  CtlEnvironment environment;
  environment.open_files = [] { return NewPosixFileSystem(""); };
  environment.open_transport = kube::NewCurlTransport;
  environment.open_clock = NewRealClock;
  environment.get_env = [](const std::string& name) -> std::optional<std::string> {
    const char* value = std::getenv(name.c_str());
    if (value == nullptr) return std::nullopt;
    return std::string(value);
  };
  environment.interrupted = [] { return g_interrupted.load(); };
  environment.open_coordinator = NewGrpcOperatorClient;
  environment.output_is_terminal = [] { return isatty(STDOUT_FILENO) == 1; };
  return environment;
}

absl::Status StartInterruptWatcher() {
  // The daemons' SignalWatcher, started before any other thread exists so that every later
  // thread leaves the signals to it. It lives as long as the process.
  absl::StatusOr<std::unique_ptr<SignalWatcher>> watcher = SignalWatcher::Start([](int) {
    if (g_interrupted.exchange(true)) std::_Exit(130);
  });
  if (!watcher.ok()) return watcher.status();
  static std::unique_ptr<SignalWatcher> kept;
  kept = *std::move(watcher);
  return absl::OkStatus();
}

int RunCtl(int argc, const char* const* argv, std::ostream& out, std::ostream& err,
           const CtlEnvironment& environment) {
  CLI::App app(kDescription, "handoffctl");
  app.require_subcommand(1);
  app.footer(
      "Exit codes: 0 success, or nothing to change (a plan with changes is still 0); 1 a check\n"
      "found problems (verify nodes found bad nodes, lease watch saw a gap, status found the\n"
      "rollout halted or stuck, plan cannot reach the goal); 2 refused or failed, nothing\n"
      "changed (bad usage, unreadable kubeconfig or certificates, API server unreachable or\n"
      "refusing, a plan that cannot be applied, the coordinator refusing the call: invalid,\n"
      "not fitting the rollout's state, not allowed, not found); 3 the coordinator could not be\n"
      "reached or did not answer in time (a change asked for may still happen: see status).");
  CommandContext context(out, err, environment);
  AddRbacCommands(app, context);
  AddLeaseCommands(app, context);
  AddVerifyCommands(app, context);
  AddKubeadmConfigCommands(app, context);
  AddRolloutCommands(app, context);
  AddCertsCommands(app, context);
  AddSandboxCommands(app, context);
  AddRancherCheckCommands(app, context);
  AddRancherCommands(app, context);
  AddPreflightCommands(app, context);

  std::vector<std::string> args(argv + 1, argv + argc);
  std::reverse(args.begin(), args.end());  // CLI11 parses a reversed vector
  try {
    app.parse(args);  // the chosen command runs as its callback, inside parse()
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e, out, err);
    return code == 0 ? kExitOk : kExitRefused;
  }
  return context.exit_code;
}

}  // namespace handoff::ctl
