// What every handoffctl command shares: the output streams, the environment, the connections to
// the API server and to the coordinator, and how failures are reported. Each command group adds its
// subcommands with one Add*Commands function, so later groups (plan, start, status...) slot in the
// same way.
#ifndef HANDOFF_CTL_COMMAND_CONTEXT_H_
#define HANDOFF_CTL_COMMAND_CONTEXT_H_

#include <memory>
#include <ostream>
#include <string>

#include "CLI/CLI.hpp"
#include "absl/status/statusor.h"
#include "agent/engine/settings.h"
#include "coordinator/client/coordinator_client.h"
#include "common/kube/client.h"
#include "coordinator/kube/rbac.h"
#include "ctl/ctl_cli.h"

namespace handoff::ctl {

// The options every command that talks to the API server takes.
struct ConnectionOptions {
  std::string kubeconfig;  // "" = $KUBECONFIG, else ~/.kube/config
  std::string context;     // "" = the kubeconfig's current-context
  std::string request_timeout = "30s";
};

class CommandContext {
 public:
  CommandContext(std::ostream& out, std::ostream& err, const CtlEnvironment& environment);

  std::ostream& out() { return out_; }
  std::ostream& err() { return err_; }
  const CtlEnvironment& environment() const { return environment_; }
  // The clock of this run (created on first use, owned here).
  Clock& clock();

  // Loads the kubeconfig (printing its warnings, such as insecure-skip-tls-verify, on err) and
  // returns a client for its cluster. The client borrows clock().
  absl::StatusOr<std::unique_ptr<kube::KubeClient>> Connect(const ConnectionOptions& options);

  // A client of the coordinator, from the options, the environment's variables and the PEM files
  // read through its file system. `endpoint` receives what was resolved (for messages).
  absl::StatusOr<std::unique_ptr<OperatorClient>> ConnectCoordinator(
      const CoordinatorOptions& options, CoordinatorEndpoint& endpoint);

  // The rollout's settings from --settings `path` (read through the environment's files); the
  // defaults when `path` is empty. Errors name the flag and the file.
  absl::StatusOr<Settings> ReadSettings(const std::string& path);

  // Prints "handoffctl: <message>" on err and returns kExitRefused.
  int Fail(const absl::Status& status);

  // The exit code the parsed command set.
  int exit_code = kExitOk;

 private:
  std::ostream& out_;
  std::ostream& err_;
  const CtlEnvironment& environment_;
  std::unique_ptr<Clock> clock_;
};

// Who the cloud-controller-manager authenticates as, for the migration lease's RBAC.
struct CcmIdentityFlags {
  std::string user;             // --ccm-user
  std::string service_account;  // --ccm-service-account NAMESPACE/NAME
};
// --ccm-user and --ccm-service-account (each excludes the other).
void AddCcmIdentityOptions(CLI::App& command, CcmIdentityFlags& flags);
// Sets options.ccm_subject from the flags (unchanged when neither is given); InvalidArgument
// naming the flag for a service account that is not NAMESPACE/NAME.
absl::Status ApplyCcmIdentity(const CcmIdentityFlags& flags, kube::RbacOptions& options);

// --kubeconfig, --context, --request-timeout.
void AddConnectionOptions(CLI::App& command, ConnectionOptions& options);
// -o/--output text|json.
void AddOutputOption(CLI::App& command, std::string& format);
// --coordinator, --ca, --cert, --key, --server-name, --timeout; with `watch` also
// --watch-timeout and --reconnect-timeout.
void AddCoordinatorOptions(CLI::App& command, CoordinatorOptions& options, bool watch = false);

// The command groups.
void AddRbacCommands(CLI::App& app, CommandContext& context);
void AddVerifyCommands(CLI::App& app, CommandContext& context);
void AddLeaseCommands(CLI::App& app, CommandContext& context);
void AddKubeadmConfigCommands(CLI::App& app, CommandContext& context);
// plan, start, status, pause, resume, abort, rollback, finalize, history, nodes: the coordinator.
void AddRolloutCommands(CLI::App& app, CommandContext& context);
// certs init, certs issue: the handoff CA and the mutual-TLS certificates, as files.
void AddCertsCommands(CLI::App& app, CommandContext& context);
// handoffctl sandbox (rehearsal/sandbox/sandbox.h).
void AddSandboxCommands(CLI::App& app, CommandContext& context);
// rancher check cordon|ccm|nodes, rancher cordon, rancher uncordon (rancher_check_commands.cc).
void AddRancherCheckCommands(CLI::App& app, CommandContext& context);
// rancher rke2, rancher rke: a Rancher cluster's file, phase by phase (rancher_commands.cc).
void AddRancherCommands(CLI::App& app, CommandContext& context);
// preflight: every check before the first move (preflight_commands.cc).
void AddPreflightCommands(CLI::App& app, CommandContext& context);

}  // namespace handoff::ctl

#endif  // HANDOFF_CTL_COMMAND_CONTEXT_H_
