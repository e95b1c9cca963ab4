// Real pods: the kubelet with --real-bin-dir runs a pod whose image has a real binary the way a
// container runtime runs it. The "real binary" here is the static test pod (test_pod.cc), which
// reports what it finds inside the pod on its log.
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/rehearsal/kubelet/sandbox_node_fixture.h"

namespace handoff::sandbox::testing {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::SizeIs;

const std::vector<std::string> kCommand = {
    "kube-controller-manager",
    "--bind-address=127.0.1.1",
    "--test-cat=/etc/kubernetes/controller-manager.conf",
    "--test-write=/etc/kubernetes/pki/written",
    "--test-write=/var/lib/report/written",
    "--test-exists=/etc/passwd",
    "--test-exists=/usr/local/bin/kube-controller-manager",
    "--test-env=AWS_EC2_METADATA_SERVICE_ENDPOINT",
    "--test-env=TZ",
    "--test-env=POD_IP",
    "--test-env=HANDOFF_SANDBOX_ROOT"};

std::string Manifest(const std::string& image) {
  std::string yaml = StrCat(
      "apiVersion: v1\nkind: Pod\nmetadata:\n  name: kube-controller-manager\n"
      "  namespace: kube-system\nspec:\n  hostNetwork: true\n  containers:\n"
      "  - name: kube-controller-manager\n    image: ",
      image, "\n    command:\n");
  for (const std::string& item : kCommand) StrAppend(&yaml, "    - ", item, "\n");
  yaml +=
      "    env:\n"
      "    - name: AWS_EC2_METADATA_SERVICE_ENDPOINT\n"
      "      value: http://127.0.1.100:1338\n"
      "    - name: POD_IP\n"
      "      valueFrom:\n"
      "        fieldRef:\n"
      "          fieldPath: status.podIP\n"
      "    volumeMounts:\n"
      "    - mountPath: /etc/kubernetes/controller-manager.conf\n"
      "      name: kubeconfig\n"
      "      readOnly: true\n"
      "    - mountPath: /etc/kubernetes/pki\n"
      "      name: k8s-certs\n"
      "      readOnly: true\n"
      "    - mountPath: /var/lib/report\n"
      "      name: report\n"
      "  volumes:\n"
      "  - hostPath:\n"
      "      path: /etc/kubernetes/controller-manager.conf\n"
      "      type: FileOrCreate\n"
      "    name: kubeconfig\n"
      "  - hostPath:\n"
      "      path: /etc/kubernetes/pki\n"
      "      type: DirectoryOrCreate\n"
      "    name: k8s-certs\n"
      "  - hostPath:\n"
      "      path: /srv/report\n"
      "      type: DirectoryOrCreate\n"
      "    name: report\n";
  return yaml;
}

class RealPodTest : public SandboxNodeTest {
 protected:
  void SetUp() override {
    SandboxNodeTest::SetUp();
    if (::geteuid() != 0) GTEST_SKIP() << "real pods need root (mount and UTS namespaces)";
    bin_dir_ = root_ + "/components/bin";
    std::filesystem::create_directories(bin_dir_);
    std::filesystem::copy_file(HANDOFF_TEST_POD_BIN, bin_dir_ + "/kube-controller-manager");
    extra_flags_ = {"--real-bin-dir", bin_dir_};
    std::filesystem::create_directories(root_ + "/etc/kubernetes");
    std::ofstream(root_ + "/etc/kubernetes/controller-manager.conf") << "the node's kubeconfig";
  }

  std::string PodLog() const {
    return ReadText(root_ + "/var/log/pods/kube-controller-manager.log");
  }

  // The pod's process once it has reported "ready pid=<pid>" (a pid other than `not_pid`).
  std::optional<PodProcess> WaitForReport(int not_pid = 0) {
    std::optional<PodProcess> found;
    WaitFor([&] {
      found = Pod("kube-controller-manager");
      return found && found->pid != not_pid &&
             PodLog().find(StrCat("ready pid=", found->pid, "\n")) != std::string::npos;
    });
    if (!found || found->pid == not_pid) return std::nullopt;
    return found;
  }

  std::string bin_dir_;
};

TEST_F(RealPodTest, RunsLikeAContainerWithTheNodesFilesAtTheMountPaths) {
  char host_before[256] = {0};
  ASSERT_EQ(gethostname(host_before, sizeof(host_before) - 1), 0);
  StartKubelet();
  WriteManifestAtomically("kube-controller-manager.yaml",
                          Manifest("registry.k8s.io/kube-controller-manager:v1.26.13"));
  std::optional<PodProcess> pod = WaitForReport();
  ASSERT_TRUE(pod) << KubeletLog() << "\n--- pod log ---\n" << PodLog();
  const std::string log = PodLog();

  // The tracked pid is the manager itself: its cmdline is the manifest's argv exactly, and it
  // reports that pid.
  EXPECT_EQ(ReadCmdline(pod->pid).value_or(std::vector<std::string>{}), kCommand);
  EXPECT_THAT(log, HasSubstr(StrCat("pid: ", pod->pid, "\n")));
  EXPECT_EQ(getsid(pod->pid), pod->pid) << "a session of its own";
  EXPECT_EQ(std::filesystem::read_symlink(StrCat("/proc/", pod->pid, "/exe")).string(),
            "/usr/local/bin/kube-controller-manager");
  // Its own UTS namespace named after the node; the host keeps its name.
  EXPECT_THAT(log, HasSubstr("hostname: cp-1\n"));
  char host_after[256] = {0};
  ASSERT_EQ(gethostname(host_after, sizeof(host_after) - 1), 0);
  EXPECT_STREQ(host_after, host_before);
  EXPECT_NE(std::filesystem::read_symlink(StrCat("/proc/", pod->pid, "/ns/uts")),
            std::filesystem::read_symlink("/proc/self/ns/uts"));
  EXPECT_NE(std::filesystem::read_symlink(StrCat("/proc/", pod->pid, "/ns/mnt")),
            std::filesystem::read_symlink("/proc/self/ns/mnt"));
  EXPECT_EQ(std::filesystem::read_symlink(StrCat("/proc/", pod->pid, "/ns/net")),
            std::filesystem::read_symlink("/proc/self/ns/net"))
      << "hostNetwork: the host's network";

  // The node's files at the mountPaths, not the host's; read-only mounts refuse writes.
  EXPECT_THAT(log,
              HasSubstr("cat /etc/kubernetes/controller-manager.conf: the node's kubeconfig\n"));
  EXPECT_THAT(log, HasSubstr("write /etc/kubernetes/pki/written: error Read-only file system\n"));
  EXPECT_FALSE(std::filesystem::exists(root_ + "/etc/kubernetes/pki/written"));
  EXPECT_THAT(log, HasSubstr("write /var/lib/report/written: ok\n"));
  EXPECT_EQ(ReadText(root_ + "/srv/report/written"), "written in the pod\n");
  EXPECT_THAT(log, HasSubstr("exists /etc/passwd: no\n"));
  EXPECT_THAT(log, HasSubstr("exists /usr/local/bin/kube-controller-manager: yes\n"));

  // The container's env (valueFrom left out), TZ as images have it, no sandbox variables.
  EXPECT_THAT(log, HasSubstr("env AWS_EC2_METADATA_SERVICE_ENDPOINT=http://127.0.1.100:1338\n"));
  EXPECT_THAT(log, HasSubstr("env TZ=UTC\n"));
  EXPECT_THAT(log, HasSubstr("env POD_IP unset\n"));
  EXPECT_THAT(log, HasSubstr("env HANDOFF_SANDBOX_ROOT unset\n"));

  // Nothing of the pod's mounts shows in the host's mount table.
  EXPECT_THAT(ReadText("/proc/self/mountinfo"), Not(HasSubstr("sandbox-pod-root")));

  ASSERT_THAT(RecordsOf("process-start", pod->pid), SizeIs(1));
  EXPECT_EQ(RecordsOf("process-start", pod->pid)[0].component, "kube-controller-manager");
  EXPECT_THAT(KubeletLog(), HasSubstr(StrCat("started process ", pod->pid, " (", bin_dir_,
                                             "/kube-controller-manager)")));

  // Stopped like any pod: SIGTERM, exit 0, recorded.
  ASSERT_EQ(std::remove(ManifestPath("kube-controller-manager.yaml").c_str()), 0);
  ASSERT_TRUE(WaitFor([&] { return !RecordsOf("process-exit", pod->pid).empty(); }))
      << KubeletLog();
  EXPECT_EQ(RecordsOf("process-exit", pod->pid)[0].status, "exit 0");
}

TEST_F(RealPodTest, NextReleasesImageRunsTheSameBinaryAndSaysSo) {
  StartKubelet();
  WriteManifestAtomically("kube-controller-manager.yaml",
                          Manifest("registry.k8s.io/kube-controller-manager:v1.27.6"));
  std::optional<PodProcess> pod = WaitForReport();
  ASSERT_TRUE(pod) << KubeletLog() << "\n--- pod log ---\n" << PodLog();
  EXPECT_EQ(ReadCmdline(pod->pid).value_or(std::vector<std::string>{}), kCommand);
  EXPECT_THAT(KubeletLog(), HasSubstr("registry.k8s.io/kube-controller-manager:v1.27.6 runs " +
                                      bin_dir_ + "/kube-controller-manager (1.26)"));
}

TEST_F(RealPodTest, ImagesWithoutARealBinaryKeepTheStandin) {
  StartKubelet();
  WriteManifestAtomically(
      "kube-scheduler.yaml",
      PodManifest("kube-scheduler", {"kube-scheduler", "--v=2"}, {},
                  "registry.k8s.io/kube-scheduler:v1.26.13"));
  std::optional<PodProcess> pod = WaitForPod("kube-scheduler");
  ASSERT_TRUE(pod) << KubeletLog();
  EXPECT_EQ(std::filesystem::read_symlink(StrCat("/proc/", pod->pid, "/exe")).string(),
            HANDOFF_TEST_STANDIN_BIN);
  EXPECT_EQ(Environment(pod->pid)["HANDOFF_SANDBOX_NODE"], "cp-1");
}

TEST_F(RealPodTest, PodThatCannotBeSetUpSaysWhyInItsLog) {
  std::filesystem::remove(bin_dir_ + "/kube-controller-manager");
  StartKubelet();
  WriteManifestAtomically("kube-controller-manager.yaml",
                          Manifest("registry.k8s.io/kube-controller-manager:v1.26.13"));
  ASSERT_TRUE(WaitFor([&] {
    for (const RunRecord& record : Records()) {
      if (record.event == "process-exit" && record.status == "exit 127") return true;
    }
    return false;
  })) << KubeletLog();
  EXPECT_THAT(PodLog(), HasSubstr(StrCat("pod-exec: stat ", bin_dir_, "/kube-controller-manager")));
}

}  // namespace
}  // namespace handoff::sandbox::testing
