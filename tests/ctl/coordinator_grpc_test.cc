// handoffctl's coordinator commands over a real mutual-TLS gRPC connection, against an in-process
// OperatorService on 127.0.0.1 that records each request (and the caller's certificate CN) and
// answers from a script. The test CA and certificates are in tests/testdata/handoff-tls.
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "common/base/strings.h"
#include "coordinator/client/coordinator_client.h"
#include "ctl/ctl_cli.h"
#include "gmock/gmock.h"
#include "grpcpp/security/server_credentials.h"
#include "grpcpp/server.h"
#include "grpcpp/server_builder.h"
#include "gtest/gtest.h"
#include "handoff/v1/handoff.grpc.pb.h"
#include "nlohmann/json.hpp"
#include "tests/coordinator/fake_cluster.h"
#include "tests/ctl/rollout_test_support.h"
#include "tests/support/fake_clock.h"

namespace handoff::ctl {
namespace {

using ::handoff::ctl::test_support::CountOf;
using ::handoff::ctl::test_support::HaltedStatus;
using ::handoff::ctl::test_support::IdleStatus;
using ::handoff::ctl::test_support::kHaltedStatusText;
using ::handoff::ctl::test_support::kIdleStatusText;
using ::handoff::ctl::test_support::kMigratingStatusText;
using ::handoff::ctl::test_support::LockedStringBuf;
using ::handoff::ctl::test_support::MigratingStatus;
using ::handoff::ctl::test_support::Result;
using ::handoff::ctl::test_support::RunWith;
using ::handoff::testing::ReadTestdata;
using ::handoff::testing::Testdata;
using ::testing::AllOf;
using ::testing::Each;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::StartsWith;

// Answers a unary call only when the client gives up (deadline or cancel).
class UnansweredCall : public grpc::ServerUnaryReactor {
 public:
  void OnCancel() override { Finish(grpc::Status::CANCELLED); }
  void OnDone() override { delete this; }
};

// The scripted OperatorService. Thread-safe: gRPC runs the handlers on its own threads.
class FakeOperatorService : public v1::OperatorService::CallbackService {
 public:
  // What the calls that change the rollout answer: this status, or `refusal` when it is not OK.
  void SetChange(const v1::RolloutStatus& status, grpc::Status refusal = grpc::Status::OK) {
    std::lock_guard<std::mutex> lock(mutex_);
    change_ = status;
    refusal_ = std::move(refusal);
  }
  // Status streams these, then ends with `end`, or (hold_open) waits for the client to cancel.
  void SetStatuses(std::vector<v1::RolloutStatus> statuses, bool hold_open = false,
                   grpc::Status end = grpc::Status::OK) {
    std::lock_guard<std::mutex> lock(mutex_);
    statuses_ = std::move(statuses);
    hold_open_ = hold_open;
    stream_end_ = std::move(end);
  }
  void SetPlan(const v1::PlanRolloutResponse& plan) {
    std::lock_guard<std::mutex> lock(mutex_);
    plan_ = plan;
  }
  void SetHistory(const v1::HistoryResponse& history) {
    std::lock_guard<std::mutex> lock(mutex_);
    history_ = history;
  }
  void SetNodes(const v1::NodesResponse& nodes) {
    std::lock_guard<std::mutex> lock(mutex_);
    nodes_ = nodes;
  }
  // Pause is never answered.
  void LeavePauseUnanswered() {
    std::lock_guard<std::mutex> lock(mutex_);
    pause_unanswered_ = true;
  }

  // "<Method> {<request>}" in arrival order.
  std::vector<std::string> Calls() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return calls_;
  }
  // The CN of each caller's certificate.
  std::vector<std::string> Actors() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return actors_;
  }
  // Waits (bounded, for a broken test not to hang) until a Status stream was cancelled.
  bool WaitForCancelledStream() {
    std::unique_lock<std::mutex> lock(mutex_);
    return cancelled_changed_.wait_for(lock, std::chrono::seconds(30),
                                       [this] { return cancelled_streams_ > 0; });
  }
  void NoteCancelledStream() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      ++cancelled_streams_;
    }
    cancelled_changed_.notify_all();
  }

  grpc::ServerUnaryReactor* Plan(grpc::CallbackServerContext* context,
                                 const v1::PlanRolloutRequest* request,
                                 v1::PlanRolloutResponse* response) override {
    Record(context, "Plan", *request);
    std::lock_guard<std::mutex> lock(mutex_);
    *response = plan_;
    return Answer(context, grpc::Status::OK);
  }
  grpc::ServerUnaryReactor* Start(grpc::CallbackServerContext* context,
                                  const v1::StartRequest* request,
                                  v1::RolloutStatus* response) override {
    return Change(context, "Start", *request, response);
  }
  grpc::ServerUnaryReactor* Pause(grpc::CallbackServerContext* context,
                                  const v1::PauseRequest* request,
                                  v1::RolloutStatus* response) override {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (pause_unanswered_) return new UnansweredCall();
    }
    return Change(context, "Pause", *request, response);
  }
  grpc::ServerUnaryReactor* Resume(grpc::CallbackServerContext* context,
                                   const v1::ResumeRequest* request,
                                   v1::RolloutStatus* response) override {
    return Change(context, "Resume", *request, response);
  }
  grpc::ServerUnaryReactor* Abort(grpc::CallbackServerContext* context,
                                  const v1::AbortRequest* request,
                                  v1::RolloutStatus* response) override {
    return Change(context, "Abort", *request, response);
  }
  grpc::ServerUnaryReactor* Rollback(grpc::CallbackServerContext* context,
                                     const v1::RollbackRequest* request,
                                     v1::RolloutStatus* response) override {
    return Change(context, "Rollback", *request, response);
  }
  grpc::ServerUnaryReactor* Finalize(grpc::CallbackServerContext* context,
                                     const v1::FinalizeRequest* request,
                                     v1::RolloutStatus* response) override {
    return Change(context, "Finalize", *request, response);
  }
  grpc::ServerUnaryReactor* History(grpc::CallbackServerContext* context,
                                    const v1::HistoryRequest* request,
                                    v1::HistoryResponse* response) override {
    Record(context, "History", *request);
    std::lock_guard<std::mutex> lock(mutex_);
    *response = history_;
    return Answer(context, grpc::Status::OK);
  }
  grpc::ServerUnaryReactor* Nodes(grpc::CallbackServerContext* context,
                                  const v1::NodesRequest* request,
                                  v1::NodesResponse* response) override {
    Record(context, "Nodes", *request);
    std::lock_guard<std::mutex> lock(mutex_);
    *response = nodes_;
    return Answer(context, grpc::Status::OK);
  }
  grpc::ServerWriteReactor<v1::RolloutStatus>* Status(grpc::CallbackServerContext* context,
                                                      const v1::StatusRequest* request) override;

 private:
  void Record(grpc::CallbackServerContext* context, const std::string& method,
              const google::protobuf::Message& request) {
    std::string actor = "(none)";
    for (const grpc::string_ref& value :
         context->auth_context()->FindPropertyValues(GRPC_X509_CN_PROPERTY_NAME)) {
      actor.assign(value.data(), value.size());
    }
    std::lock_guard<std::mutex> lock(mutex_);
    calls_.push_back(StrCat(method, " {", request.ShortDebugString(), "}"));
    actors_.push_back(actor);
  }
  static grpc::ServerUnaryReactor* Answer(grpc::CallbackServerContext* context,
                                          const grpc::Status& status) {
    grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
    reactor->Finish(status);
    return reactor;
  }
  grpc::ServerUnaryReactor* Change(grpc::CallbackServerContext* context, const std::string& method,
                                   const google::protobuf::Message& request,
                                   v1::RolloutStatus* response) {
    Record(context, method, request);
    std::lock_guard<std::mutex> lock(mutex_);
    if (refusal_.ok()) *response = change_;
    return Answer(context, refusal_);
  }

  mutable std::mutex mutex_;
  std::condition_variable cancelled_changed_;
  std::vector<std::string> calls_;
  std::vector<std::string> actors_;
  v1::RolloutStatus change_ = MigratingStatus();
  grpc::Status refusal_;
  std::vector<v1::RolloutStatus> statuses_ = {MigratingStatus()};
  bool hold_open_ = false;
  grpc::Status stream_end_;
  v1::PlanRolloutResponse plan_;
  v1::HistoryResponse history_;
  v1::NodesResponse nodes_;
  bool pause_unanswered_ = false;
  int cancelled_streams_ = 0;
};

// Writes the scripted statuses one after another, then finishes or waits for the cancel.
class StatusWriter : public grpc::ServerWriteReactor<v1::RolloutStatus> {
 public:
  StatusWriter(FakeOperatorService& service, std::vector<v1::RolloutStatus> statuses,
               bool hold_open, grpc::Status end)
      : service_(service),
        statuses_(std::move(statuses)),
        hold_open_(hold_open),
        end_(std::move(end)) {
    std::lock_guard<std::mutex> lock(mutex_);
    WriteNextLocked();
  }

  void OnWriteDone(bool ok) override {
    std::lock_guard<std::mutex> lock(mutex_);
    writing_ = false;
    if (!ok) {
      FinishLocked(grpc::Status::CANCELLED);
      return;
    }
    WriteNextLocked();
  }
  void OnCancel() override {
    service_.NoteCancelledStream();
    std::lock_guard<std::mutex> lock(mutex_);
    cancelled_ = true;
    // A write under way completes (not ok) and finishes the call from OnWriteDone.
    if (!writing_) FinishLocked(grpc::Status::CANCELLED);
  }
  void OnDone() override { delete this; }

 private:
  void WriteNextLocked() {
    if (cancelled_) {
      FinishLocked(grpc::Status::CANCELLED);
    } else if (next_ < statuses_.size()) {
      writing_ = true;
      StartWrite(&statuses_[next_++]);
    } else if (!hold_open_) {
      FinishLocked(end_);
    }
  }
  void FinishLocked(const grpc::Status& status) {
    if (finished_) return;
    finished_ = true;
    Finish(status);
  }

  FakeOperatorService& service_;
  std::mutex mutex_;
  std::vector<v1::RolloutStatus> statuses_;
  const bool hold_open_;
  const grpc::Status end_;
  size_t next_ = 0;
  bool writing_ = false;
  bool cancelled_ = false;
  bool finished_ = false;
};

grpc::ServerWriteReactor<v1::RolloutStatus>* FakeOperatorService::Status(
    grpc::CallbackServerContext* context, const v1::StatusRequest* request) {
  Record(context, "Status", *request);
  std::vector<v1::RolloutStatus> statuses;
  bool hold_open = false;
  grpc::Status end;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    statuses = statuses_;
    hold_open = hold_open_;
    end = stream_end_;
  }
  return new StatusWriter(*this, std::move(statuses), hold_open, std::move(end));
}

class CoordinatorGrpcTest : public ::testing::Test {
 protected:
  CoordinatorGrpcTest() {
    grpc::SslServerCredentialsOptions ssl(
        GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
    ssl.pem_root_certs = ReadTestdata("handoff-tls/ca.crt");
    ssl.pem_key_cert_pairs.push_back(
        {ReadTestdata("handoff-tls/coordinator.key"), ReadTestdata("handoff-tls/coordinator.crt")});
    grpc::ServerBuilder builder;
    int port = 0;
    builder.AddListeningPort("127.0.0.1:0", grpc::SslServerCredentials(ssl), &port);
    builder.RegisterService(&service_);
    server_ = builder.BuildAndStart();
    EXPECT_NE(server_, nullptr);
    EXPECT_GT(port, 0);
    address_ = StrCat("127.0.0.1:", port);

    environment_.open_files = [] { return NewPosixFileSystem(""); };
    environment_.open_clock = [] { return std::make_unique<FakeClock>(); };
    environment_.get_env = [](const std::string&) -> std::optional<std::string> {
      return std::nullopt;
    };
    environment_.interrupted = [] { return false; };
    environment_.output_is_terminal = [] { return false; };
    environment_.open_coordinator = NewGrpcOperatorClient;
  }

  ~CoordinatorGrpcTest() override {
    if (server_ != nullptr) {
      server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(5));
    }
  }

  // Runs a command against the fake coordinator with the operator certificate `who`
  // ("operator", "rogue-operator") and the test CA.
  Result Run(std::vector<std::string> args, const std::string& who = "operator") {
    AddConnection(args, who);
    return test_support::Run(std::move(args), environment_);
  }

  // The connection flags the test did not give itself.
  void AddConnection(std::vector<std::string>& args, const std::string& who) {
    auto add = [&args](const std::string& flag, const std::string& value) {
      if (std::find(args.begin(), args.end(), flag) == args.end()) {
        args.insert(args.end(), {flag, value});
      }
    };
    add("--coordinator", address_);
    add("--ca", Testdata("handoff-tls/ca.crt"));
    add("--cert", Testdata(StrCat("handoff-tls/", who, ".crt")));
    add("--key", Testdata(StrCat("handoff-tls/", who, ".key")));
  }

  FakeOperatorService service_;
  std::unique_ptr<grpc::Server> server_;
  std::string address_;
  CtlEnvironment environment_;
};

TEST_F(CoordinatorGrpcTest, EveryCommandSendsItsRequestAsTheOperator) {
  struct Case {
    std::vector<std::string> args;
    std::string call;
  };
  const std::vector<Case> cases = {
      {{"start"}, "Start {goal: NODE_STATE_MIGRATED}"},
      {{"start", "--finalize"}, "Start {goal: NODE_STATE_FINALIZED}"},
      {{"start", "--strategy", "downtime"},
       "Start {goal: NODE_STATE_FINALIZED strategy: STRATEGY_DOWNTIME}"},
      {{"pause", "--reason", "change freeze"}, "Pause {reason: \"change freeze\"}"},
      {{"resume"}, "Resume {}"},
      {{"abort", "--reason", "ccm crashloops"}, "Abort {reason: \"ccm crashloops\"}"},
      {{"rollback", "--to", "in-tree"}, "Rollback {to: NODE_STATE_IN_TREE}"},
      {{"finalize"}, "Finalize {}"},
  };
  std::vector<std::string> expected_calls;
  for (const Case& test_case : cases) {
    Result result = Run(test_case.args);
    EXPECT_EQ(result.code, kExitOk) << test_case.args[0] << ": " << result.err;
    EXPECT_EQ(result.out, kMigratingStatusText) << test_case.args[0];
    expected_calls.push_back(test_case.call);
  }

  v1::PlanRolloutResponse plan;
  plan.set_goal(v1::NODE_STATE_FINALIZED);
  v1::PlannedStep* step = plan.add_steps();
  step->set_index(1);
  step->set_node("cp-1");
  step->set_from(v1::NODE_STATE_MIGRATED);
  step->set_to(v1::NODE_STATE_FINALIZED);
  service_.SetPlan(plan);
  Result planned = Run({"plan", "--goal", "finalized"});
  EXPECT_EQ(planned.code, kExitOk) << planned.err;
  EXPECT_EQ(planned.out,
            "plan to finalized: 1 step(s), in this order, each after the previous one succeeded\n"
            "  1.  cp-1  migrated -> finalized\n");
  expected_calls.push_back("Plan {goal: NODE_STATE_FINALIZED}");
  Result downtime_plan = Run({"plan", "--strategy", "downtime"});
  EXPECT_EQ(downtime_plan.code, kExitOk) << downtime_plan.err;
  expected_calls.push_back("Plan {strategy: STRATEGY_DOWNTIME}");

  v1::HistoryResponse history;
  v1::HistoryEntry* entry = history.add_entries();
  entry->set_sequence(41);
  entry->set_unix_ms(1'700'000'000'000);
  entry->set_actor("alice");
  entry->set_kind("pause");
  entry->set_message("paused: change freeze");
  service_.SetHistory(history);
  Result listed = Run({"history", "--after", "40", "--limit", "5"});
  EXPECT_EQ(listed.code, kExitOk) << listed.err;
  EXPECT_EQ(listed.out,
            "SEQ  TIME                  ACTOR  KIND   NODE  COMMAND  MESSAGE\n"
            "41   2023-11-14T22:13:20Z  alice  pause  -     -        paused: change freeze\n");
  expected_calls.push_back("History {after_sequence: 40 limit: 5}");

  v1::NodesResponse nodes;
  v1::NodeInfo* node = nodes.add_nodes();
  node->set_name("cp-1");
  node->set_state(v1::NODE_STATE_PREPARED);
  node->set_connected(true);
  node->set_healthy(true);
  node->set_verifies(true);
  node->set_agent_version("0.1.0");
  node->set_peer("ipv4:10.0.1.10:53122");
  node->set_last_seen_unix_ms(1'700'000'000'000);
  service_.SetNodes(nodes);
  Result shown = Run({"nodes"});
  EXPECT_EQ(shown.code, kExitOk) << shown.err;
  EXPECT_EQ(shown.out,
            "NODE  STATE     CONNECTED  HEALTHY  VERIFIES  AGENT  PEER                  LAST SEEN "
            "            LAST RESULT\n"
            "cp-1  prepared  yes        yes      yes       0.1.0  ipv4:10.0.1.10:53122  "
            "2023-11-14T22:13:20Z  -\n");
  expected_calls.push_back("Nodes {}");

  Result status = Run({"status"});
  EXPECT_EQ(status.code, kExitOk) << status.err;
  EXPECT_EQ(status.out, kMigratingStatusText);
  expected_calls.push_back("Status {}");

  EXPECT_EQ(service_.Calls(), expected_calls);
  EXPECT_THAT(service_.Actors(), Each(std::string("alice")));
  EXPECT_EQ(service_.Actors().size(), expected_calls.size());
}

TEST_F(CoordinatorGrpcTest, StatusOfAHaltedRolloutIsExitCode1) {
  service_.SetStatuses({HaltedStatus()});
  Result result = Run({"status"});
  EXPECT_EQ(result.code, kExitProblems) << result.err;
  EXPECT_EQ(result.out, kHaltedStatusText);
  EXPECT_THAT(result.err, IsEmpty());
}

TEST_F(CoordinatorGrpcTest, RefusalIsExitCode2WithTheCoordinatorsMessage) {
  service_.SetChange(v1::RolloutStatus(),
                     grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                                  "cp-3 is inconsistent: repair it, then start again"));
  Result result = Run({"start"});
  EXPECT_EQ(result.code, kExitRefused);
  EXPECT_EQ(result.err,
            "handoffctl: the coordinator refused start (FAILED_PRECONDITION): cp-3 is "
            "inconsistent: repair it, then start again\n");
  EXPECT_THAT(result.out, IsEmpty());
}

TEST_F(CoordinatorGrpcTest, UnreachableCoordinatorIsExitCode3NamingTheAddress) {
  // A port that is bound but not listening refuses connections, and no one else can take it.
  const int socket_fd = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(socket_fd, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(socket_fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
  socklen_t length = sizeof(address);
  ASSERT_EQ(::getsockname(socket_fd, reinterpret_cast<sockaddr*>(&address), &length), 0);
  const std::string nobody = StrCat("127.0.0.1:", ntohs(address.sin_port));

  Result result = Run({"status", "--coordinator", nobody});
  ::close(socket_fd);
  EXPECT_EQ(result.code, kExitUnavailable);
  EXPECT_THAT(result.err, AllOf(StartsWith("handoffctl: cannot reach the coordinator at " + nobody +
                                           " (status: "),
                                HasSubstr("Connection refused"),
                                HasSubstr("check --coordinator (or $HANDOFF_COORDINATOR) and the "
                                          "certificates")));
  EXPECT_THAT(result.out, IsEmpty());
}

TEST_F(CoordinatorGrpcTest, SilentCoordinatorIsExitCode3) {
  service_.LeavePauseUnanswered();
  // Long enough for the TLS handshake to finish on a loaded machine, so that the deadline falls
  // on the unanswered call itself: a deadline during the handshake leaves gRPC freeing the
  // handshaker on its own threads after the test, which LeakSanitizer reports at exit.
  Result result = Run({"pause", "--timeout", "2s"});
  EXPECT_EQ(result.code, kExitUnavailable);
  EXPECT_EQ(result.err, "handoffctl: the coordinator at " + address_ +
                            " did not answer pause within 2s (Deadline Exceeded); check "
                            "--coordinator (or $HANDOFF_COORDINATOR) and the certificates; the "
                            "change may still be made: see `handoffctl status`\n");
}

TEST_F(CoordinatorGrpcTest, WatchPrintsEachStatusUntilTheStreamEnds) {
  service_.SetStatuses({IdleStatus(), MigratingStatus(), HaltedStatus()});
  Result result = Run({"status", "--watch"});
  EXPECT_EQ(result.code, kExitOk) << result.err;
  EXPECT_EQ(result.out,
            std::string(kIdleStatusText) + "\n" + kMigratingStatusText + "\n" + kHaltedStatusText);
  EXPECT_EQ(result.err, "handoffctl: the coordinator ended the watch after 3 status(es)\n");
  EXPECT_THAT(service_.Calls(), ElementsAre("Status {watch: true}"));
}

TEST_F(CoordinatorGrpcTest, WatchEndsWhenTheOperatorInterrupts) {
  service_.SetStatuses({IdleStatus(), MigratingStatus()}, /*hold_open=*/true);
  LockedStringBuf out_buffer;
  std::ostream out(&out_buffer);
  std::ostringstream err;
  // Ctrl-C once both statuses are on the screen.
  environment_.interrupted = [&out_buffer] {
    return CountOf(out_buffer.Contents(), "rollout:") == 2;
  };
  std::vector<std::string> args = {"status", "--watch"};
  AddConnection(args, "operator");
  const int code = RunWith(args, out, err, environment_);
  EXPECT_EQ(code, kExitOk) << err.str();
  EXPECT_EQ(out_buffer.Contents(), std::string(kIdleStatusText) + "\n" + kMigratingStatusText);
  EXPECT_EQ(err.str(), "");
  EXPECT_TRUE(service_.WaitForCancelledStream());
}

TEST_F(CoordinatorGrpcTest, WatchEndsAtTheWatchTimeout) {
  service_.SetStatuses({MigratingStatus()}, /*hold_open=*/true);
  Result result = Run({"status", "--watch", "--watch-timeout", "300ms"});
  EXPECT_EQ(result.code, kExitOk) << result.err;
  EXPECT_EQ(result.out, kMigratingStatusText);
  EXPECT_EQ(result.err, "handoffctl: stopped watching: --watch-timeout 300ms reached\n");
  EXPECT_TRUE(service_.WaitForCancelledStream());
}

TEST_F(CoordinatorGrpcTest, WatchWithoutAFirstStatusIsExitCode3) {
  service_.SetStatuses({}, /*hold_open=*/true);
  Result result = Run({"status", "--watch", "--timeout", "300ms"});
  EXPECT_EQ(result.code, kExitUnavailable);
  EXPECT_EQ(result.err, "handoffctl: the coordinator at " + address_ +
                            " did not answer status --watch within 300ms (no status came); "
                            "check --coordinator (or $HANDOFF_COORDINATOR) and the "
                            "certificates\n");
  EXPECT_THAT(result.out, IsEmpty());
  EXPECT_TRUE(service_.WaitForCancelledStream());
}

TEST_F(CoordinatorGrpcTest, WatchJsonIsOneObjectPerLine) {
  service_.SetStatuses({MigratingStatus(), HaltedStatus()});
  Result result = Run({"status", "--watch", "-o", "json"});
  EXPECT_EQ(result.code, kExitOk) << result.err;
  std::istringstream lines(result.out);
  std::string line;
  std::vector<nlohmann::json> statuses;
  while (std::getline(lines, line)) statuses.push_back(nlohmann::json::parse(line));
  ASSERT_EQ(statuses.size(), 2u);
  EXPECT_EQ(statuses[0]["rollout_id"], "r-7f3a");
  EXPECT_EQ(statuses[0]["phase"], "MIGRATING");
  EXPECT_EQ(statuses[0]["in_flight"]["node"], "cp-2");
  EXPECT_EQ(statuses[0]["nodes"][0]["steps_total"], 2);
  EXPECT_EQ(statuses[1]["phase"], "HALTED");
  EXPECT_EQ(statuses[1]["halted"], true);
  EXPECT_EQ(statuses[1]["revision"], "13");

  service_.SetStatuses({MigratingStatus()});
  Result single = Run({"status", "-o", "json"});
  EXPECT_EQ(single.code, kExitOk);
  EXPECT_EQ(nlohmann::json::parse(single.out)["facts"]["source"], "kubernetes");
}

TEST_F(CoordinatorGrpcTest, RogueOperatorCertificateIsTurnedAway) {
  // Signed by a CA the coordinator does not trust: the TLS handshake fails, so the client never
  // learns why; it cannot tell this from an unreachable coordinator.
  Result result = Run({"start"}, "rogue-operator");
  EXPECT_EQ(result.code, kExitUnavailable);
  EXPECT_THAT(result.err, AllOf(StartsWith("handoffctl: cannot reach the coordinator at " +
                                           address_ + " (start: "),
                                HasSubstr("--cert " + Testdata("handoff-tls/rogue-operator.crt"))));
  EXPECT_THAT(result.out, IsEmpty());
  EXPECT_THAT(service_.Calls(), IsEmpty());
}

TEST_F(CoordinatorGrpcTest, CoordinatorNotSignedByTheCaIsTurnedAway) {
  Result result = Run({"status", "--ca", Testdata("handoff-tls/other-ca.crt")});
  EXPECT_EQ(result.code, kExitUnavailable);
  EXPECT_THAT(result.err, StartsWith("handoffctl: cannot reach the coordinator at " + address_));
  EXPECT_THAT(service_.Calls(), IsEmpty());
}

TEST_F(CoordinatorGrpcTest, ServerName) {
  // The certificate names localhost and 127.0.0.1.
  Result localhost = Run({"status", "--server-name", "localhost"});
  EXPECT_EQ(localhost.code, kExitOk) << localhost.err;
  Result other = Run({"status", "--server-name", "coordinator.example"});
  EXPECT_EQ(other.code, kExitUnavailable);
  EXPECT_THAT(other.err, StartsWith("handoffctl: cannot reach the coordinator at " + address_));
  EXPECT_EQ(service_.Calls().size(), 1u);
}

}  // namespace
}  // namespace handoff::ctl
