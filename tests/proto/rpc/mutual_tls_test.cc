// Material from common/pki in real use: a gRPC server on 127.0.0.1 that requires and verifies
// client certificates (as handoff-coordinator does), and clients on rpc::CreateSecureChannel.
// The certificates are made for the wall clock, because the TLS stacks verify against it.
#include <chrono>
#include <memory>
#include <string>

#include "common/base/strings.h"
#include "common/pki/pki.h"
#include "gmock/gmock.h"
#include "grpcpp/client_context.h"
#include "grpcpp/server.h"
#include "grpcpp/server_builder.h"
#include "gtest/gtest.h"
#include "handoff/v1/handoff.grpc.pb.h"
#include "proto/rpc/channel.h"
#include "tests/common/pki/tls_test_files.h"

namespace handoff::pki {
namespace {

using ::handoff::testing::CallerEchoService;
using ::handoff::testing::ClientVerifyingCredentials;
using ::testing::ElementsAre;
using ::testing::IsEmpty;

// The caller as "<CN> O=<organizations>", read from the peer certificate the way the coordinator
// authorises.
std::string PeerIdentity(const grpc::CallbackServerContext& context) {
  std::string identity = "(no certificate)";
  for (const grpc::string_ref& pem :
       context.auth_context()->FindPropertyValues(GRPC_X509_PEM_CERT_PROPERTY_NAME)) {
    absl::StatusOr<CertificateInfo> info = InspectCertificate(std::string(pem.data(), pem.size()));
    identity = info.ok() ? StrCat(info->common_name, " O=", StrJoin(info->organizations, ","))
                         : std::string(info.status().message());
  }
  return identity;
}

KeyPair Issue(const KeyPair& ca, CertificateRequest request) {
  absl::StatusOr<KeyPair> issued = IssueCertificate(ca, request, absl::Now());
  EXPECT_TRUE(issued.ok()) << issued.status();
  return issued.ok() ? *issued : KeyPair{};
}

CertificateRequest Client(const std::string& name, const std::string& organization) {
  CertificateRequest request;
  request.common_name = name;
  request.organizations = {organization};
  request.client = true;
  return request;
}

class MutualTlsTest : public ::testing::Test {
 protected:
  MutualTlsTest()
      : ca_(*CreateCertificateAuthority("handoff-ca", absl::Now(), absl::Hours(1))),
        other_ca_(*CreateCertificateAuthority("handoff-ca", absl::Now(), absl::Hours(1))) {
    CertificateRequest server;
    server.common_name = "handoff-coordinator";
    server.dns_names = {"localhost"};
    server.ip_addresses = {"127.0.0.1"};
    server.server = true;
    const KeyPair coordinator = Issue(ca_, server);
    grpc::ServerBuilder builder;
    int port = 0;
    builder.AddListeningPort("127.0.0.1:0",
                             ClientVerifyingCredentials(ca_.certificate_pem, coordinator), &port);
    builder.RegisterService(&service_);
    server_ = builder.BuildAndStart();
    EXPECT_NE(server_, nullptr);
    EXPECT_GT(port, 0);
    address_ = StrCat("127.0.0.1:", port);
  }

  ~MutualTlsTest() override {
    if (server_ != nullptr) {
      server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(5));
    }
  }

  // Calls Nodes with `client`, trusting `trusted` for the server; the caller the server saw, or
  // the call's error.
  grpc::Status CallNodes(const KeyPair& client, const KeyPair& trusted, std::string* caller,
                         const std::string& server_name = "") {
    rpc::ClientTls tls{trusted.certificate_pem, client.certificate_pem, client.private_key_pem,
                       server_name};
    std::unique_ptr<v1::OperatorService::Stub> stub =
        v1::OperatorService::NewStub(rpc::CreateSecureChannel(address_, tls));
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
    v1::NodesResponse response;
    grpc::Status status = stub->Nodes(&context, v1::NodesRequest(), &response);
    if (status.ok() && response.nodes_size() == 1) *caller = response.nodes(0).name();
    return status;
  }

  KeyPair ca_;
  KeyPair other_ca_;
  CallerEchoService service_{&PeerIdentity};
  std::unique_ptr<grpc::Server> server_;
  std::string address_;
};

TEST_F(MutualTlsTest, GeneratedCertificatesAuthenticateBothSides) {
  std::string caller;
  grpc::Status status = CallNodes(Issue(ca_, Client("alice", "handoff:operators")), ca_, &caller);
  ASSERT_TRUE(status.ok()) << status.error_code() << " " << status.error_message();
  EXPECT_EQ(caller, "alice O=handoff:operators");

  status = CallNodes(Issue(ca_, Client("cp-1", "handoff:agents")), ca_, &caller, "localhost");
  ASSERT_TRUE(status.ok()) << status.error_code() << " " << status.error_message();
  EXPECT_EQ(caller, "cp-1 O=handoff:agents");
  EXPECT_THAT(service_.Callers(),
              ElementsAre("alice O=handoff:operators", "cp-1 O=handoff:agents"));
}

TEST_F(MutualTlsTest, ClientCertificateFromAnotherCaIsRefused) {
  std::string caller;
  grpc::Status status =
      CallNodes(Issue(other_ca_, Client("mallory", "handoff:operators")), ca_, &caller);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAVAILABLE) << status.error_message();
  EXPECT_THAT(service_.Callers(), IsEmpty());
}

TEST_F(MutualTlsTest, ClientTrustingAnotherCaRefusesTheServer) {
  std::string caller;
  grpc::Status status =
      CallNodes(Issue(other_ca_, Client("alice", "handoff:operators")), other_ca_, &caller);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAVAILABLE) << status.error_message();
  EXPECT_THAT(service_.Callers(), IsEmpty());
}

TEST_F(MutualTlsTest, ServerMustCarryTheNameDialed) {
  std::string caller;
  grpc::Status status = CallNodes(Issue(ca_, Client("alice", "handoff:operators")), ca_, &caller,
                                  "coordinator.elsewhere.example");
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAVAILABLE) << status.error_message();
  EXPECT_THAT(service_.Callers(), IsEmpty());
}

}  // namespace
}  // namespace handoff::pki
