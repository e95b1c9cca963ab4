#include "rehearsal/standin/standin_flags.h"

#include <map>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "rehearsal/standin/sandbox_environment.h"

namespace handoff::standin {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::string Message(const absl::Status& status) { return std::string(status.message()); }

TEST(RoleFromArgv0, NamesTheComponentByBasename) {
  EXPECT_EQ(*RoleFromArgv0("kube-controller-manager"), Role::kKubeControllerManager);
  EXPECT_EQ(*RoleFromArgv0("/usr/local/bin/kube-controller-manager"), Role::kKubeControllerManager);
  EXPECT_EQ(*RoleFromArgv0("cloud-controller-manager"), Role::kCloudControllerManager);
  EXPECT_EQ(*RoleFromArgv0("/bin/aws-cloud-controller-manager"), Role::kCloudControllerManager);
  EXPECT_EQ(*RoleFromArgv0("kube-apiserver"), Role::kKubeApiserver);
  EXPECT_EQ(*RoleFromArgv0("kube-scheduler"), Role::kKubeScheduler);
  EXPECT_EQ(*RoleFromArgv0("workload"), Role::kWorkload);
  EXPECT_EQ(RoleName(Role::kWorkload), "workload");
  absl::StatusOr<Role> other = RoleFromArgv0("/work/build/bin/handoff-standin");
  ASSERT_FALSE(other.ok());
  EXPECT_THAT(Message(other.status()), HasSubstr("'handoff-standin'"));
  EXPECT_EQ(RoleName(Role::kCloudControllerManager), "cloud-controller-manager");
  EXPECT_EQ(DefaultVersion(Role::kKubeControllerManager).ToString(), "v1.26");
  EXPECT_EQ(DefaultVersion(Role::kCloudControllerManager).ToString(), "v1.27");
}

TEST(ParseStandinFlags, DefaultsPerComponent) {
  absl::StatusOr<StandinOptions> kcm = ParseStandinFlags(Role::kKubeControllerManager, {});
  ASSERT_TRUE(kcm.ok()) << kcm.status();
  EXPECT_TRUE(kcm->leader_elect);
  EXPECT_EQ(kcm->lease_duration, absl::Seconds(15));
  EXPECT_EQ(kcm->renew_deadline, absl::Seconds(10));
  EXPECT_EQ(kcm->retry_period, absl::Seconds(2));
  EXPECT_EQ(kcm->resource_name, "kube-controller-manager");
  EXPECT_EQ(kcm->resource_namespace, "kube-system");
  EXPECT_EQ(kcm->secure_port, 10257);
  EXPECT_EQ(kcm->bind_address, "0.0.0.0");
  EXPECT_THAT(kcm->controllers, ElementsAre("*"));
  EXPECT_TRUE(kcm->configure_cloud_routes);
  EXPECT_FALSE(kcm->allocate_node_cidrs);
  EXPECT_EQ(ParseStandinFlags(Role::kCloudControllerManager, {})->secure_port, 10258);
  EXPECT_EQ(ParseStandinFlags(Role::kCloudControllerManager, {})->resource_name,
            "cloud-controller-manager");
  EXPECT_EQ(ParseStandinFlags(Role::kKubeApiserver, {})->secure_port, 6443);
  EXPECT_EQ(ParseStandinFlags(Role::kKubeScheduler, {})->secure_port, 10259);
}

TEST(ParseStandinFlags, ReadsAKubeadmCommandLine) {
  absl::StatusOr<StandinOptions> options = ParseStandinFlags(
      Role::kKubeControllerManager, {"--allocate-node-cidrs=true",
                                     "--authentication-kubeconfig=/etc/kubernetes/c.conf",
                                     "--bind-address=127.0.0.1",
                                     "--client-ca-file=/etc/kubernetes/pki/ca.crt",
                                     "--cluster-cidr=10.244.0.0/16",
                                     "--cluster-name=kubernetes",
                                     "--controllers=*,bootstrapsigner,tokencleaner",
                                     "--kubeconfig=/etc/kubernetes/c.conf",
                                     "--leader-elect=true",
                                     "--use-service-account-credentials=true",
                                     "--cloud-provider",
                                     "aws",
                                     "--enable-leader-migration",
                                     "--leader-migration-config",
                                     "/etc/leadermigration.conf",
                                     "--v",
                                     "2",
                                     "--profiling",
                                     "--leader-elect-lease-duration=1s",
                                     "--leader-elect-renew-deadline=700ms",
                                     "--leader-elect-retry-period",
                                     "0.2s"});
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_TRUE(options->allocate_node_cidrs);
  EXPECT_EQ(options->bind_address, "127.0.0.1");
  EXPECT_EQ(options->cluster_cidr, "10.244.0.0/16");
  EXPECT_THAT(options->controllers, ElementsAre("*", "bootstrapsigner", "tokencleaner"));
  EXPECT_EQ(options->kubeconfig, "/etc/kubernetes/c.conf");
  EXPECT_EQ(options->cloud_provider, "aws");
  EXPECT_TRUE(options->enable_leader_migration);
  EXPECT_EQ(options->leader_migration_config, "/etc/leadermigration.conf");
  EXPECT_EQ(options->lease_duration, absl::Seconds(1));
  EXPECT_EQ(options->renew_deadline, absl::Milliseconds(700));
  EXPECT_EQ(options->retry_period, absl::Milliseconds(200));
  EXPECT_THAT(
      options->ignored_flags,
      ElementsAre("--authentication-kubeconfig=/etc/kubernetes/c.conf",
                  "--client-ca-file=/etc/kubernetes/pki/ca.crt", "--cluster-name=kubernetes",
                  "--use-service-account-credentials=true", "--v 2", "--profiling"));
}

TEST(ParseStandinFlags, BooleansTakeGoSpellingsAndLastValueWins) {
  absl::StatusOr<StandinOptions> options =
      ParseStandinFlags(Role::kCloudControllerManager,
                        {"--leader-elect=F", "--configure-cloud-routes=0", "-secure-port=0",
                         "--enable-leader-migration=TRUE", "--enable-leader-migration=false"});
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_FALSE(options->leader_elect);
  EXPECT_FALSE(options->configure_cloud_routes);
  EXPECT_FALSE(options->enable_leader_migration);
  EXPECT_EQ(options->secure_port, 0);
}

TEST(ParseStandinFlags, ControllersAccumulateAcrossRepeats) {
  absl::StatusOr<StandinOptions> options = ParseStandinFlags(
      Role::kKubeControllerManager, {"--controllers=*", "--controllers", "-nodeipam,route"});
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_THAT(options->controllers, ElementsAre("*", "-nodeipam", "route"));
}

TEST(ParseStandinFlags, RejectsWhatTheRealCommandsReject) {
  struct Case {
    std::vector<std::string> args;
    std::string message;
  };
  const std::vector<Case> cases = {
      {{"--leader-elect", "false"}, "does not take any arguments, got \"false\""},
      {{"--leader-elect=maybe"}, "invalid value \"maybe\" for --leader-elect"},
      {{"--kubeconfig"}, "flag needs an argument: --kubeconfig"},
      {{"--secure-port=70000"}, "--secure-port"},
      {{"--leader-elect-lease-duration=soon"}, "--leader-elect-lease-duration"},
      {{"--bind-address=localhost"}, "--bind-address"},
      {{"--leader-elect-lease-duration=10s"}, "must be greater than --leader-elect-renew-deadline"},
      {{"--leader-elect-retry-period=9s"}, "1.2 × --leader-elect-retry-period"},
      {{"--leader-elect-resource-lock=endpointsleases"}, "use leases"},
  };
  for (const Case& c : cases) {
    absl::StatusOr<StandinOptions> options =
        ParseStandinFlags(Role::kKubeControllerManager, c.args);
    ASSERT_FALSE(options.ok()) << c.args[0];
    EXPECT_EQ(options.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(Message(options.status()), HasSubstr(c.message)) << c.args[0];
  }
  // Timings do not matter without leader election.
  EXPECT_TRUE(ParseStandinFlags(Role::kKubeControllerManager,
                                {"--leader-elect=false", "--leader-elect-lease-duration=1s"})
                  .ok());
}

TEST(MountTable, LongestMountPathWins) {
  absl::StatusOr<MountTable> table = MountTable::Parse(
      "/etc/kubernetes=/tmp/node1/etc/kubernetes\n"
      "\n"
      "/etc/kubernetes/pki/=/tmp/pki\n"
      "/etc/leadermigration.conf=/tmp/node1/etc/leadermigration.conf\n");
  ASSERT_TRUE(table.ok()) << table.status();
  EXPECT_EQ(*table->Resolve("/etc/kubernetes/controller-manager.conf"),
            "/tmp/node1/etc/kubernetes/controller-manager.conf");
  EXPECT_EQ(*table->Resolve("/etc/kubernetes/pki/ca.crt"), "/tmp/pki/ca.crt");
  EXPECT_EQ(*table->Resolve("/etc/kubernetes/pki"), "/tmp/pki");
  EXPECT_EQ(*table->Resolve("/etc/leadermigration.conf"), "/tmp/node1/etc/leadermigration.conf");
  // Whole components only: /etc/kubernetes does not cover /etc/kubernetes2.
  absl::StatusOr<std::string> outside = table->Resolve("/etc/kubernetes2/x");
  ASSERT_FALSE(outside.ok());
  EXPECT_EQ(outside.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(Message(outside.status()), HasSubstr("not under any volume mount"));
  EXPECT_FALSE(table->Resolve("/etc/leadermigration.conf.d/x").ok());
}

TEST(MountTable, WithoutTheVariablePathsAreHostPaths) {
  MountTable none;
  EXPECT_EQ(*none.Resolve("/etc/kubernetes/x.conf"), "/etc/kubernetes/x.conf");
}

TEST(MountTable, RejectsMalformedLines) {
  absl::StatusOr<MountTable> table = MountTable::Parse("/a=/b\nrelative=/c\n");
  ASSERT_FALSE(table.ok());
  EXPECT_THAT(Message(table.status()), HasSubstr("HANDOFF_SANDBOX_MOUNTS line 2"));
  EXPECT_FALSE(MountTable::Parse("/a").ok());
}

TEST(ReadSandboxEnvironment, ReadsEveryVariable) {
  std::map<std::string, std::string> variables = {
      {"HANDOFF_SANDBOX_NODE", "cp-2"},
      {"HANDOFF_SANDBOX_RECORDS", "/tmp/records/cp-2.jsonl"},
      {"HANDOFF_SANDBOX_MOUNTS", "/etc/kubernetes=/tmp/cp-2/etc/kubernetes"},
      {"HANDOFF_SANDBOX_VERSION", "v1.27.6"}};
  auto lookup = [&variables](const char* name) -> std::optional<std::string> {
    auto it = variables.find(name);
    if (it == variables.end()) return std::nullopt;
    return it->second;
  };
  absl::StatusOr<SandboxEnvironment> env = ReadSandboxEnvironment(lookup, "host");
  ASSERT_TRUE(env.ok()) << env.status();
  EXPECT_EQ(env->node, "cp-2");
  EXPECT_EQ(env->records_path, "/tmp/records/cp-2.jsonl");
  EXPECT_TRUE(env->mounts.active());
  EXPECT_EQ(env->version->ToString(), "v1.27.6");

  variables.clear();
  env = ReadSandboxEnvironment(lookup, "host");
  ASSERT_TRUE(env.ok()) << env.status();
  EXPECT_EQ(env->node, "host");
  EXPECT_EQ(env->records_path, "");
  EXPECT_FALSE(env->mounts.active());
  EXPECT_FALSE(env->version.has_value());

  variables["HANDOFF_SANDBOX_VERSION"] = "twenty-seven";
  env = ReadSandboxEnvironment(lookup, "host");
  ASSERT_FALSE(env.ok());
  EXPECT_THAT(Message(env.status()), HasSubstr("HANDOFF_SANDBOX_VERSION"));
}

}  // namespace
}  // namespace handoff::standin
