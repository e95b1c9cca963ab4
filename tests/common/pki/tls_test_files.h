// Test helpers for certificate reload: a temp directory of TLS files that tests replace as an
// operator does (each file whole, by rename), certificates from common/pki made for the wall
// clock (the TLS stacks verify against it), server credentials that verify clients, a service that
// answers with its caller, and a poll for conditions that gRPC reaches in its own time.
#ifndef HANDOFF_TESTS_COMMON_PKI_TLS_TEST_FILES_H_
#define HANDOFF_TESTS_COMMON_PKI_TLS_TEST_FILES_H_

#include <stdlib.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/pki/pki.h"
#include "grpcpp/client_context.h"
#include "grpcpp/security/auth_context.h"
#include "grpcpp/security/server_credentials.h"
#include "grpcpp/server_context.h"
#include "gtest/gtest.h"
#include "handoff/v1/handoff.grpc.pb.h"
#include "proto/rpc/tls_material.h"

namespace handoff::testing {

class TlsFilesDir {
 public:
  TlsFilesDir() {
    std::string pattern = std::filesystem::path(::testing::TempDir()) / "tls-files-XXXXXX";
    if (mkdtemp(pattern.data()) != nullptr) path_ = pattern;
    EXPECT_FALSE(path_.empty()) << "mkdtemp failed";
  }
  ~TlsFilesDir() {
    std::error_code ignored;
    if (!path_.empty()) std::filesystem::remove_all(path_, ignored);
  }
  TlsFilesDir(const TlsFilesDir&) = delete;
  TlsFilesDir& operator=(const TlsFilesDir&) = delete;

  rpc::TlsFiles files() const { return {Path("ca.crt"), Path("tls.crt"), Path("tls.key")}; }
  std::string Path(const std::string& name) const { return path_ + "/" + name; }

  // Whole, by rename: a reader sees the old file or the new one.
  void Write(const std::string& name, const std::string& content) const {
    const std::string temp = Path("." + name + ".tmp");
    {
      std::ofstream out(temp, std::ios::binary | std::ios::trunc);
      out << content;
      ASSERT_TRUE(out.good()) << temp;
    }
    std::filesystem::rename(temp, Path(name));
  }
  void WriteCa(const std::string& ca_pem) const { Write("ca.crt", ca_pem); }
  void WriteCertificate(const pki::KeyPair& pair) const { Write("tls.crt", pair.certificate_pem); }
  void WriteKey(const pki::KeyPair& pair) const { Write("tls.key", pair.private_key_pem); }
  void WriteIdentity(const pki::KeyPair& pair) const {
    WriteCertificate(pair);
    WriteKey(pair);
  }

 private:
  std::string path_;
};

inline pki::KeyPair NewCa(const std::string& name = "handoff-ca") {
  absl::StatusOr<pki::KeyPair> ca =
      pki::CreateCertificateAuthority(name, absl::Now(), absl::Hours(1));
  EXPECT_TRUE(ca.ok()) << ca.status();
  return ca.ok() ? *ca : pki::KeyPair{};
}

// A certificate for 127.0.0.1 (server) or for a client named `name` (client).
inline pki::KeyPair Issue(const pki::KeyPair& ca, const std::string& name, bool server) {
  pki::CertificateRequest request;
  request.common_name = name;
  if (server) {
    request.ip_addresses = {"127.0.0.1"};
    request.server = true;
  } else {
    request.organizations = {"handoff:agents"};
    request.client = true;
  }
  absl::StatusOr<pki::KeyPair> issued = pki::IssueCertificate(ca, request, absl::Now());
  EXPECT_TRUE(issued.ok()) << issued.status();
  return issued.ok() ? *issued : pki::KeyPair{};
}

inline std::string Serial(const std::string& certificate_pem) {
  absl::StatusOr<pki::CertificateInfo> info = pki::InspectCertificate(certificate_pem);
  return info.ok() ? info->serial_hex : "(" + std::string(info.status().message()) + ")";
}

// The serial of the certificate the other side of `context`'s call presented; "" for none.
template <typename Context>
std::string PeerSerial(const Context& context) {
  std::shared_ptr<const grpc::AuthContext> auth = context.auth_context();
  if (auth == nullptr) return "";
  for (const grpc::string_ref& pem : auth->FindPropertyValues(GRPC_X509_PEM_CERT_PROPERTY_NAME)) {
    return Serial(std::string(pem.data(), pem.size()));
  }
  return "";
}

// Answers Nodes with one node named after its caller, as `describe` tells the caller from the
// call's context, and keeps the callers so named.
class CallerEchoService : public v1::OperatorService::CallbackService {
 public:
  using Describe = std::function<std::string(const grpc::CallbackServerContext&)>;
  explicit CallerEchoService(Describe describe) : describe_(std::move(describe)) {}

  grpc::ServerUnaryReactor* Nodes(grpc::CallbackServerContext* context,
                                  const v1::NodesRequest* /*request*/,
                                  v1::NodesResponse* response) override {
    const std::string caller = describe_(*context);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      callers_.push_back(caller);
    }
    response->add_nodes()->set_name(caller);
    grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
    reactor->Finish(grpc::Status::OK);
    return reactor;
  }

  std::vector<std::string> Callers() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return callers_;
  }

 private:
  const Describe describe_;
  mutable std::mutex mutex_;
  std::vector<std::string> callers_;
};

// A CallerEchoService that names each caller by the serial of its certificate.
class SerialEchoService : public CallerEchoService {
 public:
  SerialEchoService()
      : CallerEchoService([](const grpc::CallbackServerContext& context) {
          return PeerSerial(context);
        }) {}
};

// Server credentials from `server`'s pair that require a client certificate and verify it
// against `ca_pem`, as handoff-coordinator's do.
inline std::shared_ptr<grpc::ServerCredentials> ClientVerifyingCredentials(
    const std::string& ca_pem, const pki::KeyPair& server) {
  grpc::SslServerCredentialsOptions ssl(GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
  ssl.pem_root_certs = ca_pem;
  ssl.pem_key_cert_pairs.push_back({server.private_key_pem, server.certificate_pem});
  return grpc::SslServerCredentials(ssl);
}

// Checks `condition` every 100 ms until it holds (true) or `limit` has passed (false): for what
// gRPC's threads reach in their own time (a refresh of the files, a reconnect).
inline bool Eventually(const std::function<bool()>& condition,
                       absl::Duration limit = absl::Seconds(10)) {
  const absl::Time deadline = absl::Now() + limit;
  while (true) {
    if (condition()) return true;
    if (absl::Now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

}  // namespace handoff::testing

#endif  // HANDOFF_TESTS_COMMON_PKI_TLS_TEST_FILES_H_
