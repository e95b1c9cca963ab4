// A worker's move is refused with nothing written when its credential provider does not answer
// or its Node cannot be read; the proofs read the Node with the kubelet's kubeconfig.
#include "agent/cli/worker_scope.h"

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/base/strings.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/agent/engine/worker_fixture.h"
#include "tests/support/fake_clock.h"

namespace handoff {
namespace {

using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr char kRegistry[] = "123456789012.dkr.ecr.us-east-1.amazonaws.com";
constexpr char kKubeconfig[] = R"(apiVersion: v1
kind: Config
clusters:
- name: default-cluster
  cluster:
    server: https://10.0.0.5:6443
    insecure-skip-tls-verify: true
contexts:
- name: default-context
  context: {cluster: default-cluster, user: default-auth}
current-context: default-context
users:
- name: default-auth
  user: {token: node-token}
)";

// The API server: the Node exists (or not); every path asked is kept.
class NodeTransport : public kube::HttpTransport {
 public:
  NodeTransport(bool node_exists, std::vector<std::string>& paths)
      : node_exists_(node_exists), paths_(paths) {}
  absl::StatusOr<kube::HttpResponse> Send(const kube::HttpRequest& request) override {
    paths_.push_back(request.path);
    if (!node_exists_) return kube::HttpResponse{404, R"({"kind":"Status","code":404})", {}};
    return kube::HttpResponse{
        200, R"({"kind":"Node","metadata":{"name":"ip-10-0-1-20.ec2.internal","uid":"u1"}})", {}};
  }

 private:
  bool node_exists_;
  std::vector<std::string>& paths_;
};

class ProviderCommands : public CommandRunner {
 public:
  absl::Status Run(const std::vector<std::string>&, absl::Duration) override {
    return absl::OkStatus();
  }
  absl::StatusOr<std::string> Output(const std::vector<std::string>& argv, std::string_view,
                                     absl::Duration) override {
    asked.push_back(StrJoin(argv, " "));
    return answer;
  }
  absl::StatusOr<std::string> answer;
  std::vector<std::string> asked;
};

class WorkerScopeTest : public ::testing::Test {
 protected:
  WorkerScopeTest() : fs_(testing::WorkerNode()), settings_(testing::WorkerSettingsFor()) {
    fs_.SetFile(settings_.worker.kubeconfig, kKubeconfig);
    settings_.worker.ecr_registry = kRegistry;
    commands_.answer = StrCat(R"({"kind":"CredentialProviderResponse",)",
                              R"("apiVersion":"credentialprovider.kubelet.k8s.io/v1",)",
                              R"("auth":{")", kRegistry, R"(":{"username":"AWS","password":"p"}}})");
  }
  absl::StatusOr<std::unique_ptr<WorkerScope>> Open(bool node_exists = true) {
    return WorkerScope::Open(settings_, fs_, commands_, clock_,
                             [this, node_exists](const kube::ClusterCredentials& credentials)
                                 -> absl::StatusOr<std::unique_ptr<kube::HttpTransport>> {
                               server_ = credentials.server;
                               return std::make_unique<NodeTransport>(node_exists, paths_);
                             });
  }

  MemoryFileSystem fs_;
  Settings settings_;
  ProviderCommands commands_;
  FakeClock clock_;
  std::vector<std::string> paths_;
  std::string server_;
};

TEST_F(WorkerScopeTest, AMoveToExternalAsksTheProviderTheMoveWillNameAndReadsTheNode) {
  absl::StatusOr<std::unique_ptr<WorkerScope>> scope = Open();
  ASSERT_TRUE(scope.ok()) << scope.status();
  EXPECT_EQ(server_, "https://10.0.0.5:6443");
  ASSERT_NE((*scope)->proof(), nullptr);
  absl::StatusOr<std::vector<std::string>> notes =
      (*scope)->Guard(nullptr)(NodeState::kInTree, NodeState::kExternal, settings_);
  ASSERT_TRUE(notes.ok()) << notes.status();
  const std::string provider = StrCat(testing::kWorkerBinDir, "/ecr-credential-provider");
  EXPECT_THAT(commands_.asked, ElementsAre(provider));
  EXPECT_THAT(*notes, ElementsAre(StrCat(provider, " answered for ", kRegistry)));
  EXPECT_THAT(paths_, ElementsAre("/api/v1/nodes/ip-10-0-1-20.ec2.internal"));

  // The way back asks nothing.
  commands_.asked.clear();
  notes = (*scope)->Guard(nullptr)(NodeState::kExternal, NodeState::kInTree, settings_);
  ASSERT_TRUE(notes.ok()) << notes.status();
  EXPECT_TRUE(commands_.asked.empty());
}

TEST_F(WorkerScopeTest, AProviderThatDoesNotAnswerRefusesTheMove) {
  commands_.answer = absl::NotFoundError("cannot run `ecr-credential-provider`: No such file");
  absl::StatusOr<std::unique_ptr<WorkerScope>> scope = Open();
  ASSERT_TRUE(scope.ok()) << scope.status();
  absl::StatusOr<std::vector<std::string>> notes =
      (*scope)->Guard(nullptr)(NodeState::kInTree, NodeState::kExternal, settings_);
  EXPECT_EQ(notes.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(notes.status().message()),
              AllOf(HasSubstr("ecr-credential-provider did not answer a request for"),
                    HasSubstr("nothing was written")));
  EXPECT_TRUE(paths_.empty());
}

TEST_F(WorkerScopeTest, AnUnreadableNodeRefusesTheMove) {
  absl::StatusOr<std::unique_ptr<WorkerScope>> scope = Open(/*node_exists=*/false);
  ASSERT_TRUE(scope.ok()) << scope.status();
  absl::StatusOr<std::vector<std::string>> notes =
      (*scope)->Guard(nullptr)(NodeState::kInTree, NodeState::kExternal, settings_);
  EXPECT_THAT(std::string(notes.status().message()),
              AllOf(HasSubstr("Node ip-10-0-1-20.ec2.internal cannot be read with "
                              "worker.kubeconfig"),
                    HasSubstr("nothing was written")));
}

TEST_F(WorkerScopeTest, TheInnerCheckComesFirst) {
  absl::StatusOr<std::unique_ptr<WorkerScope>> scope = Open();
  ASSERT_TRUE(scope.ok()) << scope.status();
  BeforeMove inner = [](NodeState, NodeState, const Settings&)
      -> absl::StatusOr<std::vector<std::string>> {
    return absl::FailedPreconditionError("the cluster tag is wrong");
  };
  absl::StatusOr<std::vector<std::string>> notes =
      (*scope)->Guard(inner)(NodeState::kInTree, NodeState::kExternal, settings_);
  EXPECT_THAT(std::string(notes.status().message()), HasSubstr("the cluster tag is wrong"));
  EXPECT_TRUE(commands_.asked.empty());
}

TEST_F(WorkerScopeTest, WithoutTheKubeletsKubeconfigNothingOpens) {
  ASSERT_TRUE(fs_.RemoveFile(settings_.worker.kubeconfig).ok());
  absl::StatusOr<std::unique_ptr<WorkerScope>> scope = Open();
  EXPECT_EQ(scope.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(scope.status().message()),
              AllOf(HasSubstr("worker.kubeconfig"), HasSubstr("/etc/kubernetes/kubelet.conf")));
}

}  // namespace
}  // namespace handoff
