#include "coordinator/server/coordinator_server.h"

#include <deque>
#include <mutex>
#include <optional>
#include <set>
#include <utility>

#include "absl/time/clock.h"
#include "common/base/strings.h"
#include "coordinator/server/client_certificate_check.h"
#include "coordinator/server/controller_thread.h"
#include "coordinator/server/peer_identity.h"
#include "coordinator/server/stream_limits.h"
#include "grpcpp/ext/proto_server_reflection_plugin.h"
#include "grpcpp/health_check_service_interface.h"
#include "grpcpp/security/server_credentials.h"
#include "grpcpp/server_builder.h"
#include "handoff/v1/handoff.grpc.pb.h"
#include "spdlog/spdlog.h"

namespace handoff::server {
namespace {

grpc::Status ToGrpc(const absl::Status& status) {
  if (status.ok()) return grpc::Status::OK;
  // absl and gRPC share the canonical code numbering.
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()), std::string(status.message()));
}

// The verified operator's name, or the refusal.
absl::StatusOr<std::string> OperatorOf(grpc::CallbackServerContext* context) {
  std::shared_ptr<const grpc::AuthContext> auth = context->auth_context();
  if (!auth) return absl::UnauthenticatedError("no client certificate");
  absl::StatusOr<PeerIdentity> identity = IdentityOf(*auth);
  if (!identity.ok()) return identity.status();
  absl::Status allowed = AuthorizeOperator(*identity);
  if (!allowed.ok()) {
    spdlog::warn("refused an operator call from {}: {}", context->peer(),
                 std::string(allowed.message()));
    return allowed;
  }
  return identity->common_name;
}

class AgentStream;

// What the controller holds of a stream: it outlives the stream, and forwards to it only while
// the stream exists.
class StreamLink : public AgentLink {
 public:
  StreamLink(AgentStream* stream, std::string peer) : stream_(stream), peer_(std::move(peer)) {}
  void Send(const pb::CoordinatorMessage& message) override;
  void Close(const absl::Status& status) override;
  // Ends the stream unless its agent has said something by now (StreamLimits).
  void ExpireHello();
  // Reads the stream's next message; false when the stream is gone or finishing (no read then).
  bool ReadNext();
  std::string Peer() const override { return peer_; }
  void Detach() {
    std::lock_guard<std::mutex> lock(mu_);
    stream_ = nullptr;
  }

 private:
  std::mutex mu_;
  AgentStream* stream_;
  const std::string peer_;
};

// One stream's messages as the controller's thread handles them, in order. It outlives the
// stream (the thread may still hold work of a stream that has ended) and reaches the stream
// only through its link. Used on the controller's thread alone, but for node(), which the
// stream's reactor reads.
class StreamEvents {
 public:
  StreamEvents(RolloutController& controller, RunWatch* run_watch,
               absl::StatusOr<PeerIdentity> identity, std::shared_ptr<StreamLink> link)
      : controller_(controller),
        run_watch_(run_watch),
        identity_(std::move(identity)),
        link_(std::move(link)) {}

  // A message arrived; the next is read once the controller has taken this one.
  void Message(const pb::AgentMessage& message) {
    if (node().empty()) {
      absl::Status registered = Register(message);
      if (!registered.ok()) {
        spdlog::warn("refused agent stream from {}: {}", link_->Peer(),
                     std::string(registered.message()));
        link_->Close(registered);
        return;
      }
    } else if (!message.has_controllers()) {
      // (Samples go to the detector only, from the reactor: without one they are dropped.)
      controller_.AgentMessage(node(), link_.get(), message);
    }
    if (!link_->ReadNext()) Ended();
  }

  // The stream's reads are over (the agent went away, or the stream was finished): the
  // controller hears it once.
  void Ended() {
    const std::string name = node();
    if (!name.empty()) {
      controller_.AgentDisconnected(name, link_.get());
      if (run_watch_ != nullptr) run_watch_->Away(name);
    }
    link_->Close(absl::OkStatus());
  }

  // The node the stream registered as; "" before (and without) its hello.
  std::string node() const {
    std::lock_guard<std::mutex> lock(mu_);
    return node_;
  }

 private:
  absl::Status Register(const pb::AgentMessage& message) {
    if (!message.has_hello()) {
      return absl::InvalidArgumentError("the first message of a stream must be AgentHello");
    }
    if (!identity_.ok()) return identity_.status();
    const std::string& name = message.hello().node_name();
    absl::Status allowed = AuthorizeAgent(*identity_, name);
    if (!allowed.ok()) return allowed;
    absl::Status connected = controller_.AgentConnected(name, message.hello(), link_);
    if (!connected.ok()) return connected;
    {
      std::lock_guard<std::mutex> lock(mu_);
      node_ = name;
    }
    spdlog::info("agent {} connected from {}", name, link_->Peer());
    return absl::OkStatus();
  }

  RolloutController& controller_;
  RunWatch* const run_watch_;
  const absl::StatusOr<PeerIdentity> identity_;  // the client certificate's, read at the start
  const std::shared_ptr<StreamLink> link_;
  mutable std::mutex mu_;
  std::string node_;
};

// One agent's Connect stream. Reads one message at a time: the reactor hands it to the
// controller's thread, which reads the next once the controller has taken it. Writes are queued
// and go out one at a time (gRPC allows one outstanding write per stream). The controller's
// samples (who runs which cloud controller) go to the double-run detector from the reactor at
// once: they need neither the controller nor the store.
class AgentStream final : public grpc::ServerBidiReactor<pb::AgentMessage, pb::CoordinatorMessage> {
 public:
  // `identity` was admitted by `limits`, which this stream releases when it is done.
  AgentStream(RolloutController& controller, ControllerThread& thread, RunWatch* run_watch,
              StreamLimits& limits, std::string identity, grpc::CallbackServerContext* context)
      : thread_(thread),
        run_watch_(run_watch),
        limits_(limits),
        identity_(std::move(identity)),
        context_(context),
        link_(std::make_shared<StreamLink>(this, context->peer())),
        events_(std::make_shared<StreamEvents>(controller, run_watch, CallerOf(context), link_)) {
    limits_.AwaitHello([link = link_] { link->ExpireHello(); });
    StartRead(&in_);
  }

  // The hello deadline passed: ends the stream unless a first message arrived.
  void ExpireHello() {
    std::lock_guard<std::mutex> lock(mu_);
    if (spoke_ || finish_requested_) return;
    spdlog::warn("agent stream from {} ({}) said no hello in time; ended", context_->peer(),
                 identity_);
    finish_requested_ = true;
    finish_status_ = grpc::Status(grpc::StatusCode::DEADLINE_EXCEEDED,
                                  "no AgentHello within the hello deadline");
    FinishIfRequestedLocked();
  }

  void OnReadDone(bool ok) override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      spoke_ = true;
    }
    if (!ok) {
      thread_.Post([events = events_] { events->Ended(); });
      return;
    }
    if (in_.has_controllers() && run_watch_ != nullptr) {
      // Samples change nothing the rollout controller keeps; a stream not yet registered has
      // none to give (its hello is handled before its next read).
      if (const std::string node = events_->node(); !node.empty()) {
        run_watch_->Observe(node, in_.controllers(), absl::ToUnixMillis(absl::Now()));
        StartRead(&in_);
        return;
      }
    }
    thread_.Post([events = events_, message = std::move(in_)] { events->Message(message); });
  }

  void OnWriteDone(bool ok) override {
    std::lock_guard<std::mutex> lock(mu_);
    out_.pop_front();
    if (!ok) out_.clear();  // the stream broke; the pending read ends with !ok too
    if (!out_.empty()) {
      StartWrite(&out_.front());
      return;
    }
    writing_ = false;
    FinishIfRequestedLocked();
  }

  void OnDone() override {
    link_->Detach();
    limits_.Release(identity_);
    delete this;
  }

  void Send(const pb::CoordinatorMessage& message) {
    std::lock_guard<std::mutex> lock(mu_);
    if (finish_requested_) return;
    out_.push_back(message);
    if (writing_) return;
    writing_ = true;
    StartWrite(&out_.front());
  }

  // Finishes after the queued writes.
  void Close(const absl::Status& status) {
    std::lock_guard<std::mutex> lock(mu_);
    if (finish_requested_) return;
    finish_requested_ = true;
    finish_status_ = ToGrpc(status);
    FinishIfRequestedLocked();
  }

  // False, reading nothing, once the stream is finishing.
  bool ReadNext() {
    std::lock_guard<std::mutex> lock(mu_);
    if (finish_requested_) return false;
    in_.Clear();
    StartRead(&in_);
    return true;
  }

 private:
  static absl::StatusOr<PeerIdentity> CallerOf(grpc::CallbackServerContext* context) {
    std::shared_ptr<const grpc::AuthContext> auth = context->auth_context();
    if (!auth) return absl::UnauthenticatedError("no client certificate");
    return IdentityOf(*auth);
  }

  void FinishIfRequestedLocked() {
    if (finish_requested_ && !writing_ && !finished_) {
      finished_ = true;
      Finish(finish_status_);
    }
  }

  ControllerThread& thread_;
  RunWatch* const run_watch_;
  StreamLimits& limits_;
  const std::string identity_;
  grpc::CallbackServerContext* context_;
  const std::shared_ptr<StreamLink> link_;
  const std::shared_ptr<StreamEvents> events_;
  pb::AgentMessage in_;  // the read under way; no read is under way while the controller works

  std::mutex mu_;
  bool spoke_ = false;  // a first read completed (a message, or the stream's end)
  std::deque<pb::CoordinatorMessage> out_;  // front() is being written while writing_
  bool writing_ = false;
  bool finish_requested_ = false;
  bool finished_ = false;
  grpc::Status finish_status_;
};

void StreamLink::Send(const pb::CoordinatorMessage& message) {
  std::lock_guard<std::mutex> lock(mu_);
  if (stream_ != nullptr) stream_->Send(message);
}

void StreamLink::Close(const absl::Status& status) {
  std::lock_guard<std::mutex> lock(mu_);
  if (stream_ != nullptr) stream_->Close(status);
}

void StreamLink::ExpireHello() {
  std::lock_guard<std::mutex> lock(mu_);
  if (stream_ != nullptr) stream_->ExpireHello();
}

bool StreamLink::ReadNext() {
  std::lock_guard<std::mutex> lock(mu_);
  return stream_ != nullptr && stream_->ReadNext();
}

class AgentServiceImpl final : public pb::AgentService::CallbackService {
 public:
  AgentServiceImpl(RolloutController& controller, ControllerThread& thread, RunWatch* run_watch,
                   const ServerOptions& options)
      : controller_(controller),
        thread_(thread),
        run_watch_(run_watch),
        limits_(options.hello_deadline, options.max_streams_per_identity) {}
  grpc::ServerBidiReactor<pb::AgentMessage, pb::CoordinatorMessage>* Connect(
      grpc::CallbackServerContext* context) override {
    // mTLS is required, so every stream has a verified certificate; the hello checks its role.
    std::string identity = "(no certificate)";
    if (std::shared_ptr<const grpc::AuthContext> auth = context->auth_context(); auth) {
      absl::StatusOr<PeerIdentity> peer = IdentityOf(*auth);
      if (peer.ok()) identity = peer->common_name;
    }
    if (!limits_.Admit(identity)) {
      spdlog::warn("refused an agent stream from {}: certificate {} already has {} open",
                   context->peer(), identity, limits_.max_per_identity());
      class Refusal final
          : public grpc::ServerBidiReactor<pb::AgentMessage, pb::CoordinatorMessage> {
       public:
        explicit Refusal(const grpc::Status& status) { Finish(status); }
        void OnDone() override { delete this; }
      };
      return new Refusal(
          grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED,
                       StrCat("certificate ", identity, " already has ", limits_.max_per_identity(),
                              " streams open, the most one agent may; another process with this "
                              "certificate holds them")));
    }
    return new AgentStream(controller_, thread_, run_watch_, limits_, std::move(identity), context);
  }

 private:
  RolloutController& controller_;
  ControllerThread& thread_;
  RunWatch* run_watch_;
  StreamLimits limits_;
};

class StatusWriter;

// The open watches, so that a coordinator shutting down ends them at once with UNAVAILABLE: the
// operators' `handoffctl status --watch` then reconnects to its successor instead of holding the
// shutdown for the whole grace period and being cancelled at its end.
class WatchRegistry {
 public:
  // False once EndAll has run: the watch must end at once.
  bool Add(StatusWriter* writer);
  void Remove(StatusWriter* writer);
  void EndAll();

 private:
  // Recursive, and each writer looked up again before it is used: should gRPC ever run a
  // writer's OnDone inline from its Finish, the writer leaves the set safely.
  std::recursive_mutex mu_;
  std::set<StatusWriter*> writers_;
  bool closing_ = false;
};

const grpc::Status& ShuttingDown() {
  static const grpc::Status* const status =
      new grpc::Status(grpc::StatusCode::UNAVAILABLE, "the coordinator is shutting down");
  return *status;
}

// Status: one status, or (watch) every new one. Only the newest unsent status is kept: a slow
// watcher skips revisions instead of queueing them.
class StatusWriter final : public grpc::ServerWriteReactor<pb::RolloutStatus> {
 public:
  StatusWriter(RolloutController& controller, const RunWatch* run_watch, WatchRegistry& watches,
               bool watch)
      : controller_(controller), run_watch_(run_watch), watches_(watches) {
    if (!watch) {
      current_ = controller_.LatestStatus();
      if (run_watch_ != nullptr) run_watch_->Fill(current_);
      StartWriteAndFinish(&current_, grpc::WriteOptions(), grpc::Status::OK);
      return;
    }
    // gRPC runs OnDone only after the method handler has returned this reactor, so nothing
    // below races with it.
    token_ = controller_.Watch([this](const pb::RolloutStatus& status) { Offer(status); });
    registered_ = watches_.Add(this);
    if (!registered_) End(ShuttingDown());
  }

  // Ends the watch with `status` (a no-op once it has ended).
  void End(const grpc::Status& status) {
    std::lock_guard<std::mutex> lock(mu_);
    FinishLocked(status);
  }

  void OnWriteDone(bool ok) override {
    std::lock_guard<std::mutex> lock(mu_);
    writing_ = false;
    if (!ok) {
      FinishLocked(grpc::Status(grpc::StatusCode::UNAVAILABLE, "the watcher went away"));
      return;
    }
    if (pending_) {
      current_ = *std::move(pending_);
      pending_.reset();
      writing_ = true;
      StartWrite(&current_);
    }
  }

  void OnCancel() override {
    std::lock_guard<std::mutex> lock(mu_);
    FinishLocked(grpc::Status::CANCELLED);
  }

  void OnDone() override {
    // After Unwatch returns no Offer runs (the controller calls watchers under its mutex).
    if (token_ != 0) controller_.Unwatch(token_);
    if (registered_) watches_.Remove(this);
    delete this;
  }

 private:
  void Offer(const pb::RolloutStatus& status) {
    std::lock_guard<std::mutex> lock(mu_);
    if (finished_) return;
    if (writing_) {
      pending_ = status;
      if (run_watch_ != nullptr) run_watch_->Fill(*pending_);
      return;
    }
    current_ = status;
    if (run_watch_ != nullptr) run_watch_->Fill(current_);
    writing_ = true;
    StartWrite(&current_);
  }

  void FinishLocked(const grpc::Status& status) {
    if (finished_) return;
    finished_ = true;
    Finish(status);
  }

  RolloutController& controller_;
  const RunWatch* run_watch_;
  WatchRegistry& watches_;
  int token_ = 0;
  bool registered_ = false;
  std::mutex mu_;
  pb::RolloutStatus current_;
  std::optional<pb::RolloutStatus> pending_;
  bool writing_ = false;
  bool finished_ = false;
};

bool WatchRegistry::Add(StatusWriter* writer) {
  std::lock_guard<std::recursive_mutex> lock(mu_);
  if (closing_) return false;
  writers_.insert(writer);
  return true;
}

void WatchRegistry::Remove(StatusWriter* writer) {
  std::lock_guard<std::recursive_mutex> lock(mu_);
  writers_.erase(writer);
}

void WatchRegistry::EndAll() {
  std::lock_guard<std::recursive_mutex> lock(mu_);
  closing_ = true;
  const std::set<StatusWriter*> snapshot = writers_;
  for (StatusWriter* writer : snapshot) {
    if (writers_.count(writer) != 0) writer->End(ShuttingDown());
  }
}

class OperatorServiceImpl final : public pb::OperatorService::CallbackService {
 public:
  OperatorServiceImpl(RolloutController& controller, ControllerThread& thread,
                      const RunWatch* run_watch)
      : controller_(controller), thread_(thread), run_watch_(run_watch) {}

  // Shutdown: every open watch ends now, and new ones end at once.
  void EndWatches() { watches_.EndAll(); }

  grpc::ServerUnaryReactor* Plan(grpc::CallbackServerContext* context,
                                 const pb::PlanRolloutRequest* request,
                                 pb::PlanRolloutResponse* response) override {
    grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
    absl::StatusOr<std::string> actor = OperatorOf(context);
    if (!actor.ok()) {
      reactor->Finish(ToGrpc(actor.status()));
      return reactor;
    }
    NodeState goal = request->goal() == pb::NODE_STATE_UNSPECIFIED
                         ? NodeState::kInconsistent
                         : StateOrInconsistent(request->goal());
    if (request->goal() != pb::NODE_STATE_UNSPECIFIED && goal == NodeState::kInconsistent) {
      reactor->Finish(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                                   "plan's goal is one of in-tree, prepared, migrated, finalized"));
      return reactor;
    }
    // A plan follows the path its nodes would take (a replacement's: Leader Migration).
    std::optional<Strategy> strategy = FromProto(request->strategy());
    if (strategy) strategy = PathOf(*strategy);
    thread_.Post([this, reactor, response, goal, strategy] {
      controller_.PlanRollout(
          goal,
          [reactor, response](absl::StatusOr<pb::PlanRolloutResponse> plan) {
            if (plan.ok()) *response = *std::move(plan);
            reactor->Finish(ToGrpc(plan.status()));
          },
          strategy);
    });
    return reactor;
  }

  grpc::ServerUnaryReactor* Start(grpc::CallbackServerContext* context,
                                  const pb::StartRequest* request,
                                  pb::RolloutStatus* response) override {
    return Change(context, response, [this, request](const std::string& actor) {
      NodeState goal = request->goal() == pb::NODE_STATE_UNSPECIFIED
                           ? NodeState::kMigrated
                           : StateOrInconsistent(request->goal());
      WorkerPolicyChange workers;
      if (!request->max_unavailable().empty()) {
        absl::StatusOr<rollout::MaxUnavailable> parsed =
            rollout::ParseMaxUnavailable(request->max_unavailable());
        if (!parsed.ok()) return absl::StatusOr<pb::RolloutStatus>(parsed.status());
        workers.max_unavailable = *parsed;
      }
      if (request->failure_budget() != 0) workers.failure_budget = request->failure_budget();
      return controller_.Start(actor, goal,
                               std::vector<std::string>(request->ignore_preflight().begin(),
                                                        request->ignore_preflight().end()),
                               FromProto(request->strategy()).value_or(Strategy::kLeaderMigration),
                               request->ignore_reason(), workers);
    });
  }

  grpc::ServerWriteReactor<pb::RolloutStatus>* Status(grpc::CallbackServerContext* context,
                                                      const pb::StatusRequest* request) override {
    absl::StatusOr<std::string> actor = OperatorOf(context);
    if (!actor.ok()) {
      // A reactor that only refuses.
      class Refusal final : public grpc::ServerWriteReactor<pb::RolloutStatus> {
       public:
        explicit Refusal(const grpc::Status& status) { Finish(status); }
        void OnDone() override { delete this; }
      };
      return new Refusal(ToGrpc(actor.status()));
    }
    return new StatusWriter(controller_, run_watch_, watches_, request->watch());
  }

  grpc::ServerUnaryReactor* Pause(grpc::CallbackServerContext* context,
                                  const pb::PauseRequest* request,
                                  pb::RolloutStatus* response) override {
    return Change(context, response, [this, request](const std::string& actor) {
      return controller_.Pause(actor, request->reason());
    });
  }

  grpc::ServerUnaryReactor* Resume(grpc::CallbackServerContext* context,
                                   const pb::ResumeRequest* /*request*/,
                                   pb::RolloutStatus* response) override {
    return Change(context, response,
                  [this](const std::string& actor) { return controller_.Resume(actor); });
  }

  grpc::ServerUnaryReactor* Abort(grpc::CallbackServerContext* context,
                                  const pb::AbortRequest* request,
                                  pb::RolloutStatus* response) override {
    return Change(context, response, [this, request](const std::string& actor) {
      return controller_.Abort(actor, request->reason());
    });
  }

  grpc::ServerUnaryReactor* Rollback(grpc::CallbackServerContext* context,
                                     const pb::RollbackRequest* request,
                                     pb::RolloutStatus* response) override {
    return Change(context, response, [this, request](const std::string& actor) {
      return controller_.Rollback(actor, StateOrInconsistent(request->to()),
                                  request->strategy() == pb::STRATEGY_REPLACE);
    });
  }

  grpc::ServerUnaryReactor* AddNode(grpc::CallbackServerContext* context,
                                    const pb::AddNodeRequest* request,
                                    pb::RolloutStatus* response) override {
    return Change(context, response, [this, request](const std::string& actor) {
      return controller_.AddNode(actor, request->node(), request->reason());
    });
  }

  grpc::ServerUnaryReactor* RemoveNode(grpc::CallbackServerContext* context,
                                       const pb::RemoveNodeRequest* request,
                                       pb::RolloutStatus* response) override {
    return Change(context, response, [this, request](const std::string& actor) {
      return controller_.RemoveNode(actor, request->node(), request->reason());
    });
  }

  grpc::ServerUnaryReactor* Finalize(grpc::CallbackServerContext* context,
                                     const pb::FinalizeRequest* /*request*/,
                                     pb::RolloutStatus* response) override {
    return Change(context, response,
                  [this](const std::string& actor) { return controller_.Finalize(actor); });
  }

  grpc::ServerUnaryReactor* History(grpc::CallbackServerContext* context,
                                    const pb::HistoryRequest* request,
                                    pb::HistoryResponse* response) override {
    grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
    absl::StatusOr<std::string> actor = OperatorOf(context);
    if (!actor.ok()) {
      reactor->Finish(ToGrpc(actor.status()));
      return reactor;
    }
    thread_.Post([this, reactor, request, response] {
      absl::StatusOr<pb::HistoryResponse> history =
          controller_.History(request->after_sequence(), request->limit());
      if (history.ok()) *response = *std::move(history);
      reactor->Finish(ToGrpc(history.status()));
    });
    return reactor;
  }

  grpc::ServerUnaryReactor* Nodes(grpc::CallbackServerContext* context,
                                  const pb::NodesRequest* request,
                                  pb::NodesResponse* response) override {
    grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
    absl::StatusOr<std::string> actor = OperatorOf(context);
    if (!actor.ok()) {
      reactor->Finish(ToGrpc(actor.status()));
      return reactor;
    }
    thread_.Post([this, reactor, request, response] {
      *response = controller_.Nodes(request->limit(), request->after());
      reactor->Finish(grpc::Status::OK);
    });
    return reactor;
  }

 private:
  // An operator call that changes the rollout and answers with its status: `call` runs on the
  // controller's thread (it must hold what it reads of the request by value or by pointer).
  template <typename Call>
  grpc::ServerUnaryReactor* Change(grpc::CallbackServerContext* context,
                                   pb::RolloutStatus* response, Call call) {
    grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
    absl::StatusOr<std::string> actor = OperatorOf(context);
    if (!actor.ok()) {
      reactor->Finish(ToGrpc(actor.status()));
      return reactor;
    }
    thread_.Post([reactor, response, actor = *std::move(actor), call = std::move(call)] {
      absl::StatusOr<pb::RolloutStatus> status = call(actor);
      if (status.ok()) *response = *std::move(status);
      reactor->Finish(ToGrpc(status.status()));
    });
    return reactor;
  }

  RolloutController& controller_;
  ControllerThread& thread_;
  const RunWatch* run_watch_;
  WatchRegistry watches_;
};

}  // namespace

struct CoordinatorServer::Services {
  Services(RolloutController& controller, const ServerOptions& options)
      : own_thread(options.controller_thread == nullptr ? std::make_unique<ControllerThread>()
                                                        : nullptr),
        thread(options.controller_thread != nullptr ? *options.controller_thread : *own_thread),
        agents(controller, thread, options.run_watch, options),
        operators(controller, thread, options.run_watch) {}
  // Destroyed last: the server's calls still in its queue are answered before it stops.
  std::unique_ptr<ControllerThread> own_thread;
  ControllerThread& thread;
  AgentServiceImpl agents;
  OperatorServiceImpl operators;
};

absl::StatusOr<std::unique_ptr<CoordinatorServer>> CoordinatorServer::Start(
    RolloutController& controller, const ServerOptions& options) {
  std::unique_ptr<CoordinatorServer> server(new CoordinatorServer());
  server->services_ = std::make_unique<Services>(controller, options);

  absl::StatusOr<std::shared_ptr<rpc::TlsMaterial>> tls = CoordinatorTlsMaterial(
      rpc::TlsPems{options.ca_pem, options.cert_pem, options.key_pem}, options.tls_files,
      options.cert_refresh_interval);
  if (!tls.ok()) return tls.status();
  std::shared_ptr<grpc::ServerCredentials> credentials =
      ClientCheckingServerCredentials(*std::move(tls), [](const absl::Status& refused) {
        // The handshake ends before any call, so this is the only trace of it here; the
        // client sees only a closed connection.
        spdlog::warn("refused a client's TLS certificate: {}", std::string(refused.message()));
      });

  grpc::EnableDefaultHealthCheckService(true);
  if (options.reflection) grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  builder.AddListeningPort(options.listen, credentials, &server->port_);
  // Agents ping every 10 s on idle streams (proto/rpc/channel.cc); the server's default policy
  // would answer such pings with GOAWAY "too_many_pings".
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS, 5000);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIME_MS, 10000);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 5000);
  builder.RegisterService(&server->services_->agents);
  builder.RegisterService(&server->services_->operators);
  server->server_ = builder.BuildAndStart();
  if (!server->server_ || server->port_ == 0) {
    return absl::UnavailableError(
        StrCat("cannot listen on ", options.listen, " (in use, or not a local address)"));
  }
  server->server_->GetHealthCheckService()->SetServingStatus(true);
  return server;
}

CoordinatorServer::~CoordinatorServer() { Shutdown(absl::ZeroDuration()); }

void CoordinatorServer::Shutdown(absl::Duration grace) {
  if (shut_down_ || !server_) return;
  shut_down_ = true;
  // Load balancers and probes see NOT_SERVING first; operators' watches end at once (their
  // handoffctl reconnects to the next coordinator); then running calls get the grace period.
  server_->GetHealthCheckService()->SetServingStatus(false);
  services_->operators.EndWatches();
  server_->Shutdown(absl::ToChronoTime(absl::Now() + grace));
  server_->Wait();
}

}  // namespace handoff::server
