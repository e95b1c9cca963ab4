// The seam for the cluster under the sandbox: choosing it, and the model cluster behind it.
#include "coordinator/sandbox/cluster.h"

#include <stdlib.h>

#include <filesystem>

#include "agent/fs/atomic_file.h"
#include "agent/system/clock.h"
#include "coordinator/kube/client.h"
#include "coordinator/kube/http_transport.h"
#include "coordinator/kube/kubeconfig.h"
#include "coordinator/kube/nodes.h"
#include "coordinator/sandbox/monitor/run_record.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace handoff::sandbox {
namespace {

using ::testing::ElementsAre;

TEST(ClusterTest, TheClusterKindIsModelOrReal) {
  ClusterKind kind = ClusterKind::kReal;
  EXPECT_TRUE(ParseClusterKind("model", &kind));
  EXPECT_EQ(kind, ClusterKind::kModel);
  EXPECT_TRUE(ParseClusterKind("real", &kind));
  EXPECT_EQ(kind, ClusterKind::kReal);
  for (const char* bad : {"", "Model", "fake", "real "}) {
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
    setup_.dir = dir_;
    setup_.bin_dir = "/opt/handoff/bin";
    for (int i = 1; i <= 2; ++i) {
      setup_.nodes.push_back({MakeSandboxNode(i), dir_ + "/nodes/cp-" + std::to_string(i)});
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

TEST_F(ModelClusterTest, ItsKubeletsRunStandInsThatRecordPerNode) {
  std::unique_ptr<SandboxCluster> cluster = Model();
  ASSERT_NE(cluster, nullptr);
  EXPECT_THAT(cluster->KubeletArgs(setup_.nodes[1]),
              ElementsAre("--standin", "/opt/handoff/bin/handoff-standin", "--records",
                          dir_ + "/records/cp-2.jsonl"));
  EXPECT_THAT(cluster->ComponentLines(), ElementsAre("model: fake API server, stand-in managers"));
  LayoutInputs inputs;
  const LayoutInputs defaults;
  ASSERT_TRUE(cluster->AddLayoutInputs(setup_.nodes[0], inputs).ok());
  EXPECT_EQ(inputs.cloud_config, defaults.cloud_config);
  EXPECT_TRUE(inputs.controller_manager_env.empty());
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
  ApiServerCertificates certificates{*ca, dir_ + "/ca.crt", dir_ + "/apiserver.crt",
                                     dir_ + "/apiserver.key"};
  ASSERT_TRUE(AtomicReplace(*fs, certificates.client_ca_file, ca->certificate_pem).ok());
  ASSERT_TRUE(AtomicReplace(*fs, certificates.serving_cert_file, server->certificate_pem).ok());
  ASSERT_TRUE(AtomicReplace(*fs, certificates.serving_key_file, server->private_key_pem).ok());

  std::unique_ptr<SandboxCluster> cluster = Model();
  ASSERT_NE(cluster, nullptr);
  absl::StatusOr<std::string> url = cluster->StartApiServer(certificates);
  ASSERT_TRUE(url.ok()) << url.status();
  EXPECT_THAT(*url, ::testing::StartsWith("https://127.0.0.1:"));

  kube::ClusterCredentials credentials;
  credentials.server = *url;
  credentials.ca_pem = ca->certificate_pem;
  credentials.client_cert_pem = admin->certificate_pem;
  credentials.client_key_pem = admin->private_key_pem;
  absl::StatusOr<std::unique_ptr<kube::HttpTransport>> transport =
      kube::NewCurlTransport(credentials);
  ASSERT_TRUE(transport.ok()) << transport.status();
  std::unique_ptr<Clock> clock = NewRealClock();
  kube::KubeClient client(*std::move(transport), *clock, kube::ClientOptionsFor(credentials));
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
