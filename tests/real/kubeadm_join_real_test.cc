// The worker's JoinConfiguration handoffctl kubeadm-config worker-join prints
// (coordinator/kube/kubeadm_join.h) as the real kubeadm v1.26.13 and v1.27.16 read it:
// `kubeadm config migrate` decodes it strictly (an unknown field is a warning naming it),
// defaults and validates it (a bad token fails), and writes it back: the kubelet's extra
// arguments come out as given.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "common/base/strings.h"
#include "coordinator/kube/kubeadm_join.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "rehearsal/real/components.h"
#include "yaml-cpp/yaml.h"

namespace handoff {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

struct Ran {
  int status = 0;
  std::string output;  // stdout and stderr
};

Ran Shell(const std::string& command) {
  Ran ran;
  FILE* pipe = ::popen(StrCat(command, " 2>&1").c_str(), "r");
  if (pipe == nullptr) return {-1, "popen failed"};
  char buffer[4096];
  while (size_t n = std::fread(buffer, 1, sizeof buffer, pipe)) ran.output.append(buffer, n);
  ran.status = ::pclose(pipe);
  return ran;
}

class KubeadmJoinRealTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<sandbox::real::Components> components = sandbox::real::FindComponents(
        sandbox::real::ProcessEnvironment(),
        {sandbox::real::kKubeadm, sandbox::real::kNextKubeadm});
    if (!components.ok()) {
      const char* require = getenv("HANDOFF_REQUIRE_REAL");
      if (require != nullptr && std::string(require) == "1") FAIL() << components.status();
      GTEST_SKIP() << components.status();
    }
    kubeadms_ = {components->Binary(sandbox::real::kKubeadm),
                 components->File(sandbox::real::kNextKubeadm)};
    char pattern[] = "/tmp/handoff-join-real-XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    dir_ = pattern;
  }
  void TearDown() override {
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }

  // `kubeadm config migrate` of `text` with each kubeadm: the configuration it writes back.
  std::vector<YAML::Node> Migrate(const std::string& text) {
    const std::string in = dir_ + "/join.yaml";
    std::ofstream(in) << text;
    std::vector<YAML::Node> out;
    for (const std::string& kubeadm : kubeadms_) {
      const std::string written = dir_ + "/migrated.yaml";
      const Ran ran =
          Shell(StrCat(kubeadm, " config migrate --old-config ", in, " --new-config ", written));
      EXPECT_EQ(ran.status, 0) << kubeadm << ":\n" << ran.output << "\n" << text;
      EXPECT_THAT(ran.output, Not(HasSubstr("strict decoding error"))) << kubeadm;
      out.push_back(YAML::LoadFile(written));
    }
    return out;
  }

  std::vector<std::string> kubeadms_;
  std::string dir_;
};

kube::WorkerJoinOptions External() {
  kube::WorkerJoinOptions options;
  options.api_server_endpoint = "10.0.0.10:6443";
  options.token = "abcdef.0123456789abcdef";
  options.ca_cert_hashes = {"sha256:" + std::string(64, 'a')};
  options.node_name = "ip-10-0-1-7.ec2.internal";
  options.credential_provider_config = "/etc/kubernetes/image-credential-provider-config.yaml";
  options.credential_provider_bin_dir = "/usr/libexec/kubelet-image-credential-provider-plugins";
  return options;
}

TEST_F(KubeadmJoinRealTest, BothKubeadmsTakeTheExternalWorkersJoinConfiguration) {
  absl::StatusOr<std::string> text = kube::RenderWorkerJoinConfiguration(External());
  ASSERT_TRUE(text.ok()) << text.status();
  for (const YAML::Node& migrated : Migrate(*text)) {
    const YAML::Node args = migrated["nodeRegistration"]["kubeletExtraArgs"];
    EXPECT_EQ(args["cloud-provider"].as<std::string>(), "external");
    EXPECT_EQ(args["image-credential-provider-config"].as<std::string>(),
              "/etc/kubernetes/image-credential-provider-config.yaml");
    EXPECT_EQ(args["image-credential-provider-bin-dir"].as<std::string>(),
              "/usr/libexec/kubelet-image-credential-provider-plugins");
    EXPECT_EQ(migrated["nodeRegistration"]["name"].as<std::string>(), "ip-10-0-1-7.ec2.internal");
    EXPECT_EQ(migrated["discovery"]["bootstrapToken"]["token"].as<std::string>(),
              "abcdef.0123456789abcdef");
  }
}

TEST_F(KubeadmJoinRealTest, TheInTreeAndTheDiscoveryFileVariantsToo) {
  kube::WorkerJoinOptions in_tree = External();
  in_tree.target = kube::WorkerJoinTarget::kInTree;
  in_tree.cri_socket = "unix:///run/containerd/containerd.sock";
  absl::StatusOr<std::string> text = kube::RenderWorkerJoinConfiguration(in_tree);
  ASSERT_TRUE(text.ok()) << text.status();
  for (const YAML::Node& migrated : Migrate(*text)) {
    EXPECT_EQ(migrated["nodeRegistration"]["kubeletExtraArgs"]["cloud-provider"].as<std::string>(),
              "aws");
    EXPECT_EQ(migrated["nodeRegistration"]["criSocket"].as<std::string>(),
              "unix:///run/containerd/containerd.sock");
  }
  kube::WorkerJoinOptions file = External();
  file.api_server_endpoint.clear();
  file.token.clear();
  file.ca_cert_hashes.clear();
  // kubeadm wants the file on the machine (or an https:// URL): here, this one.
  file.discovery_file = dir_ + "/discovery.conf";
  std::ofstream(file.discovery_file) << "apiVersion: v1\nkind: Config\n";
  for (const std::string& where : {file.discovery_file, std::string("https://10.0.0.10/d.conf")}) {
    file.discovery_file = where;
    text = kube::RenderWorkerJoinConfiguration(file);
    ASSERT_TRUE(text.ok()) << text.status();
    for (const YAML::Node& migrated : Migrate(*text)) {
      EXPECT_EQ(migrated["discovery"]["file"]["kubeConfigPath"].as<std::string>(), where);
    }
  }
  kube::WorkerJoinOptions unsafe = External();
  unsafe.ca_cert_hashes.clear();
  unsafe.unsafe_skip_ca_verification = true;
  text = kube::RenderWorkerJoinConfiguration(unsafe);
  ASSERT_TRUE(text.ok()) << text.status();
  for (const YAML::Node& migrated : Migrate(*text)) {
    EXPECT_TRUE(migrated["discovery"]["bootstrapToken"]["unsafeSkipCAVerification"].as<bool>());
  }
}

// The check is able to fail: kubeadm refuses a bad token and names an unknown field.
TEST_F(KubeadmJoinRealTest, KubeadmRefusesWhatHandoffRefusesToo) {
  absl::StatusOr<std::string> text = kube::RenderWorkerJoinConfiguration(External());
  ASSERT_TRUE(text.ok());
  std::string bad = *text;
  bad.replace(bad.find("abcdef.0123456789abcdef"), 23, "BAD");
  std::ofstream(dir_ + "/bad.yaml") << bad;
  std::string unknown = *text;
  unknown.replace(unknown.find("kubeletExtraArgs"), 16, "kubeletExtraArgz");
  std::ofstream(dir_ + "/unknown.yaml") << unknown;
  for (const std::string& kubeadm : kubeadms_) {
    const Ran refused = Shell(StrCat(kubeadm, " config migrate --old-config ", dir_,
                                   "/bad.yaml --new-config ", dir_, "/out.yaml"));
    EXPECT_NE(refused.status, 0) << kubeadm;
    EXPECT_THAT(refused.output, HasSubstr("the bootstrap token is invalid")) << kubeadm;
    const Ran warned = Shell(StrCat(kubeadm, " config migrate --old-config ", dir_,
                                  "/unknown.yaml --new-config ", dir_, "/out.yaml"));
    EXPECT_THAT(warned.output, HasSubstr("unknown field \"nodeRegistration.kubeletExtraArgz\""))
        << kubeadm;
  }
}

}  // namespace
}  // namespace handoff
