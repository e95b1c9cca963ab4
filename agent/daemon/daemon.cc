#include "agent/daemon/daemon.h"

#include <chrono>
#include <future>
#include <optional>

#include "absl/strings/str_cat.h"
#include "agent/daemon/agent_metrics.h"
#include "agent/daemon/certificate.h"
#include "agent/daemon/controller_probe.h"
#include "agent/daemon/log_stream.h"
#include "common/pki/pki.h"
#include "common/system/metrics_server.h"
#include "common/system/service_lifecycle.h"
#include "prometheus/registry.h"

namespace handoff {
namespace {

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

// Runs the client on a thread of its own and keeps the systemd watchdog fed from this one: the
// client's threads block for minutes on purpose (a stream read, a move), so none of them can.
absl::Status RunClient(AgentClient& client, ServiceLifecycle& lifecycle) {
  std::future<absl::Status> ended =
      std::async(std::launch::async, [&client] { return client.Run(); });
  if (lifecycle.watchdog_interval() != absl::InfiniteDuration()) {
    const auto interval = absl::ToChronoMilliseconds(lifecycle.watchdog_interval());
    while (ended.wait_for(interval) != std::future_status::ready) lifecycle.Alive();
  }
  return ended.get();
}

}  // namespace

absl::Status RunAgentDaemon(const DaemonConfig& config, const Host& host,
                            std::shared_ptr<spdlog::logger> logger) {
  std::unique_ptr<ServiceNotifier> notifier = NewSystemdNotifier();
  return RunAgentDaemon(config, host, std::move(logger), *notifier);
}

absl::Status RunAgentDaemon(const DaemonConfig& config, const Host& host,
                            std::shared_ptr<spdlog::logger> logger, ServiceNotifier& notifier) {
  // A signal may come before the client exists (recovery can take minutes); SetOnStop below
  // hands it on once the client is there.
  ServiceLifecycleOptions lifecycle_options;
  lifecycle_options.logger = logger;
  lifecycle_options.stop_means = "accepting no more commands; a running one finishes first";
  absl::StatusOr<std::unique_ptr<ServiceLifecycle>> started =
      ServiceLifecycle::Start(std::move(lifecycle_options), notifier);
  if (!started.ok()) return started.status();
  ServiceLifecycle& lifecycle = **started;

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

  // Started once the signals are taken: the exposer's threads inherit their mask.
  auto registry = std::make_shared<prometheus::Registry>();
  std::unique_ptr<AgentMetrics> metrics;
  std::unique_ptr<MetricsServer> metrics_server;
  if (!MetricsOff(config.metrics_listen)) {
    metrics = std::make_unique<AgentMetrics>(*registry);
    absl::StatusOr<std::unique_ptr<MetricsServer>> served =
        MetricsServer::Start(config.metrics_listen, registry);
    if (!served.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--metrics-listen: ", served.status().message()));
    }
    metrics_server = *std::move(served);
    logger->info("serving metrics on {}", metrics_server->url());
    if (std::optional<std::string> warning = ExposureWarning(config.metrics_listen)) {
      logger->warn("{}", *warning);
    }
  }

  LogStream log(logger);
  lifecycle.Status("reading the command log; recovering an interrupted move, if any");
  logger->info("handoff-agent {} starting for node {} (moves {})", config.agent.agent_version,
               config.agent.node_name,
               config.agent.apply.verify ? "verified" : "NOT verified: --no-verify");
  absl::StatusOr<std::unique_ptr<NodeAgent>> agent = NodeAgent::Open(host, config.agent, log);
  if (!agent.ok()) return agent.status();
  if (lifecycle.shutdown().Requested()) return absl::OkStatus();

  rpc::ChannelOptions channel_options;
  channel_options.max_reconnect_backoff =
      std::chrono::milliseconds(absl::ToInt64Milliseconds(config.client.reconnect_max));
  std::shared_ptr<grpc::Channel> channel =
      rpc::CreateSecureChannel(config.coordinator, **tls, config.tls.server_name, channel_options);
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
    client_options.recheck_report =
        [agent = agent->get()](const std::function<void(const v1::NodeReport&)>& send) {
          if (!agent->RecheckUnhealthy(send)) agent->RecheckFacts(send);
        };
  }
  // Ready once the command log is read and recovered and the first connection has either been
  // welcomed or failed and is retried: from then on the agent does its job, or waits for the
  // coordinator, for as long as it takes.
  client_options.on_connection_state = [&lifecycle](const std::string& state) {
    lifecycle.Ready(state);
  };
  client_options.events = metrics.get();
  AgentClient agent_client(channel, **agent, host.clock, logger, client_options);
  lifecycle.SetOnStop([&agent_client] { agent_client.Shutdown(); });
  absl::Status ended = RunClient(agent_client, lifecycle);
  lifecycle.SetOnStop(nullptr);
  return ended;
}

}  // namespace handoff
