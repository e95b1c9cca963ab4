// The handoffctl command line: the operator's view of the cluster side of a migration. main()
// only forwards to RunCtl, so tests run every command in-process against the fake API server,
// with their own clock.
#ifndef HANDOFF_COORDINATOR_CTL_CTL_CLI_H_
#define HANDOFF_COORDINATOR_CTL_CTL_CLI_H_

#include <functional>
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "agent/fs/file_system.h"
#include "agent/system/clock.h"
#include "coordinator/kube/http_transport.h"
#include "coordinator/kube/kubeconfig.h"

namespace handoff::ctl {

// Exit codes shared by handoffctl's commands.
inline constexpr int kExitOk = 0;        // success, or nothing to change
inline constexpr int kExitProblems = 1;  // a check found problems (bad nodes, a lease gap)
// Refused or failed, nothing changed: bad usage, unreadable kubeconfig, the API server
// unreachable or refusing, a plan that cannot be applied.
inline constexpr int kExitRefused = 2;

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
  // Polled by long-running commands (lease watch): true once the operator asked to stop.
  std::function<bool()> interrupted;
};

// The real host: POSIX files, libcurl, the system clock, the process environment, SIGINT/SIGTERM
// (see StartInterruptWatcher).
CtlEnvironment RealCtlEnvironment();

// For main(), before any other thread starts: blocks SIGINT and SIGTERM and takes them on a
// thread of their own; the first sets the flag RealCtlEnvironment().interrupted reads, a second
// one ends the process at once (exit code 130).
void StartInterruptWatcher();

int RunCtl(int argc, const char* const* argv, std::ostream& out, std::ostream& err,
           const CtlEnvironment& environment);

}  // namespace handoff::ctl

#endif  // HANDOFF_COORDINATOR_CTL_CTL_CLI_H_
