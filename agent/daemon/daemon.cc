#include "agent/daemon/daemon.h"

#include <csignal>
#include <mutex>

#include "absl/strings/str_cat.h"
#include "agent/daemon/certificate.h"
#include "agent/daemon/controller_probe.h"
#include "agent/daemon/log_stream.h"
#include "agent/daemon/shutdown.h"
#include "agent/daemon/signal_watcher.h"
#include "coordinator/pki/pki.h"

namespace handoff {
namespace {

const char* SignalName(int signal) {
  switch (signal) {
    case SIGTERM:
      return "SIGTERM";
    case SIGINT:
      return "SIGINT";
    default:
      return "signal";
  }
}

// The coordinator verifies the agent's certificate at every handshake, and refuses it with no
// more than a closed connection on the agent's side; the same check here names the file and
// the dates.
absl::Status CheckCertificate(const DaemonConfig& config, const rpc::TlsPems& tls,
                              absl::Time now) {
  absl::Status usable = CheckClientCertificate(tls.cert_pem, tls.ca_pem, now);
  if (usable.ok()) return usable;
  return absl::Status(
      usable.code(),
      absl::StrCat(config.cert_file.empty() ? std::string("--cert") : config.cert_file,
                   " with the CA ", config.ca_file.empty() ? std::string("--ca") : config.ca_file,
                   ": ", usable.message(),
                   "; the coordinator refuses it: give the agent a certificate valid now, signed "
                   "by the handoff CA (handoffctl certs issue --node ",
                   config.agent.node_name, "), and check this host's clock"));
}

}  // namespace

absl::Status RunAgentDaemon(const DaemonConfig& config, const Host& host,
                            std::shared_ptr<spdlog::logger> logger) {
  // A signal may come before the client exists (recovery can take minutes); it is remembered
  // and handed on once the client is there.
  std::mutex mutex;
  AgentClient* client = nullptr;
  bool stop = false;
  absl::StatusOr<std::unique_ptr<SignalWatcher>> watcher = SignalWatcher::Start([&](int signal) {
    std::lock_guard<std::mutex> lock(mutex);
    if (stop) {
      logger->info("{}: already stopping; waiting for the running command to finish",
                   SignalName(signal));
      return;
    }
    logger->info("{}: accepting no more commands; a running one finishes first",
                 SignalName(signal));
    stop = true;
    if (client != nullptr) client->Shutdown();
  });
  if (!watcher.ok()) return watcher.status();

  // Read again every --cert-refresh-interval from here on (started once the signals are taken:
  // its threads inherit their mask); the checks below take what a connection would present.
  absl::StatusOr<std::shared_ptr<rpc::TlsMaterial>> tls = AgentTlsMaterial(
      config.tls, rpc::TlsFiles{config.ca_file, config.cert_file, config.key_file},
      config.cert_refresh_interval, config.agent.node_name, logger);
  if (!tls.ok()) return tls.status();
  const rpc::TlsPems presented = (*tls)->Current();
  if (absl::Status usable = CheckCertificate(config, presented, host.clock.Now());
      !usable.ok()) {
    return usable;
  }
  const std::string certificate =
      absl::StrCat(config.cert_file.empty() ? std::string("--cert") : config.cert_file, ": ",
                   DescribeCertificate(presented.cert_pem));
  if (absl::StatusOr<pki::CertificateInfo> info = pki::InspectCertificate(presented.cert_pem);
      info.ok() && pki::ExpiresSoon(*info, host.clock.Now())) {
    logger->warn("the agent's certificate expires soon; the coordinator refuses it from then on "
                 "({}): issue a new one (handoffctl certs issue --node {})",
                 certificate, config.agent.node_name);
  }

  LogStream log(logger);
  logger->info("handoff-agent {} starting for node {} (moves {})", config.agent.agent_version,
               config.agent.node_name,
               config.agent.apply.verify ? "verified" : "NOT verified: --no-verify");
  absl::StatusOr<std::unique_ptr<NodeAgent>> agent = NodeAgent::Open(host, config.agent, log);
  if (!agent.ok()) return agent.status();
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (stop) return absl::OkStatus();
  }

  rpc::ChannelOptions channel_options;
  channel_options.max_reconnect_backoff =
      std::chrono::milliseconds(absl::ToInt64Milliseconds(config.client.reconnect_max));
  std::shared_ptr<grpc::Channel> channel =
      rpc::CreateSecureChannel(config.coordinator, **tls, config.tls.server_name, channel_options);
  std::unique_ptr<Sleeper> sleeper = NewRealSleeper();
  AgentClientOptions client_options = config.client;
  client_options.coordinator = config.coordinator;
  client_options.certificate_description = certificate;
  client_options.ca_description = config.ca_file.empty() ? "--ca" : config.ca_file;
  // The files as they are now: one replaced since the last refresh is what the next connection
  // presents (a refused replacement is logged, and the previous one checked).
  client_options.check_credentials = [&config, &host, tls = *tls] {
    tls->Refresh().IgnoreError();
    return CheckCertificate(config, tls->Current(), host.clock.Now());
  };
  // The probe runs on the client's sampler thread beside the commands: the procfs table and the
  // curl checker keep no state between calls.
  ControllerProbe probe(host.processes, host.health, host.clock);
  if (config.client.sample_interval > absl::ZeroDuration()) {
    client_options.sample_controllers = [&probe] { return probe.Sample(); };
  }
  AgentClient agent_client(channel, **agent, *sleeper, logger, client_options);
  {
    std::lock_guard<std::mutex> lock(mutex);
    client = &agent_client;
    if (stop) agent_client.Shutdown();
  }
  absl::Status ended = agent_client.Run();
  {
    std::lock_guard<std::mutex> lock(mutex);
    client = nullptr;
  }
  return ended;
}

}  // namespace handoff
