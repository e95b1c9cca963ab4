// A real control plane on loopback for tests and the sandbox: etcd and kube-apiserver 1.26 as
// child processes, with certificates from common/pki, serving the real bootstrap RBAC.
//
// Start() lays out `options.dir`:
//   pki/      the kube CA, the API server's serving pair, the front-proxy CA, the service-account
//             key, the admin pair (CN kubernetes-admin, O system:masters)
//   etcd/     etcd's data
//   logs/     etcd.log, kube-apiserver.log
// and returns once /readyz answers 200 to the admin and the bootstrap RBAC (the ClusterRole and
// the leader-locking Role of system:kube-controller-manager) can be read. Ports are free loopback
// ports the kernel picked just before the start. Thread-compatible.
#ifndef HANDOFF_REHEARSAL_REAL_CONTROL_PLANE_H_
#define HANDOFF_REHEARSAL_REAL_CONTROL_PLANE_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/pki/pki.h"
#include "common/kube/client.h"
#include "common/kube/kubeconfig.h"
#include "rehearsal/real/components.h"
#include "rehearsal/sandbox/process.h"

namespace handoff::sandbox::real {

// The ClusterRole kube-apiserver's bootstrap policy gives the kube-controller-manager; not one
// of the types handoff itself reads and writes (common/kube/resource.h).
inline constexpr kube::ResourceType kClusterRoles{"rbac.authorization.k8s.io", "v1",
                                                  "clusterroles", "ClusterRole", false};

struct ControlPlaneOptions {
  // Where certificates, data and logs go; created if missing. Must be empty or absent: Start
  // does not clean up after an earlier control plane.
  std::string dir;
  // Needs etcd and kube-apiserver.
  Components components;
  // The kube CA (with its key: it signs the admin's and IssueClient's certificates). Empty: a
  // fresh one, valid 30 days.
  pki::KeyPair ca;
  // The API server's serving pair as PEM files, both or neither. Empty: one issued by the kube
  // CA for localhost, 127.0.0.1 and the kubernetes Service's names and IP.
  std::string serving_cert_file;
  std::string serving_key_file;
  // For reaching /readyz and the bootstrap RBAC, from the start of etcd.
  absl::Duration start_timeout = absl::Minutes(2);
  // Appended to kube-apiserver's flags (a later flag wins over an earlier one).
  std::vector<std::string> extra_apiserver_flags;
};

class RealControlPlane {
 public:
  // Writes the certificates, starts etcd and kube-apiserver and waits for them.
  // InvalidArgument when only one of the serving files is given or `ca` does not parse. On
  // failure both processes are stopped, and the error names the component, what it waited for, the log file and the
  // log's last lines.
  static absl::StatusOr<std::unique_ptr<RealControlPlane>> Start(ControlPlaneOptions options);
  // Stop().
  ~RealControlPlane();
  RealControlPlane(const RealControlPlane&) = delete;
  RealControlPlane& operator=(const RealControlPlane&) = delete;

  // SIGTERM to kube-apiserver, then to etcd, each given 10 seconds before SIGKILL. Idempotent.
  void Stop();

  // "https://127.0.0.1:PORT".
  const std::string& url() const { return url_; }
  // "http://127.0.0.1:PORT".
  const std::string& etcd_url() const { return etcd_url_; }
  // The kube CA: the API server's certificate chains to it, and it signs client certificates.
  const pki::KeyPair& ca() const { return ca_; }
  // CN kubernetes-admin, O system:masters.
  const pki::KeyPair& admin() const { return admin_; }
  const std::string& dir() const { return dir_; }
  std::string apiserver_log() const;
  std::string etcd_log() const;

  // A client certificate from the kube CA for `user` in `groups` (CN and O, as the x509
  // authenticator reads them): "system:kube-controller-manager", "system:cloud-controller-manager".
  absl::StatusOr<pki::KeyPair> IssueClient(const std::string& user,
                                           const std::vector<std::string>& groups = {}) const;
  // What a kubeconfig for `client` loads to (PEMs inline); identity is the certificate's CN.
  kube::ClusterCredentials Credentials(const pki::KeyPair& client) const;
  kube::ClusterCredentials AdminCredentials() const { return Credentials(admin_); }
  // Writes a kubeconfig for `client` to `path` with the CA, certificate and key embedded (the
  // kubeadm admin.conf shape), for commands and managers that read one.
  absl::Status WriteKubeconfig(const std::string& path, const pki::KeyPair& client) const;
  // A client for `credentials` over libcurl that waits on `clock` (borrowed).
  absl::StatusOr<std::unique_ptr<kube::KubeClient>> Client(
      const kube::ClusterCredentials& credentials, Clock& clock) const;

 private:
  RealControlPlane() = default;

  std::string dir_;
  std::string url_;
  std::string etcd_url_;
  pki::KeyPair ca_;
  pki::KeyPair admin_;
  std::unique_ptr<Process> etcd_;
  std::unique_ptr<Process> apiserver_;
};

// A TCP port on 127.0.0.1 that was free when asked (bound to port 0, read back, closed).
absl::StatusOr<int> PickFreePort();

// The last `max_bytes` of a log file (whole lines), "" when it cannot be read.
std::string LogTail(const std::string& path, size_t max_bytes = 3000);

}  // namespace handoff::sandbox::real

#endif  // HANDOFF_REHEARSAL_REAL_CONTROL_PLANE_H_
