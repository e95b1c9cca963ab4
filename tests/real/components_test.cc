// Finding the real components and building the kubeadm objects: pure parts and file checks, no
// upstream binaries needed.
#include "rehearsal/real/components.h"

#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <map>

#include "coordinator/kube/kubeadm_config.h"
#include "coordinator/kube/nodes.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "rehearsal/real/kubeadm_objects.h"
#include "tests/coordinator/fake_cluster.h"

namespace handoff::sandbox::real {
namespace {

using ::testing::HasSubstr;

EnvironmentReader Env(std::map<std::string, std::string> values) {
  return [values](const std::string& name) -> std::optional<std::string> {
    auto it = values.find(name);
    if (it == values.end()) return std::nullopt;
    return it->second;
  };
}

TEST(ComponentsDirTest, EnvironmentVariableThenXdgCacheThenHome) {
  EXPECT_EQ(*ComponentsDir(Env({{"HANDOFF_COMPONENTS_DIR", "/c"}, {"HOME", "/h"}})), "/c");
  EXPECT_EQ(*ComponentsDir(Env({{"HANDOFF_COMPONENTS_DIR", ""}, {"XDG_CACHE_HOME", "/x"},
                                {"HOME", "/h"}})),
            "/x/handoff/components");
  EXPECT_EQ(*ComponentsDir(Env({{"HOME", "/h"}})), "/h/.cache/handoff/components");
  absl::StatusOr<std::string> none = ComponentsDir(Env({}));
  EXPECT_EQ(none.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(none.status().message(), HasSubstr("HANDOFF_COMPONENTS_DIR"));
}

TEST(ParseVersionsTest, LinesOfThreeTabSeparatedFields) {
  absl::StatusOr<std::vector<ComponentVersion>> versions = ParseVersions(
      "# built by tests/real/components.sh\n"
      "kube-apiserver\tv1.26.13\tk8s.io/kubernetes\n"
      "\n"
      "etcd\t3.4.23\tdebian etcd-server\r\n",
      "versions.txt");
  ASSERT_TRUE(versions.ok()) << versions.status();
  ASSERT_EQ(versions->size(), 2u);
  EXPECT_EQ((*versions)[1].name, "etcd");
  EXPECT_EQ((*versions)[1].version, "3.4.23");
  EXPECT_EQ((*versions)[1].source, "debian etcd-server");

  absl::StatusOr<std::vector<ComponentVersion>> bad =
      ParseVersions("etcd\t3.4.23\n", "/c/versions.txt");
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(bad.status().message(), HasSubstr("/c/versions.txt line 1"));
}

TEST(LoadComponentsTest, MissingOrNotExecutableBinariesSayHowToBuildThem) {
  testing::TempDir dir;
  std::filesystem::create_directories(dir.path() + "/bin");
  absl::StatusOr<Components> missing = LoadComponents(dir.path(), {kEtcd, kKubeApiserver});
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(missing.status().message(), HasSubstr(dir.path() + "/bin/etcd"));
  EXPECT_THAT(missing.status().message(), HasSubstr("bash tests/real/components.sh"));

  dir.Write("bin/etcd", "#!/bin/sh\n");
  dir.Write("bin/kube-apiserver", "#!/bin/sh\n");
  chmod((dir.path() + "/bin/etcd").c_str(), 0755);
  absl::StatusOr<Components> not_executable =
      LoadComponents(dir.path(), {kEtcd, kKubeApiserver});
  EXPECT_THAT(not_executable.status().message(),
              HasSubstr("not an executable file: " + dir.path() + "/bin/kube-apiserver"));

  chmod((dir.path() + "/bin/kube-apiserver").c_str(), 0755);
  absl::StatusOr<Components> no_versions = LoadComponents(dir.path(), {kEtcd, kKubeApiserver});
  EXPECT_THAT(no_versions.status().message(), HasSubstr(dir.path() + "/versions.txt"));

  dir.Write("versions.txt", "etcd\t3.4.23\tdebian etcd-server\n");
  absl::StatusOr<Components> found = LoadComponents(dir.path(), {kEtcd, kKubeApiserver});
  ASSERT_TRUE(found.ok()) << found.status();
  EXPECT_EQ(found->Binary(kEtcd), dir.path() + "/bin/etcd");
  EXPECT_EQ(found->VersionOf("etcd"), "3.4.23");
  EXPECT_EQ(found->VersionOf("kube-apiserver"), "");
}

TEST(KubeadmObjectsTest, ClusterConfigurationIsWhatHandoffPlansTheMoveFor) {
  KubeadmObjectsOptions options;
  absl::StatusOr<kube::KubeadmConfigPlan> plan =
      kube::PlanKubeadmConfigMap(KubeadmConfigMap(options), {});
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->api_version, "kubeadm.k8s.io/v1beta3");
  EXPECT_THAT(plan->before, HasSubstr("kubernetesVersion: v1.26.13"));
  EXPECT_THAT(plan->after, HasSubstr("cloud-provider: external"));
  EXPECT_FALSE(plan->empty());
}

TEST(KubeadmObjectsTest, NodesPassTheProviderIdChecks) {
  const kube::Json node = ControlPlaneNodeObject(
      {"ip-10-0-1-5.ec2.internal", "us-east-1a", "i-0123456789abcdef0", "10.0.1.5"});
  const std::vector<kube::NodeCheck> checks = kube::CheckNodes({node});
  ASSERT_EQ(checks.size(), 1u);
  EXPECT_TRUE(checks[0].ok()) << ::testing::PrintToString(checks[0].problems);
  EXPECT_TRUE(checks[0].control_plane);
  EXPECT_EQ(checks[0].provider_id, "aws:///us-east-1a/i-0123456789abcdef0");
  EXPECT_EQ(node["metadata"]["labels"]["topology.kubernetes.io/region"], "us-east-1");
}

}  // namespace
}  // namespace handoff::sandbox::real
