// AtomicReplace, DurableRemove and EnsureDirectory failing, and crashing, at every write-side
// call they make. Each test first runs the operation without faults to learn how many calls it
// makes, then injects at each of them in turn, and checks that it reached every injection point,
// so that a change in the sequence cannot make it skip some silently.
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "common/base/strings.h"
#include "common/fs/atomic_file.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/fault_injection_file_system.h"

namespace handoff {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr char kDir[] = "/etc/kubernetes/manifests";
constexpr char kKcm[] = "/etc/kubernetes/manifests/kube-controller-manager.yaml";
constexpr char kTemp[] = "/etc/kubernetes/manifests/.kube-controller-manager.yaml.handoff-tmp";
constexpr char kApiserver[] = "/etc/kubernetes/manifests/kube-apiserver.yaml";
constexpr char kOld[] = "old: manifest\n";
constexpr char kNew[] = "new: manifest, longer than the old one\n";

enum class Start { kExistingFile, kNewFile, kStaleTemp };

std::string StartName(Start start) {
  switch (start) {
    case Start::kExistingFile:
      return "existing file";
    case Start::kNewFile:
      return "new file";
    case Start::kStaleTemp:
      return "existing file and a stale temp";
  }
  return "";
}

// A manifest directory with another manifest in it and, unless kNewFile, the file to replace.
void SetUpNode(FaultInjectionFileSystem& fs, Start start) {
  fs.SetFile(kApiserver, "apiserver", 0600);
  if (start != Start::kNewFile) fs.SetFile(kKcm, kOld, 0640);
  if (start == Start::kStaleTemp) fs.SetFile(kTemp, "partial", 0644);
}

// The number of write-side calls `operation` makes on `setup`'s state without faults.
int FaultFreeCalls(const std::function<void(FaultInjectionFileSystem&)>& setup,
                   const std::function<absl::Status(FileSystem&)>& operation) {
  FaultInjectionFileSystem fs;
  setup(fs);
  EXPECT_TRUE(operation(fs).ok());
  return fs.write_calls();
}

// Every file in the manifest directory that kubelet would load (no leading ".").
std::vector<std::string> VisibleManifests(const FileSystem& fs) {
  std::vector<std::string> visible;
  const std::vector<std::string> names = fs.ListDirectory(kDir).value();
  for (const std::string& name : names) {
    if (!StartsWith(name, ".")) visible.push_back(name);
  }
  return visible;
}

class AtomicReplaceCrashTest : public ::testing::TestWithParam<Start> {};

TEST_P(AtomicReplaceCrashTest, MakesTheDocumentedCalls) {
  FaultInjectionFileSystem fs;
  SetUpNode(fs, GetParam());
  ASSERT_TRUE(AtomicReplace(fs, kKcm, kNew).ok());
  const std::string temp = kTemp;
  EXPECT_THAT(fs.call_log(),
              ElementsAre("RemoveFile " + temp, "WriteFile " + temp, "SyncFile " + temp,
                          StrCat("Rename ", temp, " ", kKcm), StrCat("SyncDirectory ", kDir)));
  EXPECT_EQ(fs.ReadFile(kKcm).value_or(""), kNew);
  EXPECT_EQ(fs.Stat(kKcm)->mode, GetParam() == Start::kNewFile ? 0600u : 0640u);
  EXPECT_FALSE(fs.Exists(kTemp));
  fs.Crash();
  EXPECT_EQ(fs.ReadFile(kKcm).value_or(""), kNew);
  EXPECT_FALSE(fs.Exists(kTemp));
}

TEST_P(AtomicReplaceCrashTest, FailureAtEachCallLeavesTheOldFile) {
  const Start start = GetParam();
  auto setup = [start](FaultInjectionFileSystem& fs) { SetUpNode(fs, start); };
  auto replace = [](FileSystem& fs) { return AtomicReplace(fs, kKcm, kNew); };
  const int calls = FaultFreeCalls(setup, replace);
  ASSERT_EQ(calls, 5);
  const int rename_call = 4;

  int reached = 0;
  for (int k = 1; k <= calls; ++k) {
    SCOPED_TRACE(StrCat(StartName(start), ", fault at call ", k));
    FaultInjectionFileSystem fs;
    setup(fs);
    fs.FailAtCall(k, /*sticky=*/false);
    absl::Status status = replace(fs);
    if (fs.write_calls() >= k) ++reached;

    ASSERT_FALSE(status.ok());
    EXPECT_EQ(status.code(), absl::StatusCode::kInternal);
    EXPECT_THAT(std::string(status.message()), HasSubstr(StrCat("injected fault at call ", k)));
    EXPECT_THAT(std::string(status.message()),
                HasSubstr(StrCat("replacing ", kKcm, " via ", kTemp)));
    // No temp file is left (but for a stale one whose removal was the call that failed), and
    // nothing else changed.
    if (start == Start::kStaleTemp && k == 1) {
      EXPECT_EQ(fs.ReadFile(kTemp).value_or(""), "partial");
    } else {
      EXPECT_FALSE(fs.Exists(kTemp));
    }
    EXPECT_EQ(fs.ReadFile(kApiserver).value_or(""), "apiserver");
    if (k <= rename_call) {
      // Before the rename took effect: the old file, untouched.
      if (start == Start::kNewFile) {
        EXPECT_FALSE(fs.Exists(kKcm));
      } else {
        EXPECT_EQ(fs.ReadFile(kKcm).value_or(""), kOld);
        EXPECT_EQ(fs.Stat(kKcm)->mode, 0640u);
      }
    } else {
      // The directory sync failed after the rename: the new content is in place but not
      // durable, and the error says so.
      EXPECT_EQ(fs.ReadFile(kKcm).value_or(""), kNew);
      EXPECT_THAT(std::string(status.message()),
                  HasSubstr("holds the new content but fsync of its directory"));
    }

    // After a crash the file is the old one (nothing was made durable), ...
    fs.Crash();
    if (start == Start::kNewFile) {
      EXPECT_FALSE(fs.Exists(kKcm));
    } else {
      EXPECT_EQ(fs.ReadFile(kKcm).value_or(""), kOld);
    }
    // ... and a retry succeeds and is durable.
    ASSERT_TRUE(replace(fs).ok());
    fs.Crash();
    EXPECT_EQ(fs.ReadFile(kKcm).value_or(""), kNew);
    EXPECT_FALSE(fs.Exists(kTemp));
  }
  EXPECT_EQ(reached, calls);
}

TEST_P(AtomicReplaceCrashTest, StickyFailureLeavesAtMostTheDotfileTemp) {
  const Start start = GetParam();
  auto setup = [start](FaultInjectionFileSystem& fs) { SetUpNode(fs, start); };
  const int calls =
      FaultFreeCalls(setup, [](FileSystem& fs) { return AtomicReplace(fs, kKcm, kNew); });

  int reached = 0;
  for (int k = 1; k <= calls; ++k) {
    SCOPED_TRACE(StrCat(StartName(start), ", sticky fault from call ", k));
    FaultInjectionFileSystem fs;
    setup(fs);
    fs.FailAtCall(k, /*sticky=*/true);
    // The removal of the temp after the failure fails too.
    EXPECT_FALSE(AtomicReplace(fs, kKcm, kNew).ok());
    if (fs.write_calls() >= k) ++reached;
    if (start == Start::kNewFile && k < calls) {
      EXPECT_THAT(VisibleManifests(fs), ElementsAre("kube-apiserver.yaml"));
    } else {
      EXPECT_THAT(VisibleManifests(fs),
                  ElementsAre("kube-apiserver.yaml", "kube-controller-manager.yaml"));
    }
    for (const auto& entry : fs.Files()) {
      if (entry.first != kKcm && entry.first != kApiserver) {
        EXPECT_EQ(entry.first, kTemp);
      }
    }
    fs.Crash();
    if (start == Start::kNewFile) {
      EXPECT_FALSE(fs.Exists(kKcm));
    } else {
      EXPECT_EQ(fs.ReadFile(kKcm).value_or(""), kOld);
    }
  }
  EXPECT_EQ(reached, calls);
}

TEST_P(AtomicReplaceCrashTest, CrashAtEachCallLeavesTheOldOrTheNewFileWhole) {
  const Start start = GetParam();
  auto setup = [start](FaultInjectionFileSystem& fs) { SetUpNode(fs, start); };
  auto replace = [](FileSystem& fs) { return AtomicReplace(fs, kKcm, kNew); };
  const int calls = FaultFreeCalls(setup, replace);

  int reached = 0;
  // k == calls + 1: the process dies just after AtomicReplace returned.
  for (int k = 1; k <= calls + 1; ++k) {
    SCOPED_TRACE(StrCat(StartName(start), ", crash before call ", k));
    FaultInjectionFileSystem fs;
    setup(fs);
    fs.StopAtCall(k);
    EXPECT_TRUE(replace(fs).ok());
    if (k <= calls && fs.write_calls() >= k) ++reached;
    fs.Crash();

    absl::StatusOr<std::string> content = fs.ReadFile(kKcm);
    if (k <= calls) {
      // Until the directory sync returned, the new name is not durable: the old file.
      if (start == Start::kNewFile) {
        EXPECT_EQ(content.status().code(), absl::StatusCode::kNotFound);
      } else {
        EXPECT_EQ(content.value_or(""), kOld);
      }
    } else {
      EXPECT_EQ(content.value_or(""), kNew);
    }
    // Whatever else is left over is invisible to the kubelet: only the stale temp from before
    // can survive (its removal was not yet durable).
    if (start == Start::kNewFile && k <= calls) {
      EXPECT_THAT(VisibleManifests(fs), ElementsAre("kube-apiserver.yaml"));
    } else {
      EXPECT_THAT(VisibleManifests(fs),
                  ElementsAre("kube-apiserver.yaml", "kube-controller-manager.yaml"));
    }
    for (const auto& entry : fs.Files()) {
      if (entry.first != kKcm && entry.first != kApiserver) {
        EXPECT_EQ(entry.first, kTemp);
        EXPECT_EQ(start, Start::kStaleTemp);
      }
    }
    // The next run replaces the file, and cleans up a temp from before.
    ASSERT_TRUE(replace(fs).ok());
    fs.Crash();
    EXPECT_EQ(fs.ReadFile(kKcm).value_or(""), kNew);
    EXPECT_FALSE(fs.Exists(kTemp));
  }
  EXPECT_EQ(reached, calls);
}

INSTANTIATE_TEST_SUITE_P(Starts, AtomicReplaceCrashTest,
                         ::testing::Values(Start::kExistingFile, Start::kNewFile,
                                           Start::kStaleTemp),
                         [](const ::testing::TestParamInfo<Start>& param_info) {
                           switch (param_info.param) {
                             case Start::kExistingFile:
                               return std::string("ExistingFile");
                             case Start::kNewFile:
                               return std::string("NewFile");
                             case Start::kStaleTemp:
                               return std::string("StaleTemp");
                           }
                           return std::string();
                         });

// The crash tests above would catch a sequence without the fsync of the temp file.
TEST(AtomicReplaceCrashModelTest, WithoutTheFileSyncACrashCouldLeaveAnEmptyManifest) {
  FaultInjectionFileSystem fs;
  SetUpNode(fs, Start::kExistingFile);
  FileInfo info;
  info.mode = 0640;
  ASSERT_TRUE(fs.WriteFile(kTemp, kNew, info).ok());
  ASSERT_TRUE(fs.Rename(kTemp, kKcm).ok());
  ASSERT_TRUE(fs.SyncDirectory(kDir).ok());
  fs.Crash();
  EXPECT_EQ(fs.ReadFile(kKcm).value_or("missing"), "");
}

// DurableRemove.

void SetUpRemove(FaultInjectionFileSystem& fs) {
  fs.SetFile(kApiserver, "apiserver", 0600);
  fs.SetFile(kKcm, kOld, 0640);
}

TEST(DurableRemoveCrashTest, MakesTheDocumentedCalls) {
  FaultInjectionFileSystem fs;
  SetUpRemove(fs);
  ASSERT_TRUE(DurableRemove(fs, kKcm).ok());
  EXPECT_THAT(fs.call_log(),
              ElementsAre(StrCat("RemoveFile ", kKcm), StrCat("SyncDirectory ", kDir)));
  fs.Crash();
  EXPECT_FALSE(fs.Exists(kKcm));
  // Already absent: still synced, in case an earlier unlink never was.
  ASSERT_TRUE(DurableRemove(fs, kKcm).ok());
  EXPECT_EQ(fs.write_calls(), 4);
}

TEST(DurableRemoveCrashTest, FailureAtEachCall) {
  auto remove = [](FileSystem& fs) { return DurableRemove(fs, kKcm); };
  const int calls = FaultFreeCalls(SetUpRemove, remove);
  ASSERT_EQ(calls, 2);
  int reached = 0;
  for (int k = 1; k <= calls; ++k) {
    SCOPED_TRACE(StrCat("fault at call ", k));
    FaultInjectionFileSystem fs;
    SetUpRemove(fs);
    fs.FailAtCall(k, /*sticky=*/false);
    absl::Status status = remove(fs);
    if (fs.write_calls() >= k) ++reached;
    ASSERT_FALSE(status.ok());
    EXPECT_THAT(std::string(status.message()), HasSubstr(StrCat("removing ", kKcm)));
    EXPECT_THAT(std::string(status.message()), HasSubstr(StrCat("injected fault at call ", k)));
    if (k == 1) {
      EXPECT_EQ(fs.ReadFile(kKcm).value_or(""), kOld);
    } else {
      EXPECT_FALSE(fs.Exists(kKcm));
      EXPECT_THAT(std::string(status.message()), HasSubstr("a crash may bring the file back"));
    }
    // A retry in the same process (the file is already gone at k == 2) makes it durable.
    ASSERT_TRUE(remove(fs).ok());
    fs.Crash();
    EXPECT_FALSE(fs.Exists(kKcm));
    EXPECT_EQ(fs.ReadFile(kApiserver).value_or(""), "apiserver");
  }
  EXPECT_EQ(reached, calls);
}

TEST(DurableRemoveCrashTest, CrashAtEachCallLeavesTheFileWholeOrGone) {
  auto remove = [](FileSystem& fs) { return DurableRemove(fs, kKcm); };
  const int calls = FaultFreeCalls(SetUpRemove, remove);
  int reached = 0;
  for (int k = 1; k <= calls + 1; ++k) {
    SCOPED_TRACE(StrCat("crash before call ", k));
    FaultInjectionFileSystem fs;
    SetUpRemove(fs);
    fs.StopAtCall(k);
    EXPECT_TRUE(remove(fs).ok());
    if (k <= calls && fs.write_calls() >= k) ++reached;
    fs.Crash();
    if (k <= calls) {
      EXPECT_EQ(fs.ReadFile(kKcm).value_or(""), kOld);
    } else {
      EXPECT_FALSE(fs.Exists(kKcm));
    }
    EXPECT_EQ(fs.ReadFile(kApiserver).value_or(""), "apiserver");
  }
  EXPECT_EQ(reached, calls);
}

// EnsureDirectory.

constexpr char kStateDir[] = "/var/lib/handoff/transactions/tx1";
const std::vector<std::string> kComponents = {"/var", "/var/lib", "/var/lib/handoff",
                                              "/var/lib/handoff/transactions", kStateDir};

void SetUpEnsure(FaultInjectionFileSystem& fs) {
  fs.SetFile("/var/lib/kubelet/config.yaml", "kubelet", 0644);
}

// The components that exist form a chain from the top, each a directory; returns how many.
size_t ExistingPrefix(const FileSystem& fs) {
  size_t existing = 0;
  while (existing < kComponents.size() && fs.Exists(kComponents[existing])) ++existing;
  for (size_t i = 0; i < kComponents.size(); ++i) {
    if (i < existing) {
      EXPECT_TRUE(fs.Stat(kComponents[i])->is_directory) << kComponents[i];
    } else {
      EXPECT_FALSE(fs.Exists(kComponents[i])) << kComponents[i];
    }
  }
  return existing;
}

TEST(EnsureDirectoryCrashTest, MakesTheDocumentedCalls) {
  FaultInjectionFileSystem fs;
  SetUpEnsure(fs);
  ASSERT_TRUE(EnsureDirectory(fs, kStateDir).ok());
  EXPECT_THAT(
      fs.call_log(),
      ElementsAre("SyncDirectory /", "SyncDirectory /var", "CreateDirectory /var/lib/handoff",
                  "SyncDirectory /var/lib", "CreateDirectory /var/lib/handoff/transactions",
                  "SyncDirectory /var/lib/handoff", StrCat("CreateDirectory ", kStateDir),
                  "SyncDirectory /var/lib/handoff/transactions"));
  EXPECT_EQ(fs.Stat("/var/lib/handoff")->mode, 0700u);
  EXPECT_EQ(fs.Stat(kStateDir)->mode, 0700u);
  fs.Crash();
  EXPECT_EQ(ExistingPrefix(fs), kComponents.size());
  // Already there: only the syncs.
  ASSERT_TRUE(EnsureDirectory(fs, kStateDir).ok());
  EXPECT_EQ(fs.write_calls(), 8 + 5);
}

TEST(EnsureDirectoryCrashTest, FailureAtEachCallThenRetryIsDurable) {
  auto ensure = [](FileSystem& fs) { return EnsureDirectory(fs, kStateDir); };
  const int calls = FaultFreeCalls(SetUpEnsure, ensure);
  ASSERT_EQ(calls, 8);
  int reached = 0;
  for (int k = 1; k <= calls; ++k) {
    SCOPED_TRACE(StrCat("fault at call ", k));
    FaultInjectionFileSystem fs;
    SetUpEnsure(fs);
    fs.FailAtCall(k, /*sticky=*/false);
    absl::Status status = ensure(fs);
    if (fs.write_calls() >= k) ++reached;
    ASSERT_FALSE(status.ok());
    EXPECT_THAT(std::string(status.message()),
                HasSubstr(StrCat("creating directory ", kStateDir, ": ")));
    EXPECT_THAT(std::string(status.message()), HasSubstr(StrCat("injected fault at call ", k)));
    ExistingPrefix(fs);
    // Retried without a crash in between: a directory made by the failed run whose parent was
    // never synced must not be taken as durable just because it exists.
    ASSERT_TRUE(ensure(fs).ok());
    fs.Crash();
    EXPECT_EQ(ExistingPrefix(fs), kComponents.size());
  }
  EXPECT_EQ(reached, calls);
}

TEST(EnsureDirectoryCrashTest, CrashAtEachCallLeavesAChainFromTheTop) {
  auto ensure = [](FileSystem& fs) { return EnsureDirectory(fs, kStateDir); };
  const int calls = FaultFreeCalls(SetUpEnsure, ensure);
  int reached = 0;
  for (int k = 1; k <= calls + 1; ++k) {
    SCOPED_TRACE(StrCat("crash before call ", k));
    FaultInjectionFileSystem fs;
    SetUpEnsure(fs);
    fs.StopAtCall(k);
    EXPECT_TRUE(ensure(fs).ok());
    if (k <= calls && fs.write_calls() >= k) ++reached;
    fs.Crash();
    const size_t existing = ExistingPrefix(fs);
    EXPECT_GE(existing, 2u);  // /var/lib was there before
    if (k > calls) {
      EXPECT_EQ(existing, kComponents.size());
    }
    EXPECT_EQ(fs.ReadFile("/var/lib/kubelet/config.yaml").value_or(""), "kubelet");
    ASSERT_TRUE(ensure(fs).ok());
    fs.Crash();
    EXPECT_EQ(ExistingPrefix(fs), kComponents.size());
  }
  EXPECT_EQ(reached, calls);
}

}  // namespace
}  // namespace handoff
