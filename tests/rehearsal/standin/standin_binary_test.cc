// handoff-standin end to end: the binary exec'ed with argv[0] set (as the sandbox's kubelet does)
// against the fake API server, waiting on its run records and leases — never a fixed sleep.
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "common/base/strings.h"
#include "common/system/health_checker.h"
#include "coordinator/kube/lease.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "rehearsal/monitor/run_record.h"
#include "tests/coordinator/fake_cluster.h"
#include "tests/rehearsal/standin/standin_test_util.h"

extern char** environ;

namespace handoff::standin {
namespace {

using handoff::testing::FakeCluster;
using handoff::testing::TempDir;
using ::testing::HasSubstr;

constexpr absl::Duration kTimeout = absl::Seconds(20);
// The sandbox's short lease timings.
const std::vector<std::string> kShortLeases = {"--leader-elect-lease-duration=1s",
                                               "--leader-elect-renew-deadline=700ms",
                                               "--leader-elect-retry-period=200ms"};

// A port nobody listens on now (the kernel's pick, released at once).
int FreePort() {
  const int sock = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = 0;
  socklen_t length = sizeof(address);
  EXPECT_EQ(bind(sock, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
  EXPECT_EQ(getsockname(sock, reinterpret_cast<sockaddr*>(&address), &length), 0);
  close(sock);
  return ntohs(address.sin_port);
}

// Polls `done` every 10ms until it holds or `timeout` passes.
bool WaitUntil(const std::function<bool()>& done, absl::Duration timeout = kTimeout) {
  const auto deadline = std::chrono::steady_clock::now() + absl::ToChronoNanoseconds(timeout);
  while (std::chrono::steady_clock::now() < deadline) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return done();
}

// One stand-in process, exec'ed like the simulated kubelet does: argv[0] is the component.
class Standin {
 public:
  Standin(const std::string& argv0, const std::vector<std::string>& args,
          const std::map<std::string, std::string>& env, const std::string& stderr_path) {
    std::vector<std::string> argv_strings = {argv0};
    argv_strings.insert(argv_strings.end(), args.begin(), args.end());
    std::vector<std::string> env_strings;
    for (char** entry = environ; *entry != nullptr; ++entry) {
      if (!StartsWith(*entry, "HANDOFF_SANDBOX_")) env_strings.emplace_back(*entry);
    }
    for (const auto& [name, value] : env) env_strings.push_back(StrCat(name, "=", value));
    std::vector<char*> argv;
    for (std::string& arg : argv_strings) argv.push_back(arg.data());
    argv.push_back(nullptr);
    std::vector<char*> envp;
    for (std::string& entry : env_strings) envp.push_back(entry.data());
    envp.push_back(nullptr);
    const int err = open(stderr_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    EXPECT_GE(err, 0);
    pid_ = fork();
    if (pid_ == 0) {
      // Only async-signal-safe calls until exec: this process has threads (the API server).
      dup2(err, STDERR_FILENO);
      execve(HANDOFF_STANDIN_BIN, argv.data(), envp.data());
      _exit(127);
    }
    close(err);
    EXPECT_GT(pid_, 0);
  }
  ~Standin() {
    if (!exited_ && pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }

  void Signal(int signal_number) { kill(pid_, signal_number); }
  // The wait status once it has exited; nullopt if it runs on past the timeout.
  std::optional<int> WaitExit(absl::Duration timeout = kTimeout) {
    int status = 0;
    const bool exited =
        WaitUntil([&] { return exited_ || waitpid(pid_, &status, WNOHANG) == pid_; }, timeout);
    if (!exited) return std::nullopt;
    if (!exited_) status_ = status;
    exited_ = true;
    return status_;
  }
  pid_t pid() const { return pid_; }

 private:
  pid_t pid_ = -1;
  bool exited_ = false;
  int status_ = 0;
};

std::vector<sandbox::RunRecord> Records(const std::string& dir) {
  absl::StatusOr<std::vector<sandbox::RunRecord>> records = sandbox::ReadRunRecords(dir);
  EXPECT_TRUE(records.ok()) << records.status();
  return records.ok() ? *records : std::vector<sandbox::RunRecord>{};
}

std::vector<sandbox::RunRecord> Select(const std::string& dir, const std::string& node,
                                       const std::string& event, const std::string& lease = "") {
  std::vector<sandbox::RunRecord> selected;
  for (const sandbox::RunRecord& record : Records(dir)) {
    if (record.node == node && record.event == event && (lease.empty() || record.lease == lease)) {
      selected.push_back(record);
    }
  }
  return selected;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream content;
  content << in.rdbuf();
  return content.str();
}

bool Healthy(int port, const std::string& path = "/healthz") {
  HealthEndpoint endpoint;
  endpoint.port = port;
  endpoint.path = path;
  return NewCurlHealthChecker()->Check(endpoint, absl::Seconds(2)).ok();
}

absl::StatusOr<std::string> VerboseHealth(int port) {
  HealthEndpoint endpoint;
  endpoint.port = port;
  endpoint.path = "/healthz?verbose";
  absl::StatusOr<HttpAnswer> answer =
      NewCurlHealthChecker()->Get(endpoint, absl::Seconds(2), 64 * 1024);
  if (!answer.ok()) return answer.status();
  return answer->body;
}

class StandinBinaryTest : public ::testing::Test {
 protected:
  StandinBinaryTest() : cluster_(/*seed=*/false), kubeconfig_(cluster_.WriteKubeconfig()) {}

  std::map<std::string, std::string> Env(const std::string& node) const {
    return {{"HANDOFF_SANDBOX_NODE", node},
            {"HANDOFF_SANDBOX_RECORDS", StrCat(records_.path(), "/", node, ".jsonl")}};
  }
  std::string Log(const std::string& name) const { return StrCat(logs_.path(), "/", name); }

  FakeCluster cluster_;
  std::string kubeconfig_;
  TempDir records_;
  TempDir logs_;
};

TEST_F(StandinBinaryTest, OneKubeControllerManagerRunsTheCloudControllersAndTheOtherTakesOver) {
  const int port_1 = FreePort();
  const int port_2 = FreePort();
  auto args = [&](int port) {
    std::vector<std::string> flags = {"--kubeconfig=" + kubeconfig_,
                                      "--cloud-provider=aws",
                                      "--bind-address=127.0.0.1",
                                      StrCat("--secure-port=", port),
                                      "--v=2",
                                      "--use-service-account-credentials=true"};
    flags.insert(flags.end(), kShortLeases.begin(), kShortLeases.end());
    return flags;
  };
  auto cp1 =
      std::make_unique<Standin>("kube-controller-manager", args(port_1), Env("cp-1"), Log("cp-1"));
  auto cp2 =
      std::make_unique<Standin>("kube-controller-manager", args(port_2), Env("cp-2"), Log("cp-2"));
  std::map<std::string, Standin*> by_node = {{"cp-1", cp1.get()}, {"cp-2", cp2.get()}};

  const std::string lease = "kube-system/kube-controller-manager";
  std::string leader;
  ASSERT_TRUE(WaitUntil([&] {
    for (const char* node : {"cp-1", "cp-2"}) {
      if (!Select(records_.path(), node, "lease-acquired", lease).empty()) leader = node;
    }
    return !leader.empty();
  })) << ReadFile(Log("cp-1"))
      << ReadFile(Log("cp-2"));
  const std::string follower = leader == "cp-1" ? "cp-2" : "cp-1";

  // Both answer /healthz, the one waiting for the lease too.
  EXPECT_TRUE(WaitUntil([&] { return Healthy(port_1) && Healthy(port_2); }));
  // Let the leader renew for more than two lease durations, so that the follower had its chances
  // to (wrongly) take over.
  std::optional<kube::LeaseInfo> first = testing::StoredLease(cluster_, "kube-controller-manager");
  ASSERT_TRUE(first.has_value());
  EXPECT_TRUE(kube::HostnameOfIdentity(first->holder_identity) == leader);
  ASSERT_TRUE(WaitUntil([&] {
    std::optional<kube::LeaseInfo> now = testing::StoredLease(cluster_, "kube-controller-manager");
    return now && *now->renew_time >= *first->renew_time + absl::Milliseconds(2500);
  }));
  EXPECT_TRUE(Select(records_.path(), follower, "controller-start").empty());
  std::vector<sandbox::RunRecord> started = Select(records_.path(), leader, "controller-start");
  ASSERT_EQ(started.size(), 2u);
  EXPECT_EQ(started[0].controller, "service");
  EXPECT_EQ(started[1].controller, "cloud-node-lifecycle");
  EXPECT_EQ(started[0].lock, "main");
  EXPECT_EQ(started[0].pid, by_node[leader]->pid());
  EXPECT_EQ(Select(records_.path(), leader, "process-start").size(), 1u);
  // /healthz?verbose lists each started controller as a check, as the real managers' does; the
  // follower lists none (the agents' double-run probe reads exactly this).
  std::map<std::string, int> ports = {{"cp-1", port_1}, {"cp-2", port_2}};
  absl::StatusOr<std::string> leader_checks = VerboseHealth(ports[leader]);
  ASSERT_TRUE(leader_checks.ok()) << leader_checks.status();
  EXPECT_THAT(*leader_checks, HasSubstr("[+]leaderElection ok\n"));
  EXPECT_THAT(*leader_checks, HasSubstr("[+]service ok\n[+]cloud-node-lifecycle ok\n"));
  absl::StatusOr<std::string> follower_checks = VerboseHealth(ports[follower]);
  ASSERT_TRUE(follower_checks.ok()) << follower_checks.status();
  EXPECT_THAT(*follower_checks, Not(HasSubstr("[+]service")));
  EXPECT_THAT(*follower_checks, HasSubstr("healthz check passed"));

  // SIGKILL: no last words, no release.
  by_node[leader]->Signal(SIGKILL);
  std::optional<int> killed = by_node[leader]->WaitExit();
  ASSERT_TRUE(killed.has_value());
  EXPECT_TRUE(WIFSIGNALED(*killed) && WTERMSIG(*killed) == SIGKILL);
  std::optional<kube::LeaseInfo> last = testing::StoredLease(cluster_, "kube-controller-manager");
  ASSERT_TRUE(last.has_value());

  ASSERT_TRUE(WaitUntil([&] {
    return Select(records_.path(), follower, "controller-start").size() == 2;
  })) << ReadFile(Log(follower));
  const sandbox::RunRecord acquired = Select(records_.path(), follower, "lease-acquired", lease)[0];
  // Not before a full lease duration after the last renewal the follower could have seen.
  EXPECT_GE(absl::FromUnixNanos(acquired.t_ns), *last->renew_time + absl::Seconds(1));
  std::optional<kube::LeaseInfo> taken = testing::StoredLease(cluster_, "kube-controller-manager");
  ASSERT_TRUE(taken.has_value());
  EXPECT_EQ(kube::HostnameOfIdentity(taken->holder_identity), follower);
  EXPECT_EQ(taken->lease_transitions, last->lease_transitions + 1);
  EXPECT_EQ(taken->lease_duration_seconds, 1);

  // SIGTERM: controllers recorded as stopped, exit 0, the lease not released.
  by_node[follower]->Signal(SIGTERM);
  std::optional<int> stopped = by_node[follower]->WaitExit();
  ASSERT_TRUE(stopped.has_value());
  EXPECT_TRUE(WIFEXITED(*stopped) && WEXITSTATUS(*stopped) == 0) << ReadFile(Log(follower));
  std::vector<sandbox::RunRecord> stops = Select(records_.path(), follower, "controller-stop");
  ASSERT_EQ(stops.size(), 2u);
  EXPECT_EQ(stops[0].reason, "shutdown");
  EXPECT_EQ(testing::StoredLease(cluster_, "kube-controller-manager")->holder_identity,
            taken->holder_identity);
}

TEST_F(StandinBinaryTest, LeaderMigrationMovesTheControllersToTheCloudControllerManager) {
  // Container paths resolved through HANDOFF_SANDBOX_MOUNTS, as in the sandbox's pods.
  TempDir host;
  const std::string kcm_file =
      host.Write("kcm-leadermigration.conf",
                 "apiVersion: controllermanager.config.k8s.io/v1\n"
                 "kind: LeaderMigrationConfiguration\n"
                 "leaderName: cloud-provider-extraction-migration\n"
                 "controllerLeaders:\n"
                 "  - name: route\n    component: kube-controller-manager\n"
                 "  - name: service\n    component: kube-controller-manager\n"
                 "  - name: cloud-node-lifecycle\n    component: kube-controller-manager\n");
  const std::string ccm_file =
      host.Write("ccm-leadermigration.conf",
                 "apiVersion: controllermanager.config.k8s.io/v1\n"
                 "kind: LeaderMigrationConfiguration\n"
                 "leaderName: cloud-provider-extraction-migration\n"
                 "controllerLeaders:\n"
                 "  - name: route\n    component: cloud-controller-manager\n"
                 "  - name: service\n    component: cloud-controller-manager\n"
                 "  - name: cloud-node-lifecycle\n    component: cloud-controller-manager\n");
  const std::string testdata = HANDOFF_TESTDATA_DIR;
  auto mounts = [&](const std::string& config) {
    return StrCat("/etc/kubernetes/controller-manager.conf=", kubeconfig_,
                  "\n/etc/leadermigration.conf=", config, "\n", testdata, "=", testdata, "\n");
  };
  std::vector<std::string> common = {"--kubeconfig=/etc/kubernetes/controller-manager.conf",
                                     "--enable-leader-migration",
                                     "--leader-migration-config=/etc/leadermigration.conf",
                                     "--cloud-provider=aws", "--secure-port=0"};
  common.insert(common.end(), kShortLeases.begin(), kShortLeases.end());
  std::map<std::string, std::string> kcm_env = Env("cp-1");
  kcm_env["HANDOFF_SANDBOX_MOUNTS"] = mounts(kcm_file);
  kcm_env["HANDOFF_SANDBOX_VERSION"] = "v1.26.9";
  std::map<std::string, std::string> ccm_env = Env("cp-2");
  ccm_env["HANDOFF_SANDBOX_MOUNTS"] = mounts(ccm_file);
  ccm_env["HANDOFF_SANDBOX_VERSION"] = "v1.27.6";
  std::vector<std::string> ccm_args = common;
  ccm_args.push_back("--configure-cloud-routes=false");

  const std::string migration = "kube-system/cloud-provider-extraction-migration";
  Standin kcm("kube-controller-manager", common, kcm_env, Log("kcm"));
  ASSERT_TRUE(WaitUntil([&] {
    return Select(records_.path(), "cp-1", "controller-start").size() == 2;
  })) << ReadFile(Log("kcm"));
  for (const sandbox::RunRecord& record : Select(records_.path(), "cp-1", "controller-start")) {
    EXPECT_EQ(record.lock, "migration") << record.controller;
  }

  Standin ccm("/bin/aws-cloud-controller-manager", ccm_args, ccm_env, Log("ccm"));
  ASSERT_TRUE(WaitUntil([&] {
    return !Select(records_.path(), "cp-2", "lease-acquired",
                   "kube-system/cloud-controller-manager")
                .empty();
  })) << ReadFile(Log("ccm"));
  // It holds its own lease but not the migration lease, which the kube-controller-manager renews.
  ASSERT_TRUE(WaitUntil([&] {
    std::optional<kube::LeaseInfo> lease =
        testing::StoredLease(cluster_, "cloud-controller-manager");
    return lease && lease->renew_time > lease->acquire_time;
  }));
  EXPECT_TRUE(Select(records_.path(), "cp-2", "lease-acquired", migration).empty());
  EXPECT_TRUE(Select(records_.path(), "cp-2", "controller-start").empty());

  // The node moves on: its kube-controller-manager is stopped (the kubelet sends SIGTERM).
  kcm.Signal(SIGTERM);
  std::optional<int> kcm_exit = kcm.WaitExit();
  ASSERT_TRUE(kcm_exit.has_value());
  EXPECT_TRUE(WIFEXITED(*kcm_exit) && WEXITSTATUS(*kcm_exit) == 0) << ReadFile(Log("kcm"));
  ASSERT_TRUE(WaitUntil([&] {
    return Select(records_.path(), "cp-2", "controller-start").size() == 2;
  })) << ReadFile(Log("ccm"));

  // Never both: every controller stopped in the kube-controller-manager before it started in the
  // cloud-controller-manager.
  std::map<std::string, int64_t> stopped;
  for (const sandbox::RunRecord& record : Select(records_.path(), "cp-1", "controller-stop")) {
    EXPECT_EQ(record.reason, "shutdown");
    stopped[record.controller] = record.t_ns;
  }
  for (const sandbox::RunRecord& record : Select(records_.path(), "cp-2", "controller-start")) {
    EXPECT_EQ(record.lock, "migration");
    ASSERT_EQ(stopped.count(record.controller), 1u) << record.controller;
    EXPECT_GT(record.t_ns, stopped[record.controller]) << record.controller;
  }
  std::optional<kube::LeaseInfo> lease =
      testing::StoredLease(cluster_, "cloud-provider-extraction-migration");
  ASSERT_TRUE(lease.has_value());
  EXPECT_EQ(kube::HostnameOfIdentity(lease->holder_identity), "cp-2");
  // One identity for both of the cloud-controller-manager's leases.
  EXPECT_EQ(testing::StoredLease(cluster_, "cloud-controller-manager")->holder_identity,
            lease->holder_identity);
  ccm.Signal(SIGTERM);
  ASSERT_TRUE(ccm.WaitExit().has_value());
}

TEST_F(StandinBinaryTest, KubeApiserverServesLivezAndHealthzOnItsBindAddress) {
  const int port = FreePort();
  Standin apiserver("kube-apiserver",
                    {"--advertise-address=10.0.1.10", "--allow-privileged=true",
                     "--bind-address=127.0.0.1", StrCat("--secure-port=", port),
                     "--etcd-servers=https://127.0.0.1:2379", "--cloud-provider", "external"},
                    Env("cp-1"), Log("apiserver"));
  ASSERT_TRUE(WaitUntil([&] { return Healthy(port, "/livez"); })) << ReadFile(Log("apiserver"));
  EXPECT_TRUE(Healthy(port, "/healthz"));
  EXPECT_FALSE(Healthy(port, "/metrics"));
  // A second process on the same port fails to listen, as a real one would.
  Standin second("kube-apiserver", {"--bind-address=127.0.0.1", StrCat("--secure-port=", port)},
                 Env("cp-2"), Log("second"));
  std::optional<int> second_exit = second.WaitExit();
  ASSERT_TRUE(second_exit.has_value());
  EXPECT_TRUE(WIFEXITED(*second_exit) && WEXITSTATUS(*second_exit) == 1);
  EXPECT_THAT(ReadFile(Log("second")), HasSubstr(StrCat("failed to listen on 127.0.0.1:", port)));

  apiserver.Signal(SIGTERM);
  std::optional<int> status = apiserver.WaitExit();
  ASSERT_TRUE(status.has_value());
  EXPECT_TRUE(WIFEXITED(*status) && WEXITSTATUS(*status) == 0);
  EXPECT_EQ(Select(records_.path(), "cp-1", "process-start").size(), 1u);
}

TEST_F(StandinBinaryTest, BadConfigurationExitsTwoNamingTheFlagOrFile) {
  struct Case {
    std::string argv0;
    std::vector<std::string> args;
    std::map<std::string, std::string> env;
    std::string message;
  };
  const std::vector<Case> cases = {
      {"handoff-standin", {}, {}, "'handoff-standin' is none of them"},
      {"kube-controller-manager", {"--leader-elect", "false"}, {}, "\"false\""},
      {"kube-controller-manager", {"--secure-port=0"}, {}, "--kubeconfig is required"},
      {"kube-controller-manager",
       {"--secure-port=0", "--kubeconfig=/etc/kubernetes/controller-manager.conf"},
       {{"HANDOFF_SANDBOX_MOUNTS", "/etc/kubernetes/pki=/tmp"}},
       "--kubeconfig=/etc/kubernetes/controller-manager.conf: cannot read it"},
      {"kube-controller-manager",
       {"--secure-port=0", "--kubeconfig=" + kubeconfig_, "--enable-leader-migration",
        "--leader-migration-config=/nonexistent/leadermigration.conf"},
       {},
       "--leader-migration-config=/nonexistent/leadermigration.conf"},
      {"kube-controller-manager",
       {"--secure-port=0", "--kubeconfig=" + kubeconfig_, "--cloud-provider=aws"},
       {{"HANDOFF_SANDBOX_VERSION", "v1.27.6"}},
       "--cloud-provider=aws"},
      {"cloud-controller-manager",
       {"--secure-port=0", "--kubeconfig=" + kubeconfig_},
       {},
       "--cluster-cidr"},
  };
  int index = 0;
  for (const Case& c : cases) {
    const std::string log = Log(StrCat("bad-", index++));
    Standin standin(c.argv0, c.args, c.env, log);
    std::optional<int> status = standin.WaitExit();
    ASSERT_TRUE(status.has_value()) << c.message;
    EXPECT_TRUE(WIFEXITED(*status) && WEXITSTATUS(*status) == 2) << c.message << ReadFile(log);
    EXPECT_THAT(ReadFile(log), HasSubstr(c.message));
  }
  // A refused start is still a start in the records.
  Standin refused("kube-controller-manager", {"--leader-elect=maybe"}, Env("cp-3"), Log("refused"));
  ASSERT_TRUE(refused.WaitExit().has_value());
  EXPECT_EQ(Select(records_.path(), "cp-3", "process-start").size(), 1u);
}

}  // namespace
}  // namespace handoff::standin
