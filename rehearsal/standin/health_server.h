// The stand-in's HTTPS health endpoint, as the real components serve it: "ok" with 200 on each
// path, anonymously, from the moment the process runs — a controller manager waiting for its
// lease is healthy (its leader-election health check only fails a leader that stopped renewing).
// The serving certificate is made at start, like the managers' self-signed one: a throwaway CA
// (its key is dropped) signs a leaf for "localhost", 127.0.0.1 and the bind address. Clients
// (handoff-agent's health checker) do not verify it.
#ifndef HANDOFF_REHEARSAL_STANDIN_HEALTH_SERVER_H_
#define HANDOFF_REHEARSAL_STANDIN_HEALTH_SERVER_H_

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace handoff::standin {

// The named checks /healthz?verbose lists after ping, log and leaderElection: one per controller
// the manager started, as kube-controller-manager and cloud-controller-manager add a
// controllerhealthz check per started controller. Thread-safe (the manager adds, the server
// reads).
class NamedChecks {
 public:
  void Add(const std::string& name);
  void Clear();
  std::vector<std::string> Names() const;

 private:
  mutable std::mutex mutex_;
  std::vector<std::string> names_;
};

struct HealthServerOptions {
  std::string bind_address = "0.0.0.0";
  int port = 0;                                // 0: any free port (tests)
  std::vector<std::string> paths{"/healthz"};  // kube-apiserver also serves /livez
  std::string component;                       // for the certificate's names
  // Sandbox fault injection (`handoffctl sandbox --fault unhealthy`): while this file exists,
  // every path answers 500, like a component that never becomes healthy. "" = never.
  std::string unhealthy_marker;
  // Listed by `?verbose` ("[+]service ok" lines, then "healthz check passed"); null: only the
  // generic checks.
  std::shared_ptr<const NamedChecks> checks;
};

class HealthServer {
 public:
  // Generates the certificate (valid from `now`), binds and serves on a thread of its own.
  // Unavailable naming the address when it cannot listen (a port in use: the port is bound
  // without SO_REUSEPORT, so a second process on it fails as the real components do).
  static absl::StatusOr<std::unique_ptr<HealthServer>> Start(const HealthServerOptions& options,
                                                             absl::Time now);
  // Stops serving and joins the thread.
  ~HealthServer();
  HealthServer(const HealthServer&) = delete;
  HealthServer& operator=(const HealthServer&) = delete;

  void Stop();
  int port() const;

  class Impl;
  // Use Start().
  explicit HealthServer(std::unique_ptr<Impl> impl);

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace handoff::standin

#endif  // HANDOFF_REHEARSAL_STANDIN_HEALTH_SERVER_H_
