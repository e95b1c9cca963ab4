// The cluster checks read from the fake API server (seeded with a healthy kubeadm control plane,
// tests/testdata/cluster/preflight.yaml) and judged: the healthy cluster passes every check, and
// each fault planted fails exactly its check, naming the object.
#include "coordinator/preflight/cluster_checks.h"

#include <functional>
#include <map>
#include <string>

#include "common/kube/json_yaml.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/coordinator/fake_cluster.h"

namespace handoff::preflight {
namespace {

using ::handoff::testing::FakeCluster;
using ::handoff::testing::ReadTestdata;
using kube::Json;
using ::testing::Contains;
using ::testing::HasSubstr;

class ClusterChecksTest : public ::testing::Test {
 protected:
  ClusterChecksTest() : cluster_(/*seed=*/false) {
    absl::Status seeded =
        cluster_.store().Seed(ReadTestdata("cluster/preflight.yaml"), "cluster/preflight.yaml");
    EXPECT_TRUE(seeded.ok()) << seeded;
    client_ = cluster_.Client(cluster_.Credentials());
  }

  void ApplyRbac() {
    absl::StatusOr<kube::RbacApplyResult> applied = kube::ApplyRbac(*client_, options_.rbac);
    ASSERT_TRUE(applied.ok()) << applied.status();
  }

  std::map<std::string, CheckResult> Run() {
    std::map<std::string, CheckResult> results;
    for (CheckResult& result : RunClusterChecks(ReadClusterView(*client_, options_), options_)) {
      results[result.name] = std::move(result);
    }
    return results;
  }

  // Every check but `failing` is ok; `failing` fails with a line containing `named`.
  void ExpectOnlyFails(const std::string& failing, const std::string& named) {
    const std::map<std::string, CheckResult> results = Run();
    EXPECT_EQ(results.size(), 6u);
    for (const auto& [name, result] : results) {
      if (name == failing) {
        EXPECT_EQ(result.verdict, Verdict::kFail) << name;
        EXPECT_THAT(result.evidence, Contains(HasSubstr(named))) << name;
        EXPECT_FALSE(result.action.empty()) << name;
      } else {
        EXPECT_EQ(result.verdict, Verdict::kOk)
            << name << ": " << (result.evidence.empty() ? "" : result.evidence.front());
      }
    }
  }

  // Changes the stored object of `type` called `name` in kube-system (or cluster-wide).
  void Edit(const kube::ResourceType& type, const std::string& name,
            const std::function<void(Json&)>& change) {
    std::optional<Json> object =
        cluster_.store().Get(type, type.namespaced ? "kube-system" : "", name);
    ASSERT_TRUE(object.has_value()) << name;
    change(*object);
    ASSERT_TRUE(cluster_.store().Put(*object).ok());
  }

  void Seed(const std::string& yaml) {
    absl::Status seeded = cluster_.store().Seed(yaml, "test");
    ASSERT_TRUE(seeded.ok()) << seeded;
  }

  static constexpr char kKcm[] = "kube-controller-manager-ip-10-0-1-11.ec2.internal";

  FakeCluster cluster_;
  std::unique_ptr<kube::KubeClient> client_;
  ClusterCheckOptions options_;
};

TEST_F(ClusterChecksTest, AHealthyClusterWithTheRbacAppliedPassesEveryCheck) {
  ApplyRbac();
  const std::map<std::string, CheckResult> results = Run();
  ASSERT_EQ(results.size(), 6u);
  for (const auto& [name, result] : results) {
    EXPECT_EQ(result.verdict, Verdict::kOk) << name;
    EXPECT_FALSE(result.evidence.empty()) << name;
  }
  EXPECT_THAT(results.at("control-plane").evidence,
              Contains(HasSubstr("3 control-plane nodes Ready, 12 control-plane pods")));
  EXPECT_THAT(results.at("rbac").evidence,
              Contains(HasSubstr("User system:kube-controller-manager may get lease "
                                 "kube-system/cloud-provider-extraction-migration")));
}

TEST_F(ClusterChecksTest, RbacMissingFailsNamingTheIdentityAndLease) {
  ExpectOnlyFails("rbac",
                  "User system:kube-controller-manager may not update lease "
                  "kube-system/cloud-provider-extraction-migration");
}

TEST_F(ClusterChecksTest, RbacIsNotCheckedForTheDowntimeStrategy) {
  options_.downtime = true;
  const std::map<std::string, CheckResult> results = Run();
  EXPECT_EQ(results.at("rbac").verdict, Verdict::kOk);
  EXPECT_THAT(results.at("rbac").evidence, Contains(HasSubstr("not needed")));
  for (const auto& request : cluster_.store().requests()) EXPECT_EQ(request.method, "GET");
}

TEST_F(ClusterChecksTest, RbacAsAServiceAccountAsksAsThatAccount) {
  ApplyRbac();
  options_.rbac.ccm_subject =
      kube::Subject{"ServiceAccount", "cloud-controller-manager", "kube-system"};
  // The account has no binding yet: only its questions are denied.
  const CheckResult rbac = Run().at("rbac");
  EXPECT_EQ(rbac.verdict, Verdict::kFail);
  for (const std::string& line : rbac.evidence) {
    EXPECT_THAT(line, HasSubstr("ServiceAccount kube-system/cloud-controller-manager may not"));
  }
  ApplyRbac();  // binds the account too
  EXPECT_EQ(Run().at("rbac").verdict, Verdict::kOk);
}

TEST_F(ClusterChecksTest, AnInTreeEbsVolumeWithoutTheCsiDriverFails) {
  ApplyRbac();
  Seed(R"(kind: PersistentVolume
apiVersion: v1
metadata: {name: pvc-data-0}
spec:
  capacity: {storage: 10Gi}
  awsElasticBlockStore: {volumeID: "aws://us-east-1a/vol-0123456789abcdef0", fsType: ext4}
)");
  ExpectOnlyFails("ebs-csi",
                  "PersistentVolume pvc-data-0 (awsElasticBlockStore "
                  "aws://us-east-1a/vol-0123456789abcdef0) uses the in-tree EBS plugin");
  Seed(R"(kind: CSIDriver
apiVersion: storage.k8s.io/v1
metadata: {name: ebs.csi.aws.com}
spec: {attachRequired: true}
)");
  EXPECT_EQ(Run().at("ebs-csi").verdict, Verdict::kOk);
}

TEST_F(ClusterChecksTest, AnInTreeEbsStorageClassWithoutTheCsiDriverFails) {
  ApplyRbac();
  Seed(R"(kind: StorageClass
apiVersion: storage.k8s.io/v1
metadata: {name: gp2}
provisioner: kubernetes.io/aws-ebs
)");
  ExpectOnlyFails("ebs-csi", "StorageClass gp2 (provisioner kubernetes.io/aws-ebs)");
}

TEST_F(ClusterChecksTest, LeaderElectOffFailsNamingThePod) {
  ApplyRbac();
  Edit(kube::kPods, kKcm, [](Json& pod) {
    for (Json& item : pod["spec"]["containers"][0]["command"]) {
      if (item == "--leader-elect=true") item = "--leader-elect=false";
    }
  });
  ExpectOnlyFails(
      "leader-elect",
      StrCat("Pod kube-system/", kKcm, " runs kube-controller-manager with --leader-elect=false"));
}

TEST_F(ClusterChecksTest, RoutesTheCloudControllerManagerWouldNotKeepFail) {
  ApplyRbac();
  // --configure-cloud-routes defaults to true: with --allocate-node-cidrs the in-tree manager
  // writes routes.
  for (const char* node : {"10", "11", "12"}) {
    Edit(kube::kPods, StrCat("kube-controller-manager-ip-10-0-1-", node, ".ec2.internal"),
         [](Json& pod) {
           Json& command = pod["spec"]["containers"][0]["command"];
           Json kept = Json::array();
           for (const Json& item : command) {
             if (item != "--configure-cloud-routes=false") kept.push_back(item);
           }
           command = kept;
         });
  }
  ExpectOnlyFails("cloud-routes", "(the settings' cloudControllerManager) writes no VPC routes");
  EXPECT_THAT(Run().at("cloud-routes").action,
              HasSubstr("configureCloudRoutes: true and clusterCIDR: 192.168.0.0/16"));
  options_.settings.ccm.configure_cloud_routes = true;
  options_.settings.ccm.cluster_cidr = "192.168.0.0/16";
  EXPECT_EQ(Run().at("cloud-routes").verdict, Verdict::kOk);
  options_.settings.ccm.cluster_cidr = "10.244.0.0/16";
  EXPECT_EQ(Run().at("cloud-routes").verdict, Verdict::kFail);
}

TEST_F(ClusterChecksTest, ACloudControllerManagerWritingRoutesTheOldManagerNeverWroteFails) {
  ApplyRbac();
  options_.settings.ccm.extra_args["configure-cloud-routes"] = "true";
  options_.settings.ccm.extra_args["cluster-cidr"] = "192.168.0.0/16";
  ExpectOnlyFails("cloud-routes", "writes VPC routes for --cluster-cidr=192.168.0.0/16");
}

TEST_F(ClusterChecksTest, AnUnhealthyControlPlanePodOrNodeFails) {
  ApplyRbac();
  Edit(kube::kPods, "etcd-ip-10-0-1-12.ec2.internal", [](Json& pod) {
    pod["status"]["conditions"][0]["status"] = "False";
    pod["status"]["containerStatuses"] =
        Json::parse(R"([{"name": "etcd", "state": {"waiting": {"reason": "CrashLoopBackOff"}}}])");
  });
  ExpectOnlyFails("control-plane",
                  "Pod kube-system/etcd-ip-10-0-1-12.ec2.internal: phase "
                  "Running, etcd CrashLoopBackOff, not Ready");
}

TEST_F(ClusterChecksTest, AMissingControlPlanePodFails) {
  ApplyRbac();
  ASSERT_TRUE(cluster_.store().Remove(kube::kPods, "kube-system",
                                      "kube-scheduler-ip-10-0-1-10.ec2.internal"));
  ExpectOnlyFails("control-plane", "no kube-scheduler pod on ip-10-0-1-10.ec2.internal");
}

// A running pod of an ECR image on ip-10-0-2-20.
constexpr char kEcrPod[] = R"(kind: Pod
apiVersion: v1
metadata: {name: api-0, namespace: shop}
spec:
  nodeName: ip-10-0-2-20.ec2.internal
  containers:
  - {name: api, image: "123456789012.dkr.ecr.us-east-1.amazonaws.com/shop/api:4.2"}
status: {phase: Running}
)";

TEST_F(ClusterChecksTest, EcrImagesNeedTheKubeletsCredentialProvider) {
  ApplyRbac();
  Seed(kEcrPod);
  // The kubelet's flags unknown: a warning naming the pod.
  CheckResult ecr = Run().at("ecr-credentials");
  EXPECT_EQ(ecr.verdict, Verdict::kWarn);
  EXPECT_THAT(ecr.evidence, Contains(HasSubstr("Pod shop/api-0 "
                                               "(123456789012.dkr.ecr.us-east-1.amazonaws.com/"
                                               "shop/api:4.2) on ip-10-0-2-20.ec2.internal")));
  // Known without the flags: the check fails, and only it.
  KubeletFacts flags;
  flags.credential_provider_config = true;
  options_.kubelets["ip-10-0-2-20.ec2.internal"] = flags;
  ExpectOnlyFails("ecr-credentials", "the kubelet has no --image-credential-provider-bin-dir");
  flags.credential_provider_bin_dir = true;
  options_.kubelets["ip-10-0-2-20.ec2.internal"] = flags;
  EXPECT_EQ(Run().at("ecr-credentials").verdict, Verdict::kOk);
}

TEST_F(ClusterChecksTest, AWorkerWhoseAgentMovesItNeedsOnlyTheProviderInstalled) {
  ApplyRbac();
  Seed(kEcrPod);
  // In-tree, no flags yet: its agent's move writes them, once the binary is there.
  KubeletFacts worker;
  worker.move_writes_flags = true;
  worker.provider_dir = "/usr/libexec/kubelet-image-credential-provider-plugins";
  options_.kubelets["ip-10-0-2-20.ec2.internal"] = worker;
  ExpectOnlyFails("ecr-credentials",
                  "/usr/libexec/kubelet-image-credential-provider-plugins/ecr-credential-provider "
                  "is not installed (the move refuses)");
  worker.provider_installed = true;
  options_.kubelets["ip-10-0-2-20.ec2.internal"] = worker;
  const CheckResult ecr = Run().at("ecr-credentials");
  EXPECT_EQ(ecr.verdict, Verdict::kOk);
  EXPECT_THAT(ecr.evidence, Contains(HasSubstr("or whose agents' moves give it them (1 worker, "
                                               "ecr-credential-provider installed)")));
}

TEST_F(ClusterChecksTest, WhatCannotBeReadWarnsAndSaysWhy) {
  ApplyRbac();
  cluster_.store().Forbid("*", "list", "persistentvolumes");
  const CheckResult ebs = Run().at("ebs-csi");
  EXPECT_EQ(ebs.verdict, Verdict::kWarn);
  EXPECT_THAT(ebs.evidence, Contains(HasSubstr("cannot list persistentvolumes: forbidden")));
}

TEST_F(ClusterChecksTest, ReadingChangesNothing) {
  ApplyRbac();
  const int64_t version = cluster_.store().resource_version();
  cluster_.store().ClearRequests();
  Run();
  EXPECT_EQ(cluster_.store().resource_version(), version);
  for (const auto& request : cluster_.store().requests()) {
    if (request.method != "GET") {
      EXPECT_EQ(request.path, "/apis/authorization.k8s.io/v1/subjectaccessreviews");
    }
  }
}

TEST(EcrImageTest, MatchesOnlyEcrRegistries) {
  EXPECT_TRUE(IsEcrImage("123456789012.dkr.ecr.us-east-1.amazonaws.com/app:1"));
  EXPECT_TRUE(IsEcrImage("123456789012.dkr.ecr-fips.us-gov-west-1.amazonaws.com/app@sha256:ab"));
  EXPECT_TRUE(IsEcrImage("123456789012.dkr.ecr.cn-north-1.amazonaws.com.cn/app"));
  EXPECT_FALSE(IsEcrImage("public.ecr.aws/eks/aws-load-balancer-controller:v2"));
  EXPECT_FALSE(IsEcrImage("registry.k8s.io/provider-aws/cloud-controller-manager:v1.27.1"));
  EXPECT_FALSE(IsEcrImage("12345.dkr.ecr.us-east-1.amazonaws.com/app"));
  EXPECT_FALSE(IsEcrImage("123456789012.dkr.ecr.us-east-1.amazonaws.com.evil.example/app"));
  EXPECT_FALSE(IsEcrImage("nginx"));
}

}  // namespace
}  // namespace handoff::preflight
