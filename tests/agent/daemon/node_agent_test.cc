#include "agent/daemon/node_agent.h"

#include <future>
#include <thread>

#include "agent/apply/journal.h"
#include "agent/daemon/command_log.h"
#include "agent/engine/plan_chain.h"
#include "common/base/strings.h"
#include "common/fs/atomic_file.h"
#include "gmock/gmock.h"
#include "google/protobuf/util/message_differencer.h"
#include "gtest/gtest.h"
#include "tests/agent/daemon/daemon_fixture.h"
#include "tests/agent/engine/worker_fixture.h"
#include "tests/support/fake_clock.h"

namespace handoff {
namespace {

using ::google::protobuf::util::MessageDifferencer;
using ::testing::AllOf;
using ::testing::ElementsAre;
using testing::DaemonNodeTest;
using testing::FailingCommandRunner;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using testing::KubeadmSettingsYaml;
using testing::MoveCommand;
using testing::PlanCommand;
using testing::ReportCommand;

constexpr char kStateDir[] = "/var/lib/handoff";

// Every file of the node outside handoff's state dir.
std::map<std::string, std::string> NodeFiles(const FaultInjectionFileSystem& fs) {
  std::map<std::string, std::string> files;
  for (const auto& [path, content] : fs.Files()) {
    if (!StartsWith(path, StrCat(kStateDir, "/"))) files[path] = content;
  }
  return files;
}

// A golden diff of the engine's tests as `handoff-agent plan` prints it: without the "# component"
// line the golden file puts before each file.
std::string GoldenDiff(const std::string& relative) {
  std::istringstream golden(testing::ReadTestdata(relative));
  std::string diff;
  for (std::string line; std::getline(golden, line);) {
    if (!StartsWith(line, "# ")) diff += line + "\n";
  }
  return diff;
}

class NodeAgentTest : public DaemonNodeTest {};

TEST_F(NodeAgentTest, HelloDescribesTheNodeAsItIsNow) {
  std::unique_ptr<NodeAgent> agent = OpenAgent();
  const v1::AgentHello hello = agent->Hello();
  EXPECT_EQ(hello.node_name(), "cp-1");
  EXPECT_EQ(hello.agent_version(), "0.1.0");
  EXPECT_TRUE(hello.verifies());
  EXPECT_EQ(hello.running_command_id(), "");
  EXPECT_THAT(hello.recent_results(), IsEmpty());
  EXPECT_EQ(hello.report().state(), v1::NODE_STATE_IN_TREE);
  EXPECT_THAT(hello.report().reasons(), IsEmpty());
  EXPECT_TRUE(hello.report().healthy()) << hello.report().health_detail();
  EXPECT_EQ(hello.report().observed_unix_ms(), absl::ToUnixMillis(clock_.Now()));
  // Opening and saying hello read the node; nothing was written.
  EXPECT_EQ(fs_.write_calls(), 0);
}

TEST_F(NodeAgentTest, ReportCarriesTheControllerManagersVersionAndUnfinishedTransactions) {
  std::unique_ptr<NodeAgent> agent = OpenAgent();
  v1::NodeReport report = agent->Report();
  EXPECT_EQ(report.kube_controller_manager_version(), "v1.26.9");
  EXPECT_THAT(report.unfinished_transactions(), IsEmpty());
  // A transaction left started (an apply killed by hand), one that never got its journal (it
  // changed nothing) and a committed one: only the first is unfinished.
  Journal journal;
  journal.id = "0001-20261124T050000Z-in-tree-to-prepared";
  journal.from = "in-tree";
  journal.to = "prepared";
  journal.phase = std::string(kPhaseStarted);
  journal.started_at = clock_.Now();
  ASSERT_TRUE(EnsureDirectory(fs_, TransactionDir(kStateDir, journal.id)).ok());
  ASSERT_TRUE(AtomicReplace(fs_, JournalPath(kStateDir, journal.id), journal.Emit()).ok());
  Journal committed = journal;
  committed.id = "0000-20261124T040000Z-in-tree-to-prepared";
  committed.phase = std::string(kPhaseCommitted);
  ASSERT_TRUE(EnsureDirectory(fs_, TransactionDir(kStateDir, committed.id)).ok());
  ASSERT_TRUE(AtomicReplace(fs_, JournalPath(kStateDir, committed.id), committed.Emit()).ok());
  ASSERT_TRUE(
      EnsureDirectory(fs_, TransactionDir(kStateDir, "0002-20261124T050100Z-in-tree-to-prepared"))
          .ok());
  report = agent->Report();
  EXPECT_THAT(report.unfinished_transactions(), ::testing::ElementsAre(journal.id));
}

// The facts the preflight reads: the instance's identity (asked once), the kubelet's
// credential-provider flags, and the stray files of the manifest directory.
TEST_F(NodeAgentTest, ReportCarriesTheNodesFacts) {
  NodeAgentOptions options = Options();
  int asked = 0;
  options.read_instance_identity = [&asked] {
    ++asked;
    v1::NodeFacts facts;
    facts.set_instance_id("i-0a1b2c3d4e5f60710");
    facts.set_local_hostname("ip-10-0-1-10.ec2.internal");
    facts.set_availability_zone("us-east-1a");
    return facts;
  };
  std::unique_ptr<NodeAgent> agent = OpenAgent(options, nullptr);
  v1::NodeReport report = agent->Report();
  EXPECT_EQ(report.facts().local_hostname(), "ip-10-0-1-10.ec2.internal");
  EXPECT_EQ(report.facts().instance_id(), "i-0a1b2c3d4e5f60710");
  EXPECT_TRUE(report.facts().kubelet_flags_known());
  EXPECT_EQ(report.facts().image_credential_provider_config(), "");
  EXPECT_THAT(report.facts().stray_files(), IsEmpty());

  const std::string manifests = "/etc/kubernetes/manifests";
  absl::StatusOr<std::string> kcm = fs_.ReadFile(manifests + "/kube-controller-manager.yaml");
  ASSERT_TRUE(kcm.ok()) << kcm.status();
  ASSERT_TRUE(AtomicReplace(fs_, manifests + "/kube-controller-manager.yaml.bak", *kcm).ok());
  ASSERT_TRUE(AtomicReplace(fs_, "/var/lib/kubelet/kubeadm-flags.env",
                            "KUBELET_KUBEADM_ARGS=\"--cloud-provider=aws "
                            "--image-credential-provider-config=/etc/kubernetes/ecr.yaml "
                            "--image-credential-provider-bin-dir=/usr/local/bin\"\n")
                  .ok());
  report = agent->Report();
  EXPECT_THAT(report.facts().stray_files(),
              ElementsAre(StrCat(manifests,
                                 "/kube-controller-manager.yaml.bak: pod "
                                 "kube-system/kube-controller-manager again (",
                                 manifests, "/kube-controller-manager.yaml defines it)")));
  EXPECT_EQ(report.facts().image_credential_provider_config(), "/etc/kubernetes/ecr.yaml");
  EXPECT_EQ(report.facts().image_credential_provider_bin_dir(), "/usr/local/bin");
  EXPECT_EQ(report.facts().local_hostname(), "ip-10-0-1-10.ec2.internal");
  EXPECT_EQ(asked, 1);
}

TEST_F(NodeAgentTest, TheClusterTagsAreReadWithTheManagersCloudConfigAndAgainEveryRefresh) {
  // The kube-controller-manager runs with the cloud config the cloud-controller-manager will get.
  const std::string manifest = "/etc/kubernetes/manifests/kube-controller-manager.yaml";
  absl::StatusOr<std::string> kcm = fs_.ReadFile(manifest);
  ASSERT_TRUE(kcm.ok()) << kcm.status();
  std::string text = *kcm;
  const std::string flag = "    - --cloud-provider=aws\n";
  ASSERT_NE(text.find(flag), std::string::npos);
  text.insert(text.find(flag), "    - --cloud-config=/etc/kubernetes/cloud.conf\n");
  ASSERT_TRUE(AtomicReplace(fs_, manifest, text).ok());
  ASSERT_TRUE(
      AtomicReplace(fs_, "/etc/kubernetes/cloud.conf", "[Global]\nKubernetesClusterID = prod\n")
          .ok());

  NodeAgentOptions options = Options();
  options.read_instance_identity = [] {
    v1::NodeFacts facts;
    facts.set_instance_id("i-0a1b2c3d4e5f60710");
    facts.set_availability_zone("us-east-1a");
    return facts;
  };
  std::vector<std::string> seen;  // the cloud config each read was given
  std::string value = "owned";
  options.read_cluster_tags = [&](const v1::NodeFacts& identity, const std::string& path,
                                  const absl::StatusOr<std::string>& cloud_config) {
    seen.push_back(StrCat(identity.instance_id(), " ", path, " ",
                          cloud_config.ok() ? *cloud_config : "unreadable"));
    v1::NodeFacts facts;
    (*facts.mutable_cluster_tags())["prod"] = value;
    facts.set_cluster_tags_known(true);
    facts.set_cloud_config_cluster_id("prod");
    facts.set_instance_id("ignored");
    return facts;
  };
  options.cluster_tags_refresh = absl::Minutes(1);
  std::unique_ptr<NodeAgent> agent = OpenAgent(options, nullptr);
  v1::NodeReport report = agent->Report();
  EXPECT_THAT(seen, ElementsAre("i-0a1b2c3d4e5f60710 /etc/kubernetes/cloud.conf [Global]\n"
                                "KubernetesClusterID = prod\n"));
  EXPECT_EQ(report.facts().cluster_tags().at("prod"), "owned");
  EXPECT_TRUE(report.facts().cluster_tags_known());
  EXPECT_EQ(report.facts().cloud_config_cluster_id(), "prod");
  EXPECT_EQ(report.facts().instance_id(), "i-0a1b2c3d4e5f60710")
      << "the identity is the metadata's";

  // Within the refresh the tags are not asked again; after it they are, and a change shows.
  value = "borrowed";
  clock_.Advance(absl::Seconds(59));
  EXPECT_EQ(agent->Report().facts().cluster_tags().at("prod"), "owned");
  EXPECT_EQ(seen.size(), 1u);
  clock_.Advance(absl::Seconds(1));
  EXPECT_EQ(agent->Report().facts().cluster_tags().at("prod"), "borrowed");
  EXPECT_EQ(seen.size(), 2u);
}

TEST_F(NodeAgentTest, WithoutAnInstanceIdTheClusterTagsAreNotAsked) {
  NodeAgentOptions options = Options();
  options.read_instance_identity = [] {
    v1::NodeFacts facts;
    facts.set_metadata_error("the instance metadata did not answer");
    return facts;
  };
  int asked = 0;
  options.read_cluster_tags = [&asked](const v1::NodeFacts&, const std::string&,
                                       const absl::StatusOr<std::string>&) {
    ++asked;
    return v1::NodeFacts();
  };
  const v1::NodeReport report = OpenAgent(options, nullptr)->Report();
  EXPECT_EQ(asked, 0);
  EXPECT_FALSE(report.facts().cluster_tags_known());
}

TEST_F(NodeAgentTest, TheKubeletsExternalNameIsItsOverrideElseTheHostName) {
  std::unique_ptr<NodeAgent> agent = OpenAgent();
  ASSERT_TRUE(AtomicReplace(fs_, "/etc/hostname", " IP-10-0-1-10.EC2.internal \nignored\n").ok());
  EXPECT_EQ(agent->Report().facts().kubelet_node_name(), "ip-10-0-1-10.ec2.internal");
  ASSERT_TRUE(AtomicReplace(fs_, "/var/lib/kubelet/kubeadm-flags.env",
                            "KUBELET_KUBEADM_ARGS=\"--cloud-provider=aws "
                            "--hostname-override=cp-1.example\"\n")
                  .ok());
  EXPECT_EQ(agent->Report().facts().kubelet_node_name(), "cp-1.example");
}

TEST_F(NodeAgentTest, AChangedFactIsReportedWithoutACommand) {
  std::unique_ptr<NodeAgent> agent = OpenAgent();
  agent->Report();
  std::vector<v1::NodeReport> sent;
  auto send = [&sent](const v1::NodeReport& report) { sent.push_back(report); };
  EXPECT_FALSE(agent->RecheckFacts(send)) << "nothing changed";
  ASSERT_TRUE(AtomicReplace(fs_, "/etc/hostname", "renamed-host\n").ok());
  EXPECT_TRUE(agent->RecheckFacts(send));
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_EQ(sent[0].facts().kubelet_node_name(), "renamed-host");
  EXPECT_EQ(sent[0].state(), v1::NODE_STATE_IN_TREE) << "the whole report, not only the facts";
  EXPECT_FALSE(agent->RecheckFacts(send)) << "reported once";

  // A stray copy of a manager's manifest: inconsistent, but only for that file.
  const std::string manifest = "/etc/kubernetes/manifests/kube-controller-manager.yaml";
  absl::StatusOr<std::string> kcm = fs_.ReadFile(manifest);
  ASSERT_TRUE(kcm.ok()) << kcm.status();
  ASSERT_TRUE(AtomicReplace(fs_, manifest + ".bak", *kcm).ok());
  EXPECT_TRUE(agent->RecheckFacts(send));
  ASSERT_EQ(sent.size(), 2u);
  EXPECT_EQ(sent[1].state(), v1::NODE_STATE_INCONSISTENT);
  EXPECT_TRUE(sent[1].facts().inconsistent_only_for_stray_files());
  EXPECT_EQ(sent[1].facts().stray_files_size(), 1);
}

TEST_F(NodeAgentTest, WithoutAMetadataReaderTheFactsSaySo) {
  const v1::NodeReport report = OpenAgent()->Report();
  EXPECT_EQ(report.facts().local_hostname(), "");
  EXPECT_THAT(report.facts().metadata_error(), HasSubstr("does not ask the instance metadata"));
}

TEST_F(NodeAgentTest, ReportNamesTheComponentThatIsNotHealthy) {
  kubelet_.unhealthy_ports.insert(10257);
  std::unique_ptr<NodeAgent> agent = OpenAgent();
  const v1::NodeReport report = agent->Report();
  EXPECT_EQ(report.state(), v1::NODE_STATE_IN_TREE);
  EXPECT_FALSE(report.healthy());
  EXPECT_THAT(report.health_detail(),
              AllOf(HasSubstr("kube-controller-manager"), HasSubstr("is not healthy"),
                    HasSubstr("500 Internal Server Error")));
}

TEST_F(NodeAgentTest, ReportFindsAComponentRunningOtherFlags) {
  kubelet_.extra_arg["kube-scheduler"] = "--v=9";
  std::unique_ptr<NodeAgent> agent = OpenAgent();
  const v1::NodeReport report = agent->Report();
  EXPECT_FALSE(report.healthy());
  EXPECT_THAT(report.health_detail(), AllOf(HasSubstr("kube-scheduler"), HasSubstr("--v=9")));
}

TEST_F(NodeAgentTest, WithoutVerificationHealthyMeansConsistent) {
  kubelet_.unhealthy_ports.insert(10257);
  NodeAgentOptions options = Options();
  options.apply.verify = false;
  std::unique_ptr<NodeAgent> agent = OpenAgent(options, nullptr);
  const v1::AgentHello hello = agent->Hello();
  EXPECT_FALSE(hello.verifies());
  EXPECT_TRUE(hello.report().healthy());
  EXPECT_EQ(kubelet_.health_checks, 0);

  fs_.SetFile("/etc/kubernetes/manifests/kube-controller-manager.yaml.bak",
              *fs_.ReadFile("/etc/kubernetes/manifests/kube-controller-manager.yaml"));
  const v1::NodeReport report = agent->Report();
  EXPECT_EQ(report.state(), v1::NODE_STATE_INCONSISTENT);
  EXPECT_FALSE(report.healthy());
  ASSERT_FALSE(report.reasons().empty());
  EXPECT_THAT(report.reasons(0), HasSubstr("kube-controller-manager.yaml.bak"));
}

TEST_F(NodeAgentTest, MoveSucceedsAndARepeatReturnsTheStoredResultWithoutWriting) {
  std::unique_ptr<NodeAgent> agent = OpenAgent();
  const v1::Command move = MoveCommand("r1-1", v1::NODE_STATE_IN_TREE, v1::NODE_STATE_PREPARED);
  const v1::CommandResult result = agent->Execute(move);
  EXPECT_EQ(result.outcome(), v1::CommandResult::SUCCEEDED) << result.message();
  EXPECT_EQ(result.command_id(), "r1-1");
  EXPECT_THAT(result.message(), HasSubstr("moved in-tree -> prepared in transaction"));
  EXPECT_EQ(result.report().state(), v1::NODE_STATE_PREPARED);
  EXPECT_TRUE(result.report().healthy()) << result.report().health_detail();
  EXPECT_EQ(result.move().from(), v1::NODE_STATE_IN_TREE);
  EXPECT_EQ(result.move().to(), v1::NODE_STATE_PREPARED);
  EXPECT_FALSE(result.move().transaction().empty());
  ASSERT_EQ(result.move().steps_size(), 2);
  EXPECT_EQ(result.move().steps(0).path(), "/etc/leadermigration.conf");
  EXPECT_EQ(result.move().steps(1).component(), "kube-controller-manager");
  EXPECT_EQ(result.move().steps(1).verified(), "restarted with the new flags and healthy");
  EXPECT_EQ(result.finished_unix_ms(), absl::ToUnixMillis(clock_.Now()));

  // The command log holds the finished record.
  absl::StatusOr<CommandLog> log = CommandLog::Open(fs_, kStateDir);
  ASSERT_TRUE(log.ok()) << log.status();
  ASSERT_EQ(log->Records().size(), 1u);
  EXPECT_TRUE(log->Records()[0].finished);
  EXPECT_TRUE(MessageDifferencer::Equals(log->Records()[0].result, result));

  const int calls = fs_.write_calls();
  const size_t checks = kubelet_.commands.size();
  const v1::CommandResult again = agent->Execute(move);
  EXPECT_TRUE(MessageDifferencer::Equals(again, result)) << again.DebugString();
  EXPECT_EQ(fs_.write_calls(), calls);
  EXPECT_EQ(kubelet_.commands.size(), checks);

  // A restarted agent finds it in the command log: still no new work.
  std::unique_ptr<NodeAgent> restarted = OpenAgent();
  const v1::CommandResult stored = restarted->Execute(move);
  EXPECT_TRUE(MessageDifferencer::Equals(stored, result)) << stored.DebugString();
  EXPECT_EQ(fs_.write_calls(), calls);
  absl::StatusOr<std::vector<Journal>> journals = ListTransactions(fs_, kStateDir);
  ASSERT_TRUE(journals.ok());
  EXPECT_EQ(journals->size(), 1u);
  ASSERT_EQ(restarted->Hello().recent_results_size(), 1);
  EXPECT_EQ(restarted->Hello().recent_results(0).command_id(), "r1-1");
}

TEST_F(NodeAgentTest, AMoveTellsWhenEachRestartedComponentsOldProcessesAreGone) {
  std::unique_ptr<NodeAgent> agent = OpenAgent();
  absl::StatusOr<std::vector<ProcessInfo>> before = kubelet_.List();
  ASSERT_TRUE(before.ok());
  std::vector<int64_t> kcm_pids;
  for (const ProcessInfo& process : *before) {
    if (!process.argv.empty() && process.argv[0] == "kube-controller-manager") {
      kcm_pids.push_back(process.pid);
    }
  }
  ASSERT_FALSE(kcm_pids.empty());
  std::vector<v1::AgentMessage> progress;
  const v1::CommandResult result =
      agent->Execute(MoveCommand("r1-1", v1::NODE_STATE_IN_TREE, v1::NODE_STATE_PREPARED),
                     [&](const v1::AgentMessage& message) { progress.push_back(message); });
  ASSERT_EQ(result.outcome(), v1::CommandResult::SUCCEEDED) << result.message();
  // Only the kube-controller-manager restarts on in-tree -> prepared; told once, before the end.
  ASSERT_EQ(progress.size(), 1u);
  ASSERT_TRUE(progress[0].has_processes_gone());
  const v1::ProcessesGone& gone = progress[0].processes_gone();
  EXPECT_EQ(gone.command_id(), "r1-1");
  EXPECT_EQ(gone.component(), "kube-controller-manager");
  EXPECT_THAT(gone.old_pids(), ::testing::ElementsAreArray(kcm_pids));
  EXPECT_GT(gone.gone_unix_ms(), 0);
  EXPECT_LE(gone.gone_unix_ms(), result.finished_unix_ms());
  // A repeated command does nothing and so proves nothing.
  progress.clear();
  agent->Execute(MoveCommand("r1-1", v1::NODE_STATE_IN_TREE, v1::NODE_STATE_PREPARED),
                 [&](const v1::AgentMessage& message) { progress.push_back(message); });
  EXPECT_TRUE(progress.empty());
}

TEST_F(NodeAgentTest, MoveFromAnotherStateIsRefusedAndNothingIsWritten) {
  std::unique_ptr<NodeAgent> agent = OpenAgent();
  const std::map<std::string, std::string> before = fs_.Files();
  const v1::CommandResult result =
      agent->Execute(MoveCommand("r1-1", v1::NODE_STATE_PREPARED, v1::NODE_STATE_MIGRATED));
  EXPECT_EQ(result.outcome(), v1::CommandResult::REFUSED);
  EXPECT_THAT(result.message(),
              AllOf(HasSubstr("the node is in-tree, not prepared"), HasSubstr("nothing written")));
  EXPECT_EQ(result.report().state(), v1::NODE_STATE_IN_TREE);
  EXPECT_EQ(result.move().transaction(), "");
  EXPECT_EQ(fs_.write_calls(), 0);
  EXPECT_EQ(fs_.Files(), before);
  // Answered the same way when asked again, and listed for the coordinator.
  EXPECT_EQ(agent->FinishedResult("r1-1")->outcome(), v1::CommandResult::REFUSED);
  EXPECT_EQ(agent->Hello().recent_results_size(), 1);
}

TEST_F(NodeAgentTest, BadSettingsFromTheCoordinatorAreRefusedByName) {
  std::unique_ptr<NodeAgent> agent = OpenAgent();
  const v1::CommandResult result = agent->Execute(MoveCommand(
      "r1-1", v1::NODE_STATE_IN_TREE, v1::NODE_STATE_PREPARED, "kubernetesVersoin: v1.27.6\n"));
  EXPECT_EQ(result.outcome(), v1::CommandResult::REFUSED);
  EXPECT_THAT(result.message(),
              AllOf(HasSubstr("the coordinator's settings"), HasSubstr("kubernetesVersoin")));
  EXPECT_EQ(fs_.write_calls(), 0);
}

TEST_F(NodeAgentTest, TheNodeKeepsItsOwnPathsWhateverTheCoordinatorSends) {
  std::unique_ptr<NodeAgent> agent = OpenAgent();
  const v1::CommandResult result =
      agent->Execute(MoveCommand("r1-1", v1::NODE_STATE_IN_TREE, v1::NODE_STATE_PREPARED,
                                 KubeadmSettingsYaml() + "paths:\n  stateDir: /elsewhere\n"));
  EXPECT_EQ(result.outcome(), v1::CommandResult::SUCCEEDED) << result.message();
  for (const auto& [path, content] : fs_.Files()) {
    EXPECT_FALSE(StartsWith(path, "/elsewhere")) << path;
  }
  EXPECT_TRUE(fs_.Exists("/var/lib/handoff/commands/r1-1.json"));
  EXPECT_THAT(log_.str(), HasSubstr("this node keeps its own"));
}

TEST_F(NodeAgentTest, KubeletThatFailsToRestartRollsTheMoveBack) {
  std::unique_ptr<NodeAgent> agent = OpenAgent();
  ASSERT_EQ(agent->Execute(MoveCommand("r1-1", v1::NODE_STATE_IN_TREE, v1::NODE_STATE_PREPARED))
                .outcome(),
            v1::CommandResult::SUCCEEDED);
  const std::map<std::string, std::string> prepared = NodeFiles(fs_);

  FailingCommandRunner failing_once(kubelet_, 1);
  std::unique_ptr<NodeAgent> flaky = OpenAgent(Options(), &failing_once);
  const v1::CommandResult result =
      flaky->Execute(MoveCommand("r1-2", v1::NODE_STATE_PREPARED, v1::NODE_STATE_MIGRATED));
  EXPECT_EQ(result.outcome(), v1::CommandResult::ROLLED_BACK) << result.message();
  EXPECT_THAT(result.message(),
              AllOf(HasSubstr("failed and was undone (verified); the node is still prepared"),
                    HasSubstr("Job for kubelet.service failed")));
  EXPECT_THAT(result.move().failure(), HasSubstr("Job for kubelet.service failed"));
  EXPECT_EQ(result.move().rollback_failure(), "");
  EXPECT_FALSE(result.move().transaction().empty());
  EXPECT_EQ(result.report().state(), v1::NODE_STATE_PREPARED);
  EXPECT_EQ(NodeFiles(fs_), prepared);
}

TEST_F(NodeAgentTest, AMoveTheUndoCannotRepairNeedsAttention) {
  std::unique_ptr<NodeAgent> agent = OpenAgent();
  ASSERT_EQ(agent->Execute(MoveCommand("r1-1", v1::NODE_STATE_IN_TREE, v1::NODE_STATE_PREPARED))
                .outcome(),
            v1::CommandResult::SUCCEEDED);
  kubelet_.fail_kubelet_restart = true;  // the restart fails, and so does the one of the undo
  const v1::CommandResult result =
      agent->Execute(MoveCommand("r1-2", v1::NODE_STATE_PREPARED, v1::NODE_STATE_MIGRATED));
  EXPECT_EQ(result.outcome(), v1::CommandResult::NEEDS_ATTENTION) << result.message();
  EXPECT_THAT(result.message(), HasSubstr("so did the undo"));
  EXPECT_FALSE(result.move().rollback_failure().empty());
}

TEST_F(NodeAgentTest, AMoveTheApplierRefusesIsRefusedWithItsReason) {
  std::unique_ptr<NodeAgent> agent = OpenAgent();
  ASSERT_TRUE(EnsureDirectory(fs_, kStateDir).ok());
  absl::StatusOr<std::unique_ptr<FileSystem::Lock>> held = fs_.TryLock("/var/lib/handoff/lock");
  ASSERT_TRUE(held.ok());
  const std::map<std::string, std::string> before = NodeFiles(fs_);
  const v1::CommandResult result =
      agent->Execute(MoveCommand("r1-1", v1::NODE_STATE_IN_TREE, v1::NODE_STATE_PREPARED));
  EXPECT_EQ(result.outcome(), v1::CommandResult::REFUSED);
  EXPECT_THAT(result.message(), HasSubstr("another handoff-agent is changing this node"));
  EXPECT_EQ(NodeFiles(fs_), before);
}

// ApplyOptions::before_move (the downtime path's cluster tag check): its lines reach the
// coordinator in the result's message, and its refusal refuses the move with nothing written.
TEST_F(NodeAgentTest, TheHookBeforeAMoveAddsItsNotesToTheResultOrRefusesIt) {
  NodeAgentOptions options = Options();
  std::vector<std::string> asked;
  options.apply.before_move = [&asked](NodeState from, NodeState to, const Settings&)
      -> absl::StatusOr<std::vector<std::string>> {
    asked.push_back(StrCat(NodeStateName(from), ">", NodeStateName(to)));
    return std::vector<std::string>{"check the tag yourself", "and again"};
  };
  std::unique_ptr<NodeAgent> agent = OpenAgent(options, nullptr);
  const v1::CommandResult result =
      agent->Execute(MoveCommand("r1-1", v1::NODE_STATE_IN_TREE, v1::NODE_STATE_PREPARED));
  EXPECT_EQ(result.outcome(), v1::CommandResult::SUCCEEDED) << result.message();
  EXPECT_THAT(result.message(), HasSubstr("; note: check the tag yourself; note: and again"));
  EXPECT_THAT(asked, ElementsAre("in-tree>prepared"));

  options.apply.before_move = [](NodeState, NodeState, const Settings&)
      -> absl::StatusOr<std::vector<std::string>> {
    return absl::FailedPreconditionError("the instance's cluster tag is 'nobody'");
  };
  std::unique_ptr<NodeAgent> refusing = OpenAgent(options, nullptr);
  const std::map<std::string, std::string> before = NodeFiles(fs_);
  const v1::CommandResult refused =
      refusing->Execute(MoveCommand("r1-2", v1::NODE_STATE_PREPARED, v1::NODE_STATE_IN_TREE));
  EXPECT_EQ(refused.outcome(), v1::CommandResult::REFUSED);
  EXPECT_THAT(refused.message(), HasSubstr("the instance's cluster tag is 'nobody'"));
  EXPECT_EQ(NodeFiles(fs_), before);
}

TEST_F(NodeAgentTest, AMoveToTheCurrentStateIsANoOp) {
  std::unique_ptr<NodeAgent> agent = OpenAgent();
  const v1::CommandResult result =
      agent->Execute(MoveCommand("r1-1", v1::NODE_STATE_IN_TREE, v1::NODE_STATE_IN_TREE));
  EXPECT_EQ(result.outcome(), v1::CommandResult::SUCCEEDED) << result.message();
  EXPECT_TRUE(result.move().no_op());
  EXPECT_THAT(result.message(), HasSubstr("already in-tree; nothing written"));
}

// The agent dies between recording a move and finishing it, after the applier changed a file:
// the next agent recovers the node and reports the command INTERRUPTED.
TEST_F(NodeAgentTest, AnAgentKilledMidMoveRecoversTheNodeOnItsNextStart) {
  const std::map<std::string, std::string> original = NodeFiles(fs_);
  const v1::Command move = MoveCommand("r1-1", v1::NODE_STATE_IN_TREE, v1::NODE_STATE_PREPARED);

  // A clean run on a copy tells which write call puts the new kube-controller-manager manifest
  // in place; the crash comes just before it, with the Leader Migration file already written.
  int crash_at = 0;
  {
    FaultInjectionFileSystem copy = fs_;
    testing::FakeKubelet kubelet(copy, testing::KubeadmSettings().paths);
    FakeClock clock;
    std::ostringstream log;
    NodeAgentOptions options = Options();
    absl::StatusOr<std::unique_ptr<NodeAgent>> agent =
        NodeAgent::Open(Host{copy, kubelet, kubelet, clock, kubelet, kubelet}, options, log);
    ASSERT_TRUE(agent.ok());
    ASSERT_EQ((*agent)->Execute(move).outcome(), v1::CommandResult::SUCCEEDED);
    for (size_t i = 0; i < copy.call_log().size(); ++i) {
      if (StartsWith(copy.call_log()[i], "Rename ") &&
          EndsWith(copy.call_log()[i], " /etc/kubernetes/manifests/kube-controller-manager.yaml")) {
        crash_at = static_cast<int>(i) + 1;
      }
    }
    ASSERT_GT(crash_at, 0);
  }

  {
    std::unique_ptr<NodeAgent> agent = OpenAgent();
    fs_.StopAtCall(crash_at);
    (void)agent->Execute(move);  // what it returns is lost with the process
  }
  fs_.Crash();
  ASSERT_TRUE(fs_.Exists("/etc/leadermigration.conf"));  // the move had begun
  absl::StatusOr<CommandLog> log = CommandLog::Open(fs_, kStateDir);
  ASSERT_TRUE(log.ok());
  ASSERT_EQ(log->Records().size(), 1u);
  ASSERT_FALSE(log->Records()[0].finished);

  std::unique_ptr<NodeAgent> restarted = OpenAgent();
  std::optional<v1::CommandResult> result = restarted->FinishedResult("r1-1");
  ASSERT_TRUE(result.has_value());
  EXPECT_EQ(result->outcome(), v1::CommandResult::INTERRUPTED);
  EXPECT_THAT(result->message(),
              AllOf(HasSubstr("stopped mid-move (in-tree -> prepared)"),
                    HasSubstr("undid transaction"), HasSubstr("restored to in-tree")));
  EXPECT_FALSE(result->move().transaction().empty());
  EXPECT_EQ(result->report().state(), v1::NODE_STATE_IN_TREE);
  EXPECT_EQ(NodeFiles(fs_), original);
  // Recorded: the coordinator learns it from the next hello, and a repeat does nothing.
  const v1::AgentHello hello = restarted->Hello();
  ASSERT_EQ(hello.recent_results_size(), 1);
  EXPECT_EQ(hello.recent_results(0).outcome(), v1::CommandResult::INTERRUPTED);
  const int calls = fs_.write_calls();
  EXPECT_EQ(restarted->Execute(move).outcome(), v1::CommandResult::INTERRUPTED);
  EXPECT_EQ(fs_.write_calls(), calls);
  absl::StatusOr<CommandLog> after = CommandLog::Open(fs_, kStateDir);
  ASSERT_TRUE(after.ok());
  EXPECT_TRUE(after->Records()[0].finished);
}

TEST_F(NodeAgentTest, AStartedRecordWithNothingAppliedIsInterruptedWithTheNodeAsItWas) {
  {
    absl::StatusOr<CommandLog> log = CommandLog::Open(fs_, kStateDir);
    ASSERT_TRUE(log.ok());
    ASSERT_TRUE(log->RecordStarted(
                       "r1-1",
                       MoveCommand("r1-1", v1::NODE_STATE_IN_TREE, v1::NODE_STATE_PREPARED).move(),
                       clock_.Now())
                    .ok());
  }
  std::unique_ptr<NodeAgent> agent = OpenAgent();
  std::optional<v1::CommandResult> result = agent->FinishedResult("r1-1");
  ASSERT_TRUE(result.has_value());
  EXPECT_EQ(result->outcome(), v1::CommandResult::INTERRUPTED);
  EXPECT_THAT(result->message(),
              AllOf(HasSubstr("found no transaction to undo"), HasSubstr("restored to in-tree")));
  EXPECT_EQ(result->report().state(), v1::NODE_STATE_IN_TREE);
  EXPECT_EQ(result->move().from(), v1::NODE_STATE_IN_TREE);
  EXPECT_EQ(result->move().to(), v1::NODE_STATE_PREPARED);
}

TEST_F(NodeAgentTest, AnAgentKilledAfterTheMoveCommittedReportsTheNodeAtItsTarget) {
  const v1::Command move = MoveCommand("r1-1", v1::NODE_STATE_IN_TREE, v1::NODE_STATE_PREPARED);
  {
    absl::StatusOr<CommandLog> log = CommandLog::Open(fs_, kStateDir);
    ASSERT_TRUE(log.ok());
    ASSERT_TRUE(log->RecordStarted("r1-1", move.move(), clock_.Now()).ok());
    Applier applier(MakeHost(), testing::KubeadmSettings(), ApplyOptions(), log_);
    absl::StatusOr<ApplyReport> report = applier.Apply(NodeState::kPrepared);
    ASSERT_TRUE(report.ok() && report->ok());
  }
  std::unique_ptr<NodeAgent> agent = OpenAgent();
  std::optional<v1::CommandResult> result = agent->FinishedResult("r1-1");
  ASSERT_TRUE(result.has_value());
  EXPECT_EQ(result->outcome(), v1::CommandResult::INTERRUPTED);
  EXPECT_THAT(result->message(),
              HasSubstr("stopped after applying the move (in-tree -> prepared), before recording "
                        "its result; on restart it found no transaction to undo: the node is "
                        "prepared"));
  EXPECT_EQ(result->report().state(), v1::NODE_STATE_PREPARED);
}

TEST_F(NodeAgentTest, PlanOfATwoStepChainReturnsBothDiffsAndWritesNothing) {
  std::unique_ptr<NodeAgent> agent = OpenAgent();
  const v1::CommandResult result =
      agent->Execute(PlanCommand("r1-1", {v1::NODE_STATE_PREPARED, v1::NODE_STATE_MIGRATED}));
  EXPECT_EQ(result.outcome(), v1::CommandResult::SUCCEEDED) << result.message();
  EXPECT_EQ(result.message(), "planned 2 transition(s): in-tree -> prepared -> migrated");
  ASSERT_EQ(result.plan().transitions_size(), 2);
  const v1::PlannedTransition& first = result.plan().transitions(0);
  const v1::PlannedTransition& second = result.plan().transitions(1);
  EXPECT_EQ(first.from(), v1::NODE_STATE_IN_TREE);
  EXPECT_EQ(first.to(), v1::NODE_STATE_PREPARED);
  EXPECT_EQ(second.from(), v1::NODE_STATE_PREPARED);
  EXPECT_EQ(second.to(), v1::NODE_STATE_MIGRATED);
  // The diffs `handoff-agent plan` prints for each step (the golden files the engine checks).
  absl::StatusOr<Plan> plan = testing::PlanNode(testing::LoadNode("kubeadm"), NodeState::kPrepared,
                                                testing::KubeadmSettings());
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(first.diff(), PlanDiff(*plan));
  EXPECT_EQ(first.diff(), GoldenDiff("golden/kubeadm/01-in-tree-to-prepared.diff"));
  EXPECT_EQ(second.diff(), GoldenDiff("golden/kubeadm/02-prepared-to-migrated.diff"));
  EXPECT_EQ(fs_.write_calls(), 0);
}

TEST_F(NodeAgentTest, PlanThatCannotBeMadeIsRefusedWithTheStep) {
  std::unique_ptr<NodeAgent> agent = OpenAgent();
  const v1::CommandResult result =
      agent->Execute(PlanCommand("r1-1", {v1::NODE_STATE_PREPARED, v1::NODE_STATE_FINALIZED}));
  EXPECT_EQ(result.outcome(), v1::CommandResult::REFUSED);
  EXPECT_THAT(result.message(),
              AllOf(HasSubstr("step 2 (prepared -> finalized)"), HasSubstr("not one step away")));
  EXPECT_FALSE(result.has_plan());
}

TEST_F(NodeAgentTest, ReportCommandReadsTheNodeAgain) {
  std::unique_ptr<NodeAgent> agent = OpenAgent();
  kubelet_.unhealthy_ports.insert(10259);
  const v1::CommandResult result = agent->Execute(ReportCommand("r1-1"));
  EXPECT_EQ(result.outcome(), v1::CommandResult::SUCCEEDED);
  EXPECT_EQ(result.message(), "the node is in-tree and not healthy");
  EXPECT_THAT(result.report().health_detail(), HasSubstr("kube-scheduler"));
}

TEST_F(NodeAgentTest, ACommandIdThatCouldNameAPathIsRefused) {
  std::unique_ptr<NodeAgent> agent = OpenAgent();
  const v1::CommandResult result = agent->Execute(
      MoveCommand("../../etc/passwd", v1::NODE_STATE_IN_TREE, v1::NODE_STATE_PREPARED));
  EXPECT_EQ(result.outcome(), v1::CommandResult::REFUSED);
  EXPECT_THAT(result.message(), HasSubstr("is not valid"));
  EXPECT_EQ(fs_.write_calls(), 0);
  EXPECT_FALSE(agent->FinishedResult("../../etc/passwd").has_value());
}

TEST_F(NodeAgentTest, HelloListsTheNewestSixteenResultsOldestFirst) {
  std::unique_ptr<NodeAgent> agent = OpenAgent();
  for (int i = 1; i <= 20; ++i) agent->Execute(ReportCommand(StrCat("r1-", i)));
  const v1::AgentHello hello = agent->Hello();
  ASSERT_EQ(hello.recent_results_size(), 16);
  EXPECT_EQ(hello.recent_results(0).command_id(), "r1-5");
  EXPECT_EQ(hello.recent_results(15).command_id(), "r1-20");
}

TEST_F(NodeAgentTest, HelloDuringAMoveNamesItAndDoesNotWaitForIt) {
  std::unique_ptr<NodeAgent> agent = OpenAgent();
  health_.Arm();
  std::future<v1::CommandResult> result = std::async(std::launch::async, [&] {
    return agent->Execute(MoveCommand("r1-1", v1::NODE_STATE_IN_TREE, v1::NODE_STATE_PREPARED));
  });
  ASSERT_TRUE(health_.WaitUntilReached());
  const v1::AgentHello hello = agent->Hello();
  EXPECT_EQ(hello.running_command_id(), "r1-1");
  EXPECT_EQ(agent->RunningCommandId(), "r1-1");
  EXPECT_EQ(hello.report().state(), v1::NODE_STATE_IN_TREE);  // the last report, from before
  EXPECT_FALSE(agent->FinishedResult("r1-1").has_value());
  health_.Release();
  EXPECT_EQ(result.get().outcome(), v1::CommandResult::SUCCEEDED);
  EXPECT_EQ(agent->RunningCommandId(), "");
  EXPECT_EQ(agent->Hello().report().state(), v1::NODE_STATE_PREPARED);
}

TEST_F(NodeAgentTest, AnUnhealthyNodeIsReadAgainAndTheChangeSentOnce) {
  kubelet_.unhealthy_ports.insert(10257);
  std::unique_ptr<NodeAgent> agent = OpenAgent();
  ASSERT_FALSE(agent->Report().healthy());
  std::vector<v1::NodeReport> sent;
  auto send = [&sent](const v1::NodeReport& report) { sent.push_back(report); };

  // Still unhealthy: read again, nothing new to tell.
  const int checks_before = kubelet_.health_checks;
  EXPECT_FALSE(agent->RecheckUnhealthy(send));
  EXPECT_GT(kubelet_.health_checks, checks_before);
  EXPECT_TRUE(sent.empty());

  // The component answers now: the healthy report is sent, and then the node is left alone.
  kubelet_.unhealthy_ports.clear();
  EXPECT_TRUE(agent->RecheckUnhealthy(send));
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_TRUE(sent[0].healthy()) << sent[0].health_detail();
  EXPECT_EQ(sent[0].state(), v1::NODE_STATE_IN_TREE);
  EXPECT_TRUE(agent->Hello().report().healthy());
  const int checks_when_healthy = kubelet_.health_checks;
  EXPECT_FALSE(agent->RecheckUnhealthy(send));
  EXPECT_EQ(kubelet_.health_checks, checks_when_healthy) << "a healthy node is not probed";
  EXPECT_EQ(sent.size(), 1u);
}

TEST_F(NodeAgentTest, AnUnhealthyNodeIsNotReadWhileAMoveHoldsIt) {
  kubelet_.unhealthy_ports.insert(10259);
  std::unique_ptr<NodeAgent> agent = OpenAgent();
  ASSERT_FALSE(agent->Report().healthy());
  kubelet_.unhealthy_ports.clear();
  health_.Arm();
  std::future<v1::CommandResult> result = std::async(std::launch::async, [&] {
    return agent->Execute(MoveCommand("r1-1", v1::NODE_STATE_IN_TREE, v1::NODE_STATE_PREPARED));
  });
  ASSERT_TRUE(health_.WaitUntilReached());
  bool sent = false;
  EXPECT_FALSE(agent->RecheckUnhealthy([&sent](const v1::NodeReport&) { sent = true; }));
  EXPECT_FALSE(sent) << "the move's result carries the next report";
  health_.Release();
  EXPECT_EQ(result.get().outcome(), v1::CommandResult::SUCCEEDED);
}

TEST_F(NodeAgentTest, MoveDelayWaitsAfterRecordingTheMoveAsStarted) {
  NodeAgentOptions options = Options();
  options.move_delay = absl::Minutes(3);
  std::unique_ptr<NodeAgent> agent = OpenAgent(options, nullptr);
  const absl::Time before = clock_.Now();
  const v1::CommandResult result =
      agent->Execute(MoveCommand("r1-1", v1::NODE_STATE_IN_TREE, v1::NODE_STATE_PREPARED));
  EXPECT_EQ(result.outcome(), v1::CommandResult::SUCCEEDED);
  EXPECT_GE(clock_.Now() - before, absl::Minutes(3));
  EXPECT_THAT(log_.str(), HasSubstr("waiting 3m before applying (--move-delay)"));
}

// The worker role: the agent reads the node as a worker, says so in its hello, and moves its
// kubelet alone, in-tree <-> external, keeping its own role and worker settings whatever the
// coordinator's settings say.
TEST(WorkerNodeAgentTest, AWorkersAgentMovesItsKubeletAndSaysItIsAWorker) {
  FaultInjectionFileSystem fs(testing::WorkerNode());
  const Settings settings = testing::WorkerSettingsFor();
  testing::FakeKubelet kubelet(fs, settings.paths);
  FakeClock clock;
  std::ostringstream log;
  NodeAgentOptions options;
  options.node_name = testing::kWorkerNodeName;
  options.paths = settings.paths;
  options.role = NodeRole::kWorker;
  options.worker = settings.worker;
  options.apply.verify_options.timeout = absl::Minutes(1);
  absl::StatusOr<std::unique_ptr<NodeAgent>> agent = NodeAgent::Open(
      Host{fs, kubelet, kubelet, clock, kubelet, kubelet}, options, log);
  ASSERT_TRUE(agent.ok()) << agent.status();

  const v1::AgentHello hello = (*agent)->Hello();
  EXPECT_EQ(hello.role(), v1::NODE_ROLE_WORKER);
  EXPECT_EQ(hello.report().state(), v1::NODE_STATE_IN_TREE)
      << StrJoin(hello.report().reasons(), "; ");
  EXPECT_TRUE(hello.report().healthy()) << hello.report().health_detail();
  // What the preflight's ecr-credentials check reads: its move gives the kubelet the provider,
  // which is installed.
  EXPECT_TRUE(hello.report().facts().worker_role());
  EXPECT_TRUE(hello.report().facts().credential_provider_installed());
  EXPECT_EQ(hello.report().facts().credential_provider_install_dir(),
            settings.worker.credential_provider_bin_dir);
  const std::string binary =
      StrCat(settings.worker.credential_provider_bin_dir, "/ecr-credential-provider");
  absl::StatusOr<std::string> installed = fs.ReadFile(binary);
  ASSERT_TRUE(installed.ok()) << installed.status();
  ASSERT_TRUE(fs.RemoveFile(binary).ok());
  EXPECT_FALSE((*agent)->Report().facts().credential_provider_installed());
  FileInfo executable;
  executable.mode = 0755;
  ASSERT_TRUE(fs.WriteFile(binary, *installed, executable).ok());

  v1::CommandResult result = (*agent)->Execute(
      MoveCommand("r1-1", v1::NODE_STATE_IN_TREE, v1::NODE_STATE_EXTERNAL));
  ASSERT_EQ(result.outcome(), v1::CommandResult::SUCCEEDED) << result.message();
  EXPECT_EQ(result.report().state(), v1::NODE_STATE_EXTERNAL);
  EXPECT_THAT(kubelet.kubelet().argv, ::testing::Contains("--cloud-provider=external"));

  result = (*agent)->Execute(MoveCommand("r1-2", v1::NODE_STATE_EXTERNAL, v1::NODE_STATE_IN_TREE));
  ASSERT_EQ(result.outcome(), v1::CommandResult::SUCCEEDED) << result.message();
  EXPECT_EQ(result.report().state(), v1::NODE_STATE_IN_TREE);
  EXPECT_THAT(kubelet.kubelet().argv, ::testing::Contains("--cloud-provider=aws"));
}

TEST_F(NodeAgentTest, AControlPlaneAgentSaysSo) {
  EXPECT_EQ(OpenAgent()->Hello().role(), v1::NODE_ROLE_CONTROL_PLANE);
}

}  // namespace
}  // namespace handoff
