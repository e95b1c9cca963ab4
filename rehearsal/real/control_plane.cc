#include "rehearsal/real/control_plane.h"

#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/escaping.h"
#include "common/base/strings.h"
#include "common/system/clock.h"
#include "common/kube/http_transport.h"

namespace handoff::sandbox::real {
namespace {

constexpr absl::Duration kPollInterval = absl::Milliseconds(250);
constexpr absl::Duration kStopGrace = absl::Seconds(10);

absl::Status WriteFile(const std::string& path, const std::string& content, mode_t mode) {
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << content;
    if (!out.flush()) {
      return absl::InternalError(StrCat("cannot write ", path, ": ", std::strerror(errno)));
    }
  }
  if (chmod(path.c_str(), mode) != 0) {
    return absl::InternalError(StrCat("cannot chmod ", path, ": ", std::strerror(errno)));
  }
  return absl::OkStatus();
}

// Writes `pair` as <base>.crt and <base>.key.
absl::Status WritePair(const std::string& base, const pki::KeyPair& pair) {
  if (absl::Status status = WriteFile(base + ".crt", pair.certificate_pem, 0644); !status.ok()) {
    return status;
  }
  return WriteFile(base + ".key", pair.private_key_pem, 0600);
}

std::string Describe(const absl::StatusOr<kube::HttpResponse>& response) {
  if (!response.ok()) return std::string(response.status().message());
  std::string body = response->body.substr(0, 400);
  return StrCat("HTTP ", response->status, ": ", body);
}

absl::Status StartupError(std::string_view component, std::string_view what,
                          const std::string& log) {
  return absl::UnavailableError(StrCat(component, " ", what, "; its log is ", log,
                                       ", which ends with:\n", LogTail(log)));
}

// Polls `path` through `transport` until it answers 200, waiting between polls on `process` so
// that an exit is noticed at once. The last answer is in the error.
absl::Status AwaitOk(kube::HttpTransport& transport, const std::string& path, Process& process,
                     std::string_view component, const std::string& log, absl::Time deadline,
                     Clock& clock) {
  std::string last = "no answer yet";
  while (true) {
    kube::HttpRequest request;
    request.path = path;
    request.timeout = absl::Seconds(5);
    absl::StatusOr<kube::HttpResponse> response = transport.Send(request);
    if (response.ok() && response->status == 200) return absl::OkStatus();
    last = Describe(response);
    if (clock.Now() >= deadline) {
      return StartupError(component, StrCat("did not answer 200 on ", path, " in time (last: ",
                                            last, ")"),
                          log);
    }
    int status = 0;
    if (process.WaitFor(kPollInterval, &status)) {
      return StartupError(component,
                          StrCat("exited (", DescribeWaitStatus(status), ") while waiting for ",
                                 path, " (last: ", last, ")"),
                          log);
    }
  }
}

}  // namespace

absl::StatusOr<int> PickFreePort() {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return absl::InternalError(StrCat("socket: ", std::strerror(errno)));
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = 0;
  socklen_t length = sizeof(address);
  if (bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
    const int error = errno;
    close(fd);
    return absl::InternalError(StrCat("cannot pick a free port on 127.0.0.1: ",
                                      std::strerror(error)));
  }
  close(fd);
  return static_cast<int>(ntohs(address.sin_port));
}

std::string LogTail(const std::string& path, size_t max_bytes) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return "";
  std::ostringstream content;
  content << in.rdbuf();
  std::string text = content.str();
  if (text.size() <= max_bytes) return text;
  text = text.substr(text.size() - max_bytes);
  const size_t newline = text.find('\n');
  return newline == std::string::npos ? text : text.substr(newline + 1);
}

absl::StatusOr<std::unique_ptr<RealControlPlane>> RealControlPlane::Start(
    ControlPlaneOptions options) {
  std::unique_ptr<RealControlPlane> plane(new RealControlPlane());
  plane->dir_ = options.dir;
  const std::string pki_dir = options.dir + "/pki";
  const std::string logs_dir = options.dir + "/logs";
  const std::string etcd_dir = options.dir + "/etcd";
  std::error_code error;
  for (const std::string& dir : {pki_dir, logs_dir, etcd_dir}) {
    std::filesystem::create_directories(dir, error);
    if (error) return absl::InternalError(StrCat("cannot create ", dir, ": ", error.message()));
  }
  // etcd refuses a data dir other users can read.
  std::filesystem::permissions(etcd_dir, std::filesystem::perms::owner_all, error);

  // Certificates, as kubeadm lays them out for a control-plane node.
  std::unique_ptr<Clock> clock = NewRealClock();
  const absl::Time now = clock->Now();
  const absl::Duration validity = absl::Hours(24 * 30);
  if (options.serving_cert_file.empty() != options.serving_key_file.empty()) {
    return absl::InvalidArgumentError(
        "ControlPlaneOptions: serving_cert_file and serving_key_file go together; give both or "
        "neither");
  }
  absl::StatusOr<pki::KeyPair> ca =
      options.ca.certificate_pem.empty()
          ? pki::CreateCertificateAuthority("kubernetes", now, validity)
          : absl::StatusOr<pki::KeyPair>(options.ca);
  if (!ca.ok()) return ca.status();
  if (absl::Status matches = pki::CheckKeyPair(*ca); !matches.ok()) {
    return absl::InvalidArgumentError(
        StrCat("ControlPlaneOptions.ca: ", matches.message(), "; give the CA with its key"));
  }
  plane->ca_ = *ca;
  pki::KeyPair apiserver_pair;
  if (options.serving_cert_file.empty()) {
    pki::CertificateRequest serving;
    serving.common_name = "kube-apiserver";
    serving.dns_names = {"localhost", "kubernetes", "kubernetes.default",
                         "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"};
    serving.ip_addresses = {"127.0.0.1", "10.96.0.1"};
    serving.server = true;
    absl::StatusOr<pki::KeyPair> issued = pki::IssueCertificate(*ca, serving, now);
    if (!issued.ok()) return issued.status();
    apiserver_pair = *issued;
  }
  const std::string serving_cert =
      options.serving_cert_file.empty() ? pki_dir + "/apiserver.crt" : options.serving_cert_file;
  const std::string serving_key =
      options.serving_key_file.empty() ? pki_dir + "/apiserver.key" : options.serving_key_file;
  absl::StatusOr<pki::KeyPair> admin = plane->IssueClient("kubernetes-admin", {"system:masters"});
  if (!admin.ok()) return admin.status();
  plane->admin_ = *admin;
  absl::StatusOr<pki::KeyPair> front_proxy_ca =
      pki::CreateCertificateAuthority("front-proxy-ca", now, validity);
  if (!front_proxy_ca.ok()) return front_proxy_ca.status();
  pki::CertificateRequest proxy_client;
  proxy_client.common_name = "front-proxy-client";
  proxy_client.client = true;
  absl::StatusOr<pki::KeyPair> front_proxy_client =
      pki::IssueCertificate(*front_proxy_ca, proxy_client, now);
  if (!front_proxy_client.ok()) return front_proxy_client.status();
  // The service-account signing key only needs to be an EC key kube-apiserver can read; a CA's
  // key is one (PKCS#8). For verification kube-apiserver reads public keys only, but takes them
  // from a certificate too (client-go util/keyutil ParsePublicKeysPEM), so the CA's certificate
  // serves as sa.pub.
  absl::StatusOr<pki::KeyPair> service_accounts =
      pki::CreateCertificateAuthority("service-accounts", now, validity);
  if (!service_accounts.ok()) return service_accounts.status();
  std::vector<std::pair<std::string, const pki::KeyPair*>> pairs = {
      {"ca", &*ca},
      {"admin", &*admin},
      {"front-proxy-ca", &*front_proxy_ca},
      {"front-proxy-client", &*front_proxy_client}};
  if (options.serving_cert_file.empty()) pairs.push_back({"apiserver", &apiserver_pair});
  for (const auto& [name, pair] : pairs) {
    if (absl::Status status = WritePair(StrCat(pki_dir, "/", name), *pair); !status.ok()) {
      return status;
    }
  }
  if (absl::Status status = WriteFile(pki_dir + "/sa.key", service_accounts->private_key_pem, 0600);
      !status.ok()) {
    return status;
  }
  if (absl::Status status = WriteFile(pki_dir + "/sa.pub", service_accounts->certificate_pem, 0644);
      !status.ok()) {
    return status;
  }

  // etcd: one member, plain HTTP on loopback.
  absl::StatusOr<int> client_port = PickFreePort();
  if (!client_port.ok()) return client_port.status();
  absl::StatusOr<int> peer_port = PickFreePort();
  if (!peer_port.ok()) return peer_port.status();
  plane->etcd_url_ = StrCat("http://127.0.0.1:", *client_port);
  const std::string peer_url = StrCat("http://127.0.0.1:", *peer_port);
  const absl::Time deadline = now + options.start_timeout;
  absl::StatusOr<std::unique_ptr<Process>> etcd = Process::Spawn(
      {options.components.Binary(kEtcd), "--name=handoff", "--data-dir=" + etcd_dir + "/data",
       "--listen-client-urls=" + plane->etcd_url_, "--advertise-client-urls=" + plane->etcd_url_,
       "--listen-peer-urls=" + peer_url, "--initial-advertise-peer-urls=" + peer_url,
       "--initial-cluster=handoff=" + peer_url, "--initial-cluster-state=new",
       // The API server's compaction is enough for a test's lifetime.
       "--snapshot-count=10000", "--quota-backend-bytes=1073741824"},
      plane->etcd_log());
  if (!etcd.ok()) return etcd.status();
  plane->etcd_ = *std::move(etcd);
  kube::ClusterCredentials etcd_endpoint;
  etcd_endpoint.server = plane->etcd_url_;
  absl::StatusOr<std::unique_ptr<kube::HttpTransport>> etcd_transport =
      kube::NewCurlTransport(etcd_endpoint);
  if (!etcd_transport.ok()) return etcd_transport.status();
  if (absl::Status status = AwaitOk(**etcd_transport, "/health", *plane->etcd_, "etcd",
                                    plane->etcd_log(), deadline, *clock);
      !status.ok()) {
    return status;
  }

  // kube-apiserver with the flags kubeadm 1.26 gives it, on loopback.
  absl::StatusOr<int> secure_port = PickFreePort();
  if (!secure_port.ok()) return secure_port.status();
  plane->url_ = StrCat("https://127.0.0.1:", *secure_port);
  std::vector<std::string> argv = {
      options.components.Binary(kKubeApiserver),
      "--advertise-address=127.0.0.1",
      "--bind-address=127.0.0.1",
      StrCat("--secure-port=", *secure_port),
      "--etcd-servers=" + plane->etcd_url_,
      "--cert-dir=" + pki_dir,
      "--tls-cert-file=" + serving_cert,
      "--tls-private-key-file=" + serving_key,
      "--client-ca-file=" + pki_dir + "/ca.crt",
      "--authorization-mode=Node,RBAC",
      "--enable-admission-plugins=NodeRestriction",
      "--allow-privileged=true",
      "--enable-bootstrap-token-auth=true",
      "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
      "--service-account-key-file=" + pki_dir + "/sa.pub",
      "--service-account-signing-key-file=" + pki_dir + "/sa.key",
      "--service-cluster-ip-range=10.96.0.0/12",
      "--requestheader-client-ca-file=" + pki_dir + "/front-proxy-ca.crt",
      "--requestheader-allowed-names=front-proxy-client",
      "--requestheader-extra-headers-prefix=X-Remote-Extra-",
      "--requestheader-group-headers=X-Remote-Group",
      "--requestheader-username-headers=X-Remote-User",
      "--proxy-client-cert-file=" + pki_dir + "/front-proxy-client.crt",
      "--proxy-client-key-file=" + pki_dir + "/front-proxy-client.key",
      // The endpoint reconciler would publish 127.0.0.1 as the kubernetes Service's endpoint,
      // which Endpoints validation refuses (loopback); nothing here routes through the Service.
      "--endpoint-reconciler-type=none",
      "--profiling=false",
  };
  argv.insert(argv.end(), options.extra_apiserver_flags.begin(),
              options.extra_apiserver_flags.end());
  absl::StatusOr<std::unique_ptr<Process>> apiserver_process =
      Process::Spawn(argv, plane->apiserver_log());
  if (!apiserver_process.ok()) return apiserver_process.status();
  plane->apiserver_ = *std::move(apiserver_process);

  absl::StatusOr<std::unique_ptr<kube::HttpTransport>> transport =
      kube::NewCurlTransport(plane->AdminCredentials());
  if (!transport.ok()) return transport.status();
  // /readyz includes the rbac/bootstrap-roles post-start hook; reading the objects as well
  // proves the admin's certificate is accepted and the policy is what the tests compare against.
  for (const std::string& path :
       {std::string("/readyz"),
        kube::ObjectPath({&kClusterRoles, "", "system:kube-controller-manager"}),
        kube::ObjectPath(
            {&kube::kRoles, "kube-system", "system::leader-locking-kube-controller-manager"})}) {
    if (absl::Status status = AwaitOk(**transport, path, *plane->apiserver_, "kube-apiserver",
                                      plane->apiserver_log(), deadline, *clock);
        !status.ok()) {
      return status;
    }
  }
  return plane;
}

RealControlPlane::~RealControlPlane() { Stop(); }

void RealControlPlane::Stop() {
  // The API server first: etcd going away under it only adds errors to its log.
  if (apiserver_ != nullptr && apiserver_->running()) apiserver_->Stop(SIGTERM, kStopGrace);
  if (etcd_ != nullptr && etcd_->running()) etcd_->Stop(SIGTERM, kStopGrace);
}

std::string RealControlPlane::apiserver_log() const { return dir_ + "/logs/kube-apiserver.log"; }
std::string RealControlPlane::etcd_log() const { return dir_ + "/logs/etcd.log"; }

absl::StatusOr<pki::KeyPair> RealControlPlane::IssueClient(
    const std::string& user, const std::vector<std::string>& groups) const {
  pki::CertificateRequest request;
  request.common_name = user;
  request.organizations = groups;
  request.client = true;
  return pki::IssueCertificate(ca_, request, absl::Now());
}

kube::ClusterCredentials RealControlPlane::Credentials(const pki::KeyPair& client) const {
  kube::ClusterCredentials credentials;
  credentials.kubeconfig = dir_ + "/(in memory)";
  credentials.context = "handoff-real";
  credentials.cluster_name = "handoff-real";
  credentials.server = url_;
  credentials.ca_pem = ca_.certificate_pem;
  credentials.client_cert_pem = client.certificate_pem;
  credentials.client_key_pem = client.private_key_pem;
  absl::StatusOr<kube::CertificateSubject> subject =
      kube::ParseCertificateSubject(client.certificate_pem);
  credentials.identity = subject.ok() ? subject->common_name : "";
  credentials.user_name = credentials.identity;
  return credentials;
}

absl::Status RealControlPlane::WriteKubeconfig(const std::string& path,
                                               const pki::KeyPair& client) const {
  const kube::ClusterCredentials credentials = Credentials(client);
  const std::string text =
      StrCat("apiVersion: v1\n"
             "kind: Config\n"
             "clusters:\n"
             "- name: handoff-real\n"
             "  cluster:\n"
             "    server: ",
             url_, "\n    certificate-authority-data: ", absl::Base64Escape(ca_.certificate_pem),
             "\nusers:\n"
             "- name: \"",
             credentials.identity, "\"\n  user:\n    client-certificate-data: ",
             absl::Base64Escape(client.certificate_pem),
             "\n    client-key-data: ", absl::Base64Escape(client.private_key_pem),
             "\ncontexts:\n"
             "- name: handoff-real\n"
             "  context:\n"
             "    cluster: handoff-real\n"
             "    user: \"",
             credentials.identity,
             "\"\n"
             "current-context: handoff-real\n");
  return WriteFile(path, text, 0600);
}

absl::StatusOr<std::unique_ptr<kube::KubeClient>> RealControlPlane::Client(
    const kube::ClusterCredentials& credentials, Clock& clock) const {
  absl::StatusOr<std::unique_ptr<kube::HttpTransport>> transport =
      kube::NewCurlTransport(credentials);
  if (!transport.ok()) return transport.status();
  return std::make_unique<kube::KubeClient>(*std::move(transport), clock,
                                            kube::ClientOptionsFor(credentials));
}

}  // namespace handoff::sandbox::real
