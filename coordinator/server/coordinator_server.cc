#include "coordinator/server/coordinator_server.h"

#include <deque>
#include <mutex>
#include <optional>
#include <set>
#include <utility>

#include "absl/time/clock.h"
#include "common/base/strings.h"
#include "coordinator/server/client_certificate_check.h"
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

// One agent's Connect stream. Reads one message at a time; writes are queued and go out one at a
// time (gRPC allows one outstanding write per stream).
class AgentStream final : public grpc::ServerBidiReactor<pb::AgentMessage, pb::CoordinatorMessage> {
 public:
  // `identity` was admitted by `limits`, which this stream releases when it is done.
  AgentStream(RolloutController& controller, RunWatch* run_watch, StreamLimits& limits,
              std::string identity, grpc::CallbackServerContext* context)
      : controller_(controller),
        run_watch_(run_watch),
        limits_(limits),
        identity_(std::move(identity)),
        context_(context),
        link_(std::make_shared<StreamLink>(this, context->peer())) {
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
      // The agent went away (or the stream was finished): the controller hears it once.
      if (!node_.empty()) {
        controller_.AgentDisconnected(node_, link_.get());
        if (run_watch_ != nullptr) run_watch_->Away(node_);
      }
      Close(absl::OkStatus());
      return;
    }
    if (node_.empty()) {
      absl::Status registered = Register();
      if (!registered.ok()) {
        spdlog::warn("refused agent stream from {}: {}", context_->peer(),
                     std::string(registered.message()));
        Close(registered);
        return;
      }
    } else if (in_.has_controllers()) {
      // Samples go to the detector only: they change nothing the rollout controller keeps.
      if (run_watch_ != nullptr) {
        run_watch_->Observe(node_, in_.controllers(), absl::ToUnixMillis(absl::Now()));
      }
    } else {
      controller_.AgentMessage(node_, link_.get(), in_);
    }
    StartRead(&in_);
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

 private:
  absl::Status Register() {
    if (!in_.has_hello()) {
      return absl::InvalidArgumentError("the first message of a stream must be AgentHello");
    }
    std::shared_ptr<const grpc::AuthContext> auth = context_->auth_context();
    if (!auth) return absl::UnauthenticatedError("no client certificate");
    absl::StatusOr<PeerIdentity> identity = IdentityOf(*auth);
    if (!identity.ok()) return identity.status();
    absl::Status allowed = AuthorizeAgent(*identity, in_.hello().node_name());
    if (!allowed.ok()) return allowed;
    absl::Status connected =
        controller_.AgentConnected(in_.hello().node_name(), in_.hello(), link_);
    if (!connected.ok()) return connected;
    node_ = in_.hello().node_name();
    spdlog::info("agent {} connected from {}", node_, context_->peer());
    return absl::OkStatus();
  }

  void FinishIfRequestedLocked() {
    if (finish_requested_ && !writing_ && !finished_) {
      finished_ = true;
      Finish(finish_status_);
    }
  }

  RolloutController& controller_;
  RunWatch* run_watch_;
  StreamLimits& limits_;
  const std::string identity_;
  grpc::CallbackServerContext* context_;
  const std::shared_ptr<StreamLink> link_;
  pb::AgentMessage in_;
  std::string node_;  // set once registered; read and written only by the read side

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

class AgentServiceImpl final : public pb::AgentService::CallbackService {
 public:
  AgentServiceImpl(RolloutController& controller, RunWatch* run_watch, const ServerOptions& options)
      : controller_(controller),
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
    return new AgentStream(controller_, run_watch_, limits_, std::move(identity), context);
  }

 private:
  RolloutController& controller_;
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
      current_ = controller_.Status();
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
  OperatorServiceImpl(RolloutController& controller, const RunWatch* run_watch)
      : controller_(controller), run_watch_(run_watch) {}

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
    NodeState goal = request->goal() == pb::NODE_STATE_UNSPECIFIED ? NodeState::kInconsistent
                                                                   : FromProto(request->goal());
    if (request->goal() != pb::NODE_STATE_UNSPECIFIED && goal == NodeState::kInconsistent) {
      reactor->Finish(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                                   "plan's goal is one of in-tree, prepared, migrated, finalized"));
      return reactor;
    }
    std::optional<rollout::Strategy> strategy;
    if (request->strategy() == pb::STRATEGY_DOWNTIME) strategy = rollout::Strategy::kDowntime;
    if (request->strategy() == pb::STRATEGY_LEADER_MIGRATION) {
      strategy = rollout::Strategy::kLeaderMigration;
    }
    controller_.PlanRollout(
        goal,
        [reactor, response](absl::StatusOr<pb::PlanRolloutResponse> plan) {
          if (plan.ok()) *response = *std::move(plan);
          reactor->Finish(ToGrpc(plan.status()));
        },
        strategy);
    return reactor;
  }

  grpc::ServerUnaryReactor* Start(grpc::CallbackServerContext* context,
                                  const pb::StartRequest* request,
                                  pb::RolloutStatus* response) override {
    return Change(context, response, [&](const std::string& actor) {
      NodeState goal = request->goal() == pb::NODE_STATE_UNSPECIFIED ? NodeState::kMigrated
                                                                     : FromProto(request->goal());
      return controller_.Start(
          actor, goal,
          std::vector<std::string>(request->ignore_preflight().begin(),
                                   request->ignore_preflight().end()),
          request->strategy() == pb::STRATEGY_DOWNTIME ? rollout::Strategy::kDowntime
                                                       : rollout::Strategy::kLeaderMigration,
          request->strategy() == pb::STRATEGY_REPLACE, request->ignore_reason());
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
    return Change(context, response, [&](const std::string& actor) {
      return controller_.Pause(actor, request->reason());
    });
  }

  grpc::ServerUnaryReactor* Resume(grpc::CallbackServerContext* context,
                                   const pb::ResumeRequest* /*request*/,
                                   pb::RolloutStatus* response) override {
    return Change(context, response,
                  [&](const std::string& actor) { return controller_.Resume(actor); });
  }

  grpc::ServerUnaryReactor* Abort(grpc::CallbackServerContext* context,
                                  const pb::AbortRequest* request,
                                  pb::RolloutStatus* response) override {
    return Change(context, response, [&](const std::string& actor) {
      return controller_.Abort(actor, request->reason());
    });
  }

  grpc::ServerUnaryReactor* Rollback(grpc::CallbackServerContext* context,
                                     const pb::RollbackRequest* request,
                                     pb::RolloutStatus* response) override {
    return Change(context, response, [&](const std::string& actor) {
      return controller_.Rollback(actor, FromProto(request->to()),
                                  request->strategy() == pb::STRATEGY_REPLACE);
    });
  }

  grpc::ServerUnaryReactor* AddNode(grpc::CallbackServerContext* context,
                                    const pb::AddNodeRequest* request,
                                    pb::RolloutStatus* response) override {
    return Change(context, response, [&](const std::string& actor) {
      return controller_.AddNode(actor, request->node(), request->reason());
    });
  }

  grpc::ServerUnaryReactor* RemoveNode(grpc::CallbackServerContext* context,
                                       const pb::RemoveNodeRequest* request,
                                       pb::RolloutStatus* response) override {
    return Change(context, response, [&](const std::string& actor) {
      return controller_.RemoveNode(actor, request->node(), request->reason());
    });
  }

  grpc::ServerUnaryReactor* Finalize(grpc::CallbackServerContext* context,
                                     const pb::FinalizeRequest* /*request*/,
                                     pb::RolloutStatus* response) override {
    return Change(context, response,
                  [&](const std::string& actor) { return controller_.Finalize(actor); });
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
    absl::StatusOr<pb::HistoryResponse> history =
        controller_.History(request->after_sequence(), request->limit());
    if (history.ok()) *response = *std::move(history);
    reactor->Finish(ToGrpc(history.status()));
    return reactor;
  }

  grpc::ServerUnaryReactor* Nodes(grpc::CallbackServerContext* context,
                                  const pb::NodesRequest* /*request*/,
                                  pb::NodesResponse* response) override {
    grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
    absl::StatusOr<std::string> actor = OperatorOf(context);
    if (!actor.ok()) {
      reactor->Finish(ToGrpc(actor.status()));
      return reactor;
    }
    *response = controller_.Nodes();
    reactor->Finish(grpc::Status::OK);
    return reactor;
  }

 private:
  // An operator call that changes the rollout and answers with its status.
  template <typename Call>
  grpc::ServerUnaryReactor* Change(grpc::CallbackServerContext* context,
                                   pb::RolloutStatus* response, Call call) {
    grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
    absl::StatusOr<std::string> actor = OperatorOf(context);
    if (!actor.ok()) {
      reactor->Finish(ToGrpc(actor.status()));
      return reactor;
    }
    absl::StatusOr<pb::RolloutStatus> status = call(*actor);
    if (status.ok()) *response = *std::move(status);
    reactor->Finish(ToGrpc(status.status()));
    return reactor;
  }

  RolloutController& controller_;
  const RunWatch* run_watch_;
  WatchRegistry watches_;
};

}  // namespace

struct CoordinatorServer::Services {
  Services(RolloutController& controller, const ServerOptions& options)
      : agents(controller, options.run_watch, options), operators(controller, options.run_watch) {}
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
