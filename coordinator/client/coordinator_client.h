// handoffctl's connection to the coordinator's OperatorService (proto/handoff/v1/handoff.proto):
// where it is and with which certificates (flags, then $HANDOFF_* variables, then the files under
// /etc/handoff/pki), and the calls themselves behind OperatorClient, so that commands can be
// tested against an in-process fake as well as over a real mutual-TLS channel. WatchStatus is the
// status watch that outlives its coordinator, shared by `handoffctl status --watch` and the
// sandbox.
#ifndef HANDOFF_COORDINATOR_CLIENT_COORDINATOR_CLIENT_H_
#define HANDOFF_COORDINATOR_CLIENT_COORDINATOR_CLIENT_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/fs/file_system.h"
#include "common/system/clock.h"
#include "handoff/v1/handoff.pb.h"
#include "proto/rpc/channel.h"

namespace handoff::ctl {

// The calls an operator makes. Every call carries a deadline (CoordinatorEndpoint). A failure
// comes back as an absl::Status with the gRPC code (the two enumerations coincide) and the
// coordinator's or gRPC's message. Implementations are used by one thread at a time.
class OperatorClient {
 public:
  virtual ~OperatorClient() = default;

  virtual absl::StatusOr<v1::PlanRolloutResponse> Plan(const v1::PlanRolloutRequest& request) = 0;
  virtual absl::StatusOr<v1::RolloutStatus> Start(const v1::StartRequest& request) = 0;
  virtual absl::StatusOr<v1::RolloutStatus> Pause(const v1::PauseRequest& request) = 0;
  virtual absl::StatusOr<v1::RolloutStatus> Resume(const v1::ResumeRequest& request) = 0;
  virtual absl::StatusOr<v1::RolloutStatus> Abort(const v1::AbortRequest& request) = 0;
  virtual absl::StatusOr<v1::RolloutStatus> Rollback(const v1::RollbackRequest& request) = 0;
  virtual absl::StatusOr<v1::RolloutStatus> Finalize(const v1::FinalizeRequest& request) = 0;
  virtual absl::StatusOr<v1::HistoryResponse> History(const v1::HistoryRequest& request) = 0;
  virtual absl::StatusOr<v1::NodesResponse> Nodes(const v1::NodesRequest& request) = 0;
  virtual absl::StatusOr<v1::RolloutStatus> AddNode(const v1::AddNodeRequest& request) = 0;
  virtual absl::StatusOr<v1::RolloutStatus> RemoveNode(const v1::RemoveNodeRequest& request) = 0;

  // The Status stream: calls `on_status` on the calling thread with each RolloutStatus, in the
  // order received. `stop` may be called from another thread, repeatedly, while the stream is
  // open; once it returns true the call is cancelled and Status returns OK. Also OK when the
  // coordinator ends the stream; otherwise the stream's error. For a watch that receives no status
  // within the endpoint's `timeout`, DeadlineExceeded.
  virtual absl::Status Status(const v1::StatusRequest& request,
                              const std::function<void(const v1::RolloutStatus&)>& on_status,
                              const std::function<bool()>& stop) = 0;
};

// Where the coordinator is and how to reach it, resolved and read.
struct CoordinatorEndpoint {
  std::string address;  // "host:port", as gRPC dials it
  rpc::ClientTls tls;   // PEM contents
  // The deadline of every unary call and of an unwatched Status; how long a watch may wait for
  // its first status.
  absl::Duration timeout = absl::Seconds(30);
  // The deadline of a watched Status.
  absl::Duration watch_timeout = absl::Hours(24);
  // How long a watch whose stream broke keeps trying to reach the coordinator again; zero: it
  // does not.
  absl::Duration reconnect_timeout = absl::Minutes(2);
  // The files the PEMs came from, for messages.
  std::string ca_path;
  std::string cert_path;
  std::string key_path;
};

// What the operator gave on the command line; "" = not given.
struct CoordinatorOptions {
  std::string address;  // "" = $HANDOFF_COORDINATOR
  std::string ca;       // "" = $HANDOFF_CA, else /etc/handoff/pki/ca.crt
  std::string cert;     // "" = $HANDOFF_CERT, else /etc/handoff/pki/operator.crt
  std::string key;      // "" = $HANDOFF_KEY, else /etc/handoff/pki/operator.key
  std::string server_name;
  std::string timeout = "30s";
  std::string watch_timeout = "24h";
  std::string reconnect_timeout = "2m";
};

inline constexpr char kDefaultCaPath[] = "/etc/handoff/pki/ca.crt";
inline constexpr char kDefaultCertPath[] = "/etc/handoff/pki/operator.crt";
inline constexpr char kDefaultKeyPath[] = "/etc/handoff/pki/operator.key";

// Fills in the defaults and reads the three PEM files through `files`. InvalidArgument for a
// missing address or a bad duration (naming the flag); for a file that cannot be read or holds no
// PEM block, the error names the file and the flag and variable that chose it.
absl::StatusOr<CoordinatorEndpoint> ResolveCoordinatorEndpoint(
    const CoordinatorOptions& options,
    const std::function<std::optional<std::string>(const std::string&)>& get_env,
    const FileSystem& files);

// OperatorClient over gRPC: a mutual-TLS channel from rpc::CreateSecureChannel, connected lazily.
std::unique_ptr<OperatorClient> NewGrpcOperatorClient(const CoordinatorEndpoint& endpoint);

// When WatchStatus dials the coordinator again. The defaults are handoffctl's.
struct ReconnectPolicy {
  // The wait before the first new try of an outage; each further try of the same outage waits
  // twice as long as the one before, up to max_backoff (common/system/backoff.h). A status
  // received starts it over.
  absl::Duration first_backoff = absl::Milliseconds(250);
  absl::Duration max_backoff = absl::Seconds(5);
  // Where in [half the step, the step] each wait falls (Backoff::Next's unit, from [0, 1]).
  // Unset: the whole step, the plain doubling; one watch retries in step with nothing else.
  std::function<double()> jitter;
  // How long an outage may last before the watch gives up. Zero: a broken stream is not dialled
  // again; absl::InfiniteDuration(): until `stop`.
  absl::Duration give_up_after = absl::Minutes(2);
  // The whole watch ends this long after it began; every new client is told what is left of it.
  // absl::InfiniteDuration(): never.
  absl::Duration watch_timeout = absl::InfiniteDuration();
  // Whether a watch that has not received any status yet is dialled again. handoffctl's is not:
  // then the address or the certificates are wrong, not the coordinator gone.
  bool retry_before_first_status = false;
  // false: a stream is dialled again only when it ended UNAVAILABLE, CANCELLED or
  // DEADLINE_EXCEEDED (the coordinator went away or stopped answering); the coordinator ending the
  // watch (OK) ends it. true: whatever ended the stream, it is dialled again.
  bool retry_every_end = false;
  // The longest single wait between looks at `stop` while waiting to dial again.
  absl::Duration stop_poll_interval = absl::Milliseconds(100);
};

// What WatchStatus tells as it goes, on its calling thread. Either may be empty.
struct WatchEvents {
  // A stream broke and an outage begins (once per outage): how that stream ended.
  std::function<void(const absl::Status& ended)> lost;
  // The first status after an outage came, `outage` after the outage began. Called before that
  // status is handed to on_status.
  std::function<void(absl::Duration outage)> reconnected;
};

struct WatchOutcome {
  enum class End {
    kStopped,       // `stop` returned true
    kEnded,         // the coordinator ended the stream (OK), and the policy does not redial then
    kWatchTimeout,  // policy.watch_timeout passed, after statuses came; `error`: the last stream's
    kFailed,        // a stream ended with `error`, which the policy does not redial
    kGaveUp,        // an outage reached give_up_after (or the watch's end); `error`: the last try's
    kRejected,      // on_status returned `error`; the stream was stopped
  };
  End end = End::kStopped;
  absl::Status error;
  int64_t statuses = 0;                         // handed to on_status, over every stream
  absl::Duration outage = absl::ZeroDuration();  // kGaveUp: how long the watch tried
};

// A Status watch that outlives the coordinator it began with: streams a watched Status from a
// client `connect` makes, and when the stream ends in a way `policy` redials, waits the backoff on
// `clock` and streams again from a new client, until `stop`, the policy's give-up window or its
// watch timeout. `connect` is called once for each stream (the first one included) with what is
// left of the watch's timeout, and returns a client, never null; a new client per stream means a
// new channel, so a restarted coordinator is dialled afresh. `on_status` gets every status, in
// order, on the calling thread. `stop` may be called from any thread (the client polls it while
// a stream is open) and is looked at at least every policy.stop_poll_interval while waiting.
// `clock.SleepFor` may return early (a waiter that a stop wakes); the loop looks at `stop` and the
// time again after each wait. Blocks until the watch ends; the outcome says how.
WatchOutcome WatchStatus(
    const std::function<std::unique_ptr<OperatorClient>(absl::Duration watch_left)>& connect,
    const std::function<absl::Status(const v1::RolloutStatus&)>& on_status,
    const ReconnectPolicy& policy, const std::function<bool()>& stop, Clock& clock,
    const WatchEvents& events = {});

}  // namespace handoff::ctl

#endif  // HANDOFF_COORDINATOR_CLIENT_COORDINATOR_CLIENT_H_
