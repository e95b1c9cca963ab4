// `handoffctl sandbox --cluster real` as the operator runs it: etcd, kube-apiserver 1.26, the
// real kube-controller-manager 1.26 (--cloud-provider=aws) and aws-cloud-controller-manager 1.27
// as the nodes' static pods against the fake AWS, the agents and the coordinator; the monitor
// reads the managers' own logs. Needs root (mount namespaces) and the components
// (tests/real/components.sh): without them the cases skip, or fail when HANDOFF_REQUIRE_REAL=1.
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "rehearsal/real/components.h"
#include "tests/real/require_components.h"
#include "tests/rehearsal/sandbox/run/handoffctl_sandbox.h"

namespace handoff::sandbox {
namespace {

using ::testing::ContainsRegex;
using ::testing::HasSubstr;
using ::testing::Not;

bool CanRunRealCluster() {
  return testing::CanRunOnRealComponents(
      {real::kEtcd, real::kKubeApiserver, real::kKubeControllerManager,
       real::kAwsCloudControllerManager, real::kFakeAws},
      "the real cluster");
}

// A run expected to exit `expected_exit_code` (another keeps its logs, HandoffctlSandbox).
testing::SandboxOutcome Sandbox(const std::vector<std::string>& flags, int expected_exit_code = 0) {
  std::vector<std::string> all = {"--cluster", "real"};
  all.insert(all.end(), flags.begin(), flags.end());
  return testing::RunHandoffctlSandbox(HANDOFFCTL_BIN, all, absl::Minutes(8), expected_exit_code);
}

TEST(SandboxRealRunTest, ThreeNodesMoveToTheRealCloudControllerManagerAndBack) {
  if (!CanRunRealCluster()) GTEST_SKIP() << "the real components cannot run here (why: above)";
  testing::SandboxOutcome run = Sandbox({});
  EXPECT_EQ(run.exit_code, 0) << run.output;
  EXPECT_THAT(run.output, HasSubstr("rollout to 1.27 and rollback to 1.26 completed"));
  EXPECT_THAT(run.output, HasSubstr("DONE:  cp-1 migrated  cp-2 migrated  cp-3 migrated"));
  EXPECT_THAT(run.output, HasSubstr("DONE:  cp-1 in-tree  cp-2 in-tree  cp-3 in-tree"));
  EXPECT_THAT(run.output, HasSubstr("node providerIDs: all 3 control-plane nodes"));
  EXPECT_THAT(run.output, HasSubstr("steps: 12 moves carried out by the agents"));
  EXPECT_THAT(run.output, HasSubstr("invariant held: no cloud controller ran in two processes"));
  EXPECT_THAT(run.output, Not(HasSubstr("INVARIANT BROKEN")));
  // The summary names every real component and its version, and the gaps it measured.
  for (const char* component :
       {"kube-apiserver v1.26.", "kube-controller-manager v1.26.",
        "aws-cloud-controller-manager v1.27.", "etcd v", "moto "}) {
    EXPECT_THAT(run.output, HasSubstr(std::string("\n  ") + component)) << component;
  }
  EXPECT_THAT(run.output, HasSubstr("in-tree again: a kube-controller-manager holds its lease"));
  // At least the in-tree manager before, the cloud-controller-manager, and an in-tree manager
  // after; more when a move restarts the holder.
  EXPECT_THAT(run.output, ContainsRegex("\n  service: ([3-9]|[1-9][0-9]) runs, longest gap "));
  EXPECT_THAT(run.output,
              ContainsRegex("\n  cloud-node-lifecycle: ([3-9]|[1-9][0-9]) runs, longest gap "));
}

// handoffctl preflight against the real API server and the fake AWS: the healthy cluster passes,
// each failure of the field planted on it in turn fails exactly its check, naming the object,
// and passes again once removed; then the rollout goes on.
TEST(SandboxRealRunTest, EachPreflightFaultFailsExactlyItsCheckOnTheRealCluster) {
  if (!CanRunRealCluster()) GTEST_SKIP() << "the real components cannot run here (why: above)";
  testing::SandboxOutcome run =
      Sandbox({"--nodes", "2", "--goal", "prepared", "--fault", "preflight"});
  EXPECT_EQ(run.exit_code, 0) << run.output;
  EXPECT_THAT(run.output, HasSubstr("handoffctl preflight: no check fails on the healthy cluster"));
  for (const char* check : {"node-names", "cluster-tag", "ecr-credentials", "ebs-csi",
                            "leader-elect", "stray-files", "rbac"}) {
    EXPECT_THAT(run.output, HasSubstr(std::string(" -> only ") + check + " fails, naming "))
        << check;
  }
  EXPECT_THAT(run.output, HasSubstr("each of 7 faults failed exactly its check"));
  EXPECT_THAT(run.output, HasSubstr("invariant held: no cloud controller ran in two processes"));
}

// AWS's downtime path on the real managers: the real kube-controller-manager 1.26 parked on every
// node, every node switched to --cloud-provider=external (the real one back, external), then the
// real aws-cloud-controller-manager 1.27 started without Leader Migration; and back.
TEST(SandboxRealRunTest, TheDowntimeStrategyOnTheRealManagers) {
  if (!CanRunRealCluster()) GTEST_SKIP() << "the real components cannot run here (why: above)";
  testing::SandboxOutcome run = Sandbox({"--strategy", "downtime"});
  EXPECT_EQ(run.exit_code, 0) << run.output;
  EXPECT_THAT(run.output, HasSubstr("rollout to 1.27 by the downtime strategy and rollback to 1.26 "
                                    "completed"));
  EXPECT_THAT(run.output, HasSubstr("DONE:  cp-1 finalized  cp-2 finalized  cp-3 finalized"));
  EXPECT_THAT(run.output, HasSubstr("DONE:  cp-1 in-tree  cp-2 in-tree  cp-3 in-tree"));
  EXPECT_THAT(run.output, HasSubstr("node providerIDs: all 3 control-plane nodes"));
  EXPECT_THAT(run.output, HasSubstr("steps: 18 moves carried out by the agents"));
  EXPECT_THAT(run.output, ContainsRegex("\ndowntime: no kube-controller-manager for [0-9.]+s, no "
                                        "cloud controllers for [0-9.]+s \\(measured by the "
                                        "coordinator"));
  EXPECT_THAT(run.output, HasSubstr("invariant held: no cloud controller ran in two processes"));
  EXPECT_THAT(run.output, HasSubstr("in-tree again: a kube-controller-manager holds its lease"));
}

TEST(SandboxRealRunTest, TheMonitorCatchesTheUnsafeOrderOnRealManagers) {
  if (!CanRunRealCluster()) GTEST_SKIP() << "the real components cannot run here (why: above)";
  testing::SandboxOutcome run = Sandbox({"--unsafe-order-for-tests"}, 1);
  EXPECT_EQ(run.exit_code, 1) << run.output;
  EXPECT_THAT(run.output, HasSubstr("INVARIANT BROKEN: service ran in "));
  // The two at once are the in-tree kube-controller-manager (no Leader Migration) and the real
  // cloud-controller-manager, as their own logs tell.
  EXPECT_THAT(run.output, HasSubstr("kube-controller-manager pid"));
  EXPECT_THAT(run.output, HasSubstr("cloud-controller-manager pid"));
  // The coordinator saw it too, from the real managers' own /healthz?verbose, and halted the
  // rollout under way; `handoffctl status` names both managers and their nodes.
  EXPECT_THAT(run.output, HasSubstr("coordinator halted the rollout: double run: "));
  EXPECT_THAT(run.output, ContainsRegex("\nhalted: +double run: (service|cloud-node-lifecycle) "
                                        "ran in [a-z-]+-controller-manager on cp-[0-9] \\(pid "
                                        "[0-9]+\\) and in [a-z-]+-controller-manager on cp-[0-9]"));
  EXPECT_THAT(run.output, ContainsRegex("\nservice +TWICE: [a-z-]+-controller-manager on cp-[0-9] "
                                        "\\(pid [0-9]+, since [^)]+\\) and [a-z-]+-controller-"
                                        "manager on cp-[0-9]"));
  EXPECT_THAT(run.output, HasSubstr("kube-controller-manager on cp-"));
  EXPECT_THAT(run.output, HasSubstr("cloud-controller-manager on cp-"));
}

}  // namespace
}  // namespace handoff::sandbox
