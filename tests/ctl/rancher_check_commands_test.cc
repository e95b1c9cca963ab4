// handoffctl rancher check cordon|ccm|nodes, rancher cordon and rancher uncordon, run in-process
// against the fake API server over TLS.
#include <cstdio>
#include <functional>
#include <map>
#include <optional>
#include <sstream>

#include "coordinator/kube/cordon.h"
#include "ctl/ctl_cli.h"
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
using kube::Json;
using ::testing::HasSubstr;
using ::testing::Not;

using test_support::Result;


// A providerID of its own for each node name (two Nodes on one instance are a problem).
std::string ProviderIdOf(const std::string& name) {
  char id[18];
  const unsigned long long hash = std::hash<std::string>()(name) & 0xfffffffffffffULL;
  std::snprintf(id, sizeof(id), "%017llx", hash);
  return std::string("aws:///us-east-1a/i-") + id;
}

Json Node(const std::string& name, const std::string& role_label, bool unschedulable = false,
          std::optional<std::string> provider_id = std::nullopt) {
  if (!provider_id) provider_id = ProviderIdOf(name);
  Json node = Json::object();
  node["apiVersion"] = "v1";
  node["kind"] = "Node";
  node["metadata"] = {{"name", name}, {"labels", Json::object()}};
  if (!role_label.empty()) node["metadata"]["labels"][role_label] = "true";
  node["spec"] = Json::object();
  if (!provider_id->empty()) node["spec"]["providerID"] = *provider_id;
  if (unschedulable) node["spec"]["unschedulable"] = true;
  return node;
}

Json CcmDaemonSet(int generation, int observed, int desired, int updated, int available) {
  Json daemon_set = Json::object();
  daemon_set["apiVersion"] = "apps/v1";
  daemon_set["kind"] = "DaemonSet";
  daemon_set["metadata"] = {{"name", "aws-cloud-controller-manager"},
                            {"namespace", "kube-system"},
                            {"generation", generation}};
  daemon_set["spec"] = {{"updateStrategy", {{"type", "RollingUpdate"}}}};
  daemon_set["status"] = {{"desiredNumberScheduled", desired},
                          {"numberAvailable", available},
                          {"observedGeneration", observed},
                          {"updatedNumberScheduled", updated}};
  return daemon_set;
}

constexpr char kRke2Role[] = "node-role.kubernetes.io/control-plane";
constexpr char kRkeRole[] = "node-role.kubernetes.io/controlplane";

class RancherCheckTest : public ::testing::Test {
 protected:
  RancherCheckTest() : cluster_(/*seed=*/false), kubeconfig_(cluster_.WriteKubeconfig()) {
    environment_.open_files = [] { return NewPosixFileSystem(""); };
    environment_.open_transport = kube::NewCurlTransport;
    environment_.open_clock = [this] {
      return std::make_unique<ScriptedClock>(cluster_.clock(), on_sleep_);
    };
    environment_.get_env = [](const std::string&) -> std::optional<std::string> {
      return std::nullopt;
    };
    environment_.interrupted = [] { return false; };
    for (const char* name : {"cp-1", "cp-2", "cp-3"}) Put(Node(name, kRke2Role));
    Put(Node("worker-1", ""));
  }

  Result Run(std::vector<std::string> args) {
    args.push_back("--kubeconfig");
    args.push_back(kubeconfig_);
    return test_support::Run(std::move(args), environment_);
  }

  void Put(const Json& object) { ASSERT_TRUE(cluster_.store().Put(object).ok()); }
  Json Stored(const std::string& name) {
    std::optional<Json> node = cluster_.store().Get(kube::kNodes, "", name);
    EXPECT_TRUE(node.has_value()) << name;
    return node.value_or(Json::object());
  }

  FakeCluster cluster_;
  std::string kubeconfig_;
  std::function<void(absl::Time)> on_sleep_;
  CtlEnvironment environment_;
};

TEST_F(RancherCheckTest, CheckCordonNamesTheNodesNotCordoned) {
  Put(Node("cp-2", kRke2Role, /*unschedulable=*/true));
  Result result = Run({"rancher", "check", "cordon", "--distribution", "rke2"});
  EXPECT_EQ(result.code, kExitProblems) << result.err;
  EXPECT_THAT(result.out, HasSubstr("cp-1: not cordoned"));
  EXPECT_THAT(result.out, HasSubstr("cp-3: not cordoned"));
  EXPECT_THAT(result.out, Not(HasSubstr("cp-2:")));
  EXPECT_THAT(result.out, Not(HasSubstr("worker-1")));
  EXPECT_THAT(result.out, HasSubstr("2 of 3 control-plane nodes are not cordoned"));
}

TEST_F(RancherCheckTest, CordonThenCheckThenUncordon) {
  Result cordon = Run({"rancher", "cordon", "--distribution", "rke2"});
  ASSERT_EQ(cordon.code, kExitOk) << cordon.err;
  EXPECT_THAT(cordon.out, HasSubstr("cp-1: cordoned"));
  EXPECT_THAT(cordon.out, HasSubstr("3 cordoned now, 0 already cordoned"));

  Result check = Run({"rancher", "check", "cordon", "--distribution", "rke2"});
  EXPECT_EQ(check.code, kExitOk) << check.err;
  EXPECT_THAT(check.out, HasSubstr("all 3 control-plane nodes are cordoned"));
  EXPECT_FALSE(kube::IsCordoned(Stored("worker-1")));

  Result uncordon = Run({"rancher", "uncordon", "--distribution", "rke2"});
  ASSERT_EQ(uncordon.code, kExitOk) << uncordon.err;
  EXPECT_THAT(uncordon.out, HasSubstr("3 uncordoned, 0 left cordoned"));
  Result after = Run({"rancher", "check", "cordon", "--distribution", "rke2"});
  EXPECT_EQ(after.code, kExitProblems);
  for (const char* name : {"cp-1", "cp-2", "cp-3"}) {
    EXPECT_FALSE(kube::IsCordoned(Stored(name))) << name;
    EXPECT_FALSE(Stored(name)["metadata"].contains("annotations")) << name;
  }
}

TEST_F(RancherCheckTest, UncordonLeavesAndNamesANodeSomeoneElseCordoned) {
  ASSERT_EQ(Run({"rancher", "cordon", "--distribution", "rke2"}).code, kExitOk);
  // An operator drains cp-3 for a reason of their own: the cordon is now theirs.
  Json cp3 = Stored("cp-3");
  cp3["metadata"].erase("annotations");
  Put(cp3);
  Result uncordon = Run({"rancher", "uncordon", "--distribution", "rke2"});
  ASSERT_EQ(uncordon.code, kExitOk) << uncordon.err;
  EXPECT_THAT(uncordon.out, HasSubstr("cp-3: left cordoned: handoff did not cordon it"));
  EXPECT_THAT(uncordon.out, HasSubstr("2 uncordoned, 1 left cordoned"));
  EXPECT_TRUE(kube::IsCordoned(Stored("cp-3")));
  EXPECT_FALSE(kube::IsCordoned(Stored("cp-1")));
}

TEST_F(RancherCheckTest, RkeUsesItsLabelAndNoMatchIsAProblem) {
  Result none = Run({"rancher", "check", "cordon", "--distribution", "rke"});
  EXPECT_EQ(none.code, kExitProblems);
  EXPECT_THAT(none.out,
              HasSubstr("no node is labelled node-role.kubernetes.io/controlplane=true"));
  Put(Node("rke-cp-1", kRkeRole));
  ASSERT_EQ(Run({"rancher", "cordon", "--distribution", "rke"}).code, kExitOk);
  EXPECT_TRUE(kube::IsCordoned(Stored("rke-cp-1")));
  EXPECT_FALSE(kube::IsCordoned(Stored("cp-1")));
}

TEST_F(RancherCheckTest, BadDistributionIsRefused) {
  Result result = Run({"rancher", "cordon", "--distribution", "k3s"});
  EXPECT_EQ(result.code, kExitRefused);
  EXPECT_THAT(result.err, HasSubstr("--distribution: \"k3s\" is not a Rancher distribution"));
  EXPECT_FALSE(kube::IsCordoned(Stored("cp-1")));
}

TEST_F(RancherCheckTest, CheckCcmNotInstalledThenNotRolledOutThenRolledOut) {
  Result missing = Run({"rancher", "check", "ccm"});
  EXPECT_EQ(missing.code, kExitProblems);
  EXPECT_THAT(missing.out,
              HasSubstr("DaemonSet kube-system/aws-cloud-controller-manager not found"));

  Put(CcmDaemonSet(2, 2, 3, 3, 1));
  Result waiting = Run({"rancher", "check", "ccm"});
  EXPECT_EQ(waiting.code, kExitProblems);
  EXPECT_THAT(waiting.out, HasSubstr("1 of 3 updated pods are available"));

  Put(CcmDaemonSet(2, 2, 3, 3, 3));
  Result done = Run({"rancher", "check", "ccm"});
  EXPECT_EQ(done.code, kExitOk) << done.err;
  EXPECT_THAT(done.out, HasSubstr("successfully rolled out"));
}

TEST_F(RancherCheckTest, CheckCcmWaitsUntilRolledOut) {
  Put(CcmDaemonSet(3, 2, 3, 3, 3));  // the chart was just upgraded
  const absl::Time start = cluster_.clock().Now();
  // The DaemonSet controller catches up as (fake) time passes.
  on_sleep_ = [this, start](absl::Time now) {
    if (now - start >= absl::Seconds(4)) {
      Put(CcmDaemonSet(3, 3, 3, 1, 1));
    }
    if (now - start >= absl::Seconds(10)) Put(CcmDaemonSet(3, 3, 3, 3, 3));
  };
  Result result = Run({"rancher", "check", "ccm", "--wait", "1m"});
  EXPECT_EQ(result.code, kExitOk) << result.err;
  EXPECT_THAT(result.out, HasSubstr("Waiting for daemon set spec update to be observed...\n"
                                    "Waiting for daemon set \"aws-cloud-controller-manager\" "
                                    "rollout to finish: 1 out of 3 new pods have been updated...\n"
                                    "daemon set \"aws-cloud-controller-manager\" successfully "
                                    "rolled out\n"));
  EXPECT_GE(cluster_.clock().Now() - start, absl::Seconds(10));
  EXPECT_LT(cluster_.clock().Now() - start, absl::Minutes(1));
}

TEST_F(RancherCheckTest, CheckCcmWaitTimesOut) {
  Put(CcmDaemonSet(2, 2, 3, 2, 2));
  const absl::Time start = cluster_.clock().Now();
  Result result = Run({"rancher", "check", "ccm", "--wait", "30s"});
  EXPECT_EQ(result.code, kExitProblems);
  EXPECT_THAT(result.out, HasSubstr("2 out of 3 new pods have been updated"));
  EXPECT_THAT(result.out,
              HasSubstr("DaemonSet kube-system/aws-cloud-controller-manager not rolled out "
                        "after 30s"));
  EXPECT_EQ(cluster_.clock().Now() - start, absl::Seconds(30));
}

TEST_F(RancherCheckTest, CheckCcmRefusesOnDelete) {
  Json daemon_set = CcmDaemonSet(1, 1, 3, 3, 3);
  daemon_set["spec"]["updateStrategy"]["type"] = "OnDelete";
  Put(daemon_set);
  Result result = Run({"rancher", "check", "ccm"});
  EXPECT_EQ(result.code, kExitRefused);
  EXPECT_THAT(result.err, HasSubstr("only available for the RollingUpdate strategy type"));
}

TEST_F(RancherCheckTest, CheckNodesNamesANodeWithoutProviderId) {
  Result good = Run({"rancher", "check", "nodes"});
  EXPECT_EQ(good.code, kExitOk) << good.out << good.err;
  Put(Node("worker-2", "", false, /*provider_id=*/""));
  Result bad = Run({"rancher", "check", "nodes"});
  EXPECT_EQ(bad.code, kExitProblems);
  EXPECT_THAT(bad.out, HasSubstr("worker-2: spec.providerID is empty"));
  EXPECT_THAT(bad.out, HasSubstr("1 of 5 nodes have problems"));
}

}  // namespace
}  // namespace handoff::ctl
