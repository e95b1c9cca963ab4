// Test helper: the fake API server over TLS on 127.0.0.1 (a port the kernel picks), with the
// test CA in tests/testdata/kube-tls, seeded from tests/testdata/cluster/kubeadm.yaml; a temp
// directory with kubeconfigs pointing at it; clients with a FakeClock.
#ifndef HANDOFF_TESTS_COORDINATOR_FAKE_CLUSTER_H_
#define HANDOFF_TESTS_COORDINATOR_FAKE_CLUSTER_H_

#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>

#include "common/base/strings.h"
#include "common/system/clock.h"
#include "common/kube/client.h"
#include "common/kube/http_transport.h"
#include "common/kube/kubeconfig.h"
#include "gtest/gtest.h"
#include "rehearsal/fakeapi/api_store.h"
#include "rehearsal/fakeapi/fake_api_server.h"
#include "tests/support/fake_clock.h"

namespace handoff::testing {

inline std::string Testdata(const std::string& relative) {
  return std::string(HANDOFF_TESTDATA_DIR) + "/" + relative;
}

inline std::string ReadTestdata(const std::string& relative) {
  std::ifstream in(Testdata(relative), std::ios::binary);
  std::ostringstream content;
  content << in.rdbuf();
  return content.str();
}

inline std::string Message(const absl::Status& status) { return std::string(status.message()); }

// A temp directory removed with everything in it.
class TempDir {
 public:
  TempDir() {
    char pattern[] = "/tmp/handoff-kube-test-XXXXXX";
    if (mkdtemp(pattern) != nullptr) path_ = pattern;
    EXPECT_FALSE(path_.empty()) << "mkdtemp failed";
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }
  std::string Write(const std::string& name, const std::string& content) const {
    const std::string file = path_ + "/" + name;
    std::ofstream(file, std::ios::binary) << content;
    return file;
  }

 private:
  std::string path_;
};

class FakeCluster {
 public:
  // Serves over TLS (client certificates from the test CA accepted); seeds kubeadm.yaml unless
  // `seed` is false. Tokens: "operator-token" is user "token-operator".
  explicit FakeCluster(bool seed = true) : store_(clock_) {
    if (seed) {
      absl::Status seeded =
          store_.Seed(ReadTestdata("cluster/kubeadm.yaml"), "cluster/kubeadm.yaml");
      EXPECT_TRUE(seeded.ok()) << seeded;
    }
    fakeapi::FakeApiServerOptions options;
    options.cert_file = Testdata("kube-tls/server.crt");
    options.key_file = Testdata("kube-tls/server.key");
    options.client_ca_file = Testdata("kube-tls/ca.crt");
    options.tokens["operator-token"] = fakeapi::UserInfo{"token-operator", {}};
    absl::StatusOr<std::unique_ptr<fakeapi::FakeApiServer>> server =
        fakeapi::FakeApiServer::Start(store_, options);
    EXPECT_TRUE(server.ok()) << server.status();
    if (server.ok()) server_ = *std::move(server);
  }

  fakeapi::ApiStore& store() { return store_; }
  FakeClock& clock() { return clock_; }
  fakeapi::FakeApiServer& server() { return *server_; }
  std::string url() const { return server_->url(); }
  const TempDir& dir() const { return dir_; }

  // A kubeconfig naming the CA, client certificate and key by path (the kubeadm admin.conf
  // shape, but with files).
  std::string WriteKubeconfig(const std::string& name = "kubeconfig") const {
    return dir_.Write(name, StrCat("apiVersion: v1\n"
                                   "kind: Config\n"
                                   "clusters:\n"
                                   "- name: fake\n"
                                   "  cluster:\n"
                                   "    server: ",
                                   url(),
                                   "\n"
                                   "    certificate-authority: ",
                                   Testdata("kube-tls/ca.crt"),
                                   "\n"
                                   "users:\n"
                                   "- name: operator\n"
                                   "  user:\n"
                                   "    client-certificate: ",
                                   Testdata("kube-tls/client.crt"),
                                   "\n"
                                   "    client-key: ",
                                   Testdata("kube-tls/client.key"),
                                   "\n"
                                   "contexts:\n"
                                   "- name: fake\n"
                                   "  context:\n"
                                   "    cluster: fake\n"
                                   "    user: operator\n"
                                   "current-context: fake\n"));
  }

  // What WriteKubeconfig's file loads to.
  kube::ClusterCredentials Credentials() const {
    kube::ClusterCredentials credentials;
    credentials.kubeconfig = "test-kubeconfig";
    credentials.cluster_name = "fake";
    credentials.user_name = "operator";
    credentials.server = url();
    credentials.ca_pem = ReadTestdata("kube-tls/ca.crt");
    credentials.client_cert_pem = ReadTestdata("kube-tls/client.crt");
    credentials.client_key_pem = ReadTestdata("kube-tls/client.key");
    credentials.identity = "handoff-operator";
    return credentials;
  }

  std::unique_ptr<kube::KubeClient> Client(const kube::ClusterCredentials& credentials) {
    absl::StatusOr<std::unique_ptr<kube::HttpTransport>> transport =
        kube::NewCurlTransport(credentials);
    EXPECT_TRUE(transport.ok()) << transport.status();
    return std::make_unique<kube::KubeClient>(*std::move(transport), clock_,
                                              kube::ClientOptionsFor(credentials));
  }
  std::unique_ptr<kube::KubeClient> Client() { return Client(Credentials()); }

 private:
  FakeClock clock_;
  fakeapi::ApiStore store_;
  TempDir dir_;
  std::unique_ptr<fakeapi::FakeApiServer> server_;
};

}  // namespace handoff::testing

#endif  // HANDOFF_TESTS_COORDINATOR_FAKE_CLUSTER_H_
