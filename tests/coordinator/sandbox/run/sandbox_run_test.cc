// `handoffctl sandbox` as the operator runs it: the real binaries, the invariant monitor, and
// its summary. Each run takes seconds to a minute (real lease handovers with 1s leases).
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/coordinator/sandbox/run/handoffctl_sandbox.h"

namespace handoff::sandbox {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

using testing::SandboxOutcome;

SandboxOutcome Sandbox(const std::vector<std::string>& flags) {
  return testing::RunHandoffctlSandbox(HANDOFFCTL_BIN, flags, absl::Minutes(4));
}

void ExpectCompletedAndHeld(const SandboxOutcome& run) {
  EXPECT_EQ(run.exit_code, 0) << run.output;
  EXPECT_THAT(run.output, HasSubstr("rollout to 1.27 and rollback to 1.26 completed"));
  EXPECT_THAT(run.output, HasSubstr("invariant held: no cloud controller ran in two processes"));
  EXPECT_THAT(run.output, Not(HasSubstr("INVARIANT BROKEN")));
}

TEST(SandboxRunTest, ThreeNodesMigrateAndComeBackWithTheInvariantHeld) {
  SandboxOutcome run = Sandbox({});
  ExpectCompletedAndHeld(run);
  EXPECT_THAT(run.output, HasSubstr("node providerIDs: all 3 control-plane nodes"));
  EXPECT_THAT(run.output, HasSubstr("steps: 12 moves carried out by the agents"));
  EXPECT_THAT(run.output, HasSubstr("DONE:  cp-1 migrated  cp-2 migrated  cp-3 migrated"));
  EXPECT_THAT(run.output, HasSubstr("DONE:  cp-1 in-tree  cp-2 in-tree  cp-3 in-tree"));
  EXPECT_THAT(run.output, HasSubstr("components:\n  model: fake API server, stand-in managers\n"));
}

TEST(SandboxRunTest, FiveNodes) {
  SandboxOutcome run = Sandbox({"--nodes", "5"});
  ExpectCompletedAndHeld(run);
  EXPECT_THAT(run.output, HasSubstr("steps: 20 moves carried out by the agents"));
}

TEST(SandboxRunTest, AnAgentKilledMidMove) {
  SandboxOutcome run = Sandbox({"--fault", "agent-kill"});
  ExpectCompletedAndHeld(run);
  EXPECT_THAT(run.output, HasSubstr("fault: kill -9 the agent of cp-2 during move"));
}

TEST(SandboxRunTest, TheCoordinatorKilledMidRollout) {
  SandboxOutcome run = Sandbox({"--fault", "coordinator-kill"});
  ExpectCompletedAndHeld(run);
  EXPECT_THAT(run.output, HasSubstr("fault: kill -9 the coordinator during move"));
}

TEST(SandboxRunTest, AComponentThatNeverGetsHealthyIsRolledBackAndHaltsTheRollout) {
  SandboxOutcome run = Sandbox({"--fault", "unhealthy"});
  ExpectCompletedAndHeld(run);
  EXPECT_THAT(run.output, HasSubstr("halted as it must be: cp-2: prepared → migrated rolled back"));
}

TEST(SandboxRunTest, AStrayBackupFileStopsTheRolloutUntilItIsRemoved) {
  SandboxOutcome run = Sandbox({"--fault", "stray-backup"});
  ExpectCompletedAndHeld(run);
  EXPECT_THAT(run.output, HasSubstr("refused as it must be: handoffctl start: the preflight "
                                    "checks refuse to start the rollout (nothing was moved)"));
  EXPECT_THAT(run.output, HasSubstr("[agents] cp-2: inconsistent"));
}

// The monitor is proven able to fail: the order the coordinator forbids breaks the invariant.
TEST(SandboxRunTest, TheMonitorCatchesTheUnsafeOrder) {
  SandboxOutcome run = Sandbox({"--unsafe-order-for-tests"});
  EXPECT_EQ(run.exit_code, 1) << run.output;
  EXPECT_THAT(run.output, HasSubstr("INVARIANT BROKEN"));
  EXPECT_THAT(run.output, HasSubstr("cloud-controller-manager"));
}

TEST(SandboxRunTest, AnUnknownClusterIsRefused) {
  SandboxOutcome run = Sandbox({"--cluster", "minikube"});
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_THAT(run.output, HasSubstr("--cluster \"minikube\" is not one of model, real"));
}

TEST(SandboxRunTest, AnUnknownFaultIsRefused) {
  SandboxOutcome run = Sandbox({"--fault", "meteor"});
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_THAT(run.output, HasSubstr("--fault \"meteor\" is not one of"));
}

}  // namespace
}  // namespace handoff::sandbox
