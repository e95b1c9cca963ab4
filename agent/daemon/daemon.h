// `handoff-agent run`: the long-running node agent, put together from its parts. The command
// line (agent/cli) validates the configuration and reads the TLS files; this runs the agent.
#ifndef HANDOFF_AGENT_DAEMON_DAEMON_H_
#define HANDOFF_AGENT_DAEMON_DAEMON_H_

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "agent/apply/applier.h"
#include "agent/daemon/agent_client.h"
#include "agent/daemon/node_agent.h"
#include "common/system/service_notifier.h"
#include "proto/rpc/channel.h"
#include "spdlog/logger.h"

namespace handoff {

struct DaemonConfig {
  std::string coordinator;  // "host:port"
  rpc::ClientTls tls;       // PEM contents; the certificate's CN is agent.node_name
  // Where tls.ca_pem, tls.cert_pem and tls.key_pem were read from. With cert_file set they are
  // read again every cert_refresh_interval, and a reconnect presents a replaced certificate;
  // "" uses the PEMs as they are (and names the flags in messages).
  std::string ca_file;
  std::string cert_file;
  std::string key_file;
  absl::Duration cert_refresh_interval = absl::Seconds(60);
  NodeAgentOptions agent;
  AgentClientOptions client;
  // --metrics-listen: HOST:PORT to serve Prometheus metrics on (agent_metrics.h); "" or "off":
  // none. An address that cannot be bound stops the start (InvalidArgument naming the flag).
  std::string metrics_listen;
};

// Runs the agent until SIGTERM or SIGINT: takes both signals through a ServiceLifecycle (they are
// blocked first, so call this before anything else has started a thread), checks that the
// coordinator would accept the agent's certificate (it chains to the CA and is valid now, by
// host.clock), opens the command log and recovers a move the agent was killed in, dials the
// coordinator and serves it. On a signal it accepts no more commands, lets a running one finish,
// closes the stream and returns OK.
// systemd (through `notifier`): READY=1 once the command log is read and recovered and the first
// connection was welcomed or failed and is retried; STATUS= whenever the connection changes;
// WATCHDOG=1 from the calling thread, which does nothing else once the client runs, also during
// a move; STOPPING=1 on the signal.
// Errors, each a reason to stop rather than retry: the signals cannot be taken; the certificate
// does not chain to the CA or is outside its validity window, at start or when a connection
// fails later (FailedPrecondition naming the file and the dates); the command log cannot be
// read; the coordinator refused the agent's identity (PermissionDenied or Unauthenticated with
// its reason). Borrows `host`.
absl::Status RunAgentDaemon(const DaemonConfig& config, const Host& host,
                            std::shared_ptr<spdlog::logger> logger, ServiceNotifier& notifier);
// The same, telling systemd through sd_notify (nothing without $NOTIFY_SOCKET).
absl::Status RunAgentDaemon(const DaemonConfig& config, const Host& host,
                            std::shared_ptr<spdlog::logger> logger);

}  // namespace handoff

#endif  // HANDOFF_AGENT_DAEMON_DAEMON_H_
