#include "rehearsal/kubelet/pod_spec.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/rehearsal/kubelet/sandbox_node_fixture.h"

namespace handoff::sandbox {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using testing::PodManifest;
using ::testing::SizeIs;

constexpr char kDir[] = "/etc/kubernetes/manifests";

DesiredPods Pods(std::vector<ManifestFile> files) {
  return PodsFromManifests(std::move(files), kDir, "cp-1");
}

TEST(PodSpecTest, CommandAndArgsMakeTheArgv) {
  DesiredPods desired = Pods(
      {{"kcm.yaml", PodManifest("kube-controller-manager", {"kube-controller-manager", "--v=2"},
                                {"--leader-elect=true"})}});
  ASSERT_THAT(desired.problems, IsEmpty());
  const PodSpec& pod = desired.pods.at("kube-controller-manager");
  EXPECT_EQ(pod.file, "/etc/kubernetes/manifests/kcm.yaml");
  EXPECT_THAT(pod.argv, ElementsAre("kube-controller-manager", "--v=2", "--leader-elect=true"));
  EXPECT_EQ(pod.component, "kube-controller-manager");
  EXPECT_EQ(pod.version, "v1.26.9");
  ASSERT_THAT(pod.mounts, SizeIs(2));
  EXPECT_EQ(pod.mounts[0].host_path, "/etc/kubernetes/controller-manager.conf");
  EXPECT_EQ(pod.mounts[0].type, "FileOrCreate");
}

TEST(PodSpecTest, WithoutCommandTheCloudControllerManagerImageEntrypointRuns) {
  DesiredPods desired = Pods(
      {{"ccm.yaml", PodManifest("cloud-controller-manager", {}, {"--v=2"},
                                "registry.k8s.io/provider-aws/cloud-controller-manager:v1.27.1")},
       {"sched.yaml",
        PodManifest("kube-scheduler", {}, {"--v=2"}, "registry.k8s.io/kube-scheduler:v1.26.9")}});
  const PodSpec& ccm = desired.pods.at("cloud-controller-manager");
  EXPECT_THAT(ccm.argv, ElementsAre("/bin/aws-cloud-controller-manager", "--v=2"));
  EXPECT_EQ(ccm.component, "cloud-controller-manager");
  EXPECT_EQ(desired.pods.count("kube-scheduler"), 0u);
  ASSERT_THAT(desired.problems, SizeIs(1));
  EXPECT_THAT(desired.problems[0],
              HasSubstr("no pod from /etc/kubernetes/manifests/sched.yaml: pod kube-scheduler: "
                        "image registry.k8s.io/kube-scheduler:v1.26.9 has no entrypoint"));
}

TEST(PodSpecTest, DotfilesAreSkippedAndOtherNamesAreManifestsWhateverTheirExtension) {
  DesiredPods desired = Pods({{".kcm.yaml.handoff-tmp", PodManifest("a", {"a"}, {})},
                              {"kcm.yaml.bak", PodManifest("b", {"b"}, {})}});
  EXPECT_EQ(desired.pods.count("a"), 0u);
  EXPECT_EQ(desired.pods.count("b"), 1u);
  EXPECT_THAT(desired.problems, IsEmpty());
}

TEST(PodSpecTest, FilesThatYieldNoPodAreNamed) {
  DesiredPods desired =
      Pods({{"garbage.yaml", "spec: ["},
            {"empty.yaml", ""},
            {"nocontainers.yaml",
             "apiVersion: v1\nkind: Pod\nmetadata: {name: x}\nspec: {containers: []}\n"}});
  EXPECT_THAT(desired.pods, IsEmpty());
  ASSERT_THAT(desired.problems, SizeIs(3));
  EXPECT_THAT(desired.problems[0], HasSubstr("no pod from /etc/kubernetes/manifests/empty.yaml"));
  EXPECT_THAT(desired.problems[1], HasSubstr("no pod from /etc/kubernetes/manifests/garbage.yaml"));
  EXPECT_THAT(desired.problems[2], HasSubstr("spec.containers: must list at least one container"));
}

TEST(PodSpecTest, FirstFileByNameWinsADuplicatePodName) {
  DesiredPods desired = Pods({{"z.yaml", PodManifest("kcm", {"kcm", "--from=z"}, {})},
                              {"a.yaml", PodManifest("kcm", {"kcm", "--from=a"}, {})}});
  EXPECT_THAT(desired.pods.at("kcm").argv, ElementsAre("kcm", "--from=a"));
  ASSERT_THAT(desired.problems, SizeIs(1));
  EXPECT_THAT(desired.problems[0],
              HasSubstr("z.yaml: pod kcm is already defined by /etc/kubernetes/manifests/a.yaml"));
}

TEST(PodSpecTest, HashFollowsMeaningNodeAndFileNotLayout) {
  const std::string manifest = PodManifest("kcm", {"kcm", "--v=2"}, {});
  const std::string hash = Pods({{"kcm.yaml", manifest}}).pods.at("kcm").hash;
  // Keys reordered: the same pod.
  const size_t spec = manifest.find("spec:");
  EXPECT_EQ(
      Pods({{"kcm.yaml", manifest.substr(spec) + manifest.substr(0, spec)}}).pods.at("kcm").hash,
      hash);
  // Another flag, file or node: another pod.
  EXPECT_NE(Pods({{"kcm.yaml", PodManifest("kcm", {"kcm", "--v=3"}, {})}}).pods.at("kcm").hash,
            hash);
  EXPECT_NE(Pods({{"other.yaml", manifest}}).pods.at("kcm").hash, hash);
  EXPECT_NE(PodsFromManifests({{"kcm.yaml", manifest}}, kDir, "cp-2").pods.at("kcm").hash, hash);
  // Stable: kept in sandbox-pods.json across kubelet restarts and builds.
  EXPECT_EQ(hash.size(), 16u);
  EXPECT_EQ(Pods({{"kcm.yaml", manifest}}).pods.at("kcm").hash, hash);
}

TEST(PodSpecTest, EnvironmentCarriesNodeRecordsRootMountsAndVersion) {
  const PodSpec pod = Pods({{"kcm.yaml", PodManifest("kcm", {"kcm"}, {})}}).pods.at("kcm");
  std::vector<std::string> env =
      PodEnvironment(pod, PodContext{"cp-1", "/tmp/records/cp-1.jsonl", "/tmp/nodes/cp-1"}, "/bin");
  EXPECT_THAT(env, ElementsAre("PATH=/bin", "HANDOFF_SANDBOX_NODE=cp-1",
                               "HANDOFF_SANDBOX_ROOT=/tmp/nodes/cp-1",
                               "HANDOFF_SANDBOX_RECORDS=/tmp/records/cp-1.jsonl",
                               "HANDOFF_SANDBOX_MOUNTS=/etc/kubernetes/controller-manager.conf="
                               "/tmp/nodes/cp-1/etc/kubernetes/controller-manager.conf\n"
                               "/etc/kubernetes/pki=/tmp/nodes/cp-1/etc/kubernetes/pki",
                               "HANDOFF_SANDBOX_VERSION=v1.26.9"));
  // Without records the variable is unset, not empty.
  env = PodEnvironment(pod, PodContext{"cp-1", "", "/tmp/nodes/cp-1"}, "/bin");
  EXPECT_EQ(std::count_if(
                env.begin(), env.end(),
                [](const std::string& e) { return e.rfind("HANDOFF_SANDBOX_RECORDS", 0) == 0; }),
            0);
}

TEST(PodSpecTest, ComponentNamesFollowTheStandin) {
  EXPECT_EQ(ComponentOf("/usr/local/bin/kube-apiserver"), "kube-apiserver");
  EXPECT_EQ(ComponentOf("/bin/aws-cloud-controller-manager"), "cloud-controller-manager");
  EXPECT_EQ(ComponentOf("cloud-controller-manager"), "cloud-controller-manager");
}

TEST(PodSpecTest, ContainerEnvWithValuesIsKeptInOrder) {
  const std::string manifest =
      PodManifest("kube-controller-manager", {"kube-controller-manager"}, {});
  // The env goes into the container, after its image.
  std::string with_env = manifest;
  const std::string image_line = "    image: registry.k8s.io/kube-controller-manager:v1.26.9\n";
  with_env.insert(with_env.find(image_line) + image_line.size(),
                  "    env:\n"
                  "    - name: AWS_EC2_METADATA_SERVICE_ENDPOINT\n"
                  "      value: http://127.0.1.100:1338\n"
                  "    - name: POD_IP\n"
                  "      valueFrom:\n"
                  "        fieldRef:\n"
                  "          fieldPath: status.podIP\n"
                  "    - name: EMPTY\n"
                  "    - name: TZ\n"
                  "      value: Europe/Berlin\n");
  DesiredPods desired = PodsFromManifests({{"kcm.yaml", with_env}}, kDir, "cp-1");
  ASSERT_THAT(desired.problems, IsEmpty());
  const PodSpec& pod = desired.pods.at("kube-controller-manager");
  using Entry = std::pair<std::string, std::string>;
  EXPECT_THAT(pod.env, ElementsAre(Entry{"AWS_EC2_METADATA_SERVICE_ENDPOINT",
                                         "http://127.0.1.100:1338"},
                                   Entry{"EMPTY", ""}, Entry{"TZ", "Europe/Berlin"}));
  // The env is part of the pod: another value is another hash.
  std::string other = with_env;
  other.replace(other.find("1338"), 4, "1339");
  EXPECT_NE(PodsFromManifests({{"kcm.yaml", other}}, kDir, "cp-1").pods.at(pod.name).hash,
            pod.hash);

  // A container's own TZ wins over the image default; each name once.
  EXPECT_THAT(ContainerEnvironment(pod, "cp-1", "/usr/bin:/bin"),
              ElementsAre("PATH=/usr/bin:/bin", "HOSTNAME=cp-1", "HOME=/root", "TZ=Europe/Berlin",
                          "AWS_EC2_METADATA_SERVICE_ENDPOINT=http://127.0.1.100:1338", "EMPTY="));
  const PodSpec bare = PodsFromManifests({{"kcm.yaml", manifest}}, kDir, "cp-1").pods.at(pod.name);
  EXPECT_THAT(bare.env, IsEmpty());
  EXPECT_THAT(ContainerEnvironment(bare, "cp-2", "/bin"),
              ElementsAre("PATH=/bin", "HOSTNAME=cp-2", "HOME=/root", "TZ=UTC"));
}

}  // namespace
}  // namespace handoff::sandbox
