// `handoff-agent run`: the configuration is checked before dialing (exit 2, naming the file or
// flag), and SIGTERM stops a connected agent with exit 0.
#include <signal.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <thread>

#include "agent/cli/agent_cli.h"
#include "common/pki/pki.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/agent/daemon/fake_coordinator.h"

namespace handoff {
namespace {

namespace fs = std::filesystem;
using testing::FakeCoordinator;
using ::testing::AllOf;
using ::testing::HasSubstr;
using testing::TestdataPath;

struct Result {
  int code;
  std::string out;
  std::string err;
};

int RunAgent(std::vector<std::string> args, std::ostream& out, std::ostream& err) {
  args.insert(args.begin(), "handoff-agent");
  std::vector<const char*> argv;
  for (const std::string& arg : args) argv.push_back(arg.c_str());
  return RunAgentCli(static_cast<int>(argv.size()), argv.data(), out, err, RealAgentEnvironment());
}

Result RunAgent(std::vector<std::string> args) {
  std::ostringstream out;
  std::ostringstream err;
  const int code = RunAgent(std::move(args), out, err);
  return Result{code, out.str(), err.str()};
}

std::vector<std::string> TlsFlags(const std::string& identity) {
  return {"--ca",   TestdataPath("handoff-tls/ca.crt"),
          "--cert", TestdataPath("handoff-tls/" + identity + ".crt"),
          "--key",  TestdataPath("handoff-tls/" + identity + ".key")};
}

std::vector<std::string> RunArgs(std::vector<std::string> extra) {
  std::vector<std::string> args = {"run", "--coordinator", "127.0.0.1:1"};
  for (const std::string& arg : TlsFlags("cp-1")) args.push_back(arg);
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

TEST(RunCommandTest, CoordinatorIsRequired) {
  Result result = RunAgent({"run"});
  EXPECT_EQ(result.code, kExitRefused);
  EXPECT_THAT(result.err, HasSubstr("--coordinator is required"));
}

TEST(RunCommandTest, AnUnreadableCertificateIsNamed) {
  std::vector<std::string> args = RunArgs({});
  args[6] = "/nonexistent/agent.crt";  // --cert
  Result result = RunAgent(args);
  EXPECT_EQ(result.code, kExitRefused);
  EXPECT_THAT(result.err, HasSubstr("cannot read --cert: /nonexistent/agent.crt"));
}

TEST(RunCommandTest, AKeyOfAnotherCertificateIsRefused) {
  std::vector<std::string> args = RunArgs({});
  args[8] = TestdataPath("handoff-tls/cp-2.key");  // --key
  Result result = RunAgent(args);
  EXPECT_EQ(result.code, kExitRefused);
  EXPECT_THAT(result.err, HasSubstr("the key does not belong to the certificate"));
}

TEST(RunCommandTest, ANodeNameOtherThanTheCertificatesIsRefused) {
  Result result = RunAgent(RunArgs({"--node", "cp-2"}));
  EXPECT_EQ(result.code, kExitRefused);
  EXPECT_THAT(result.err, HasSubstr("--node cp-2 differs from the CN 'cp-1'"));
}

TEST(RunCommandTest, BadDurationsAndAddressesAreRefused) {
  EXPECT_THAT(RunAgent(RunArgs({"--stream-deadline", "soon"})).err,
              HasSubstr("--stream-deadline: 'soon' is not a duration"));
  EXPECT_THAT(RunAgent(RunArgs({"--reconnect-max", "0s"})).err,
              HasSubstr("--reconnect-max: '0s' is not a duration"));
  EXPECT_THAT(RunAgent(RunArgs({"--move-delay", "-1s"})).err,
              HasSubstr("--move-delay: '-1s' is not a duration"));
  std::vector<std::string> args = RunArgs({});
  args[2] = "coordinator.example";
  Result result = RunAgent(args);
  EXPECT_EQ(result.code, kExitRefused);
  EXPECT_THAT(result.err, HasSubstr("is not HOST:PORT"));
}

TEST(RunCommandTest, HelpDescribesTheFlags) {
  Result result = RunAgent({"run", "--help"});
  EXPECT_EQ(result.code, kExitOk);
  for (const char* flag :
       {"--coordinator", "--ca", "--cert", "--key", "--server-name", "--node", "--root",
        "--settings", "--reconnect-max", "--stream-deadline", "--move-delay", "--no-verify",
        "--timeout", "--keep", "--kubelet-restart-command", "--proc-root"}) {
    EXPECT_THAT(result.out, HasSubstr(flag));
  }
  EXPECT_THAT(result.out, HasSubstr("For rehearsals and tests"));
}

// A copy of the kubeadm node and TLS files made for the test by common/pki around the wall
// clock (the agent checks its certificate against it, as the coordinator's TLS stack does).
class RunCertificateTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/handoff-agent-cert-XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    dir_ = pattern;
    fs::copy(TestdataPath("nodes/kubeadm"), dir_ / "node", fs::copy_options::recursive);
    now_ = absl::Now();
    absl::StatusOr<pki::KeyPair> ca =
        pki::CreateCertificateAuthority("handoff-ca", now_ - absl::Hours(72), absl::Hours(240));
    ASSERT_TRUE(ca.ok()) << ca.status();
    ca_ = *ca;
    Write("ca.crt", ca_.certificate_pem);
  }
  void TearDown() override { fs::remove_all(dir_); }

  void Write(const std::string& name, const std::string& text) {
    std::ofstream(dir_ / name, std::ios::binary) << text;
  }

  // agent.crt and agent.key for cp-1, issued as if at `at` for `validity`.
  void IssueAgent(absl::Time at, absl::Duration validity) {
    pki::CertificateRequest request;
    request.common_name = "cp-1";
    request.organizations = {"handoff:agents"};
    request.client = true;
    request.validity = validity;
    absl::StatusOr<pki::KeyPair> agent = pki::IssueCertificate(ca_, request, at);
    ASSERT_TRUE(agent.ok()) << agent.status();
    Write("agent.crt", agent->certificate_pem);
    Write("agent.key", agent->private_key_pem);
  }

  std::vector<std::string> Args(const std::string& coordinator = "127.0.0.1:1") const {
    return {"run",   "--coordinator", coordinator,
            "--ca",  dir_ / "ca.crt", "--cert",
            dir_ / "agent.crt",       "--key",
            dir_ / "agent.key",       "--root",
            dir_ / "node",            "--no-verify"};
  }

  static std::string Timestamp(absl::Time time) {
    return absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", time, absl::UTCTimeZone());
  }

  fs::path dir_;
  absl::Time now_;
  pki::KeyPair ca_;
};

TEST_F(RunCertificateTest, AnExpiredCertificateIsRefusedWithItsDatesBeforeAnythingElse) {
  IssueAgent(now_ - absl::Hours(48), absl::Hours(24));
  Result result = RunAgent(Args());
  EXPECT_EQ(result.code, kExitRefused);
  const absl::Time issued = now_ - absl::Hours(48);
  EXPECT_THAT(result.err,
              AllOf(HasSubstr("certificate has expired (CN=cp-1 is valid from " +
                              Timestamp(issued - absl::Minutes(5)) + " to " +
                              Timestamp(issued + absl::Hours(24)) + ")"),
                    HasSubstr("the coordinator refuses it"),
                    HasSubstr("handoffctl certs issue --node cp-1")));
  // Refused before the command log was opened or a move recovered: nothing written.
  EXPECT_FALSE(fs::exists(dir_ / "node/var/lib/handoff"));
}

TEST_F(RunCertificateTest, ACertificateNotYetValidIsRefusedWithItsDates) {
  IssueAgent(now_ + absl::Hours(24), absl::Hours(24));
  Result result = RunAgent(Args());
  EXPECT_EQ(result.code, kExitRefused);
  EXPECT_THAT(result.err, HasSubstr("certificate is not yet valid (CN=cp-1 is valid from " +
                                        Timestamp(now_ + absl::Hours(24) - absl::Minutes(5))));
}

TEST_F(RunCertificateTest, ACertificateOfAnotherCaIsRefused) {
  Write("agent.crt", testing::ReadTestdata("handoff-tls/cp-1.crt"));
  Write("agent.key", testing::ReadTestdata("handoff-tls/cp-1.key"));
  Result result = RunAgent(Args());
  EXPECT_EQ(result.code, kExitRefused);
  EXPECT_THAT(result.err, HasSubstr("(CN=cp-1 was issued by CN=handoff-test-ca, not by this CA)"));
}

// An operator's certificate chains to the CA, so only the coordinator can refuse it; the agent
// then stops with its reason instead of retrying forever.
TEST(RunCommandTest, AnIdentityTheCoordinatorRefusesStopsTheAgentWithExit2) {
  char pattern[] = "/tmp/handoff-agent-run-XXXXXX";
  ASSERT_NE(mkdtemp(pattern), nullptr);
  const fs::path root = fs::path(pattern) / "node";
  fs::copy(TestdataPath("nodes/kubeadm"), root, fs::copy_options::recursive);
  FakeCoordinator coordinator;
  coordinator.Admit([](const v1::AgentHello&) {
    return grpc::Status(grpc::StatusCode::PERMISSION_DENIED,
                        "certificate CN=alice, O=handoff:operators is not an agent's "
                        "(O=handoff:agents)");
  });
  int port = 0;
  std::unique_ptr<grpc::Server> server = coordinator.Start(&port);
  ASSERT_NE(server, nullptr);
  std::vector<std::string> args = {"run",    "--coordinator", "127.0.0.1:" + std::to_string(port),
                                   "--root", root.string(),   "--no-verify"};
  for (const std::string& arg : TlsFlags("operator")) args.push_back(arg);
  Result result = RunAgent(args);
  coordinator.Stop();
  server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(5));
  fs::remove_all(pattern);
  EXPECT_EQ(result.code, kExitRefused);
  EXPECT_THAT(result.err,
              AllOf(HasSubstr("refused node alice (PERMISSION_DENIED): certificate CN=alice, "
                              "O=handoff:operators is not an agent's"),
                    HasSubstr("not retrying")));
  EXPECT_EQ(coordinator.hellos().size(), 1u);
}

// The body of the death test below: a coordinator and the agent in one process, SIGTERM once
// the agent said hello, on a copy of the kubeadm node; exits with the agent's exit code.
[[noreturn]] void RunAgentUntilSigterm() {
  char pattern[] = "/tmp/handoff-agent-run-XXXXXX";
  if (mkdtemp(pattern) == nullptr) std::exit(100);
  const fs::path root = fs::path(pattern) / "node";
  fs::copy(TestdataPath("nodes/kubeadm"), root, fs::copy_options::recursive);
  // Blocked before any thread starts, so no thread takes SIGTERM's default action.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  FakeCoordinator coordinator;
  int port = 0;
  std::unique_ptr<grpc::Server> server = coordinator.Start(&port);
  std::thread terminator([&] {
    if (coordinator.WaitFor([](const auto& hellos, const auto&) { return !hellos.empty(); })) {
      // One insertion, so one write: the agent logs to stderr from its own threads meanwhile.
      const std::string line = "hello from " + coordinator.hellos()[0].hello.node_name() + "\n";
      std::cerr << line << std::flush;
    }
    kill(getpid(), SIGTERM);
  });
  std::vector<std::string> args = {"run",    "--coordinator", "127.0.0.1:" + std::to_string(port),
                                   "--root", root.string(),   "--no-verify"};
  for (const std::string& arg : TlsFlags("cp-2")) args.push_back(arg);
  const int code = RunAgent(args, std::cout, std::cerr);
  terminator.join();
  coordinator.Stop();
  server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(5));
  fs::remove_all(pattern);
  std::exit(code);
}

// The whole agent, in a child process of its own (signals are process-wide): it connects,
// says hello, and SIGTERM makes it close the stream and exit 0.
TEST(RunCommandDeathTest, SigtermStopsAConnectedAgentWithExitZero) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      RunAgentUntilSigterm(), ::testing::ExitedWithCode(0),
      "hello from cp-2(.|\n)*SIGTERM: stopping; accepting no more commands(.|\n)*disconnected "
      "from the coordinator");
}

}  // namespace
}  // namespace handoff
