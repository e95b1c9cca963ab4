// AgentClient against an in-process AgentService on 127.0.0.1:0 that, like the coordinator,
// requires and verifies client certificates from the handoff test CA.
#include "agent/daemon/agent_client.h"

#include <atomic>
#include <chrono>
#include <functional>
#include <optional>
#include <thread>

#include "agent/apply/journal.h"
#include "gmock/gmock.h"
#include "google/protobuf/util/message_differencer.h"
#include "grpcpp/server.h"
#include "gtest/gtest.h"
#include "proto/rpc/channel.h"
#include "spdlog/sinks/base_sink.h"
#include "tests/agent/daemon/daemon_fixture.h"
#include "tests/agent/daemon/fake_coordinator.h"
#include "tests/support/fake_clock.h"

namespace handoff {
namespace {

using ::google::protobuf::util::MessageDifferencer;
using testing::DaemonNodeTest;
using testing::FakeCoordinator;
using ::testing::AllOf;
using ::testing::HasSubstr;
using testing::kPatience;
using testing::MoveCommand;
using testing::ReadTestdata;
using testing::ReportCommand;

// The client's log, which a test can wait on.
class CapturingSink : public spdlog::sinks::base_sink<spdlog::details::null_mutex> {
 public:
  bool WaitFor(const std::string& text) {
    std::unique_lock<std::mutex> lock(mutex_);
    return changed_.wait_for(lock, kPatience,
                             [&] { return text_.find(text) != std::string::npos; });
  }
  std::string text() {
    std::lock_guard<std::mutex> lock(mutex_);
    return text_;
  }

 protected:
  void sink_it_(const spdlog::details::log_msg& message) override {
    std::lock_guard<std::mutex> lock(mutex_);
    text_.append(message.payload.data(), message.payload.size());
    text_ += "\n";
    changed_.notify_all();
  }
  void flush_() override {}

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  std::string text_;
};

size_t CountResults(const std::vector<v1::CommandResult>& results, const std::string& id) {
  return static_cast<size_t>(
      std::count_if(results.begin(), results.end(),
                    [&](const v1::CommandResult& result) { return result.command_id() == id; }));
}

class AgentClientTest : public DaemonNodeTest {
 protected:
  // What the sampler thread calls to recheck an unhealthy node; unset: never.
  std::function<void(const std::function<void(const v1::NodeReport&)>&)> recheck_report_;

  void SetUp() override {
    server_ = coordinator_.Start(&port_);
    ASSERT_NE(server_, nullptr);
    agent_ = OpenAgent();
    ASSERT_NE(agent_, nullptr);
  }

  void TearDown() override {
    StopClient();
    coordinator_.Stop();
    server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(5));
  }

  // Starts the agent's client with the certificate of `identity` ("cp-1", "rogue-cp-1"),
  // trusting `ca` for the coordinator's.
  void StartClient(const std::string& identity = "cp-1", const std::string& ca = "ca.crt",
                   std::function<absl::Status()> check_credentials = nullptr,
                   std::function<v1::ControllerSample()> sample_controllers = nullptr) {
    rpc::ClientTls tls;
    tls.ca_pem = ReadTestdata("handoff-tls/" + ca);
    tls.cert_pem = ReadTestdata("handoff-tls/" + identity + ".crt");
    tls.key_pem = ReadTestdata("handoff-tls/" + identity + ".key");
    const std::string address = "127.0.0.1:" + std::to_string(port_);
    AgentClientOptions options;
    options.coordinator = address;
    options.jitter_seed = 42;
    options.on_stream_end = [this](const grpc::Status& status) {
      std::lock_guard<std::mutex> lock(mutex_);
      stream_ends_.push_back(status);
      changed_.notify_all();
    };
    options.check_credentials = std::move(check_credentials);
    options.sample_controllers = std::move(sample_controllers);
    options.recheck_report = recheck_report_;
    options.sample_interval = absl::Milliseconds(10);
    options.certificate_description = identity + ".crt: CN=cp-1";
    options.ca_description = ca;
    logger_ = std::make_shared<spdlog::logger>("test", client_log_);
    client_ = std::make_unique<AgentClient>(rpc::CreateSecureChannel(address, tls), *agent_,
                                            reconnect_clock_, logger_, options);
    runner_ = std::thread([this] {
      absl::Status ended = client_->Run();
      std::lock_guard<std::mutex> lock(mutex_);
      run_ended_ = std::move(ended);
      changed_.notify_all();
    });
  }

  // The status Run returned, once it has (without a Shutdown).
  std::optional<absl::Status> WaitForRunToEnd() {
    std::unique_lock<std::mutex> lock(mutex_);
    if (!changed_.wait_for(lock, kPatience, [&] { return run_ended_.has_value(); })) {
      return std::nullopt;
    }
    return run_ended_;
  }

  void StopClient() {
    if (!client_) return;
    client_->Shutdown();
    runner_.join();
    client_.reset();
  }

  bool WaitForStreamEnds(size_t count) {
    std::unique_lock<std::mutex> lock(mutex_);
    return changed_.wait_for(lock, kPatience, [&] { return stream_ends_.size() >= count; });
  }
  std::vector<grpc::Status> stream_ends() {
    std::lock_guard<std::mutex> lock(mutex_);
    return stream_ends_;
  }

  FakeCoordinator coordinator_;
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
  std::unique_ptr<NodeAgent> agent_;
  // The clock the client waits on between reconnects (apart from the agent's).
  FakeClock reconnect_clock_;
  std::shared_ptr<CapturingSink> client_log_ = std::make_shared<CapturingSink>();
  std::shared_ptr<spdlog::logger> logger_;
  std::unique_ptr<AgentClient> client_;
  std::thread runner_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<grpc::Status> stream_ends_;
  std::optional<absl::Status> run_ended_;
};

TEST_F(AgentClientTest, HelloComesFirstWithTheNodeNameOfTheCertificate) {
  StartClient();
  ASSERT_TRUE(
      coordinator_.WaitFor([](const auto& hellos, const auto&) { return !hellos.empty(); }));
  const FakeCoordinator::Hello first = coordinator_.hellos().front();
  EXPECT_EQ(first.hello.node_name(), "cp-1");
  EXPECT_EQ(first.peer_common_name, "cp-1");
  EXPECT_EQ(first.hello.agent_version(), "0.1.0");
  EXPECT_TRUE(first.hello.verifies());
  EXPECT_EQ(first.hello.report().state(), v1::NODE_STATE_IN_TREE);
  EXPECT_TRUE(first.hello.report().healthy());
}

TEST_F(AgentClientTest, ControllerSamplesGoToTheCoordinatorAlsoWhileAMoveRuns) {
  std::atomic<int64_t> taken{0};
  StartClient("cp-1", "ca.crt", nullptr, [&taken] {
    v1::ControllerSample sample;
    sample.set_observed_unix_ms(++taken);
    v1::ManagerControllers* manager = sample.add_managers();
    manager->set_component("kube-controller-manager");
    manager->set_answered(true);
    manager->add_controllers("service");
    return sample;
  });
  ASSERT_TRUE(
      coordinator_.WaitFor([](const auto& hellos, const auto&) { return !hellos.empty(); }));
  // A move held in its verification: the sampler does not wait for it.
  health_.Arm();
  coordinator_.Send(MoveCommand("r1-1", v1::NODE_STATE_IN_TREE, v1::NODE_STATE_PREPARED));
  ASSERT_TRUE(health_.WaitUntilReached());
  const size_t before = coordinator_.WaitForSamples(1).size();
  std::vector<v1::ControllerSample> samples = coordinator_.WaitForSamples(before + 3);
  health_.Release();
  ASSERT_GE(samples.size(), before + 3);
  EXPECT_EQ(samples.back().managers(0).controllers(0), "service");
  for (size_t i = 1; i < samples.size(); ++i) {
    EXPECT_LT(samples[i - 1].observed_unix_ms(), samples[i].observed_unix_ms());
  }
  ASSERT_TRUE(coordinator_.WaitFor(
      [](const auto&, const auto& results) { return CountResults(results, "r1-1") == 1; }));
}

TEST_F(AgentClientTest, ANodeThatBecomesHealthyIsReportedWithoutACommand) {
  // NodeAgent::RecheckUnhealthy's answers (node_agent_test) as the sampler thread gets them: the
  // first looks find nothing new, then the node reads healthy once.
  std::atomic<int> looks{0};
  recheck_report_ = [&looks](const std::function<void(const v1::NodeReport&)>& send) {
    if (++looks != 3) return;
    v1::NodeReport report;
    report.set_state(v1::NODE_STATE_IN_TREE);
    report.set_healthy(true);
    send(report);
  };
  StartClient();
  const std::vector<v1::NodeReport> reports = coordinator_.WaitForReports(1);
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_TRUE(reports[0].healthy()) << reports[0].health_detail();
  EXPECT_EQ(reports[0].state(), v1::NODE_STATE_IN_TREE);
}

TEST_F(AgentClientTest, ACommandSentTwiceIsCarriedOutOnce) {
  StartClient();
  ASSERT_TRUE(
      coordinator_.WaitFor([](const auto& hellos, const auto&) { return !hellos.empty(); }));
  const v1::Command move = MoveCommand("r1-1", v1::NODE_STATE_IN_TREE, v1::NODE_STATE_PREPARED);
  health_.Arm();
  coordinator_.Send(move);
  ASSERT_TRUE(health_.WaitUntilReached());
  coordinator_.Send(move);  // while it runs: answered once, when done
  ASSERT_TRUE(client_log_->WaitFor("command r1-1 is already running"));
  health_.Release();
  ASSERT_TRUE(coordinator_.WaitFor(
      [](const auto&, const auto& results) { return CountResults(results, "r1-1") >= 1; }));
  coordinator_.Send(move);  // finished: the stored result again
  coordinator_.Send(ReportCommand("r1-2"));
  ASSERT_TRUE(coordinator_.WaitFor(
      [](const auto&, const auto& results) { return CountResults(results, "r1-2") == 1; }));

  const std::vector<v1::CommandResult> results = coordinator_.results();
  ASSERT_EQ(CountResults(results, "r1-1"), 2u);
  EXPECT_EQ(results[0].outcome(), v1::CommandResult::SUCCEEDED) << results[0].message();
  EXPECT_TRUE(MessageDifferencer::Equals(results[0], results[1]));
  EXPECT_EQ(results[2].command_id(), "r1-2");
  EXPECT_EQ(results[2].report().state(), v1::NODE_STATE_PREPARED);
  absl::StatusOr<std::vector<Journal>> journals = ListTransactions(fs_, "/var/lib/handoff");
  ASSERT_TRUE(journals.ok());
  EXPECT_EQ(journals->size(), 1u);  // one transaction: the move ran once
}

TEST_F(AgentClientTest, CommandsRunOneAtATimeInTheOrderTheyArrived) {
  StartClient();
  ASSERT_TRUE(
      coordinator_.WaitFor([](const auto& hellos, const auto&) { return !hellos.empty(); }));
  health_.Arm();
  coordinator_.Send(MoveCommand("r1-1", v1::NODE_STATE_IN_TREE, v1::NODE_STATE_PREPARED));
  ASSERT_TRUE(health_.WaitUntilReached());
  // The reader keeps reading while the move runs; these wait their turn.
  coordinator_.Send(ReportCommand("r1-2"));
  coordinator_.Send(MoveCommand("r1-3", v1::NODE_STATE_PREPARED, v1::NODE_STATE_MIGRATED));
  ASSERT_TRUE(
      client_log_->WaitFor("command r1-3 (move NODE_STATE_PREPARED -> "
                           "NODE_STATE_MIGRATED) accepted"));
  health_.Release();
  ASSERT_TRUE(coordinator_.WaitFor(
      [](const auto&, const auto& results) { return CountResults(results, "r1-3") == 1; }));
  const std::vector<v1::CommandResult> results = coordinator_.results();
  ASSERT_EQ(results.size(), 3u);
  EXPECT_EQ(results[0].command_id(), "r1-1");
  EXPECT_EQ(results[1].command_id(), "r1-2");
  EXPECT_EQ(results[1].report().state(), v1::NODE_STATE_PREPARED);  // after the move
  EXPECT_EQ(results[2].command_id(), "r1-3");
  EXPECT_EQ(results[2].outcome(), v1::CommandResult::SUCCEEDED) << results[2].message();
  EXPECT_EQ(results[2].report().state(), v1::NODE_STATE_MIGRATED);
}

TEST_F(AgentClientTest, AfterTheStreamEndsMidMoveTheNextHelloCarriesTheResult) {
  // While the move runs, the coordinator turns the agent away; once it is done, it lets it in.
  coordinator_.Admit([](const v1::AgentHello& hello) {
    if (!hello.running_command_id().empty()) {
      return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION, "node cp-1 is still connected");
    }
    return grpc::Status::OK;
  });
  StartClient();
  ASSERT_TRUE(
      coordinator_.WaitFor([](const auto& hellos, const auto&) { return !hellos.empty(); }));
  health_.Arm();
  coordinator_.Send(MoveCommand("r1-1", v1::NODE_STATE_IN_TREE, v1::NODE_STATE_PREPARED));
  ASSERT_TRUE(health_.WaitUntilReached());  // the move is mid-transaction
  coordinator_.EndStream();
  ASSERT_TRUE(
      coordinator_.WaitFor([](const auto& hellos, const auto&) { return hellos.size() >= 2; }));
  EXPECT_EQ(coordinator_.hellos()[1].hello.running_command_id(), "r1-1");
  health_.Release();

  auto carries_result = [](const FakeCoordinator::Hello& hello) {
    for (const v1::CommandResult& result : hello.hello.recent_results()) {
      if (result.command_id() == "r1-1") return true;
    }
    return false;
  };
  ASSERT_TRUE(coordinator_.WaitFor([&](const auto& hellos, const auto&) {
    return std::any_of(hellos.begin(), hellos.end(), carries_result);
  }));
  const std::vector<FakeCoordinator::Hello> hellos = coordinator_.hellos();
  const auto with_result = std::find_if(hellos.begin(), hellos.end(), carries_result);
  EXPECT_EQ(with_result->hello.running_command_id(), "");
  EXPECT_EQ(with_result->hello.report().state(), v1::NODE_STATE_PREPARED);
  const v1::CommandResult& result = with_result->hello.recent_results(0);
  EXPECT_EQ(result.outcome(), v1::CommandResult::SUCCEEDED) << result.message();
  // Every turn-away was a stream end, retried after a backoff wait, and logged with the reason.
  EXPECT_GE(reconnect_clock_.sleeps().size(), 2u);
  for (absl::Duration wait : reconnect_clock_.sleeps()) {
    EXPECT_GE(wait, absl::Milliseconds(125));
    EXPECT_LE(wait, absl::Seconds(30));
  }
  StopClient();
  EXPECT_THAT(client_log_->text(),
              HasSubstr("refused node cp-1 (FAILED_PRECONDITION): node cp-1 is still connected"));
}

TEST_F(AgentClientTest, RefusalsAreRetriedWithAGrowingBackoffThatResetsAfterAWelcome) {
  int turned_away = 0;
  coordinator_.Admit([&](const v1::AgentHello&) {
    if (turned_away++ < 4) {
      return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                          "node cp-1 is not one of this rollout's nodes");
    }
    return grpc::Status::OK;
  });
  StartClient();
  ASSERT_TRUE(
      coordinator_.WaitFor([](const auto& hellos, const auto&) { return hellos.size() >= 5; }));
  coordinator_.Send(ReportCommand("r1-1"));  // answered: the agent was welcomed
  ASSERT_TRUE(coordinator_.WaitFor(
      [](const auto&, const auto& results) { return CountResults(results, "r1-1") == 1; }));
  coordinator_.EndStream();  // after the welcome: the next wait starts small again
  ASSERT_TRUE(
      coordinator_.WaitFor([](const auto& hellos, const auto&) { return hellos.size() >= 6; }));
  const std::vector<absl::Duration> sleeps = reconnect_clock_.sleeps();
  ASSERT_GE(sleeps.size(), 5u);
  for (size_t i = 1; i < 4; ++i) EXPECT_GT(sleeps[i], sleeps[i - 1]) << i;
  EXPECT_GE(sleeps[3], absl::Seconds(1));
  EXPECT_LT(sleeps[4], absl::Milliseconds(250));
  const std::vector<grpc::Status> ends = stream_ends();
  ASSERT_GE(ends.size(), 4u);
  EXPECT_EQ(ends[0].error_code(), grpc::StatusCode::FAILED_PRECONDITION);
}

// The coordinator judges the certificate alone: the same one would be refused on every retry.
TEST_F(AgentClientTest, AnIdentityRefusalStopsTheClientWithTheReason) {
  for (grpc::StatusCode code :
       {grpc::StatusCode::PERMISSION_DENIED, grpc::StatusCode::UNAUTHENTICATED}) {
    SCOPED_TRACE(static_cast<int>(code));
    run_ended_.reset();
    const size_t hellos_before = coordinator_.hellos().size();
    coordinator_.Admit([code](const v1::AgentHello&) {
      return grpc::Status(code, "certificate CN=alice, O=handoff:operators is not an agent's");
    });
    StartClient();
    std::optional<absl::Status> ended = WaitForRunToEnd();
    ASSERT_TRUE(ended.has_value());
    EXPECT_EQ(static_cast<int>(ended->code()), static_cast<int>(code));
    EXPECT_THAT(ended->message(),
                AllOf(HasSubstr("refused node cp-1"),
                      HasSubstr("certificate CN=alice, O=handoff:operators is not an agent's"),
                      HasSubstr("not retrying"), HasSubstr("(cp-1.crt: CN=cp-1)")));
    EXPECT_EQ(coordinator_.hellos().size(), hellos_before + 1);  // one attempt
    EXPECT_THAT(client_log_->text(), HasSubstr("not retrying"));
    runner_.join();
    client_.reset();
  }
  EXPECT_THAT(reconnect_clock_.sleeps(), ::testing::IsEmpty());
}

TEST_F(AgentClientTest, AFailedCredentialsCheckAfterAFailedHandshakeStopsTheClient) {
  int checks = 0;
  StartClient("rogue-cp-1", "ca.crt", [&checks] {
    ++checks;
    return absl::FailedPreconditionError("agent.crt: certificate has expired");
  });
  std::optional<absl::Status> ended = WaitForRunToEnd();
  ASSERT_TRUE(ended.has_value());
  EXPECT_EQ(ended->code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(ended->message(), "agent.crt: certificate has expired");
  EXPECT_EQ(checks, 1);
  EXPECT_EQ(stream_ends().size(), 1u);
  runner_.join();
  client_.reset();
}

TEST_F(AgentClientTest, ACoordinatorCertificateOfAnotherCaIsNamedInTheLog) {
  StartClient("cp-1", "other-ca.crt");
  ASSERT_TRUE(WaitForStreamEnds(1));
  ASSERT_TRUE(client_log_->WaitFor("retrying in"));
  EXPECT_THAT(client_log_->text(),
              HasSubstr("this agent refused the coordinator's certificate: it does not verify "
                        "against other-ca.crt (expired, not yet valid, or issued by another CA)"));
  EXPECT_TRUE(coordinator_.hellos().empty());
}

TEST_F(AgentClientTest, ShutdownLetsTheRunningMoveFinishAndSendsItsResult) {
  StartClient();
  ASSERT_TRUE(
      coordinator_.WaitFor([](const auto& hellos, const auto&) { return !hellos.empty(); }));
  health_.Arm();
  coordinator_.Send(MoveCommand("r1-1", v1::NODE_STATE_IN_TREE, v1::NODE_STATE_PREPARED));
  ASSERT_TRUE(health_.WaitUntilReached());
  coordinator_.Send(ReportCommand("r1-2"));  // queued behind the move: dropped at shutdown
  client_->Shutdown();
  health_.Release();
  runner_.join();  // Run returns once the move finished and the stream closed
  client_.reset();
  const std::vector<v1::CommandResult> results = coordinator_.results();
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].command_id(), "r1-1");
  EXPECT_EQ(results[0].outcome(), v1::CommandResult::SUCCEEDED) << results[0].message();
  EXPECT_EQ(coordinator_.half_closes(), 1);  // the agent closed its side
  EXPECT_FALSE(agent_->FinishedResult("r1-2").has_value());
  EXPECT_EQ(coordinator_.hellos().size(), 1u);
}

TEST_F(AgentClientTest, AClientCertificateFromAnotherCaIsRefusedDuringTheHandshake) {
  StartClient("rogue-cp-1");
  ASSERT_TRUE(WaitForStreamEnds(3));
  for (const grpc::Status& status : stream_ends()) {
    EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAVAILABLE) << status.error_message();
  }
  EXPECT_TRUE(coordinator_.hellos().empty());  // no stream ever reached the service
  // The agent cannot know why, but it can say what most likely happened, and with which
  // certificate.
  EXPECT_THAT(client_log_->text(),
              HasSubstr("closed the connection during the TLS handshake, most likely refusing "
                        "this agent's certificate (rogue-cp-1.crt: CN=cp-1); the coordinator's "
                        "log names the reason"));
}

}  // namespace
}  // namespace handoff
