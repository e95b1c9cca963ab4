// handoffctl's connection to the coordinator's OperatorService (proto/handoff/v1/handoff.proto):
// where it is and with which certificates (flags, then $HANDOFF_* variables, then the files under
// /etc/handoff/pki), and the calls themselves behind OperatorClient, so that commands can be
// tested against an in-process fake as well as over a real mutual-TLS channel.
#ifndef HANDOFF_COORDINATOR_CTL_COORDINATOR_CLIENT_H_
#define HANDOFF_COORDINATOR_CTL_COORDINATOR_CLIENT_H_

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "agent/fs/file_system.h"
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

}  // namespace handoff::ctl

#endif  // HANDOFF_COORDINATOR_CTL_COORDINATOR_CLIENT_H_
