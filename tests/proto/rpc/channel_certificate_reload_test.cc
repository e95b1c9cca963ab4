// The agent's side of certificate reload: a channel from rpc::CreateSecureChannel over watched
// files (1 s refresh) presents a replaced client certificate when it reconnects, without being
// made anew; a replaced key of another certificate is refused and the previous pair presented.
// The server (gRPC's own mutual TLS) ends each connection after about half a second, so the
// channel reconnects by itself as it would after a network failure or a coordinator restart.
#include <chrono>
#include <memory>
#include <string>

#include "common/base/strings.h"
#include "gmock/gmock.h"
#include "grpcpp/server.h"
#include "grpcpp/server_builder.h"
#include "gtest/gtest.h"
#include "proto/rpc/channel.h"
#include "tests/common/pki/tls_test_files.h"

namespace handoff::rpc {
namespace {

using ::handoff::testing::ClientVerifyingCredentials;
using ::handoff::testing::Eventually;
using ::handoff::testing::Issue;
using ::handoff::testing::NewCa;
using ::handoff::testing::Serial;
using ::handoff::testing::SerialEchoService;
using ::handoff::testing::TlsFilesDir;
using ::testing::HasSubstr;

class ChannelCertificateReloadTest : public ::testing::Test {
 protected:
  ChannelCertificateReloadTest()
      : ca_(NewCa()), a_(Issue(ca_, "cp-1", false)), b_(Issue(ca_, "cp-1", false)) {
    const pki::KeyPair server = Issue(ca_, "handoff-coordinator", true);
    grpc::ServerBuilder builder;
    int port = 0;
    builder.AddListeningPort("127.0.0.1:0", ClientVerifyingCredentials(ca_.certificate_pem, server),
                             &port);
    builder.AddChannelArgument(GRPC_ARG_MAX_CONNECTION_AGE_MS, 500);
    builder.AddChannelArgument(GRPC_ARG_MAX_CONNECTION_AGE_GRACE_MS, 100);
    builder.RegisterService(&service_);
    server_ = builder.BuildAndStart();
    EXPECT_NE(server_, nullptr);
    address_ = StrCat("127.0.0.1:", port);

    dir_.WriteCa(ca_.certificate_pem);
    dir_.WriteIdentity(a_);
    TlsWatchOptions options;
    options.refresh_interval = absl::Seconds(1);
    options.on_refused = [this](const absl::Status& why) {
      std::lock_guard<std::mutex> lock(mutex_);
      refused_.push_back(std::string(why.message()));
    };
    absl::StatusOr<std::shared_ptr<TlsMaterial>> material =
        TlsMaterial::Watch(dir_.files(), std::move(options));
    EXPECT_TRUE(material.ok()) << material.status();
    if (material.ok()) material_ = *material;
  }

  ~ChannelCertificateReloadTest() override {
    if (server_ != nullptr) {
      server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(5));
    }
  }

  // One call on `channel`: the serial the server saw, or the call's error. Waiting for a
  // connection (across a reconnect) unless `fail_fast`.
  static std::string Call(const std::shared_ptr<grpc::Channel>& channel, bool fail_fast = false) {
    std::unique_ptr<v1::OperatorService::Stub> stub = v1::OperatorService::NewStub(channel);
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
    context.set_wait_for_ready(!fail_fast);
    v1::NodesResponse response;
    grpc::Status status = stub->Nodes(&context, v1::NodesRequest(), &response);
    if (!status.ok()) return StrCat("error: ", status.error_message());
    return response.nodes_size() == 1 ? response.nodes(0).name() : "no node";
  }

  std::vector<std::string> Refused() {
    std::lock_guard<std::mutex> lock(mutex_);
    return refused_;
  }

  pki::KeyPair ca_;
  pki::KeyPair a_;
  pki::KeyPair b_;
  SerialEchoService service_;
  std::unique_ptr<grpc::Server> server_;
  std::string address_;
  TlsFilesDir dir_;
  std::mutex mutex_;
  std::vector<std::string> refused_;
  std::shared_ptr<TlsMaterial> material_;
};

TEST_F(ChannelCertificateReloadTest, ReconnectPresentsTheReplacedCertificate) {
  ASSERT_NE(material_, nullptr);
  std::shared_ptr<grpc::Channel> channel = CreateSecureChannel(address_, *material_, "");
  ASSERT_EQ(Call(channel), Serial(a_.certificate_pem));

  dir_.WriteIdentity(b_);
  EXPECT_TRUE(Eventually([&] { return Call(channel) == Serial(b_.certificate_pem); }))
      << "last: " << Call(channel);
  EXPECT_THAT(Refused(), ::testing::IsEmpty());
}

TEST_F(ChannelCertificateReloadTest, KeyOfAnotherCertificateIsRefusedAndThePreviousPresented) {
  ASSERT_NE(material_, nullptr);
  std::shared_ptr<grpc::Channel> channel = CreateSecureChannel(address_, *material_, "");
  ASSERT_EQ(Call(channel), Serial(a_.certificate_pem));

  dir_.WriteCertificate(b_);  // the key stays a_'s
  ASSERT_TRUE(Eventually([&] { return !Refused().empty(); }));
  EXPECT_THAT(Refused()[0], HasSubstr("does not belong to the certificate"));
  // Two of gRPC's refreshes and several reconnects: every one still presents a_ (gRPC given the
  // mismatched pair would fail every handshake instead).
  const size_t before = service_.Callers().size();
  const absl::Time until = absl::Now() + absl::Milliseconds(2200);
  while (absl::Now() < until) {
    ASSERT_EQ(Call(channel), Serial(a_.certificate_pem));
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_GT(service_.Callers().size(), before + 10);

  dir_.WriteKey(b_);
  EXPECT_TRUE(Eventually([&] { return Call(channel) == Serial(b_.certificate_pem); }));
}

TEST_F(ChannelCertificateReloadTest, ServerNameIsStillVerified) {
  ASSERT_NE(material_, nullptr);
  std::shared_ptr<grpc::Channel> channel =
      CreateSecureChannel(address_, *material_, "coordinator.elsewhere.example");
  EXPECT_THAT(Call(channel, /*fail_fast=*/true), HasSubstr("error: "));
  EXPECT_EQ(Call(CreateSecureChannel(address_, *material_, "")), Serial(a_.certificate_pem));
}

}  // namespace
}  // namespace handoff::rpc
