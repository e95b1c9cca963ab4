// An in-process AgentService for the agent's tests: on 127.0.0.1:0, requiring and verifying
// client certificates from the handoff test CA, as the coordinator does.
#ifndef HANDOFF_TESTS_AGENT_DAEMON_FAKE_COORDINATOR_H_
#define HANDOFF_TESTS_AGENT_DAEMON_FAKE_COORDINATOR_H_

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "grpcpp/security/server_credentials.h"
#include "grpcpp/server.h"
#include "grpcpp/server_builder.h"
#include "handoff/v1/handoff.grpc.pb.h"
#include "tests/agent/engine/node_fixture.h"

namespace handoff::testing {

inline constexpr auto kPatience = std::chrono::seconds(60);

// A scriptable AgentService. Every stream: the hello is recorded and judged by `admit` (OK:
// Welcome; otherwise the stream ends with that status); then queued commands are sent and
// results recorded until the test ends the stream, the agent half-closes it, or the server stops.
class FakeCoordinator final : public v1::AgentService::Service {
 public:
  // Serves on 127.0.0.1 at a free port (stored in *port) with the test CA's coordinator
  // certificate. Stop() the service before shutting the server down.
  std::unique_ptr<grpc::Server> Start(int* port) {
    grpc::SslServerCredentialsOptions ssl(
        GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
    ssl.pem_root_certs = ReadTestdata("handoff-tls/ca.crt");
    ssl.pem_key_cert_pairs.push_back(
        {ReadTestdata("handoff-tls/coordinator.key"), ReadTestdata("handoff-tls/coordinator.crt")});
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", grpc::SslServerCredentials(ssl), port);
    builder.RegisterService(this);
    std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
    if (*port <= 0) return nullptr;
    return server;
  }

  struct Hello {
    v1::AgentHello hello;
    std::string peer_common_name;
  };

  grpc::Status Connect(
      grpc::ServerContext* context,
      grpc::ServerReaderWriter<v1::CoordinatorMessage, v1::AgentMessage>* stream) override {
    v1::AgentMessage first;
    if (!stream->Read(&first) || !first.has_hello()) {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "AgentHello must come first");
    }
    std::string common_name;
    for (const grpc::string_ref& value :
         context->auth_context()->FindPropertyValues("x509_common_name")) {
      common_name.assign(value.data(), value.size());
    }
    grpc::Status admitted;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      hellos_.push_back(Hello{first.hello(), common_name});
      if (admit_) admitted = admit_(first.hello());
      changed_.notify_all();
    }
    if (!admitted.ok()) return admitted;

    v1::CoordinatorMessage welcome;
    welcome.mutable_welcome()->set_rollout_id("r1");
    welcome.mutable_welcome()->set_coordinator_version("test");
    if (!stream->Write(welcome)) return grpc::Status::OK;

    bool agent_closed = false;
    bool cancelling = false;
    std::thread reader([&] {
      v1::AgentMessage message;
      while (stream->Read(&message)) {
        std::lock_guard<std::mutex> lock(mutex_);
        if (message.has_result()) results_.push_back(message.result());
        if (message.has_controllers()) samples_.push_back(message.controllers());
        if (message.has_report()) reports_.push_back(message.report());
        changed_.notify_all();
      }
      std::lock_guard<std::mutex> lock(mutex_);
      agent_closed = true;
      if (!cancelling) half_closes_ += 1;
      changed_.notify_all();
    });
    std::unique_lock<std::mutex> lock(mutex_);
    while (true) {
      changed_.wait(lock, [&] { return !outbox_.empty() || end_ || stopping_ || agent_closed; });
      if (!outbox_.empty() && !end_ && !stopping_ && !agent_closed) {
        v1::CoordinatorMessage message;
        *message.mutable_command() = outbox_.front();
        outbox_.pop_front();
        lock.unlock();
        stream->Write(message);
        lock.lock();
        continue;
      }
      break;
    }
    end_ = false;
    const bool cancel = !agent_closed;
    cancelling = cancel;
    lock.unlock();
    // The reader is blocked in Read until the stream ends one way or the other.
    if (cancel) context->TryCancel();
    reader.join();
    return grpc::Status::OK;
  }

  void Admit(std::function<grpc::Status(const v1::AgentHello&)> admit) {
    std::lock_guard<std::mutex> lock(mutex_);
    admit_ = std::move(admit);
  }
  void Send(const v1::Command& command) {
    std::lock_guard<std::mutex> lock(mutex_);
    outbox_.push_back(command);
    changed_.notify_all();
  }
  // Ends the stream in progress (the agent sees it cancelled). Send a command and await its
  // result first when the agent must have seen the Welcome.
  void EndStream() {
    std::lock_guard<std::mutex> lock(mutex_);
    end_ = true;
    changed_.notify_all();
  }
  void Stop() {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
    changed_.notify_all();
  }

  // Waits (generously) until `done` holds over the recorded hellos and results.
  bool WaitFor(const std::function<bool(const std::vector<Hello>&,
                                        const std::vector<v1::CommandResult>&)>& done) {
    std::unique_lock<std::mutex> lock(mutex_);
    return changed_.wait_for(lock, kPatience, [&] { return done(hellos_, results_); });
  }
  std::vector<Hello> hellos() {
    std::lock_guard<std::mutex> lock(mutex_);
    return hellos_;
  }
  std::vector<v1::CommandResult> results() {
    std::lock_guard<std::mutex> lock(mutex_);
    return results_;
  }
  // Waits (generously) until at least `count` controller samples arrived; then returns them all.
  std::vector<v1::ControllerSample> WaitForSamples(size_t count) {
    std::unique_lock<std::mutex> lock(mutex_);
    changed_.wait_for(lock, kPatience, [&] { return samples_.size() >= count; });
    return samples_;
  }
  // Waits (generously) until at least `count` reports outside a command arrived; returns them all.
  std::vector<v1::NodeReport> WaitForReports(size_t count) {
    std::unique_lock<std::mutex> lock(mutex_);
    changed_.wait_for(lock, kPatience, [&] { return reports_.size() >= count; });
    return reports_;
  }
  // Streams the agent ended by half-closing them.
  int half_closes() {
    std::lock_guard<std::mutex> lock(mutex_);
    return half_closes_;
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  std::function<grpc::Status(const v1::AgentHello&)> admit_;
  std::vector<Hello> hellos_;
  std::vector<v1::CommandResult> results_;
  std::vector<v1::ControllerSample> samples_;
  std::vector<v1::NodeReport> reports_;
  std::deque<v1::Command> outbox_;
  bool end_ = false;
  bool stopping_ = false;
  int half_closes_ = 0;
};

}  // namespace handoff::testing

#endif  // HANDOFF_TESTS_AGENT_DAEMON_FAKE_COORDINATOR_H_
