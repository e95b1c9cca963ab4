// `handoffctl sandbox --cluster kubeadm` as the operator runs it: a kubeadm-built HA control plane
// of real kubelets on containerd, the real 1.26 and 1.27 components, the agents on the nodes.
// Needs root and the components (tests/real/components.sh): without them the cases skip, or fail
// when HANDOFF_REQUIRE_REAL=1.
//
// A real move takes tens of seconds (the kubelet's 10 s retry back-off per restarted component,
// the old kube-apiserver's 30 s grace), so the cases are few and each does much: the full
// rollout and rollback on 3 nodes; every fault on 2 nodes, each on the shortest path that shows it
// (--goal prepared: one move per node each way; unhealthy goes to migrated), one after another on
// one cluster; kubeadm's upgrade and a join after the move on 3 nodes (--kubeadm-upgrade); the
// rolling replacement forward and back on 2 (--strategy replace); the unsafe order; a run killed
// with SIGKILL and one interrupted with SIGINT. Each checks that the host is left as it was found.
// Each case has a network of its own (--network), so that two go at once (tests/run.sh); what it
// checks on the host is its own run's, found by the sandbox's pid.
#include <signal.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "absl/time/clock.h"
#include "common/base/strings.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "rehearsal/real/components.h"
#include "rehearsal/sandbox/kubeadm/host_changes.h"
#include "tests/real/require_components.h"
#include "tests/rehearsal/sandbox/run/handoffctl_sandbox.h"

namespace handoff::sandbox {
namespace {

using ::testing::AnyOf;
using ::testing::ContainsRegex;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;

bool CanRunKubeadmCluster() {
  return testing::CanRunOnRealComponents({real::kKubelet, real::kKubeadm, real::kNextKubeadm,
                                          real::kCrictl, real::kFakeAws, real::kImagesArchive},
                                         "the kubeadm cluster");
}

// What a kubeadm sandbox could leave on the host, read the way an operator would look.
struct HostSnapshot {
  std::set<std::string> mount_points;  // /proc/self/mountinfo: the host's mount table
  std::set<std::string> links;         // /sys/class/net
  std::set<std::string> cgroup_roots;  // <hierarchy>/<top-level dir> under /sys/fs/cgroup
  std::vector<std::string> sysctls;    // the kubelet's, "name=value"
  std::set<std::string> records;       // /run/handoff-sandbox
};

std::string ReadText(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::set<std::string> Entries(const std::string& dir) {
  std::set<std::string> entries;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(dir, error)) {
    entries.insert(entry.path().filename());
  }
  return entries;
}

// The kubelet's sysctls as the host has them with no kubelet running, "name=value": what a
// kubeadm run that has not ended (another case's, going at the same time) recorded before its
// kubelets changed them, or, with none, what they are now.
std::vector<std::string> HostSysctls() {
  std::map<std::string, std::string> values;
  for (const std::string& entry : Entries(kubeadm::kRecordsDir)) {
    if (entry.size() < 5 || entry.substr(entry.size() - 5) != ".json") continue;
    const std::string path = StrCat(kubeadm::kRecordsDir, "/", entry);
    absl::StatusOr<kubeadm::HostChangeRecord> record =
        kubeadm::ParseHostChangeRecord(ReadText(path), path);
    if (record.ok() && !record->sysctls.empty()) values = record->sysctls;
  }
  std::vector<std::string> sysctls;
  for (const std::string& name : kubeadm::KubeletSysctls()) {
    std::string path = "/proc/sys/" + name;
    std::replace(path.begin() + 10, path.end(), '.', '/');
    const auto recorded = values.find(name);
    sysctls.push_back(name + "=" +
                      (recorded != values.end() ? recorded->second
                                                : std::string(StripWhitespace(ReadText(path)))));
  }
  return sysctls;
}

HostSnapshot Capture() {
  HostSnapshot snapshot;
  const std::string mountinfo = ReadText("/proc/self/mountinfo");  // the views below point in
  for (std::string_view line : StrSplit(mountinfo, "\n", true)) {
    std::vector<std::string_view> fields = StrSplit(line, " ");
    if (fields.size() > 4) snapshot.mount_points.insert(std::string(fields[4]));
  }
  snapshot.links = Entries("/sys/class/net");
  for (const std::string& hierarchy : Entries("/sys/fs/cgroup")) {
    const std::string dir = "/sys/fs/cgroup/" + hierarchy;
    if (std::filesystem::is_symlink(dir) || !std::filesystem::is_directory(dir)) continue;
    for (const std::string& entry : Entries(dir)) {
      if (std::filesystem::is_directory(dir + "/" + entry)) {
        snapshot.cgroup_roots.insert(hierarchy + "/" + entry);
      }
    }
  }
  snapshot.sysctls = HostSysctls();
  snapshot.records = Entries(kubeadm::kRecordsDir);
  return snapshot;
}

std::string CommandLine(const std::string& pid) {
  std::string cmdline = ReadText("/proc/" + pid + "/cmdline");
  std::replace(cmdline.begin(), cmdline.end(), '\0', ' ');
  return cmdline;
}

// The processes of the run in `dir` still alive: those that name the directory (the run's own on
// the host: the fake AWS, the coordinator) and every process of a PID namespace whose first
// process names it (a node's: containerd, the kubelet, the pods, the agent). Other tests may run
// processes of the same kinds meanwhile (CI runs the kubeadm tests beside the rest), so nothing
// else counts.
std::set<std::string> ProcessesOfRun(const std::string& dir) {
  std::map<std::string, std::string> first_process_of;  // PID namespace -> its PID 1's cmdline
  std::map<std::string, std::string> namespace_of;      // pid -> its PID namespace
  for (const std::string& pid : Entries("/proc")) {
    if (pid.find_first_not_of("0123456789") != std::string::npos) continue;
    std::error_code error;
    const std::string ns = std::filesystem::read_symlink("/proc/" + pid + "/ns/pid", error);
    if (error) continue;
    namespace_of[pid] = ns;
    // "NSpid:\t<host pid>\t...\t<pid in its own namespace>": 1 is the namespace's first process.
    const std::string status = ReadText("/proc/" + pid + "/status");  // the views below point in
    for (std::string_view line : StrSplit(status, "\n", true)) {
      if (line.rfind("NSpid:", 0) != 0) continue;
      std::vector<std::string_view> ids = StrSplit(line.substr(6), "\t", true);
      if (ids.size() > 1 && ids.back() == "1") first_process_of[ns] = CommandLine(pid);
    }
  }
  std::set<std::string> left;
  for (const auto& [pid, ns] : namespace_of) {
    const std::string cmdline = CommandLine(pid);
    const auto first = first_process_of.find(ns);
    if (cmdline.find(dir) != std::string::npos ||
        (first != first_process_of.end() && first->second.find(dir) != std::string::npos)) {
      left.insert(StrCat(pid, ": ", cmdline));
    }
  }
  return left;
}

// The host as before: nothing of the runs `run_pids` (handoffctl's pids, which name the run's
// links, cgroups and record) left. Other tests on the machine, kubeadm runs among them, may add
// and remove their own things meanwhile, so what was there before is compared, not the whole
// machine, and another run's things are its own to clean up.
void ExpectHostAsBefore(const HostSnapshot& before, const HostSnapshot& after,
                        const std::vector<int64_t>& run_pids) {
  for (const std::string& point : after.mount_points) {
    EXPECT_TRUE(before.mount_points.count(point) > 0 || point.find("/tmp/") == std::string::npos)
        << "a mount left behind: " << point;
    EXPECT_THAT(point, Not(HasSubstr("sandbox-run-"))) << "a mount of the run left behind";
  }
  for (int64_t pid : run_pids) {
    ASSERT_GT(pid, 0);
    const std::string id = std::to_string(pid);
    for (const std::string& link : after.links) {
      EXPECT_TRUE(before.links.count(link) > 0 ||
                  (link != "hsb" + id && link.rfind("hsv" + id + "n", 0) != 0))
          << "a network interface left behind: " << link;
    }
    for (const std::string& root : after.cgroup_roots) {
      EXPECT_THAT(root, Not(HasSubstr("handoff-sandbox-" + id + "-"))) << "a cgroup left behind";
    }
    EXPECT_EQ(after.records.count(id + ".json"), 0u) << "the run's host-change record was left";
  }
  EXPECT_EQ(after.sysctls, before.sysctls) << "the kubelet's sysctls were not put back";
}

// What every run that completes must end with: the invariant held, and nothing of it left on the
// host.
struct KubeadmOutcome : testing::SandboxOutcome {
  std::set<std::string> processes_left;  // ProcessesOfRun once the run has ended
};

void ExpectHeldAndNothingLeft(const KubeadmOutcome& run, const HostSnapshot& before) {
  EXPECT_THAT(run.output, HasSubstr("invariant held: no cloud controller ran in two processes"));
  EXPECT_THAT(run.output, Not(HasSubstr("INVARIANT BROKEN")));
  EXPECT_THAT(run.processes_left, IsEmpty());
  ExpectHostAsBefore(before, Capture(), {run.pid});
}

// The name of the node at .`last` of 172.31.`network`.0/24, as the sandbox names its machines.
std::string NodeName(int network, int last) {
  return StrCat("ip-172-31-", network, "-", last, ".ec2.internal");
}

// `handoffctl sandbox --cluster kubeadm --network 172.31.<network>.0/24 flags...`, expected to exit
// `expected_exit_code` (another keeps its logs, HandoffctlSandbox).
KubeadmOutcome Sandbox(int network, const std::vector<std::string>& flags, absl::Duration timeout,
                       int expected_exit_code = 0) {
  std::vector<std::string> all = {"--cluster", "kubeadm", "--network",
                                  StrCat("172.31.", network, ".0/24")};
  all.insert(all.end(), flags.begin(), flags.end());
  testing::HandoffctlSandbox sandbox(HANDOFFCTL_BIN, all, timeout, expected_exit_code);
  KubeadmOutcome outcome;
  static_cast<testing::SandboxOutcome&>(outcome) = sandbox.run();
  outcome.processes_left = ProcessesOfRun(sandbox.sandbox_dir());
  return outcome;
}

// The whole move on real kubelets, the workers' included, with a fault on each worker on the way
// (one rollout: the worker faults strike together): a credential provider that fails after the
// agent's check, the agent killed mid-move, the kubelet killed mid-move.
TEST(KubeadmRunTest, ThreeNodesMoveToTheCloudControllerManagerAndBackOnRealKubelets) {
  if (!CanRunKubeadmCluster()) GTEST_SKIP() << "the kubeadm cluster cannot run here (why: above)";
  const HostSnapshot before = Capture();
  KubeadmOutcome run =
      Sandbox(250,
              {"--workers", "3", "--fault",
               "credential-provider,worker-agent-kill,worker-kubelet-kill"},
              absl::Minutes(25));
  EXPECT_EQ(run.exit_code, 0) << run.output;
  EXPECT_THAT(run.output, HasSubstr("kubeadm init on ip-172-31-250-10.ec2.internal"));
  EXPECT_THAT(run.output,
              HasSubstr("kubeadm join --control-plane on ip-172-31-250-138.ec2.internal"));
  EXPECT_THAT(run.output, HasSubstr("rollout to 1.27 and rollback to 1.26 completed with each "
                                    "fault: credential-provider+worker-agent-kill+"
                                    "worker-kubelet-kill"));
  EXPECT_THAT(run.output, HasSubstr("DONE:  ip-172-31-250-10.ec2.internal migrated  "
                                    "ip-172-31-250-74.ec2.internal migrated  "
                                    "ip-172-31-250-138.ec2.internal migrated"));
  EXPECT_THAT(run.output, HasSubstr("DONE:  ip-172-31-250-10.ec2.internal in-tree  "
                                    "ip-172-31-250-74.ec2.internal in-tree  "
                                    "ip-172-31-250-138.ec2.internal in-tree"));
  EXPECT_THAT(run.output, HasSubstr("node providerIDs: all 3 control-plane nodes"));
  // 12 moves of the control-plane nodes, 2 of each worker, and the moves the faults failed or
  // cut short, each sent again.
  EXPECT_THAT(run.output, ContainsRegex("steps: (1[89]|2[0-9]) moves carried out by the agents"));
  // Three real workers, each joined by kubeadm, moved forward and back.
  const std::string first_worker = NodeName(250, 40);
  const std::string second_worker = NodeName(250, 104);
  const std::string third_worker = NodeName(250, 168);
  for (const std::string& worker : {first_worker, second_worker, third_worker}) {
    EXPECT_THAT(run.output, HasSubstr("kubeadm join (worker) on " + worker));
  }
  EXPECT_THAT(run.output, HasSubstr("3 workers Ready, each running its workload"));
  // The first worker (its cloud provider in /etc/default/kubelet): the real
  // ecr-credential-provider answered the agent's check, then failed its proof after the
  // kubelet's restart; the agent put the node back by itself and the rollout paused on it.
  EXPECT_THAT(run.output, HasSubstr("fault: " + first_worker + "'s ecr-credential-provider "
                                    "answers the agent's check before the move, then fails"));
  EXPECT_THAT(run.output, HasSubstr("rollout paused: 1 failed of a failure budget of 1"));
  EXPECT_THAT(run.output, ContainsRegex("   failed: " + first_worker +
                                        ": [^\n]*the kubelet's credential provider [^\n]* did "
                                        "not answer a request for "));
  EXPECT_THAT(run.output, HasSubstr(first_worker + " is wholly as it was: its kubelet runs "
                                                   "--cloud-provider=aws"));
  EXPECT_THAT(run.output, HasSubstr(first_worker + "'s ecr-credential-provider put back as it was"));
  EXPECT_THAT(run.output, HasSubstr("handoffctl resume\n"));
  EXPECT_THAT(run.output, HasSubstr("fault: kill -9 the agent of " + second_worker +
                                    " during its kubelet's move"));
  EXPECT_THAT(run.output, HasSubstr("fault: kill -9 the kubelet of " + third_worker +
                                    " during its move"));
  // Whatever the faults did, every worker ended wholly moved, then wholly back.
  EXPECT_THAT(run.output, HasSubstr("workers: all 3 kubelets --cloud-provider=external "
                                    "(with ecr-credential-provider), each the same Node (uid) "
                                    "with its providerID, its workload never restarted"));
  EXPECT_THAT(run.output, HasSubstr("workers: all 3 kubelets --cloud-provider=aws again"));
  // Why every kubelet must move: the 1.27 kubelet refuses the in-tree provider on an unmoved
  // worker, and keeps a moved worker's Node Ready.
  EXPECT_THAT(run.output, ContainsRegex("kubelet v1\\.27\\.16 on " + third_worker +
                                        " \\(not moved, --cloud-provider=aws\\) exits, as it "
                                        "must: [^\n]*unknown cloud provider"));
  EXPECT_THAT(run.output, HasSubstr("kubelet v1.27.16 on " + first_worker +
                                    " (moved, --cloud-provider=external): Node " + first_worker +
                                    " (uid "));
  EXPECT_THAT(run.output, HasSubstr(") Ready under kubelet v1.27.16, its Lease renewed "));
  // Every component real and named with its version; nothing stands in for 1.27.
  for (const char* component :
       {"kube-apiserver v1.26.13", "kube-apiserver v1.27.16", "kube-controller-manager v1.27.16",
        "kube-scheduler v1.27.16", "kubelet v1.26.13", "kubelet v1.27.16", "kubeadm v1.26.13",
        "ecr-credential-provider v1.27.2",
        "aws-cloud-controller-manager v1.27.2", "etcd v3.5.10", "crictl v1.34.0",
        "containerd github.com/containerd/containerd 1.6", "runc version 1.1", "HAProxy version"}) {
    EXPECT_THAT(run.output, HasSubstr(std::string("\n  ") + component)) << component;
  }
  EXPECT_THAT(run.output, Not(HasSubstr("binary, as no 1.27")));
  // Each handover, and how long each component was down while the kubelet restarted it.
  EXPECT_THAT(run.output, ContainsRegex("\n  service: [0-9]+ runs, longest gap "));
  EXPECT_THAT(run.output, ContainsRegex("\n    \\+[0-9.]+s ip-172-31-250-[0-9]+\\.ec2\\.internal "
                                        "kube-controller-manager [0-9]+ → ip-172-31-250-[0-9]+\\."
                                        "ec2\\.internal cloud-controller-manager [0-9]+: gap "));
  EXPECT_THAT(run.output, ContainsRegex("\n  ip-172-31-250-74\\.ec2\\.internal: kube-apiserver "
                                        "[0-9.]+m?s"));
  // The kubelet's sysctls put back, or left to another kubeadm run still going (tests/run.sh runs
  // two at a time), which puts them back when it ends (ExpectHostAsBefore checks the values).
  EXPECT_THAT(run.output,
              AnyOf(HasSubstr("cleanup: restored vm.overcommit_memory"),
                    HasSubstr("cleanup: left the kubelet's sysctls to the run still using them")));
  ExpectHeldAndNothingLeft(run, before);
}

TEST(KubeadmRunTest, EveryFaultOnTwoNodesEndsWithTheInvariantHeld) {
  if (!CanRunKubeadmCluster()) GTEST_SKIP() << "the kubeadm cluster cannot run here (why: above)";
  const HostSnapshot before = Capture();
  KubeadmOutcome run =
      Sandbox(251,
              {"--nodes", "2", "--workers", "0", "--goal", "prepared", "--fault",
               "preflight,agent-kill,coordinator-kill,kubelet-kill,kubelet-unsynced,unhealthy"},
              absl::Minutes(25));
  EXPECT_EQ(run.exit_code, 0) << run.output;
  const std::string second = NodeName(251, 74);
  EXPECT_THAT(run.output, HasSubstr("fault: kill -9 the agent of " + second));
  EXPECT_THAT(run.output, HasSubstr("fault: kill -9 the coordinator during move"));
  EXPECT_THAT(run.output, HasSubstr("fault: kill -9 the kubelet of " + second));
  // The kubelet cut off from the API server dropped the move's change; the agent stopped the
  // old kube-controller-manager and restarted the kubelet (the run fails otherwise).
  EXPECT_THAT(run.output, HasSubstr("fault: " + second +
                                    "'s kubelet restarted with no route to the API server"));
  EXPECT_THAT(run.output,
              HasSubstr(second + "'s agent stopped the old process its kubelet left running"));
  EXPECT_THAT(run.output, HasSubstr("halted as it must be: "));
  // handoffctl preflight on the real nodes: each failure of the field fails exactly its check.
  EXPECT_THAT(run.output, HasSubstr("handoffctl preflight: no check fails on the healthy cluster"));
  for (const char* check : {"node-names", "cluster-tag", "ecr-credentials", "ebs-csi",
                            "leader-elect", "stray-files", "rbac"}) {
    EXPECT_THAT(run.output, HasSubstr(StrCat(" -> only ", check, " fails, naming "))) << check;
  }
  EXPECT_THAT(run.output, HasSubstr("each of 7 faults failed exactly its check"));
  for (const char* fault : {"preflight", "agent-kill", "coordinator-kill", "kubelet-kill",
                            "kubelet-unsynced", "unhealthy"}) {
    EXPECT_THAT(run.output,
                HasSubstr(StrCat("scenario ", fault, " completed; invariant held so far")))
        << fault;
  }
  EXPECT_THAT(run.output, HasSubstr("with each fault: preflight, agent-kill, coordinator-kill, "
                                    "kubelet-kill, kubelet-unsynced, unhealthy"));
  ExpectHeldAndNothingLeft(run, before);
}

// After the move, kubeadm acts on the cluster again: the real kubeadm v1.27.16 upgrades it and
// joins a node to it, and neither may bring an in-tree manager back or stop a
// cloud-controller-manager; the joined node gets its cloud-controller-manager from the coordinator.
// Three nodes: `kubeadm upgrade node` restarts a joined node's etcd (it rewrites
// --initial-cluster), which two etcd members would not survive with a quorum.
TEST(KubeadmRunTest, AfterTheMoveKubeadmUpgradesAndJoinsAndEveryNodeStaysExternal) {
  if (!CanRunKubeadmCluster()) GTEST_SKIP() << "the kubeadm cluster cannot run here (why: above)";
  const HostSnapshot before = Capture();
  KubeadmOutcome run = Sandbox(252, {"--kubeadm-upgrade", "--workers", "0"}, absl::Minutes(25));
  EXPECT_EQ(run.exit_code, 0) << run.output;
  const std::string first = NodeName(252, 10), second = NodeName(252, 74),
                    third = NodeName(252, 138);
  const std::string members = StrCat(first, ", ", second, ", ", third);
  const std::string joined = NodeName(252, 11);
  const std::string all_finalized =
      StrCat("DONE:  ", first, " finalized  ", second, " finalized  ", third, " finalized");
  EXPECT_THAT(run.output, HasSubstr("3 nodes up and 1 spare machine(s) to join later"));
  EXPECT_THAT(run.output, HasSubstr(all_finalized + "\n"));
  EXPECT_THAT(run.output, HasSubstr("handoffctl kubeadm-config apply"));
  // Its nodes Ready on their pod network, kubeadm's ControlPlaneNodesReady and CreateJob checks
  // are made; only the CoreDNS checks of a cluster without CoreDNS are skipped.
  EXPECT_THAT(run.output, HasSubstr("kubeadm upgrade apply v1.27.16 --yes "
                                    "--ignore-preflight-errors=CoreDNSUnsupportedPlugins,"
                                    "CoreDNSMigration (v1.27.16) on " +
                                    first));
  for (const std::string& node : {second, third}) {
    EXPECT_THAT(run.output, HasSubstr(StrCat("kubeadm upgrade node (v1.27.16) on ", node)));
  }
  EXPECT_THAT(run.output,
              HasSubstr(StrCat("every node's kube-apiserver and kube-controller-manager "
                               "v1.27.16, external, with its cloud-controller-manager "
                               "running (",
                               members, ")")));
  EXPECT_THAT(run.output, HasSubstr(StrCat("kubeadm join --control-plane (v1.27.16) on ", joined)));
  EXPECT_THAT(run.output,
              HasSubstr(StrCat(joined, " joined at v1.27.16: its agent reports it external")));
  EXPECT_THAT(run.output, HasSubstr(StrCat("handoffctl nodes add ", joined)));
  EXPECT_THAT(run.output, HasSubstr(StrCat(all_finalized, "  ", joined, " finalized")));
  EXPECT_THAT(run.output, HasSubstr(StrCat("v1.27.16, external, with its cloud-controller-manager "
                                           "running (",
                                           members, ", ", joined, ")")));
  EXPECT_THAT(run.output, HasSubstr("node providerIDs: all 4 control-plane nodes"));
  EXPECT_THAT(run.output, HasSubstr("while kubeadm upgraded and joined: "));
  EXPECT_THAT(run.output, HasSubstr("kubeadm upgrade to v1.27.16 and a node joined at v1.27.16 "
                                    "completed"));
  ExpectHeldAndNothingLeft(run, before);
}

// The members a replacement ended with, as the run reports them, in any order: every line
// "replacement done: the members are A, B, C".
std::vector<std::set<std::string>> MembersAfterEachReplacement(const std::string& output) {
  static const std::string kPrefix = "replacement done: the members are ";
  std::vector<std::set<std::string>> all;
  std::istringstream lines(output);
  for (std::string line; std::getline(lines, line);) {
    const size_t at = line.find(kPrefix);
    if (at == std::string::npos) continue;
    std::set<std::string> members;
    const std::string_view names = std::string_view(line).substr(at + kPrefix.size());
    for (std::string_view name : StrSplit(names, ", ", /*skip_empty=*/true)) {
      members.emplace(name);
    }
    all.push_back(members);
  }
  return all;
}

// The upstream procedure's rolling replacement on real machines, forward and back: each of three
// nodes of 1.26 replaced by one joined at 1.27 and reset, then each of those by one joined at 1.26
// with Leader Migration. The coordinator takes each in and out itself, reading etcd's member list
// from whichever member answers (the nodes it was first pointed at are gone by the end).
TEST(KubeadmRunTest, ThreeNodesAreReplacedAtOneTwentySevenAndBackAtOneTwentySix) {
  if (!CanRunKubeadmCluster()) GTEST_SKIP() << "the kubeadm cluster cannot run here (why: above)";
  const HostSnapshot before = Capture();
  KubeadmOutcome run = Sandbox(253, {"--nodes", "3", "--strategy", "replace"}, absl::Minutes(25));
  EXPECT_EQ(run.exit_code, 0) << run.output;
  EXPECT_THAT(run.output, HasSubstr("3 nodes up and 6 spare machine(s) to join later"));
  EXPECT_THAT(run.output, HasSubstr("handoffctl start --strategy replace"));
  const std::string reset =
      "kubeadm reset --force --cri-socket unix:///run/containerd/containerd.sock";
  // The members: .10, .74 and .138 (one in each zone), replaced by .11, .75 and .139 (at 1.27),
  // replaced by .12, .76 and .140 (at 1.26).
  const std::set<std::string> first = {NodeName(253, 10), NodeName(253, 74), NodeName(253, 138)};
  const std::set<std::string> next = {NodeName(253, 11), NodeName(253, 75), NodeName(253, 139)};
  const std::set<std::string> back = {NodeName(253, 12), NodeName(253, 76), NodeName(253, 140)};
  for (const std::string& node : next) {
    EXPECT_THAT(run.output, HasSubstr(StrCat("kubeadm join --control-plane (v1.27.16) on ", node)));
    EXPECT_THAT(run.output, HasSubstr(StrCat(reset, " (v1.27.16) on ", node)));
  }
  for (const std::string& node : first) {
    EXPECT_THAT(run.output, HasSubstr(StrCat(reset, " (v1.26.13) on ", node)));
    EXPECT_THAT(run.output, HasSubstr(StrCat("kubectl delete node ", node)));
  }
  for (const std::string& node : back) {
    EXPECT_THAT(run.output, HasSubstr(StrCat("kubeadm join --control-plane (v1.26.13) on ", node)));
  }
  EXPECT_EQ(MembersAfterEachReplacement(run.output),
            (std::vector<std::set<std::string>>{next, back}));
  EXPECT_THAT(run.output, HasSubstr("node providerIDs: all 3 control-plane nodes"));
  EXPECT_THAT(run.output, HasSubstr("handoffctl rollback --to in-tree --strategy replace"));
  EXPECT_THAT(run.output, HasSubstr("in-tree again: a kube-controller-manager holds its lease"));
  EXPECT_THAT(run.output, HasSubstr("rollout to 1.27 and rollback to 1.26 by replacing every "
                                    "node, each way, completed"));
  ExpectHeldAndNothingLeft(run, before);
}

TEST(KubeadmRunTest, TheUnsafeOrderIsCaughtOnTheRealNode) {
  if (!CanRunKubeadmCluster()) GTEST_SKIP() << "the kubeadm cluster cannot run here (why: above)";
  const HostSnapshot before = Capture();
  KubeadmOutcome run =
      Sandbox(254, {"--nodes", "2", "--unsafe-order-for-tests"}, absl::Minutes(15), 1);
  EXPECT_EQ(run.exit_code, 1) << run.output;
  EXPECT_THAT(run.output, HasSubstr("unsafe order forced: "));
  EXPECT_THAT(run.output, HasSubstr("coordinator halted the rollout: double run: "));
  EXPECT_THAT(run.output, HasSubstr("INVARIANT BROKEN"));
  EXPECT_THAT(run.processes_left, IsEmpty());
  ExpectHostAsBefore(before, Capture(), {run.pid});
}

// A run killed with SIGKILL leaves its nodes to the kernel (each dies with the sandbox) and the
// rest to the next run; one interrupted with SIGINT undoes everything itself.
TEST(KubeadmRunTest, AKilledRunIsCleanedUpByTheNextAndAnInterruptedOneCleansUpItself) {
  if (!CanRunKubeadmCluster()) GTEST_SKIP() << "the kubeadm cluster cannot run here (why: above)";
  const HostSnapshot before = Capture();
  std::vector<int64_t> pids;
  for (int signal : {SIGKILL, SIGINT}) {
    std::string dir = std::filesystem::path(::testing::TempDir()) / "sandbox-stop-XXXXXX";
    ASSERT_NE(mkdtemp(dir.data()), nullptr);
    absl::StatusOr<std::unique_ptr<Process>> run =
        Process::Spawn({HANDOFFCTL_BIN, "sandbox", "--cluster", "kubeadm", "--network",
                        "172.31.255.0/24", "--nodes", "1", "--workers", "0", "--dir", dir + "/run"},
                       dir + "/output.log");
    ASSERT_TRUE(run.ok()) << run.status();
    pids.push_back((*run)->pid());
    // The nodes are up once the run says so; it says nothing any other way.
    const absl::Time deadline = absl::Now() + absl::Minutes(3);
    while (ReadText(dir + "/output.log").find("nodes up") == std::string::npos &&
           absl::Now() < deadline) {
      ASSERT_FALSE((*run)->WaitFor(absl::Milliseconds(100), nullptr))
          << ReadText(dir + "/output.log");
    }
    int status = (*run)->Stop(signal, absl::Minutes(2));
    const std::string output = ReadText(dir + "/output.log");
    if (signal == SIGINT) {
      EXPECT_TRUE(WIFEXITED(status)) << output;
      EXPECT_THAT(output, HasSubstr("cleanup: deleted the network interface hsb")) << output;
      EXPECT_FALSE(std::filesystem::exists(dir + "/run")) << output;
    } else {
      // What the next kubeadm run does first, on its own.
      absl::StatusOr<std::unique_ptr<Process>> cleanup =
          Process::Spawn({HANDOFFCTL_BIN, "sandbox", "--cleanup"}, dir + "/cleanup.log");
      ASSERT_TRUE(cleanup.ok()) << cleanup.status();
      int cleaned = 0;
      ASSERT_TRUE((*cleanup)->WaitFor(absl::Minutes(1), &cleaned));
      const std::string said = ReadText(dir + "/cleanup.log");
      EXPECT_TRUE(WIFEXITED(cleaned) && WEXITSTATUS(cleaned) == 0) << said;
      EXPECT_THAT(said, HasSubstr("cleaning up after an earlier run that did not finish")) << said;
      EXPECT_THAT(said, HasSubstr("cleaned up after the earlier run in " + dir + "/run"));
      EXPECT_FALSE(std::filesystem::exists(dir + "/run"));
    }
    EXPECT_THAT(ProcessesOfRun(dir), IsEmpty()) << "after " << strsignal(signal) << ":\n" << output;
    std::filesystem::remove_all(dir);
  }
  ExpectHostAsBefore(before, Capture(), pids);
}

}  // namespace
}  // namespace handoff::sandbox
