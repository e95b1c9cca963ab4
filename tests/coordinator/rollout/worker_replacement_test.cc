// Replacing the workers (WR1–WR3): unit cases, and whole replacements of a fleet forwards and
// back with the operator's automation answering in random orders, each step checked against WR1.
#include "coordinator/rollout/worker_replacement.h"

#include <algorithm>
#include <cstddef>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "common/base/strings.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/coordinator/rollout/engine_nodes.h"
#include "tests/coordinator/rollout/worker_fleet.h"

namespace handoff::rollout {
namespace {

using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::kInTree;
using testing::kMigrated;
using testing::kPrepared;
using testing::Nodes;
using testing::Policy;
using testing::Worker;

constexpr NodeState kExternal = NodeState::kExternal;
using Kind = WorkerDecision::Kind;

WorkerStatus* Find(std::vector<WorkerStatus>& workers, const std::string& name) {
  for (WorkerStatus& worker : workers) {
    if (worker.name == name) return &worker;
  }
  return nullptr;
}

TEST(NextWorkerReplacementTest, AsksForAsManyToLeaveAsMaxUnavailableSpreadOverTheZones) {
  std::vector<WorkerStatus> workers = {Worker("a1", "a"), Worker("a2", "a"), Worker("a3", "a"),
                                       Worker("b1", "b"), Worker("c1", "c")};
  const auto cp = Nodes({kMigrated, kMigrated, kMigrated});
  WorkerDecision decision = NextWorkerReplacement(cp, workers, kMigrated, 5, Policy(2), Control());
  ASSERT_EQ(decision.kind, Kind::kRetire) << decision.reason;
  EXPECT_THAT(decision.nodes, ElementsAre("a1", "b1"));
  EXPECT_EQ(decision.old_left, 5u);
  EXPECT_THAT(decision.reason, AllOf(HasSubstr("WR1: ask 2 workers to leave (a1, b1)"),
                                     HasSubstr("5 serve, 3 after, at most 2 below the 5")));

  // Asked: they no longer serve, so nothing more may leave until new workers join.
  Find(workers, "a1")->leaving = Find(workers, "b1")->leaving = true;
  decision = NextWorkerReplacement(cp, workers, kMigrated, 5, Policy(2), Control());
  ASSERT_EQ(decision.kind, Kind::kWait) << decision.reason;
  EXPECT_EQ(decision.joins_wanted, 2u);
  EXPECT_THAT(decision.reason,
              AllOf(HasSubstr("2 workers to leave (a1, b1: agent away and Node deleted)"),
                    HasSubstr("2 new workers to join external"),
                    HasSubstr("0 new external of 5 serving, 5 old workers left (2 asked")));

  // One new worker joined but is not verified yet: it does not serve, and is named.
  workers.push_back(Worker("n1", "a", kExternal));
  workers.back().unverified = "its Node carries node.cloudprovider.kubernetes.io/uninitialized";
  decision = NextWorkerReplacement(cp, workers, kMigrated, 5, Policy(2), Control());
  ASSERT_EQ(decision.kind, Kind::kWait) << decision.reason;
  EXPECT_EQ(decision.joins_wanted, 1u);
  EXPECT_THAT(decision.reason,
              HasSubstr("1 new worker to be verified: n1 (its Node carries "
                        "node.cloudprovider.kubernetes.io/uninitialized)"));

  // Verified, it serves; but two are leaving already, as many as may at once.
  workers.back().unverified.clear();
  decision = NextWorkerReplacement(cp, workers, kMigrated, 5, Policy(2), Control());
  EXPECT_EQ(decision.kind, Kind::kWait) << decision.reason;
  // a1 gone: one more old worker may go, from a zone with none leaving (a and c; a by name).
  workers.erase(workers.begin());
  decision = NextWorkerReplacement(cp, workers, kMigrated, 5, Policy(2), Control());
  ASSERT_EQ(decision.kind, Kind::kRetire) << decision.reason;
  EXPECT_THAT(decision.nodes, ElementsAre("a2"));
}

TEST(NextWorkerReplacementTest, ASurgeLetsMoreLeave) {
  std::vector<WorkerStatus> workers = {Worker("w1", "z"), Worker("w2", "z")};
  for (const char* name : {"n1", "n2", "n3"}) workers.push_back(Worker(name, "z", kExternal));
  const WorkerDecision decision =
      NextWorkerReplacement(Nodes({kMigrated}), workers, kMigrated, 2, Policy(2), Control());
  ASSERT_EQ(decision.kind, Kind::kRetire) << decision.reason;
  EXPECT_THAT(decision.nodes, ElementsAre("w1", "w2"));
  EXPECT_EQ(decision.joins_wanted, 0u);
  // But never more leaving at once than max-unavailable, however many serve.
  EXPECT_THAT(
      NextWorkerReplacement(Nodes({kMigrated}), workers, kMigrated, 2, Policy(1), Control()).nodes,
      ElementsAre("w1"));
  workers[0].leaving = true;
  EXPECT_EQ(
      NextWorkerReplacement(Nodes({kMigrated}), workers, kMigrated, 2, Policy(1), Control()).kind,
      Kind::kWait);
}

TEST(NextWorkerReplacementTest, DoneOnlyWhenEveryOldWorkerIsGoneAndTheSizeServes) {
  const auto cp = Nodes({kMigrated});
  std::vector<WorkerStatus> workers = {Worker("n1", "z", kExternal), Worker("n2", "z", kExternal)};
  WorkerDecision decision = NextWorkerReplacement(cp, workers, kMigrated, 2, Policy(1), Control());
  EXPECT_EQ(decision.kind, Kind::kDone) << decision.reason;
  EXPECT_THAT(decision.reason, HasSubstr("every worker replaced: 2 new external workers serve"));
  // One fewer than there were: the replacement waits for the last join.
  decision = NextWorkerReplacement(cp, workers, kMigrated, 3, Policy(1), Control());
  EXPECT_EQ(decision.kind, Kind::kWait);
  EXPECT_EQ(decision.joins_wanted, 1u);
  // A leaving worker still listed, an unverified one, or a Node without an agent: not done.
  for (int variant = 0; variant < 3; ++variant) {
    std::vector<WorkerStatus> more = workers;
    more.push_back(Worker("x", "z", variant == 1 ? kExternal : kInTree));
    if (variant == 0) more.back().leaving = true;
    if (variant == 1) more.back().unverified = "its agent is away";
    if (variant == 2) more.back().has_agent = more.back().connected = false;
    decision = NextWorkerReplacement(cp, more, kMigrated, 2, Policy(1), Control());
    EXPECT_EQ(decision.kind, Kind::kWait) << variant << ": " << decision.reason;
  }
  EXPECT_EQ(NextWorkerReplacement(cp, {}, kMigrated, 0, Policy(1), Control()).kind, Kind::kDone);
}

TEST(NextWorkerReplacementTest, HaltPauseInconsistentAndW1) {
  std::vector<WorkerStatus> workers = {Worker("w1", "z"), Worker("w2", "z")};
  Control halted;
  halted.halted = true;
  halted.halt_reason = "R2 broken";
  WorkerDecision decision =
      NextWorkerReplacement(Nodes({kMigrated}), workers, kMigrated, 2, Policy(1), halted);
  EXPECT_EQ(decision.kind, Kind::kStuck);
  EXPECT_THAT(decision.reason, HasSubstr("R5: the rollout is halted (R2 broken)"));
  Control paused;
  paused.paused = true;
  EXPECT_EQ(NextWorkerReplacement(Nodes({kMigrated}), workers, kMigrated, 2, Policy(1), paused).kind,
            Kind::kWait);
  // W1 (WR3): forward, nothing leaves before a cloud-controller-manager runs.
  decision = NextWorkerReplacement(Nodes({kPrepared}), workers, kMigrated, 2, Policy(1), Control());
  EXPECT_EQ(decision.kind, Kind::kWait);
  EXPECT_THAT(decision.reason, HasSubstr("W1: no cloud-controller-manager runs"));
  // Back to in-tree needs none: the external ones are the old.
  std::vector<WorkerStatus> external = {Worker("n1", "z", kExternal)};
  decision = NextWorkerReplacement(Nodes({kPrepared}), external, kInTree, 1, Policy(1), Control());
  ASSERT_EQ(decision.kind, Kind::kRetire) << decision.reason;
  EXPECT_THAT(decision.nodes, ElementsAre("n1"));
  // Neither in-tree nor external: the operator looks; but a leaving worker's state is not judged.
  workers[1].state = NodeState::kInconsistent;
  decision = NextWorkerReplacement(Nodes({kMigrated}), workers, kMigrated, 2, Policy(1), Control());
  EXPECT_EQ(decision.kind, Kind::kStuck);
  EXPECT_THAT(decision.reason, HasSubstr("inconsistent: 1 worker is neither in-tree nor external (w2)"));
  workers[1].leaving = true;
  EXPECT_EQ(NextWorkerReplacement(Nodes({kMigrated}), workers, kMigrated, 2, Policy(1), Control())
                .kind,
            Kind::kWait);
}

TEST(NextWorkersTest, WorkersAskedToLeaveAreNeitherMovedNorAwaitedAsDone) {
  std::vector<WorkerStatus> workers = {Worker("w1", "z", kExternal), Worker("w2", "z")};
  workers[1].leaving = true;
  WorkerDecision decision = NextWorkers(Nodes({kMigrated}), workers, kMigrated, Policy(2), Control());
  EXPECT_EQ(decision.kind, Kind::kWait) << decision.reason;
  EXPECT_THAT(decision.reason, HasSubstr("waiting for 1 worker asked to leave by the replacement (w2)"));
  workers.push_back(Worker("w3", "z"));
  decision = NextWorkers(Nodes({kMigrated}), workers, kMigrated, Policy(2), Control());
  ASSERT_EQ(decision.kind, Kind::kMove) << decision.reason;
  EXPECT_THAT(decision.nodes, ElementsAre("w3"));
}

TEST(CombineFleetTest, ARetirementWaitsForTheControlPlaneInTransition) {
  auto cp = Nodes({kMigrated, kMigrated});
  cp[0].in_transition = true;
  const std::vector<WorkerStatus> workers = {Worker("w1", "z")};
  WorkerDecision retire;
  retire.kind = Kind::kRetire;
  retire.nodes = {"w1"};
  Decision done;
  done.kind = Decision::Kind::kDone;
  const FleetDecision fleet = CombineFleet(done, retire, cp, workers, kMigrated);
  EXPECT_EQ(fleet.part, FleetDecision::Part::kNeither);
  EXPECT_THAT(fleet.reason, HasSubstr("waiting for control-plane node a in transition"));
}

// A whole replacement forward and back: every step's retirements carried out at once, the
// automation then removing leaving workers and joining new ones in a random order (new workers
// unverified for a while), and WR1 checked at every step.
TEST(NextWorkerReplacementTest, WholeReplacementsKeepTheServingWorkersWithinTheBudget) {
  for (unsigned seed = 1; seed <= 200; ++seed) {
    std::mt19937 random(seed);
    const std::size_t size = 1 + random() % 12;
    const int max_unavailable = 1 + static_cast<int>(random() % 4);
    std::vector<WorkerStatus> workers;
    for (std::size_t i = 0; i < size; ++i) {
      workers.push_back(Worker(StrCat("old", i), StrCat("zone-", random() % 3)));
    }
    int next_name = 0;
    for (const NodeState goal : {kMigrated, kInTree}) {
      const NodeState target = WorkerTarget(goal);
      const std::size_t start_size = workers.size();
      bool done = false;
      for (int step = 0; step < 2000 && !done; ++step) {
        const WorkerDecision decision = NextWorkerReplacement(
            Nodes({kMigrated}), workers, goal, start_size, Policy(max_unavailable), Control());
        ASSERT_NE(decision.kind, Kind::kStuck) << seed << ": " << decision.reason;
        if (decision.kind == Kind::kDone) {
          done = true;
          break;
        }
        if (decision.kind == Kind::kRetire) {
          for (const std::string& name : decision.nodes) {
            WorkerStatus* worker = Find(workers, name);
            ASSERT_NE(worker, nullptr);
            ASSERT_NE(worker->state, target) << seed << ": a new worker asked to leave";
            ASSERT_FALSE(worker->leaving);
            worker->leaving = true;
          }
        }
        // WR1, as the test counts it.
        const auto leaving = static_cast<std::size_t>(std::count_if(
            workers.begin(), workers.end(), [](const WorkerStatus& w) { return w.leaving; }));
        ASSERT_LE(leaving, static_cast<std::size_t>(max_unavailable)) << seed;
        std::size_t serving = 0;
        for (const WorkerStatus& worker : workers) {
          if (!worker.leaving && (worker.state != target || worker.unverified.empty())) ++serving;
        }
        ASSERT_GE(serving + static_cast<std::size_t>(max_unavailable), start_size)
            << seed << " step " << step << ": " << decision.reason;
        // The automation does one thing at random.
        switch (random() % 3) {
          case 0: {  // a leaving worker goes
            auto it = std::find_if(workers.begin(), workers.end(),
                                   [](const WorkerStatus& w) { return w.leaving; });
            if (it != workers.end()) workers.erase(it);
            break;
          }
          case 1:  // a new worker joins, when some are wanted (sometimes one more: a surge)
            if (decision.joins_wanted > 0 || random() % 8 == 0) {
              workers.push_back(
                  Worker(StrCat("new", next_name++), StrCat("zone-", random() % 3), target));
              workers.back().unverified = "its Node has no providerID yet";
            }
            break;
          default:  // a joined worker is verified
            for (WorkerStatus& worker : workers) {
              if (!worker.unverified.empty()) {
                worker.unverified.clear();
                break;
              }
            }
        }
      }
      ASSERT_TRUE(done) << seed;
      EXPECT_GE(workers.size(), start_size) << seed;
      for (const WorkerStatus& worker : workers) {
        EXPECT_EQ(worker.state, target) << seed;
        EXPECT_FALSE(worker.leaving);
      }
      for (const WorkerStatus& worker : workers) {
        EXPECT_TRUE(StartsWith(worker.name, "new")) << seed << ": " << worker.name << " stayed";
      }
      for (WorkerStatus& worker : workers) worker.name = StrCat("was-", worker.name);
    }
  }
}

}  // namespace
}  // namespace handoff::rollout
