// handoffctl's commands, run in-process against the fake API server over TLS.
#include "ctl/ctl_cli.h"

#include <functional>
#include <map>
#include <sstream>

#include "coordinator/kube/lease.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/coordinator/fake_cluster.h"
#include "tests/ctl/rollout_test_support.h"
#include "tests/ctl/scripted_clock.h"

namespace handoff::ctl {
namespace {

using ::handoff::testing::FakeCluster;
using ::handoff::testing::ScriptedClock;
using ::handoff::testing::Testdata;
using kube::Json;
using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;
using ::testing::StartsWith;

using test_support::Result;

class CtlTest : public ::testing::Test {
 protected:
  CtlTest() : kubeconfig_(cluster_.WriteKubeconfig()) {
    environment_.open_files = [] { return NewPosixFileSystem(""); };
    environment_.open_transport = kube::NewCurlTransport;
    environment_.open_clock = [this] {
      return std::make_unique<ScriptedClock>(cluster_.clock(), on_sleep_);
    };
    environment_.get_env = [this](const std::string& name) -> std::optional<std::string> {
      auto it = env_.find(name);
      if (it == env_.end()) return std::nullopt;
      return it->second;
    };
    environment_.interrupted = [] { return false; };
  }

  Result Run(std::vector<std::string> args) {
    return test_support::Run(std::move(args), environment_);
  }

  // Every object on the server with its resourceVersion, to prove a command wrote nothing.
  std::map<std::string, std::string> Snapshot() {
    std::map<std::string, std::string> objects;
    for (const kube::ResourceType* type : kube::KnownResourceTypes()) {
      for (const Json& object : cluster_.store().List(*type)) {
        objects[std::string(type->kind) + " " + kube::ObjectNamespace(object) + "/" +
                kube::ObjectName(object)] = object.dump();
      }
    }
    return objects;
  }

  void SetLease(const std::string& name, const std::string& holder, absl::Time renewed,
                absl::Time acquired) {
    Json lease = Json::object();
    lease["apiVersion"] = "coordination.k8s.io/v1";
    lease["kind"] = "Lease";
    lease["metadata"] = {{"name", name}, {"namespace", "kube-system"}};
    lease["spec"] = {{"holderIdentity", holder},
                     {"leaseDurationSeconds", 15},
                     {"acquireTime", kube::FormatTimestamp(acquired)},
                     {"renewTime", kube::FormatTimestamp(renewed)}};
    ASSERT_TRUE(cluster_.store().Put(lease).ok());
  }

  void ChangeNode(const std::string& name, const std::function<void(Json&)>& change) {
    std::optional<Json> node = cluster_.store().Get(kube::kNodes, "", name);
    ASSERT_TRUE(node.has_value()) << name;
    change(*node);
    ASSERT_TRUE(cluster_.store().Put(*node).ok());
  }

  FakeCluster cluster_;
  std::string kubeconfig_;
  std::map<std::string, std::string> env_;
  std::function<void(absl::Time)> on_sleep_;
  CtlEnvironment environment_;
};

constexpr char kRbacPlanSummary[] =
    "rbac plan: 3 change(s) in namespace kube-system; nothing is written (`handoffctl rbac apply` "
    "makes them):\n"
    "  update Role kube-system/system::leader-locking-kube-controller-manager\n"
    "    - append a rule allowing create, get, list, update, watch on lease "
    "cloud-provider-extraction-migration\n"
    "    - append a rule allowing create on leases: a create request has no name, so a rule with "
    "resourceNames never allows it\n"
    "  create Role kube-system/system::leader-locking-cloud-controller-manager\n"
    "    - kubeadm clusters have no cloud-controller-manager leader-locking Role; allow create, "
    "get, list, update, watch on leases cloud-controller-manager, "
    "cloud-provider-extraction-migration, and create on leases\n"
    "  create RoleBinding kube-system/system::leader-locking-cloud-controller-manager\n"
    "    - bind Role system::leader-locking-cloud-controller-manager to User "
    "system:kube-controller-manager, the cloud-controller-manager's identity\n";

constexpr char kRbacPlanDiff[] =
    "--- a/kube-system/roles/system::leader-locking-kube-controller-manager.yaml\n"
    "+++ b/kube-system/roles/system::leader-locking-kube-controller-manager.yaml\n"
    "@@ -26,3 +26,21 @@\n"
    "   - configmaps\n"
    "   resourceNames:\n"
    "   - kube-controller-manager\n"
    "+- verbs:\n"
    "+  - create\n"
    "+  - get\n"
    "+  - list\n"
    "+  - update\n"
    "+  - watch\n"
    "+  apiGroups:\n"
    "+  - coordination.k8s.io\n"
    "+  resources:\n"
    "+  - leases\n"
    "+  resourceNames:\n"
    "+  - cloud-provider-extraction-migration\n"
    "+- verbs:\n"
    "+  - create\n"
    "+  apiGroups:\n"
    "+  - coordination.k8s.io\n"
    "+  resources:\n"
    "+  - leases\n"
    "--- /dev/null\n"
    "+++ b/kube-system/roles/system::leader-locking-cloud-controller-manager.yaml\n"
    "@@ -0,0 +1,27 @@\n"
    "+apiVersion: rbac.authorization.k8s.io/v1\n"
    "+kind: Role\n"
    "+metadata:\n"
    "+  name: system::leader-locking-cloud-controller-manager\n"
    "+  namespace: kube-system\n"
    "+  labels:\n"
    "+    app.kubernetes.io/managed-by: handoff\n"
    "+rules:\n"
    "+- verbs:\n"
    "+  - create\n"
    "+  - get\n"
    "+  - list\n"
    "+  - update\n"
    "+  - watch\n"
    "+  apiGroups:\n"
    "+  - coordination.k8s.io\n"
    "+  resources:\n"
    "+  - leases\n"
    "+  resourceNames:\n"
    "+  - cloud-controller-manager\n"
    "+  - cloud-provider-extraction-migration\n"
    "+- verbs:\n"
    "+  - create\n"
    "+  apiGroups:\n"
    "+  - coordination.k8s.io\n"
    "+  resources:\n"
    "+  - leases\n"
    "--- /dev/null\n"
    "+++ b/kube-system/rolebindings/system::leader-locking-cloud-controller-manager.yaml\n"
    "@@ -0,0 +1,15 @@\n"
    "+apiVersion: rbac.authorization.k8s.io/v1\n"
    "+kind: RoleBinding\n"
    "+metadata:\n"
    "+  name: system::leader-locking-cloud-controller-manager\n"
    "+  namespace: kube-system\n"
    "+  labels:\n"
    "+    app.kubernetes.io/managed-by: handoff\n"
    "+roleRef:\n"
    "+  apiGroup: rbac.authorization.k8s.io\n"
    "+  kind: Role\n"
    "+  name: system::leader-locking-cloud-controller-manager\n"
    "+subjects:\n"
    "+- kind: User\n"
    "+  apiGroup: rbac.authorization.k8s.io\n"
    "+  name: system:kube-controller-manager\n";

TEST_F(CtlTest, RbacPlanPrintsExactlyWhatWouldChangeAndChangesNothing) {
  const std::map<std::string, std::string> before = Snapshot();
  const int64_t version = cluster_.store().resource_version();
  Result result = Run({"rbac", "plan", "--kubeconfig", kubeconfig_});
  EXPECT_EQ(result.code, kExitOk);
  EXPECT_EQ(result.err, kRbacPlanSummary);
  EXPECT_EQ(result.out, kRbacPlanDiff);
  EXPECT_EQ(cluster_.store().resource_version(), version);
  EXPECT_EQ(Snapshot(), before);
  for (const auto& request : cluster_.store().requests()) EXPECT_EQ(request.method, "GET");
}

TEST_F(CtlTest, RbacApplyTwiceThenNoChanges) {
  Result first = Run({"rbac", "apply", "--kubeconfig", kubeconfig_});
  EXPECT_EQ(first.code, kExitOk) << first.err;
  EXPECT_THAT(first.out, StartsWith("rbac: applied 3 change(s):\n"
                                    "  update Role kube-system/"
                                    "system::leader-locking-kube-controller-manager\n"));
  EXPECT_THAT(first.err, IsEmpty());

  const std::map<std::string, std::string> after_first = Snapshot();
  Result second = Run({"rbac", "apply", "--kubeconfig", kubeconfig_});
  EXPECT_EQ(second.code, kExitOk);
  EXPECT_EQ(second.out,
            "rbac: no changes; Roles system::leader-locking-kube-controller-manager and "
            "system::leader-locking-cloud-controller-manager already allow lease "
            "cloud-provider-extraction-migration, and User system:kube-controller-manager is "
            "bound\n");
  EXPECT_EQ(Snapshot(), after_first);

  Result plan = Run({"rbac", "plan", "--kubeconfig", kubeconfig_});
  EXPECT_EQ(plan.code, kExitOk);
  EXPECT_EQ(plan.out, "");
  EXPECT_THAT(plan.err, StartsWith("rbac: no changes;"));
}

TEST_F(CtlTest, RbacPlanJson) {
  Result result = Run({"rbac", "plan", "--kubeconfig", kubeconfig_, "-o", "json"});
  ASSERT_EQ(result.code, kExitOk) << result.err;
  nlohmann::json json = nlohmann::json::parse(result.out);
  ASSERT_EQ(json["changes"].size(), 3u);
  EXPECT_EQ(json["changes"][0]["action"], "update");
  EXPECT_EQ(json["changes"][0]["after"]["rules"].size(), 4u);
  EXPECT_EQ(json["changes"][1]["action"], "create");
  EXPECT_TRUE(json["changes"][1]["before"].is_null());
  EXPECT_TRUE(json["problems"].empty());
}

TEST_F(CtlTest, RbacForAServiceAccount) {
  Result result = Run({"rbac", "apply", "--kubeconfig", kubeconfig_, "--ccm-service-account",
                       "kube-system/cloud-controller-manager"});
  ASSERT_EQ(result.code, kExitOk) << result.err;
  std::optional<Json> binding = cluster_.store().Get(
      kube::kRoleBindings, "kube-system", "system::leader-locking-cloud-controller-manager");
  ASSERT_TRUE(binding.has_value());
  EXPECT_EQ(
      (*binding)["subjects"].dump(),
      R"([{"kind":"ServiceAccount","name":"cloud-controller-manager","namespace":"kube-system"}])");
  Result both = Run({"rbac", "plan", "--kubeconfig", kubeconfig_, "--ccm-user", "x",
                     "--ccm-service-account", "kube-system/y"});
  EXPECT_EQ(both.code, kExitRefused);
  Result bad = Run({"rbac", "plan", "--kubeconfig", kubeconfig_, "--ccm-service-account", "y"});
  EXPECT_EQ(bad.code, kExitRefused);
  EXPECT_THAT(bad.err, HasSubstr("--ccm-service-account: service account \"y\" must be "
                                 "NAMESPACE/NAME"));
}

TEST_F(CtlTest, RbacRefusedWhenForbidden) {
  cluster_.store().Forbid("handoff-operator", "update", "roles");
  const int64_t version = cluster_.store().resource_version();
  Result result = Run({"rbac", "apply", "--kubeconfig", kubeconfig_});
  EXPECT_EQ(result.code, kExitRefused);
  EXPECT_THAT(result.err, StartsWith("handoffctl: forbidden: handoff-operator cannot update "
                                     "roles.rbac.authorization.k8s.io "
                                     "system::leader-locking-kube-controller-manager in "
                                     "kube-system (the server said: "));
  EXPECT_EQ(cluster_.store().resource_version(), version);
}

TEST_F(CtlTest, VerifyNodesAllGood) {
  Result result = Run({"verify", "nodes", "--kubeconfig", kubeconfig_});
  EXPECT_EQ(result.code, kExitOk);
  EXPECT_EQ(result.out, "all 5 nodes have an AWS providerID and no uninitialized taint\n");
  result = Run({"verify", "nodes", "--kubeconfig", kubeconfig_, "--control-plane-only"});
  EXPECT_EQ(result.out,
            "all 3 control-plane nodes have an AWS providerID and no uninitialized taint\n");
}

TEST_F(CtlTest, VerifyNodesReportsBadNodesByName) {
  ChangeNode("ip-10-0-1-11.ec2.internal", [](Json& node) { node["spec"].erase("providerID"); });
  ChangeNode("ip-10-0-1-12.ec2.internal",
             [](Json& node) { node["spec"]["providerID"] = "aws:///i-123"; });
  ChangeNode("ip-10-0-2-21.ec2.internal", [](Json& node) {
    node["spec"]["taints"] =
        Json::array({{{"key", "node.cloudprovider.kubernetes.io/uninitialized"},
                      {"value", "true"},
                      {"effect", "NoSchedule"}}});
  });
  Result result = Run({"verify", "nodes", "--kubeconfig", kubeconfig_});
  EXPECT_EQ(result.code, kExitProblems);
  EXPECT_EQ(result.out,
            "ip-10-0-1-11.ec2.internal: spec.providerID is empty\n"
            "ip-10-0-1-12.ec2.internal: spec.providerID \"aws:///i-123\" is malformed: no "
            "availability zone; expected aws:///<zone>/<instance-id>, e.g. "
            "aws:///us-east-1a/i-0123456789abcdef0\n"
            "ip-10-0-2-21.ec2.internal: has the node.cloudprovider.kubernetes.io/uninitialized "
            "taint: no cloud-controller-manager has initialised it yet (is one running and "
            "holding the migration lease, and can it find the instance?)\n"
            "3 of 5 nodes have problems\n");

  Result json =
      Run({"verify", "nodes", "--kubeconfig", kubeconfig_, "-o", "json", "--control-plane-only"});
  EXPECT_EQ(json.code, kExitProblems);
  nlohmann::json parsed = nlohmann::json::parse(json.out);
  EXPECT_EQ(parsed["bad"], 2);
  EXPECT_EQ(parsed["nodes"].size(), 3u);
  EXPECT_EQ(parsed["nodes"][0]["name"], "ip-10-0-1-10.ec2.internal");
  EXPECT_EQ(parsed["nodes"][0]["ok"], true);
  EXPECT_EQ(parsed["nodes"][1]["problems"][0], "spec.providerID is empty");
}

TEST_F(CtlTest, VerifyNodesWithNoNodesIsAProblem) {
  for (const Json& node : cluster_.store().List(kube::kNodes)) {
    cluster_.store().Remove(kube::kNodes, "", kube::ObjectName(node));
  }
  Result result = Run({"verify", "nodes", "--kubeconfig", kubeconfig_, "--control-plane-only"});
  EXPECT_EQ(result.code, kExitProblems);
  EXPECT_EQ(result.out,
            "no control-plane nodes found (none is labelled "
            "node-role.kubernetes.io/control-plane)\n");
}

TEST_F(CtlTest, LeaseGet) {
  Result result = Run({"lease", "get", "kube-controller-manager", "--kubeconfig", kubeconfig_});
  EXPECT_EQ(result.code, kExitOk) << result.err;
  EXPECT_EQ(result.out,
            "lease kube-system/kube-controller-manager\n"
            "  holder:       ip-10-0-1-10.ec2.internal_7a4e0f0c-5d4e-4c43-a2a9-3f3f1e0b8c11 (node "
            "ip-10-0-1-10.ec2.internal)\n"
            "  acquired:     2023-11-14T21:02:41.118264Z\n"
            "  renewed:      2023-11-14T22:13:15.402613Z\n"
            "  duration:     15s\n"
            "  transitions:  3\n"
            "  state:        held until 2023-11-14T22:13:30.402613Z (10.402s from now)\n");
  result = Run({"lease", "get", "nope", "--kubeconfig", kubeconfig_});
  EXPECT_EQ(result.code, kExitRefused);
  EXPECT_EQ(result.err, "handoffctl: Lease kube-system/nope not found\n");
}

TEST_F(CtlTest, LeaseGetOfTheMigrationLeaseSaysWhoRunsTheControllers) {
  const absl::Time now = cluster_.clock().Now();
  const std::string ccm = "ip-10-0-1-11.ec2.internal_0c9d8e7f";
  SetLease("cloud-controller-manager", ccm, now, now - absl::Minutes(1));
  SetLease("cloud-provider-extraction-migration", ccm, now, now - absl::Minutes(1));
  Result result =
      Run({"lease", "get", "cloud-provider-extraction-migration", "--kubeconfig", kubeconfig_});
  EXPECT_EQ(result.code, kExitOk) << result.err;
  EXPECT_THAT(result.out,
              HasSubstr("  run by:       cloud-controller-manager on ip-10-0-1-11.ec2.internal\n"));
  Result json = Run({"lease", "get", "cloud-provider-extraction-migration", "--kubeconfig",
                     kubeconfig_, "-o", "json"});
  nlohmann::json parsed = nlohmann::json::parse(json.out);
  EXPECT_EQ(parsed["migrationOwner"]["holder"], "cloud-controller-manager");
  EXPECT_EQ(parsed["held"], true);
}

TEST_F(CtlTest, LeaseWatchReportsOwnersAndGap) {
  const absl::Time start = cluster_.clock().Now();
  const std::string kcm = "ip-10-0-1-10.ec2.internal_7a4e0f0c-5d4e-4c43-a2a9-3f3f1e0b8c11";
  const std::string ccm = "ip-10-0-1-11.ec2.internal_0c9d8e7f";
  SetLease("cloud-provider-extraction-migration", kcm, start, start - absl::Minutes(70));
  // The kube-controller-manager keeps renewing for 3s, then stops; the cloud-controller-manager
  // takes over at +22s.
  on_sleep_ = [&](absl::Time now) {
    const int second = static_cast<int>(absl::ToInt64Seconds(now - start));
    if (second <= 3) {
      SetLease("cloud-provider-extraction-migration", kcm, now, start - absl::Minutes(70));
      SetLease("kube-controller-manager", kcm, now, start - absl::Minutes(70));
    }
    if (second == 22) {
      SetLease("cloud-controller-manager", ccm, now, now);
      SetLease("cloud-provider-extraction-migration", ccm, now, now);
    }
  };
  Result result =
      Run({"lease", "watch", "--duration", "30s", "--interval", "1s", "--kubeconfig", kubeconfig_});
  EXPECT_EQ(result.code, kExitProblems) << result.err;
  EXPECT_EQ(result.out,
            "2023-11-14T22:13:20Z  kube-system/cloud-provider-extraction-migration held by "
            "kube-controller-manager on ip-10-0-1-10.ec2.internal since 2023-11-14T21:03:20Z "
            "[ip-10-0-1-10.ec2.internal_7a4e0f0c-5d4e-4c43-a2a9-3f3f1e0b8c11]\n"
            "2023-11-14T22:13:38Z  gap: nobody holds kube-system/"
            "cloud-provider-extraction-migration since 2023-11-14T22:13:38Z (expired at "
            "2023-11-14T22:13:38Z, last held by "
            "ip-10-0-1-10.ec2.internal_7a4e0f0c-5d4e-4c43-a2a9-3f3f1e0b8c11)\n"
            "2023-11-14T22:13:42Z  kube-system/cloud-provider-extraction-migration held by "
            "cloud-controller-manager on ip-10-0-1-11.ec2.internal since 2023-11-14T22:13:42Z, "
            "after a gap of 4s from 2023-11-14T22:13:38Z [ip-10-0-1-11.ec2.internal_0c9d8e7f]\n"
            "summary: 2023-11-14T22:13:20Z to 2023-11-14T22:13:50Z, 31 poll(s), 1 holder "
            "change(s), 1 gap(s) (4s in all, longest 4s)\n"
            "  cloud-controller-manager on ip-10-0-1-11.ec2.internal: 8s\n"
            "  kube-controller-manager on ip-10-0-1-10.ec2.internal: 18s\n"
            "  nobody: 4s\n");
}

TEST_F(CtlTest, LeaseWatchWithoutGapSucceeds) {
  const absl::Time start = cluster_.clock().Now();
  const std::string kcm = "ip-10-0-1-10.ec2.internal_7a4e0f0c-5d4e-4c43-a2a9-3f3f1e0b8c11";
  SetLease("cloud-provider-extraction-migration", kcm, start, start);
  on_sleep_ = [&](absl::Time now) {
    SetLease("cloud-provider-extraction-migration", kcm, now, start);
    SetLease("kube-controller-manager", kcm, now, start);
  };
  Result result =
      Run({"lease", "watch", "--duration", "5s", "--kubeconfig", kubeconfig_, "-o", "json"});
  EXPECT_EQ(result.code, kExitOk) << result.out << result.err;
  std::istringstream lines(result.out);
  std::string line;
  std::vector<nlohmann::json> events;
  while (std::getline(lines, line)) events.push_back(nlohmann::json::parse(line));
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0]["event"], "held");
  EXPECT_EQ(events[0]["owner"]["holder"], "kube-controller-manager");
  EXPECT_EQ(events[1]["summary"]["polls"], 6);
  EXPECT_EQ(events[1]["summary"]["gaps"], 0);
}

TEST_F(CtlTest, LeaseWatchStopsWhenInterrupted) {
  int polls = 0;
  environment_.interrupted = [&polls] { return ++polls >= 3; };
  Result result = Run({"lease", "watch", "--kubeconfig", kubeconfig_});  // no --duration
  EXPECT_EQ(result.code, kExitProblems);  // the migration lease does not exist: a gap
  EXPECT_THAT(result.out, HasSubstr("3 poll(s)"));
  EXPECT_THAT(result.out, HasSubstr("the migration lease does not exist"));
}

TEST_F(CtlTest, LeaseWatchThatNeverReadsIsARefusal) {
  cluster_.server().Stop();
  Result result = Run({"lease", "watch", "--duration", "2s", "--kubeconfig", kubeconfig_});
  EXPECT_EQ(result.code, kExitRefused);
  EXPECT_THAT(result.err, AllOf(HasSubstr("cannot read the leases (will retry): get Lease "
                                          "kube-system/cloud-provider-extraction-migration: GET"),
                                HasSubstr("handoffctl: could not read the leases even once")));
}

TEST_F(CtlTest, KubeadmConfigPlanApplyAndAgain) {
  const std::map<std::string, std::string> before = Snapshot();
  const std::string settings = cluster_.dir().Write(
      "settings.yaml", "kubeControllerManager:\n  externalCloudVolumePlugin: aws\n");
  Result plan =
      Run({"kubeadm-config", "plan", "--kubeconfig", kubeconfig_, "--settings", settings});
  EXPECT_EQ(plan.code, kExitOk) << plan.err;
  EXPECT_EQ(Snapshot(), before);
  EXPECT_EQ(plan.out,
            "--- a/kube-system/configmaps/kubeadm-config/ClusterConfiguration\n"
            "+++ b/kube-system/configmaps/kubeadm-config/ClusterConfiguration\n"
            "@@ -3,8 +3,7 @@\n"
            "   - k8s-api.example.internal\n"
            "   extraArgs:\n"
            "     authorization-mode: Node,RBAC\n"
            "-    cloud-config: /etc/kubernetes/cloud.conf\n"
            "-    cloud-provider: aws\n"
            "+    cloud-provider: external\n"
            "   extraVolumes:\n"
            "   - hostPath: /etc/kubernetes/cloud.conf\n"
            "     mountPath: /etc/kubernetes/cloud.conf\n"
            "@@ -18,9 +17,9 @@\n"
            " controlPlaneEndpoint: k8s-api.example.internal:6443\n"
            " controllerManager:\n"
            "   extraArgs:\n"
            "-    cloud-config: /etc/kubernetes/cloud.conf\n"
            "-    cloud-provider: aws\n"
            "+    cloud-provider: external\n"
            "     configure-cloud-routes: \"false\"\n"
            "+    external-cloud-volume-plugin: aws\n"
            "   extraVolumes:\n"
            "   - hostPath: /etc/kubernetes/cloud.conf\n"
            "     mountPath: /etc/kubernetes/cloud.conf\n");
  EXPECT_THAT(plan.err,
              AllOf(StartsWith("kubeadm-config plan: 5 change(s) to kube-system/kubeadm-config "
                               "data.ClusterConfiguration (kubeadm.k8s.io/v1beta3)"),
                    HasSubstr("  controllerManager.extraArgs: add external-cloud-volume-plugin: "
                              "aws\n")));

  Result apply =
      Run({"kubeadm-config", "apply", "--kubeconfig", kubeconfig_, "--settings", settings});
  EXPECT_EQ(apply.code, kExitOk) << apply.err;
  EXPECT_THAT(apply.out,
              StartsWith("kubeadm-config: kept the in-tree ClusterConfiguration in "
                         "kube-system/handoff-kubeadm-config-in-tree (apply --to in-tree restores "
                         "it)\nkubeadm-config: updated kube-system/kubeadm-config (5 "
                         "change(s)):\n"));
  std::optional<Json> config_map =
      cluster_.store().Get(kube::kConfigMaps, "kube-system", "kubeadm-config");
  EXPECT_THAT(kube::StringAt(*config_map, {"data", "ClusterConfiguration"}),
              AllOf(HasSubstr("cloud-provider: external"), ::testing::Not(HasSubstr("aws\n    "
                                                                                    "cloud"))));
  const std::map<std::string, std::string> applied = Snapshot();
  Result again =
      Run({"kubeadm-config", "apply", "--kubeconfig", kubeconfig_, "--settings", settings});
  EXPECT_EQ(again.code, kExitOk);
  EXPECT_THAT(again.out, StartsWith("kubeadm-config: no changes;"));
  EXPECT_EQ(Snapshot(), applied);
  Result replan = Run({"kubeadm-config", "plan", "--kubeconfig", kubeconfig_});
  EXPECT_EQ(replan.out, "");
  EXPECT_THAT(replan.err, StartsWith("kubeadm-config: no changes;"));

  // The version the nodes run, from the flag (or the settings' kubernetesVersion).
  Result version = Run(
      {"kubeadm-config", "apply", "--kubeconfig", kubeconfig_, "--kubernetes-version", "v1.27.16"});
  EXPECT_EQ(version.code, kExitOk) << version.err;
  EXPECT_THAT(version.out, HasSubstr("  kubernetesVersion: v1.26.9 -> v1.27.16\n"));

  // The way back after a rollback: the ClusterConfiguration as it was, at version N.
  Result back = Run({"kubeadm-config", "apply", "--kubeconfig", kubeconfig_, "--to", "in-tree",
                     "--kubernetes-version", "v1.26.13"});
  EXPECT_EQ(back.code, kExitOk) << back.err;
  EXPECT_THAT(back.out, HasSubstr("back to the in-tree one kept in "
                                  "kube-system/handoff-kubeadm-config-in-tree"));
  config_map = cluster_.store().Get(kube::kConfigMaps, "kube-system", "kubeadm-config");
  const std::string restored = kube::StringAt(*config_map, {"data", "ClusterConfiguration"});
  EXPECT_THAT(restored,
              AllOf(HasSubstr("cloud-provider: aws"), HasSubstr("kubernetesVersion: v1.26.13")));
  // A rollback by replacement: the in-tree one with Leader Migration, and the file its nodes need.
  Result prepared = Run({"kubeadm-config", "apply", "--kubeconfig", kubeconfig_, "--to", "prepared",
                         "--kubernetes-version", "v1.26.13"});
  EXPECT_EQ(prepared.code, kExitOk) << prepared.err;
  EXPECT_THAT(prepared.out, HasSubstr("  controllerManager.extraVolumes: add leadermigration"));
  config_map = cluster_.store().Get(kube::kConfigMaps, "kube-system", "kubeadm-config");
  EXPECT_THAT(kube::StringAt(*config_map, {"data", "ClusterConfiguration"}),
              AllOf(HasSubstr("    enable-leader-migration: \"true\"\n"),
                    HasSubstr("    leader-migration-config: /etc/leadermigration.conf\n")));
  Result file = Run({"kubeadm-config", "leader-migration-file", "--kubernetes-version", "v1.26.13",
                     "--settings", settings});
  EXPECT_EQ(file.code, kExitOk) << file.err;
  EXPECT_THAT(file.out,
              AllOf(StartsWith("kind: LeaderMigrationConfiguration\n"),
                    HasSubstr("  - name: service\n    component: kube-controller-manager\n")));
  Result bad = Run({"kubeadm-config", "plan", "--kubeconfig", kubeconfig_, "--to", "migrated"});
  EXPECT_EQ(bad.code, kExitRefused);
  Result no_version = Run({"kubeadm-config", "leader-migration-file", "--kubernetes-version", "1"});
  EXPECT_EQ(no_version.code, kExitRefused);
  EXPECT_THAT(no_version.err, HasSubstr("--kubernetes-version 1: not a version"));
}

TEST_F(CtlTest, KubeadmConfigGivesAWorkersJoinConfigurationAndItsCredentialProvider) {
  const std::string settings = cluster_.dir().Write(
      "worker.yaml", "role: worker\nworker:\n  credentialProviderBinDir: /opt/ecr/bin\n");
  Result join = Run({"kubeadm-config", "worker-join", "--api-server-endpoint", "10.0.0.10:6443",
                     "--token", "abcdef.0123456789abcdef", "--discovery-token-ca-cert-hash",
                     "sha256:" + std::string(64, 'a'), "--settings", settings});
  EXPECT_EQ(join.code, kExitOk) << join.err;
  EXPECT_THAT(join.out, AllOf(StartsWith("apiVersion: kubeadm.k8s.io/v1beta3\nkind: "
                                         "JoinConfiguration\n"),
                              HasSubstr("    cloud-provider: external\n"),
                              HasSubstr("    image-credential-provider-bin-dir: /opt/ecr/bin\n"),
                              HasSubstr("    image-credential-provider-config: "
                                        "/etc/kubernetes/image-credential-provider-config.yaml\n")));
  EXPECT_THAT(join.err,
              AllOf(HasSubstr("install ecr-credential-provider (k8s.io/cloud-provider-aws, the "
                              "cloud-controller-manager's version) as "
                              "/opt/ecr/bin/ecr-credential-provider\n"),
                    HasSubstr("handoffctl kubeadm-config credential-provider-config > "
                              "/etc/kubernetes/image-credential-provider-config.yaml\n"),
                    HasSubstr("note: without --node-name")));
  Result in_tree = Run({"kubeadm-config", "worker-join", "--to", "in-tree", "--discovery-file",
                        "/etc/kubernetes/discovery.conf", "--node-name", "ip-10-0-1-7.ec2.internal"});
  EXPECT_EQ(in_tree.code, kExitOk) << in_tree.err;
  EXPECT_THAT(in_tree.out, AllOf(HasSubstr("    cloud-provider: aws\n"),
                                 HasSubstr("  name: ip-10-0-1-7.ec2.internal\n"),
                                 Not(HasSubstr("image-credential-provider"))));
  Result missing = Run({"kubeadm-config", "worker-join", "--token", "abcdef.0123456789abcdef"});
  EXPECT_EQ(missing.code, kExitRefused);
  EXPECT_THAT(missing.err, HasSubstr("--api-server-endpoint is missing"));
  EXPECT_EQ(missing.out, "");
  // The file the kubelet's --image-credential-provider-config names, as the agent writes it.
  Result provider = Run({"kubeadm-config", "credential-provider-config"});
  EXPECT_EQ(provider.code, kExitOk) << provider.err;
  EXPECT_THAT(provider.out, AllOf(HasSubstr("kind: CredentialProviderConfig\n"),
                                  HasSubstr("- name: ecr-credential-provider\n"),
                                  HasSubstr("\"*.dkr.ecr.*.amazonaws.com\"")));
}

TEST_F(CtlTest, KubeconfigFromTheEnvironment) {
  env_["KUBECONFIG"] = kubeconfig_ + ":/nonexistent/second";
  EXPECT_EQ(Run({"verify", "nodes"}).code, kExitOk);
  env_.erase("KUBECONFIG");
  env_["HOME"] = cluster_.dir().path();
  Result result = Run({"verify", "nodes"});
  EXPECT_EQ(result.code, kExitRefused);
  EXPECT_THAT(result.err, AllOf(StartsWith("handoffctl: cannot read the kubeconfig " +
                                           cluster_.dir().path() + "/.kube/config: "),
                                HasSubstr("pass --kubeconfig FILE (on a control-plane node: "
                                          "/etc/kubernetes/admin.conf)")));
}

TEST_F(CtlTest, KubeconfigErrorsAreRefusals) {
  Result result = Run({"verify", "nodes", "--kubeconfig", kubeconfig_, "--context", "prod"});
  EXPECT_EQ(result.code, kExitRefused);
  EXPECT_EQ(result.err,
            "handoffctl: " + kubeconfig_ +
                ": contexts: no entry named \"prod\" (entries: fake); the context \"prod\" comes "
                "from --context\n");
  result = Run({"verify", "nodes", "--kubeconfig", kubeconfig_, "--request-timeout", "soon"});
  EXPECT_EQ(result.code, kExitRefused);
  EXPECT_THAT(result.err, HasSubstr("--request-timeout \"soon\" is not a positive duration"));
}

TEST_F(CtlTest, UnreachableServerIsARefusal) {
  cluster_.server().Stop();
  Result result = Run({"rbac", "plan", "--kubeconfig", kubeconfig_});
  EXPECT_EQ(result.code, kExitRefused);
  EXPECT_THAT(result.err,
              AllOf(StartsWith("handoffctl: get Role kube-system/"
                               "system::leader-locking-kube-controller-manager: GET "),
                    HasSubstr("check that the API server is up"), HasSubstr("(after 4 attempts)")));
  EXPECT_EQ(result.out, "");
}

TEST_F(CtlTest, InsecureSkipTlsVerifyIsSaidLoudly) {
  const std::string insecure = cluster_.dir().Write(
      "insecure", "clusters:\n- name: c\n  cluster:\n    server: " + cluster_.url() +
                      "\n    insecure-skip-tls-verify: true\n"
                      "users:\n- name: u\n  user: {token: operator-token}\n"
                      "contexts:\n- name: x\n  context: {cluster: c, user: u}\n"
                      "current-context: x\n");
  Result result = Run({"verify", "nodes", "--kubeconfig", insecure});
  EXPECT_EQ(result.code, kExitOk) << result.err;
  EXPECT_THAT(result.err, StartsWith("WARNING: " + insecure +
                                     ": clusters[\"c\"].cluster.insecure-skip-tls-verify is true: "
                                     "the API server's certificate is NOT verified"));
}

TEST_F(CtlTest, HelpAndUsage) {
  Result help = Run({"--help"});
  EXPECT_EQ(help.code, kExitOk);
  EXPECT_THAT(help.out, AllOf(HasSubstr("rbac"), HasSubstr("lease"), HasSubstr("verify"),
                              HasSubstr("kubeadm-config"), HasSubstr("Exit codes: 0 success")));
  Result lease_help = Run({"lease", "watch", "--help"});
  EXPECT_EQ(lease_help.code, kExitOk);
  EXPECT_THAT(lease_help.out, AllOf(HasSubstr("--duration"), HasSubstr("--interval"),
                                    HasSubstr("--kubeconfig"), HasSubstr("--context")));
  EXPECT_EQ(Run({}).code, kExitRefused);
  EXPECT_EQ(Run({"rbac"}).code, kExitRefused);
  EXPECT_EQ(Run({"verify", "nodes", "-o", "yaml"}).code, kExitRefused);
  EXPECT_EQ(Run({"frobnicate"}).code, kExitRefused);
}

}  // namespace
}  // namespace handoff::ctl
