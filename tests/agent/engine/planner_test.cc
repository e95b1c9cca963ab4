#include "agent/engine/planner.h"

#include <map>

#include "agent/engine/migration_record.h"
#include "agent/engine/plan_chain.h"
#include "common/base/strings.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/agent/engine/node_fixture.h"

namespace handoff {
namespace {

using ::testing::AllOf;
using testing::ApplyPlan;
using testing::ClassifyNode;
using ::testing::HasSubstr;
using testing::LoadNode;
using ::testing::Not;
using testing::PlanNode;

constexpr char kKcm[] = "/etc/kubernetes/manifests/kube-controller-manager.yaml";
constexpr char kCcm[] = "/etc/kubernetes/manifests/cloud-controller-manager.yaml";
constexpr char kRecord[] = "/var/lib/handoff/migration-record.yaml";
constexpr char kParked[] = "/var/lib/handoff/parked/kube-controller-manager.yaml";
constexpr char kApiserver[] = "/etc/kubernetes/manifests/kube-apiserver.yaml";
constexpr char kScheduler[] = "/etc/kubernetes/manifests/kube-scheduler.yaml";
constexpr char kKubeletFlags[] = "/var/lib/kubelet/kubeadm-flags.env";

using testing::KubeadmSettings;

void Step(MemoryFileSystem& fs, NodeState to, const Settings& settings = KubeadmSettings()) {
  absl::StatusOr<Plan> plan = PlanNode(fs, to, settings);
  ASSERT_TRUE(plan.ok()) << plan.status();
  ApplyPlan(*plan, fs);
}

const FileChange* ChangeTo(const Plan& plan, const std::string& path) {
  for (const FileChange& change : plan.changes) {
    if (change.path == path) return &change;
  }
  return nullptr;
}

TEST(PlannerTest, RefusesATargetThatIsNotAdjacent) {
  MemoryFileSystem fs = LoadNode("kubeadm");
  absl::StatusOr<Plan> plan = PlanNode(fs, NodeState::kMigrated, KubeadmSettings());
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(plan.status().message()),
              HasSubstr("the node is in-tree and migrated is not one step away"));
}

TEST(PlannerTest, RefusesAnInconsistentNodeListingEveryReason) {
  MemoryFileSystem fs = LoadNode("kubeadm");
  fs.SetFile("/etc/kubernetes/manifests/kube-controller-manager.yaml.bak", *fs.ReadFile(kKcm));
  fs.SetFile("/etc/kubernetes/manifests/kube-apiserver.yaml.orig",
             *fs.ReadFile("/etc/kubernetes/manifests/kube-apiserver.yaml"));
  absl::StatusOr<Plan> plan = PlanNode(fs, NodeState::kPrepared, KubeadmSettings());
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(
      std::string(plan.status().message()),
      AllOf(HasSubstr("the node is inconsistent"), HasSubstr("kube-controller-manager.yaml.bak"),
            HasSubstr("kube-apiserver.yaml.orig")));
}

TEST(PlannerTest, CurrentStateIsANoOp) {
  MemoryFileSystem fs = LoadNode("kubeadm");
  absl::StatusOr<Plan> plan = PlanNode(fs, NodeState::kInTree, KubeadmSettings());
  ASSERT_TRUE(plan.ok());
  EXPECT_TRUE(plan->empty());
}

TEST(PlannerTest, PrepareRefusesWithoutLeaderElection) {
  MemoryFileSystem fs = LoadNode("kubeadm");
  std::string kcm = *fs.ReadFile(kKcm);
  kcm.replace(kcm.find("--leader-elect=true"), 19, "--leader-elect=false");
  fs.SetFile(kKcm, kcm);
  absl::StatusOr<Plan> plan = PlanNode(fs, NodeState::kPrepared, KubeadmSettings());
  ASSERT_FALSE(plan.ok());
  EXPECT_THAT(std::string(plan.status().message()), HasSubstr("--leader-elect=false"));
}

TEST(PlannerTest, MigrateNeedsACloudControllerManagerImage) {
  MemoryFileSystem fs = LoadNode("kubeadm");
  Step(fs, NodeState::kPrepared);
  Settings settings = KubeadmSettings();
  settings.ccm.image.clear();
  absl::StatusOr<Plan> plan = PlanNode(fs, NodeState::kMigrated, settings);
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(plan.status().message()), HasSubstr("--ccm-image"));
}

TEST(PlannerTest, MigrateRefusesADowngrade) {
  MemoryFileSystem fs = LoadNode("kubeadm");
  Step(fs, NodeState::kPrepared);
  Settings settings = KubeadmSettings();
  settings.k8s_version = *KubeVersion::Parse("v1.25.3");
  absl::StatusOr<Plan> plan = PlanNode(fs, NodeState::kMigrated, settings);
  ASSERT_FALSE(plan.ok());
  EXPECT_THAT(std::string(plan.status().message()),
              HasSubstr("--k8s-version v1.25.3 is older than kube-controller-manager v1.26.9"));
}

TEST(PlannerTest, MigrateNeedsAPatchVersionToTagImages) {
  MemoryFileSystem fs = LoadNode("kubeadm");
  Step(fs, NodeState::kPrepared);
  Settings settings = KubeadmSettings();
  settings.k8s_version = *KubeVersion::Parse("v1.27");
  absl::StatusOr<Plan> plan = PlanNode(fs, NodeState::kMigrated, settings);
  ASSERT_FALSE(plan.ok());
  EXPECT_THAT(std::string(plan.status().message()), HasSubstr("needs a patch number"));
}

TEST(PlannerTest, MigrateWithoutTargetVersionKeepsImages) {
  MemoryFileSystem fs = LoadNode("kubeadm");
  Step(fs, NodeState::kPrepared);
  Settings settings = KubeadmSettings();
  settings.k8s_version.reset();
  absl::StatusOr<Plan> plan = PlanNode(fs, NodeState::kMigrated, settings);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(ChangeTo(*plan, "/etc/kubernetes/manifests/kube-scheduler.yaml"), nullptr);
  const FileChange* kcm = ChangeTo(*plan, kKcm);
  ASSERT_NE(kcm, nullptr);
  EXPECT_THAT(*kcm->after, HasSubstr("image: registry.k8s.io/kube-controller-manager:v1.26.9"));
}

TEST(PlannerTest, OptionsAStepDoesNotNeedAreIgnored) {
  MemoryFileSystem fs = LoadNode("kubeadm");
  Settings bare;
  Settings full = KubeadmSettings();
  absl::StatusOr<Plan> with = PlanNode(fs, NodeState::kPrepared, full);
  absl::StatusOr<Plan> without = PlanNode(fs, NodeState::kPrepared, bare);
  ASSERT_TRUE(with.ok() && without.ok());
  ASSERT_EQ(with->changes.size(), without->changes.size());
  for (size_t i = 0; i < with->changes.size(); ++i) {
    EXPECT_EQ(with->changes[i].after, without->changes[i].after);
  }
}

TEST(PlannerTest, WriteOrderPutsEachFileBeforeTheManifestThatMountsIt) {
  MemoryFileSystem fs = LoadNode("kubeadm");
  absl::StatusOr<Plan> prepare = PlanNode(fs, NodeState::kPrepared, KubeadmSettings());
  ASSERT_TRUE(prepare.ok());
  ASSERT_EQ(prepare->changes.size(), 2u);
  EXPECT_EQ(prepare->changes[0].path, "/etc/leadermigration.conf");
  EXPECT_EQ(prepare->changes[1].component, "kube-controller-manager");

  ApplyPlan(*prepare, fs);
  absl::StatusOr<Plan> migrate = PlanNode(fs, NodeState::kMigrated, KubeadmSettings());
  ASSERT_TRUE(migrate.ok());
  std::vector<std::string> order;
  for (const FileChange& change : migrate->changes) {
    order.push_back(change.component.empty() ? change.path : change.component);
  }
  // The real node's order: the kube-controller-manager stops (its leases released on proof of
  // exit) before its node's API server goes away for up to 45 s, the cloud-controller-manager
  // starts against the new API server, and the kubelet, which ignores static pods changed in its
  // first seconds, goes last.
  EXPECT_THAT(order, ::testing::ElementsAre(kRecord, "kube-controller-manager", "kube-scheduler",
                                            "kube-apiserver", "/etc/leadermigration.conf",
                                            "cloud-controller-manager", "kubelet"));

  ApplyPlan(*migrate, fs);
  absl::StatusOr<Plan> back = PlanNode(fs, NodeState::kPrepared, KubeadmSettings());
  ASSERT_TRUE(back.ok());
  order.clear();
  for (const FileChange& change : back->changes) {
    order.push_back(change.component.empty() ? change.path : change.component);
  }
  // Moving back, the kube-controller-manager (with Leader Migration) starts before the
  // cloud-controller-manager stops: the successor already waits for the lease. The kubelet is
  // last here too.
  EXPECT_THAT(order, ::testing::ElementsAre("/etc/leadermigration.conf", "kube-scheduler",
                                            "kube-controller-manager", "cloud-controller-manager",
                                            "kube-apiserver", "kubelet", kRecord));
}

TEST(PlannerTest, MovingBackWithoutARecordIsRefusedNotGuessed) {
  MemoryFileSystem fs = LoadNode("kubeadm");
  Step(fs, NodeState::kPrepared);
  Step(fs, NodeState::kMigrated);
  fs.DeleteFile(kRecord);
  absl::StatusOr<Plan> plan = PlanNode(fs, NodeState::kPrepared, KubeadmSettings());
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(plan.status().message()),
              AllOf(HasSubstr("no migration record at /var/lib/handoff/migration-record.yaml"),
                    HasSubstr("never guesses")));
}

TEST(PlannerTest, MovingBackWithADamagedRecordIsRefused) {
  MemoryFileSystem fs = LoadNode("kubeadm");
  Step(fs, NodeState::kPrepared);
  Step(fs, NodeState::kMigrated);
  fs.SetFile(kRecord, "kind: Something\n");
  absl::StatusOr<Plan> plan = PlanNode(fs, NodeState::kPrepared, KubeadmSettings());
  ASSERT_FALSE(plan.ok());
  EXPECT_THAT(std::string(plan.status().message()), HasSubstr("the migration record is damaged"));
}

TEST(PlannerTest, MovingBackRestoresRecordedImagesEvenWhenSettingsNameAnotherVersion) {
  MemoryFileSystem fs = LoadNode("kubeadm");
  const std::string original = *fs.ReadFile(kKcm);
  Step(fs, NodeState::kPrepared);
  const std::string prepared = *fs.ReadFile(kKcm);
  Step(fs, NodeState::kMigrated);
  Settings other = KubeadmSettings();
  other.k8s_version = *KubeVersion::Parse("v1.28.0");
  Step(fs, NodeState::kPrepared, other);
  EXPECT_EQ(*fs.ReadFile(kKcm), prepared);
  EXPECT_FALSE(fs.ReadFile(kCcm).ok());
  EXPECT_FALSE(fs.ReadFile(kRecord).ok());
  Step(fs, NodeState::kInTree, other);
  EXPECT_EQ(*fs.ReadFile(kKcm), original);
}

TEST(PlannerTest, LeaderMigrationFeatureGateOnlyWhereTheVersionNeedsIt) {
  MemoryFileSystem fs = LoadNode("kubeadm");
  std::string kcm = *fs.ReadFile(kKcm);
  kcm.replace(kcm.find("v1.26.9"), 7, "v1.21.14");
  fs.SetFile(kKcm, kcm);
  absl::StatusOr<Plan> prepare = PlanNode(fs, NodeState::kPrepared, KubeadmSettings());
  ASSERT_TRUE(prepare.ok()) << prepare.status();
  const FileChange* change = ChangeTo(*prepare, kKcm);
  ASSERT_NE(change, nullptr);
  EXPECT_THAT(*change->after, HasSubstr("--feature-gates=ControllerManagerLeaderMigration=true"));
  // v1alpha1 is what 1.21 decodes.
  EXPECT_THAT(*ChangeTo(*prepare, "/etc/leadermigration.conf")->after,
              HasSubstr("controllermanager.config.k8s.io/v1alpha1"));
  ApplyPlan(*prepare, fs);
  absl::StatusOr<Plan> migrate = PlanNode(fs, NodeState::kMigrated, KubeadmSettings());
  ASSERT_TRUE(migrate.ok()) << migrate.status();
  EXPECT_THAT(*ChangeTo(*migrate, kKcm)->after, Not(HasSubstr("ControllerManagerLeaderMigration")));
  EXPECT_THAT(*ChangeTo(*migrate, kCcm)->after, Not(HasSubstr("feature-gates")));

  MemoryFileSystem current = LoadNode("kubeadm");
  absl::StatusOr<Plan> plain = PlanNode(current, NodeState::kPrepared, KubeadmSettings());
  ASSERT_TRUE(plain.ok());
  EXPECT_THAT(*ChangeTo(*plain, kKcm)->after, Not(HasSubstr("feature-gates")));
}

TEST(PlannerTest, ExistingFeatureGatesAreKept) {
  MemoryFileSystem fs = LoadNode("kubeadm");
  std::string kcm = *fs.ReadFile(kKcm);
  kcm.replace(kcm.find("v1.26.9"), 7, "v1.21.14");
  kcm.replace(kcm.find("    - --kubeconfig"), 0,
              "    - --feature-gates=RotateKubeletServerCertificate=true\n");
  fs.SetFile(kKcm, kcm);
  Step(fs, NodeState::kPrepared);
  EXPECT_THAT(*fs.ReadFile(kKcm), HasSubstr("--feature-gates=RotateKubeletServerCertificate=true,"
                                            "ControllerManagerLeaderMigration=true"));
  Step(fs, NodeState::kInTree);
  EXPECT_EQ(*fs.ReadFile(kKcm), kcm);
}

TEST(PlannerTest, CloudControllerManagerTakesOverTheCloudConfigAndKubeconfig) {
  MemoryFileSystem fs = LoadNode("kubeadm");
  Step(fs, NodeState::kPrepared);
  absl::StatusOr<Plan> plan = PlanNode(fs, NodeState::kMigrated, KubeadmSettings());
  ASSERT_TRUE(plan.ok());
  absl::StatusOr<StaticPod> ccm = StaticPod::Parse(*ChangeTo(*plan, kCcm)->after, kCcm);
  ASSERT_TRUE(ccm.ok());
  EXPECT_EQ(ccm->GetFlag(0, "cloud-config"), "/etc/kubernetes/cloud.conf");
  EXPECT_TRUE(ccm->MountCovering(0, "/etc/kubernetes/cloud.conf"));
  EXPECT_EQ(ccm->GetFlag(0, "kubeconfig"), "/etc/kubernetes/controller-manager.conf");
  EXPECT_EQ(ccm->GetFlag(0, "secure-port"), "10258");
  EXPECT_EQ(ccm->GetFlag(0, "configure-cloud-routes"), "false");
  EXPECT_FALSE(ccm->FindHostPathMount(0, "flexvolume-dir"));
  EXPECT_EQ(ccm->node()["spec"]["containers"][0]["livenessProbe"]["httpGet"]["port"].Scalar(),
            "10258");
}

TEST(PlannerTest, CloudRoutesAndExtraArgsFromSettings) {
  MemoryFileSystem fs = LoadNode("kubeadm");
  Step(fs, NodeState::kPrepared);
  Settings settings = KubeadmSettings();
  settings.ccm.configure_cloud_routes = true;
  settings.ccm.cluster_cidr = "192.168.0.0/16";
  settings.ccm.extra_args["allow-untagged-cloud"] = "";
  settings.ccm.extra_args["v"] = "4";
  absl::StatusOr<Plan> plan = PlanNode(fs, NodeState::kMigrated, settings);
  ASSERT_TRUE(plan.ok()) << plan.status();
  const std::string& ccm = *ChangeTo(*plan, kCcm)->after;
  EXPECT_THAT(ccm, AllOf(HasSubstr("- --configure-cloud-routes=true\n"),
                         HasSubstr("- --cluster-cidr=192.168.0.0/16\n"),
                         HasSubstr("- --allow-untagged-cloud\n"), HasSubstr("- --v=4\n")));
}

TEST(PlannerTest, ClashingVolumeNameIsReportedAndNothingPlanned) {
  MemoryFileSystem fs = LoadNode("kubeadm");
  std::string kcm = *fs.ReadFile(kKcm);
  // A volume already named like handoff's, pointing elsewhere.
  kcm.replace(kcm.find("  - hostPath:\n      path: /usr/local/share/ca-certificates"), 0,
              "  - hostPath:\n      path: /srv/other\n      type: File\n    name: "
              "leader-migration-config\n");
  fs.SetFile(kKcm, kcm);
  absl::StatusOr<Plan> plan = PlanNode(fs, NodeState::kPrepared, KubeadmSettings());
  ASSERT_FALSE(plan.ok());
  EXPECT_THAT(std::string(plan.status().message()),
              AllOf(HasSubstr(kKcm), HasSubstr("already named 'leader-migration-config'"),
                    HasSubstr("not hostPath /etc/leadermigration.conf")));
}

TEST(PlannerTest, AlreadyPreparedNodeGoesBackToInTreeAndLeavesItsOwnFile) {
  MemoryFileSystem fs = LoadNode("already-prepared");
  absl::StatusOr<Plan> plan = PlanNode(fs, NodeState::kInTree, KubeadmSettings());
  ASSERT_TRUE(plan.ok()) << plan.status();
  ASSERT_EQ(plan->changes.size(), 1u);
  EXPECT_EQ(plan->changes[0].path, kKcm);
  EXPECT_THAT(*plan->changes[0].after,
              AllOf(Not(HasSubstr("leader-migration")), Not(HasSubstr("leadermigration"))));
  EXPECT_THAT(plan->notes, ::testing::Contains(HasSubstr("leaves that file in place")));
  ApplyPlan(*plan, fs);
  EXPECT_EQ(ClassifyNode(fs, NodePaths{}).state, NodeState::kInTree);
}

TEST(PlannerTest, MigrationRecordRoundTripsThroughItsText) {
  MemoryFileSystem fs = LoadNode("kubeadm");
  Step(fs, NodeState::kPrepared);
  Step(fs, NodeState::kMigrated);
  const std::string text = *fs.ReadFile(kRecord);
  absl::StatusOr<MigrationRecord> record = MigrationRecord::Parse(text, kRecord);
  ASSERT_TRUE(record.ok()) << record.status();
  EXPECT_EQ(record->Emit(), text);
  EXPECT_TRUE(record->Has("kube-controller-manager"));
  EXPECT_FALSE(record->Has("cloud-controller-manager"));
  ASSERT_TRUE(record->leader_migration_config());
  EXPECT_EQ(record->leader_migration_config()->path, "/etc/leadermigration.conf");
}

// Each file of a plan by its component, or its path for a file no process reloads.
std::vector<std::string> Order(const Plan& plan) {
  std::vector<std::string> order;
  for (const FileChange& change : plan.changes) {
    order.push_back(change.component.empty() ? change.path : change.component);
  }
  return order;
}

// Plans `to`, checks the plan's order and that the node it leaves classifies as `to`, and
// carries it out.
void StepInOrder(MemoryFileSystem& fs, NodeState to, const std::vector<std::string>& order) {
  absl::StatusOr<Plan> plan = PlanNode(fs, to, KubeadmSettings());
  ASSERT_TRUE(plan.ok()) << NodeStateName(to) << ": " << plan.status();
  EXPECT_EQ(plan->to, to);
  EXPECT_THAT(Order(*plan), ::testing::ElementsAreArray(order)) << NodeStateName(to);
  ApplyPlan(*plan, fs);
  Classification after = ClassifyNode(fs, NodePaths{});
  EXPECT_EQ(after.state, to) << StrJoin(after.problems, "\n");
}

TEST(PlannerDowntimeTest, EveryMoveInItsOrderAndBackToTheSameBytes) {
  MemoryFileSystem fs = LoadNode("kubeadm");
  const std::map<std::string, std::string> start = fs.files();
  const std::string kcm = *fs.ReadFile(kKcm);

  StepInOrder(fs, NodeState::kStopped, {kParked, "kube-controller-manager"});
  EXPECT_EQ(*fs.ReadFile(kParked), kcm);  // byte for byte
  EXPECT_FALSE(fs.ReadFile(kKcm).ok());

  StepInOrder(fs, NodeState::kExternal,
              {kRecord, "kube-apiserver", "kube-controller-manager", kParked, "kube-scheduler",
               "kubelet"});
  EXPECT_FALSE(fs.ReadFile(kParked).ok());
  EXPECT_FALSE(fs.ReadFile(kCcm).ok());
  EXPECT_FALSE(fs.ReadFile("/etc/leadermigration.conf").ok());
  absl::StatusOr<StaticPod> external = StaticPod::Parse(*fs.ReadFile(kKcm), kKcm);
  ASSERT_TRUE(external.ok()) << external.status();
  EXPECT_EQ(external->Image(0), "registry.k8s.io/kube-controller-manager:v1.27.6");
  EXPECT_EQ(external->GetFlag(0, "cloud-provider"), "external");
  EXPECT_EQ(external->GetFlag(0, "leader-elect"), "true");
  EXPECT_FALSE(external->GetFlag(0, "cloud-config"));
  EXPECT_FALSE(external->GetFlag(0, "enable-leader-migration"));
  EXPECT_FALSE(external->GetFlag(0, "leader-migration-config"));
  EXPECT_THAT(*fs.ReadFile(kApiserver), AllOf(HasSubstr("--cloud-provider=external"),
                                              HasSubstr("kube-apiserver:v1.27.6")));
  EXPECT_THAT(*fs.ReadFile(kScheduler), HasSubstr("kube-scheduler:v1.27.6"));
  EXPECT_THAT(*fs.ReadFile(kKubeletFlags), HasSubstr("--cloud-provider=external"));

  StepInOrder(fs, NodeState::kFinalized, {"cloud-controller-manager"});
  absl::StatusOr<StaticPod> ccm = StaticPod::Parse(*fs.ReadFile(kCcm), kCcm);
  ASSERT_TRUE(ccm.ok()) << ccm.status();
  EXPECT_FALSE(ccm->GetFlag(0, "enable-leader-migration"));
  EXPECT_FALSE(ccm->GetFlag(0, "leader-migration-config"));
  EXPECT_EQ(ccm->GetFlag(0, "leader-elect"), "true");
  EXPECT_EQ(ccm->GetFlag(0, "cloud-provider"), "aws");
  // Taken over from the in-tree kube-controller-manager the record holds.
  EXPECT_EQ(ccm->GetFlag(0, "cloud-config"), "/etc/kubernetes/cloud.conf");
  // The same manager the Leader Migration path ends with.
  MemoryFileSystem other = LoadNode("kubeadm");
  for (NodeState step : {NodeState::kPrepared, NodeState::kMigrated, NodeState::kFinalized}) {
    Step(other, step);
  }
  absl::StatusOr<StaticPod> other_ccm = StaticPod::Parse(*other.ReadFile(kCcm), kCcm);
  ASSERT_TRUE(other_ccm.ok());
  EXPECT_TRUE(ccm->SemanticallyEquals(*other_ccm));

  StepInOrder(fs, NodeState::kExternal, {"cloud-controller-manager"});
  // The kubelet last, as in every move.
  StepInOrder(
      fs, NodeState::kStopped,
      {"kube-scheduler", kParked, "kube-controller-manager", "kube-apiserver", "kubelet", kRecord});
  EXPECT_EQ(*fs.ReadFile(kParked), kcm);
  StepInOrder(fs, NodeState::kInTree, {"kube-controller-manager", kParked});
  EXPECT_EQ(fs.files(), start);
}

TEST(PlannerDowntimeTest, LeaderMigrationWayBackAfterADowntimeMove) {
  MemoryFileSystem fs = LoadNode("kubeadm");
  const std::map<std::string, std::string> start = fs.files();
  for (NodeState step : {NodeState::kStopped, NodeState::kExternal, NodeState::kFinalized,
                         NodeState::kMigrated, NodeState::kPrepared}) {
    Step(fs, step);
  }
  // Prepared as `--to prepared` makes it: Leader Migration on, its file rendered for it.
  Classification prepared = ClassifyNode(fs, NodePaths{});
  EXPECT_EQ(prepared.state, NodeState::kPrepared) << StrJoin(prepared.problems, "\n");
  MemoryFileSystem reference = LoadNode("kubeadm");
  Step(reference, NodeState::kPrepared);
  EXPECT_EQ(*fs.ReadFile(kKcm), *reference.ReadFile(kKcm));
  EXPECT_EQ(*fs.ReadFile("/etc/leadermigration.conf"),
            *reference.ReadFile("/etc/leadermigration.conf"));
  Step(fs, NodeState::kInTree);
  EXPECT_EQ(fs.files(), start);
}

TEST(PlannerDowntimeTest, DowntimeWayBackAfterALeaderMigrationMove) {
  MemoryFileSystem fs = LoadNode("kubeadm");
  const std::map<std::string, std::string> start = fs.files();
  for (NodeState step : {NodeState::kPrepared, NodeState::kMigrated, NodeState::kFinalized,
                         NodeState::kExternal, NodeState::kStopped}) {
    Step(fs, step);
  }
  // The record holds the kube-controller-manager as prepared; it is parked without Leader
  // Migration.
  EXPECT_THAT(*fs.ReadFile(kParked), Not(HasSubstr("leader-migration")));
  Step(fs, NodeState::kInTree);
  EXPECT_EQ(fs.files(), start);
}

TEST(PlannerDowntimeTest, StoppedToExternalRefusesWhereMigrateWould) {
  MemoryFileSystem fs = LoadNode("kubeadm");
  Step(fs, NodeState::kStopped);
  Settings settings = KubeadmSettings();
  settings.k8s_version = *KubeVersion::Parse("v1.25.3");
  absl::StatusOr<Plan> plan = PlanNode(fs, NodeState::kExternal, settings);
  ASSERT_FALSE(plan.ok());
  EXPECT_THAT(std::string(plan.status().message()), HasSubstr("is older than"));

  fs.DeleteFile(kKubeletFlags);
  plan = PlanNode(fs, NodeState::kExternal, KubeadmSettings());
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(plan.status().message()),
              AllOf(HasSubstr(kKubeletFlags), HasSubstr("does not exist")));
}

TEST(PlannerDowntimeTest, ExternalToStoppedWithoutARecordIsRefusedNotGuessed) {
  MemoryFileSystem fs = LoadNode("kubeadm");
  Step(fs, NodeState::kStopped);
  Step(fs, NodeState::kExternal);
  fs.DeleteFile(kRecord);
  absl::StatusOr<Plan> plan = PlanNode(fs, NodeState::kStopped, KubeadmSettings());
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(plan.status().message()),
              AllOf(HasSubstr("no migration record at /var/lib/handoff/migration-record.yaml"),
                    HasSubstr("never guesses")));
}

TEST(PlannerDowntimeTest, SettingsOfTheExternalControllerManagerAreHonoured) {
  MemoryFileSystem fs = LoadNode("kubeadm");
  Step(fs, NodeState::kStopped);
  Settings settings = KubeadmSettings();
  settings.external_cloud_volume_plugin = "aws";
  absl::StatusOr<Plan> plan = PlanNode(fs, NodeState::kExternal, settings);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_THAT(*ChangeTo(*plan, kKcm)->after, HasSubstr("- --external-cloud-volume-plugin=aws\n"));
}

TEST(PlannerDowntimeTest, StepsOffTheDowntimePathAreNotAdjacent) {
  MemoryFileSystem fs = LoadNode("kubeadm");
  Step(fs, NodeState::kStopped);
  for (NodeState target : {NodeState::kPrepared, NodeState::kMigrated, NodeState::kFinalized}) {
    absl::StatusOr<Plan> plan = PlanNode(fs, target, KubeadmSettings());
    ASSERT_FALSE(plan.ok()) << NodeStateName(target);
    EXPECT_THAT(std::string(plan.status().message()), HasSubstr("is not one step away"));
  }
  absl::StatusOr<Plan> plan = PlanNode(fs, NodeState::kStopped, KubeadmSettings());
  ASSERT_TRUE(plan.ok());
  EXPECT_TRUE(plan->empty());
}

TEST(PlannerDowntimeTest, TheWholePathPlansAsOneChain) {
  // What the coordinator's plan request does: each step planned on the node the previous one
  // leaves, the parked manifest and the record carried between them.
  MemoryFileSystem fs = LoadNode("kubeadm");
  absl::StatusOr<NodeSnapshot> snapshot = ReadNodeSnapshot(fs, NodePaths{});
  ASSERT_TRUE(snapshot.ok());
  absl::StatusOr<std::vector<Plan>> plans = PlanChain(
      *snapshot,
      {NodeState::kStopped, NodeState::kExternal, NodeState::kFinalized, NodeState::kExternal,
       NodeState::kStopped, NodeState::kInTree},
      KubeadmSettings());
  ASSERT_TRUE(plans.ok()) << plans.status();
  ASSERT_EQ(plans->size(), 6u);
  for (const Plan& plan : *plans) {
    ApplyPlan(plan, fs);
    EXPECT_EQ(ClassifyNode(fs, NodePaths{}).state, plan.to);
  }
  EXPECT_EQ(fs.files(), LoadNode("kubeadm").files());
}

// A node kubeadm joined with the external configuration during a Leader Migration rollout:
// external, and no migration record (handoff never moved it).
MemoryFileSystem KubeadmJoinedExternalNode() {
  MemoryFileSystem fs = LoadNode("kubeadm");
  Step(fs, NodeState::kStopped);
  Step(fs, NodeState::kExternal);
  fs.DeleteFile(kRecord);
  return fs;
}

TEST(PlannerJoinTest, AnExternalNodeGetsItsCloudControllerManagerWithLeaderMigrationAndBack) {
  MemoryFileSystem fs = KubeadmJoinedExternalNode();
  const std::map<std::string, std::string> joined = fs.files();
  // The file before the manager that mounts it; nothing else changes.
  StepInOrder(fs, NodeState::kMigrated, {"/etc/leadermigration.conf", "cloud-controller-manager"});
  absl::StatusOr<StaticPod> ccm = StaticPod::Parse(*fs.ReadFile(kCcm), kCcm);
  ASSERT_TRUE(ccm.ok()) << ccm.status();
  EXPECT_EQ(ccm->GetFlag(0, "enable-leader-migration"), "true");
  EXPECT_EQ(ccm->GetFlag(0, "leader-migration-config"), "/etc/leadermigration.conf");
  EXPECT_EQ(ccm->GetFlag(0, "cloud-provider"), "aws");
  // No record to take the in-tree --cloud-config from.
  EXPECT_FALSE(ccm->GetFlag(0, "cloud-config"));
  // The Leader Migration file the in-place path writes for the same cloud-controller-manager.
  MemoryFileSystem in_place = LoadNode("kubeadm");
  for (NodeState step : {NodeState::kPrepared, NodeState::kMigrated}) Step(in_place, step);
  EXPECT_EQ(*fs.ReadFile("/etc/leadermigration.conf"),
            *in_place.ReadFile("/etc/leadermigration.conf"));
  for (const char* path : {kKcm, kApiserver, kScheduler, kKubeletFlags}) {
    EXPECT_EQ(*fs.ReadFile(path), joined.at(path)) << path;
  }

  // On to finalized as any migrated node; and migrated → external takes both away again.
  MemoryFileSystem finalized = fs;
  StepInOrder(finalized, NodeState::kFinalized,
              {"cloud-controller-manager", "/etc/leadermigration.conf"});
  StepInOrder(fs, NodeState::kExternal, {"cloud-controller-manager", "/etc/leadermigration.conf"});
  EXPECT_EQ(fs.files(), joined);

  // Back to prepared needs what handoff never had: the in-tree manager it would restore.
  Step(fs, NodeState::kMigrated);
  absl::StatusOr<Plan> plan = PlanNode(fs, NodeState::kPrepared, KubeadmSettings());
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(plan.status().message()), HasSubstr("no migration record"));
}

TEST(PlannerJoinTest, AMigratedNodeMovedInPlaceGoesExternalAndBackToTheSameBytes) {
  MemoryFileSystem fs = LoadNode("kubeadm");
  for (NodeState step : {NodeState::kPrepared, NodeState::kMigrated}) Step(fs, step);
  const std::map<std::string, std::string> migrated = fs.files();
  StepInOrder(fs, NodeState::kExternal, {"cloud-controller-manager", "/etc/leadermigration.conf"});
  // The record stays: the in-tree manager can still be restored from external.
  EXPECT_TRUE(fs.ReadFile(kRecord).ok());
  StepInOrder(fs, NodeState::kMigrated, {"/etc/leadermigration.conf", "cloud-controller-manager"});
  EXPECT_EQ(fs.files(), migrated);
}

}  // namespace
}  // namespace handoff
