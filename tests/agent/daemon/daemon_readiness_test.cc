// When the agent daemon tells systemd it is ready (Type=notify): after its command log is read
// and recovered, once the coordinator welcomed it or the first connection failed and is retried;
// never before. Each case runs the whole daemon in a child process (signals are process-wide)
// with a fake notifier, and stops it with SIGTERM when READY=1 comes.
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <iostream>
#include <memory>
#include <string>

#include "agent/daemon/daemon.h"
#include "common/system/clock.h"
#include "gtest/gtest.h"
#include "spdlog/sinks/stdout_sinks.h"
#include "tests/agent/apply/fake_kubelet.h"
#include "tests/agent/daemon/fake_coordinator.h"
#include "tests/agent/engine/node_fixture.h"
#include "tests/common/system/fake_service_notifier.h"

namespace handoff {
namespace {

using testing::FakeCoordinator;
using testing::FakeServiceNotifier;
using testing::ReadTestdata;

constexpr char kReading[] =
    "STATUS=reading the command log; recovering an interrupted move, if any";
constexpr char kStopping[] =
    "STOPPING=1\nSTATUS=stopping; accepting no more commands; a running one finishes first";

// Runs the daemon for node cp-1 against `coordinator` ("127.0.0.1:<port>") until READY=1, then
// SIGTERM; prints every notification and exits 0 when the daemon stopped cleanly and the READY=1
// notification, which begins with `expected_ready`, came between kReading and kStopping and
// `ready_check` held when it came; else non-zero.
[[noreturn]] void RunUntilReady(const std::string& coordinator, const std::string& expected_ready,
                                const std::function<bool()>& ready_check = nullptr) {
  MemoryFileSystem fs = testing::LoadNode("kubeadm");
  testing::FakeKubelet kubelet(fs, testing::KubeadmSettings().paths);
  std::unique_ptr<Clock> clock = NewRealClock();
  DaemonConfig config;
  config.coordinator = coordinator;
  config.tls.ca_pem = ReadTestdata("handoff-tls/ca.crt");
  config.tls.cert_pem = ReadTestdata("handoff-tls/cp-1.crt");
  config.tls.key_pem = ReadTestdata("handoff-tls/cp-1.key");
  config.agent.node_name = "cp-1";
  config.agent.paths = testing::KubeadmSettings().paths;
  config.agent.kubelet = testing::KubeadmSettings().kubelet;
  config.agent.apply.verify = false;
  config.client.sample_interval = absl::ZeroDuration();

  FakeServiceNotifier notifier;
  bool checked = true;
  notifier.set_on_notify([&](const std::string& sent) {
    if (sent.rfind("READY=1", 0) != 0) return;
    if (ready_check) checked = ready_check();
    kill(getpid(), SIGTERM);
  });
  auto logger = std::make_shared<spdlog::logger>(
      "handoff-agent", std::make_shared<spdlog::sinks::stderr_sink_mt>());
  const absl::Status ended = RunAgentDaemon(
      config, Host{fs, kubelet, kubelet, *clock, kubelet, kubelet}, logger, notifier);
  const std::vector<std::string> sent = notifier.sent();
  for (const std::string& each : sent) std::cerr << "notified: " << each << "\n";
  if (!ended.ok()) {
    std::cerr << "daemon: " << ended << "\n";
    std::exit(10);
  }
  if (!checked) std::exit(11);
  if (sent.size() != 3 || sent[0] != kReading || sent[1].rfind(expected_ready, 0) != 0 ||
      sent[2] != kStopping) {
    std::exit(12);
  }
  std::exit(0);
}

TEST(DaemonReadinessDeathTest, ReadyOnceTheCoordinatorWelcomedTheAgent) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  auto run = [] {
    // Blocked before the coordinator's threads start, so that none of them takes SIGTERM's
    // default action (the daemon blocks it too, but only for the threads it starts).
    sigset_t signals;
    sigemptyset(&signals);
    sigaddset(&signals, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &signals, nullptr);
    FakeCoordinator coordinator;
    int port = 0;
    std::unique_ptr<grpc::Server> server = coordinator.Start(&port);
    const std::string address = "127.0.0.1:" + std::to_string(port);
    RunUntilReady(address,
                  "READY=1\nSTATUS=connected to the coordinator at " + address +
                      " as node cp-1 (rollout r1)",
                  // The hello came first: the agent said what it knows before it was ready.
                  [&coordinator] { return coordinator.hellos().size() == 1; });
  };
  EXPECT_EXIT(run(), ::testing::ExitedWithCode(0), "SIGTERM: stopping");
}

TEST(DaemonReadinessDeathTest, ReadyWhileRetryingWhenTheCoordinatorIsNotThere) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  auto run = [] {
    // A port bound and not listening: every connection is refused.
    const int socket_fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof(address);
    if (bind(socket_fd, reinterpret_cast<sockaddr*>(&address), length) != 0 ||
        getsockname(socket_fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
      std::exit(20);
    }
    const std::string coordinator = "127.0.0.1:" + std::to_string(ntohs(address.sin_port));
    // Then the wait, drawn from [125ms, 250ms].
    RunUntilReady(coordinator, "READY=1\nSTATUS=not connected to the coordinator at " +
                                   coordinator + " (UNAVAILABLE); retrying in ");
  };
  EXPECT_EXIT(run(), ::testing::ExitedWithCode(0), "SIGTERM: stopping");
}

}  // namespace
}  // namespace handoff
