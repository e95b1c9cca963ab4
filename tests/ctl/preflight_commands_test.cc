// handoffctl preflight, run in-process against the fake API server (a healthy kubeadm control
// plane, tests/testdata/cluster/preflight.yaml) and, with --coordinator, a coordinator that
// answers Nodes: the table, the JSON, the exit codes, and that nothing is written.
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ctl/ctl_cli.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/coordinator/fake_cluster.h"
#include "tests/ctl/rollout_test_support.h"
#include "tests/ctl/watch_only_operator_client.h"
#include "tests/support/fake_clock.h"

namespace handoff::ctl {
namespace {

using ::handoff::testing::FakeCluster;
using ::handoff::testing::ReadTestdata;
using ::handoff::testing::Testdata;
using kube::Json;
using test_support::Result;
using ::testing::HasSubstr;
using ::testing::Not;

// Answers Nodes with the nodes it is given; every other call is refused.
class NodesOnlyClient : public testing::WatchOnlyOperatorClient {
 public:
  explicit NodesOnlyClient(v1::NodesResponse nodes) : nodes_(std::move(nodes)) {}
  absl::StatusOr<v1::NodesResponse> Nodes(const v1::NodesRequest&) override { return nodes_; }
  absl::Status Status(const v1::StatusRequest&,
                      const std::function<void(const v1::RolloutStatus&)>&,
                      const std::function<bool()>&) override {
    return absl::UnimplementedError("preflight asks for the nodes only");
  }

 private:
  v1::NodesResponse nodes_;
};

class PreflightCommandTest : public ::testing::Test {
 protected:
  PreflightCommandTest() : cluster_(/*seed=*/false) {
    absl::Status seeded =
        cluster_.store().Seed(ReadTestdata("cluster/preflight.yaml"), "cluster/preflight.yaml");
    EXPECT_TRUE(seeded.ok()) << seeded;
    kubeconfig_ = cluster_.WriteKubeconfig();
    environment_.open_files = [] { return NewPosixFileSystem(""); };
    environment_.open_transport = kube::NewCurlTransport;
    environment_.open_clock = [] { return std::make_unique<FakeClock>(); };
    environment_.get_env = [](const std::string&) -> std::optional<std::string> {
      return std::nullopt;
    };
    environment_.interrupted = [] { return false; };
    environment_.open_coordinator = [this](const CoordinatorEndpoint&) {
      return std::make_unique<NodesOnlyClient>(nodes_);
    };
    for (const char* name :
         {"ip-10-0-1-10.ec2.internal", "ip-10-0-1-11.ec2.internal", "ip-10-0-1-12.ec2.internal"}) {
      v1::NodeInfo* node = nodes_.add_nodes();
      node->set_name(name);
      node->set_state(v1::NODE_STATE_IN_TREE);
      node->set_connected(true);
      node->set_healthy(true);
      // As the seed's Nodes: named after their instances, providerID aws:///<zone>/<id>.
      const int i = nodes_.nodes_size() - 1;
      v1::NodeFacts* facts = node->mutable_facts();
      facts->set_instance_id(StrCat("i-0a1b2c3d4e5f6071", i));
      facts->set_local_hostname(name);
      facts->set_availability_zone(StrCat("us-east-1", std::string(1, static_cast<char>('a' + i))));
      facts->set_kubelet_flags_known(true);
      facts->set_kubelet_node_name(name);
      // EC2 showed each instance tagged for the cluster the cloud config names.
      (*facts->mutable_cluster_tags())["prod"] = "owned";
      facts->set_cluster_tags_known(true);
      facts->set_cloud_config_cluster_id("prod");
    }
  }

  Result Run(std::vector<std::string> args) {
    args.insert(args.begin(), "preflight");
    args.insert(args.end(), {"--kubeconfig", kubeconfig_});
    return test_support::Run(std::move(args), environment_);
  }

  static std::vector<std::string> Coordinator() {
    return {"--coordinator", "coordinator.example:9443",
            "--ca",          Testdata("handoff-tls/ca.crt"),
            "--cert",        Testdata("handoff-tls/operator.crt"),
            "--key",         Testdata("handoff-tls/operator.key")};
  }

  // Every object on the server, to prove the command wrote nothing.
  std::map<std::string, std::string> Snapshot() {
    std::map<std::string, std::string> objects;
    for (const kube::ResourceType* type : kube::KnownResourceTypes()) {
      for (const Json& object : cluster_.store().List(*type)) {
        objects[StrCat(type->kind, " ", kube::ObjectNamespace(object), "/",
                       kube::ObjectName(object))] = object.dump();
      }
    }
    return objects;
  }

  void ApplyRbac() {
    Result applied =
        test_support::Run({"rbac", "apply", "--kubeconfig", kubeconfig_}, environment_);
    ASSERT_EQ(applied.code, kExitOk) << applied.err;
  }

  // The verdict of each check in the JSON output.
  static std::map<std::string, std::string> Verdicts(const std::string& out) {
    std::map<std::string, std::string> verdicts;
    const nlohmann::json json = nlohmann::json::parse(out);
    for (const auto& check : json["checks"]) {
      verdicts[check["name"].get<std::string>()] = check["verdict"].get<std::string>();
    }
    return verdicts;
  }

  FakeCluster cluster_;
  std::string kubeconfig_;
  v1::NodesResponse nodes_;
  CtlEnvironment environment_;
};

TEST_F(PreflightCommandTest, AHealthyClusterPassesAndNothingIsWritten) {
  ApplyRbac();
  const std::map<std::string, std::string> before = Snapshot();
  std::vector<std::string> args = Coordinator();
  Result result = Run(args);
  EXPECT_EQ(result.code, kExitOk) << result.out << result.err;
  EXPECT_THAT(result.out, HasSubstr("ok    agents           3 nodes: agent connected, node "
                                    "consistent and healthy\n"));
  EXPECT_THAT(result.out, HasSubstr("ok    control-plane    3 control-plane nodes Ready"));
  EXPECT_THAT(result.out, HasSubstr("ok    node-names       3 nodes named after their instances, "
                                    "providerIDs matching\n"));
  EXPECT_THAT(result.out, HasSubstr("\n0 failed, 0 warned, 11 ok\n"));
  EXPECT_EQ(result.err, "");
  EXPECT_EQ(Snapshot(), before);
}

TEST_F(PreflightCommandTest, WithoutACoordinatorTheAgentsAreAWarningNotAFailure) {
  ApplyRbac();
  Result result = Run({});
  EXPECT_EQ(result.code, kExitOk) << result.out;
  EXPECT_THAT(result.out, HasSubstr("warn  agents           not asked: no coordinator was given\n"
                                    "                       -> pass --coordinator"));
  EXPECT_THAT(result.out, HasSubstr("warn  node-names       not asked"));
  EXPECT_THAT(result.out, HasSubstr("\n0 failed, 5 warned, 6 ok\n"));
}

TEST_F(PreflightCommandTest, EachFaultFailsExactlyItsCheckAndExitsOne) {
  ApplyRbac();
  struct Fault {
    std::string check;
    std::string named;
    std::function<void()> plant;
    std::function<void()> remove;
  };
  const std::string kcm = "kube-controller-manager-ip-10-0-1-12.ec2.internal";
  std::optional<Json> original_kcm = cluster_.store().Get(kube::kPods, "kube-system", kcm);
  ASSERT_TRUE(original_kcm.has_value());
  const std::vector<Fault> faults = {
      {"ebs-csi", "PersistentVolume pvc-0",
       [&] {
         ASSERT_TRUE(cluster_.store()
                         .Seed("kind: PersistentVolume\napiVersion: v1\nmetadata: {name: pvc-0}\n"
                               "spec: {awsElasticBlockStore: {volumeID: vol-0a}}\n",
                               "test")
                         .ok());
       },
       [&] { cluster_.store().Remove(kube::kPersistentVolumes, "", "pvc-0"); }},
      {"leader-elect", StrCat("Pod kube-system/", kcm),
       [&] {
         Json pod = *original_kcm;
         pod["spec"]["containers"][0]["command"].push_back("--leader-elect=false");
         ASSERT_TRUE(cluster_.store().Put(pod).ok());
       },
       [&] { ASSERT_TRUE(cluster_.store().Put(*original_kcm).ok()); }},
      {"node-names",
       "Node ip-10-0-1-12.ec2.internal: providerID \\\"aws:///us-east-1c/i-0a1b2c3d4e5f60712\\\", "
       "its "
       "instance is aws:///us-east-1c/i-0fffffffffffffff0",
       [&] { nodes_.mutable_nodes(2)->mutable_facts()->set_instance_id("i-0fffffffffffffff0"); },
       [&] { nodes_.mutable_nodes(2)->mutable_facts()->set_instance_id("i-0a1b2c3d4e5f60712"); }},
      {"stray-files",
       "ip-10-0-1-10.ec2.internal: /etc/kubernetes/manifests/kube-controller-manager.yaml.bak: "
       "pod kube-system/kube-controller-manager again",
       [&] {
         nodes_.mutable_nodes(0)->mutable_facts()->add_stray_files(
             "/etc/kubernetes/manifests/kube-controller-manager.yaml.bak: pod "
             "kube-system/kube-controller-manager again (/etc/kubernetes/manifests/"
             "kube-controller-manager.yaml defines it)");
       },
       [&] { nodes_.mutable_nodes(0)->mutable_facts()->clear_stray_files(); }},
      {"ecr-credentials",
       "Pod shop/api-0 (123456789012.dkr.ecr.us-east-1.amazonaws.com/api:1) on "
       "ip-10-0-1-10.ec2.internal: the kubelet has no --image-credential-provider-config",
       [&] {
         ASSERT_TRUE(
             cluster_.store()
                 .Seed("kind: Pod\napiVersion: v1\nmetadata: {name: api-0, namespace: shop}\n"
                       "spec:\n  nodeName: ip-10-0-1-10.ec2.internal\n  containers:\n"
                       "  - {name: api, image: "
                       "\"123456789012.dkr.ecr.us-east-1.amazonaws.com/api:1\"}\n",
                       "test")
                 .ok());
       },
       [&] { cluster_.store().Remove(kube::kPods, "shop", "api-0"); }},
      {"cluster-tag",
       "ip-10-0-1-11.ec2.internal: instance i-0a1b2c3d4e5f60711 has no tag "
       "kubernetes.io/cluster/prod",
       [&] { nodes_.mutable_nodes(1)->mutable_facts()->mutable_cluster_tags()->clear(); },
       [&] {
         (*nodes_.mutable_nodes(1)->mutable_facts()->mutable_cluster_tags())["prod"] = "owned";
       }},
      {"node-names",
       "Node ip-10-0-1-10.ec2.internal: its kubelet goes by ip-10-0-1-10 (--hostname-override",
       [&] { nodes_.mutable_nodes(0)->mutable_facts()->set_kubelet_node_name("ip-10-0-1-10"); },
       [&] {
         nodes_.mutable_nodes(0)->mutable_facts()->set_kubelet_node_name(
             "ip-10-0-1-10.ec2.internal");
       }},
      {"agents", "ip-10-0-1-11.ec2.internal: no agent is connected",
       [&] { nodes_.mutable_nodes(1)->set_connected(false); },
       [&] { nodes_.mutable_nodes(1)->set_connected(true); }},
  };
  for (const Fault& fault : faults) {
    fault.plant();
    const std::map<std::string, std::string> before = Snapshot();
    std::vector<std::string> args = Coordinator();
    args.insert(args.end(), {"-o", "json"});
    Result result = Run(args);
    EXPECT_EQ(result.code, kExitProblems) << fault.check << ": " << result.out << result.err;
    for (const auto& [check, verdict] : Verdicts(result.out)) {
      EXPECT_EQ(verdict, check == fault.check ? "fail" : "ok") << fault.check << ": " << check;
    }
    EXPECT_THAT(result.out, HasSubstr(fault.named)) << fault.check;
    EXPECT_EQ(Snapshot(), before) << fault.check;
    fault.remove();
  }
}

// The agents check is the control plane's: a worker's agent away does not fail it.
TEST_F(PreflightCommandTest, AWorkersAgentAwayIsNoControlPlaneAgentMissing) {
  ApplyRbac();
  v1::NodeInfo* worker = nodes_.add_nodes();
  worker->set_name("ip-10-0-2-20.ec2.internal");
  worker->set_role(v1::NODE_ROLE_WORKER);
  worker->set_connected(false);
  std::vector<std::string> args = Coordinator();
  args.insert(args.end(), {"-o", "json"});
  Result result = Run(args);
  EXPECT_EQ(Verdicts(result.out)["agents"], "ok") << result.out;
  EXPECT_THAT(result.out, Not(HasSubstr("ip-10-0-2-20.ec2.internal: no agent is connected")));
}

// A Node without the control-plane role and without an agent blocks the move of its kubelet:
// worker-agents fails naming it; the gate says why the cluster may not be upgraded yet.
TEST_F(PreflightCommandTest, AWorkerWithoutAnAgentFailsWorkerAgentsAndTheGateIsShown) {
  ApplyRbac();
  v1::NodeInfo* worker = nodes_.add_nodes();
  worker->set_name("ip-10-0-2-21.ec2.internal");
  worker->set_role(v1::NODE_ROLE_WORKER);
  worker->set_without_agent(true);
  nodes_.mutable_upgrade_gate()->add_reasons("1 worker has no agent: ip-10-0-2-21.ec2.internal");
  std::vector<std::string> args = Coordinator();
  args.insert(args.end(), {"-o", "json"});
  Result result = Run(args);
  EXPECT_EQ(result.code, kExitProblems) << result.out;
  std::map<std::string, std::string> verdicts = Verdicts(result.out);
  EXPECT_EQ(verdicts["worker-agents"], "fail");
  EXPECT_EQ(verdicts["upgrade-1.27"], "warn");
  EXPECT_EQ(verdicts["agents"], "ok");
  EXPECT_THAT(result.out, HasSubstr("1 worker has no agent: their kubelets cannot be moved "
                                    "(ip-10-0-2-21.ec2.internal)"));
}

TEST_F(PreflightCommandTest, ANodeInconsistentOnlyForItsStrayFilesIsLeftToStrayFiles) {
  ApplyRbac();
  v1::NodeInfo* node = nodes_.mutable_nodes(0);
  node->set_state(v1::NODE_STATE_INCONSISTENT);
  node->add_reasons("pod kube-system/kube-controller-manager is defined by 2 files");
  node->mutable_facts()->add_stray_files(
      "/etc/kubernetes/manifests/kube-controller-manager.yaml.bak: pod "
      "kube-system/kube-controller-manager again");
  node->mutable_facts()->set_inconsistent_only_for_stray_files(true);
  std::vector<std::string> args = Coordinator();
  args.insert(args.end(), {"-o", "json"});
  Result result = Run(args);
  EXPECT_EQ(result.code, kExitProblems) << result.out;
  std::map<std::string, std::string> verdicts = Verdicts(result.out);
  EXPECT_EQ(verdicts["stray-files"], "fail");
  EXPECT_EQ(verdicts["agents"], "warn");
  EXPECT_THAT(result.out, HasSubstr("ip-10-0-1-10.ec2.internal: inconsistent only for its stray "
                                    "manifest files (see stray-files)"));
  for (const auto& [check, verdict] : verdicts) {
    if (check != "stray-files" && check != "agents") {
      EXPECT_EQ(verdict, "ok") << check;
    }
  }

  // Inconsistent for another reason as well: the agents check fails too.
  node->mutable_facts()->set_inconsistent_only_for_stray_files(false);
  result = Run(args);
  EXPECT_EQ(Verdicts(result.out)["agents"], "fail");
}

TEST_F(PreflightCommandTest, ANodeNotNamedAfterItsInstanceIsAWarning) {
  ApplyRbac();
  nodes_.mutable_nodes(1)->mutable_facts()->set_local_hostname("ip-10-0-1-99.ec2.internal");
  std::vector<std::string> args = Coordinator();
  Result result = Run(args);
  EXPECT_EQ(result.code, kExitOk) << result.out;
  EXPECT_THAT(result.out, HasSubstr("warn  node-names       Node ip-10-0-1-11.ec2.internal: its "
                                    "instance i-0a1b2c3d4e5f60711 is named "
                                    "ip-10-0-1-99.ec2.internal (local-hostname)\n"));
}

TEST_F(PreflightCommandTest, RbacMissingFailsAsTheManagersWouldBeRefused) {
  Result result = Run({});
  EXPECT_EQ(result.code, kExitProblems);
  EXPECT_THAT(result.out, HasSubstr("FAIL  rbac             User system:kube-controller-manager "
                                    "may not get lease "
                                    "kube-system/cloud-provider-extraction-migration\n"));
  EXPECT_THAT(result.out, HasSubstr("-> run `handoffctl rbac apply`"));
}

TEST_F(PreflightCommandTest, TheSettingsNameTheLeaseAndTheRoutes) {
  ApplyRbac();
  const std::string settings = cluster_.dir().Write("settings.yaml",
                                                    "leaderMigration:\n"
                                                    "  leaderName: other-migration\n"
                                                    "cloudControllerManager:\n"
                                                    "  configureCloudRoutes: true\n"
                                                    "  clusterCIDR: 192.168.0.0/16\n");
  Result result = Run({"--settings", settings, "-o", "json"});
  EXPECT_EQ(result.code, kExitProblems);
  const std::map<std::string, std::string> verdicts = Verdicts(result.out);
  EXPECT_EQ(verdicts.at("rbac"), "fail");          // other-migration has no rules
  EXPECT_EQ(verdicts.at("cloud-routes"), "fail");  // the managers write no routes
  EXPECT_THAT(result.out, HasSubstr("lease kube-system/other-migration"));

  Result downtime = Run({"--settings", settings, "--strategy", "downtime", "-o", "json"});
  EXPECT_EQ(Verdicts(downtime.out).at("rbac"), "ok");
}

TEST_F(PreflightCommandTest, BadSettingsAreARefusalNamingTheFile) {
  const std::string settings = cluster_.dir().Write("settings.yaml", "leaderNmae: x\n");
  Result result = Run({"--settings", settings});
  EXPECT_EQ(result.code, kExitRefused);
  EXPECT_THAT(result.err, HasSubstr(settings));
  EXPECT_THAT(result.err, HasSubstr("leaderNmae"));
  EXPECT_EQ(result.out, "");
}

TEST_F(PreflightCommandTest, HelpNamesEveryCheck) {
  Result result = test_support::Run({"preflight", "--help"}, environment_);
  EXPECT_EQ(result.code, kExitOk);
  for (const char* check :
       {"rbac", "ebs-csi", "ecr-credentials", "cloud-routes", "leader-elect", "control-plane",
        "agents", "node-names", "stray-files", "cluster-tag"}) {
    EXPECT_THAT(result.out, HasSubstr(check));
  }
  EXPECT_THAT(result.out, Not(HasSubstr("--nodes")));
}

}  // namespace
}  // namespace handoff::ctl
