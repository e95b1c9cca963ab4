#include "rehearsal/sandbox/kubeadm/host_changes.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace handoff::sandbox::kubeadm {
namespace {

using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::UnorderedElementsAre;

class TempDir {
 public:
  TempDir() {
    char pattern[] = "/tmp/handoff-host-changes-XXXXXX";
    path_ = mkdtemp(pattern);
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// A child that waits until it is killed.
pid_t StartChild() {
  const pid_t pid = fork();
  if (pid == 0) {
    for (;;) pause();
  }
  return pid;
}

TEST(HostChangesTest, TheRecordReadsBackAsWritten) {
  HostChangeRecord record;
  record.owner = {1234, 5678};
  record.dir = "/tmp/handoff-sandbox-abc";
  record.keep = true;
  record.links = {"hsb1234", "hsv1234n1"};
  record.cgroup_roots = {"/handoff-sandbox-1234-1"};
  record.sysctls = {{"kernel.panic", "1"}, {"vm.overcommit_memory", "0"}};
  record.processes = {{2000, 3000}, {2001, 3001}};
  absl::StatusOr<HostChangeRecord> parsed =
      ParseHostChangeRecord(FormatHostChangeRecord(record), "r.json");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->owner.pid, 1234);
  EXPECT_EQ(parsed->owner.start_ticks, 5678u);
  EXPECT_EQ(parsed->dir, record.dir);
  EXPECT_TRUE(parsed->keep);
  EXPECT_EQ(parsed->links, record.links);
  EXPECT_EQ(parsed->cgroup_roots, record.cgroup_roots);
  EXPECT_EQ(parsed->sysctls, record.sysctls);
  ASSERT_EQ(parsed->processes.size(), 2u);
  EXPECT_EQ(parsed->processes[1].pid, 2001);
}

TEST(HostChangesTest, ARecordThatWouldUndoTooMuchIsRefused) {
  HostChangeRecord record;
  record.cgroup_roots = {"/"};
  EXPECT_THAT(ParseHostChangeRecord(FormatHostChangeRecord(record), "r.json").status().message(),
              HasSubstr("r.json: cgroup root \"/\""));
  record.cgroup_roots = {"/a/../.."};
  EXPECT_FALSE(ParseHostChangeRecord(FormatHostChangeRecord(record), "r.json").ok());
  record.cgroup_roots = {};
  record.sysctls = {{"net.ipv4.ip_forward", "0"}};
  EXPECT_THAT(ParseHostChangeRecord(FormatHostChangeRecord(record), "r.json").status().message(),
              HasSubstr("sysctl net.ipv4.ip_forward is not the kubelet's"));
  EXPECT_THAT(ParseHostChangeRecord("[]", "r.json").status().message(),
              HasSubstr("r.json: not a JSON object"));
  EXPECT_FALSE(ParseHostChangeRecord("{\"owner\": {\"pid\": 1}}", "r.json").ok());
}

TEST(HostChangesTest, ACgroupRootIsInEveryHierarchy) {
  TempDir fs;
  for (const char* hierarchy : {"cpu,cpuacct", "memory", "pids", "unified"}) {
    std::filesystem::create_directories(fs.path() + "/" + hierarchy);
  }
  std::filesystem::create_directory_symlink("cpu,cpuacct", fs.path() + "/cpu");
  EXPECT_THAT(CgroupRootDirs(fs.path(), "/hs-1-1"),
              ElementsAre(fs.path() + "/cpu,cpuacct/hs-1-1", fs.path() + "/memory/hs-1-1",
                          fs.path() + "/pids/hs-1-1", fs.path() + "/unified/hs-1-1"));
}

TEST(HostChangesTest, UndoStopsTheRunsProcessesAndRemovesItsDirectory) {
  TempDir records;
  TempDir run;
  std::ofstream(run.path() + "/left-behind") << "x";
  const pid_t child = StartChild();
  absl::StatusOr<HostChanges> changes =
      HostChanges::Begin(run.path(), false, HostPaths{records.path()});
  ASSERT_TRUE(changes.ok()) << changes.status();
  ASSERT_TRUE(changes->Started(CurrentProcess(child)).ok());
  EXPECT_TRUE(std::filesystem::exists(records.path() + "/" + std::to_string(getpid()) + ".json"));
  std::vector<std::string> said;
  EXPECT_THAT(changes->Undo([&](const std::string& line) { said.push_back(line); }), IsEmpty());
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
  EXPECT_FALSE(std::filesystem::exists(run.path()));
  // The record goes once everything is undone.
  EXPECT_TRUE(std::filesystem::is_empty(records.path()));
  ASSERT_FALSE(said.empty());
  EXPECT_THAT(said[0], HasSubstr("stopped 1 process(es)"));
}

TEST(HostChangesTest, ARunThatDiedIsCleanedUpByTheNextOneAndALiveOneIsLeftAlone) {
  TempDir records;
  TempDir dead_run;
  // A record whose owner is gone (a pid that ran once: this process's child, reaped).
  const pid_t gone = StartChild();
  const HostProcess gone_process = CurrentProcess(gone);
  kill(gone, SIGKILL);
  waitpid(gone, nullptr, 0);
  const pid_t orphan = StartChild();  // what the dead run left running
  HostChangeRecord dead;
  dead.owner = gone_process;
  dead.dir = dead_run.path();
  dead.processes = {CurrentProcess(orphan)};
  std::ofstream(records.path() + "/1.json") << FormatHostChangeRecord(dead);
  // A record whose owner runs (this process): another sandbox, still running.
  HostChangeRecord live;
  live.owner = CurrentProcess(getpid());
  live.dir = "/nonexistent-live-run";
  std::ofstream(records.path() + "/2.json") << FormatHostChangeRecord(live);
  std::ofstream(records.path() + "/3.json") << "not json";

  const std::vector<std::string> lines =
      CleanStaleRuns([](const std::string&) {}, HostPaths{records.path()});
  EXPECT_THAT(lines, UnorderedElementsAre(
                         HasSubstr("cleaned up after the earlier run in " + dead_run.path()),
                         HasSubstr("left alone: " + records.path() + "/3.json")));
  int status = 0;
  ASSERT_EQ(waitpid(orphan, &status, 0), orphan);
  EXPECT_TRUE(WIFSIGNALED(status));
  EXPECT_FALSE(std::filesystem::exists(dead_run.path()));
  EXPECT_FALSE(std::filesystem::exists(records.path() + "/1.json"));
  EXPECT_TRUE(std::filesystem::exists(records.path() + "/2.json"));
}

// A sysctl directory like /proc/sys holding `value` for each of the kubelet's sysctls.
void WriteSysctls(const std::string& root, const std::string& value) {
  for (const std::string& name : KubeletSysctls()) {
    std::string relative = name;
    std::replace(relative.begin(), relative.end(), '.', '/');
    const std::filesystem::path path = root + "/" + relative;
    std::filesystem::create_directories(path.parent_path());
    std::ofstream(path) << value << "\n";
  }
}

std::string ReadSysctl(const std::string& root, const std::string& relative) {
  std::ifstream in(root + "/" + relative);
  std::string value;
  in >> value;
  return value;
}

TEST(HostChangesTest, OverlappingRunsShareTheHostsSysctlsAndTheLastOneToEndPutsThemBack) {
  TempDir records;
  TempDir sysctls;
  TempDir run;
  const HostPaths paths{records.path(), sysctls.path()};
  // Another run, live (its owner is this test's parent), recorded the host's values ("0") before
  // its kubelets set theirs ("1").
  HostChangeRecord other;
  other.owner = CurrentProcess(getppid());
  other.dir = "/nonexistent-other-run";
  for (const std::string& name : KubeletSysctls()) other.sysctls[name] = "0";
  const std::string other_path = records.path() + "/1.json";
  std::ofstream(other_path) << FormatHostChangeRecord(other);
  WriteSysctls(sysctls.path(), "1");

  absl::StatusOr<HostChanges> changes = HostChanges::Begin(run.path(), true, paths);
  ASSERT_TRUE(changes.ok()) << changes.status();
  ASSERT_TRUE(changes->WillStartKubelets().ok());
  // The host's values, not the other run's kubelets'.
  EXPECT_EQ(changes->record().sysctls, other.sysctls);

  // Ending while the other run lives: the sysctls stay as its kubelets need them.
  std::vector<std::string> said;
  const auto say = [&](const std::string& line) { said.push_back(line); };
  EXPECT_THAT(changes->Undo(say), IsEmpty());
  EXPECT_EQ(ReadSysctl(sysctls.path(), "kernel/panic"), "1");
  EXPECT_THAT(said, ElementsAre(HasSubstr("left the kubelet's sysctls to the run still using them "
                                          "(pid " +
                                          std::to_string(getppid()))));

  // Once the other run has ended, a run that ends last puts the host's values back.
  absl::StatusOr<HostChanges> last = HostChanges::Begin(run.path(), true, paths);
  ASSERT_TRUE(last.ok()) << last.status();
  ASSERT_TRUE(last->WillStartKubelets().ok());
  std::filesystem::remove(other_path);
  said.clear();
  EXPECT_THAT(last->Undo(say), IsEmpty());
  for (const char* relative : {"kernel/panic", "vm/overcommit_memory", "kernel/panic_on_oops"}) {
    EXPECT_EQ(ReadSysctl(sysctls.path(), relative), "0") << relative;
  }
  EXPECT_THAT(said, Contains(HasSubstr("restored kernel.panic = 0 (the kubelet had set 1)")));
  EXPECT_TRUE(std::filesystem::is_empty(records.path()));
}

TEST(HostChangesTest, ARunAloneRecordsTheSysctlsAsTheHostHasThem) {
  TempDir records;
  TempDir sysctls;
  TempDir run;
  WriteSysctls(sysctls.path(), "7");
  absl::StatusOr<HostChanges> changes =
      HostChanges::Begin(run.path(), true, HostPaths{records.path(), sysctls.path()});
  ASSERT_TRUE(changes.ok()) << changes.status();
  ASSERT_TRUE(changes->WillStartKubelets().ok());
  ASSERT_EQ(changes->record().sysctls.size(), KubeletSysctls().size());
  for (const auto& [name, value] : changes->record().sysctls) EXPECT_EQ(value, "7") << name;
  WriteSysctls(sysctls.path(), "9");  // as a kubelet would
  EXPECT_THAT(changes->Undo([](const std::string&) {}), IsEmpty());
  EXPECT_EQ(ReadSysctl(sysctls.path(), "vm/overcommit_memory"), "7");
}

}  // namespace
}  // namespace handoff::sandbox::kubeadm
