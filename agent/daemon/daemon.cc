#include "agent/daemon/daemon.h"

#include <csignal>
#include <mutex>

#include "agent/daemon/log_stream.h"
#include "agent/daemon/shutdown.h"
#include "agent/daemon/signal_watcher.h"

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
      rpc::CreateSecureChannel(config.coordinator, config.tls, channel_options);
  std::unique_ptr<Sleeper> sleeper = NewRealSleeper();
  AgentClientOptions client_options = config.client;
  client_options.coordinator = config.coordinator;
  AgentClient agent_client(channel, **agent, *sleeper, logger, client_options);
  {
    std::lock_guard<std::mutex> lock(mutex);
    client = &agent_client;
    if (stop) agent_client.Shutdown();
  }
  agent_client.Run();
  {
    std::lock_guard<std::mutex> lock(mutex);
    client = nullptr;
  }
  return absl::OkStatus();
}

}  // namespace handoff
