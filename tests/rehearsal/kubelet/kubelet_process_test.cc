// The real handoff-sandbox-kubelet binary on a temp node root, running the test stand-in.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>

#include "common/system/process_table.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/rehearsal/kubelet/sandbox_node_fixture.h"

namespace handoff::sandbox::testing {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::SizeIs;
using ::testing::UnorderedElementsAre;

const std::vector<std::string> kKcmCommand = {"kube-controller-manager", "--bind-address=127.0.1.1",
                                              "--v=2"};

class KubeletProcessTest : public SandboxNodeTest {};

TEST_F(KubeletProcessTest, ManifestRunsItsCommandAsTheStandinWithTheSandboxEnvironment) {
  StartKubelet();
  WriteManifestAtomically("kube-controller-manager.yaml",
                          PodManifest("kube-controller-manager", kKcmCommand, {}));
  std::optional<PodProcess> pod = WaitForPod("kube-controller-manager");
  ASSERT_TRUE(pod) << KubeletLog();

  // argv is the manifest's command, argv[0] included; the program is the stand-in.
  EXPECT_THAT(ReadCmdline(pod->pid).value_or(std::vector<std::string>{}),
              ElementsAre("kube-controller-manager", "--bind-address=127.0.1.1", "--v=2"));
  EXPECT_EQ(std::filesystem::read_symlink(StrCat("/proc/", pod->pid, "/exe")).string(),
            HANDOFF_TEST_STANDIN_BIN);
  EXPECT_EQ(getsid(pod->pid), pod->pid) << "a session of its own";

  std::map<std::string, std::string> env = Environment(pod->pid);
  EXPECT_EQ(env["HANDOFF_SANDBOX_NODE"], "cp-1");
  EXPECT_EQ(env["HANDOFF_SANDBOX_RECORDS"], records_);
  EXPECT_EQ(env["HANDOFF_SANDBOX_ROOT"], root_);
  EXPECT_EQ(env["HANDOFF_SANDBOX_VERSION"], "v1.26.9");
  EXPECT_EQ(env["HANDOFF_SANDBOX_MOUNTS"],
            StrCat("/etc/kubernetes/controller-manager.conf=", root_,
                   "/etc/kubernetes/controller-manager.conf\n/etc/kubernetes/pki=", root_,
                   "/etc/kubernetes/pki"));
  // The *OrCreate hostPaths were made under the node's root.
  EXPECT_TRUE(std::filesystem::is_regular_file(root_ + "/etc/kubernetes/controller-manager.conf"));
  EXPECT_TRUE(std::filesystem::is_directory(root_ + "/etc/kubernetes/pki"));
  EXPECT_TRUE(std::filesystem::exists(root_ + "/var/log/pods/kube-controller-manager.log"));

  std::vector<RunRecord> starts = RecordsOf("process-start", pod->pid);
  ASSERT_THAT(starts, SizeIs(1));
  EXPECT_EQ(starts[0].node, "cp-1");
  EXPECT_EQ(starts[0].component, "kube-controller-manager");

  EXPECT_EQ(Healthz(), std::make_pair(200, std::string("ok")));
}

TEST_F(KubeletProcessTest, NodeProcessViewListsTheKubeletAndItsPodsOnly) {
  StartKubelet();
  WriteManifestAtomically("kube-controller-manager.yaml",
                          PodManifest("kube-controller-manager", kKcmCommand, {}));
  std::optional<PodProcess> pod = WaitForPod("kube-controller-manager");
  ASSERT_TRUE(pod) << KubeletLog();
  // What handoff-agent --proc-root <root>/run/sandbox-proc would see.
  absl::StatusOr<std::vector<ProcessInfo>> processes =
      NewProcfsProcessTable(root_ + kProcViewDir)->List();
  ASSERT_TRUE(processes.ok()) << processes.status();
  std::vector<int> pids;
  for (const ProcessInfo& process : *processes) pids.push_back(process.pid);
  EXPECT_THAT(pids, UnorderedElementsAre(KubeletPid(), pod->pid));
  for (const ProcessInfo& process : *processes) {
    if (process.pid == KubeletPid()) {
      EXPECT_EQ(process.argv.at(0), "kubelet");
    } else {
      EXPECT_EQ(process.start_time, pod->start_time);
    }
  }
}

TEST_F(KubeletProcessTest, ArgsOnlyContainerRunsTheImageEntrypoint) {
  StartKubelet();
  // No command and an image whose entrypoint the sandbox does not know: refused.
  WriteManifestAtomically(
      "kube-scheduler.yaml",
      PodManifest("kube-scheduler", {}, {"--v=2"}, "registry.k8s.io/kube-scheduler:v1.26.9"));
  WriteManifestAtomically(
      "cloud-controller-manager.yaml",
      PodManifest("cloud-controller-manager", {}, {"--cloud-provider=aws", "--v=2"},
                  "registry.k8s.io/provider-aws/cloud-controller-manager:v1.27.1"));
  std::optional<PodProcess> pod = WaitForPod("cloud-controller-manager");
  ASSERT_TRUE(pod) << KubeletLog();
  EXPECT_THAT(ReadCmdline(pod->pid).value_or(std::vector<std::string>{}),
              ElementsAre("/bin/aws-cloud-controller-manager", "--cloud-provider=aws", "--v=2"));
  EXPECT_EQ(Environment(pod->pid)["HANDOFF_SANDBOX_VERSION"], "v1.27.1");
  ASSERT_THAT(RecordsOf("process-start", pod->pid), SizeIs(1));
  EXPECT_EQ(RecordsOf("process-start", pod->pid)[0].component, "cloud-controller-manager");
  EXPECT_FALSE(Pod("kube-scheduler"));
  EXPECT_THAT(KubeletLog(), HasSubstr("kube-scheduler.yaml: pod kube-scheduler: image "
                                      "registry.k8s.io/kube-scheduler:v1.26.9 has no entrypoint"));
}

TEST_F(KubeletProcessTest, DotfileIsIgnored) {
  StartKubelet();
  WriteManifestAtomically(".hidden.yaml", PodManifest("hidden", kKcmCommand, {}));
  // A second manifest after it: once its pod runs, the kubelet has listed the dotfile too.
  WriteManifestAtomically("kube-controller-manager.yaml",
                          PodManifest("kube-controller-manager", kKcmCommand, {}));
  ASSERT_TRUE(WaitForPod("kube-controller-manager")) << KubeletLog();
  EXPECT_FALSE(Pod("hidden"));
  EXPECT_THAT(Pods(), SizeIs(1));
}

TEST_F(KubeletProcessTest, AtomicReplaceRestartsThePodOnceWithTheNewArgv) {
  StartKubelet();
  WriteManifestAtomically("kube-controller-manager.yaml",
                          PodManifest("kube-controller-manager", kKcmCommand, {}));
  std::optional<PodProcess> old_pod = WaitForPod("kube-controller-manager");
  ASSERT_TRUE(old_pod) << KubeletLog();

  WriteManifestAtomically(
      "kube-controller-manager.yaml",
      PodManifest("kube-controller-manager",
                  {"kube-controller-manager", "--bind-address=127.0.1.1", "--v=4"}, {}));
  std::optional<PodProcess> new_pod = WaitForPod("kube-controller-manager", old_pod->pid);
  ASSERT_TRUE(new_pod) << KubeletLog();
  EXPECT_THAT(ReadCmdline(new_pod->pid).value_or(std::vector<std::string>{}),
              ElementsAre("kube-controller-manager", "--bind-address=127.0.1.1", "--v=4"));
  EXPECT_FALSE(Running(old_pod->pid, old_pod->start_time));
  ASSERT_THAT(RecordsOf("process-exit", old_pod->pid), SizeIs(1));
  EXPECT_EQ(RecordsOf("process-exit", old_pod->pid)[0].status, "exit 0");

  // Another change elsewhere makes the kubelet sync again; the pod is not restarted twice.
  WriteManifestAtomically("kube-scheduler.yaml",
                          PodManifest("kube-scheduler", {"kube-scheduler", "--v=2"}, {}));
  ASSERT_TRUE(WaitForPod("kube-scheduler")) << KubeletLog();
  EXPECT_EQ(Pod("kube-controller-manager")->pid, new_pod->pid);
  int starts = 0;
  for (const RunRecord& record : Records()) {
    if (record.event == "process-start" && record.component == "kube-controller-manager") ++starts;
  }
  EXPECT_EQ(starts, 2);
}

TEST_F(KubeletProcessTest, ReformattedManifestKeepsThePod) {
  StartKubelet();
  const std::string manifest = PodManifest("kube-controller-manager", kKcmCommand, {});
  WriteManifestAtomically("kube-controller-manager.yaml", manifest);
  std::optional<PodProcess> pod = WaitForPod("kube-controller-manager");
  ASSERT_TRUE(pod) << KubeletLog();
  // The same pod with its top-level keys in another order: the decoded pod, hence its hash, is
  // the same, so the kubelet keeps the container.
  const size_t spec = manifest.find("spec:");
  WriteManifestAtomically("kube-controller-manager.yaml",
                          manifest.substr(spec) + manifest.substr(0, spec));
  WriteManifestAtomically("kube-scheduler.yaml",
                          PodManifest("kube-scheduler", {"kube-scheduler"}, {}));
  ASSERT_TRUE(WaitForPod("kube-scheduler")) << KubeletLog();
  EXPECT_EQ(Pod("kube-controller-manager")->pid, pod->pid);
  EXPECT_TRUE(Running(pod->pid, pod->start_time));
}

TEST_F(KubeletProcessTest, UnparseableManifestRemovesThePodUntilItParsesAgain) {
  StartKubelet();
  const std::string manifest = PodManifest("kube-controller-manager", kKcmCommand, {});
  WriteManifestAtomically("kube-controller-manager.yaml", manifest);
  std::optional<PodProcess> pod = WaitForPod("kube-controller-manager");
  ASSERT_TRUE(pod) << KubeletLog();

  WriteManifestAtomically("kube-controller-manager.yaml", "apiVersion: v1\nkind: Pod\nspec: [\n");
  ASSERT_TRUE(WaitFor([&] {
    return !Running(pod->pid, pod->start_time) && !Pod("kube-controller-manager");
  })) << KubeletLog();
  EXPECT_THAT(KubeletLog(),
              HasSubstr("no pod from /etc/kubernetes/manifests/kube-controller-manager.yaml"));

  WriteManifestAtomically("kube-controller-manager.yaml", manifest);
  EXPECT_TRUE(WaitForPod("kube-controller-manager", pod->pid)) << KubeletLog();
}

TEST_F(KubeletProcessTest, RemovedManifestStopsThePod) {
  StartKubelet();
  WriteManifestAtomically("kube-controller-manager.yaml",
                          PodManifest("kube-controller-manager", kKcmCommand, {}));
  std::optional<PodProcess> pod = WaitForPod("kube-controller-manager");
  ASSERT_TRUE(pod) << KubeletLog();
  ASSERT_EQ(std::remove(ManifestPath("kube-controller-manager.yaml").c_str()), 0);
  ASSERT_TRUE(WaitFor([&] { return !Running(pod->pid, pod->start_time); })) << KubeletLog();
  ASSERT_TRUE(WaitFor([&] { return !RecordsOf("process-exit", pod->pid).empty(); }));
  EXPECT_EQ(RecordsOf("process-exit", pod->pid)[0].status, "exit 0");
  EXPECT_TRUE(WaitFor([&] { return Pods().empty(); }));
  EXPECT_FALSE(std::filesystem::is_symlink(StrCat(root_, kProcViewDir, "/", pod->pid)));
}

TEST_F(KubeletProcessTest, SecondFileForTheSamePodLosesToTheFirstByName) {
  StartKubelet();
  WriteManifestAtomically(
      "b.yaml", PodManifest("kube-controller-manager", {"kube-controller-manager", "--v=2"}, {}));
  std::optional<PodProcess> from_b = WaitForPod("kube-controller-manager");
  ASSERT_TRUE(from_b) << KubeletLog();
  // a.yaml comes first by name: its pod replaces b.yaml's.
  WriteManifestAtomically(
      "a.yaml", PodManifest("kube-controller-manager", {"kube-controller-manager", "--v=5"}, {}));
  std::optional<PodProcess> from_a = WaitForPod("kube-controller-manager", from_b->pid);
  ASSERT_TRUE(from_a) << KubeletLog();
  EXPECT_THAT(ReadCmdline(from_a->pid).value_or(std::vector<std::string>{}),
              ElementsAre("kube-controller-manager", "--v=5"));
  EXPECT_THAT(KubeletLog(), HasSubstr("no pod from /etc/kubernetes/manifests/b.yaml: pod "
                                      "kube-controller-manager is already defined by "
                                      "/etc/kubernetes/manifests/a.yaml"));
}

TEST_F(KubeletProcessTest, ProcessIgnoringSigtermIsKilledAfterTheGracePeriod) {
  StartKubelet();
  WriteManifestAtomically("kube-controller-manager.yaml",
                          PodManifest("kube-controller-manager",
                                      {"kube-controller-manager", "--test-ignore-sigterm"}, {}));
  std::optional<PodProcess> pod = WaitForPod("kube-controller-manager");
  ASSERT_TRUE(pod) << KubeletLog();  // Ready: its SIGTERM is blocked.
  const auto removed = std::chrono::steady_clock::now();
  ASSERT_EQ(std::remove(ManifestPath("kube-controller-manager.yaml").c_str()), 0);
  ASSERT_TRUE(WaitFor([&] { return !RecordsOf("process-exit", pod->pid).empty(); }))
      << KubeletLog();
  EXPECT_GE(std::chrono::steady_clock::now() - removed, std::chrono::milliseconds(1900));
  EXPECT_EQ(RecordsOf("process-exit", pod->pid)[0].status, "signal 9");
  EXPECT_THAT(KubeletLog(), HasSubstr("SIGKILL"));
}

TEST_F(KubeletProcessTest, KilledPodIsRecordedAndRestarted) {
  StartKubelet();
  WriteManifestAtomically("kube-controller-manager.yaml",
                          PodManifest("kube-controller-manager", kKcmCommand, {}));
  std::optional<PodProcess> pod = WaitForPod("kube-controller-manager");
  ASSERT_TRUE(pod) << KubeletLog();
  ASSERT_EQ(::kill(pod->pid, SIGKILL), 0);
  ASSERT_TRUE(WaitFor([&] { return !RecordsOf("process-exit", pod->pid).empty(); }))
      << KubeletLog();
  const RunRecord exit = RecordsOf("process-exit", pod->pid)[0];
  EXPECT_EQ(exit.status, "signal 9");
  EXPECT_EQ(exit.component, "kube-controller-manager");
  EXPECT_EQ(exit.node, "cp-1");
  // restartPolicy Always: the first restart after a crash is immediate.
  std::optional<PodProcess> restarted = WaitForPod("kube-controller-manager", pod->pid);
  ASSERT_TRUE(restarted) << KubeletLog();
  EXPECT_THAT(ReadCmdline(restarted->pid).value_or(std::vector<std::string>{}),
              ElementsAre("kube-controller-manager", "--bind-address=127.0.1.1", "--v=2"));
}

TEST_F(KubeletProcessTest, RestartKeepsThePodsAndTheNewKubeletRunsWithTheFlagsFile) {
  StartKubelet();
  WriteManifestAtomically("kube-controller-manager.yaml",
                          PodManifest("kube-controller-manager", kKcmCommand, {}));
  std::optional<PodProcess> pod = WaitForPod("kube-controller-manager");
  ASSERT_TRUE(pod) << KubeletLog();
  const int old_kubelet = KubeletPid();
  const std::optional<ProcStat> old_stat = ReadProcStat(old_kubelet);
  ASSERT_TRUE(old_stat);

  std::filesystem::create_directories(root_ + "/var/lib/kubelet");
  std::ofstream(root_ + "/var/lib/kubelet/kubeadm-flags.env")
      << "KUBELET_KUBEADM_ARGS=\"--container-runtime-endpoint=unix:///var/run/containerd/"
         "containerd.sock --cloud-provider=external "
         "--pod-infra-container-image=registry.k8s.io/pause:3.9\"\n";
  CommandResult restarted = Control({"restart", "--root", root_});
  ASSERT_EQ(restarted.exit_code, 0) << restarted.output << KubeletLog();

  const int new_kubelet = KubeletPid();
  EXPECT_NE(new_kubelet, old_kubelet);
  EXPECT_FALSE(Running(old_kubelet, old_stat->start_time));
  std::vector<std::string> argv = ReadCmdline(new_kubelet).value_or(std::vector<std::string>{});
  ASSERT_GE(argv.size(), 4u);
  EXPECT_EQ(argv[0], "kubelet");
  // The base flags, then the flags file's, as the kubeadm drop-in's ExecStart orders them.
  EXPECT_THAT(std::vector<std::string>(argv.end() - 3, argv.end()),
              ElementsAre("--container-runtime-endpoint=unix:///var/run/containerd/containerd.sock",
                          "--cloud-provider=external",
                          "--pod-infra-container-image=registry.k8s.io/pause:3.9"));
  EXPECT_EQ(Healthz(), std::make_pair(200, std::string("ok")));

  // The pod was adopted, not restarted.
  EXPECT_TRUE(Running(pod->pid, pod->start_time));
  EXPECT_EQ(Pod("kube-controller-manager")->pid, pod->pid);
  EXPECT_THAT(RecordsOf("process-exit", pod->pid), IsEmpty());
  EXPECT_THAT(KubeletLog(), HasSubstr(StrCat("adopted process ", pod->pid)));
  // And it is still watched: a kill now is recorded by the new kubelet.
  ASSERT_EQ(::kill(pod->pid, SIGKILL), 0);
  ASSERT_TRUE(WaitFor([&] { return !RecordsOf("process-exit", pod->pid).empty(); }))
      << KubeletLog();
  EXPECT_TRUE(WaitForPod("kube-controller-manager", pod->pid)) << KubeletLog();
}

TEST_F(KubeletProcessTest, ManifestChangedWhileTheKubeletIsDownIsReplacedAfterRestart) {
  StartKubelet();
  WriteManifestAtomically("kube-controller-manager.yaml",
                          PodManifest("kube-controller-manager", kKcmCommand, {}));
  std::optional<PodProcess> pod = WaitForPod("kube-controller-manager");
  ASSERT_TRUE(pod) << KubeletLog();

  CommandResult stopped = Control({"stop", "--root", root_});
  ASSERT_EQ(stopped.exit_code, 0) << stopped.output;
  EXPECT_FALSE(std::filesystem::exists(root_ + kKubeletPidFile));
  WriteManifestAtomically(
      "kube-controller-manager.yaml",
      PodManifest("kube-controller-manager", {"kube-controller-manager", "--v=6"}, {}));
  // Nobody acts on the change while the kubelet is down.
  EXPECT_TRUE(Running(pod->pid, pod->start_time));

  // restart of a stopped kubelet starts it, as systemctl restart does.
  CommandResult restarted = Control({"restart", "--root", root_});
  ASSERT_EQ(restarted.exit_code, 0) << restarted.output << KubeletLog();
  std::optional<PodProcess> replaced = WaitForPod("kube-controller-manager", pod->pid);
  ASSERT_TRUE(replaced) << KubeletLog();
  EXPECT_THAT(ReadCmdline(replaced->pid).value_or(std::vector<std::string>{}),
              ElementsAre("kube-controller-manager", "--v=6"));
  EXPECT_FALSE(Running(pod->pid, pod->start_time));
  ASSERT_TRUE(WaitFor([&] { return !RecordsOf("process-exit", pod->pid).empty(); }));
  EXPECT_EQ(RecordsOf("process-exit", pod->pid)[0].status, "unknown")
      << "adopted: not the new kubelet's child";
}

TEST_F(KubeletProcessTest, PodThatDiedWhileTheKubeletWasDownIsRecordedAndStartedAgain) {
  StartKubelet();
  WriteManifestAtomically("kube-controller-manager.yaml",
                          PodManifest("kube-controller-manager", kKcmCommand, {}));
  std::optional<PodProcess> pod = WaitForPod("kube-controller-manager");
  ASSERT_TRUE(pod) << KubeletLog();
  ASSERT_EQ(Control({"stop", "--root", root_}).exit_code, 0);
  ASSERT_EQ(::kill(pod->pid, SIGKILL), 0);
  ASSERT_TRUE(WaitFor([&] { return !Running(pod->pid, pod->start_time); }));

  ASSERT_EQ(Control({"restart", "--root", root_}).exit_code, 0) << KubeletLog();
  ASSERT_TRUE(WaitForPod("kube-controller-manager", pod->pid)) << KubeletLog();
  ASSERT_THAT(RecordsOf("process-exit", pod->pid), SizeIs(1));
  EXPECT_EQ(RecordsOf("process-exit", pod->pid)[0].status, "unknown");
}

TEST_F(KubeletProcessTest, StartRefusesWhileAKubeletRuns) {
  StartKubelet();
  std::vector<std::string> args = {"start"};
  for (const std::string& flag : BaseFlags()) args.push_back(flag);
  CommandResult second = Control(args);
  EXPECT_EQ(second.exit_code, 1);
  EXPECT_THAT(second.output, HasSubstr(StrCat("a kubelet already runs on ", root_, " (pid ",
                                              KubeletPid(), "); use restart")));
}

TEST_F(KubeletProcessTest, StopWithPodsEndsEverything) {
  StartKubelet();
  WriteManifestAtomically("kube-controller-manager.yaml",
                          PodManifest("kube-controller-manager", kKcmCommand, {}));
  std::optional<PodProcess> pod = WaitForPod("kube-controller-manager");
  ASSERT_TRUE(pod) << KubeletLog();
  const int kubelet = KubeletPid();
  CommandResult stopped = Control({"stop", "--root", root_, "--pods"});
  ASSERT_EQ(stopped.exit_code, 0) << stopped.output;
  ReapOrphans();
  EXPECT_FALSE(Running(pod->pid, pod->start_time));
  EXPECT_FALSE(ReadCmdline(kubelet).has_value());
  EXPECT_THAT(Pods(), IsEmpty());
  EXPECT_THAT(RecordsOf("process-exit", pod->pid), SizeIs(1));
}

TEST_F(KubeletProcessTest, RestartWithoutAStartIsRefused) {
  CommandResult restarted = Control({"restart", "--root", root_});
  EXPECT_EQ(restarted.exit_code, 1);
  EXPECT_THAT(restarted.output, HasSubstr("no kubelet was started on " + root_));
}

TEST_F(KubeletProcessTest, BadFlagsAreUsageErrors) {
  CommandResult started = Control({"start", "--root", root_});
  EXPECT_EQ(started.exit_code, 2);
  EXPECT_THAT(started.output, HasSubstr("--standin is required"));
  EXPECT_EQ(Control({"stop"}).exit_code, 2);
  EXPECT_EQ(Control({"restart", "--root", root_, "--force"}).exit_code, 2);
}

}  // namespace
}  // namespace handoff::sandbox::testing
