// `handoffctl sandbox` as the operator runs it: the real binaries, the invariant monitor, and
// its summary. Each run takes seconds to a minute (real lease handovers with 1s leases).
#include <map>
#include <regex>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/common/system/metrics_scrape.h"
#include "tests/rehearsal/sandbox/run/handoffctl_sandbox.h"

namespace handoff::sandbox {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

using testing::SandboxOutcome;

// A run expected to exit `expected_exit_code` (another keeps its logs, HandoffctlSandbox).
SandboxOutcome Sandbox(const std::vector<std::string>& flags, int expected_exit_code = 0) {
  return testing::RunHandoffctlSandbox(HANDOFFCTL_BIN, flags, absl::Minutes(4), expected_exit_code);
}

using testing::ReadText;

// A run whose directory the test reads (the timeline).
class KeptSandbox : public testing::HandoffctlSandbox {
 public:
  explicit KeptSandbox(const std::vector<std::string>& flags, int expected_exit_code = 0)
      : HandoffctlSandbox(HANDOFFCTL_BIN, flags, absl::Minutes(4), expected_exit_code) {}
};

// Seconds from "2.3s".
double SecondsOf(const std::string& text) { return std::stod(text.substr(0, text.size() - 1)); }

// The run's timeline is where the summary says, and shows every move the history counted per
// node and every gap behind each controller's "longest gap" and "no runner for" figures.
// Returns the SVG.
std::string ExpectTimelineShowsTheSummary(const KeptSandbox& sandbox) {
  const std::string& output = sandbox.run().output;
  const std::string path = sandbox.sandbox_dir() + "/timeline.svg";
  EXPECT_THAT(output, HasSubstr("\ntimeline: " + path + "\n")) << output;
  const std::string svg = ReadText(path);
  EXPECT_EQ(svg.rfind("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg ", 0), 0u) << path;
  EXPECT_THAT(svg, ::testing::EndsWith("</svg>\n"));

  // Moves: the summary counts those with a result, per node.
  std::map<std::string, int> moves;
  const std::regex move_title("<g class=\"move\"><title>([^:<]+): move [^<]*, result at ");
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), move_title);
       it != std::sregex_iterator(); ++it) {
    moves[(*it)[1]]++;
  }
  int steps = 0;
  const std::regex node_line("\n  ([a-z0-9.-]+): ([0-9]+) moves, [0-9.]+s in all(?=\n)");
  for (auto it = std::sregex_iterator(output.begin(), output.end(), node_line);
       it != std::sregex_iterator(); ++it) {
    EXPECT_EQ(moves[(*it)[1]], std::stoi((*it)[2])) << "moves of " << (*it)[1] << " in " << path;
    steps += std::stoi((*it)[2]);
  }
  EXPECT_GT(steps, 0) << output;
  EXPECT_THAT(output, HasSubstr("steps: " + std::to_string(steps) + " moves"));

  // Gaps: each controller's longest is drawn, and the gaps drawn add up to its time with no
  // runner (each rounded to a tenth).
  std::map<std::string, std::vector<double>> gaps;
  const std::regex gap_title("<g class=\"gap\"><title>([a-z-]+): no runner for ([0-9.]+s)");
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), gap_title);
       it != std::sregex_iterator(); ++it) {
    gaps[(*it)[1]].push_back(SecondsOf((*it)[2]));
    EXPECT_THAT(svg, HasSubstr(">" + std::string((*it)[2]) + "</text>"));  // its visible label
  }
  const std::regex controller_line(
      "\n  ([a-z-]+): [0-9]+ runs, longest gap ([0-9.]+s), no runner for ([0-9.]+s)");
  int controllers = 0;
  for (auto it = std::sregex_iterator(output.begin(), output.end(), controller_line);
       it != std::sregex_iterator(); ++it) {
    ++controllers;
    const std::string controller = (*it)[1];
    const double longest = SecondsOf((*it)[2]);
    const double no_runner = SecondsOf((*it)[3]);
    const std::vector<double>& drawn = gaps[controller];
    double sum = 0, max = 0;
    for (double gap : drawn) {
      sum += gap;
      max = std::max(max, gap);
    }
    EXPECT_DOUBLE_EQ(max, longest) << controller << " in " << path;
    EXPECT_NEAR(sum, no_runner, 0.05 * static_cast<double>(drawn.size() + 1))
        << controller << " in " << path;
  }
  EXPECT_GT(controllers, 0) << output;
  return svg;
}

// Every fault scenario: the rollout and rollback complete, the monitor's invariant holds, the
// coordinator's audit shows the leases it released for the managers its moves stopped, and its
// live double-run detector found nothing either.
void ExpectCompletedAndHeld(const SandboxOutcome& run) {
  EXPECT_EQ(run.exit_code, 0) << run.output;
  EXPECT_THAT(run.output, HasSubstr("rollout to 1.27 and rollback to 1.26 completed"));
  EXPECT_THAT(run.output, HasSubstr("invariant held: no cloud controller ran in two processes"));
  EXPECT_THAT(run.output, Not(HasSubstr("INVARIANT BROKEN")));
  EXPECT_THAT(run.output, ::testing::ContainsRegex("\nlease releases: [1-9][0-9]* released, "));
  EXPECT_THAT(run.output, ::testing::ContainsRegex("\n  cp-[0-9]: released lease [a-z-]+ of cp-"
                                                   "[0-9]_[0-9a-f-]+ \\([a-z-]+\\): its old "
                                                   "processes [0-9, ]+ exited by "));
  EXPECT_THAT(run.output, HasSubstr("\ndouble-run detector: nothing found\n"));
}

TEST(SandboxRunTest, ThreeNodesMigrateAndComeBackWithTheInvariantHeld) {
  KeptSandbox sandbox({});
  const SandboxOutcome& run = sandbox.run();
  ExpectCompletedAndHeld(run);
  const std::string svg = ExpectTimelineShowsTheSummary(sandbox);
  EXPECT_THAT(svg, HasSubstr("invariant held: no cloud controller ran in two processes"));
  EXPECT_THAT(svg, Not(HasSubstr("<g class=\"overlap\">")));
  EXPECT_THAT(svg, HasSubstr("kube-system/kube-controller-manager: held by "
                             "kube-controller-manager@cp-"));
  EXPECT_THAT(svg, HasSubstr("kube-system/cloud-controller-manager: held by "
                             "cloud-controller-manager@cp-"));
  EXPECT_THAT(run.output, HasSubstr("node providerIDs: all 3 control-plane nodes"));
  // 3 control-plane nodes in-tree → prepared → migrated and back, 2 workers in-tree → external
  // and back.
  EXPECT_THAT(run.output, HasSubstr("steps: 16 moves carried out by the agents"));
  EXPECT_THAT(run.output, HasSubstr("DONE:  cp-1 migrated  cp-2 migrated  cp-3 migrated  | "
                                    "workers: 0 in-tree, 2 external\n"));
  EXPECT_THAT(run.output, HasSubstr("DONE:  cp-1 in-tree  cp-2 in-tree  cp-3 in-tree  | "
                                    "workers: 2 in-tree, 0 external\n"));
  // The workers: moved after the control plane, back before it, each kept its Node and its
  // workload, as the sandbox saw them beside their agents' proofs.
  EXPECT_THAT(run.output, HasSubstr("5 agents connected"));
  EXPECT_THAT(run.output,
              HasSubstr("\nworkers: all 2 kubelets --cloud-provider=external (with "
                        "ecr-credential-provider), each the same Node (uid) with its providerID, "
                        "its workload never restarted\n"));
  EXPECT_THAT(run.output, HasSubstr("\nworkers: all 2 kubelets --cloud-provider=aws again, each "
                                    "the same Node (uid) with its providerID, its workload never "
                                    "restarted\n"));
  EXPECT_THAT(run.output, ::testing::ContainsRegex("\n  ip-127-0-2-1\\.ec2\\.internal: 2 moves, "));
  const std::string flags =
      ReadText(sandbox.sandbox_dir() + "/nodes/w-1/var/lib/kubelet/kubeadm-flags.env");
  EXPECT_THAT(flags, HasSubstr("--cloud-provider=aws"));
  EXPECT_THAT(flags, Not(HasSubstr("hostname-override")));
  EXPECT_THAT(run.output, HasSubstr("components:\n  model: fake API server, stand-in managers\n"));

  // The daemons ran as the package runs them: certificates from `handoffctl certs`, every option
  // from a configuration file.
  EXPECT_THAT(run.output, HasSubstr("one certificate each from handoffctl certs; every daemon "
                                    "started from its --config file"));
  EXPECT_THAT(ReadText(sandbox.sandbox_dir() + "/logs/handoffctl-certs.log"),
              HasSubstr("certs: created the handoff CA"));
  EXPECT_THAT(ReadText(sandbox.sandbox_dir() + "/coordinator.yaml"),
              HasSubstr("\nnodes: \"cp-1,cp-2,cp-3\"\n"));
  // Each agent's certificate where the package's configuration looks for it, on its node.
  EXPECT_THAT(ReadText(sandbox.sandbox_dir() + "/nodes/cp-2/etc/handoff/agent.yaml"),
              HasSubstr("\ncert: \"" + sandbox.sandbox_dir() +
                        "/nodes/cp-2/etc/handoff/pki/agent.crt\"\n"));
  EXPECT_EQ(ReadText(sandbox.sandbox_dir() + "/nodes/cp-2/etc/handoff/pki/agent.crt"),
            ReadText(sandbox.sandbox_dir() + "/pki/agent-cp-2.crt"));

  // Each daemon's /metrics, scraped at the end, is valid exposition text and counts what the
  // history counted: 12 moves, every lease release of the audit, no verification failure.
  const std::smatch releases = [&run] {
    std::smatch match;
    std::regex_search(run.output, match, std::regex("\nlease releases: ([0-9]+) released, "));
    return match;
  }();
  ASSERT_FALSE(releases.empty()) << run.output;
  EXPECT_THAT(run.output,
              HasSubstr("\n  coordinator: 16 moves, 0 verification failures, 1 rollbacks, " +
                        releases[1].str() + " lease releases, 0 double runs\n  agents: 16 moves\n"));
  ASSERT_TRUE(handoff::testing::HavePromtool())
      << "promtool (Debian's prometheus package, in packaging/install-deps.sh) is needed";
  for (const char* daemon : {"coordinator", "agent-cp-1", "agent-cp-2", "agent-cp-3"}) {
    const std::string text =
        ReadText(sandbox.sandbox_dir() + "/metrics/" + std::string(daemon) + ".prom");
    EXPECT_THAT(text, HasSubstr("# TYPE handoff_")) << daemon;
    EXPECT_EQ(handoff::testing::PromtoolProblems(text), "") << daemon;
  }
  EXPECT_THAT(ReadText(sandbox.sandbox_dir() + "/metrics/coordinator.prom"),
              HasSubstr("\nhandoff_coordinator_rollout_phase{phase=\"done\"} 1\n"));
}

// AWS's downtime path end to end: every kube-controller-manager stopped before any node switches,
// every node external before any cloud-controller-manager starts, the outage reported, and the
// way back along the same path.
TEST(SandboxRunTest, TheDowntimeStrategyStopsEverythingSwitchesThenStartsAndReportsTheOutage) {
  KeptSandbox sandbox({"--strategy", "downtime"});
  const SandboxOutcome& run = sandbox.run();
  EXPECT_EQ(run.exit_code, 0) << run.output;
  EXPECT_THAT(run.output, HasSubstr("lease release on (the coordinator releases a stopped "
                                    "holder's leases on proof of its exit), downtime strategy\n"));
  EXPECT_THAT(run.output, HasSubstr("handoffctl start --strategy downtime\n"));
  EXPECT_THAT(run.output, HasSubstr("rollout to 1.27 by the downtime strategy and rollback to 1.26 "
                                    "completed"));
  EXPECT_THAT(run.output, HasSubstr("invariant held: no cloud controller ran in two processes"));
  EXPECT_THAT(run.output, HasSubstr("DONE:  cp-1 finalized  cp-2 finalized  cp-3 finalized"));
  EXPECT_THAT(run.output, HasSubstr("DONE:  cp-1 in-tree  cp-2 in-tree  cp-3 in-tree"));
  // 18 of the control plane, 4 of the two workers, which go external only once a
  // cloud-controller-manager runs: on this path, after the last start (W1).
  EXPECT_THAT(run.output, HasSubstr("steps: 22 moves carried out by the agents"));
  EXPECT_THAT(run.output, HasSubstr("\ndouble-run detector: nothing found\n"));

  // Phase by phase: the first switch comes after the last stop, the first start after the last
  // switch; and back the same way.
  auto first = [&run](const std::string& text) { return run.output.find(text); };
  auto last = [&run](const std::string& text) { return run.output.rfind(text); };
  ASSERT_NE(first("in-tree→stopped"), std::string::npos) << run.output;
  EXPECT_LT(last("in-tree→stopped"), first("stopped→external"));
  EXPECT_LT(last("stopped→external"), first("external→finalized"));
  EXPECT_LT(last("finalized→external"), first("external→stopped"));
  EXPECT_LT(last("external→stopped"), first("stopped→in-tree"));

  // The summary's outage, as the coordinator measured it: the kube-controller-managers came back
  // (external) before the cloud controllers did.
  std::smatch downtime;
  ASSERT_TRUE(std::regex_search(
      run.output, downtime,
      std::regex("\ndowntime: no kube-controller-manager for ([0-9.]+s), no cloud controllers "
                 "for ([0-9.]+s) \\(measured by the coordinator")))
      << run.output;
  EXPECT_GT(SecondsOf(downtime[2].str()), 0.0);
  EXPECT_LE(SecondsOf(downtime[1].str()), SecondsOf(downtime[2].str()));

  // Each agent checked its instance's cluster tag in the (fake) instance metadata before
  // switching its node.
  for (const char* node : {"cp-1", "cp-2", "cp-3"}) {
    EXPECT_THAT(ReadText(sandbox.sandbox_dir() + "/logs/agent-" + node + ".log"),
                ::testing::ContainsRegex("moved stopped -> external .*note: instance i-[0-9a-f]+ "
                                         "carries kubernetes.io/cluster/handoff-sandbox=owned"))
        << node;
  }
}

TEST(SandboxRunTest, AnUnknownStrategyIsRefused) {
  SandboxOutcome run = Sandbox({"--strategy", "fast"}, 2);
  EXPECT_EQ(run.exit_code, 2) << run.output;
  EXPECT_THAT(run.output, HasSubstr("--strategy"));
}

// Workers where a cluster has none, or where a run rehearses the control plane alone, are refused
// before anything is made, saying why.
TEST(SandboxRunTest, WorkersWhereTheRunHasNoneAreRefused) {
  SandboxOutcome real = Sandbox({"--cluster", "real", "--workers", "1"}, 2);
  EXPECT_EQ(real.exit_code, 2) << real.output;
  EXPECT_THAT(real.output, HasSubstr("--workers needs --cluster model or kubeadm"));
  SandboxOutcome replace =
      Sandbox({"--cluster", "kubeadm", "--strategy", "replace", "--workers", "2"}, 2);
  EXPECT_EQ(replace.exit_code, 2) << replace.output;
  EXPECT_THAT(replace.output, HasSubstr("rehearse the control plane only (give --workers 0)"));
  SandboxOutcome many = Sandbox({"--workers", "21"}, 2);
  EXPECT_EQ(many.exit_code, 2) << many.output;
  EXPECT_THAT(many.output, HasSubstr("--workers must be between 0 and 20"));
}

TEST(SandboxRunTest, FiveNodes) {
  SandboxOutcome run = Sandbox({"--nodes", "5", "--workers", "0"});
  ExpectCompletedAndHeld(run);
  EXPECT_THAT(run.output, HasSubstr("steps: 20 moves carried out by the agents"));
}

TEST(SandboxRunTest, AnAgentKilledMidMove) {
  KeptSandbox sandbox({"--fault", "agent-kill"});
  const SandboxOutcome& run = sandbox.run();
  ExpectCompletedAndHeld(run);
  const std::string svg = ExpectTimelineShowsTheSummary(sandbox);
  EXPECT_THAT(svg, HasSubstr("<g class=\"away\"><title>cp-2: agent away from "));
  EXPECT_THAT(run.output, HasSubstr("fault: kill -9 the agent of cp-2 during move"));
}

// A worker's agent killed mid-move and another worker whose credential provider fails after the
// agent's check, in one rollout: each worker ends wholly moved or wholly as it was, and the failed
// one pauses the rollout until the operator (the sandbox) lifts the fault and resumes.
TEST(SandboxRunTest, FaultsOnWorkersLeaveEachWhollyMovedOrWhollyAsItWas) {
  SandboxOutcome run = Sandbox({"--fault", "worker-agent-kill,credential-provider"});
  ExpectCompletedAndHeld(run);
  const std::string killed = "ip-127-0-2-1.ec2.internal", failing = "ip-127-0-2-2.ec2.internal";
  EXPECT_THAT(run.output,
              HasSubstr("fault: kill -9 the agent of " + killed + " during its kubelet's move"));
  EXPECT_THAT(run.output, HasSubstr("fault: " + failing + "'s ecr-credential-provider answers "
                                    "the agent's check before the move, then fails"));
  // The agent's proof after the kubelet's restart failed and it rolled the worker back.
  EXPECT_THAT(run.output, HasSubstr("rollout paused: 1 failed of a failure budget of 1"));
  EXPECT_THAT(run.output, ::testing::ContainsRegex(
                              "\\]   failed: " + failing +
                              ": [^\n]*the kubelet's credential provider [^\n]* did not answer "
                              "a request for "));
  EXPECT_THAT(run.output, HasSubstr(failing + " is wholly as it was: its kubelet runs "
                                              "--cloud-provider=aws"));
  EXPECT_THAT(run.output, Not(HasSubstr("failed: " + killed)));
  EXPECT_THAT(run.output, HasSubstr(failing + "'s ecr-credential-provider put back as it was"));
  EXPECT_THAT(run.output, HasSubstr("handoffctl resume\n"));
  EXPECT_THAT(run.output, HasSubstr("workers: all 2 kubelets --cloud-provider=external"));
  EXPECT_THAT(run.output, HasSubstr("scenario worker-agent-kill+credential-provider completed; "
                                    "invariant held so far"));
}

// A worker fault needs a worker, and a goal that takes the workers external.
TEST(SandboxRunTest, AWorkerFaultWithoutWorkersOrBeforeTheyMoveIsRefused) {
  for (const std::vector<std::string>& flags :
       {std::vector<std::string>{"--fault", "worker-agent-kill", "--workers", "0"},
        std::vector<std::string>{"--fault", "credential-provider", "--goal", "prepared"},
        std::vector<std::string>{"--fault", "worker-agent-kill,credential-provider", "--workers",
                                 "1"}}) {
    SandboxOutcome run = Sandbox(flags, 2);
    EXPECT_EQ(run.exit_code, 2) << run.output;
    EXPECT_THAT(run.output, HasSubstr("strikes a worker while its kubelet goes external: it "
                                      "needs workers"));
  }
}

TEST(SandboxRunTest, TheCoordinatorKilledMidRollout) {
  SandboxOutcome run = Sandbox({"--fault", "coordinator-kill"});
  ExpectCompletedAndHeld(run);
  EXPECT_THAT(run.output, HasSubstr("fault: kill -9 the coordinator during move"));
}

TEST(SandboxRunTest, AComponentThatNeverGetsHealthyIsRolledBackAndHaltsTheRollout) {
  SandboxOutcome run = Sandbox({"--fault", "unhealthy"});
  ExpectCompletedAndHeld(run);
  // The node the plan migrates first is the one made unhealthy: the halt comes on the first move.
  EXPECT_THAT(run.output,
              ::testing::ContainsRegex(
                  "fault: (cp-[0-9])'s cloud-controller-manager will never be healthy"));
  EXPECT_THAT(run.output, ::testing::ContainsRegex(
                              "halted as it must be: cp-[0-9]: prepared → migrated rolled back"));
  for (const char* node : {"cp-1 migrated", "cp-2 migrated", "cp-3 migrated"}) {
    EXPECT_THAT(run.output, Not(HasSubstr(node))) << "a node reached migrated before the halt";
  }
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
  KeptSandbox sandbox({"--unsafe-order-for-tests"}, 1);
  const SandboxOutcome& run = sandbox.run();
  EXPECT_EQ(run.exit_code, 1) << run.output;
  EXPECT_THAT(run.output, HasSubstr("INVARIANT BROKEN"));
  EXPECT_THAT(run.output, HasSubstr("cloud-controller-manager"));
  // The picture shows the broken invariant in red.
  const std::string svg = ReadText(sandbox.sandbox_dir() + "/timeline.svg");
  EXPECT_THAT(svg, HasSubstr("INVARIANT BROKEN: "));
  EXPECT_THAT(svg, HasSubstr("<g class=\"overlap\"><title>INVARIANT BROKEN: "));
  // The coordinator saw it too, from the stand-ins' /healthz?verbose as from real managers', and
  // halted the rollout under way; `handoffctl status` names both managers and their nodes.
  EXPECT_THAT(run.output, HasSubstr("coordinator halted the rollout: double run: "));
  EXPECT_THAT(run.output, ::testing::ContainsRegex("\ndouble-run detector: [1-9] finding"));
  EXPECT_THAT(run.output, ::testing::ContainsRegex(
                              "\nhalted: +double run: (service|cloud-node-lifecycle) ran in "
                              "[a-z-]+-controller-manager on cp-[0-9] \\(pid [0-9]+\\) and in "
                              "[a-z-]+-controller-manager on cp-[0-9]"));
  EXPECT_THAT(run.output, ::testing::ContainsRegex(
                              "\nservice +TWICE: [a-z-]+-controller-manager on cp-[0-9] \\(pid "
                              "[0-9]+, since [^)]+\\) and [a-z-]+-controller-manager on cp-[0-9]"));
  EXPECT_THAT(run.output, HasSubstr("kube-controller-manager on cp-"));
  EXPECT_THAT(run.output, HasSubstr("cloud-controller-manager on cp-"));
}

TEST(SandboxRunTest, AnUnknownClusterIsRefused) {
  SandboxOutcome run = Sandbox({"--cluster", "minikube"}, 2);
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_THAT(run.output, HasSubstr("--cluster \"minikube\" is not one of model, real"));
}

TEST(SandboxRunTest, AnUnknownLeaseReleaseIsRefused) {
  SandboxOutcome run = Sandbox({"--lease-release", "maybe"}, 2);
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_THAT(run.output, HasSubstr("--lease-release \"maybe\" is not one of on, off"));
}

// Both join and reset machines with the real kubeadm: nothing to run them on elsewhere.
TEST(SandboxRunTest, KubeadmUpgradeAndReplaceNeedTheKubeadmCluster) {
  SandboxOutcome run = Sandbox({"--kubeadm-upgrade"}, 2);
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_THAT(run.output, HasSubstr("--kubeadm-upgrade runs the real kubeadm after the move to "
                                    "migrated: it needs --cluster kubeadm"));
  run = Sandbox({"--strategy", "replace"}, 2);
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_THAT(run.output, HasSubstr("--strategy replace joins and resets machines with the real "
                                    "kubeadm: it needs --cluster kubeadm"));
  run = Sandbox({"--cluster", "kubeadm", "--strategy", "replace", "--fault", "agent-kill"}, 2);
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_THAT(run.output, HasSubstr("and no --fault"));
}

TEST(SandboxRunTest, AnUnknownFaultIsRefused) {
  SandboxOutcome run = Sandbox({"--fault", "meteor"}, 2);
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_THAT(run.output, HasSubstr("--fault \"meteor\" is not a list of distinct faults of"));
}

}  // namespace
}  // namespace handoff::sandbox
