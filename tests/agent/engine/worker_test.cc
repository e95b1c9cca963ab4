// A worker: no control-plane static pod, only its kubelet moves. Classified in-tree or external
// by the flags its unit gives the kubelet; moved to external with the credential provider and
// its Node's name kept, and back exactly; refused before anything is written without
// ecr-credential-provider or the Node's name.
#include <map>
#include <string>
#include <vector>

#include "agent/engine/classify.h"
#include "agent/engine/credential_provider.h"
#include "agent/engine/migration_record.h"
#include "agent/engine/planner.h"
#include "common/base/strings.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/agent/engine/node_fixture.h"
#include "tests/agent/engine/worker_fixture.h"

namespace handoff {
namespace {

using ::testing::AllOf;
using ::testing::Contains;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using testing::ApplyPlan;

constexpr const char* kNodeName = testing::kWorkerNodeName;
constexpr const char* kFlags = testing::kWorkerFlagsFile;
constexpr const char* kDefaults = testing::kWorkerDefaultsFile;
constexpr const char* kBinDir = testing::kWorkerBinDir;
constexpr const char* kConfig = testing::kWorkerCredentialConfig;
using testing::WorkerSettingsFor;

MemoryFileSystem Worker(const std::string& defaults = "KUBELET_EXTRA_ARGS=\n") {
  return testing::WorkerNode(defaults);
}

Classification ClassifyWorker(const MemoryFileSystem& fs, const Settings& settings) {
  absl::StatusOr<NodeSnapshot> snapshot = ReadNodeSnapshot(fs, settings);
  EXPECT_TRUE(snapshot.ok()) << snapshot.status();
  return Classify(*snapshot);
}

absl::StatusOr<Plan> PlanWorker(const MemoryFileSystem& fs, NodeState target,
                                const Settings& settings = WorkerSettingsFor()) {
  absl::StatusOr<NodeSnapshot> snapshot = ReadNodeSnapshot(fs, settings);
  if (!snapshot.ok()) return snapshot.status();
  return PlanTransition(*snapshot, Classify(*snapshot), target, settings);
}

// The value the kubelet runs with for --name on `fs`, "<none>" when not given.
std::string Effective(const MemoryFileSystem& fs, const std::string& name) {
  return testing::EffectiveKubeletFlag(fs, WorkerSettingsFor(), name);
}

TEST(WorkerTest, AnInTreeKubeletIsInTreeAndAnExternalOneExternal) {
  MemoryFileSystem fs = Worker();
  Classification result = ClassifyWorker(fs, WorkerSettingsFor());
  EXPECT_EQ(result.state, NodeState::kInTree) << StrJoin(result.problems, "\n");
  // No manifest directory at all is a worker's normal (kubeadm join makes an empty one).
  EXPECT_THAT(result.problems, IsEmpty());

  fs.SetFile(kDefaults, "KUBELET_EXTRA_ARGS=--cloud-provider=external\n");
  result = ClassifyWorker(fs, WorkerSettingsFor());
  // The --cloud-config kubeadm-flags.env still gives is a problem of its own.
  EXPECT_EQ(result.state, NodeState::kInconsistent);
  EXPECT_THAT(result.problems,
              Contains(HasSubstr("kubeadm-flags.env line 1): an external kubelet takes no "
                                 "--cloud-config")));
}

// The reason names the file that overrides: --cloud-provider=external in kubeadm-flags.env,
// aws again in /etc/default/kubelet, which the unit reads last.
TEST(WorkerTest, AnExternalFlagThatALaterFileOverridesIsNamed) {
  MemoryFileSystem fs = Worker("KUBELET_EXTRA_ARGS=--cloud-provider=aws\n");
  fs.SetFile(kFlags, "KUBELET_KUBEADM_ARGS=\"--cloud-provider=external\"\n");
  Classification result = ClassifyWorker(fs, WorkerSettingsFor());
  EXPECT_EQ(result.state, NodeState::kInTree);
  fs.SetFile(kDefaults, "KUBELET_EXTRA_ARGS=--cloud-provider=gce\n");
  result = ClassifyWorker(fs, WorkerSettingsFor());
  EXPECT_EQ(result.state, NodeState::kInconsistent);
  EXPECT_THAT(result.problems,
              Contains(HasSubstr("--cloud-provider=gce (KUBELET_EXTRA_ARGS, /etc/default/kubelet "
                                 "line 1): the kubelet has --cloud-provider=gce")));
}

TEST(WorkerTest, AControlPlaneStaticPodOnAWorkerIsAProblem) {
  MemoryFileSystem fs = testing::LoadNode("kubeadm");
  const MemoryFileSystem worker = Worker();
  for (const auto& [path, text] : worker.files()) fs.SetFile(path, text);
  Classification result = ClassifyWorker(fs, WorkerSettingsFor());
  EXPECT_EQ(result.state, NodeState::kInconsistent);
  EXPECT_THAT(result.problems,
              Contains(HasSubstr("kube-controller-manager.yaml: a kube-controller-manager static "
                                 "pod on a node whose settings say role: worker")));
}

TEST(WorkerTest, TheMoveWritesTheCredentialProviderAndEveryFlagWhereItIsRead) {
  MemoryFileSystem fs = Worker("KUBELET_EXTRA_ARGS=\"--v=2\"\n");
  const std::map<std::string, std::string> before = fs.files();
  absl::StatusOr<Plan> plan = PlanWorker(fs, NodeState::kExternal);
  ASSERT_TRUE(plan.ok()) << plan.status();
  std::vector<std::string> paths;
  for (const FileChange& change : plan->changes) paths.push_back(change.path + " " + change.component);
  // The record first, the credential provider's configuration, then the kubelet's file, last.
  EXPECT_EQ(paths, (std::vector<std::string>{"/var/lib/handoff/migration-record.yaml ",
                                             StrCat(kConfig, " "), StrCat(kFlags, " kubelet")}));
  EXPECT_THAT(plan->notes, Contains(HasSubstr("would register as ip-10-0-1-20; "
                                              "--hostname-override=ip-10-0-1-20.ec2.internal")));
  ApplyPlan(*plan, fs);
  EXPECT_EQ(ClassifyWorker(fs, WorkerSettingsFor()).state, NodeState::kExternal);
  EXPECT_EQ(Effective(fs, "cloud-provider"), "external");
  EXPECT_EQ(Effective(fs, "cloud-config"), "<none>");
  EXPECT_EQ(Effective(fs, "hostname-override"), kNodeName);
  EXPECT_EQ(Effective(fs, "image-credential-provider-config"), kConfig);
  EXPECT_EQ(Effective(fs, "image-credential-provider-bin-dir"), kBinDir);
  EXPECT_EQ(Effective(fs, "v"), "2");
  EXPECT_TRUE(CheckEcrCredentialProviderConfig(*fs.ReadFile(kConfig), kConfig).ok());

  plan = PlanWorker(fs, NodeState::kInTree);
  ASSERT_TRUE(plan.ok()) << plan.status();
  ApplyPlan(*plan, fs);
  EXPECT_EQ(fs.files(), before);
  EXPECT_EQ(ClassifyWorker(fs, WorkerSettingsFor()).state, NodeState::kInTree);
}

// A host name that already is the Node's name needs no override.
TEST(WorkerTest, AHostNamedAfterItsNodeGetsNoHostnameOverride) {
  MemoryFileSystem fs = Worker();
  fs.SetFile("/etc/hostname", "IP-10-0-1-20.ec2.internal\n");
  absl::StatusOr<Plan> plan = PlanWorker(fs, NodeState::kExternal);
  ASSERT_TRUE(plan.ok()) << plan.status();
  ApplyPlan(*plan, fs);
  EXPECT_EQ(Effective(fs, "hostname-override"), "<none>");
}

// Each refusal leaves the node as it was: nothing is planned.
TEST(WorkerTest, WithoutTheCredentialProviderOrTheNodesNameNothingIsWritten) {
  MemoryFileSystem fs = Worker();
  fs.DeleteFile(StrCat(kBinDir, "/ecr-credential-provider"));
  absl::StatusOr<Plan> plan = PlanWorker(fs, NodeState::kExternal);
  EXPECT_THAT(plan.status().message(),
              HasSubstr(StrCat(kBinDir, "/ecr-credential-provider is missing: install "
                                        "ecr-credential-provider")));

  fs = Worker();
  fs.SetFile(StrCat(kBinDir, "/ecr-credential-provider"), "#!/bin/sh\n", 0644);
  plan = PlanWorker(fs, NodeState::kExternal);
  EXPECT_THAT(plan.status().message(), HasSubstr("is not an executable file (mode 0644)"));

  plan = PlanWorker(Worker(), NodeState::kExternal, WorkerSettingsFor(""));
  EXPECT_THAT(plan.status().message(), HasSubstr("the Node's name is not known"));

  // Another credential provider configuration is the operator's: handoff does not merge.
  fs = Worker("KUBELET_EXTRA_ARGS=--image-credential-provider-config=/etc/kubelet/creds.yaml\n");
  plan = PlanWorker(fs, NodeState::kExternal);
  EXPECT_THAT(plan.status().message(),
              HasSubstr("--image-credential-provider-config=/etc/kubelet/creds.yaml "
                        "(KUBELET_EXTRA_ARGS, /etc/default/kubelet line 1): the kubelet already "
                        "has a credential provider configuration"));

  // A file at the configuration's path that does not name ecr-credential-provider.
  fs = Worker();
  fs.SetFile(kConfig, "apiVersion: kubelet.config.k8s.io/v1\nkind: CredentialProviderConfig\n"
                      "providers: []\n");
  plan = PlanWorker(fs, NodeState::kExternal);
  EXPECT_THAT(plan.status().message(),
              HasSubstr(StrCat(kConfig, ": no provider is named ecr-credential-provider")));

  // handoff makes no directory outside its own for the configuration.
  plan = PlanWorker(Worker(), NodeState::kExternal, [] {
    Settings settings = WorkerSettingsFor();
    settings.worker.credential_provider_config = "/etc/ecr/config.yaml";
    return settings;
  }());
  EXPECT_THAT(plan.status().message(), HasSubstr("/etc/ecr does not exist, so the credential "
                                                 "provider's configuration cannot be written"));

  // A control-plane state is no worker's.
  plan = PlanWorker(Worker(), NodeState::kPrepared);
  EXPECT_THAT(plan.status().message(),
              HasSubstr("a worker moves between in-tree and external only"));
}

// A configuration already there that names ecr-credential-provider is used, and stays when the
// node moves back: handoff removes only what it created.
TEST(WorkerTest, AnExistingEcrConfigurationIsKeptBothWays) {
  MemoryFileSystem fs = Worker();
  fs.SetFile(kConfig, EcrCredentialProviderConfig() + "# the operator's\n");
  absl::StatusOr<Plan> plan = PlanWorker(fs, NodeState::kExternal);
  ASSERT_TRUE(plan.ok()) << plan.status();
  for (const FileChange& change : plan->changes) EXPECT_NE(change.path, kConfig);
  ApplyPlan(*plan, fs);
  plan = PlanWorker(fs, NodeState::kInTree);
  ASSERT_TRUE(plan.ok()) << plan.status();
  ApplyPlan(*plan, fs);
  ASSERT_TRUE(fs.ReadFile(kConfig).ok());
  EXPECT_EQ(*fs.ReadFile(kConfig), EcrCredentialProviderConfig() + "# the operator's\n");
}

// The record a worker's move writes reads back with its kubelet files and what it created.
TEST(WorkerTest, TheRecordKeepsTheKubeletsFilesAndWhatTheMoveCreated) {
  MemoryFileSystem fs = Worker();
  absl::StatusOr<Plan> plan = PlanWorker(fs, NodeState::kExternal);
  ASSERT_TRUE(plan.ok()) << plan.status();
  ApplyPlan(*plan, fs);
  absl::StatusOr<MigrationRecord> record =
      MigrationRecord::Parse(*fs.ReadFile("/var/lib/handoff/migration-record.yaml"), "record");
  ASSERT_TRUE(record.ok()) << record.status();
  ASSERT_EQ(record->kubelet_files().size(), 1u);
  EXPECT_EQ(record->kubelet_files()[0].path, kFlags);
  EXPECT_THAT(record->kubelet_files()[0].before, HasSubstr("--cloud-provider=aws"));
  EXPECT_THAT(record->kubelet_files()[0].after, HasSubstr("--cloud-provider=external"));
  EXPECT_EQ(record->created_files(), std::vector<std::string>{kConfig});
}

// The call the kubelet makes of the configuration handoff writes, and of an operator's with args
// and env: the probe runs the provider exactly so.
TEST(CredentialProviderCallTest, IsTheKubeletsCallOfTheConfiguredProvider) {
  absl::StatusOr<CredentialProviderCall> call = EcrCredentialProviderCall(
      EcrCredentialProviderConfig(), "/etc/kubernetes/ecr.yaml", "/opt/plugins/");
  ASSERT_TRUE(call.ok()) << call.status();
  EXPECT_EQ(call->Argv(), std::vector<std::string>{"/opt/plugins/ecr-credential-provider"});
  EXPECT_EQ(call->api_version, "credentialprovider.kubelet.k8s.io/v1");

  call = EcrCredentialProviderCall(
      "apiVersion: kubelet.config.k8s.io/v1\nkind: CredentialProviderConfig\nproviders:\n"
      "- name: other\n  matchImages: [\"*.example.com\"]\n  apiVersion: credentialprovider.kubelet.k8s.io/v1\n"
      "- name: ecr-credential-provider\n  matchImages: [\"*.dkr.ecr.*.amazonaws.com\"]\n"
      "  apiVersion: credentialprovider.kubelet.k8s.io/v1\n  args: [get-credentials, --v=2]\n"
      "  env:\n  - name: AWS_PROFILE\n    value: nodes\n",
      "/etc/kubernetes/ecr.yaml", "/opt/plugins");
  ASSERT_TRUE(call.ok()) << call.status();
  EXPECT_EQ(call->Argv(),
            (std::vector<std::string>{"env", "AWS_PROFILE=nodes", "/opt/plugins/ecr-credential-provider",
                                      "get-credentials", "--v=2"}));
}

TEST(CredentialProviderCallTest, AMalformedProviderIsNamedWithItsFile) {
  const std::string head =
      "apiVersion: kubelet.config.k8s.io/v1\nkind: CredentialProviderConfig\nproviders:\n"
      "- name: ecr-credential-provider\n  matchImages: [\"*.dkr.ecr.*.amazonaws.com\"]\n";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"", "apiVersion is missing"},
      {"  apiVersion: v1\n", "apiVersion v1 is not credentialprovider.kubelet.k8s.io/v1"},
      {"  apiVersion: credentialprovider.kubelet.k8s.io/v1\n  args: get-credentials\n",
       "args is not a list"},
      {"  apiVersion: credentialprovider.kubelet.k8s.io/v1\n  env:\n  - name: A\n",
       "env holds an item without a name and a value"},
  };
  for (const auto& [tail, expected] : cases) {
    absl::StatusOr<CredentialProviderCall> call =
        EcrCredentialProviderCall(head + tail, "/etc/kubernetes/ecr.yaml", "/opt/plugins");
    EXPECT_EQ(call.status().code(), absl::StatusCode::kFailedPrecondition) << tail;
    EXPECT_THAT(std::string(call.status().message()),
                AllOf(HasSubstr("/etc/kubernetes/ecr.yaml: the ecr-credential-provider provider's"),
                      HasSubstr(expected)))
        << tail;
  }
}

}  // namespace
}  // namespace handoff
