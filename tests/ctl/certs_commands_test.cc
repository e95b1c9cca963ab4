// handoffctl certs init|issue, run in-process on a real POSIX file system rooted at a temp dir
// (so that modes are the kernel's), with a fake clock.
#include <sys/stat.h>

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "common/base/strings.h"
#include "common/fs/file_system.h"
#include "common/pki/pki.h"
#include "common/system/clock.h"
#include "ctl/ctl_cli.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/coordinator/fake_cluster.h"
#include "tests/ctl/rollout_test_support.h"
#include "tests/support/fake_clock.h"

namespace handoff::ctl {
namespace {

using ::handoff::ctl::test_support::Result;
using ::handoff::testing::TempDir;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::StartsWith;

const absl::Time kNow = absl::FromUnixSeconds(1'700'000'000);  // 2023-11-14T22:13:20Z

std::string Mode(unsigned mode) {
  char text[16];
  std::snprintf(text, sizeof(text), "%04o", mode);
  return text;
}

class CertsCommandsTest : public ::testing::Test {
 protected:
  CertsCommandsTest() : files_(NewPosixFileSystem(root_.path())) {
    environment_.open_files = [this] { return NewPosixFileSystem(root_.path()); };
    environment_.open_clock = [this] { return std::make_unique<FakeClock>(now_); };
    environment_.get_env = [](const std::string&) -> std::optional<std::string> {
      return std::nullopt;
    };
    environment_.interrupted = [] { return false; };
    environment_.output_is_terminal = [] { return false; };
  }

  Result Run(std::vector<std::string> args) {
    return test_support::Run(std::move(args), environment_);
  }

  std::string Read(const std::string& path) {
    absl::StatusOr<std::string> content = files_->ReadFile(path);
    EXPECT_TRUE(content.ok()) << content.status();
    return content.ok() ? *content : std::string();
  }

  unsigned ModeOf(const std::string& path) {
    absl::StatusOr<FileInfo> info = files_->Stat(path);
    EXPECT_TRUE(info.ok()) << info.status();
    return info.ok() ? info->mode : 0;
  }

  // Everything under the root, for proving that a refused command wrote nothing.
  std::vector<std::string> Listing(const std::string& dir) {
    absl::StatusOr<std::vector<std::string>> names = files_->ListDirectory(dir);
    return names.ok() ? *names : std::vector<std::string>{};
  }

  // The pair at `prefix` (.crt, .key): 0644 and 0600, the key matching, signed by the CA in /pki.
  pki::CertificateInfo CheckPair(const std::string& prefix) {
    EXPECT_EQ(ModeOf(prefix + ".crt"), 0644u);
    EXPECT_EQ(ModeOf(prefix + ".key"), 0600u);
    const pki::KeyPair pair{Read(prefix + ".crt"), Read(prefix + ".key")};
    EXPECT_TRUE(pki::CheckKeyPair(pair).ok());
    absl::Status verified = pki::VerifyCertificate(Read("/pki/ca.crt"), pair.certificate_pem, now_);
    EXPECT_TRUE(verified.ok()) << verified;
    absl::StatusOr<pki::CertificateInfo> info = pki::InspectCertificate(pair.certificate_pem);
    EXPECT_TRUE(info.ok()) << info.status();
    return info.ok() ? *info : pki::CertificateInfo{};
  }

  void Init() {
    Result result = Run({"certs", "init", "--dir", "/pki"});
    ASSERT_EQ(result.code, kExitOk) << result.err;
  }

  TempDir root_;
  std::unique_ptr<FileSystem> files_;
  absl::Time now_ = kNow;
  CtlEnvironment environment_;
};

TEST_F(CertsCommandsTest, InitCreatesThePrivateDirectoryAndTheCa) {
  Result result = Run({"certs", "init", "--dir", "/etc/handoff/pki/"});
  ASSERT_EQ(result.code, kExitOk) << result.err;
  EXPECT_EQ(result.err, "");
  EXPECT_EQ(result.out,
            "certs: created the handoff CA (CN=handoff-ca), valid until 2024-11-13T22:13:20Z\n"
            "  /etc/handoff/pki/ca.crt (0644): every agent, the coordinator and every operator "
            "trust it (--ca)\n"
            "  /etc/handoff/pki/ca.key (0600): keep it here, off the nodes; whoever holds it can "
            "mint any identity\n"
            "next: handoffctl certs issue --dir /etc/handoff/pki --coordinator --dns NAME --ip "
            "ADDR, then --node NAME for each control-plane node and --operator NAME for each "
            "operator\n");
  EXPECT_EQ(ModeOf("/etc/handoff/pki"), 0700u);
  EXPECT_EQ(ModeOf("/etc/handoff/pki/ca.crt"), 0644u);
  EXPECT_EQ(ModeOf("/etc/handoff/pki/ca.key"), 0600u);
  EXPECT_THAT(Listing("/etc/handoff/pki"), ElementsAre("ca.crt", "ca.key"));
  const pki::KeyPair ca{Read("/etc/handoff/pki/ca.crt"), Read("/etc/handoff/pki/ca.key")};
  EXPECT_TRUE(pki::CheckKeyPair(ca).ok());
  absl::StatusOr<pki::CertificateInfo> info = pki::InspectCertificate(ca.certificate_pem);
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(info->common_name, "handoff-ca");
  EXPECT_TRUE(info->ca);
  EXPECT_EQ(info->not_before, kNow - absl::Minutes(5));
  EXPECT_EQ(info->not_after, kNow + absl::Hours(8760));
}

TEST_F(CertsCommandsTest, InitTwiceRefusesAndOverwritesNothing) {
  Init();
  const std::string certificate = Read("/pki/ca.crt");
  const std::string key = Read("/pki/ca.key");
  Result again = Run({"certs", "init", "--dir", "/pki"});
  EXPECT_EQ(again.code, kExitRefused);
  EXPECT_EQ(again.out, "");
  EXPECT_EQ(again.err,
            "handoffctl: /pki/ca.key already exists: /pki holds a CA; nothing was written. Issue "
            "certificates with it (`handoffctl certs issue --dir /pki ...`), or choose another "
            "--dir for a new CA\n");
  EXPECT_EQ(Read("/pki/ca.crt"), certificate);
  EXPECT_EQ(Read("/pki/ca.key"), key);
  EXPECT_THAT(Listing("/pki"), ElementsAre("ca.crt", "ca.key"));
}

TEST_F(CertsCommandsTest, InitRefusesALoneCaCertificate) {
  ASSERT_TRUE(files_->CreateDirectory("/pki", 0700).ok());
  ASSERT_TRUE(files_->WriteFile("/pki/ca.crt", "distributed already", FileInfo{}).ok());
  Result result = Run({"certs", "init", "--dir", "/pki"});
  EXPECT_EQ(result.code, kExitRefused);
  EXPECT_EQ(result.err,
            "handoffctl: /pki/ca.crt already exists (without ca.key); nothing was written. Remove "
            "it to create a new CA there, or choose another --dir\n");
  EXPECT_EQ(Read("/pki/ca.crt"), "distributed already");
  EXPECT_THAT(Listing("/pki"), ElementsAre("ca.crt"));
}

TEST_F(CertsCommandsTest, IssuesAgentOperatorAndCoordinatorCertificates) {
  Init();
  now_ += absl::Hours(1);

  Result node = Run({"certs", "issue", "--dir", "/pki", "--node", "cp-1"});
  ASSERT_EQ(node.code, kExitOk) << node.err;
  const pki::CertificateInfo agent = CheckPair("/pki/cp-1");
  EXPECT_EQ(agent.common_name, "cp-1");
  EXPECT_THAT(agent.organizations, ElementsAre("handoff:agents"));
  EXPECT_TRUE(agent.client);
  EXPECT_FALSE(agent.server);
  EXPECT_FALSE(agent.ca);
  EXPECT_EQ(agent.not_before, now_ - absl::Minutes(5));
  // The default year would outlive the CA (made an hour earlier); it ends with the CA.
  EXPECT_EQ(agent.not_after, kNow + absl::Hours(8760));
  EXPECT_EQ(node.out,
            "certs: issued the agent certificate of node cp-1 (O=handoff:agents, CN=cp-1, "
            "clientAuth), serial " +
                agent.serial_hex +
                ", valid until 2024-11-13T22:13:20Z (the CA's own expiry: a certificate cannot "
                "outlive its CA)\n"
                "  /pki/cp-1.crt (0644)\n"
                "  /pki/cp-1.key (0600)\n"
                "on cp-1, install them with ca.crt as /etc/handoff/pki/agent.crt, agent.key and "
                "ca.crt (handoff-agent's defaults); the agent may register only as node cp-1\n");

  Result operator_result = Run({"certs", "issue", "--dir", "/pki", "--operator", "alice", "--out",
                                "operator", "--validity", "720h"});
  ASSERT_EQ(operator_result.code, kExitOk) << operator_result.err;
  const pki::CertificateInfo alice = CheckPair("/pki/operator");
  EXPECT_EQ(alice.common_name, "alice");
  EXPECT_THAT(alice.organizations, ElementsAre("handoff:operators"));
  EXPECT_TRUE(alice.client);
  EXPECT_FALSE(alice.server);
  EXPECT_EQ(alice.not_after, now_ + absl::Hours(720));
  EXPECT_THAT(operator_result.out,
              AllOf(StartsWith("certs: issued the operator certificate of alice "
                               "(O=handoff:operators, CN=alice, clientAuth), serial "),
                    HasSubstr(", valid until 2023-12-14T23:13:20Z\n  /pki/operator.crt (0644)\n"
                              "  /pki/operator.key (0600)\n"),
                    HasSubstr("every change is recorded as made by alice\n")));

  Result coordinator = Run({"certs", "issue", "--dir", "/pki", "--coordinator", "--dns",
                            "localhost,coordinator.example", "--ip", "127.0.0.1", "--ip", "::1"});
  ASSERT_EQ(coordinator.code, kExitOk) << coordinator.err;
  const pki::CertificateInfo server = CheckPair("/pki/coordinator");
  EXPECT_EQ(server.common_name, "handoff-coordinator");
  EXPECT_THAT(server.organizations, IsEmpty());
  EXPECT_THAT(server.dns_names, ElementsAre("localhost", "coordinator.example"));
  EXPECT_THAT(server.ip_addresses, ElementsAre("127.0.0.1", "::1"));
  EXPECT_TRUE(server.server);
  EXPECT_FALSE(server.client);
  EXPECT_THAT(
      coordinator.out,
      StartsWith("certs: issued the coordinator's certificate (CN=handoff-coordinator, "
                 "serverAuth) for localhost, coordinator.example, 127.0.0.1, ::1, serial "));

  EXPECT_THAT(Listing("/pki"), ElementsAre("ca.crt", "ca.key", "coordinator.crt", "coordinator.key",
                                           "cp-1.crt", "cp-1.key", "operator.crt", "operator.key"));
}

TEST_F(CertsCommandsTest, AbsoluteOutPrefixMayLieOutsideTheCaDirectory) {
  Init();
  Result result =
      Run({"certs", "issue", "--dir", "/pki", "--node", "cp-2", "--out", "/nodes/cp-2/agent"});
  ASSERT_EQ(result.code, kExitOk) << result.err;
  EXPECT_EQ(CheckPair("/nodes/cp-2/agent").common_name, "cp-2");
  EXPECT_EQ(ModeOf("/nodes/cp-2"), 0700u);
  EXPECT_THAT(Listing("/pki"), ElementsAre("ca.crt", "ca.key"));
}

// The probe's case: `certs init` into an existing world-writable directory wrote the CA key
// there and left it so. Such a directory is refused, never tightened (it may be /tmp); over every
// mode, exactly those writable by group or others are.
TEST_F(CertsCommandsTest, InitRefusesADirectoryOthersCanWrite) {
  for (const unsigned mode : {0700u, 0750u, 0755u, 0770u, 0775u, 0777u, 01777u, 0730u, 0703u}) {
    const std::string dir = StrCat("/ca-", Mode(mode));
    ASSERT_TRUE(files_->CreateDirectory(dir, 0700).ok());
    ASSERT_EQ(::chmod((root_.path() + dir).c_str(), mode), 0) << dir;
    Result result = Run({"certs", "init", "--dir", dir});
    if ((mode & 022) == 0) {
      EXPECT_EQ(result.code, kExitOk) << dir << ": " << result.err;
      EXPECT_THAT(Listing(dir), ElementsAre("ca.crt", "ca.key")) << dir;
    } else {
      EXPECT_EQ(result.code, kExitRefused) << dir;
      EXPECT_THAT(result.err,
                  AllOf(HasSubstr(StrCat("the CA's directory ", dir, " is writable by ",
                                         (mode & 002) != 0 ? "everyone" : "its group", " (",
                                         Mode(mode & 07777), ")")),
                        HasSubstr("nothing was written"), HasSubstr("chmod go-w " + dir)))
          << dir;
      EXPECT_THAT(Listing(dir), IsEmpty()) << dir;
      EXPECT_EQ(ModeOf(dir), mode) << dir;  // left as it was
    }
  }
}

// `certs issue` used a world-readable ca.key without a word: refused until its owner looks.
TEST_F(CertsCommandsTest, IssueRefusesACaKeyOthersCouldRead) {
  Init();
  for (const unsigned mode : {0640u, 0604u, 0644u, 0660u}) {
    ASSERT_EQ(::chmod((root_.path() + "/pki/ca.key").c_str(), mode), 0);
    Result result = Run({"certs", "issue", "--dir", "/pki", "--node", "cp-1"});
    EXPECT_EQ(result.code, kExitRefused) << Mode(mode);
    EXPECT_THAT(result.err,
                AllOf(HasSubstr(StrCat("/pki/ca.key is open to ",
                                       (mode & 007) != 0 ? "everyone" : "its group", " (",
                                       Mode(mode), ")")),
                      HasSubstr("nothing was issued"), HasSubstr("chmod 0600 /pki/ca.key")));
    EXPECT_THAT(Listing("/pki"), ElementsAre("ca.crt", "ca.key"));
  }
  ASSERT_EQ(::chmod((root_.path() + "/pki/ca.key").c_str(), 0400), 0);  // read-only is fine
  Result result = Run({"certs", "issue", "--dir", "/pki", "--node", "cp-1"});
  EXPECT_EQ(result.code, kExitOk) << result.err;
}

TEST_F(CertsCommandsTest, IssueRefusesAKeyDirectoryOthersCanWrite) {
  Init();
  ASSERT_TRUE(files_->CreateDirectory("/shared", 0700).ok());
  ASSERT_EQ(::chmod((root_.path() + "/shared").c_str(), 01777), 0);
  Result result =
      Run({"certs", "issue", "--dir", "/pki", "--node", "cp-2", "--out", "/shared/agent"});
  EXPECT_EQ(result.code, kExitRefused);
  EXPECT_THAT(result.err, HasSubstr("the key's directory /shared is writable by everyone (1777)"));
  EXPECT_THAT(Listing("/shared"), IsEmpty());
}

TEST_F(CertsCommandsTest, IssueWithoutInitSaysToRunInitFirst) {
  Result result = Run({"certs", "issue", "--dir", "/pki", "--node", "cp-1"});
  EXPECT_EQ(result.code, kExitRefused);
  EXPECT_EQ(result.out, "");
  EXPECT_EQ(result.err,
            "handoffctl: /pki/ca.key does not exist: there is no CA in /pki; run `handoffctl certs "
            "init --dir /pki` first, or point --dir at the directory holding ca.crt and ca.key\n");
  EXPECT_THAT(Listing("/"), IsEmpty());
}

TEST_F(CertsCommandsTest, IssueKeepsExistingFilesUnlessForced) {
  Init();
  ASSERT_EQ(Run({"certs", "issue", "--dir", "/pki", "--node", "cp-1"}).code, kExitOk);
  const std::string certificate = Read("/pki/cp-1.crt");
  const std::string key = Read("/pki/cp-1.key");

  Result refused = Run({"certs", "issue", "--dir", "/pki", "--node", "cp-1"});
  EXPECT_EQ(refused.code, kExitRefused);
  EXPECT_EQ(refused.err,
            "handoffctl: /pki/cp-1.crt already exists; nothing was written. Pass --force to "
            "replace /pki/cp-1.crt and /pki/cp-1.key, or choose other names with --out\n");
  EXPECT_EQ(Read("/pki/cp-1.crt"), certificate);
  EXPECT_EQ(Read("/pki/cp-1.key"), key);

  Result forced = Run({"certs", "issue", "--dir", "/pki", "--node", "cp-1", "--force"});
  ASSERT_EQ(forced.code, kExitOk) << forced.err;
  EXPECT_NE(Read("/pki/cp-1.crt"), certificate);
  EXPECT_NE(Read("/pki/cp-1.key"), key);
  EXPECT_EQ(CheckPair("/pki/cp-1").common_name, "cp-1");
  // No temp file is left behind.
  EXPECT_THAT(Listing("/pki"), ElementsAre("ca.crt", "ca.key", "cp-1.crt", "cp-1.key"));
}

TEST_F(CertsCommandsTest, NeverWritesOverTheCa) {
  Init();
  const std::string key = Read("/pki/ca.key");
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"--node", "ca", "--force"},
        std::vector<std::string>{"--operator", "alice", "--out", "/pki/ca", "--force"}}) {
    std::vector<std::string> command = {"certs", "issue", "--dir", "/pki"};
    command.insert(command.end(), args.begin(), args.end());
    Result result = Run(command);
    EXPECT_EQ(result.code, kExitRefused);
    EXPECT_EQ(result.err,
              "handoffctl: the certificate would be written over the CA's own /pki/ca.crt; choose "
              "other file names with --out PREFIX\n");
  }
  EXPECT_EQ(Read("/pki/ca.key"), key);
}

TEST_F(CertsCommandsTest, RefusesBadUsageBeforeWritingAnything) {
  Init();
  struct Case {
    std::vector<std::string> args;
    std::string err;
  };
  const std::vector<Case> cases = {
      {{"--coordinator", "--ip", "10.0.0.300"},
       "handoffctl: cannot issue the coordinator's certificate (CN=handoff-coordinator, "
       "serverAuth) for 10.0.0.300 with the CA in /pki: IP address \"10.0.0.300\" is neither an "
       "IPv4 address (10.0.0.1) nor an IPv6 address (fd00::1)\n"},
      {{"--coordinator"},
       "handoffctl: --coordinator needs the names agents and operators dial it by: --dns NAME "
       "and/or --ip ADDR (each may be repeated)\n"},
      {{},
       "handoffctl: say whose certificate to issue: give exactly one of --node NAME, "
       "--operator NAME, --coordinator\n"},
      {{"--node", "cp-1", "--operator", "alice"},
       "handoffctl: issue one certificate at a time: give exactly one of --node NAME, "
       "--operator NAME, --coordinator\n"},
      {{"--node", "cp-1", "--dns", "cp-1.example"},
       "handoffctl: --dns and --ip name the addresses the coordinator is dialed at; they go "
       "with --coordinator only\n"},
      {{"--operator", "team/alice"},
       "handoffctl: \"team/alice\" cannot be a file name; choose the files' names with --out "
       "PREFIX\n"},
      {{"--node", "cp-1", "--validity", "forever"},
       "handoffctl: --validity \"forever\" is not a positive duration such as 8760h (a year) or "
       "720h\n"},
      {{"--node", "cp-1", "--validity", "-1h"},
       "handoffctl: --validity \"-1h\" is not a positive duration such as 8760h (a year) or "
       "720h\n"},
  };
  for (const Case& test_case : cases) {
    std::vector<std::string> command = {"certs", "issue", "--dir", "/pki"};
    command.insert(command.end(), test_case.args.begin(), test_case.args.end());
    Result result = Run(command);
    EXPECT_EQ(result.code, kExitRefused) << command.back();
    EXPECT_EQ(result.out, "") << command.back();
    EXPECT_EQ(result.err, test_case.err) << command.back();
  }
  EXPECT_THAT(Listing("/pki"), ElementsAre("ca.crt", "ca.key"));
}

TEST_F(CertsCommandsTest, DirectoryMustBeAbsolute) {
  Result result = Run({"certs", "init", "--dir", "pki"});
  EXPECT_EQ(result.code, kExitRefused);
  EXPECT_EQ(result.err,
            "handoffctl: --dir pki is not an absolute path; write it in full, e.g. --dir "
            "/etc/handoff/pki or --dir \"$PWD/pki\"\n");
  EXPECT_THAT(Listing("/"), IsEmpty());
}

TEST_F(CertsCommandsTest, IssueRefusesAnExpiredCa) {
  ASSERT_EQ(Run({"certs", "init", "--dir", "/pki", "--validity", "24h"}).code, kExitOk);
  now_ += absl::Hours(25);
  Result result = Run({"certs", "issue", "--dir", "/pki", "--node", "cp-1"});
  EXPECT_EQ(result.code, kExitRefused);
  EXPECT_EQ(result.err,
            "handoffctl: cannot issue the agent certificate of node cp-1 (O=handoff:agents, "
            "CN=cp-1, clientAuth) with the CA in /pki: the CA CN=handoff-ca is valid from "
            "2023-11-14T22:08:20Z to 2023-11-15T22:13:20Z, not at 2023-11-15T23:13:20Z; "
            "certificates it signed now would not verify\n");
  EXPECT_THAT(Listing("/pki"), ElementsAre("ca.crt", "ca.key"));
}

TEST_F(CertsCommandsTest, HelpSaysWhatEachIdentityMayDo) {
  Result result = Run({"certs", "issue", "--help"});
  EXPECT_EQ(result.code, kExitOk);
  EXPECT_THAT(result.out,
              AllOf(HasSubstr("may register only as NAME"), HasSubstr("may drive the coordinator"),
                    HasSubstr("--force"), HasSubstr("--validity")));
}

}  // namespace
}  // namespace handoff::ctl
