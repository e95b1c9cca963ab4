// The real binaries on loopback: a coordinator and 3 or 5 agents on temp roots, driven through the
// operator API, with the coordinator and agents killed at the worst moments.
#include <sys/wait.h>

#include <filesystem>
#include <fstream>
#include <set>

#include "gmock/gmock.h"
#include "grpcpp/client_context.h"
#include "gtest/gtest.h"
#include "tests/coordinator/multiprocess/loopback_cluster.h"

namespace handoff::testing {
namespace {

using ::testing::HasSubstr;

constexpr char kManifests[] = "/etc/kubernetes/manifests/";

std::unique_ptr<grpc::ClientContext> Deadline() {
  auto context = std::make_unique<grpc::ClientContext>();
  context->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
  context->set_wait_for_ready(true);
  return context;
}

bool AllConnected(const pb::RolloutStatus& status) {
  for (const pb::NodeProgress& node : status.nodes()) {
    if (!node.connected()) return false;
  }
  return status.nodes_size() > 0;
}

bool DoneAt(const pb::RolloutStatus& status, pb::NodeState state) {
  return status.phase() == pb::RolloutStatus::DONE && AllNodesAt(status, state);
}

void Start(LoopbackCluster& cluster) {
  pb::RolloutStatus status;
  grpc::Status called = cluster.Operator()->Start(Deadline().get(), pb::StartRequest(), &status);
  ASSERT_TRUE(called.ok()) << called.error_message();
}

std::vector<pb::HistoryEntry> History(LoopbackCluster& cluster) {
  pb::HistoryResponse history;
  grpc::Status called =
      cluster.Operator()->History(Deadline().get(), pb::HistoryRequest(), &history);
  EXPECT_TRUE(called.ok()) << called.error_message();
  return {history.entries().begin(), history.entries().end()};
}

class EndToEndTest : public ::testing::TestWithParam<int> {};

TEST_P(EndToEndTest, FullRolloutThenRollbackToInTree) {
  LoopbackCluster cluster(GetParam());
  cluster.StartCoordinator();
  for (const std::string& node : cluster.nodes()) cluster.StartAgent(node);
  cluster.WaitFor([](const pb::RolloutStatus& status) {
    return AllConnected(status) && AllNodesAt(status, pb::NODE_STATE_IN_TREE);
  });
  std::map<std::string, std::string> original;
  for (const std::string& node : cluster.nodes()) {
    original[node] =
        cluster.ReadNodeFile(node, std::string(kManifests) + "kube-controller-manager.yaml");
  }

  Start(cluster);
  cluster.WaitFor([](const pb::RolloutStatus& s) { return DoneAt(s, pb::NODE_STATE_MIGRATED); });
  for (const std::string& node : cluster.nodes()) {
    EXPECT_EQ(cluster.Transactions(node), 2) << node;
    EXPECT_THAT(
        cluster.ReadNodeFile(node, std::string(kManifests) + "cloud-controller-manager.yaml"),
        HasSubstr("--enable-leader-migration"))
        << node;
  }

  pb::RollbackRequest rollback;
  rollback.set_to(pb::NODE_STATE_IN_TREE);
  pb::RolloutStatus status;
  ASSERT_TRUE(cluster.Operator()->Rollback(Deadline().get(), rollback, &status).ok());
  cluster.WaitFor([](const pb::RolloutStatus& s) { return DoneAt(s, pb::NODE_STATE_IN_TREE); });
  for (const std::string& node : cluster.nodes()) {
    EXPECT_EQ(cluster.ReadNodeFile(node, std::string(kManifests) + "kube-controller-manager.yaml"),
              original[node])
        << node;
    EXPECT_EQ(cluster.ReadNodeFile(node, std::string(kManifests) + "cloud-controller-manager.yaml"),
              "")
        << node;
  }
  // Commands went out one at a time, and every one has its result in the history.
  int commands = 0;
  int results = 0;
  for (const pb::HistoryEntry& entry : History(cluster)) {
    if (entry.kind() == "command") ++commands;
    if (entry.kind() == "result") ++results;
  }
  EXPECT_EQ(commands, 4 * GetParam());
  EXPECT_EQ(results, 4 * GetParam());

  // SIGTERM stops it cleanly.
  int exit = cluster.StopCoordinator();
  EXPECT_TRUE(WIFEXITED(exit) && WEXITSTATUS(exit) == 0) << exit;
}

TEST_P(EndToEndTest, KillingTheCoordinatorAtEveryStepNeitherLosesNorRepeatsAMove) {
  LoopbackCluster cluster(GetParam());
  cluster.StartCoordinator();
  // A move takes a moment, so each kill lands while one is under way on some node.
  for (const std::string& node : cluster.nodes())
    cluster.StartAgent(node, {"--move-delay", "300ms"});
  cluster.WaitFor([](const pb::RolloutStatus& s) {
    return AllConnected(s) && AllNodesAt(s, pb::NODE_STATE_IN_TREE);
  });
  Start(cluster);
  // Keyed by the move, not its command: a move that never reached its agent before a kill may be
  // dropped by the restarted coordinator and sent again under a new command id.
  const auto move_of = [](const pb::RolloutStatus& s) {
    return s.in_flight().node() + " → " + pb::NodeState_Name(s.in_flight().to());
  };
  std::set<std::string> killed_during;
  for (int round = 0; round < 4 * GetParam(); ++round) {
    pb::RolloutStatus status = cluster.WaitFor([&](const pb::RolloutStatus& s) {
      return DoneAt(s, pb::NODE_STATE_MIGRATED) ||
             (s.has_in_flight() && killed_during.count(move_of(s)) == 0);
    });
    if (!status.has_in_flight()) break;
    killed_during.insert(move_of(status));
    cluster.KillCoordinator();
    cluster.StartCoordinator();
  }
  pb::RolloutStatus done = cluster.WaitFor(
      [](const pb::RolloutStatus& s) { return DoneAt(s, pb::NODE_STATE_MIGRATED); });
  EXPECT_FALSE(done.halted()) << done.halt_reason();
  EXPECT_EQ(killed_during.size(), 2U * GetParam());  // once during each move
  for (const std::string& node : cluster.nodes()) {
    EXPECT_EQ(cluster.Transactions(node), 2) << node << ": a move was lost or applied twice";
  }
  int restarts = 0;
  for (const pb::HistoryEntry& entry : History(cluster)) {
    if (entry.kind() == "resume-after-restart") ++restarts;
  }
  EXPECT_EQ(restarts, 2 * GetParam() + 1);
}

TEST_P(EndToEndTest, AnAgentKilledMidMoveRecoversAndTheRolloutCompletes) {
  LoopbackCluster cluster(GetParam());
  cluster.StartCoordinator();
  for (const std::string& node : cluster.nodes()) {
    if (node == "cp-2") {
      cluster.StartAgent(node, {"--move-delay", "30s"});
    } else {
      cluster.StartAgent(node);
    }
  }
  cluster.WaitFor([](const pb::RolloutStatus& s) {
    return AllConnected(s) && AllNodesAt(s, pb::NODE_STATE_IN_TREE);
  });
  Start(cluster);
  pb::RolloutStatus moving = cluster.WaitFor([](const pb::RolloutStatus& s) {
    return s.has_in_flight() && s.in_flight().node() == "cp-2";
  });
  // Killed once the agent has recorded the move as started (its command log), mid-move.
  ASSERT_TRUE(WaitForFile(cluster.root("cp-2") + "/var/lib/handoff/commands/" +
                              moving.in_flight().command_id() + ".json",
                          absl::Seconds(20)));
  cluster.KillAgent("cp-2");
  pb::RolloutStatus away = cluster.WaitFor(
      [](const pb::RolloutStatus& s) { return s.nodes_size() > 1 && !s.nodes(1).connected(); });
  EXPECT_TRUE(away.has_in_flight()) << "nothing moves while cp-2's move is unsettled";

  cluster.StartAgent("cp-2");
  pb::RolloutStatus done = cluster.WaitFor(
      [](const pb::RolloutStatus& s) { return DoneAt(s, pb::NODE_STATE_MIGRATED); });
  EXPECT_FALSE(done.halted());
  EXPECT_EQ(cluster.Transactions("cp-2"), 2);
  bool interrupted = false;
  for (const pb::HistoryEntry& entry : History(cluster)) {
    if (entry.node() == "cp-2" && entry.kind() == "result" &&
        entry.message().find("interrupted") != std::string::npos) {
      interrupted = true;
    }
  }
  EXPECT_TRUE(interrupted);
}

TEST_P(EndToEndTest, AFailingNodeHaltsTheRolloutAndLeavesTheOthersAlone) {
  LoopbackCluster cluster(GetParam());
  cluster.StartCoordinator();
  cluster.StartAgent("cp-1");
  // cp-2's kubelet fails to restart once: when it is given --cloud-provider=external. The agent's
  // undo restarts it again, which works, so the node is back at prepared.
  std::string script = cluster.dir() + "/kubelet-fails-once.sh";
  {
    std::ofstream out(script);
    out << "#!/bin/sh\nif [ -e \"$0.failed\" ]; then exit 0; fi\ntouch \"$0.failed\"\nexit 1\n";
  }
  std::filesystem::permissions(script, std::filesystem::perms::owner_all);
  cluster.StartAgent("cp-2", {"--kubelet-restart-command", script});
  for (size_t i = 2; i < cluster.nodes().size(); ++i) cluster.StartAgent(cluster.nodes()[i]);
  cluster.WaitFor([](const pb::RolloutStatus& s) {
    return AllConnected(s) && AllNodesAt(s, pb::NODE_STATE_IN_TREE);
  });
  Start(cluster);
  pb::RolloutStatus halted = cluster.WaitFor(
      [](const pb::RolloutStatus& s) { return s.phase() == pb::RolloutStatus::HALTED; });
  EXPECT_THAT(halted.halt_reason(), HasSubstr("cp-2"));
  EXPECT_THAT(halted.halt_reason(), HasSubstr("rolled back"));
  EXPECT_EQ(halted.nodes(0).state(), pb::NODE_STATE_MIGRATED);
  EXPECT_EQ(halted.nodes(1).state(), pb::NODE_STATE_PREPARED);  // restored by its agent
  for (int i = 2; i < halted.nodes_size(); ++i) {
    EXPECT_EQ(halted.nodes(i).state(), pb::NODE_STATE_PREPARED) << halted.nodes(i).name();
    EXPECT_EQ(cluster.Transactions(halted.nodes(i).name()), 1)
        << halted.nodes(i).name() << " was touched after the failure";
  }
  EXPECT_FALSE(halted.has_in_flight());
}

TEST_P(EndToEndTest, CertificatesFromAnotherCaAreRefused) {
  LoopbackCluster cluster(GetParam());
  cluster.StartCoordinator();
  pb::NodesResponse nodes;
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
  grpc::Status status =
      cluster.Operator("rogue-operator")->Nodes(&context, pb::NodesRequest(), &nodes);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAVAILABLE);
  grpc::ClientContext agent_cert;
  agent_cert.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
  status = cluster.Operator("cp-1")->Nodes(&agent_cert, pb::NodesRequest(), &nodes);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::PERMISSION_DENIED);
}

INSTANTIATE_TEST_SUITE_P(Nodes, EndToEndTest, ::testing::Values(3, 5),
                         [](const ::testing::TestParamInfo<int>& param) {
                           return std::to_string(param.param) + "Nodes";
                         });

}  // namespace
}  // namespace handoff::testing
