#include "coordinator/ctl/ctl_cli.h"

#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <csignal>
#include <cstdlib>
#include <ostream>
#include <thread>
#include <vector>

#include "agent/base/strings.h"
#include "coordinator/ctl/command_context.h"

namespace handoff::ctl {
namespace {

constexpr char kDescription[] =
    "handoffctl checks and prepares the cluster side of moving the cloud controllers from the\n"
    "in-tree AWS provider in kube-controller-manager to the AWS cloud-controller-manager with\n"
    "Leader Migration (handoff-agent moves each control-plane node):\n"
    "  rbac            let both managers use the migration lease (appends rules, never replaces)\n"
    "  lease           who holds the migration lease, and so runs the cloud controllers\n"
    "  verify nodes    every Node has an AWS providerID and no uninitialized taint\n"
    "  kubeadm-config  make kubeadm's stored configuration external too, so that a later\n"
    "                  `kubeadm upgrade` does not undo the move\n"
    "Every command reads the cluster through a kubeconfig (--kubeconfig; on a control-plane node\n"
    "/etc/kubernetes/admin.conf).\n";

std::atomic<bool> g_interrupted{false};

}  // namespace

CommandContext::CommandContext(std::ostream& out, std::ostream& err,
                               const CtlEnvironment& environment)
    : out_(out), err_(err), environment_(environment) {}

Clock& CommandContext::clock() {
  if (clock_ == nullptr) clock_ = environment_.open_clock();
  return *clock_;
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
  return environment;
}

void StartInterruptWatcher() {
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  // Blocked here, before any other thread exists, so every later thread inherits the mask and
  // only the watcher's sigwait receives them.
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  std::thread([signals] {
    int signal_number = 0;
    sigwait(&signals, &signal_number);
    g_interrupted = true;
    sigwait(&signals, &signal_number);
    std::_Exit(130);
  }).detach();
}

int RunCtl(int argc, const char* const* argv, std::ostream& out, std::ostream& err,
           const CtlEnvironment& environment) {
  CLI::App app(kDescription, "handoffctl");
  app.require_subcommand(1);
  app.footer(
      "Exit codes: 0 success, or nothing to change (a plan with changes is still 0); 1 a check\n"
      "found problems (verify nodes found bad nodes, lease watch saw a gap); 2 refused or\n"
      "failed, nothing changed (bad usage, unreadable kubeconfig, API server unreachable or\n"
      "refusing, a plan that cannot be applied).");
  CommandContext context(out, err, environment);
  AddRbacCommands(app, context);
  AddLeaseCommands(app, context);
  AddVerifyCommands(app, context);
  AddKubeadmConfigCommands(app, context);

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
