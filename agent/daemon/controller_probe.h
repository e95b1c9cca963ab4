// Who runs which cloud controller on this node, asked of the managers themselves, for the
// coordinator's live double-run detector (handoff.proto ControllerSample).
//
// Each kube-controller-manager and cloud-controller-manager process running now (found in /proc,
// as verification finds them) is asked for /healthz?verbose on its own --secure-port and
// --bind-address. Both managers serve /healthz anonymously (--authorization-always-allow-paths)
// and add one named check per controller as they start it (kube-controller-manager
// StartControllers, k8s.io/cloud-provider app.startControllers: controllerhealthz
// NamedPingChecker), after their leader election: a manager that does not hold its lease (or,
// for the migrated controllers, the migration lease) lists none. A manager never stops a
// controller it started without exiting, so "listed" means "running now". The same managers
// also export running_managed_controllers{name,manager} on /metrics, but /metrics needs a
// credential with RBAC for it; /healthz needs nothing the node does not already have.
#ifndef HANDOFF_AGENT_DAEMON_CONTROLLER_PROBE_H_
#define HANDOFF_AGENT_DAEMON_CONTROLLER_PROBE_H_

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/time/time.h"
#include "common/system/clock.h"
#include "common/system/health_checker.h"
#include "common/system/process_table.h"
#include "handoff/v1/handoff.pb.h"

namespace handoff {

// The controllers Leader Migration moves between the managers (the default controllerLeaders).
std::vector<std::string> DefaultWatchedControllers();

// The check names a /healthz?verbose body lists, in order: "[+]service ok" and
// "[-]route failed: reason withheld" both name a check; every other line is ignored.
std::vector<std::string> HealthzCheckNames(std::string_view body);

// Where `component` (kube-controller-manager or cloud-controller-manager) run with `argv`
// serves HTTPS: --secure-port (default 10257 or 10258; "=value" or a separate item) at
// --bind-address (the wildcards and unset: 127.0.0.1), path /healthz?verbose. nullopt for
// --secure-port=0 (no server).
std::optional<HealthEndpoint> ControllerListEndpoint(std::string_view component,
                                                     const std::vector<std::string>& argv);

struct ControllerProbeOptions {
  std::vector<std::string> controllers = DefaultWatchedControllers();
  absl::Duration timeout = absl::Seconds(2);  // per manager
};

// Thread-compatible; borrows all three, which must outlive it.
class ControllerProbe {
 public:
  ControllerProbe(const ProcessTable& processes, HealthChecker& health, Clock& clock,
                  ControllerProbeOptions options = {});

  // One look at every manager process on the node. A manager that does not answer 200 or 500
  // with a check list is reported unanswered, with why; /proc that cannot be read leaves the
  // sample with no managers and its `error` set.
  v1::ControllerSample Sample();

 private:
  const ProcessTable& processes_;
  HealthChecker& health_;
  Clock& clock_;
  ControllerProbeOptions options_;
};

}  // namespace handoff

#endif  // HANDOFF_AGENT_DAEMON_CONTROLLER_PROBE_H_
