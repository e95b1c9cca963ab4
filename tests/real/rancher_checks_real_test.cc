// handoffctl rancher cordon|uncordon and rancher check cordon|ccm against a real kube-apiserver
// 1.26: what it stores for spec.unschedulable and annotations (so uncordon restores a Node
// exactly), and the DaemonSet it defaults (RollingUpdate, generation 1, no status until a
// DaemonSet controller writes one).
#include <memory>
#include <string>
#include <vector>

#include "common/system/clock.h"
#include "common/kube/client.h"
#include "coordinator/kube/cordon.h"
#include "common/kube/resource.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "rehearsal/real/kubeadm_objects.h"
#include "tests/real/ctl_runner.h"
#include "tests/real/real_cluster.h"

namespace handoff {
namespace {

using kube::Json;
using ::testing::HasSubstr;

// RKE2 servers: the upstream role label with the value "true".
Json Rke2Server(const std::string& name, const std::string& instance) {
  Json node = sandbox::real::ControlPlaneNodeObject({name, "us-east-1a", instance, "10.0.7.1"});
  node["metadata"]["labels"]["node-role.kubernetes.io/control-plane"] = "true";
  return node;
}

nlohmann::json Comparable(Json node) {
  node["metadata"].erase("resourceVersion");
  node["metadata"].erase("managedFields");
  return nlohmann::json::parse(node.dump());
}

class RancherChecksRealTest : public ::testing::Test {
 protected:
  void SetUp() override {
    HANDOFF_REAL_CLUSTER_OR_SKIP(cluster);
    absl::StatusOr<std::unique_ptr<kube::KubeClient>> admin =
        cluster.Client(cluster.AdminCredentials(), *clock_);
    ASSERT_TRUE(admin.ok()) << admin.status();
    admin_ = *std::move(admin);
    kubeconfig_ = cluster.dir() + "/rancher-admin.conf";
    ASSERT_TRUE(cluster.WriteKubeconfig(kubeconfig_, cluster.admin()).ok());
  }

  std::unique_ptr<Clock> clock_ = NewRealClock();
  std::unique_ptr<kube::KubeClient> admin_;
  std::string kubeconfig_;
};

TEST_F(RancherChecksRealTest, CordonUncordonRestoresAndLeavesOthersCordons) {
  std::vector<std::string> names = {"rke2-server-1", "rke2-server-2"};
  ASSERT_TRUE(admin_->Create(kube::kNodes, "", Rke2Server(names[0], "i-0d00000000000000d")).ok());
  Json theirs = Rke2Server(names[1], "i-0e00000000000000e");
  theirs["spec"]["unschedulable"] = true;  // an operator's cordon
  ASSERT_TRUE(admin_->Create(kube::kNodes, "", theirs).ok());
  absl::StatusOr<Json> before = admin_->Get({&kube::kNodes, "", names[0]});
  ASSERT_TRUE(before.ok()) << before.status();

  testing::CtlResult check = testing::RunHandoffctl(
      {"rancher", "check", "cordon", "--distribution", "rke2", "--kubeconfig", kubeconfig_});
  EXPECT_EQ(check.code, 1) << check.out << check.err;
  EXPECT_THAT(check.out, HasSubstr("rke2-server-1: not cordoned"));

  testing::CtlResult cordon = testing::RunHandoffctl(
      {"rancher", "cordon", "--distribution", "rke2", "--kubeconfig", kubeconfig_});
  ASSERT_EQ(cordon.code, 0) << cordon.out << cordon.err;
  EXPECT_THAT(cordon.out, HasSubstr("rke2-server-1: cordoned"));
  EXPECT_THAT(cordon.out, HasSubstr("rke2-server-2: already cordoned, not by handoff"));
  check = testing::RunHandoffctl(
      {"rancher", "check", "cordon", "--distribution", "rke2", "--kubeconfig", kubeconfig_});
  EXPECT_EQ(check.code, 0) << check.out << check.err;

  testing::CtlResult uncordon = testing::RunHandoffctl(
      {"rancher", "uncordon", "--distribution", "rke2", "--kubeconfig", kubeconfig_});
  ASSERT_EQ(uncordon.code, 0) << uncordon.out << uncordon.err;
  EXPECT_THAT(uncordon.out, HasSubstr("rke2-server-2: left cordoned"));
  absl::StatusOr<Json> after = admin_->Get({&kube::kNodes, "", names[0]});
  ASSERT_TRUE(after.ok()) << after.status();
  EXPECT_EQ(Comparable(*after), Comparable(*before));
  absl::StatusOr<Json> still = admin_->Get({&kube::kNodes, "", names[1]});
  ASSERT_TRUE(still.ok()) << still.status();
  EXPECT_TRUE(kube::IsCordoned(*still));
  for (const std::string& name : names) {
    ASSERT_TRUE(admin_->Delete({&kube::kNodes, "", name}).ok()) << name;
  }
}

TEST_F(RancherChecksRealTest, CcmDaemonSetWithoutAControllerIsNotRolledOut) {
  Json daemon_set = Json::parse(R"({
    "apiVersion": "apps/v1", "kind": "DaemonSet",
    "metadata": {"name": "aws-cloud-controller-manager", "namespace": "kube-system"},
    "spec": {
      "selector": {"matchLabels": {"k8s-app": "aws-cloud-controller-manager"}},
      "template": {
        "metadata": {"labels": {"k8s-app": "aws-cloud-controller-manager"}},
        "spec": {"containers": [{
          "name": "aws-cloud-controller-manager",
          "image": "registry.k8s.io/provider-aws/cloud-controller-manager:v1.27.1",
          "args": ["--v=2", "--cloud-provider=aws"]}]}}}})");
  absl::StatusOr<Json> created = admin_->Create(kube::kDaemonSets, "kube-system", daemon_set);
  ASSERT_TRUE(created.ok()) << created.status();
  // The server defaults the strategy handoff's decision assumes when it is absent.
  EXPECT_EQ(kube::StringAt(*created, {"spec", "updateStrategy", "type"}), "RollingUpdate");
  testing::CtlResult check =
      testing::RunHandoffctl({"rancher", "check", "ccm", "--kubeconfig", kubeconfig_});
  EXPECT_EQ(check.code, 1) << check.out << check.err;
  EXPECT_THAT(check.out, HasSubstr("Waiting for daemon set spec update to be observed..."));
  ASSERT_TRUE(
      admin_->Delete({&kube::kDaemonSets, "kube-system", "aws-cloud-controller-manager"}).ok());
}

}  // namespace
}  // namespace handoff
