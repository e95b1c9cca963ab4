// Hostile and clumsy input to handoff-agent, each case on a copy of the kubeadm fixture node: a
// manifest dir that is a symlink out of the copy, FIFOs and devices where files belong, files
// far too large, a state dir inside the manifest dir, recover under another holder of the lock.
// Each must end in a clear refusal with nothing written anywhere, and never hang.
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "agent/cli/agent_cli.h"
#include "common/fs/atomic_file.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/agent/cli/file_tree.h"
#include "tests/agent/cli/run_agent.h"

namespace handoff {
namespace {

namespace stdfs = std::filesystem;
using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;

class HostileInputTest : public ::testing::TestWithParam<RootResolution> {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/handoff-hostile-XXXXXX";
    ASSERT_NE(::mkdtemp(pattern), nullptr);
    temp_ = pattern;
    environment_ = RealAgentEnvironment();
    const RootResolution resolution = GetParam();
    environment_.open_root = [resolution](const std::string& root) {
      return NewPosixFileSystemWithResolution(root, resolution);
    };
  }
  void TearDown() override { stdfs::remove_all(temp_); }

  Result Run(std::vector<std::string> args) { return RunAgent(std::move(args), environment_); }

  // A copy of tests/testdata/nodes/kubeadm.
  std::string CopyNode() {
    const stdfs::path root = temp_ / "node";
    stdfs::copy(stdfs::path(HANDOFF_TESTDATA_DIR) / "nodes" / "kubeadm", root,
                stdfs::copy_options::recursive);
    return root.string();
  }
  std::string ManifestDir(const std::string& root) { return root + "/etc/kubernetes/manifests"; }
  std::string WriteSettings(const std::string& text) {
    const std::string path = (temp_ / "settings.yaml").string();
    std::ofstream(path) << text;
    return path;
  }
  static std::vector<std::string> Apply(const std::string& root,
                                        std::vector<std::string> more = {}) {
    std::vector<std::string> args = {"apply",       "--to", "prepared", "--root", root,
                                     "--no-verify", "--kubelet-restart-command", "true"};
    args.insert(args.end(), more.begin(), more.end());
    return args;
  }

  stdfs::path temp_;
  AgentEnvironment environment_;
};

// Case 1: the copy's manifest dir is a symlink to a directory outside it. In a chroot the link
// names <copy>/<target>, which is not there: the copy has no manifests, and nothing outside the
// copy is touched.
TEST_P(HostileInputTest, ManifestDirLinkedOutsideTheRootIsNotFollowedOut) {
  const std::string root = CopyNode();
  const std::string outside = (temp_ / "outside" / "manifests").string();
  stdfs::create_directories(outside);
  stdfs::copy(ManifestDir(root), outside, stdfs::copy_options::recursive);
  stdfs::remove_all(ManifestDir(root));
  stdfs::create_directory_symlink(outside, ManifestDir(root));
  const auto outside_before = Tree(temp_ / "outside");
  const auto root_before = Tree(root);

  Result apply = Run(Apply(root));
  EXPECT_EQ(apply.code, kExitRefused) << apply.out << apply.err;
  EXPECT_THAT(apply.err,
              HasSubstr("cannot list the static pod manifest directory /etc/kubernetes/manifests: "
                        "/etc/kubernetes/manifests: No such file or directory"));
  Result status = Run({"status", "--root", root});
  EXPECT_EQ(status.code, kExitRefused);
  EXPECT_EQ(Tree(temp_ / "outside"), outside_before);
  EXPECT_EQ(Tree(root), root_before);
}

// The same link as a relative path that climbs out: ".." stops at the root.
TEST_P(HostileInputTest, ManifestDirLinkClimbingOutOfTheRootStaysInside) {
  const std::string root = CopyNode();
  const std::string outside = (temp_ / "outside" / "manifests").string();
  stdfs::create_directories(outside);
  stdfs::copy(ManifestDir(root), outside, stdfs::copy_options::recursive);
  stdfs::remove_all(ManifestDir(root));
  stdfs::create_directory_symlink("../../../../../../../../../outside/manifests",
                                  ManifestDir(root));
  const auto outside_before = Tree(temp_ / "outside");
  Result apply = Run(Apply(root));
  EXPECT_EQ(apply.code, kExitRefused) << apply.out;
  EXPECT_EQ(Tree(temp_ / "outside"), outside_before);
}

// A link that stays inside the copy is followed as on the node: the move is made, in the copy.
TEST_P(HostileInputTest, ManifestDirLinkedInsideTheRootIsFollowed) {
  const std::string root = CopyNode();
  stdfs::create_directories(root + "/srv");
  stdfs::rename(ManifestDir(root), root + "/srv/manifests");
  stdfs::create_directory_symlink("/srv/manifests", ManifestDir(root));
  // A decoy at the same host path outside the copy must stay as it is.
  const auto host_before = stdfs::exists("/srv/manifests") ? Tree("/srv/manifests")
                                                           : std::map<std::string, std::string>();
  Result apply = Run(Apply(root));
  ASSERT_EQ(apply.code, kExitOk) << apply.err;
  std::ifstream kcm(root + "/srv/manifests/kube-controller-manager.yaml");
  std::ostringstream text;
  text << kcm.rdbuf();
  EXPECT_THAT(text.str(), HasSubstr("--enable-leader-migration"));
  EXPECT_TRUE(stdfs::is_symlink(ManifestDir(root)));
  const auto host_after = stdfs::exists("/srv/manifests") ? Tree("/srv/manifests")
                                                          : std::map<std::string, std::string>();
  EXPECT_EQ(host_after, host_before);
}

// Case 2: a FIFO named like a manifest. status and apply used to block in open(2) forever.
TEST_P(HostileInputTest, AFifoInTheManifestDirIsABrokenEntryNotAHang) {
  const std::string root = CopyNode();
  ASSERT_EQ(::mkfifo((ManifestDir(root) + "/zz.yaml").c_str(), 0600), 0);
  const auto before = Tree(root);
  Result status = Run({"status", "--root", root});
  EXPECT_EQ(status.code, kExitProblems) << status.err;
  EXPECT_THAT(status.out,
              HasSubstr("problem: /etc/kubernetes/manifests/zz.yaml: is a FIFO (named pipe), not "
                        "a regular file"));
  Result apply = Run(Apply(root));
  EXPECT_EQ(apply.code, kExitRefused);
  EXPECT_THAT(apply.err, AllOf(HasSubstr("inconsistent"), HasSubstr("zz.yaml: is a FIFO")));
  EXPECT_EQ(Tree(root), before);
}

// Case 2: a symlink to /dev/zero. Inside the copy it names <copy>/dev/zero, which is not there;
// on a real node (root "/") it is the device, refused without being read.
TEST_P(HostileInputTest, ASymlinkToDevZeroInTheManifestDirIsABrokenEntry) {
  const std::string root = CopyNode();
  stdfs::create_symlink("/dev/zero", ManifestDir(root) + "/zz.yaml");
  const auto before = Tree(root);
  Result status = Run({"status", "--root", root});
  EXPECT_EQ(status.code, kExitProblems) << status.err;
  EXPECT_THAT(status.out, HasSubstr("problem: /etc/kubernetes/manifests/zz.yaml: No such file"));
  EXPECT_EQ(Run(Apply(root)).code, kExitRefused);
  EXPECT_EQ(Tree(root), before);

  // Root "/", the paths of the copy given as host paths in the settings.
  const std::string settings = WriteSettings(
      "paths:\n  manifestDir: " + ManifestDir(root) + "\n  kubeletFlagsFile: " + root +
      "/var/lib/kubelet/kubeadm-flags.env\n  leaderMigrationConfig: " + root +
      "/etc/leadermigration.conf\n  stateDir: " + root + "/var/lib/handoff\n");
  Result host = Run({"status", "--root", "/", "--settings", settings});
  EXPECT_EQ(host.code, kExitProblems) << host.err;
  EXPECT_THAT(host.out, HasSubstr("zz.yaml: is a character device, not a regular file"));
  Result host_apply = Run({"apply", "--to", "prepared", "--root", "/", "--settings", settings,
                           "--no-verify", "--kubelet-restart-command", "true"});
  EXPECT_EQ(host_apply.code, kExitRefused);
  EXPECT_THAT(host_apply.err, HasSubstr("zz.yaml: is a character device"));
  EXPECT_EQ(Tree(root), before);
}

// A manifest far larger than any pod: refused by its size, never read whole.
TEST_P(HostileInputTest, AnOversizedManifestIsABrokenEntryNamingItsSize) {
  const std::string root = CopyNode();
  const std::string big = ManifestDir(root) + "/zz.yaml";
  std::ofstream(big) << "apiVersion: v1\n";
  ASSERT_EQ(::truncate(big.c_str(), 5452595), 0);
  Result status = Run({"status", "--root", root});
  EXPECT_EQ(status.code, kExitProblems) << status.err;
  EXPECT_THAT(status.out,
              HasSubstr("/etc/kubernetes/manifests/zz.yaml: 5.2 MiB is larger than the 1 MiB "
                        "limit for a static pod manifest"));
}

// Case 2: lint-config and --settings of /dev/zero used to read until killed.
TEST_P(HostileInputTest, DevZeroAsAnInputFileIsRefused) {
  Result lint = Run({"lint-config", "/dev/zero"});
  EXPECT_EQ(lint.code, kExitRefused);
  EXPECT_THAT(lint.err, HasSubstr("/dev/zero: is a character device, not a regular file; handoff "
                                  "reads a Leader Migration configuration only from a regular "
                                  "file"));
  const std::string root = CopyNode();
  const auto before = Tree(root);
  for (const char* command : {"status", "plan", "apply", "recover", "backups"}) {
    SCOPED_TRACE(command);
    std::vector<std::string> args = {command, "--root", root, "--settings", "/dev/zero"};
    if (std::string(command) == "plan" || std::string(command) == "apply") {
      args.insert(args.end(), {"--to", "prepared"});
    }
    Result result = Run(args);
    EXPECT_EQ(result.code, kExitRefused);
    EXPECT_THAT(result.err, HasSubstr("/dev/zero: is a character device, not a regular file; "
                                      "handoff reads a settings file only from a regular file"));
  }
  // A FIFO as the settings file does not block either.
  const std::string fifo = (temp_ / "settings.fifo").string();
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  Result from_fifo = Run({"status", "--root", root, "--settings", fifo});
  EXPECT_EQ(from_fifo.code, kExitRefused);
  EXPECT_THAT(from_fifo.err, HasSubstr("settings.fifo: is a FIFO (named pipe)"));
  // A settings file of 5 GiB (sparse) is refused by its size.
  const std::string huge = (temp_ / "huge.yaml").string();
  std::ofstream(huge) << "paths: {}\n";
  ASSERT_EQ(::truncate(huge.c_str(), 5LL << 30), 0);
  Result from_huge = Run({"status", "--root", root, "--settings", huge});
  EXPECT_EQ(from_huge.code, kExitRefused);
  EXPECT_THAT(from_huge.err,
              HasSubstr("huge.yaml: 5 GiB is larger than the 1 MiB limit for a settings file"));
  EXPECT_EQ(Tree(root), before);
}

// Case 5: a state dir in the manifest dir is refused before the lock file is made in it.
TEST_P(HostileInputTest, StateDirInTheManifestDirIsRefusedAndNothingIsCreated) {
  const std::string root = CopyNode();
  const auto before = Tree(root);
  for (const std::string state_dir :
       {"/etc/kubernetes/manifests", "/etc/kubernetes/manifests/handoff"}) {
    SCOPED_TRACE(state_dir);
    const std::string settings = WriteSettings("paths: {stateDir: " + state_dir + "}\n");
    for (const std::vector<std::string>& args :
         {Apply(root, {"--settings", settings}),
          std::vector<std::string>{"recover", "--root", root, "--settings", settings},
          std::vector<std::string>{"status", "--root", root, "--settings", settings}}) {
      Result result = Run(args);
      EXPECT_EQ(result.code, kExitRefused) << args[0];
      EXPECT_THAT(result.err, AllOf(HasSubstr(settings + ": paths.stateDir: " + state_dir),
                                    HasSubstr("static pod manifest directory")));
    }
    EXPECT_FALSE(stdfs::exists(ManifestDir(root) + "/lock"));
    EXPECT_EQ(Tree(root), before);
  }
  // Reached through a symlink inside the copy: refused as well.
  stdfs::create_directories(root + "/srv");
  stdfs::create_directory_symlink("/etc/kubernetes/manifests", root + "/srv/state");
  const auto linked_before = Tree(root);
  const std::string settings = WriteSettings("paths: {stateDir: /srv/state/handoff}\n");
  Result linked = Run(Apply(root, {"--settings", settings}));
  EXPECT_EQ(linked.code, kExitRefused);
  EXPECT_THAT(linked.err, HasSubstr("paths.stateDir: /srv/state/handoff resolves to "
                                    "/etc/kubernetes/manifests/handoff"));
  EXPECT_EQ(Tree(root), linked_before);
  // A directory of its own is fine, and status then sees no broken manifest.
  const std::string own = WriteSettings("paths: {stateDir: /var/lib/handoff-state}\n");
  EXPECT_EQ(Run(Apply(root, {"--settings", own})).code, kExitOk);
  Result status = Run({"status", "--root", root, "--settings", own});
  EXPECT_EQ(status.code, kExitOk) << status.out;
  EXPECT_THAT(status.out, Not(HasSubstr("problem")));
}

// Case 7: recover while another agent holds the lock did nothing: exit 2, not 4.
TEST_P(HostileInputTest, RecoverUnderAnotherHolderOfTheLockIsRefused) {
  const std::string root = CopyNode();
  std::unique_ptr<FileSystem> other = NewPosixFileSystem(root);
  ASSERT_TRUE(EnsureDirectory(*other, "/var/lib/handoff").ok());
  absl::StatusOr<std::unique_ptr<FileSystem::Lock>> held = other->TryLock("/var/lib/handoff/lock");
  ASSERT_TRUE(held.ok()) << held.status();
  const auto before = Tree(root);
  Result recover = Run({"recover", "--root", root});
  EXPECT_EQ(recover.code, kExitRefused) << recover.err;
  EXPECT_THAT(recover.err, HasSubstr("another handoff-agent is changing this node"));
  EXPECT_EQ(Tree(root), before);
  held->reset();
  EXPECT_EQ(Run({"recover", "--root", root}).code, kExitOk);
}

INSTANTIATE_TEST_SUITE_P(Resolutions, HostileInputTest,
                         ::testing::Values(RootResolution::kAuto, RootResolution::kWalk),
                         [](const ::testing::TestParamInfo<RootResolution>& resolution) {
                           return resolution.param == RootResolution::kAuto ? "Auto" : "Walk";
                         });

}  // namespace
}  // namespace handoff
