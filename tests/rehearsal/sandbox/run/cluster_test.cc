// The seam for the cluster under the sandbox: choosing it, and the model cluster behind it.
#include "rehearsal/sandbox/cluster.h"

#include <stdlib.h>

#include <filesystem>

#include "common/fs/atomic_file.h"
#include "common/system/clock.h"
#include "common/kube/client.h"
#include "common/kube/http_transport.h"
#include "common/kube/kubeconfig.h"
#include "coordinator/kube/nodes.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "rehearsal/monitor/run_record.h"
#include "rehearsal/sandbox/process.h"

namespace handoff::sandbox {
namespace {

using ::testing::ElementsAre;

TEST(ClusterTest, TheClusterKindIsModelRealOrKubeadm) {
  ClusterKind kind = ClusterKind::kReal;
  EXPECT_TRUE(ParseClusterKind("model", &kind));
  EXPECT_EQ(kind, ClusterKind::kModel);
  EXPECT_TRUE(ParseClusterKind("kubeadm", &kind));
  EXPECT_EQ(kind, ClusterKind::kKubeadm);
  EXPECT_TRUE(ParseClusterKind("real", &kind));
  EXPECT_EQ(kind, ClusterKind::kReal);
  for (const char* bad : {"", "Model", "fake", "real ", "kind"}) {
    EXPECT_FALSE(ParseClusterKind(bad, &kind)) << bad;
    EXPECT_EQ(kind, ClusterKind::kReal) << "left as it was";
  }
}

class ModelClusterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = std::filesystem::path(::testing::TempDir()) / "model-cluster-XXXXXX";
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
    std::filesystem::create_directories(dir_ + "/records");
    std::filesystem::create_directories(dir_ + "/logs");
    setup_.dir = dir_;
    setup_.bin_dir = HANDOFF_SANDBOX_HELPERS_DIR;
    setup_.say = [](const std::string&) {};
    setup_.spawn = [](const std::vector<std::string>& argv, const std::string& log) {
      return Process::Spawn(argv, log);
    };
    for (int i = 1; i <= 2; ++i) {
      setup_.nodes.push_back(
          {MakeSandboxNode(i), dir_ + "/nodes/cp-" + std::to_string(i), false, ""});
    }
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::unique_ptr<SandboxCluster> Model() {
    absl::StatusOr<std::unique_ptr<SandboxCluster>> cluster =
        NewSandboxCluster(ClusterKind::kModel, setup_);
    EXPECT_TRUE(cluster.ok()) << cluster.status();
    return cluster.ok() ? *std::move(cluster) : nullptr;
  }

  std::string dir_;
  ClusterSetup setup_;
};

TEST_F(ModelClusterTest, ItsAgentsRunOnTheHostRootedAtTheirNodes) {
  std::unique_ptr<SandboxCluster> cluster = Model();
  ASSERT_NE(cluster, nullptr);
  EXPECT_EQ(cluster->CoordinatorHost(), "127.0.0.1");
  const AgentHost host = cluster->AgentHostOf(setup_.nodes[1]);
  EXPECT_TRUE(host.prefix.empty());
  EXPECT_EQ(host.files, dir_ + "/nodes/cp-2");
  EXPECT_EQ(host.agent_prefix, dir_ + "/nodes/cp-2");
  EXPECT_EQ(host.root, dir_ + "/nodes/cp-2");
  EXPECT_EQ(host.proc_root, dir_ + "/nodes/cp-2/run/sandbox-proc");
  EXPECT_EQ(host.kubelet_restart_command, std::string(HANDOFF_SANDBOX_HELPERS_DIR) +
                                              "/handoff-sandbox-kubelet restart --root " + dir_ +
                                              "/nodes/cp-2");
  // The simulated kubelet takes a change from its first moment: no settling.
  EXPECT_THAT(host.local_settings, ::testing::HasSubstr("settle: 0s"));
  EXPECT_THAT(cluster->ComponentLines(), ElementsAre("model: fake API server, stand-in managers"));
  EXPECT_EQ(cluster->KillKubelet(setup_.nodes[0]).code(), absl::StatusCode::kUnimplemented);
}

TEST_F(ModelClusterTest, ItsMonitorReadsTheStandInsRecords) {
  std::unique_ptr<SandboxCluster> cluster = Model();
  ASSERT_NE(cluster, nullptr);
  const absl::Time start = absl::Now();
  EXPECT_TRUE(cluster->Poll(start).invariant_held);

  RunRecord record;
  record.t_ns = absl::ToUnixNanos(start);
  record.node = "cp-1";
  record.component = "kube-controller-manager";
  record.pid = 42;
  record.event = kControllerStart;
  record.controller = "service";
  record.lock = kMainLock;
  ASSERT_TRUE(AppendRunRecord(dir_ + "/records/cp-1.jsonl", record).ok());
  record.node = "cp-2";
  record.pid = 43;
  ASSERT_TRUE(AppendRunRecord(dir_ + "/records/cp-2.jsonl", record).ok());

  const MonitorReport& report = cluster->Poll(start + absl::Seconds(1));
  EXPECT_FALSE(report.invariant_held) << "service ran in cp-1's and cp-2's managers at once";
  ASSERT_FALSE(report.controllers.empty());
  EXPECT_EQ(report.controllers[0].controller, "service");
  EXPECT_EQ(report.controllers[0].runs.size(), 2U);
}

TEST_F(ModelClusterTest, ItsApiServerServesTheNodesWithTheirProviderIds) {
  const absl::Time now = absl::Now();
  absl::StatusOr<pki::KeyPair> ca = pki::CreateCertificateAuthority("test-ca", now, absl::Hours(1));
  ASSERT_TRUE(ca.ok());
  pki::CertificateRequest serving;
  serving.common_name = "kube-apiserver";
  serving.server = true;
  serving.dns_names = {"localhost"};
  serving.ip_addresses = {"127.0.0.1"};
  absl::StatusOr<pki::KeyPair> server = pki::IssueCertificate(*ca, serving, now);
  pki::CertificateRequest admin_request;
  admin_request.common_name = "kubernetes-admin";
  admin_request.organizations = {"system:masters"};
  admin_request.client = true;
  absl::StatusOr<pki::KeyPair> admin = pki::IssueCertificate(*ca, admin_request, now);
  ASSERT_TRUE(server.ok() && admin.ok());
  std::unique_ptr<FileSystem> fs = NewPosixFileSystem("/");
  ApiServerCertificates certificates;
  certificates.kube_ca = *ca;
  certificates.admin = *admin;
  certificates.controller_manager = *admin;
  certificates.client_ca_file = dir_ + "/ca.crt";
  certificates.serving_cert_file = dir_ + "/apiserver.crt";
  certificates.serving_key_file = dir_ + "/apiserver.key";
  ASSERT_TRUE(AtomicReplace(*fs, certificates.client_ca_file, ca->certificate_pem).ok());
  ASSERT_TRUE(AtomicReplace(*fs, certificates.serving_cert_file, server->certificate_pem).ok());
  ASSERT_TRUE(AtomicReplace(*fs, certificates.serving_key_file, server->private_key_pem).ok());

  std::unique_ptr<SandboxCluster> cluster = Model();
  ASSERT_NE(cluster, nullptr);
  // The API server, each node's files and its simulated kubelet, admin.conf, settings.yaml.
  absl::Status started = cluster->Start(certificates);
  ASSERT_TRUE(started.ok()) << started;
  EXPECT_TRUE(std::filesystem::exists(dir_ + "/settings.yaml"));
  EXPECT_TRUE(std::filesystem::exists(dir_ + "/nodes/cp-1/etc/kubernetes/manifests/"
                                             "kube-controller-manager.yaml"));
  absl::StatusOr<kube::ClusterCredentials> credentials =
      kube::LoadKubeconfig(*fs, dir_ + "/admin.conf", "");
  ASSERT_TRUE(credentials.ok()) << credentials.status();
  EXPECT_THAT(credentials->server, ::testing::StartsWith("https://127.0.0.1:"));
  absl::StatusOr<std::unique_ptr<kube::HttpTransport>> transport =
      kube::NewCurlTransport(*credentials);
  ASSERT_TRUE(transport.ok()) << transport.status();
  std::unique_ptr<Clock> clock = NewRealClock();
  kube::KubeClient client(*std::move(transport), *clock, kube::ClientOptionsFor(*credentials));
  absl::StatusOr<std::vector<kube::Json>> nodes = kube::ListNodes(client, true);
  ASSERT_TRUE(nodes.ok()) << nodes.status();
  ASSERT_EQ(nodes->size(), 2U);
  for (const kube::NodeCheck& check : kube::CheckNodes(*nodes)) {
    EXPECT_TRUE(check.ok()) << check.name << ": " << ::testing::PrintToString(check.problems);
  }
  cluster->Stop();
  cluster->Stop();  // idempotent
}

}  // namespace
}  // namespace handoff::sandbox
