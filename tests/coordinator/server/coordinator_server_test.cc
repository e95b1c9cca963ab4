// The gRPC server over real mutual TLS on loopback: who may call what.
#include "coordinator/server/coordinator_server.h"

#include <algorithm>
#include <condition_variable>
#include <fstream>
#include <future>
#include <memory>
#include <mutex>
#include <sstream>
#include <thread>
#include <vector>

#include "common/pki/pki.h"
#include "coordinator/server/controller_thread.h"
#include "coordinator/server/run_watch.h"
#include "gmock/gmock.h"
#include "grpcpp/client_context.h"
#include "grpcpp/health_check_service_interface.h"
#include "gtest/gtest.h"
#include "handoff/v1/handoff.grpc.pb.h"
#include "proto/rpc/channel.h"
#include "spdlog/sinks/base_sink.h"
#include "spdlog/spdlog.h"
#include "tests/coordinator/server/controller_fixture.h"
#include "tests/coordinator/server/temp_database.h"
#include "tests/support/fake_clock.h"

namespace handoff::server {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;

std::string ReadTls(const std::string& name) {
  std::ifstream in(std::string(HANDOFF_TESTDATA_DIR) + "/handoff-tls/" + name);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

rpc::ClientTls ClientTlsFor(const std::string& name) {
  // Dial the IP and verify the name: a DNS name would go through c-ares, whose resolver keeps a
  // small allocation until process exit that LeakSanitizer reports.
  return rpc::ClientTls{ReadTls("ca.crt"), ReadTls(name + ".crt"), ReadTls(name + ".key"),
                        "localhost"};
}

class CoordinatorServerTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_NO_FATAL_FAILURE(StartServer(TestServerOptions())); }

  // Loopback, any free port, the test CA's coordinator certificate.
  static ServerOptions TestServerOptions() {
    ServerOptions server_options;
    server_options.listen = "127.0.0.1:0";
    server_options.ca_pem = ReadTls("ca.crt");
    server_options.cert_pem = ReadTls("coordinator.crt");
    server_options.key_pem = ReadTls("coordinator.key");
    return server_options;
  }
  // A controller of nodes cp-1 and cp-2, served with `server_options`.
  void StartServer(const ServerOptions& server_options) {
    ControllerOptions options;
    options.nodes = {"cp-1", "cp-2"};
    ASSERT_NO_FATAL_FAILURE(
        testing::OpenController(database_, clock_, options, &store_, &controller_));
    ASSERT_NO_FATAL_FAILURE(Serve(server_options));
  }
  // Serves controller_ with `server_options`.
  void Serve(const ServerOptions& server_options) {
    absl::StatusOr<std::unique_ptr<CoordinatorServer>> server =
        CoordinatorServer::Start(*controller_, server_options);
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = *std::move(server);
    address_ = "127.0.0.1:" + std::to_string(server_->port());
  }
  void TearDown() override {
    server_.reset();
    controller_.reset();
    store_.reset();
  }

  grpc::Status CallNodes(const std::string& identity, pb::NodesResponse* response) {
    return CallNodes(ClientTlsFor(identity), response);
  }
  grpc::Status CallNodes(const rpc::ClientTls& tls, pb::NodesResponse* response) {
    auto stub = pb::OperatorService::NewStub(rpc::CreateSecureChannel(address_, tls));
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    return stub->Nodes(&context, pb::NodesRequest(), response);
  }

  // Opens Connect as `identity`, says hello as `node`, and returns the first message or the
  // status the stream ended with.
  grpc::Status Register(const std::string& identity, const std::string& node,
                        pb::CoordinatorMessage* first) {
    return Register(ClientTlsFor(identity), node, first);
  }
  grpc::Status Register(const rpc::ClientTls& tls, const std::string& node,
                        pb::CoordinatorMessage* first) {
    auto stub = pb::AgentService::NewStub(rpc::CreateSecureChannel(address_, tls));
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    auto stream = stub->Connect(&context);
    pb::AgentMessage hello;
    hello.mutable_hello()->set_node_name(node);
    hello.mutable_hello()->mutable_report()->set_state(pb::NODE_STATE_IN_TREE);
    hello.mutable_hello()->mutable_report()->set_healthy(true);
    stream->Write(hello);
    bool got = stream->Read(first);
    stream->WritesDone();
    if (got) {
      pb::CoordinatorMessage ignored;
      while (stream->Read(&ignored)) {
      }
    }
    grpc::Status status = stream->Finish();
    if (got && status.error_code() == grpc::StatusCode::OK) return grpc::Status::OK;
    return got ? grpc::Status::OK : status;
  }

  testing::TempDatabase database_{"server"};
  FakeClock clock_{absl::FromUnixSeconds(1800000000)};
  std::unique_ptr<store::Store> store_;
  std::unique_ptr<RolloutController> controller_;
  std::unique_ptr<CoordinatorServer> server_;
  std::string address_;
};

TEST_F(CoordinatorServerTest, AnOperatorCertificateMayCallTheOperatorApi) {
  pb::NodesResponse nodes;
  grpc::Status status = CallNodes("operator", &nodes);
  ASSERT_TRUE(status.ok()) << status.error_message();
  ASSERT_EQ(nodes.nodes_size(), 2);
  EXPECT_EQ(nodes.nodes(0).name(), "cp-1");
}

TEST_F(CoordinatorServerTest, AnAgentCertificateMayNotCallTheOperatorApi) {
  pb::NodesResponse nodes;
  grpc::Status status = CallNodes("cp-1", &nodes);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_THAT(status.error_message(), HasSubstr("not an operator's"));
}

TEST_F(CoordinatorServerTest, ACertificateFromAnotherCaIsRefusedInTheHandshake) {
  pb::NodesResponse nodes;
  grpc::Status status = CallNodes("rogue-operator", &nodes);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAVAILABLE);
  pb::CoordinatorMessage first;
  EXPECT_EQ(Register("rogue-cp-1", "cp-1", &first).error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_FALSE(controller_->Status().nodes(0).connected());
}

TEST_F(CoordinatorServerTest, AnAgentIsWelcomedAsTheNodeItsCertificateNames) {
  pb::CoordinatorMessage first;
  grpc::Status status = Register("cp-1", "cp-1", &first);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_TRUE(first.has_welcome());
  std::vector<pb::HistoryEntry> connects;
  absl::StatusOr<pb::HistoryResponse> history = controller_->History(0, 0);
  ASSERT_TRUE(history.ok());
  for (const pb::HistoryEntry& entry : history->entries()) {
    if (entry.kind() == "connect") connects.push_back(entry);
  }
  ASSERT_EQ(connects.size(), 1U);
  EXPECT_EQ(connects[0].node(), "cp-1");
}

// A Connect stream of `node`'s certificate (cp-1 unless named), kept open: the hello, the first
// message, then how it ended.
class OpenStream {
 public:
  enum class Welcome { kAwait, kLater };
  OpenStream(const std::string& address, const std::string& instance_id,
             const std::string& node = "cp-1", Welcome welcome = Welcome::kAwait)
      : stub_(pb::AgentService::NewStub(rpc::CreateSecureChannel(address, ClientTlsFor(node)))) {
    context_.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
    stream_ = stub_->Connect(&context_);
    pb::AgentMessage hello;
    hello.mutable_hello()->set_node_name(node);
    hello.mutable_hello()->set_instance_id(instance_id);
    hello.mutable_hello()->mutable_report()->set_state(pb::NODE_STATE_IN_TREE);
    stream_->Write(hello);
    if (welcome == Welcome::kAwait) AwaitWelcome();
  }
  ~OpenStream() {
    if (!finished_) {
      context_.TryCancel();
      (void)End();
    }
  }
  // Reads the first message; true when it is the Welcome.
  bool AwaitWelcome() {
    welcomed_ = stream_->Read(&first_) && first_.has_welcome();
    return welcomed_;
  }
  bool welcomed() const { return welcomed_; }
  bool Send(const pb::AgentMessage& message) { return stream_->Write(message); }
  // Reads to the end of the stream (the server ends it) and returns its status.
  grpc::Status End() {
    pb::CoordinatorMessage ignored;
    while (stream_->Read(&ignored)) {
    }
    finished_ = true;
    return stream_->Finish();
  }

 private:
  std::unique_ptr<pb::AgentService::Stub> stub_;
  grpc::ClientContext context_;
  std::unique_ptr<grpc::ClientReaderWriter<pb::AgentMessage, pb::CoordinatorMessage>> stream_;
  pb::CoordinatorMessage first_;
  bool welcomed_ = false;
  bool finished_ = false;
};

// Over the wire: the second agent process gets FAILED_PRECONDITION, as the contract says, and
// the first keeps its stream; the first agent's own reconnect replaces its stream.
TEST_F(CoordinatorServerTest, ASecondAgentProcessOfANodeIsRefusedItsOwnReconnectIsNot) {
  OpenStream first(address_, "first-agent");
  ASSERT_TRUE(first.welcomed());
  {
    OpenStream second(address_, "second-agent");
    EXPECT_FALSE(second.welcomed());
    grpc::Status refused = second.End();
    EXPECT_EQ(refused.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
    EXPECT_THAT(refused.error_message(),
                HasSubstr("is a second agent process with the same node certificate"));
  }
  EXPECT_TRUE(controller_->Status().nodes(0).connected());
  EXPECT_THAT(controller_->Status().nodes(0).second_agent(), HasSubstr("refused 1 time"));

  OpenStream again(address_, "first-agent");
  EXPECT_TRUE(again.welcomed());
  grpc::Status replaced = first.End();
  EXPECT_EQ(replaced.error_code(), grpc::StatusCode::ABORTED);
  EXPECT_THAT(replaced.error_message(),
              HasSubstr("replaced by a newer stream from the same agent"));
}

// A server of its own, with the limits on agents' streams set for the test.
class StreamLimitsServerTest : public CoordinatorServerTest {
 protected:
  void SetUp() override {}  // each test starts its server with Start
  void Start(absl::Duration hello_deadline, size_t max_streams) {
    ServerOptions server_options = TestServerOptions();
    server_options.hello_deadline = hello_deadline;
    server_options.max_streams_per_identity = max_streams;
    ASSERT_NO_FATAL_FAILURE(StartServer(server_options));
  }
};

// The probe's case: streams that never say hello were kept for as long as the client liked.
TEST_F(StreamLimitsServerTest, AStreamThatSaysNoHelloIsEndedAtTheDeadline) {
  ASSERT_NO_FATAL_FAILURE(Start(absl::Milliseconds(200), 4));
  auto stub = pb::AgentService::NewStub(rpc::CreateSecureChannel(address_, ClientTlsFor("cp-1")));
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
  auto stream = stub->Connect(&context);
  pb::CoordinatorMessage message;
  EXPECT_FALSE(stream->Read(&message));  // until the server ends it
  grpc::Status status = stream->Finish();
  EXPECT_EQ(status.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED);
  EXPECT_EQ(status.error_message(), "no AgentHello within the hello deadline");
}

// A certificate that holds its streams gets no more; another certificate still connects.
TEST_F(StreamLimitsServerTest, StreamsBeyondTheLimitOfACertificateAreRefused) {
  ASSERT_NO_FATAL_FAILURE(Start(absl::Seconds(30), 1));
  OpenStream held(address_, "the-agent");
  ASSERT_TRUE(held.welcomed());
  OpenStream more(address_, "the-agent");
  EXPECT_FALSE(more.welcomed());
  grpc::Status refused = more.End();
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_THAT(refused.error_message(), HasSubstr("certificate cp-1 already has 1 streams open"));
  EXPECT_TRUE(controller_->Status().nodes(0).connected());

  auto stub = pb::AgentService::NewStub(rpc::CreateSecureChannel(address_, ClientTlsFor("cp-2")));
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  auto stream = stub->Connect(&context);
  pb::AgentMessage hello;
  hello.mutable_hello()->set_node_name("cp-2");
  hello.mutable_hello()->mutable_report()->set_state(pb::NODE_STATE_IN_TREE);
  ASSERT_TRUE(stream->Write(hello));
  pb::CoordinatorMessage welcome;
  ASSERT_TRUE(stream->Read(&welcome));
  EXPECT_TRUE(welcome.has_welcome());
  context.TryCancel();
  (void)stream->Finish();
}

TEST_F(CoordinatorServerTest, AnAgentClaimingAnotherNodeIsRefused) {
  pb::CoordinatorMessage first;
  grpc::Status status = Register("cp-1", "cp-2", &first);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_THAT(status.error_message(), HasSubstr("may register only as node cp-1"));
  EXPECT_FALSE(controller_->Status().nodes(1).connected());
}

TEST_F(CoordinatorServerTest, AnOperatorCertificateCannotRegisterAsAnAgent) {
  pb::CoordinatorMessage first;
  grpc::Status status = Register("operator", "alice", &first);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::PERMISSION_DENIED);
}

TEST_F(CoordinatorServerTest, ACertificateInBothOrganisationsIsRefusedForBothRoles) {
  // Signed by the test CA, so the handshake passes; only the authorisation can refuse it.
  pki::CertificateRequest request;
  request.common_name = "cp-1";
  request.organizations = {"handoff:agents", "handoff:operators"};
  request.client = true;
  absl::StatusOr<pki::KeyPair> both = pki::IssueCertificate(
      pki::KeyPair{ReadTls("ca.crt"), ReadTls("ca.key")}, request, absl::Now());
  ASSERT_TRUE(both.ok()) << both.status();
  const rpc::ClientTls tls{ReadTls("ca.crt"), both->certificate_pem, both->private_key_pem,
                           "localhost"};

  pb::NodesResponse nodes;
  grpc::Status as_operator = CallNodes(tls, &nodes);
  EXPECT_EQ(as_operator.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_THAT(as_operator.error_message(),
              AllOf(HasSubstr("CN=cp-1"), HasSubstr("in both O=handoff:agents and "
                                                    "O=handoff:operators"),
                    HasSubstr("refused for both")));

  pb::CoordinatorMessage first;
  grpc::Status as_agent = Register(tls, "cp-1", &first);
  EXPECT_EQ(as_agent.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_THAT(as_agent.error_message(), HasSubstr("in both O=handoff:agents"));
  EXPECT_FALSE(controller_->Status().nodes(0).connected());
}

TEST_F(CoordinatorServerTest, StatusWithoutWatchSendsOneStatusAndEnds) {
  auto channel = rpc::CreateSecureChannel(address_, ClientTlsFor("operator"));
  auto stub = pb::OperatorService::NewStub(channel);
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  std::unique_ptr<grpc::ClientReader<pb::RolloutStatus>> reader =
      stub->Status(&context, pb::StatusRequest());
  pb::RolloutStatus status;
  ASSERT_TRUE(reader->Read(&status));
  EXPECT_EQ(status.phase(), pb::RolloutStatus::IDLE);
  EXPECT_FALSE(reader->Read(&status));
  EXPECT_TRUE(reader->Finish().ok());
}

TEST_F(CoordinatorServerTest, AWatchSeesTheRolloutStart) {
  auto stub =
      pb::OperatorService::NewStub(rpc::CreateSecureChannel(address_, ClientTlsFor("operator")));
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
  pb::StatusRequest request;
  request.set_watch(true);
  std::unique_ptr<grpc::ClientReader<pb::RolloutStatus>> reader = stub->Status(&context, request);
  pb::RolloutStatus status;
  ASSERT_TRUE(reader->Read(&status));
  EXPECT_EQ(status.phase(), pb::RolloutStatus::IDLE);
  // No agent is connected here: the preflight would refuse.
  ASSERT_TRUE(controller_->Start("alice", NodeState::kMigrated, {"all"}).ok());
  ASSERT_TRUE(reader->Read(&status));
  EXPECT_EQ(status.goal(), pb::NODE_STATE_MIGRATED);
  context.TryCancel();
  while (reader->Read(&status)) {
  }
  EXPECT_EQ(reader->Finish().error_code(), grpc::StatusCode::CANCELLED);
}

TEST_F(CoordinatorServerTest, ShutdownEndsEveryWatchAtOnceWithUnavailable) {
  auto stub =
      pb::OperatorService::NewStub(rpc::CreateSecureChannel(address_, ClientTlsFor("operator")));
  pb::StatusRequest request;
  request.set_watch(true);
  std::vector<std::unique_ptr<grpc::ClientContext>> contexts;
  std::vector<std::unique_ptr<grpc::ClientReader<pb::RolloutStatus>>> readers;
  for (int i = 0; i < 2; ++i) {
    contexts.push_back(std::make_unique<grpc::ClientContext>());
    contexts.back()->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
    readers.push_back(stub->Status(contexts.back().get(), request));
    pb::RolloutStatus first;
    ASSERT_TRUE(readers.back()->Read(&first));  // the watch is open on the server
  }
  // A grace far longer than the test's timeout: the watches must not hold the shutdown.
  std::thread shutdown([this] { server_->Shutdown(absl::Hours(1)); });
  for (auto& reader : readers) {
    pb::RolloutStatus status;
    while (reader->Read(&status)) {
    }
    const grpc::Status ended = reader->Finish();
    EXPECT_EQ(ended.error_code(), grpc::StatusCode::UNAVAILABLE);
    EXPECT_EQ(ended.error_message(), "the coordinator is shutting down");
  }
  shutdown.join();
}

// The coordinator's log, as a test reads it.
class CapturingSink : public spdlog::sinks::base_sink<std::mutex> {
 public:
  std::string text() {
    std::lock_guard<std::mutex> lock(mutex_);
    return text_;
  }

 protected:
  void sink_it_(const spdlog::details::log_msg& message) override {
    text_.append(message.payload.data(), message.payload.size());
    text_ += "\n";
  }
  void flush_() override {}

 private:
  std::string text_;
};

// Client certificates that are wrong in time or origin, made for this test by common/pki
// around the wall clock (the TLS stacks read it): the handshake refuses them, and the
// coordinator's log says why.
class ClientCertificateTest : public ::testing::Test {
 protected:
  void SetUp() override {
    now_ = absl::Now();
    absl::StatusOr<pki::KeyPair> ca =
        pki::CreateCertificateAuthority("handoff-ca", now_ - absl::Hours(48), absl::Hours(240));
    ASSERT_TRUE(ca.ok()) << ca.status();
    ca_ = *ca;
    pki::CertificateRequest server;
    server.common_name = "handoff-coordinator";
    server.ip_addresses = {"127.0.0.1"};
    server.server = true;
    const pki::KeyPair coordinator = Issue(ca_, server, now_);

    ControllerOptions options;
    options.nodes = {"cp-1"};
    ASSERT_NO_FATAL_FAILURE(
        testing::OpenController(database_, clock_, options, &store_, &controller_));

    previous_logger_ = spdlog::default_logger();
    spdlog::set_default_logger(std::make_shared<spdlog::logger>("test", sink_));
    ServerOptions server_options;
    server_options.listen = "127.0.0.1:0";
    server_options.ca_pem = ca_.certificate_pem;
    server_options.cert_pem = coordinator.certificate_pem;
    server_options.key_pem = coordinator.private_key_pem;
    absl::StatusOr<std::unique_ptr<CoordinatorServer>> started =
        CoordinatorServer::Start(*controller_, server_options);
    ASSERT_TRUE(started.ok()) << started.status();
    server_ = *std::move(started);
    address_ = "127.0.0.1:" + std::to_string(server_->port());
  }

  void TearDown() override {
    server_.reset();
    if (previous_logger_) spdlog::set_default_logger(previous_logger_);
    controller_.reset();
    store_.reset();
  }

  static pki::KeyPair Issue(const pki::KeyPair& ca, const pki::CertificateRequest& request,
                            absl::Time at) {
    absl::StatusOr<pki::KeyPair> issued = pki::IssueCertificate(ca, request, at);
    EXPECT_TRUE(issued.ok()) << issued.status();
    return issued.ok() ? *issued : pki::KeyPair{};
  }

  // An agent certificate for cp-1 issued by `ca` as if at `at`, valid for `validity`.
  static pki::KeyPair Agent(const pki::KeyPair& ca, absl::Time at, absl::Duration validity) {
    pki::CertificateRequest request;
    request.common_name = "cp-1";
    request.organizations = {"handoff:agents"};
    request.client = true;
    request.validity = validity;
    return Issue(ca, request, at);
  }

  grpc::Status Register(const pki::KeyPair& agent) {
    rpc::ClientTls tls{ca_.certificate_pem, agent.certificate_pem, agent.private_key_pem, ""};
    auto stub = pb::AgentService::NewStub(rpc::CreateSecureChannel(address_, tls));
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    auto stream = stub->Connect(&context);
    pb::AgentMessage hello;
    hello.mutable_hello()->set_node_name("cp-1");
    hello.mutable_hello()->mutable_report()->set_state(pb::NODE_STATE_IN_TREE);
    stream->Write(hello);
    pb::CoordinatorMessage first;
    const bool welcomed = stream->Read(&first) && first.has_welcome();
    context.TryCancel();
    grpc::Status status = stream->Finish();
    return welcomed ? grpc::Status::OK : status;
  }

  absl::Time now_;
  pki::KeyPair ca_;
  testing::TempDatabase database_{"server"};
  FakeClock clock_{absl::FromUnixSeconds(1800000000)};
  std::unique_ptr<store::Store> store_;
  std::unique_ptr<RolloutController> controller_;
  std::shared_ptr<spdlog::logger> previous_logger_;
  std::shared_ptr<CapturingSink> sink_ = std::make_shared<CapturingSink>();
  std::unique_ptr<CoordinatorServer> server_;
  std::string address_;
};

TEST_F(ClientCertificateTest, AValidCertificateIsWelcomed) {
  grpc::Status status = Register(Agent(ca_, now_, absl::Hours(1)));
  EXPECT_TRUE(status.ok()) << status.error_message();
  EXPECT_THAT(sink_->text(), Not(HasSubstr("refused")));
}

TEST_F(ClientCertificateTest, AnExpiredCertificateIsRefusedAndTheLogSaysWhen) {
  const pki::KeyPair expired = Agent(ca_, now_ - absl::Hours(24), absl::Hours(1));
  grpc::Status status = Register(expired);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAVAILABLE) << status.error_message();
  absl::StatusOr<pki::CertificateInfo> info = pki::InspectCertificate(expired.certificate_pem);
  ASSERT_TRUE(info.ok());
  EXPECT_THAT(sink_->text(),
              AllOf(HasSubstr("refused a client's TLS certificate: the certificate CN=cp-1"),
                    HasSubstr("certificate has expired (CN=cp-1 is valid from " +
                              absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", info->not_before,
                                               absl::UTCTimeZone()) +
                              " to " +
                              absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", info->not_after,
                                               absl::UTCTimeZone()))));
  EXPECT_FALSE(controller_->Status().nodes(0).connected());
}

TEST_F(ClientCertificateTest, ACertificateNotYetValidIsRefusedAndTheLogSaysSo) {
  grpc::Status status = Register(Agent(ca_, now_ + absl::Hours(24), absl::Hours(1)));
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAVAILABLE) << status.error_message();
  EXPECT_THAT(sink_->text(), HasSubstr("certificate is not yet valid (CN=cp-1 is valid from"));
}

TEST_F(ClientCertificateTest, ACertificateOfAnotherCaIsRefusedAndTheLogNamesItsIssuer) {
  absl::StatusOr<pki::KeyPair> other =
      pki::CreateCertificateAuthority("someone-else-ca", now_, absl::Hours(24));
  ASSERT_TRUE(other.ok()) << other.status();
  grpc::Status status = Register(Agent(*other, now_, absl::Hours(1)));
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAVAILABLE) << status.error_message();
  EXPECT_THAT(sink_->text(), HasSubstr("was issued by CN=someone-else-ca, not by this CA"));
}

TEST_F(ClientCertificateTest, AServerCertificateIsNoClientCertificate) {
  pki::CertificateRequest request;
  request.common_name = "cp-1";
  request.organizations = {"handoff:agents"};
  request.server = true;
  grpc::Status status = Register(Issue(ca_, request, now_));
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAVAILABLE) << status.error_message();
  EXPECT_THAT(sink_->text(), HasSubstr("is not for TLS clients"));
}

TEST(CoordinatorServerStartTest, RefusesAKeyThatIsNotTheCertificates) {
  FakeClock clock;
  testing::TempDatabase database("server");
  std::unique_ptr<store::Store> store = database.Open();
  ASSERT_NE(store, nullptr);
  ControllerOptions options;
  options.nodes = {"cp-1"};
  absl::StatusOr<std::unique_ptr<RolloutController>> controller =
      RolloutController::Create(*store, clock, options);
  ASSERT_TRUE(controller.ok()) << controller.status();
  ServerOptions server_options;
  server_options.listen = "127.0.0.1:0";
  server_options.ca_pem = ReadTls("ca.crt");
  server_options.cert_pem = ReadTls("coordinator.crt");
  server_options.key_pem = ReadTls("cp-1.key");
  absl::StatusOr<std::unique_ptr<CoordinatorServer>> server =
      CoordinatorServer::Start(**controller, server_options);
  EXPECT_EQ(server.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(server.status().message(), HasSubstr("does not belong to the certificate"));
}

// A store whose commits wait while it is shut, as on a disk whose fsync stalls for as long as the
// test holds it.
class GatedStore : public store::Store {
 public:
  explicit GatedStore(std::unique_ptr<store::Store> inner) : inner_(std::move(inner)) {}
  absl::StatusOr<std::optional<store::StoredRollout>> Load() override { return inner_->Load(); }
  absl::StatusOr<std::vector<store::StoredWorker>> LoadWorkers() override {
    return inner_->LoadWorkers();
  }
  absl::StatusOr<std::vector<store::HistoryEntry>> Commit(
      const store::StoredRollout& rollout, const std::vector<store::HistoryEntry>& history,
      const store::WorkerChanges& workers) override {
    {
      std::unique_lock<std::mutex> lock(mu_);
      if (!open_ && Names(history, shut_for_)) {
        ++held_;
        changed_.notify_all();
        changed_.wait(lock, [this] { return open_; });
        --held_;
      }
    }
    return inner_->Commit(rollout, history, workers);
  }
  absl::StatusOr<std::vector<store::HistoryEntry>> History(int64_t after_sequence,
                                                           int limit) override {
    return inner_->History(after_sequence, limit);
  }
  absl::Status ForgetHistoryThrough(int64_t through) override {
    return inner_->ForgetHistoryThrough(through);
  }

  // Holds every commit with an entry of `node` until Open(); other nodes' commits go through (a
  // node's earlier commits may still be on their way when the gate shuts).
  void ShutFor(const std::string& node) {
    std::lock_guard<std::mutex> lock(mu_);
    open_ = false;
    shut_for_ = node;
  }
  void Open() {
    std::lock_guard<std::mutex> lock(mu_);
    open_ = true;
    changed_.notify_all();
  }
  // Whether a commit is held at the gate within `timeout`.
  bool AwaitHeldCommit(absl::Duration timeout) {
    std::unique_lock<std::mutex> lock(mu_);
    return changed_.wait_for(lock, absl::ToChronoNanoseconds(timeout),
                             [this] { return held_ > 0; });
  }
  int held() {
    std::lock_guard<std::mutex> lock(mu_);
    return held_;
  }

 private:
  static bool Names(const std::vector<store::HistoryEntry>& history, const std::string& node) {
    return std::any_of(history.begin(), history.end(),
                       [&](const store::HistoryEntry& entry) { return entry.node == node; });
  }

  const std::unique_ptr<store::Store> inner_;
  std::mutex mu_;
  std::condition_variable changed_;
  bool open_ = true;
  std::string shut_for_;
  int held_ = 0;
};

// The coordinator of cp-1 and cp-2 on a store that can stall, with the double-run detector, both
// on one controller thread as the daemon has them.
class StallingStoreServerTest : public CoordinatorServerTest {
 protected:
  void SetUp() override {
    std::unique_ptr<store::Store> inner = database_.Open();
    ASSERT_NE(inner, nullptr);
    auto gated = std::make_unique<GatedStore>(std::move(inner));
    gate_ = gated.get();
    store_ = std::move(gated);
    ControllerOptions options;
    options.nodes = {"cp-1", "cp-2"};
    absl::StatusOr<std::unique_ptr<RolloutController>> created =
        RolloutController::Create(*store_, clock_, options);
    ASSERT_TRUE(created.ok()) << created.status();
    controller_ = *std::move(created);
    thread_ = std::make_unique<ControllerThread>();
    DetectorOptions detector;
    detector.nodes = options.nodes;
    run_watch_ = std::make_unique<RunWatch>(*controller_, detector, nullptr, thread_.get());
    ServerOptions server_options = TestServerOptions();
    server_options.run_watch = run_watch_.get();
    server_options.controller_thread = thread_.get();
    ASSERT_NO_FATAL_FAILURE(Serve(server_options));
  }
  void TearDown() override {
    if (gate_ != nullptr) gate_->Open();
    server_.reset();
    run_watch_.reset();
    thread_.reset();
    CoordinatorServerTest::TearDown();
  }

  // One `status`, as `handoffctl status` asks for it, with a deadline of 10 s.
  grpc::Status ReadStatus(pb::RolloutStatus* status) {
    auto stub =
        pb::OperatorService::NewStub(rpc::CreateSecureChannel(address_, ClientTlsFor("operator")));
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    std::unique_ptr<grpc::ClientReader<pb::RolloutStatus>> reader =
        stub->Status(&context, pb::StatusRequest());
    const bool read = reader->Read(status);
    grpc::Status finished = reader->Finish();
    if (finished.ok() && !read) return grpc::Status(grpc::StatusCode::INTERNAL, "no status");
    return finished;
  }

  GatedStore* gate_ = nullptr;
  std::unique_ptr<ControllerThread> thread_;
  std::unique_ptr<RunWatch> run_watch_;
};

// The reactors hand the controller its work and return: while cp-1's hello waits on a commit that
// does not end, cp-2's stream still delivers its samples to the double-run detector, and `status`
// still answers, showing them. Once the gate opens, cp-1's connect is committed.
TEST_F(StallingStoreServerTest, ACommitThatDoesNotEndDelaysNeitherAnotherAgentsStreamNorStatus) {
  OpenStream cp2(address_, "agent-of-cp-2", "cp-2");
  ASSERT_TRUE(cp2.welcomed());

  // cp-2's own "connect" entry is committed after its welcome: the gate lets that one through.
  gate_->ShutFor("cp-1");
  OpenStream cp1(address_, "agent-of-cp-1", "cp-1", OpenStream::Welcome::kLater);
  // Its "connect" entry is committed on the controller's thread: that commit is held.
  ASSERT_TRUE(gate_->AwaitHeldCommit(absl::Seconds(10)));

  pb::AgentMessage samples;
  *samples.mutable_controllers() =
      testing::Sample(absl::ToUnixMillis(absl::Now()), "cloud-controller-manager", 4242, true);
  ASSERT_TRUE(cp2.Send(samples));
  // The sample reaches the detector on the reactor; a status read after that shows it. Each read
  // is bounded by its deadline: one that waited on the controller would fail with
  // DEADLINE_EXCEEDED while the commit is held.
  bool shown = false;
  const absl::Time give_up = absl::Now() + absl::Seconds(10);
  while (!shown && absl::Now() < give_up) {
    pb::RolloutStatus status;
    grpc::Status read = ReadStatus(&status);
    ASSERT_TRUE(read.ok()) << read.error_message();
    for (const pb::CloudControllerView& view : status.cloud_controllers()) {
      for (const pb::ControllerRunner& runner : view.runners()) {
        if (view.name() == "service" && runner.node() == "cp-2" && runner.pid() == 4242) {
          shown = true;
        }
      }
    }
  }
  EXPECT_TRUE(shown) << "cp-2's sample never reached the status while cp-1's commit was held";
  EXPECT_EQ(gate_->held(), 1) << "the commit ended early: the test proved nothing";

  gate_->Open();
  EXPECT_TRUE(cp1.AwaitWelcome());
  // The thread runs its work in order: once this has run, cp-1's hello has been handled.
  auto drained = std::make_shared<std::promise<void>>();
  thread_->Post([drained] { drained->set_value(); });
  ASSERT_EQ(drained->get_future().wait_for(std::chrono::seconds(10)), std::future_status::ready);
  absl::StatusOr<std::vector<store::HistoryEntry>> history = store_->History(0, 100);
  ASSERT_TRUE(history.ok()) << history.status();
  EXPECT_TRUE(std::any_of(history->begin(), history->end(), [](const store::HistoryEntry& entry) {
    return entry.kind == "connect" && entry.node == "cp-1";
  }));
}

}  // namespace
}  // namespace handoff::server
