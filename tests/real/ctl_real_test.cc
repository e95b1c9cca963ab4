// handoffctl's cluster commands and the coordinator's cluster facts against a real
// kube-apiserver 1.26 holding what kubeadm would have created: lease get|watch, verify nodes,
// kubeadm-config plan|apply, KubeFactsSource. Each test sets up the objects it reads.
#include <sys/wait.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "agent/engine/classify.h"
#include "agent/engine/node_snapshot.h"
#include "common/base/strings.h"
#include "common/fs/atomic_file.h"
#include "common/fs/file_system.h"
#include "common/system/clock.h"
#include "common/kube/client.h"
#include "coordinator/kube/etcd_members.h"
#include "coordinator/kube/kubeadm_config.h"
#include "coordinator/kube/lease.h"
#include "coordinator/kube/rbac.h"
#include "common/kube/resource.h"
#include "coordinator/server/cluster_facts.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "rehearsal/real/components.h"
#include "rehearsal/real/kubeadm_objects.h"
#include "rehearsal/sandbox/process.h"
#include "tests/coordinator/lease_object.h"
#include "tests/real/ctl_runner.h"
#include "tests/real/real_cluster.h"
#include "tests/real/require_components.h"
#include "tests/support/memory_file_system.h"

namespace handoff {
namespace {

using kube::Json;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

const std::vector<sandbox::real::ControlPlaneNode>& Nodes() {
  static const auto* nodes = new std::vector<sandbox::real::ControlPlaneNode>{
      {"ip-10-0-1-11.ec2.internal", "us-east-1a", "i-0a00000000000000a", "10.0.1.11"},
      {"ip-10-0-2-12.ec2.internal", "us-east-1b", "i-0b00000000000000b", "10.0.2.12"},
      {"ip-10-0-3-13.ec2.internal", "us-east-1c", "i-0c00000000000000c", "10.0.3.13"},
  };
  return *nodes;
}

class CtlRealTest : public ::testing::Test {
 protected:
  void SetUp() override {
    HANDOFF_REAL_CLUSTER_OR_SKIP(cluster);
    cluster_ = &cluster;
    absl::StatusOr<std::unique_ptr<kube::KubeClient>> admin =
        cluster.Client(cluster.AdminCredentials(), *clock_);
    ASSERT_TRUE(admin.ok()) << admin.status();
    admin_ = *std::move(admin);
    kubeconfig_ = cluster.dir() + "/admin.conf";
    ASSERT_TRUE(cluster.WriteKubeconfig(kubeconfig_, cluster.admin()).ok());
    // The kubeadm objects once per control plane; the tests only read them, or restore them.
    static bool created = false;
    if (!created) {
      sandbox::real::KubeadmObjectsOptions options;
      options.nodes = Nodes();
      absl::Status status = sandbox::real::CreateKubeadmObjects(*admin_, options);
      ASSERT_TRUE(status.ok()) << status;
      created = true;
    }
  }

  // Creates or replaces a lease in kube-system held by `holder`, renewed at `renewed`.
  void PutLease(const std::string& name, const std::string& holder, absl::Time renewed) {
    testing::LeaseFields fields;
    fields.name = name;
    fields.holder = holder;
    fields.renewed = renewed;
    fields.held_for = absl::Minutes(1);
    const Json lease = testing::LeaseObject(fields);
    absl::Status removed = admin_->Delete({&kube::kLeases, "kube-system", name});
    ASSERT_TRUE(removed.ok() || absl::IsNotFound(removed)) << removed;
    absl::StatusOr<Json> created = admin_->Create(kube::kLeases, "kube-system", lease);
    ASSERT_TRUE(created.ok()) << created.status();
  }

  // The kube-controller-manager on the first node holds its main lease and the migration lease,
  // renewed at `renewed`.
  void KcmOnFirstNodeHolds(absl::Time renewed) {
    const std::string identity = Nodes()[0].name + "_6d3f1c2e-0000-4000-8000-000000000001";
    PutLease("kube-controller-manager", identity, renewed);
    PutLease(std::string(kube::kMigrationLeaseName), identity, renewed);
  }

  std::unique_ptr<Clock> clock_ = NewRealClock();
  sandbox::real::RealControlPlane* cluster_ = nullptr;
  std::unique_ptr<kube::KubeClient> admin_;
  std::string kubeconfig_;
};

TEST_F(CtlRealTest, LeaseGetNamesTheManagerThatRunsTheCloudControllers) {
  KcmOnFirstNodeHolds(absl::Now());
  testing::CtlResult result = testing::RunHandoffctl(
      {"lease", "get", std::string(kube::kMigrationLeaseName), "--kubeconfig", kubeconfig_});
  ASSERT_EQ(result.code, 0) << result.err;
  EXPECT_THAT(result.out, HasSubstr("lease kube-system/cloud-provider-extraction-migration"));
  EXPECT_THAT(result.out, HasSubstr("run by:       kube-controller-manager on "
                                    "ip-10-0-1-11.ec2.internal"));
  EXPECT_THAT(result.out, HasSubstr("duration:     15s"));

  testing::CtlResult missing =
      testing::RunHandoffctl({"lease", "get", "no-such-lease", "--kubeconfig", kubeconfig_});
  EXPECT_EQ(missing.code, 2);
  EXPECT_THAT(missing.err, HasSubstr("no-such-lease"));
}

TEST_F(CtlRealTest, LeaseWatchSeesTheHolderAndAGap) {
  KcmOnFirstNodeHolds(absl::Now());
  testing::CtlResult held = testing::RunHandoffctl(
      {"lease", "watch", "--duration", "1s", "--interval", "250ms", "--kubeconfig", kubeconfig_});
  EXPECT_EQ(held.code, 0) << held.out << held.err;
  EXPECT_THAT(held.out, HasSubstr("held by kube-controller-manager on ip-10-0-1-11.ec2.internal"));
  EXPECT_THAT(held.out, HasSubstr("0 gap(s)"));

  // Renewed a minute ago with a 15s duration: expired, nobody runs the cloud controllers.
  KcmOnFirstNodeHolds(absl::Now() - absl::Minutes(1));
  testing::CtlResult gap = testing::RunHandoffctl(
      {"lease", "watch", "--duration", "1s", "--interval", "250ms", "--kubeconfig", kubeconfig_});
  EXPECT_EQ(gap.code, 1) << gap.out << gap.err;
  EXPECT_THAT(gap.out,
              HasSubstr("gap: nobody holds kube-system/cloud-provider-extraction-migration"));
  EXPECT_THAT(gap.out, HasSubstr("nobody holds it now"));
}

TEST_F(CtlRealTest, VerifyNodesReadsProviderIdsAndFlagsANodeWithout) {
  testing::CtlResult good = testing::RunHandoffctl(
      {"verify", "nodes", "--control-plane-only", "--kubeconfig", kubeconfig_});
  EXPECT_EQ(good.code, 0) << good.out << good.err;
  EXPECT_THAT(good.out, HasSubstr("all 3 "));

  // A worker the cloud provider has not initialised yet: tainted, no providerID.
  Json worker = sandbox::real::ControlPlaneNodeObject(
      {"ip-10-0-9-99.ec2.internal", "us-east-1a", "i-0f00000000000000f", "10.0.9.99"});
  worker["metadata"]["labels"].erase("node-role.kubernetes.io/control-plane");
  worker["spec"].erase("providerID");
  worker["spec"]["taints"] =
      Json::array({Json{{"key", "node.cloudprovider.kubernetes.io/uninitialized"},
                        {"value", "true"},
                        {"effect", "NoSchedule"}}});
  absl::StatusOr<Json> created = admin_->Create(kube::kNodes, "", worker);
  ASSERT_TRUE(created.ok()) << created.status();
  testing::CtlResult bad = testing::RunHandoffctl({"verify", "nodes", "--kubeconfig", kubeconfig_});
  EXPECT_EQ(bad.code, 1) << bad.out << bad.err;
  EXPECT_THAT(bad.out, HasSubstr("ip-10-0-9-99.ec2.internal: "));
  EXPECT_THAT(bad.out, Not(HasSubstr("ip-10-0-1-11.ec2.internal: ")));
  EXPECT_THAT(bad.out, HasSubstr("1 of 4 "));
  // Control-plane nodes only: the worker is not among them.
  testing::CtlResult control_plane = testing::RunHandoffctl(
      {"verify", "nodes", "--control-plane-only", "--kubeconfig", kubeconfig_});
  EXPECT_EQ(control_plane.code, 0) << control_plane.out;
  ASSERT_TRUE(admin_->Delete({&kube::kNodes, "", "ip-10-0-9-99.ec2.internal"}).ok());
}

TEST_F(CtlRealTest, KubeadmConfigPlanThenApplyThenNothingLeft) {
  const kube::ObjectRef ref{&kube::kConfigMaps, "kube-system", "kubeadm-config"};
  absl::StatusOr<Json> before = admin_->Get(ref);
  ASSERT_TRUE(before.ok()) << before.status();

  testing::CtlResult plan =
      testing::RunHandoffctl({"kubeadm-config", "plan", "--kubeconfig", kubeconfig_});
  ASSERT_EQ(plan.code, 0) << plan.err;
  EXPECT_THAT(plan.out, HasSubstr("+    cloud-provider: external"));
  EXPECT_THAT(plan.out, HasSubstr("-    cloud-provider: aws"));
  absl::StatusOr<Json> after_plan = admin_->Get(ref);
  ASSERT_TRUE(after_plan.ok());
  EXPECT_EQ(kube::ResourceVersion(*after_plan), kube::ResourceVersion(*before));

  testing::CtlResult apply =
      testing::RunHandoffctl({"kubeadm-config", "apply", "--kubeconfig", kubeconfig_});
  ASSERT_EQ(apply.code, 0) << apply.err;
  EXPECT_THAT(apply.out, HasSubstr("kubeadm-config: updated kube-system/kubeadm-config"));
  absl::StatusOr<Json> applied = admin_->Get(ref);
  ASSERT_TRUE(applied.ok());
  const std::string text = kube::StringAt(*applied, {"data", "ClusterConfiguration"});
  EXPECT_THAT(text, HasSubstr("cloud-provider: external"));
  EXPECT_THAT(text, Not(HasSubstr("cloud-provider: aws")));
  EXPECT_THAT(text, HasSubstr("kubernetesVersion: v1.26.13"));

  testing::CtlResult again =
      testing::RunHandoffctl({"kubeadm-config", "plan", "--kubeconfig", kubeconfig_});
  EXPECT_EQ(again.code, 0);
  EXPECT_THAT(again.err, HasSubstr("kubeadm-config: no changes"));

  // Put back what kubeadm wrote, for any later test.
  Json restore = *applied;
  restore["data"] = (*before)["data"];
  ASSERT_TRUE(admin_->Update(ref, restore).ok());
}

// What a node of version N joins with in a rollback by replacement, built by the real kubeadm
// v1.26.13 from `kubeadm-config apply --to prepared` (and `leader-migration-file` in place):
// the agent finds it prepared, its kube-controller-manager in Leader Migration from its first
// start.
TEST_F(CtlRealTest, TheRealKubeadmBuildsAPreparedNodeFromThePreparedConfiguration) {
  // kubeadm --rootfs chroots: root, and the components' kubeadm.
  if (!sandbox::testing::CanRunOnRealComponents({sandbox::real::kKubeadm}, "kubeadm --rootfs")) {
    return;
  }
  absl::StatusOr<sandbox::real::Components> components =
      sandbox::real::FindComponents(sandbox::real::ProcessEnvironment(), {sandbox::real::kKubeadm});
  ASSERT_TRUE(components.ok()) << components.status();
  const kube::ObjectRef ref{&kube::kConfigMaps, "kube-system", "kubeadm-config"};
  absl::StatusOr<Json> before = admin_->Get(ref);
  ASSERT_TRUE(before.ok()) << before.status();
  ASSERT_EQ(testing::RunHandoffctl({"kubeadm-config", "apply", "--kubeconfig", kubeconfig_}).code,
            0);
  testing::CtlResult prepared =
      testing::RunHandoffctl({"kubeadm-config", "apply", "--kubeconfig", kubeconfig_, "--to",
                              "prepared", "--kubernetes-version", "v1.26.13"});
  ASSERT_EQ(prepared.code, 0) << prepared.err;
  absl::StatusOr<Json> applied = admin_->Get(ref);
  ASSERT_TRUE(applied.ok());
  const std::string cluster_configuration =
      kube::StringAt(*applied, {"data", "ClusterConfiguration"});

  std::string root = std::filesystem::path(::testing::TempDir()) / "prepared-node-XXXXXX";
  ASSERT_NE(mkdtemp(root.data()), nullptr);
  std::unique_ptr<FileSystem> node = NewPosixFileSystem(root);
  ASSERT_TRUE(AtomicReplaceCreatingParents(
                  *node, "/kubeadm.yaml",
                  StrCat("apiVersion: kubeadm.k8s.io/v1beta3\nkind: InitConfiguration\n"
                         "localAPIEndpoint:\n  advertiseAddress: 10.0.1.21\n"
                         "nodeRegistration:\n  name: ip-10-0-1-21.ec2.internal\n---\n",
                         cluster_configuration),
                  0600)
                  .ok());
  absl::StatusOr<std::unique_ptr<sandbox::Process>> kubeadm = sandbox::Process::Spawn(
      {components->Binary(sandbox::real::kKubeadm), "init", "phase", "control-plane", "all",
       "--config", "/kubeadm.yaml", "--rootfs", root},
      root + "/kubeadm.log");
  ASSERT_TRUE(kubeadm.ok()) << kubeadm.status();
  int status = 0;
  ASSERT_TRUE((*kubeadm)->WaitFor(absl::Minutes(1), &status));
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << *node->ReadFile("/kubeadm.log");
  testing::CtlResult file = testing::RunHandoffctl(
      {"kubeadm-config", "leader-migration-file", "--kubernetes-version", "v1.26.13"});
  ASSERT_EQ(file.code, 0) << file.err;
  ASSERT_TRUE(
      AtomicReplaceCreatingParents(*node, "/etc/leadermigration.conf", file.out, 0644).ok());
  ASSERT_TRUE(AtomicReplaceCreatingParents(*node, "/var/lib/kubelet/kubeadm-flags.env",
                                           "KUBELET_KUBEADM_ARGS=\"--cloud-provider=aws\"\n", 0644)
                  .ok());

  absl::StatusOr<NodeSnapshot> snapshot = ReadNodeSnapshot(*node, NodePaths{});
  ASSERT_TRUE(snapshot.ok()) << snapshot.status();
  const Classification classified = Classify(*snapshot);
  EXPECT_EQ(classified.state, NodeState::kPrepared) << StrJoin(classified.problems, "\n");
  ASSERT_TRUE(classified.view.controller_manager.has_value());
  EXPECT_EQ(classified.view.controller_manager->Flag("leader-migration-config"),
            "/etc/leadermigration.conf");

  std::filesystem::remove_all(root);
  Json restore = *applied;
  restore["data"] = (*before)["data"];
  ASSERT_TRUE(admin_->Update(ref, restore).ok());
}

TEST_F(CtlRealTest, ClusterFactsFollowTheRealRbacAndLease) {
  KcmOnFirstNodeHolds(absl::Now());
  absl::StatusOr<std::unique_ptr<kube::KubeClient>> client =
      cluster_->Client(cluster_->AdminCredentials(), *clock_);
  ASSERT_TRUE(client.ok());
  server::KubeFactsSource facts(*std::move(client), *clock_);

  // The bootstrap RBAC of 1.26 does not let the managers use the migration lease.
  const server::FactsReport before = facts.Check({});
  EXPECT_FALSE(before.rbac_ready) << before.detail;
  EXPECT_TRUE(before.lease_held) << before.detail;
  EXPECT_EQ(before.lease_holder_node, "ip-10-0-1-11.ec2.internal");
  EXPECT_EQ(before.kube_controller_manager_holder_node, "ip-10-0-1-11.ec2.internal");
  EXPECT_EQ(before.source, "kubernetes");

  absl::StatusOr<kube::RbacApplyResult> applied = kube::ApplyRbac(*admin_, kube::RbacOptions{});
  ASSERT_TRUE(applied.ok()) << applied.status();
  KcmOnFirstNodeHolds(absl::Now() - absl::Minutes(1));
  const server::FactsReport after = facts.Check({});
  EXPECT_TRUE(after.rbac_ready) << after.detail;
  EXPECT_FALSE(after.lease_held) << after.detail;
  // Expired leases name no holder.
  EXPECT_EQ(after.kube_controller_manager_holder_node, "");
  EXPECT_TRUE(after.node_objects.empty());
}

// handoffctl preflight against the real authorizer and storage objects: the rbac check asks the
// real SubjectAccessReview (denied before `rbac apply`, allowed after), and an in-tree EBS
// PersistentVolume fails ebs-csi until the CSIDriver ebs.csi.aws.com exists.
TEST_F(CtlRealTest, PreflightAsksTheRealAuthorizerAndReadsTheRealStorageObjects) {
  // A lease name of its own: other tests apply the default lease's RBAC.
  const std::string lease = "preflight-real-migration";
  const std::string settings = cluster_->dir() + "/preflight-settings.yaml";
  { std::ofstream(settings) << "leaderMigration:\n  leaderName: " << lease << "\n"; }
  auto verdicts = [&](std::string* out) {
    testing::CtlResult result = testing::RunHandoffctl(
        {"preflight", "--kubeconfig", kubeconfig_, "--settings", settings, "-o", "json"});
    if (out != nullptr) *out = result.out + result.err;
    std::map<std::string, std::string> found;
    const nlohmann::json json = nlohmann::json::parse(result.out, nullptr, false);
    if (json.is_discarded()) return found;
    for (const auto& check : json["checks"]) found[check["name"]] = check["verdict"];
    return found;
  };
  std::string out;
  EXPECT_EQ(verdicts(&out)["rbac"], "fail") << out;
  EXPECT_THAT(out, HasSubstr(StrCat("User system:kube-controller-manager may not get lease "
                                    "kube-system/",
                                    lease)));
  EXPECT_EQ(verdicts(&out)["ebs-csi"], "ok") << out;

  testing::CtlResult applied = testing::RunHandoffctl(
      {"rbac", "apply", "--kubeconfig", kubeconfig_, "--migration-lease", lease});
  ASSERT_EQ(applied.code, 0) << applied.out << applied.err;
  // The authorizer reads RBAC through an informer: await the new rules.
  const absl::Time deadline = absl::Now() + absl::Seconds(20);
  while (verdicts(&out)["rbac"] != "ok" && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(100));
  }
  EXPECT_EQ(verdicts(&out)["rbac"], "ok") << out;

  Json pv = Json::parse(R"({"apiVersion": "v1", "kind": "PersistentVolume",
      "metadata": {"name": "preflight-in-tree-ebs"},
      "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"],
               "awsElasticBlockStore": {"volumeID": "aws://us-east-1a/vol-0123456789abcdef0",
                                        "fsType": "ext4"}}})");
  ASSERT_TRUE(admin_->Create(kube::kPersistentVolumes, "", pv).ok());
  EXPECT_EQ(verdicts(&out)["ebs-csi"], "fail") << out;
  EXPECT_THAT(out, HasSubstr("PersistentVolume preflight-in-tree-ebs (awsElasticBlockStore "
                             "aws://us-east-1a/vol-0123456789abcdef0)"));
  Json driver = Json::parse(R"({"apiVersion": "storage.k8s.io/v1", "kind": "CSIDriver",
      "metadata": {"name": "ebs.csi.aws.com"}, "spec": {"attachRequired": true}})");
  ASSERT_TRUE(admin_->Create(kube::kCsiDrivers, "", driver).ok());
  EXPECT_EQ(verdicts(&out)["ebs-csi"], "ok") << out;
  EXPECT_TRUE(admin_->Delete({&kube::kCsiDrivers, "", "ebs.csi.aws.com"}).ok());
  EXPECT_TRUE(admin_->Delete({&kube::kPersistentVolumes, "", "preflight-in-tree-ebs"}).ok());
}

// A replacement takes a leaving node out only once the API server no longer has its Node: the
// lookup tells a Node that exists, one deleted, and one never made apart.
TEST_F(CtlRealTest, ClusterFactsTellWhetherALeavingNodesObjectIsGone) {
  absl::StatusOr<std::unique_ptr<kube::KubeClient>> client =
      cluster_->Client(cluster_->AdminCredentials(), *clock_);
  ASSERT_TRUE(client.ok());
  server::KubeFactsSource facts(*std::move(client), *clock_);
  const std::string name = "ip-10-0-9-9.ec2.internal";
  Json node = Json::object();
  node["apiVersion"] = "v1";
  node["kind"] = "Node";
  node["metadata"] = {{"name", name}};
  ASSERT_TRUE(admin_->Create(kube::kNodes, "", node).ok());
  server::FactsReport report = facts.Check({name, "ip-10-0-9-8.ec2.internal"});
  EXPECT_EQ(report.node_objects,
            (std::map<std::string, bool>{{name, true}, {"ip-10-0-9-8.ec2.internal", false}}))
      << report.node_objects_detail;
  ASSERT_TRUE(admin_->Delete({&kube::kNodes, "", name}).ok());
  report = facts.Check({name});
  EXPECT_EQ(report.node_objects, (std::map<std::string, bool>{{name, false}}));
  EXPECT_FALSE(report.etcd_members.has_value());
  EXPECT_THAT(report.etcd_members_detail, HasSubstr("no --etcd-endpoint"));
}

// The real etcd's member list, read as the coordinator reads it (its one member is "handoff").
TEST_F(CtlRealTest, ClusterFactsReadTheRealEtcdsMemberList) {
  const MemoryFileSystem no_files;  // plain HTTP on loopback: no certificate to read
  absl::StatusOr<kube::ClusterCredentials> etcd =
      kube::EtcdCredentials(no_files, cluster_->etcd_url(), "", "", "");
  ASSERT_TRUE(etcd.ok()) << etcd.status();
  absl::StatusOr<std::unique_ptr<kube::HttpTransport>> transport = kube::NewCurlTransport(*etcd);
  ASSERT_TRUE(transport.ok()) << transport.status();
  absl::StatusOr<std::vector<kube::EtcdMember>> members = kube::ListEtcdMembers(**transport);
  ASSERT_TRUE(members.ok()) << members.status();
  ASSERT_EQ(members->size(), 1u);
  EXPECT_EQ((*members)[0].name, "handoff");
  EXPECT_FALSE((*members)[0].id.empty());
  EXPECT_FALSE((*members)[0].peer_urls.empty());
  ASSERT_FALSE((*members)[0].client_urls.empty());

  // As the coordinator asks: an endpoint that refuses first (a member gone), then the real one;
  // the next read starts where the last answer came from, then the members' own client URLs.
  const std::string gone = "http://127.0.0.1:1";
  auto lister = std::make_unique<kube::EtcdMemberLister>(
      std::vector<std::string>{gone, cluster_->etcd_url()}, [&etcd](const std::string& endpoint) {
        kube::ClusterCredentials to = *etcd;
        to.server = endpoint;
        return kube::NewCurlTransport(to);
      });
  absl::StatusOr<std::unique_ptr<kube::KubeClient>> client =
      cluster_->Client(cluster_->AdminCredentials(), *clock_);
  ASSERT_TRUE(client.ok());
  kube::EtcdMemberLister* lister_view = lister.get();
  server::KubeFactsSource facts(*std::move(client), *clock_, kube::RbacOptions{},
                                kube::LeaseNames{}, std::move(lister));
  EXPECT_FALSE(facts.Check({}).etcd_members.has_value());  // read only for a leaving node
  server::FactsReport report = facts.Check({"ip-10-0-9-9.ec2.internal"});
  ASSERT_TRUE(report.etcd_members.has_value()) << report.etcd_members_detail;
  EXPECT_THAT(*report.etcd_members, ElementsAre("handoff"));
  const std::vector<std::string> order = lister_view->Endpoints();
  ASSERT_GE(order.size(), 2u);
  EXPECT_EQ(order.front(), cluster_->etcd_url());
  EXPECT_EQ(order.back(), gone);
}

}  // namespace
}  // namespace handoff
