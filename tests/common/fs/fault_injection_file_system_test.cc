// Each clause of FaultInjectionFileSystem's durability model, and its fault controls.
#include "tests/support/fault_injection_file_system.h"

#include <map>
#include <memory>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace handoff {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::Pair;

constexpr char kDir[] = "/etc/kubernetes/manifests";
constexpr char kFile[] = "/etc/kubernetes/manifests/kube-apiserver.yaml";
constexpr char kTemp[] = "/etc/kubernetes/manifests/.kube-apiserver.yaml.tmp";

FileInfo Mode(unsigned mode) {
  FileInfo info;
  info.mode = mode;
  return info;
}

class FaultInjectionFileSystemTest : public ::testing::Test {
 protected:
  void SetUp() override { fs_.SetFile("/etc/kubernetes/admin.conf", "admin", 0600); }

  FaultInjectionFileSystem fs_;
};

TEST_F(FaultInjectionFileSystemTest, SetFileIsDurableWithItsDirectories) {
  fs_.SetFile(kFile, "old", 0640);
  fs_.Crash();
  EXPECT_EQ(fs_.ReadFile(kFile).value_or(""), "old");
  EXPECT_EQ(fs_.Stat(kFile)->mode, 0640u);
  EXPECT_TRUE(fs_.Stat(kDir)->is_directory);
  EXPECT_THAT(fs_.Files(),
              ElementsAre(Pair("/etc/kubernetes/admin.conf", "admin"), Pair(kFile, "old")));
}

TEST_F(FaultInjectionFileSystemTest, ReadsSeeTheLiveState) {
  fs_.SetFile(kFile, "old");
  ASSERT_TRUE(fs_.WriteFile(kTemp, "new", Mode(0600)).ok());
  EXPECT_EQ(fs_.ReadFile(kTemp).value_or(""), "new");
  EXPECT_EQ(fs_.Stat(kTemp)->mode, 0600u);
  EXPECT_THAT(fs_.ListDirectory(kDir).value(),
              ElementsAre(".kube-apiserver.yaml.tmp", "kube-apiserver.yaml"));
  EXPECT_THAT(fs_.ListDirectory("/etc/kubernetes").value(), ElementsAre("admin.conf", "manifests"));
  EXPECT_THAT(fs_.ListDirectory("/").value(), ElementsAre("etc"));
  EXPECT_EQ(fs_.ReadFile(kDir).status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(fs_.ReadFile("/etc/nothing").status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(fs_.ListDirectory(kFile).status().code(), absl::StatusCode::kNotFound);
}

TEST_F(FaultInjectionFileSystemTest, NewFileWithoutDirectorySyncIsLost) {
  fs_.SetFile(kFile, "old");
  ASSERT_TRUE(fs_.WriteFile(kTemp, "new", Mode(0600)).ok());
  ASSERT_TRUE(fs_.SyncFile(kTemp).ok());
  fs_.Crash();
  EXPECT_FALSE(fs_.Exists(kTemp));
  EXPECT_EQ(fs_.ReadFile(kFile).value_or(""), "old");
}

TEST_F(FaultInjectionFileSystemTest, UnsyncedDataUnderADurableNameComesBackEmpty) {
  fs_.SetFile(kFile, "old");
  ASSERT_TRUE(fs_.WriteFile(kTemp, "new", Mode(0600)).ok());
  ASSERT_TRUE(fs_.SyncDirectory(kDir).ok());
  fs_.Crash();
  EXPECT_EQ(fs_.ReadFile(kTemp).value_or("missing"), "");
  EXPECT_EQ(fs_.Stat(kTemp)->mode, 0600u);
}

TEST_F(FaultInjectionFileSystemTest, SyncedAndDirectorySyncedSurvivesInEitherOrder) {
  fs_.SetFile("/etc/kubernetes/manifests/etcd.yaml", "etcd");
  ASSERT_TRUE(fs_.WriteFile(kFile, "a", Mode(0600)).ok());
  ASSERT_TRUE(fs_.SyncFile(kFile).ok());
  ASSERT_TRUE(fs_.SyncDirectory(kDir).ok());
  ASSERT_TRUE(fs_.WriteFile(kTemp, "b", Mode(0644)).ok());
  ASSERT_TRUE(fs_.SyncDirectory(kDir).ok());
  ASSERT_TRUE(fs_.SyncFile(kTemp).ok());
  fs_.Crash();
  EXPECT_EQ(fs_.ReadFile(kFile).value_or(""), "a");
  EXPECT_EQ(fs_.ReadFile(kTemp).value_or(""), "b");
  EXPECT_EQ(fs_.Stat(kTemp)->mode, 0644u);
}

TEST_F(FaultInjectionFileSystemTest, OverwriteInPlaceWithoutSyncComesBackEmpty) {
  // Why handoff never writes a manifest in place.
  fs_.SetFile(kFile, "old");
  ASSERT_TRUE(fs_.WriteFile(kFile, "new", Mode(0644)).ok());
  EXPECT_EQ(fs_.ReadFile(kFile).value_or(""), "new");
  fs_.Crash();
  EXPECT_EQ(fs_.ReadFile(kFile).value_or("missing"), "");

  ASSERT_TRUE(fs_.WriteFile(kFile, "newer", Mode(0644)).ok());
  ASSERT_TRUE(fs_.SyncFile(kFile).ok());
  fs_.Crash();
  EXPECT_EQ(fs_.ReadFile(kFile).value_or(""), "newer");
}

TEST_F(FaultInjectionFileSystemTest, RenameWithoutDirectorySyncIsUndone) {
  fs_.SetFile(kFile, "old");
  ASSERT_TRUE(fs_.WriteFile(kTemp, "new", Mode(0600)).ok());
  ASSERT_TRUE(fs_.SyncFile(kTemp).ok());
  ASSERT_TRUE(fs_.Rename(kTemp, kFile).ok());
  EXPECT_EQ(fs_.ReadFile(kFile).value_or(""), "new");
  EXPECT_FALSE(fs_.Exists(kTemp));
  fs_.Crash();
  EXPECT_EQ(fs_.ReadFile(kFile).value_or(""), "old");
  EXPECT_FALSE(fs_.Exists(kTemp));
}

TEST_F(FaultInjectionFileSystemTest, RenameWithDirectorySyncSurvives) {
  fs_.SetFile(kFile, "old", 0644);
  ASSERT_TRUE(fs_.WriteFile(kTemp, "new", Mode(0600)).ok());
  ASSERT_TRUE(fs_.SyncFile(kTemp).ok());
  ASSERT_TRUE(fs_.Rename(kTemp, kFile).ok());
  ASSERT_TRUE(fs_.SyncDirectory(kDir).ok());
  fs_.Crash();
  EXPECT_EQ(fs_.ReadFile(kFile).value_or(""), "new");
  EXPECT_EQ(fs_.Stat(kFile)->mode, 0600u);
  EXPECT_FALSE(fs_.Exists(kTemp));
}

TEST_F(FaultInjectionFileSystemTest, RenameOfUnsyncedDataComesBackEmpty) {
  // Why AtomicReplace fsyncs the temp file before the rename.
  fs_.SetFile(kFile, "old");
  ASSERT_TRUE(fs_.WriteFile(kTemp, "new", Mode(0600)).ok());
  ASSERT_TRUE(fs_.Rename(kTemp, kFile).ok());
  ASSERT_TRUE(fs_.SyncDirectory(kDir).ok());
  fs_.Crash();
  EXPECT_EQ(fs_.ReadFile(kFile).value_or("missing"), "");
}

TEST_F(FaultInjectionFileSystemTest, SyncUnderANewNameReachesTheDurableOldName) {
  // The data belongs to the file, not to the name: the durable name still refers to it.
  fs_.SetFile("/etc/kubernetes/manifests/etcd.yaml", "etcd");
  ASSERT_TRUE(fs_.WriteFile(kTemp, "data", Mode(0600)).ok());
  ASSERT_TRUE(fs_.SyncDirectory(kDir).ok());
  ASSERT_TRUE(fs_.Rename(kTemp, kFile).ok());
  ASSERT_TRUE(fs_.SyncFile(kFile).ok());
  fs_.Crash();
  EXPECT_EQ(fs_.ReadFile(kTemp).value_or(""), "data");
  EXPECT_FALSE(fs_.Exists(kFile));
}

TEST_F(FaultInjectionFileSystemTest, RemovalWithoutDirectorySyncIsUndone) {
  fs_.SetFile(kFile, "old");
  ASSERT_TRUE(fs_.RemoveFile(kFile).ok());
  EXPECT_FALSE(fs_.Exists(kFile));
  fs_.Crash();
  EXPECT_EQ(fs_.ReadFile(kFile).value_or(""), "old");

  ASSERT_TRUE(fs_.RemoveFile(kFile).ok());
  ASSERT_TRUE(fs_.SyncDirectory(kDir).ok());
  fs_.Crash();
  EXPECT_FALSE(fs_.Exists(kFile));
  // Its directory stays.
  EXPECT_TRUE(fs_.Stat(kDir)->is_directory);
  EXPECT_THAT(fs_.ListDirectory(kDir).value(), IsEmpty());
}

TEST_F(FaultInjectionFileSystemTest, DirectorySyncCoversOnlyItsOwnEntries) {
  ASSERT_TRUE(fs_.WriteFile("/etc/kubernetes/a", "a", Mode(0600)).ok());
  ASSERT_TRUE(fs_.SyncFile("/etc/kubernetes/a").ok());
  fs_.SetFile(kFile, "x");
  ASSERT_TRUE(fs_.WriteFile(kTemp, "t", Mode(0600)).ok());
  ASSERT_TRUE(fs_.SyncFile(kTemp).ok());
  ASSERT_TRUE(fs_.SyncDirectory("/etc/kubernetes").ok());
  fs_.Crash();
  EXPECT_EQ(fs_.ReadFile("/etc/kubernetes/a").value_or(""), "a");
  EXPECT_FALSE(fs_.Exists(kTemp));
}

TEST_F(FaultInjectionFileSystemTest, CreatedDirectoryIsDurableAfterItsParentIsSynced) {
  ASSERT_TRUE(fs_.CreateDirectory("/var", 0755).ok());
  ASSERT_TRUE(fs_.CreateDirectory("/var/lib", 0700).ok());
  EXPECT_TRUE(fs_.Stat("/var/lib")->is_directory);
  EXPECT_EQ(fs_.Stat("/var/lib")->mode, 0700u);
  EXPECT_THAT(fs_.ListDirectory("/var/lib").value(), IsEmpty());
  // /var/lib's name is durable in /var, but /var's is not: both are lost.
  ASSERT_TRUE(fs_.SyncDirectory("/var").ok());
  fs_.Crash();
  EXPECT_FALSE(fs_.Exists("/var"));
  EXPECT_FALSE(fs_.Exists("/var/lib"));

  ASSERT_TRUE(fs_.CreateDirectory("/var", 0755).ok());
  ASSERT_TRUE(fs_.SyncDirectory("/").ok());
  ASSERT_TRUE(fs_.CreateDirectory("/var/lib", 0700).ok());
  ASSERT_TRUE(fs_.SyncDirectory("/var").ok());
  fs_.Crash();
  EXPECT_EQ(fs_.Stat("/var/lib")->mode, 0700u);
  EXPECT_EQ(fs_.Stat("/var")->mode, 0755u);
}

TEST_F(FaultInjectionFileSystemTest, FilesInADirectoryThatIsNotDurableAreLost) {
  ASSERT_TRUE(fs_.CreateDirectory("/var", 0755).ok());
  ASSERT_TRUE(fs_.WriteFile("/var/x", "x", Mode(0600)).ok());
  ASSERT_TRUE(fs_.SyncFile("/var/x").ok());
  ASSERT_TRUE(fs_.SyncDirectory("/var").ok());
  fs_.Crash();
  EXPECT_FALSE(fs_.Exists("/var/x"));
  EXPECT_FALSE(fs_.Exists("/var"));
}

TEST_F(FaultInjectionFileSystemTest, DirectoryRemovalIsDurableAfterItsParentIsSynced) {
  fs_.SetFile("/var/lib/handoff/tx/journal.yaml", "journal");
  ASSERT_TRUE(fs_.RemoveFile("/var/lib/handoff/tx/journal.yaml").ok());
  ASSERT_TRUE(fs_.RemoveDirectory("/var/lib/handoff/tx").ok());
  EXPECT_FALSE(fs_.Exists("/var/lib/handoff/tx"));
  EXPECT_THAT(fs_.ListDirectory("/var/lib/handoff").value(), IsEmpty());
  // Neither removal is durable: the directory comes back with its file.
  fs_.Crash();
  EXPECT_EQ(fs_.ReadFile("/var/lib/handoff/tx/journal.yaml").value_or(""), "journal");

  ASSERT_TRUE(fs_.RemoveFile("/var/lib/handoff/tx/journal.yaml").ok());
  ASSERT_TRUE(fs_.RemoveDirectory("/var/lib/handoff/tx").ok());
  ASSERT_TRUE(fs_.SyncDirectory("/var/lib/handoff").ok());
  fs_.Crash();
  EXPECT_FALSE(fs_.Exists("/var/lib/handoff/tx"));
  EXPECT_FALSE(fs_.Exists("/var/lib/handoff/tx/journal.yaml"));
  EXPECT_TRUE(fs_.Exists("/var/lib/handoff"));
}

TEST_F(FaultInjectionFileSystemTest, RemoveDirectoryOnlyWhenEmpty) {
  fs_.SetFile("/var/lib/handoff/tx/journal.yaml", "journal");
  absl::Status status = fs_.RemoveDirectory("/var/lib/handoff/tx");
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(status.message(), "rmdir /var/lib/handoff/tx: directory not empty");
  EXPECT_EQ(fs_.RemoveDirectory("/var/lib/handoff").code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(fs_.RemoveDirectory("/var/lib/handoff/tx/journal.yaml").code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(fs_.RemoveDirectory("/var/nothing").code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(fs_.RemoveDirectory("/").code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(fs_.Exists("/var/lib/handoff/tx/journal.yaml"));
}

TEST_F(FaultInjectionFileSystemTest, CopyHasTheStateButNotTheLocks) {
  fs_.SetFile(kFile, "old");
  ASSERT_TRUE(fs_.WriteFile(kTemp, "new", Mode(0600)).ok());
  absl::StatusOr<std::unique_ptr<FileSystem::Lock>> lock = fs_.TryLock("/etc/kubernetes/lock");
  ASSERT_TRUE(lock.ok());
  fs_.FailAtCall(5);

  FaultInjectionFileSystem copy = fs_;
  EXPECT_EQ(copy.Files(), fs_.Files());
  EXPECT_EQ(copy.write_calls(), 1);
  EXPECT_TRUE(copy.TryLock("/etc/kubernetes/lock").ok());
  // The copy is independent: its crash and faults are its own.
  copy.Crash();
  EXPECT_FALSE(copy.Exists(kTemp));
  EXPECT_TRUE(fs_.Exists(kTemp));
  EXPECT_EQ(fs_.TryLock("/etc/kubernetes/lock").status().code(), absl::StatusCode::kUnavailable);
  // The original keeps its fault at call 5; the copy's crash cleared the copy's.
  for (int i = 2; i <= 4; ++i) EXPECT_TRUE(fs_.SyncFile(kTemp).ok()) << i;
  EXPECT_FALSE(fs_.SyncFile(kTemp).ok());
  for (int i = 2; i <= 5; ++i) EXPECT_TRUE(copy.SyncFile(kFile).ok()) << i;
}

TEST_F(FaultInjectionFileSystemTest, WriteSideErrors) {
  fs_.SetFile(kFile, "x");
  EXPECT_EQ(fs_.WriteFile("/var/x", "x", Mode(0600)).code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(fs_.WriteFile(kDir, "x", Mode(0600)).code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(fs_.SyncFile("/etc/y").code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(fs_.Rename("/etc/y", "/etc/z").code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(fs_.Rename(kFile, "/var/z").code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(fs_.RemoveFile("/etc/y").code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(fs_.RemoveFile(kDir).code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(fs_.SyncDirectory("/var").code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(fs_.CreateDirectory(kDir, 0700).code(), absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(fs_.CreateDirectory(kFile, 0700).code(), absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(fs_.CreateDirectory("/var/lib", 0700).code(), absl::StatusCode::kNotFound);
  absl::Status status = fs_.RemoveFile("/etc/y");
  EXPECT_EQ(status.message(), "unlink /etc/y: no such file");
  // Failed calls are counted as any other.
  EXPECT_EQ(fs_.write_calls(), 12);
}

TEST_F(FaultInjectionFileSystemTest, FailAtCallCountsFromOneAndIsStickyByDefault) {
  fs_.SetFile(kFile, "old");
  fs_.FailAtCall(2);
  EXPECT_TRUE(fs_.WriteFile(kTemp, "new", Mode(0600)).ok());
  absl::Status status = fs_.SyncFile(kTemp);
  EXPECT_EQ(status.code(), absl::StatusCode::kInternal);
  EXPECT_EQ(
      status.message(),
      "injected fault at call 2 (SyncFile /etc/kubernetes/manifests/.kube-apiserver.yaml.tmp)");
  status = fs_.Rename(kTemp, kFile);
  EXPECT_EQ(status.message(),
            "injected fault at call 3 (Rename /etc/kubernetes/manifests/.kube-apiserver.yaml.tmp "
            "/etc/kubernetes/manifests/kube-apiserver.yaml)");
  // A failed call did nothing.
  EXPECT_EQ(fs_.ReadFile(kFile).value_or(""), "old");
  EXPECT_TRUE(fs_.Exists(kTemp));
  EXPECT_EQ(fs_.write_calls(), 3);
  EXPECT_THAT(fs_.call_log(),
              ElementsAre("WriteFile " + std::string(kTemp), "SyncFile " + std::string(kTemp),
                          "Rename " + std::string(kTemp) + " " + kFile));

  fs_.ClearFaults();
  EXPECT_TRUE(fs_.Rename(kTemp, kFile).ok());
  EXPECT_EQ(fs_.ReadFile(kFile).value_or(""), "new");
}

TEST_F(FaultInjectionFileSystemTest, NonStickyFaultFailsOneCall) {
  fs_.FailAtCall(1, /*sticky=*/false);
  EXPECT_EQ(fs_.CreateDirectory("/var", 0755).message(),
            "injected fault at call 1 (CreateDirectory /var)");
  EXPECT_FALSE(fs_.Exists("/var"));
  EXPECT_TRUE(fs_.CreateDirectory("/var", 0755).ok());
  EXPECT_TRUE(fs_.SyncDirectory("/").ok());
  EXPECT_EQ(fs_.write_calls(), 3);
}

TEST_F(FaultInjectionFileSystemTest, StopAtCallDoesNothingAndReportsSuccessUntilCrash) {
  fs_.SetFile(kFile, "old");
  fs_.StopAtCall(2);
  ASSERT_TRUE(fs_.WriteFile(kTemp, "new", Mode(0600)).ok());
  EXPECT_TRUE(fs_.SyncFile(kTemp).ok());
  EXPECT_TRUE(fs_.Rename(kTemp, kFile).ok());
  EXPECT_TRUE(fs_.SyncDirectory(kDir).ok());
  EXPECT_TRUE(fs_.RemoveFile("/does/not/exist").ok());
  // Only the first call happened.
  EXPECT_EQ(fs_.ReadFile(kFile).value_or(""), "old");
  EXPECT_EQ(fs_.ReadFile(kTemp).value_or(""), "new");
  EXPECT_EQ(fs_.write_calls(), 5);

  fs_.Crash();
  EXPECT_EQ(fs_.ReadFile(kFile).value_or(""), "old");
  EXPECT_FALSE(fs_.Exists(kTemp));
  // The crash ended the stop: the next process writes normally.
  ASSERT_TRUE(fs_.WriteFile(kTemp, "again", Mode(0600)).ok());
  EXPECT_EQ(fs_.ReadFile(kTemp).value_or(""), "again");
  EXPECT_EQ(fs_.write_calls(), 6);
}

TEST_F(FaultInjectionFileSystemTest, TryLockIsExclusiveAndReleasedOnDestruction) {
  absl::StatusOr<std::unique_ptr<FileSystem::Lock>> lock = fs_.TryLock("/etc/kubernetes/lock");
  ASSERT_TRUE(lock.ok()) << lock.status();
  EXPECT_TRUE(fs_.Exists("/etc/kubernetes/lock"));
  absl::Status second = fs_.TryLock("/etc/kubernetes/lock").status();
  EXPECT_EQ(second.code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(second.message(), "/etc/kubernetes/lock is locked by another holder");
  EXPECT_TRUE(fs_.TryLock("/etc/kubernetes/other-lock").ok());
  lock->reset();
  EXPECT_TRUE(fs_.TryLock("/etc/kubernetes/lock").ok());
  EXPECT_EQ(fs_.TryLock("/var/lock").status().code(), absl::StatusCode::kNotFound);
  // Locking is not a write-side call.
  EXPECT_EQ(fs_.write_calls(), 0);
}

TEST_F(FaultInjectionFileSystemTest, CrashReleasesLocksAndAnOldLockCannotReleaseANewOne) {
  absl::StatusOr<std::unique_ptr<FileSystem::Lock>> before = fs_.TryLock("/etc/kubernetes/lock");
  ASSERT_TRUE(before.ok());
  fs_.Crash();
  absl::StatusOr<std::unique_ptr<FileSystem::Lock>> after = fs_.TryLock("/etc/kubernetes/lock");
  ASSERT_TRUE(after.ok()) << after.status();
  before->reset();
  EXPECT_EQ(fs_.TryLock("/etc/kubernetes/lock").status().code(), absl::StatusCode::kUnavailable);
}

TEST(FaultInjectionFileSystemFromMemoryTest, StartsWithEverythingDurable) {
  MemoryFileSystem memory;
  memory.SetFile(kFile, "manifest", 0600);
  ASSERT_TRUE(memory.CreateDirectory("/etc/kubernetes/tmp", 0700).ok());
  FaultInjectionFileSystem fs(memory);
  fs.Crash();
  EXPECT_EQ(fs.ReadFile(kFile).value_or(""), "manifest");
  EXPECT_EQ(fs.Stat(kFile)->mode, 0600u);
  EXPECT_EQ(fs.Stat("/etc/kubernetes/tmp")->mode, 0700u);
  EXPECT_THAT(fs.ListDirectory("/etc/kubernetes").value(), ElementsAre("manifests", "tmp"));
}

}  // namespace
}  // namespace handoff
