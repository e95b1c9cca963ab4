#include "agent/daemon/agent_client.h"

#include <algorithm>
#include <chrono>
#include <optional>
#include <random>
#include <utility>

#include "absl/strings/str_cat.h"

namespace handoff {
namespace {

std::string CodeName(grpc::StatusCode code) {
  switch (code) {
    case grpc::StatusCode::OK:
      return "OK";
    case grpc::StatusCode::CANCELLED:
      return "CANCELLED";
    case grpc::StatusCode::UNKNOWN:
      return "UNKNOWN";
    case grpc::StatusCode::INVALID_ARGUMENT:
      return "INVALID_ARGUMENT";
    case grpc::StatusCode::DEADLINE_EXCEEDED:
      return "DEADLINE_EXCEEDED";
    case grpc::StatusCode::NOT_FOUND:
      return "NOT_FOUND";
    case grpc::StatusCode::ALREADY_EXISTS:
      return "ALREADY_EXISTS";
    case grpc::StatusCode::PERMISSION_DENIED:
      return "PERMISSION_DENIED";
    case grpc::StatusCode::RESOURCE_EXHAUSTED:
      return "RESOURCE_EXHAUSTED";
    case grpc::StatusCode::FAILED_PRECONDITION:
      return "FAILED_PRECONDITION";
    case grpc::StatusCode::ABORTED:
      return "ABORTED";
    case grpc::StatusCode::OUT_OF_RANGE:
      return "OUT_OF_RANGE";
    case grpc::StatusCode::UNIMPLEMENTED:
      return "UNIMPLEMENTED";
    case grpc::StatusCode::INTERNAL:
      return "INTERNAL";
    case grpc::StatusCode::UNAVAILABLE:
      return "UNAVAILABLE";
    case grpc::StatusCode::DATA_LOSS:
      return "DATA_LOSS";
    case grpc::StatusCode::UNAUTHENTICATED:
      return "UNAUTHENTICATED";
    default:
      return "code " + std::to_string(static_cast<int>(code));
  }
}

std::string ActionName(const v1::Command& command) {
  switch (command.action_case()) {
    case v1::Command::kMove:
      return "move " + v1::NodeState_Name(command.move().from()) + " -> " +
             v1::NodeState_Name(command.move().to());
    case v1::Command::kPlan:
      return "plan";
    case v1::Command::kReport:
      return "report";
    case v1::Command::ACTION_NOT_SET:
      break;
  }
  return "unknown action";
}

// 128 random bits in hex.
std::string NewInstanceId() {
  std::random_device device;
  std::string id;
  for (int i = 0; i < 4; ++i) absl::StrAppend(&id, absl::Hex(device(), absl::kZeroPad8));
  return id;
}

}  // namespace

AgentClient::AgentClient(std::shared_ptr<grpc::Channel> channel, NodeAgent& agent, Clock& clock,
                         std::shared_ptr<spdlog::logger> logger, AgentClientOptions options)
    : stub_(v1::AgentService::NewStub(std::move(channel))),
      agent_(agent),
      clock_(clock),
      logger_(std::move(logger)),
      options_(std::move(options)),
      instance_id_(NewInstanceId()) {}

AgentClient::~AgentClient() {
  if (worker_.joinable()) {
    Shutdown();
    worker_.join();
  }
  if (sampler_.joinable()) {
    Shutdown();
    sampler_.join();
  }
}

void AgentClient::Shutdown() {
  shutdown_.Request();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  work_changed_.notify_all();
}

absl::Status AgentClient::Run() {
  worker_ = std::thread(&AgentClient::WorkerLoop, this);
  if (options_.sample_controllers || options_.recheck_report) {
    sampler_ = std::thread(&AgentClient::SamplerLoop, this);
  }
  std::mt19937_64 random(options_.jitter_seed != 0 ? options_.jitter_seed : std::random_device()());
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  Backoff backoff(options_.reconnect_initial, options_.reconnect_max);
  logger_->info("connecting to the coordinator at {} as node {}", options_.coordinator,
                agent_.options().node_name);
  absl::Status stopped_by;
  while (!shutdown_.Requested()) {
    bool welcomed = false;
    const grpc::Status status = Session(&welcomed);
    if (options_.on_stream_end) options_.on_stream_end(status);
    if (shutdown_.Requested()) break;
    stopped_by = Refusal(status);
    if (stopped_by.ok() && !welcomed && options_.check_credentials &&
        (status.error_code() == grpc::StatusCode::UNAVAILABLE ||
         status.error_code() == grpc::StatusCode::UNKNOWN)) {
      stopped_by = options_.check_credentials();
    }
    if (!stopped_by.ok()) {
      logger_->error("{}", std::string(stopped_by.message()));
      break;
    }
    if (welcomed) backoff.Reset();
    // Whole milliseconds, so that the log reads "retrying in 1.43s".
    const absl::Duration wait = absl::Trunc(backoff.Next(unit(random)), absl::Milliseconds(1));
    LogStreamEnd(status, welcomed, wait);
    if (options_.on_connection_state) {
      options_.on_connection_state(absl::StrCat(
          "not connected to the coordinator at ", options_.coordinator, " (",
          CodeName(status.error_code()), "); retrying in ", absl::FormatDuration(wait)));
    }
    if (!clock_.SleepOrStop(wait, shutdown_)) break;
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  work_changed_.notify_all();
  worker_.join();
  shutdown_.Request();  // a refusal ends Run without Shutdown(); the sampler stops too
  if (sampler_.joinable()) sampler_.join();
  logger_->info("disconnected from the coordinator; stopped");
  return stopped_by;
}

absl::Status AgentClient::Refusal(const grpc::Status& status) const {
  const grpc::StatusCode code = status.error_code();
  if (code != grpc::StatusCode::PERMISSION_DENIED && code != grpc::StatusCode::UNAUTHENTICATED) {
    return absl::OkStatus();
  }
  // The coordinator decides on the certificate alone, so the same certificate is refused again:
  // retrying would only hide the reason in a log that grows forever.
  return absl::Status(
      static_cast<absl::StatusCode>(code),
      absl::StrCat("the coordinator at ", options_.coordinator, " refused node ",
                   agent_.options().node_name, " (", CodeName(code), "): ", status.error_message(),
                   "; not retrying: the same certificate would be refused again",
                   options_.certificate_description.empty()
                       ? std::string()
                       : absl::StrCat(" (", options_.certificate_description, ")"),
                   ". Give the agent its node's agent certificate (O=handoff:agents, CN=<node>)"));
}

grpc::Status AgentClient::Session(bool* welcomed) {
  // The worker may have taken a command the NodeAgent has not begun yet; read before the hello,
  // so that a command is in the hello as running or among the results, whenever it finishes.
  std::string taken;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    taken = running_;
  }
  v1::AgentMessage hello;
  *hello.mutable_hello() = agent_.Hello();
  v1::AgentHello& fields = *hello.mutable_hello();
  fields.set_instance_id(instance_id_);
  if (fields.running_command_id().empty() && !taken.empty()) {
    std::optional<v1::CommandResult> result = agent_.FinishedResult(taken);
    const bool listed =
        std::any_of(fields.recent_results().begin(), fields.recent_results().end(),
                    [&](const v1::CommandResult& recent) { return recent.command_id() == taken; });
    if (!result) {
      fields.set_running_command_id(taken);
    } else if (!listed) {
      // It finished after the hello was made: list it, still within the limit, oldest first.
      if (fields.recent_results_size() >= kHelloRecentResults) {
        fields.mutable_recent_results()->DeleteSubrange(0, 1);
      }
      *fields.add_recent_results() = *result;
    }
  }
  const std::string announced = hello.hello().running_command_id();

  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() +
                       absl::ToChronoNanoseconds(options_.stream_deadline));
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stopping_) return grpc::Status(grpc::StatusCode::CANCELLED, "the agent is stopping");
    context_ = &context;
  }
  std::unique_ptr<Stream> stream = stub_->Connect(&context);
  grpc::Status protocol_error;
  v1::CoordinatorMessage message;
  if (stream->Write(hello) && stream->Read(&message)) {
    if (message.has_welcome()) {
      *welcomed = true;
      if (options_.events != nullptr) options_.events->Welcomed();
      const std::string rollout = message.welcome().rollout_id().empty()
                                      ? std::string(" (no rollout yet)")
                                      : " (rollout " + message.welcome().rollout_id() + ")";
      logger_->info("the coordinator (version {}) welcomed node {}{}",
                    message.welcome().coordinator_version(), agent_.options().node_name, rollout);
      if (options_.on_connection_state) {
        options_.on_connection_state(absl::StrCat("connected to the coordinator at ",
                                                  options_.coordinator, " as node ",
                                                  agent_.options().node_name, rollout));
      }
      {
        std::lock_guard<std::mutex> lock(write_mutex_);
        stream_ = stream.get();
      }
      // The hello said this command was running. If it finished before this stream could carry
      // its result, the worker found no stream to send it to: send it now. (A result sent twice
      // is harmless; one never sent would leave the coordinator waiting.)
      if (!announced.empty()) {
        bool still_running = false;
        {
          std::lock_guard<std::mutex> lock(mutex_);
          still_running = running_ == announced;
        }
        if (!still_running) {
          if (std::optional<v1::CommandResult> result = agent_.FinishedResult(announced)) {
            SendResult(*result);
          }
        }
      }
      while (stream->Read(&message)) {
        if (message.has_command()) {
          OnCommand(message.command());
        } else {
          logger_->warn("the coordinator sent a message this agent does not expect; ignored");
        }
      }
    } else {
      protocol_error = grpc::Status(grpc::StatusCode::INTERNAL,
                                    "the coordinator's first message was not Welcome");
      context.TryCancel();
    }
  }
  {
    std::lock_guard<std::mutex> lock(write_mutex_);
    stream_ = nullptr;
  }
  if (*welcomed && options_.events != nullptr) options_.events->StreamEnded();
  const grpc::Status status = stream->Finish();
  size_t dropped = 0;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    context_ = nullptr;
    dropped = queue_.size();
    queue_.clear();
    queued_ids_.clear();
  }
  session_ended_.notify_all();
  if (dropped > 0) {
    logger_->warn(
        "the stream ended with {} command(s) queued and not started; they were dropped "
        "(the coordinator may send them again)",
        dropped);
  }
  return protocol_error.ok() ? status : protocol_error;
}

void AgentClient::OnCommand(const v1::Command& command) {
  std::optional<v1::CommandResult> stored;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stopping_) {
      logger_->info("command {} ({}) not accepted: the agent is stopping", command.id(),
                    ActionName(command));
      return;
    }
    if (running_ == command.id() || queued_ids_.count(command.id()) > 0) {
      logger_->info("command {} is already {}; its result follows when it is done", command.id(),
                    running_ == command.id() ? "running" : "queued");
      return;
    }
    // Looked up under mutex_: the worker stores a result before it clears running_, so a
    // command is always seen running, or finished, or neither.
    stored = agent_.FinishedResult(command.id());
    if (!stored) {
      queue_.push_back(command);
      queued_ids_.insert(command.id());
    }
  }
  if (stored) {
    logger_->info("command {} was carried out before; sending its stored result", command.id());
    SendResult(*stored);
    return;
  }
  logger_->info("command {} ({}) accepted", command.id(), ActionName(command));
  work_changed_.notify_all();
}

void AgentClient::WorkerLoop() {
  while (true) {
    v1::Command command;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      work_changed_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (stopping_) break;
      command = std::move(queue_.front());
      queue_.pop_front();
      queued_ids_.erase(command.id());
      running_ = command.id();
    }
    logger_->info("command {}: carrying out {}", command.id(), ActionName(command));
    // Proofs made during a move go out at once (the coordinator may release a lease with them);
    // one lost with a stream is not sent again: the lease then expires as it would anyway.
    // Measured on the monotonic clock: a move's duration must not jump with the wall clock.
    const auto started = std::chrono::steady_clock::now();
    const v1::CommandResult result = agent_.Execute(command, [this](const v1::AgentMessage& m) {
      if (!Send(m)) logger_->warn("no stream to send a move's progress on");
    });
    if (options_.events != nullptr && command.has_move()) {
      options_.events->MoveFinished(
          result, absl::FromChrono(std::chrono::steady_clock::now() - started));
    }
    {
      // Cleared before sending: a stream welcomed meanwhile then sees the command finished and
      // sends the result itself, so it is never lost between two streams.
      std::lock_guard<std::mutex> lock(mutex_);
      running_.clear();
    }
    if (!SendResult(result)) {
      logger_->warn(
          "command {}: no stream to send its result on; it goes out with the next "
          "hello",
          command.id());
    }
  }
  CloseForShutdown();
}

void AgentClient::SamplerLoop() {
  while (!shutdown_.WaitTimeoutOrShutdown(options_.sample_interval)) {
    {
      std::lock_guard<std::mutex> lock(write_mutex_);
      if (stream_ == nullptr) continue;  // not welcomed: nobody to tell
    }
    if (options_.sample_controllers) {
      v1::AgentMessage message;
      *message.mutable_controllers() = options_.sample_controllers();
      // A stream that ended meanwhile drops it; the next sample goes to the next.
      if (Send(message) && options_.events != nullptr) options_.events->ControllerSampleSent();
    }
    if (options_.recheck_report) {
      options_.recheck_report([this](const v1::NodeReport& report) {
        v1::AgentMessage message;
        *message.mutable_report() = report;
        if (Send(message)) {
          logger_->info("the node now reads {}, {}{}", v1::NodeState_Name(report.state()),
                        report.healthy() ? "healthy" : "not healthy: ", report.health_detail());
        }
      });
    }
  }
}

bool AgentClient::Send(const v1::AgentMessage& message) {
  std::lock_guard<std::mutex> lock(write_mutex_);
  if (stream_ == nullptr) return false;
  return stream_->Write(message);
}

bool AgentClient::SendResult(const v1::CommandResult& result) {
  v1::AgentMessage message;
  *message.mutable_result() = result;
  const bool sent = Send(message);
  if (sent) {
    logger_->info("command {}: sent result {}", result.command_id(),
                  v1::CommandResult::Outcome_Name(result.outcome()));
  }
  return sent;
}

void AgentClient::CloseForShutdown() {
  bool half_closed = false;
  {
    std::lock_guard<std::mutex> lock(write_mutex_);
    if (stream_ != nullptr) {
      // Tells the coordinator the agent is done; it ends the stream, so the agent leaves as a
      // clean disconnect rather than a cancelled call.
      stream_->WritesDone();
      stream_ = nullptr;
      half_closed = true;
    }
  }
  std::unique_lock<std::mutex> lock(mutex_);
  if (half_closed) {
    session_ended_.wait_for(lock, absl::ToChronoNanoseconds(options_.close_grace),
                            [this] { return context_ == nullptr; });
  }
  if (context_ != nullptr) context_->TryCancel();
}

std::string AgentClient::LikelyConnectFailureCause(const std::string& message) const {
  // gRPC puts the TLS stack's and the socket's words in the message; nothing else tells a
  // refused certificate from a network problem.
  if (message.find("certificate verify failed") != std::string::npos) {
    return absl::StrCat(
        "this agent refused the coordinator's certificate: it does not verify against ",
        options_.ca_description.empty() ? std::string("the agent's CA (--ca)")
                                        : options_.ca_description,
        " (expired, not yet valid, or issued by another CA)");
  }
  if (message.find("Peer name") != std::string::npos ||
      message.find("not in peer certificate") != std::string::npos) {
    return "the coordinator's certificate does not name the address dialed (see --server-name)";
  }
  if (message.find("Connection refused") != std::string::npos) {
    return "nothing listens there (is the coordinator running, on that port?)";
  }
  if (message.find("Socket closed") != std::string::npos ||
      message.find("Connection reset") != std::string::npos ||
      message.find("handshake") != std::string::npos) {
    // TLS 1.3: the client's side of the handshake is over before the server checks the client's
    // certificate, so a refusal arrives as the connection closing.
    return absl::StrCat(
        "it closed the connection during the TLS handshake, most likely refusing this agent's "
        "certificate",
        options_.certificate_description.empty()
            ? std::string()
            : absl::StrCat(" (", options_.certificate_description, ")"),
        "; the coordinator's log names the reason");
  }
  return "";
}

void AgentClient::LogStreamEnd(const grpc::Status& status, bool welcomed, absl::Duration retry_in) {
  const std::string retry = absl::FormatDuration(retry_in);
  const std::string code = CodeName(status.error_code());
  switch (status.error_code()) {
    case grpc::StatusCode::FAILED_PRECONDITION:
      logger_->error("the coordinator at {} refused node {} ({}): {}; retrying in {}",
                     options_.coordinator, agent_.options().node_name, code, status.error_message(),
                     retry);
      return;
    case grpc::StatusCode::DEADLINE_EXCEEDED:
      if (welcomed) {
        logger_->info("the stream reached its deadline ({}); reconnecting in {}",
                      absl::FormatDuration(options_.stream_deadline), retry);
        return;
      }
      break;
    case grpc::StatusCode::UNAVAILABLE:
    case grpc::StatusCode::UNKNOWN:
      if (!welcomed) {
        const std::string cause = LikelyConnectFailureCause(status.error_message());
        logger_->warn("cannot reach the coordinator at {}{} ({}: {}); retrying in {}",
                      options_.coordinator, cause.empty() ? "" : ": " + cause, code,
                      status.error_message(), retry);
        return;
      }
      if (status.error_code() == grpc::StatusCode::UNKNOWN) break;
      logger_->warn("lost the coordinator at {} ({}: {}); reconnecting in {}",
                    options_.coordinator, code, status.error_message(), retry);
      return;
    case grpc::StatusCode::OK:
      logger_->info("the coordinator ended the stream; reconnecting in {}", retry);
      return;
    default:
      break;
  }
  logger_->warn("the stream to the coordinator at {} ended ({}: {}); reconnecting in {}",
                options_.coordinator, code, status.error_message(), retry);
}

}  // namespace handoff
