// The real handoff-coordinator and handoff-agent binaries refusing what they cannot trust: a
// state database that is empty, cut short, damaged or not a database (exit 2, the file left as it
// was, until --reset-damaged-state keeps it aside), and certificates the other side would refuse
// (exit 2 with the dates or the reason, or a log line on both sides naming the likely cause).
//
// Damaged databases are written with the store itself, then damaged as a bad restore or an
// overwrite would; certificates are issued by common/pki with the test CA, around the wall
// clock that the TLS stacks read.
#include <poll.h>
#include <sys/inotify.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "common/pki/pki.h"
#include "coordinator/store/store.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/coordinator/multiprocess/loopback_cluster.h"

namespace handoff::testing {
namespace {

namespace fs = std::filesystem;
using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void WriteFile(const std::string& path, const std::string& content) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << content;
}

std::string Timestamp(absl::Time time) {
  return absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", time, absl::UTCTimeZone());
}

// Waits (inotify on the file, no timer) until `path` contains `text`; false after `timeout`.
bool WaitForText(const std::string& path, const std::string& text, absl::Duration timeout) {
  if (!WaitForFile(path, timeout)) return false;
  const absl::Time deadline = absl::Now() + timeout;
  const int watch = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
  if (watch < 0) {
    // Every inotify instance of the user taken (WaitForFile): look again and again instead.
    while (ReadFile(path).find(text) == std::string::npos && absl::Now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return ReadFile(path).find(text) != std::string::npos;
  }
  inotify_add_watch(watch, path.c_str(), IN_MODIFY | IN_CLOSE_WRITE);
  bool found = false;
  while (!(found = ReadFile(path).find(text) != std::string::npos) && absl::Now() < deadline) {
    pollfd event{watch, POLLIN, 0};
    poll(&event, 1, static_cast<int>(absl::ToInt64Milliseconds(deadline - absl::Now())));
    char buffer[4096];
    while (read(watch, buffer, sizeof(buffer)) > 0) {
    }
  }
  close(watch);
  return found;
}

// The exit code of a process that ended on its own; -1 if it was killed.
int ExitCode(int wait_status) {
  return WIFEXITED(wait_status) ? WEXITSTATUS(wait_status) : -1;
}

class TrustTest : public ::testing::Test {
 protected:
  TrustTest() : cluster_(1) {
    state_dir_ = cluster_.dir() + "/coordinator";
    database_ = state_dir_ + "/coordinator.db";
    fs::create_directories(state_dir_);
  }

  // The coordinator's flags, as LoopbackCluster starts it, with `cert` and `key` for its own.
  std::vector<std::string> CoordinatorArgs(const std::vector<std::string>& extra,
                                           const std::string& cert = TlsFile("coordinator.crt"),
                                           const std::string& key = TlsFile("coordinator.key")) {
    std::vector<std::string> argv = {HANDOFF_COORDINATOR_BIN,
                                     "--listen",
                                     "127.0.0.1:0",
                                     "--port-file",
                                     cluster_.dir() + "/refused.port",
                                     "--state-dir",
                                     state_dir_,
                                     "--ca",
                                     TlsFile("ca.crt"),
                                     "--cert",
                                     cert,
                                     "--key",
                                     key,
                                     "--nodes",
                                     "cp-1",
                                     "--no-cluster-checks",
                                     "--metrics-listen",
                                     "127.0.0.1:0"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    return argv;
  }

  // Runs a process to its end; its exit code, with stdout and stderr in *log.
  int RunToExit(const std::vector<std::string>& argv, std::string* log) {
    const std::string path = cluster_.dir() + "/logs/run-" + std::to_string(++runs_) + ".log";
    ChildProcess child(argv, path);
    const int code = ExitCode(child.Wait());
    *log = ReadFile(path);
    return code;
  }

  // A database as the coordinator writes it, with `entries` history entries, closed.
  void WriteDatabase(int entries) {
    absl::StatusOr<std::unique_ptr<store::Store>> opened = store::Store::Open(database_);
    ASSERT_TRUE(opened.ok()) << opened.status();
    store::StoredRollout rollout;
    rollout.rollout_id = "r-1";
    rollout.goal = NodeState::kMigrated;
    rollout.nodes = {{"cp-1", NodeState::kPrepared, NodeState::kInTree, "moved to prepared"}};
    std::vector<store::HistoryEntry> history;
    for (int n = 1; n <= entries; ++n) {
      store::HistoryEntry entry;
      entry.unix_ms = n;
      entry.actor = "coordinator";
      entry.kind = "result";
      entry.node = "cp-1";
      entry.message = std::string(200, 'm');
      entry.detail_json = "{\"marker\":\"entry-" + std::to_string(n) + "-payload\"}";
      history.push_back(entry);
    }
    ASSERT_TRUE((*opened)->Commit(rollout, history).ok());
  }

  // The refused database stays exactly as it was, and nothing is created beside it.
  void ExpectRefusedAndUntouched(const std::string& bytes, const std::string& what) {
    std::string log;
    const int code = RunToExit(CoordinatorArgs({}), &log);
    EXPECT_EQ(code, 2) << log;
    EXPECT_THAT(log, AllOf(HasSubstr(database_ + ": "), HasSubstr(what),
                           HasSubstr("does not start on a state it cannot trust"),
                           HasSubstr("--reset-damaged-state")));
    EXPECT_EQ(ReadFile(database_), bytes);
    for (const auto& entry : fs::directory_iterator(state_dir_)) {
      const std::string name = entry.path().filename();
      EXPECT_TRUE(name == "coordinator.db" || name == "lock") << name;
    }
    EXPECT_FALSE(fs::exists(cluster_.dir() + "/refused.port"));
  }

  // With the flag the coordinator serves, on a new database, and the old one is kept beside it.
  void ExpectResetKeepsTheOldFile(const std::string& bytes) {
    std::string port_file = cluster_.dir() + "/refused.port";
    ChildProcess coordinator(CoordinatorArgs({"--reset-damaged-state"}),
                             cluster_.dir() + "/logs/reset.log");
    ASSERT_TRUE(WaitForFile(port_file, absl::Seconds(30))) << ReadFile(cluster_.dir() +
                                                                       "/logs/reset.log");
    EXPECT_EQ(ExitCode(coordinator.Kill(SIGTERM)), 0);
    std::vector<std::string> kept;
    for (const auto& entry : fs::directory_iterator(state_dir_)) {
      const std::string name = entry.path().filename();
      if (name.rfind("coordinator.db.damaged-", 0) == 0) kept.push_back(entry.path());
    }
    ASSERT_EQ(kept.size(), 1u);
    EXPECT_EQ(ReadFile(kept[0]), bytes);
    EXPECT_THAT(ReadFile(cluster_.dir() + "/logs/reset.log"),
                HasSubstr("kept the damaged database as " + kept[0]));
    absl::StatusOr<std::unique_ptr<store::Store>> fresh = store::Store::Open(database_);
    ASSERT_TRUE(fresh.ok()) << fresh.status();
    absl::StatusOr<std::optional<store::StoredRollout>> loaded = (*fresh)->Load();
    ASSERT_TRUE(loaded.ok()) << loaded.status();
    EXPECT_FALSE(loaded->has_value() && (*loaded)->goal.has_value());
  }

  LoopbackCluster cluster_;
  std::string state_dir_;
  std::string database_;
  int runs_ = 0;
};

TEST_F(TrustTest, AnEmptyDatabaseIsRefusedAndKeptBesideTheNewOneOnlyWhenAsked) {
  WriteFile(database_, "");
  ExpectRefusedAndUntouched("", "the file is empty (0 bytes)");
  ExpectResetKeepsTheOldFile("");
}

TEST_F(TrustTest, ADatabaseCutInHalfIsRefused) {
  WriteDatabase(200);
  const std::string whole = ReadFile(database_);
  const std::string half = whole.substr(0, whole.size() / 2);
  WriteFile(database_, half);
  ExpectRefusedAndUntouched(half, "the file is damaged or cut short");
  ExpectResetKeepsTheOldFile(half);
}

TEST_F(TrustTest, AGarbageHistoryEntryIsFoundAtStartNotWhenHistoryIsAsked) {
  WriteDatabase(20);
  std::string bytes = ReadFile(database_);
  const size_t at = bytes.find("entry-7-payload");
  ASSERT_NE(at, std::string::npos);
  bytes.replace(at + 8, 7, "\xff\xfe\xfd\x80\x81\x82\x83");
  WriteFile(database_, bytes);
  ExpectRefusedAndUntouched(bytes, "history entry 7's detail is not UTF-8");
  ExpectResetKeepsTheOldFile(bytes);
}

TEST_F(TrustTest, ATextFileNamedAsTheDatabaseIsRefused) {
  const std::string text = "this is not the coordinator's database\n";
  WriteFile(database_, text);
  ExpectRefusedAndUntouched(text, "not a SQLite database");
  ExpectResetKeepsTheOldFile(text);
}

TEST_F(TrustTest, ASoundDatabaseIsUsedAsItIsEvenWithTheFlag) {
  WriteDatabase(3);
  std::string port_file = cluster_.dir() + "/refused.port";
  ChildProcess coordinator(CoordinatorArgs({"--reset-damaged-state"}),
                           cluster_.dir() + "/logs/sound.log");
  ASSERT_TRUE(WaitForFile(port_file, absl::Seconds(30)));
  EXPECT_EQ(ExitCode(coordinator.Kill(SIGTERM)), 0);
  EXPECT_THAT(ReadFile(cluster_.dir() + "/logs/sound.log"),
              HasSubstr("is sound; it is used as it is"));
  for (const auto& entry : fs::directory_iterator(state_dir_)) {
    EXPECT_THAT(entry.path().filename().string(), Not(HasSubstr("damaged")));
  }
  absl::StatusOr<std::unique_ptr<store::Store>> reopened = store::Store::Open(database_);
  ASSERT_TRUE(reopened.ok()) << reopened.status();
  absl::StatusOr<std::optional<store::StoredRollout>> loaded = (*reopened)->Load();
  ASSERT_TRUE(loaded.ok() && loaded->has_value());
  EXPECT_EQ((*loaded)->rollout_id, "r-1");
}

TEST_F(TrustTest, HelpNamesTheFlagThatStartsAfresh) {
  std::string log;
  EXPECT_EQ(RunToExit({HANDOFF_COORDINATOR_BIN, "--help"}, &log), 0);
  EXPECT_THAT(log, AllOf(HasSubstr("--reset-damaged-state"),
                         HasSubstr("coordinator.db.damaged-<UTC time>"),
                         HasSubstr("A sound database is used as it is")));
}

// Certificates issued by the test CA as if at `at`.
pki::KeyPair IssueWithTestCa(const pki::CertificateRequest& request, absl::Time at) {
  absl::StatusOr<pki::KeyPair> issued = pki::IssueCertificate(
      pki::KeyPair{ReadFile(TlsFile("ca.crt")), ReadFile(TlsFile("ca.key"))}, request, at);
  EXPECT_TRUE(issued.ok()) << issued.status();
  return issued.ok() ? *issued : pki::KeyPair{};
}

TEST_F(TrustTest, ACoordinatorWithAnExpiredCertificateDoesNotStart) {
  pki::CertificateRequest request;
  request.common_name = "handoff-coordinator";
  request.ip_addresses = {"127.0.0.1"};
  request.server = true;
  request.validity = absl::Minutes(30);
  const absl::Time issued_at = absl::Now() - absl::Hours(1);
  const pki::KeyPair expired = IssueWithTestCa(request, issued_at);
  WriteFile(cluster_.dir() + "/coordinator.crt", expired.certificate_pem);
  WriteFile(cluster_.dir() + "/coordinator.key", expired.private_key_pem);
  std::string log;
  const int code = RunToExit(CoordinatorArgs({}, cluster_.dir() + "/coordinator.crt",
                                             cluster_.dir() + "/coordinator.key"),
                             &log);
  EXPECT_EQ(code, 2) << log;
  EXPECT_THAT(log,
              AllOf(HasSubstr("--cert " + cluster_.dir() + "/coordinator.crt with --ca"),
                    HasSubstr("certificate has expired (CN=handoff-coordinator is valid from " +
                              Timestamp(issued_at - absl::Minutes(5)) + " to " +
                              Timestamp(issued_at + absl::Minutes(30)) + ")")));
}

class IdentityTest : public ::testing::Test {
 protected:
  IdentityTest() : cluster_(1) {}

  // handoff-agent run for cp-1 as LoopbackCluster starts it, with its own TLS files.
  std::vector<std::string> AgentArgs(const std::string& ca, const std::string& cert,
                                     const std::string& key) const {
    return {HANDOFF_AGENT_BIN,
            "run",
            "--coordinator",
            cluster_.address(),
            "--server-name",
            "localhost",
            "--ca",
            ca,
            "--cert",
            cert,
            "--key",
            key,
            "--root",
            cluster_.root("cp-1"),
            "--settings",
            std::string(HANDOFF_TESTDATA_DIR) + "/nodes/kubeadm.settings.yaml",
            "--no-verify",
            "--kubelet-restart-command",
            "true",
            "--reconnect-max",
            "500ms"};
  }

  std::string AgentLog() const { return cluster_.dir() + "/logs/agent-under-test.log"; }

  LoopbackCluster cluster_;
};

// The issue's case: an agent started with an operator's certificate used to retry
// PERMISSION_DENIED forever.
TEST_F(IdentityTest, AnAgentWithAnOperatorCertificateStopsWithExit2AndTheReason) {
  cluster_.StartCoordinator();
  ChildProcess agent(AgentArgs(TlsFile("ca.crt"), TlsFile("operator.crt"), TlsFile("operator.key")),
                     AgentLog());
  EXPECT_EQ(ExitCode(agent.Wait()), 2);
  EXPECT_THAT(ReadFile(AgentLog()),
              AllOf(HasSubstr("refused node alice (PERMISSION_DENIED)"),
                    HasSubstr("is not an agent's (O=handoff:agents)"), HasSubstr("not retrying")));
}

TEST_F(IdentityTest, AnAgentWithAnExpiredCertificateStopsWithExit2AndTheDates) {
  cluster_.StartCoordinator();
  pki::CertificateRequest request;
  request.common_name = "cp-1";
  request.organizations = {"handoff:agents"};
  request.client = true;
  request.validity = absl::Minutes(30);
  const absl::Time issued_at = absl::Now() - absl::Hours(1);
  const pki::KeyPair expired = IssueWithTestCa(request, issued_at);
  WriteFile(cluster_.dir() + "/agent.crt", expired.certificate_pem);
  WriteFile(cluster_.dir() + "/agent.key", expired.private_key_pem);
  ChildProcess agent(
      AgentArgs(TlsFile("ca.crt"), cluster_.dir() + "/agent.crt", cluster_.dir() + "/agent.key"),
      AgentLog());
  EXPECT_EQ(ExitCode(agent.Wait()), 2);
  EXPECT_THAT(ReadFile(AgentLog()),
              AllOf(HasSubstr("certificate has expired (CN=cp-1 is valid from " +
                              Timestamp(issued_at - absl::Minutes(5)) + " to " +
                              Timestamp(issued_at + absl::Minutes(30)) + ")"),
                    HasSubstr("the coordinator refuses it")));
}

// An agent whose CA file also trusts another CA passes its own check with that CA's certificate;
// the coordinator, trusting only the handoff CA, refuses it in the handshake. Each side logs
// what it can know.
TEST_F(IdentityTest, ACertificateRefusedInTheHandshakeIsNamedOnBothSides) {
  cluster_.StartCoordinator();
  const std::string bundle = cluster_.dir() + "/ca-bundle.crt";
  WriteFile(bundle, ReadFile(TlsFile("ca.crt")) + ReadFile(TlsFile("other-ca.crt")));
  ChildProcess agent(AgentArgs(bundle, TlsFile("rogue-cp-1.crt"), TlsFile("rogue-cp-1.key")),
                     AgentLog());
  EXPECT_TRUE(WaitForText(AgentLog(), "most likely refusing this agent's certificate",
                          absl::Seconds(30)))
      << ReadFile(AgentLog());
  EXPECT_THAT(ReadFile(AgentLog()), HasSubstr("issued by CN=handoff-other-ca"));
  std::string coordinator_log = ReadFile(cluster_.dir() + "/logs/coordinator-1.log");
  EXPECT_THAT(coordinator_log,
              AllOf(HasSubstr("refused a client's TLS certificate: the certificate CN=cp-1"),
                    HasSubstr("(CN=cp-1 was issued by CN=handoff-other-ca, not by this CA)")));
  agent.Kill(SIGKILL);
}

}  // namespace
}  // namespace handoff::testing
