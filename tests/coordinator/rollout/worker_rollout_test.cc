// The workers' rules (W1–W5) and batches: unit cases, every combination of a small fleet checked
// against the rules, and whole rollouts of a fleet forwards and back with failures on the way.
#include "coordinator/rollout/worker_rollout.h"

#include <algorithm>
#include <cstddef>
#include <map>
#include <random>
#include <set>
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
using testing::GoodFacts;
using testing::kFinalized;
using testing::kInTree;
using testing::kMigrated;
using testing::kPrepared;
using testing::Nodes;
using testing::Policy;
using testing::Worker;

constexpr NodeState kExternal = NodeState::kExternal;
constexpr NodeState kStopped = NodeState::kStopped;
constexpr NodeState kUnknown = NodeState::kInconsistent;

TEST(MaxUnavailableTest, ANumberOrAPercentage) {
  ASSERT_TRUE(ParseMaxUnavailable("3").ok());
  EXPECT_EQ(ParseMaxUnavailable("3")->value, 3);
  EXPECT_FALSE(ParseMaxUnavailable("3")->percent);
  EXPECT_TRUE(ParseMaxUnavailable("10%")->percent);
  EXPECT_EQ(FormatMaxUnavailable(*ParseMaxUnavailable("10%")), "10%");
  for (const char* bad : {"", "0", "-1", "0%", "101%", "%", "3x", "1.5", "10 %", " 3"}) {
    absl::StatusOr<MaxUnavailable> parsed = ParseMaxUnavailable(bad);
    EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_THAT(std::string(parsed.status().message()), HasSubstr("--max-unavailable")) << bad;
  }
  EXPECT_EQ(AllowedInFlight(MaxUnavailable{10, true}, 5), 1u);  // at least one
  EXPECT_EQ(AllowedInFlight(MaxUnavailable{10, true}, 35), 3u);  // rounded down
  EXPECT_EQ(AllowedInFlight(MaxUnavailable{100, true}, 35), 35u);
  EXPECT_EQ(AllowedInFlight(MaxUnavailable{4, false}, 2), 4u);
}

TEST(NextWorkersTest, ABatchIsSpreadOverTheZones) {
  std::vector<WorkerStatus> workers;
  for (const char* name : {"a1", "a2", "a3", "a4", "a5"}) workers.push_back(Worker(name, "us-east-1a"));
  for (const char* name : {"b1", "b2", "b3"}) workers.push_back(Worker(name, "us-east-1b"));
  workers.push_back(Worker("c1", "us-east-1c"));
  const auto cp = Nodes({kMigrated, kMigrated, kMigrated});
  WorkerDecision batch = NextWorkers(cp, workers, kMigrated, Policy(4), Control());
  ASSERT_EQ(batch.kind, WorkerDecision::Kind::kMove) << batch.reason;
  EXPECT_EQ(batch.to, kExternal);
  EXPECT_THAT(batch.nodes, ElementsAre("a1", "b1", "c1", "a2"));
  EXPECT_THAT(batch.reason,
              AllOf(HasSubstr("move 4 workers to external"),
                    HasSubstr("in flight by zone: us-east-1a: 2, us-east-1b: 1, us-east-1c: 1"),
                    HasSubstr("0 of 9 workers external")));

  // With a1 and a2 in flight, the next two come from the other zones.
  workers[0].in_transition = workers[1].in_transition = true;
  batch = NextWorkers(cp, workers, kMigrated, Policy(4), Control());
  EXPECT_THAT(batch.nodes, ElementsAre("b1", "c1"));
  // And at the budget, nothing more starts.
  workers[5].in_transition = workers[8].in_transition = true;
  batch = NextWorkers(cp, workers, kMigrated, Policy(4), Control());
  EXPECT_EQ(batch.kind, WorkerDecision::Kind::kWait);
  EXPECT_THAT(batch.reason, HasSubstr("W4: 4 of at most 4 workers in transition"));
}

TEST(NextWorkersTest, W1TheKubeletsWaitForACloudControllerManager) {
  const std::vector<WorkerStatus> workers = {Worker("w1", "z")};
  for (const auto& cp : {Nodes({kInTree, kPrepared}), Nodes({kPrepared, kPrepared}),
                         Nodes({kStopped, kStopped}), Nodes({kExternal, kStopped})}) {
    WorkerDecision decision = NextWorkers(cp, workers, kFinalized, Policy(1), Control());
    EXPECT_EQ(decision.kind, WorkerDecision::Kind::kWait);
    EXPECT_THAT(decision.reason, HasSubstr("W1: no cloud-controller-manager runs"));
    EXPECT_THAT(std::string(CheckWorkerMove(cp, workers, "w1", kExternal, Control()).message()),
                HasSubstr("W1:"));
  }
  for (const auto& cp : {Nodes({kMigrated, kPrepared}), Nodes({kFinalized, kExternal})}) {
    EXPECT_EQ(NextWorkers(cp, workers, kFinalized, Policy(1), Control()).kind,
              WorkerDecision::Kind::kMove);
  }
  // The way back needs none.
  const std::vector<WorkerStatus> external = {Worker("w1", "z", kExternal)};
  EXPECT_EQ(NextWorkers(Nodes({kPrepared}), external, kInTree, Policy(1), Control()).kind,
            WorkerDecision::Kind::kMove);
}

TEST(NextWorkersTest, W5TheFailureBudgetStopsTheRolloutNamingEachFailure) {
  const auto cp = Nodes({kMigrated});
  std::vector<WorkerStatus> workers = {Worker("w1", "z"), Worker("w2", "z"), Worker("w3", "z"),
                                       Worker("w4", "z")};
  workers[0].failure = "Node w1 is another object now";
  // Within the budget, the failed worker is skipped, not retried.
  WorkerDecision decision = NextWorkers(cp, workers, kMigrated, Policy(2, 2), Control());
  ASSERT_EQ(decision.kind, WorkerDecision::Kind::kMove) << decision.reason;
  EXPECT_THAT(decision.nodes, ElementsAre("w2", "w3"));
  workers[2].failure = "the credential provider did not answer";
  decision = NextWorkers(cp, workers, kMigrated, Policy(2, 2), Control());
  EXPECT_EQ(decision.kind, WorkerDecision::Kind::kStuck);
  EXPECT_THAT(decision.reason,
              AllOf(HasSubstr("W5: 2 workers failed, the failure budget is 2"),
                    HasSubstr("w1 (Node w1 is another object now)"),
                    HasSubstr("w3 (the credential provider did not answer)")));
  // Every other worker moved, one failed within the budget: stuck on it, not done.
  workers = {Worker("w1", "z"), Worker("w2", "z", kExternal)};
  workers[0].failure = "timed out";
  decision = NextWorkers(cp, workers, kMigrated, Policy(1, 5), Control());
  EXPECT_EQ(decision.kind, WorkerDecision::Kind::kStuck);
  EXPECT_THAT(decision.reason, AllOf(HasSubstr("w1 (timed out) failed and no other worker"),
                                     HasSubstr("1 of 2 workers external")));
}

TEST(NextWorkersTest, WorkersWithoutAnAgentAreNamedAndCounted) {
  std::vector<WorkerStatus> workers;
  for (int i = 0; i < 17; ++i) {
    WorkerStatus worker = Worker(StrCat("w", i), "z", kUnknown);
    worker.has_agent = worker.connected = false;
    workers.push_back(worker);
  }
  workers.push_back(Worker("ok", "z"));
  WorkerDecision decision = NextWorkers(Nodes({kMigrated}), workers, kMigrated, Policy(1), Control());
  EXPECT_EQ(decision.kind, WorkerDecision::Kind::kStuck);
  EXPECT_THAT(decision.reason,
              AllOf(HasSubstr("17 workers have no agent: their kubelets cannot be moved"),
                    HasSubstr("w0, w1, w2, w3, w4 and 12 more")));
}

TEST(NextWorkersTest, DoneHaltedPausedDisconnected) {
  const auto cp = Nodes({kMigrated});
  std::vector<WorkerStatus> workers = {Worker("w1", "z", kExternal)};
  EXPECT_EQ(NextWorkers(cp, workers, kMigrated, Policy(1), Control()).kind,
            WorkerDecision::Kind::kDone);
  EXPECT_EQ(NextWorkers(cp, {}, kMigrated, Policy(1), Control()).reason, "no workers");
  workers = {Worker("w1", "z")};
  Control halted;
  halted.halted = true;
  halted.halt_reason = "aborted by the operator";
  EXPECT_THAT(NextWorkers(cp, workers, kMigrated, Policy(1), halted).reason,
              HasSubstr("R5: the rollout is halted (aborted by the operator)"));
  Control paused;
  paused.paused = true;
  EXPECT_EQ(NextWorkers(cp, workers, kMigrated, Policy(1), paused).kind,
            WorkerDecision::Kind::kWait);
  workers[0].connected = false;
  WorkerDecision decision = NextWorkers(cp, workers, kMigrated, Policy(1), Control());
  EXPECT_EQ(decision.kind, WorkerDecision::Kind::kWait);
  EXPECT_THAT(decision.reason, HasSubstr("disconnected: 1 worker's agent is not connected (w1)"));
}

TEST(W2Test, TheLastCloudControllerManagerStaysWhileAWorkerIsExternal) {
  ClusterFacts facts = GoodFacts();
  facts.external_workers = 2;
  absl::Status refused = CheckMove(Nodes({kMigrated, kPrepared}), "a", kPrepared, facts, Control());
  EXPECT_EQ(refused.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(refused.message()),
              HasSubstr("W2: 2 workers' kubelets are external; node a keeps the last "
                        "cloud-controller-manager"));
  // The downtime path's last finalized node the same.
  EXPECT_THAT(std::string(CheckMove(Nodes({kFinalized, kExternal}), "a", kExternal, facts,
                                    Control()).message()),
              HasSubstr("W2:"));
  // Another node keeps one, or no worker is external: allowed.
  EXPECT_TRUE(CheckMove(Nodes({kMigrated, kMigrated}), "a", kPrepared, facts, Control()).ok());
  facts.external_workers = 0;
  EXPECT_TRUE(CheckMove(Nodes({kMigrated, kPrepared}), "a", kPrepared, facts, Control()).ok());
}

TEST(UpgradeGateTest, OpensOnlyWhenEveryKubeletAndManagerIsExternal) {
  std::vector<WorkerStatus> workers = {Worker("w1", "z", kExternal), Worker("w2", "z")};
  UpgradeGate gate = CheckUpgradeGate(Nodes({kFinalized, kMigrated}), workers,
                                      {"Node w1 carries node.cloudprovider.kubernetes.io/uninitialized"});
  EXPECT_FALSE(gate.open);
  EXPECT_THAT(gate.reasons,
              ElementsAre(HasSubstr("1 control-plane node is not finalized: b (migrated)"),
                          HasSubstr("1 worker's kubelet is not external: w2"),
                          HasSubstr("uninitialized")));
  workers[1].state = kExternal;
  gate = CheckUpgradeGate(Nodes({kFinalized, kFinalized}), workers, {});
  EXPECT_TRUE(gate.open);
  EXPECT_TRUE(gate.reasons.empty());
}

// Every combination of two control-plane nodes and two workers (state, in transition, connected,
// failed, with or without an agent), each goal, control and policy: what NextWorkers returns and
// what NextFleetStep chooses keep the rules.
TEST(WorkerRulesTest, EveryCombinationOfASmallFleetKeepsTheRules) {
  const std::vector<NodeState> cp_states = {kInTree, kPrepared, kMigrated, kFinalized, kStopped,
                                            kExternal};
  std::vector<WorkerStatus> variants;
  for (NodeState state : {kInTree, kExternal, kUnknown}) {
    for (int bits = 0; bits < 8; ++bits) {
      WorkerStatus worker = Worker("", "", state);
      worker.in_transition = (bits & 1) != 0;
      worker.connected = (bits & 2) != 0;
      worker.failure = (bits & 4) != 0 ? "failed" : "";
      worker.has_agent = !(state == kUnknown && !worker.connected && !worker.in_transition);
      variants.push_back(worker);
    }
  }
  Control halted;
  halted.halted = true;
  Control paused;
  paused.paused = true;
  std::size_t checked = 0, moves = 0, fleet_moves = 0;
  for (NodeState a : cp_states) {
    for (NodeState b : cp_states) {
      const std::vector<NodeStatus> cp = Nodes({a, b});
      for (const WorkerStatus& first : variants) {
        for (const WorkerStatus& second : variants) {
          std::vector<WorkerStatus> workers = {first, second};
          workers[0].name = "w1";
          workers[0].zone = "z1";
          workers[1].name = "w2";
          workers[1].zone = "z2";
          std::size_t in_flight = 0, failed = 0;
          for (const WorkerStatus& w : workers) in_flight += w.in_transition ? 1 : 0;
          for (NodeState goal : {kMigrated, kFinalized, kPrepared, kInTree}) {
            const NodeState target = WorkerTarget(goal);
            failed = 0;
            bool all_there = true;
            for (const WorkerStatus& w : workers) {
              failed += !w.failure.empty() && !w.in_transition && w.state != target ? 1 : 0;
              all_there = all_there && !w.in_transition && w.state == target;
            }
            for (const Control& control : {Control(), halted, paused}) {
              for (const WorkerPolicy& policy : {Policy(1, 1), Policy(2, 2)}) {
                ++checked;
                const WorkerDecision d = NextWorkers(cp, workers, goal, policy, control);
                const std::string where =
                    StrCat(NodeStateName(a), "/", NodeStateName(b), " ", d.reason);
                ASSERT_FALSE(d.reason.empty());
                ASSERT_EQ(d.kind == WorkerDecision::Kind::kDone, all_there) << where;
                if (!all_there && control.halted) {
                  ASSERT_EQ(d.kind, WorkerDecision::Kind::kStuck) << where;
                }
                if (d.kind != WorkerDecision::Kind::kMove) {
                  ASSERT_TRUE(d.nodes.empty()) << where;
                } else {
                  ++moves;
                  ASSERT_FALSE(control.halted || control.paused) << where;
                  ASSERT_LT(failed, static_cast<std::size_t>(policy.failure_budget)) << where;
                  ASSERT_EQ(d.to, target) << where;
                  ASSERT_LE(in_flight + d.nodes.size(),
                            AllowedInFlight(policy.max_unavailable, workers.size()))
                      << where;
                  ASSERT_EQ(std::set<std::string>(d.nodes.begin(), d.nodes.end()).size(),
                            d.nodes.size());
                  // W1, and every rule CheckWorkerMove holds.
                  if (target == kExternal) {
                    ASSERT_TRUE(CloudControllerManagerRuns(cp)) << where;
                  }
                  for (const std::string& name : d.nodes) {
                    const absl::Status ok = CheckWorkerMove(cp, workers, name, d.to, control);
                    ASSERT_TRUE(ok.ok()) << where << ": " << ok;
                    for (const WorkerStatus& w : workers) {
                      if (w.name == name) {
                        ASSERT_TRUE(w.failure.empty()) << where;
                      }
                    }
                  }
                }
                const FleetDecision fleet =
                    NextFleetStep(cp, workers, Goal{goal}, GoodFacts(), policy, control);
                ASSERT_FALSE(fleet.reason.empty()) << where;
                if (fleet.part == FleetDecision::Part::kControlPlane &&
                    fleet.control_plane.kind == Decision::Kind::kMove) {
                  ++fleet_moves;
                  ClusterFacts facts = GoodFacts();
                  facts.external_workers = ExternalWorkers(workers);
                  ASSERT_EQ(in_flight, 0u) << where;
                  const absl::Status ok = CheckMove(cp, fleet.control_plane.node,
                                                    fleet.control_plane.to, facts, control);
                  ASSERT_TRUE(ok.ok()) << where << ": " << ok;
                }
                if (fleet.part == FleetDecision::Part::kWorkers &&
                    fleet.workers.kind == WorkerDecision::Kind::kMove) {
                  ++fleet_moves;
                  for (const NodeStatus& n : cp) ASSERT_FALSE(n.in_transition) << where;
                }
              }
            }
          }
        }
      }
    }
  }
  // The combinations do reach every kind of decision.
  EXPECT_GT(moves, 1000u);
  EXPECT_GT(fleet_moves, 1000u);
  EXPECT_EQ(checked, 36u * 576u * 4u * 3u * 2u);
}

// Whole rollouts: three control-plane nodes and eleven workers over three zones, to finalized and
// back to in-tree, moves finishing in a random order and some failing (the agent rolls back; the
// operator resumes once the budget is spent). After every step: no worker external (or moving)
// without a cloud-controller-manager on the control plane (W1, W2), never more in flight than
// allowed, and each goal reached.
TEST(WorkerRulesTest, WholeRolloutsForwardAndBackKeepTheRules) {
  std::mt19937_64 rng(20261202);
  int resumes = 0;
  for (int run = 0; run < 300; ++run) {
    std::vector<NodeStatus> cp = Nodes({kInTree, kInTree, kInTree});
    std::vector<WorkerStatus> workers;
    for (int i = 0; i < 11; ++i) {
      workers.push_back(Worker(StrCat("w", i), StrCat("zone-", i % 3)));
    }
    std::map<std::string, NodeState> moving_to;
    const WorkerPolicy policy = Policy(1 + static_cast<int>(rng() % 4), 2);
    Control control;
    for (NodeState goal : {kFinalized, kInTree}) {
      bool done = false;
      for (int step = 0; step < 400 && !done; ++step) {
        const FleetDecision fleet =
            NextFleetStep(cp, workers, Goal{goal}, GoodFacts(), policy, control);
        done = fleet.done;
        if (fleet.part == FleetDecision::Part::kControlPlane &&
            fleet.control_plane.kind == Decision::Kind::kMove) {
          for (NodeStatus& n : cp) {
            if (n.name == fleet.control_plane.node) n.state = fleet.control_plane.to;
          }
        } else if (fleet.part == FleetDecision::Part::kWorkers &&
                   fleet.workers.kind == WorkerDecision::Kind::kMove) {
          for (const std::string& name : fleet.workers.nodes) {
            for (WorkerStatus& w : workers) {
              if (w.name == name) w.in_transition = true;
            }
            moving_to[name] = fleet.workers.to;
          }
        } else if (!moving_to.empty()) {
          // One move in flight ends: mostly done, sometimes failed and rolled back.
          auto it = moving_to.begin();
          std::advance(it, static_cast<long>(rng() % moving_to.size()));
          for (WorkerStatus& w : workers) {
            if (w.name != it->first) continue;
            w.in_transition = false;
            if (rng() % 10 == 0) {
              w.failure = "scripted failure";
            } else {
              w.state = it->second;
            }
          }
          moving_to.erase(it);
        } else if (fleet.workers.kind == WorkerDecision::Kind::kStuck &&
                   fleet.workers.reason.rfind("W5:", 0) == 0) {
          // The operator looks, fixes, resumes.
          ++resumes;
          for (WorkerStatus& w : workers) w.failure.clear();
        } else if (!done) {
          FAIL() << "run " << run << " stopped: " << fleet.reason;
        }
        std::size_t in_flight = 0;
        bool any_external = false;
        for (const WorkerStatus& w : workers) {
          in_flight += w.in_transition ? 1 : 0;
          any_external = any_external || w.state == kExternal || w.in_transition;
        }
        ASSERT_LE(in_flight, AllowedInFlight(policy.max_unavailable, workers.size()));
        if (any_external) {
          ASSERT_TRUE(CloudControllerManagerRuns(cp)) << "run " << run;
        }
      }
      ASSERT_TRUE(done) << "run " << run << " did not reach " << NodeStateName(goal);
      for (const WorkerStatus& w : workers) ASSERT_EQ(w.state, WorkerTarget(goal));
      for (const NodeStatus& n : cp) ASSERT_EQ(n.state, goal);
    }
  }
  // Failures did spend the budget, and the rollouts went on after the operator resumed.
  EXPECT_GT(resumes, 10);
}

}  // namespace
}  // namespace handoff::rollout
