// The agent's side of handoff.v1.AgentService.Connect: dials the coordinator over mutual TLS,
// holds one stream, introduces the node with AgentHello, carries out the coordinator's commands
// one at a time through a NodeAgent, and reconnects whenever the stream ends.
#ifndef HANDOFF_AGENT_DAEMON_AGENT_CLIENT_H_
#define HANDOFF_AGENT_DAEMON_AGENT_CLIENT_H_

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "agent/daemon/agent_events.h"
#include "agent/daemon/node_agent.h"
#include "common/system/backoff.h"
#include "common/system/clock.h"
#include "common/system/shutdown_signal.h"
#include "grpcpp/channel.h"
#include "grpcpp/client_context.h"
#include "grpcpp/support/status.h"
#include "handoff/v1/handoff.grpc.pb.h"
#include "spdlog/logger.h"

namespace handoff {

struct AgentClientOptions {
  // "host:port", for log messages (the channel already knows where it goes).
  std::string coordinator;
  // Each Connect stream's deadline; when it passes the agent reconnects.
  absl::Duration stream_deadline = absl::Minutes(30);
  // Reconnect backoff: the first wait, and the most any wait may be.
  absl::Duration reconnect_initial = absl::Milliseconds(250);
  absl::Duration reconnect_max = absl::Seconds(30);
  // On shutdown: how long to wait for the coordinator to end the stream after the agent
  // half-closed it, before cancelling it.
  absl::Duration close_grace = absl::Seconds(5);
  // Seeds the backoff's jitter; 0 draws a seed from std::random_device.
  uint64_t jitter_seed = 0;
  // Called (on Run's thread) with the status of every stream that ended, before the backoff.
  std::function<void(const grpc::Status&)> on_stream_end;
  // Called (on Run's thread) with one line saying where the connection stands, once the agent
  // knows: "connected to the coordinator at X as node N (rollout R)" when the coordinator
  // welcomed it, "not connected to the coordinator at X (UNAVAILABLE); retrying in 1.2s" before
  // each wait to reconnect. The daemon's readiness and status for systemd.
  std::function<void(const std::string&)> on_connection_state;
  // Called (on Run's thread) when a connection failed before the coordinator welcomed the agent;
  // an error stops Run with it. The daemon checks there that the agent's certificate is still
  // valid: one that expired while the agent ran fails every handshake from then on.
  std::function<absl::Status()> check_credentials;
  // For log lines that must say which certificates a failed handshake may be about: the
  // agent's own ("/etc/handoff/agent.crt: CN=cp-1, issued by CN=handoff-ca, valid until ...")
  // and the CA it verifies the coordinator with ("/etc/handoff/ca.crt"). "" leaves them out.
  std::string certificate_description;
  std::string ca_description;
  // Who runs which cloud controller on the node (ControllerProbe::Sample), taken every
  // `sample_interval` on a thread of its own and sent while the coordinator has welcomed the
  // agent, also during a move: the coordinator's live double-run detector reads these. Unset:
  // no samples.
  std::function<v1::ControllerSample()> sample_controllers;
  absl::Duration sample_interval = absl::Seconds(2);
  // On the same thread and interval, while welcomed: NodeAgent::RecheckUnhealthy (else
  // RecheckFacts), whose new report goes to the coordinator (AgentMessage.report) through
  // `send`. Unset: never.
  std::function<void(const std::function<void(const v1::NodeReport&)>& send)> recheck_report;
  // Told of welcomes, ended streams, moves carried out and samples sent (the metrics).
  // Borrowed; may be null. Must outlive the client.
  AgentEvents* events = nullptr;
};

// Threads: Run() reads the stream on the calling thread; a worker thread it owns carries out
// commands, one at a time and in the order they arrived (a move can take minutes, and the reader
// must keep reading). Writes to the stream are serialized. Shutdown() may be called from any
// thread. Borrows the agent and the clock it waits on between reconnects; they must outlive the
// client.
//
// Protocol (handoff.proto, AgentService): on every connect AgentHello first, then Welcome is
// awaited; the stream is then served until it ends (error, deadline, the coordinator going
// away or refusing the agent), and the agent reconnects with exponential backoff and jitter,
// reset after each Welcome. A coordinator that refuses the agent's identity (PERMISSION_DENIED:
// not an agent's certificate, another node's name; UNAUTHENTICATED) would refuse it again: Run
// stops and returns that refusal instead of retrying. A command whose id finished is answered
// with its stored result; one running or queued is answered once, when done. Commands queued but
// not started when a stream ends are dropped (never carried out; the coordinator sees them neither
// running nor finished). A result whose stream is gone is kept by the NodeAgent and goes out in the
// next hello's recent_results; a running command's result follows on the next stream once it is
// done.
class AgentClient {
 public:
  AgentClient(std::shared_ptr<grpc::Channel> channel, NodeAgent& agent, Clock& clock,
              std::shared_ptr<spdlog::logger> logger, AgentClientOptions options);
  // Run() must have returned (or never been called).
  ~AgentClient();

  AgentClient(const AgentClient&) = delete;
  AgentClient& operator=(const AgentClient&) = delete;

  // Connects and serves until Shutdown() (then OK), until the coordinator refuses the agent's
  // identity (PERMISSION_DENIED or UNAUTHENTICATED: that status, with the coordinator's reason),
  // or until check_credentials fails (its error). Returns once the running command has finished
  // (a move is a transaction) and the stream is closed. Call once.
  absl::Status Run();

  // Stops accepting commands and drops the queued ones; a running command finishes, its result
  // is sent, and the stream is closed (half-closed, then cancelled after close_grace). Returns at
  // once; idempotent; any thread.
  void Shutdown();

 private:
  using Stream = grpc::ClientReaderWriter<v1::AgentMessage, v1::CoordinatorMessage>;

  // One Connect stream, from hello to its end. Sets *welcomed when the coordinator accepted.
  grpc::Status Session(bool* welcomed);
  void OnCommand(const v1::Command& command);
  void WorkerLoop();
  void SamplerLoop();
  // Writes to the current (welcomed) stream; false when there is none or the write failed.
  bool Send(const v1::AgentMessage& message);
  bool SendResult(const v1::CommandResult& result);
  void CloseForShutdown();
  void LogStreamEnd(const grpc::Status& status, bool welcomed, absl::Duration retry_in);
  // The refusal that stops Run, for a stream that ended with `status`; OK for anything retried.
  absl::Status Refusal(const grpc::Status& status) const;
  // What most likely made a connection fail before a welcome, from gRPC's message; "" if unsure.
  std::string LikelyConnectFailureCause(const std::string& message) const;

  std::unique_ptr<v1::AgentService::Stub> stub_;
  NodeAgent& agent_;
  Clock& clock_;
  std::shared_ptr<spdlog::logger> logger_;
  AgentClientOptions options_;
  // AgentHello.instance_id: this process's streams, told apart from another agent's.
  const std::string instance_id_;
  ShutdownSignal shutdown_;
  std::thread worker_;
  std::thread sampler_;

  std::mutex mutex_;  // guards the members below; taken before the NodeAgent's locks
  std::condition_variable work_changed_;
  std::condition_variable session_ended_;
  std::deque<v1::Command> queue_;
  std::set<std::string> queued_ids_;
  std::string running_;  // the command the worker carries out; "" when idle
  bool stopping_ = false;
  grpc::ClientContext* context_ = nullptr;  // the stream in progress, if any

  std::mutex write_mutex_;    // serializes writes; guards stream_
  Stream* stream_ = nullptr;  // the welcomed stream results go to; nullptr between streams
};

}  // namespace handoff

#endif  // HANDOFF_AGENT_DAEMON_AGENT_CLIENT_H_
