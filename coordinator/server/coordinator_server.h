// The coordinator's gRPC server: AgentService (each agent's stream) and OperatorService over
// mutual TLS only, the standard health service, and server reflection when asked for. Each call
// is authorised on the verified client certificate (peer_identity.h) and handed to the
// RolloutController on the controller's own thread (controller_thread.h): no gRPC reactor waits on
// the controller's mutex or the store's commit. `status` is answered at once from the
// controller's latest status, and the agents' controller samples go to the double-run detector
// at once.
#ifndef HANDOFF_COORDINATOR_SERVER_COORDINATOR_SERVER_H_
#define HANDOFF_COORDINATOR_SERVER_COORDINATOR_SERVER_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "coordinator/server/controller_thread.h"
#include "coordinator/server/rollout_controller.h"
#include "coordinator/server/run_watch.h"
#include "grpcpp/server.h"
#include "proto/rpc/tls_material.h"

namespace handoff::server {

struct ServerOptions {
  std::string listen = "0.0.0.0:7450";  // host:port; port 0 picks a free one
  std::string ca_pem;                   // the handoff CA: every client certificate must chain to it
  std::string cert_pem;                 // the coordinator's certificate and key
  std::string key_pem;
  // When tls_files.cert_file is set, the TLS material comes from these files instead, read
  // again every cert_refresh_interval: new connections get replaced files without a restart
  // (rpc::TlsMaterial::Watch; a replacement that does not fit together is refused and logged).
  rpc::TlsFiles tls_files;
  absl::Duration cert_refresh_interval = absl::Seconds(60);
  bool reflection = false;  // gRPC server reflection (for grpcurl and the like)
  // Borrowed, may be null: the live double-run detector, fed the agents' controller samples;
  // it adds who runs each cloud controller to the status operators read.
  RunWatch* run_watch = nullptr;
  // Borrowed, may be null: the thread the controller's work runs on (the agents' messages, the
  // operators' calls). Null: the server runs one of its own. Must outlive the server.
  ControllerThread* controller_thread = nullptr;
  // An agent stream that has not said hello by then is ended (DEADLINE_EXCEEDED): agents say it
  // at once, and a stream held open without it would only cost the coordinator memory.
  absl::Duration hello_deadline = absl::Seconds(10);
  // Agent streams open at once per client certificate (CN); more are refused with
  // RESOURCE_EXHAUSTED. An agent needs one, two while a reconnect overtakes its old stream.
  size_t max_streams_per_identity = 4;
};

class CoordinatorServer {
 public:
  // Builds and starts the server; borrows `controller`, which must outlive it. An error when the
  // address cannot be bound (naming it) or the TLS material is rejected.
  static absl::StatusOr<std::unique_ptr<CoordinatorServer>> Start(RolloutController& controller,
                                                                  const ServerOptions& options);
  ~CoordinatorServer();

  // The port bound (the chosen one when listen asked for 0).
  int port() const { return port_; }

  // Graceful stop: health NOT_SERVING, no new calls, running calls get until `grace` to end,
  // then are cancelled. Idempotent; the destructor does it with a zero grace.
  void Shutdown(absl::Duration grace);

 private:
  struct Services;
  CoordinatorServer() = default;

  std::unique_ptr<Services> services_;
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
  bool shut_down_ = false;
};

}  // namespace handoff::server

#endif  // HANDOFF_COORDINATOR_SERVER_COORDINATOR_SERVER_H_
