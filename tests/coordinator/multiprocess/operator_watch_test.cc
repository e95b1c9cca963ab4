// `handoffctl status --watch` (in process, over real mutual TLS) following a rollout of the real
// binaries while the coordinator is killed (-9) and stopped (SIGTERM) under it: the watch
// reconnects to each new coordinator and sees the rollout to its end.
#include <sys/wait.h>

#include <atomic>
#include <chrono>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "ctl/ctl_cli.h"
#include "gmock/gmock.h"
#include "grpcpp/client_context.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/coordinator/multiprocess/loopback_cluster.h"
#include "tests/ctl/rollout_test_support.h"

namespace handoff::testing {
namespace {

using ::handoff::ctl::test_support::CountOf;
using ::handoff::ctl::test_support::LockedStringBuf;
using ::testing::HasSubstr;

constexpr std::chrono::seconds kWait(60);

// The watch's JSON lines that parse (a line being written is not yet one).
std::vector<nlohmann::json> Lines(const std::string& text) {
  std::vector<nlohmann::json> lines;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    nlohmann::json parsed = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (!parsed.is_discarded()) lines.push_back(std::move(parsed));
  }
  return lines;
}

bool ShowsDoneMigrated(const std::string& text) {
  for (const nlohmann::json& status : Lines(text)) {
    if (status.value("phase", "") != "DONE" || !status.contains("nodes")) continue;
    bool all = !status["nodes"].empty();
    for (const nlohmann::json& node : status["nodes"]) {
      all = all && node.value("state", "") == "NODE_STATE_MIGRATED";
    }
    if (all) return true;
  }
  return false;
}

TEST(OperatorWatchTest, StatusWatchFollowsTheRolloutAcrossCoordinatorRestarts) {
  LoopbackCluster cluster(3);
  cluster.StartCoordinator();
  for (const std::string& node : cluster.nodes()) {
    cluster.StartAgent(node, {"--move-delay", "300ms"});
  }
  cluster.WaitFor([](const pb::RolloutStatus& s) {
    return s.nodes_size() == 3 && AllNodesAt(s, pb::NODE_STATE_IN_TREE);
  });

  std::atomic<bool> interrupted{false};
  ctl::CtlEnvironment environment = ctl::RealCtlEnvironment();
  environment.interrupted = [&interrupted] { return interrupted.load(); };
  environment.output_is_terminal = [] { return false; };
  LockedStringBuf out_buffer;
  LockedStringBuf err_buffer;
  std::ostream out(&out_buffer);
  std::ostream err(&err_buffer);
  int code = -1;
  std::thread watch([&] {
    code = ctl::test_support::RunWith(
        {"status", "--watch", "-o", "json", "--coordinator", cluster.address(), "--server-name",
         "localhost", "--ca", TlsFile("ca.crt"), "--cert", TlsFile("operator.crt"), "--key",
         TlsFile("operator.key"), "--reconnect-timeout", "60s"},
        out, err, environment);
  });
  ASSERT_TRUE(
      out_buffer.WaitUntil([](const std::string& text) { return !Lines(text).empty(); }, kWait))
      << err_buffer.Contents();

  pb::RolloutStatus started;
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
  ASSERT_TRUE(cluster.Operator()->Start(&context, pb::StartRequest(), &started).ok());

  // The coordinator dies during the first move, and is stopped cleanly during a later one.
  pb::RolloutStatus moving =
      cluster.WaitFor([](const pb::RolloutStatus& s) { return s.has_in_flight(); });
  cluster.KillCoordinator();
  cluster.StartCoordinator();
  ASSERT_TRUE(err_buffer.WaitUntil(
      [](const std::string& text) { return CountOf(text, "reconnected to the coordinator") == 1; },
      kWait))
      << err_buffer.Contents();
  cluster.WaitFor([&](const pb::RolloutStatus& s) {
    return s.has_in_flight() && s.in_flight().command_id() != moving.in_flight().command_id();
  });
  const int stopped = cluster.StopCoordinator();
  EXPECT_TRUE(WIFEXITED(stopped) && WEXITSTATUS(stopped) == 0) << stopped;
  cluster.StartCoordinator();

  // The watch sees the rollout end.
  cluster.WaitFor([](const pb::RolloutStatus& s) {
    return s.phase() == pb::RolloutStatus::DONE && AllNodesAt(s, pb::NODE_STATE_MIGRATED);
  });
  EXPECT_TRUE(out_buffer.WaitUntil(ShowsDoneMigrated, kWait)) << out_buffer.Contents();
  interrupted = true;
  watch.join();

  EXPECT_EQ(code, ctl::kExitOk) << err_buffer.Contents();
  const std::string errors = err_buffer.Contents();
  EXPECT_EQ(CountOf(errors, "handoffctl: lost the coordinator at " + cluster.address()), 2u)
      << errors;
  EXPECT_EQ(CountOf(errors, "handoffctl: reconnected to the coordinator at "), 2u) << errors;
  // The clean stop told the watch why.
  EXPECT_THAT(errors, HasSubstr("(status --watch: the coordinator is shutting down)")) << errors;
  // Nothing but statuses on stdout: every line is one.
  const std::string text = out_buffer.Contents();
  EXPECT_EQ(Lines(text).size(), CountOf(text, "\n")) << text;
}

}  // namespace
}  // namespace handoff::testing
