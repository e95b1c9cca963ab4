// The coordinator's side of certificate reload: a server on ClientCheckingServerCredentials over
// CoordinatorTlsMaterial (files in a temp dir, 1 s refresh) serves replaced files to new
// connections without a restart, keeps the previous pair when the replaced key is not the
// certificate's (and says so in its log), and checks clients against the CA file as it is now.
#include <chrono>
#include <memory>
#include <string>

#include "common/base/strings.h"
#include "coordinator/server/client_certificate_check.h"
#include "gmock/gmock.h"
#include "grpcpp/server.h"
#include "grpcpp/server_builder.h"
#include "gtest/gtest.h"
#include "proto/rpc/channel.h"
#include "spdlog/sinks/ringbuffer_sink.h"
#include "spdlog/spdlog.h"
#include "tests/common/pki/tls_test_files.h"

namespace handoff::server {
namespace {

using ::handoff::testing::Eventually;
using ::handoff::testing::Issue;
using ::handoff::testing::NewCa;
using ::handoff::testing::PeerSerial;
using ::handoff::testing::Serial;
using ::handoff::testing::SerialEchoService;
using ::handoff::testing::TlsFilesDir;
using ::testing::HasSubstr;

// The process's default logger, which the coordinator logs to, kept for the test's length.
class CapturedLog {
 public:
  CapturedLog()
      : previous_(spdlog::default_logger()),
        sink_(std::make_shared<spdlog::sinks::ringbuffer_sink_mt>(256)) {
    spdlog::set_default_logger(std::make_shared<spdlog::logger>("test", sink_));
  }
  ~CapturedLog() { spdlog::set_default_logger(previous_); }

  std::string Text() const {
    std::string text;
    for (const std::string& line : sink_->last_formatted()) text += line;
    return text;
  }

 private:
  std::shared_ptr<spdlog::logger> previous_;
  std::shared_ptr<spdlog::sinks::ringbuffer_sink_mt> sink_;
};

class ServerCertificateReloadTest : public ::testing::Test {
 protected:
  ServerCertificateReloadTest()
      : ca_(NewCa()), a_(Issue(ca_, "handoff-coordinator", true)),
        b_(Issue(ca_, "handoff-coordinator", true)), client_(Issue(ca_, "cp-1", false)) {
    dir_.WriteCa(ca_.certificate_pem);
    dir_.WriteIdentity(a_);
    absl::StatusOr<std::shared_ptr<rpc::TlsMaterial>> tls =
        CoordinatorTlsMaterial(rpc::TlsPems(), dir_.files(), absl::Seconds(1));
    EXPECT_TRUE(tls.ok()) << tls.status();
    if (!tls.ok()) return;
    grpc::ServerBuilder builder;
    int port = 0;
    builder.AddListeningPort("127.0.0.1:0",
                             ClientCheckingServerCredentials(*tls, [](const absl::Status&) {}),
                             &port);
    builder.RegisterService(&service_);
    server_ = builder.BuildAndStart();
    EXPECT_NE(server_, nullptr);
    address_ = StrCat("127.0.0.1:", port);
  }

  ~ServerCertificateReloadTest() override {
    if (server_ != nullptr) {
      server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(5));
    }
  }

  // One call on a new connection as `client`, trusting `trusted`: the serial of the certificate
  // the server presented, or the call's error.
  std::string CallAs(const pki::KeyPair& client, const std::string& trusted) {
    auto stub = v1::OperatorService::NewStub(rpc::CreateSecureChannel(
        address_, rpc::ClientTls{trusted, client.certificate_pem, client.private_key_pem, ""}));
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
    v1::NodesResponse response;
    grpc::Status status = stub->Nodes(&context, v1::NodesRequest(), &response);
    if (!status.ok()) return StrCat("error: ", status.error_message());
    return PeerSerial(context);
  }
  std::string Call() { return CallAs(client_, ca_.certificate_pem); }

  CapturedLog log_;
  TlsFilesDir dir_;
  pki::KeyPair ca_;
  pki::KeyPair a_;
  pki::KeyPair b_;
  pki::KeyPair client_;
  SerialEchoService service_;
  std::unique_ptr<grpc::Server> server_;
  std::string address_;
};

TEST_F(ServerCertificateReloadTest, NewConnectionsGetTheReplacedCertificate) {
  ASSERT_NE(server_, nullptr);
  ASSERT_EQ(Call(), Serial(a_.certificate_pem));
  dir_.WriteIdentity(b_);
  EXPECT_TRUE(Eventually([&] { return Call() == Serial(b_.certificate_pem); }))
      << "last: " << Call();
  EXPECT_THAT(log_.Text(), HasSubstr(StrCat(dir_.Path("tls.crt"), " replaced: new connections "
                                            "get CN=handoff-coordinator, serial ",
                                            Serial(b_.certificate_pem))));
}

TEST_F(ServerCertificateReloadTest, KeyOfAnotherCertificateIsRefusedAndThePreviousServed) {
  ASSERT_NE(server_, nullptr);
  ASSERT_EQ(Call(), Serial(a_.certificate_pem));
  dir_.WriteKey(b_);  // the certificate stays a_'s
  ASSERT_TRUE(Eventually([&] {
    return log_.Text().find("does not belong to the certificate") != std::string::npos;
  })) << log_.Text();
  EXPECT_THAT(log_.Text(),
              HasSubstr(StrCat("keep the previous certificate (CN=handoff-coordinator, serial ",
                               Serial(a_.certificate_pem), ")")));
  // Longer than gRPC's refresh of what it serves: new connections still get a_ (gRPC 1.51 given
  // the mismatched pair would fail every handshake instead).
  const absl::Time until = absl::Now() + absl::Milliseconds(1500);
  while (absl::Now() < until) {
    ASSERT_EQ(Call(), Serial(a_.certificate_pem));
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  dir_.WriteCertificate(b_);
  EXPECT_TRUE(Eventually([&] { return Call() == Serial(b_.certificate_pem); }));
}

TEST_F(ServerCertificateReloadTest, ClientsAreCheckedAgainstTheCaFileAsItIsNow) {
  ASSERT_NE(server_, nullptr);
  const pki::KeyPair new_ca = NewCa("handoff-ca-2");
  const pki::KeyPair newcomer = Issue(new_ca, "cp-2", false);
  EXPECT_THAT(CallAs(newcomer, ca_.certificate_pem), HasSubstr("error: "));
  // A CA rotation's first step: both CAs trusted.
  dir_.WriteCa(ca_.certificate_pem + new_ca.certificate_pem);
  EXPECT_TRUE(Eventually(
      [&] { return CallAs(newcomer, ca_.certificate_pem) == Serial(a_.certificate_pem); }));
  EXPECT_EQ(Call(), Serial(a_.certificate_pem));
}

}  // namespace
}  // namespace handoff::server
