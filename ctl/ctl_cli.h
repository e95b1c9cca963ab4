// The handoffctl command line: the operator's view of the cluster side of a migration, and of the
// rollout the coordinator runs. main() only forwards to RunCtl, so tests run every command
// in-process against the fake API server and a fake (or real, local) coordinator, with their own
// clock.
#ifndef HANDOFF_CTL_CTL_CLI_H_
#define HANDOFF_CTL_CTL_CLI_H_

#include <functional>
#include <iostream>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "common/fs/file_system.h"
#include "common/system/clock.h"
#include "coordinator/client/coordinator_client.h"
#include "common/kube/http_transport.h"
#include "common/kube/kubeconfig.h"

namespace handoff::ctl {

// Exit codes shared by handoffctl's commands.
inline constexpr int kExitOk = 0;        // success, or nothing to change
inline constexpr int kExitProblems = 1;  // a check found problems (bad nodes, a lease gap)
// Refused or failed, nothing changed: bad usage, unreadable kubeconfig or certificates, the API
// server unreachable or refusing, a plan that cannot be applied, the coordinator refusing a call.
inline constexpr int kExitRefused = 2;
// The coordinator could not be reached or did not answer in time. A change asked for may still
// have been made: `handoffctl status` tells.
inline constexpr int kExitUnavailable = 3;

// The effects the commands use; tests substitute their own.
struct CtlEnvironment {
  // Kubeconfigs, the files they name, settings files.
  std::function<std::unique_ptr<FileSystem>()> open_files;
  // HTTP to the API server the credentials name.
  std::function<absl::StatusOr<std::unique_ptr<kube::HttpTransport>>(
      const kube::ClusterCredentials&)>
      open_transport;
  std::function<std::unique_ptr<Clock>()> open_clock;
  // An environment variable (KUBECONFIG, HOME); std::nullopt when unset.
  std::function<std::optional<std::string>(const std::string& name)> get_env;
  // Polled by long-running commands (lease watch, status --watch): true once the operator asked
  // to stop. May be called from any thread.
  std::function<bool()> interrupted;
  // A client of the coordinator's OperatorService at `endpoint`.
  std::function<std::unique_ptr<OperatorClient>(const CoordinatorEndpoint& endpoint)>
      open_coordinator;
  // Whether the output stream is a terminal (status --watch then redraws the screen in place).
  std::function<bool()> output_is_terminal;
  // The standard input, which `-f -` reads (rancher rke2|rke). Tests substitute a stream of their
  // own; an environment that sets nothing reads the process's.
  std::function<std::istream&()> standard_input = []() -> std::istream& { return std::cin; };
};

// The real host: POSIX files, libcurl, the system clock, the process environment, SIGINT/SIGTERM
// (see StartInterruptWatcher), gRPC to the coordinator, isatty(stdout).
CtlEnvironment RealCtlEnvironment();

// For main(), before any other thread starts: SIGINT and SIGTERM go to a SignalWatcher
// (common/system/signal_watcher.h), as in the daemons; the first sets the flag
// RealCtlEnvironment().interrupted reads, a second one ends the process at once (exit code 130).
// An error when the watcher cannot start (no signalfd).
absl::Status StartInterruptWatcher();

int RunCtl(int argc, const char* const* argv, std::ostream& out, std::ostream& err,
           const CtlEnvironment& environment);

}  // namespace handoff::ctl

#endif  // HANDOFF_CTL_CTL_CLI_H_
