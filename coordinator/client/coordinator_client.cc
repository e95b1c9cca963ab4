#include "coordinator/client/coordinator_client.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <utility>

#include "common/base/strings.h"
#include "common/fs/read_limit.h"
#include "common/system/backoff.h"
#include "grpcpp/client_context.h"
#include "handoff/v1/handoff.grpc.pb.h"

namespace handoff::ctl {
namespace {

// How often a watch looks at its stop condition. The operator's Ctrl-C takes at most this long.
constexpr std::chrono::milliseconds kStopPollInterval(100);

struct PemSource {
  std::string_view what;  // "the CA certificate"
  std::string_view flag;
  std::string_view variable;
  std::string_view fallback;
  std::string_view marker;  // text every such PEM file holds
};

absl::StatusOr<absl::Duration> ParsePositiveDuration(const std::string& text,
                                                     std::string_view flag) {
  absl::Duration duration;
  if (!absl::ParseDuration(text, &duration) || duration <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError(
        StrCat(flag, " \"", text, "\" is not a positive duration such as 30s, 5m or 24h"));
  }
  return duration;
}

// Returns the file's content and sets `path` to the file chosen.
absl::StatusOr<std::string> ReadPem(
    const std::string& flag_value, const PemSource& source,
    const std::function<std::optional<std::string>(const std::string&)>& get_env,
    const FileSystem& files, std::string& path) {
  std::string chosen_by;
  if (!flag_value.empty()) {
    path = flag_value;
    chosen_by = StrCat("from ", source.flag);
  } else if (std::optional<std::string> value =
                 get_env ? get_env(std::string(source.variable)) : std::nullopt;
             value && !value->empty()) {
    path = *value;
    chosen_by = StrCat("from $", source.variable);
  } else {
    path = std::string(source.fallback);
    chosen_by = StrCat("the default; choose another with ", source.flag, " or $", source.variable);
  }
  absl::StatusOr<std::string> content = files.ReadFile(path, kPemRead);
  if (!content.ok()) {
    return absl::InvalidArgumentError(StrCat("cannot read ", source.what, " ", path, " (",
                                             chosen_by, "): ", content.status().message()));
  }
  // gRPC would only say that the TLS handshake failed; a file that is not PEM at all is better
  // named here.
  if (!StrContains(*content, "-----BEGIN ") || !StrContains(*content, source.marker)) {
    return absl::InvalidArgumentError(StrCat(source.what, " ", path, " (", chosen_by,
                                             ") holds no PEM block with \"", source.marker, "\""));
  }
  return content;
}

absl::Status ToAbsl(const grpc::Status& status) {
  if (status.ok()) return absl::OkStatus();
  return absl::Status(static_cast<absl::StatusCode>(status.error_code()), status.error_message());
}

std::chrono::system_clock::time_point DeadlineAfter(absl::Duration duration) {
  return std::chrono::system_clock::now() + absl::ToChronoMilliseconds(duration);
}

class GrpcOperatorClient : public OperatorClient {
 public:
  explicit GrpcOperatorClient(const CoordinatorEndpoint& endpoint)
      : endpoint_(endpoint),
        stub_(v1::OperatorService::NewStub(
            rpc::CreateSecureChannel(endpoint.address, endpoint.tls))) {}

  absl::StatusOr<v1::PlanRolloutResponse> Plan(const v1::PlanRolloutRequest& request) override {
    return Unary(&v1::OperatorService::Stub::Plan, request);
  }
  absl::StatusOr<v1::RolloutStatus> Start(const v1::StartRequest& request) override {
    return Unary(&v1::OperatorService::Stub::Start, request);
  }
  absl::StatusOr<v1::RolloutStatus> Pause(const v1::PauseRequest& request) override {
    return Unary(&v1::OperatorService::Stub::Pause, request);
  }
  absl::StatusOr<v1::RolloutStatus> Resume(const v1::ResumeRequest& request) override {
    return Unary(&v1::OperatorService::Stub::Resume, request);
  }
  absl::StatusOr<v1::RolloutStatus> Abort(const v1::AbortRequest& request) override {
    return Unary(&v1::OperatorService::Stub::Abort, request);
  }
  absl::StatusOr<v1::RolloutStatus> Rollback(const v1::RollbackRequest& request) override {
    return Unary(&v1::OperatorService::Stub::Rollback, request);
  }
  absl::StatusOr<v1::RolloutStatus> Finalize(const v1::FinalizeRequest& request) override {
    return Unary(&v1::OperatorService::Stub::Finalize, request);
  }
  absl::StatusOr<v1::RolloutStatus> AddNode(const v1::AddNodeRequest& request) override {
    return Unary(&v1::OperatorService::Stub::AddNode, request);
  }
  absl::StatusOr<v1::RolloutStatus> RemoveNode(const v1::RemoveNodeRequest& request) override {
    return Unary(&v1::OperatorService::Stub::RemoveNode, request);
  }
  absl::StatusOr<v1::HistoryResponse> History(const v1::HistoryRequest& request) override {
    return Unary(&v1::OperatorService::Stub::History, request);
  }
  absl::StatusOr<v1::NodesResponse> Nodes(const v1::NodesRequest& request) override {
    return Unary(&v1::OperatorService::Stub::Nodes, request);
  }

  absl::Status Status(const v1::StatusRequest& request,
                      const std::function<void(const v1::RolloutStatus&)>& on_status,
                      const std::function<bool()>& stop) override {
    grpc::ClientContext context;
    context.set_deadline(
        DeadlineAfter(request.watch() ? endpoint_.watch_timeout : endpoint_.timeout));
    std::unique_ptr<grpc::ClientReader<v1::RolloutStatus>> reader =
        stub_->Status(&context, request);

    // The blocking reads cannot look at `stop`; a second thread does, and cancels the call. It
    // also ends a watch whose first status does not come within the timeout: a coordinator that
    // accepts the stream but never answers would otherwise hold the operator for the whole
    // --watch-timeout.
    std::mutex mutex;
    std::condition_variable finished;
    bool done = false;
    bool received = false;
    bool stopped = false;
    bool no_first_status = false;
    std::thread watcher;
    if (request.watch()) {
      watcher = std::thread([&] {
        const auto first_status_deadline =
            std::chrono::steady_clock::now() + absl::ToChronoMilliseconds(endpoint_.timeout);
        std::unique_lock<std::mutex> lock(mutex);
        while (!done) {
          finished.wait_for(lock, kStopPollInterval);
          if (done) break;
          const bool waiting_for_first = !received;
          lock.unlock();
          // `stop` belongs to the caller and may take its own locks: never call it under ours.
          const bool stop_now = stop && stop();
          const bool too_late =
              waiting_for_first && std::chrono::steady_clock::now() >= first_status_deadline;
          lock.lock();
          if (stop_now || (too_late && !received)) {
            stopped = stop_now;
            no_first_status = !stop_now;
            context.TryCancel();
            break;
          }
        }
      });
    }

    v1::RolloutStatus status;
    while (reader->Read(&status)) {
      {
        std::lock_guard<std::mutex> lock(mutex);
        received = true;
      }
      on_status(status);
    }
    const grpc::Status result = reader->Finish();
    {
      std::lock_guard<std::mutex> lock(mutex);
      done = true;
    }
    finished.notify_all();
    if (watcher.joinable()) watcher.join();
    if (stopped) return absl::OkStatus();
    if (no_first_status) {
      return absl::DeadlineExceededError("no status came");
    }
    return ToAbsl(result);
  }

 private:
  template <typename Request, typename Response>
  absl::StatusOr<Response> Unary(grpc::Status (v1::OperatorService::Stub::*method)(
                                     grpc::ClientContext*, const Request&, Response*),
                                 const Request& request) {
    grpc::ClientContext context;
    context.set_deadline(DeadlineAfter(endpoint_.timeout));
    Response response;
    const grpc::Status status = (stub_.get()->*method)(&context, request, &response);
    if (!status.ok()) return ToAbsl(status);
    return response;
  }

  const CoordinatorEndpoint endpoint_;
  std::unique_ptr<v1::OperatorService::Stub> stub_;
};

}  // namespace

absl::StatusOr<CoordinatorEndpoint> ResolveCoordinatorEndpoint(
    const CoordinatorOptions& options,
    const std::function<std::optional<std::string>(const std::string&)>& get_env,
    const FileSystem& files) {
  CoordinatorEndpoint endpoint;
  endpoint.address = options.address;
  if (endpoint.address.empty() && get_env) {
    endpoint.address = get_env("HANDOFF_COORDINATOR").value_or("");
  }
  if (endpoint.address.empty()) {
    return absl::InvalidArgumentError(
        "no coordinator address: pass --coordinator HOST:PORT or set HANDOFF_COORDINATOR");
  }
  absl::StatusOr<absl::Duration> timeout = ParsePositiveDuration(options.timeout, "--timeout");
  if (!timeout.ok()) return timeout.status();
  endpoint.timeout = *timeout;
  absl::StatusOr<absl::Duration> watch_timeout =
      ParsePositiveDuration(options.watch_timeout, "--watch-timeout");
  if (!watch_timeout.ok()) return watch_timeout.status();
  endpoint.watch_timeout = *watch_timeout;
  absl::Duration reconnect_timeout;
  if (!absl::ParseDuration(options.reconnect_timeout, &reconnect_timeout) ||
      reconnect_timeout < absl::ZeroDuration()) {
    return absl::InvalidArgumentError(StrCat("--reconnect-timeout \"", options.reconnect_timeout,
                                             "\" is not a duration such as 0, 30s or 5m"));
  }
  endpoint.reconnect_timeout = reconnect_timeout;

  const PemSource ca{"the CA certificate", "--ca", "HANDOFF_CA", kDefaultCaPath, "CERTIFICATE"};
  const PemSource cert{"the operator certificate", "--cert", "HANDOFF_CERT", kDefaultCertPath,
                       "CERTIFICATE"};
  const PemSource key{"the operator key", "--key", "HANDOFF_KEY", kDefaultKeyPath, "PRIVATE KEY"};
  absl::StatusOr<std::string> ca_pem = ReadPem(options.ca, ca, get_env, files, endpoint.ca_path);
  if (!ca_pem.ok()) return ca_pem.status();
  absl::StatusOr<std::string> cert_pem =
      ReadPem(options.cert, cert, get_env, files, endpoint.cert_path);
  if (!cert_pem.ok()) return cert_pem.status();
  absl::StatusOr<std::string> key_pem =
      ReadPem(options.key, key, get_env, files, endpoint.key_path);
  if (!key_pem.ok()) return key_pem.status();
  endpoint.tls.ca_pem = *std::move(ca_pem);
  endpoint.tls.cert_pem = *std::move(cert_pem);
  endpoint.tls.key_pem = *std::move(key_pem);
  endpoint.tls.server_name = options.server_name;
  return endpoint;
}

std::unique_ptr<OperatorClient> NewGrpcOperatorClient(const CoordinatorEndpoint& endpoint) {
  return std::make_unique<GrpcOperatorClient>(endpoint);
}

WatchOutcome WatchStatus(
    const std::function<std::unique_ptr<OperatorClient>(absl::Duration watch_left)>& connect,
    const std::function<absl::Status(const v1::RolloutStatus&)>& on_status,
    const ReconnectPolicy& policy, const std::function<bool()>& stop, Clock& clock,
    const WatchEvents& events) {
  using End = WatchOutcome::End;
  v1::StatusRequest request;
  request.set_watch(true);
  const bool watch_ends = policy.watch_timeout != absl::InfiniteDuration();
  const absl::Time watch_end = clock.Now() + policy.watch_timeout;
  auto stopped = [&stop] { return stop && stop(); };

  WatchOutcome outcome;
  std::optional<absl::Time> lost_at;  // when the outage under way began
  Backoff backoff(policy.first_backoff, policy.max_backoff);
  absl::Status rejected;
  // Read by the client's own stop poll, which may run on another thread.
  std::atomic<bool> rejecting{false};
  auto stop_stream = [&] { return rejecting.load() || stopped(); };
  auto on_stream_status = [&](const v1::RolloutStatus& status) {
    if (rejecting.load()) return;
    if (lost_at) {
      if (events.reconnected) events.reconnected(clock.Now() - *lost_at);
      lost_at.reset();
      backoff.Reset();
    }
    absl::Status handled = on_status(status);
    if (!handled.ok()) {
      rejected = std::move(handled);
      rejecting = true;
      return;
    }
    ++outcome.statuses;
  };
  auto end = [&outcome](End how, absl::Status error = absl::OkStatus()) {
    outcome.end = how;
    outcome.error = std::move(error);
    return outcome;
  };

  std::unique_ptr<OperatorClient> client = connect(policy.watch_timeout);
  while (true) {
    const int64_t before = outcome.statuses;
    const absl::Status streamed = client->Status(request, on_stream_status, stop_stream);
    if (rejecting.load()) return end(End::kRejected, rejected);
    // `stop` is looked at only where it decides something: a caller counting its looks (a test
    // standing in for Ctrl-C) sees the same sequence every time.
    if (streamed.ok()) {
      if (stopped()) return end(End::kStopped);
      if (!policy.retry_every_end) return end(End::kEnded);
    }
    const bool came = outcome.statuses > before;
    const absl::StatusCode code = streamed.code();
    const absl::Time now = clock.Now();
    // A watch deadline that gRPC enforced looks like any other DEADLINE_EXCEEDED; one that cut a
    // stream which was delivering statuses is the watch's own end, not an outage.
    if (watch_ends && outcome.statuses > 0 &&
        (now >= watch_end || (code == absl::StatusCode::kDeadlineExceeded && came))) {
      return end(End::kWatchTimeout, streamed);
    }
    const bool outage = policy.retry_every_end || code == absl::StatusCode::kUnavailable ||
                        code == absl::StatusCode::kCancelled ||
                        code == absl::StatusCode::kDeadlineExceeded;
    if (!outage || (outcome.statuses == 0 && !policy.retry_before_first_status) ||
        policy.give_up_after <= absl::ZeroDuration()) {
      return end(End::kFailed, streamed);
    }
    if (!lost_at) {
      lost_at = now;
      if (events.lost) events.lost(streamed);
    }
    const absl::Time give_up = std::min(*lost_at + policy.give_up_after, watch_end);
    if (now >= give_up) {
      outcome.outage = now - *lost_at;
      return end(End::kGaveUp, streamed);
    }
    // Waits in short slices, so that a stop ends the watch at once.
    const absl::Duration wait =
        backoff.Next(policy.jitter ? policy.jitter() : Backoff::kNoJitter);
    const absl::Time next_try = std::min(now + wait, give_up);
    while (clock.Now() < next_try) {
      if (stopped()) return end(End::kStopped);
      clock.SleepFor(std::min(next_try - clock.Now(), policy.stop_poll_interval));
    }
    if (stopped()) return end(End::kStopped);
    client = connect(watch_end - clock.Now());
  }
}

}  // namespace handoff::ctl
