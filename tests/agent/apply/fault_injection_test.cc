// Crash safety of a move: a failure, or a kill that loses everything not yet durable, at every
// write-side file-system call of every transition in both directions. After recovery the node is
// wholly in the old state or wholly in the new one, and every backup matches what it backs up.
#include <sstream>

#include "agent/apply/applier.h"
#include "agent/engine/classify.h"
#include "common/base/strings.h"
#include "gtest/gtest.h"
#include "tests/agent/apply/fake_kubelet.h"
#include "tests/agent/engine/node_fixture.h"
#include "tests/support/fake_clock.h"
#include "tests/support/fault_injection_file_system.h"

namespace handoff {
namespace {

using testing::FakeKubelet;
using testing::LoadNode;

using testing::KubeadmSettings;

// The node's files, without handoff's own state (journals, backups, lock).
std::map<std::string, std::string> NodeFiles(const FaultInjectionFileSystem& fs) {
  std::map<std::string, std::string> files = fs.Files();
  for (auto it = files.begin(); it != files.end();) {
    it = StartsWith(it->first, "/var/lib/handoff/transactions/") ||
                 it->first == "/var/lib/handoff/lock"
             ? files.erase(it)
             : std::next(it);
  }
  return files;
}

struct Transition {
  NodeState from;
  NodeState to;
};

std::string Name(const ::testing::TestParamInfo<Transition>& info) {
  std::string name = StrCat(NodeStateName(info.param.from), "_to_", NodeStateName(info.param.to));
  for (char& c : name) {
    if (c == '-') c = '_';
  }
  return name;
}

void PrintTo(const Transition& transition, std::ostream* os) {
  *os << NodeStateName(transition.from) << " -> " << NodeStateName(transition.to);
}

class FaultInjectionTest : public ::testing::TestWithParam<Transition> {
 protected:
  // The kubeadm fixture brought to `state` without faults, along the downtime path when
  // `downtime` is set (else the Leader Migration path).
  static FaultInjectionFileSystem NodeIn(NodeState state, bool downtime) {
    FaultInjectionFileSystem fs(LoadNode("kubeadm"));
    const std::vector<NodeState> path =
        downtime ? std::vector<NodeState>{NodeState::kStopped, NodeState::kExternal,
                                          NodeState::kFinalized}
                 : std::vector<NodeState>{NodeState::kPrepared, NodeState::kMigrated,
                                          NodeState::kFinalized};
    if (state == NodeState::kInTree) return fs;
    for (NodeState step : path) {
      Run(fs, [&](Applier& applier) { EXPECT_TRUE(applier.Apply(step).ok()); });
      if (step == state) break;
    }
    return fs;
  }

  template <typename Action>
  static void Run(FaultInjectionFileSystem& fs, Action action) {
    FakeKubelet kubelet(fs, KubeadmSettings().paths);
    FakeClock clock;
    std::ostringstream log;
    ApplyOptions options;
    options.verify = false;  // verification has its own tests; here every write call matters
    Applier applier(Host{fs, kubelet, kubelet, clock, kubelet, kubelet}, KubeadmSettings(), options,
                    log);
    action(applier);
  }

  static NodeState StateOf(const FileSystem& fs) {
    absl::StatusOr<NodeSnapshot> snapshot = ReadNodeSnapshot(fs, KubeadmSettings().paths);
    EXPECT_TRUE(snapshot.ok());
    return Classify(*snapshot).state;
  }

  // Backups of every recorded transaction still hold the content their entry had before it.
  static void ExpectBackupsMatch(const FaultInjectionFileSystem& fs,
                                 const std::map<std::string, std::string>& before) {
    absl::StatusOr<std::vector<Journal>> journals = ListTransactions(fs, "/var/lib/handoff");
    ASSERT_TRUE(journals.ok());
    for (const Journal& journal : *journals) {
      if (journal.phase == kPhaseCommitted) continue;  // earlier, fault-free moves
      for (size_t i = 0; i < journal.entries.size(); ++i) {
        const JournalEntry& entry = journal.entries[i];
        if (!entry.existed) continue;
        absl::StatusOr<std::string> backup =
            fs.ReadFile(BackupPath("/var/lib/handoff", journal.id, i));
        ASSERT_TRUE(backup.ok()) << journal.id << " entry " << i;
        EXPECT_EQ(*backup, before.at(entry.path)) << "backup of " << entry.path;
      }
    }
  }
};

TEST_P(FaultInjectionTest, EveryWriteCallFailingOrCrashingLeavesTheNodeWholeAfterRecovery) {
  const Transition transition = GetParam();
  // A node reaches prepared and migrated only along the Leader Migration path, stopped and
  // external only along the downtime path.
  const bool leader_migration =
      transition.from == NodeState::kPrepared || transition.from == NodeState::kMigrated;
  const FaultInjectionFileSystem start = NodeIn(
      transition.from,
      !leader_migration && (IsDowntimeState(transition.from) || IsDowntimeState(transition.to)));
  const std::map<std::string, std::string> old_files = NodeFiles(start);

  // A fault-free run tells how many write calls the move makes and what the new node looks like.
  FaultInjectionFileSystem clean = start;
  const int calls_before = clean.write_calls();
  Run(clean, [&](Applier& applier) {
    absl::StatusOr<ApplyReport> report = applier.Apply(transition.to);
    ASSERT_TRUE(report.ok() && report->ok());
  });
  const int calls = clean.write_calls() - calls_before;
  const std::map<std::string, std::string> new_files = NodeFiles(clean);
  ASSERT_EQ(StateOf(clean), transition.to);
  ASSERT_GT(calls, 5);

  int failures_reached = 0;
  int crashes_reached = 0;
  for (int k = 1; k <= calls; ++k) {
    SCOPED_TRACE(StrCat("write call ", k, " of ", calls));
    // (a) The call fails, and so does every later one: the move stops and its undo cannot run;
    // a later recovery (with a working disk) leaves the node whole. That is the old node, unless
    // only the last sync of the commit mark failed, when every change is already in place.
    {
      FaultInjectionFileSystem fs = start;
      fs.FailAtCall(calls_before + k, /*sticky=*/true);
      Run(fs, [&](Applier& applier) {
        absl::StatusOr<ApplyReport> report = applier.Apply(transition.to);
        EXPECT_TRUE(!report.ok() || !report->ok())
            << "the fault at call " << k << " went unnoticed";
      });
      if (fs.write_calls() >= calls_before + k) ++failures_reached;
      fs.ClearFaults();
      Run(fs, [&](Applier& applier) {
        absl::StatusOr<std::vector<std::string>> recovered = applier.Recover();
        ASSERT_TRUE(recovered.ok()) << recovered.status();
      });
      const std::map<std::string, std::string> now = NodeFiles(fs);
      if (k < calls) {
        EXPECT_EQ(now, old_files);
        EXPECT_EQ(StateOf(fs), transition.from);
      } else {
        EXPECT_TRUE(now == old_files || now == new_files);
      }
      ExpectBackupsMatch(fs, old_files);
    }
    // (b) The process dies just before the call and the machine loses what was not durable.
    {
      FaultInjectionFileSystem fs = start;
      fs.StopAtCall(calls_before + k);
      Run(fs, [&](Applier& applier) { (void)applier.Apply(transition.to); });
      if (fs.write_calls() >= calls_before + k) ++crashes_reached;
      fs.Crash();
      fs.ClearFaults();
      Run(fs, [&](Applier& applier) {
        absl::StatusOr<std::vector<std::string>> recovered = applier.Recover();
        ASSERT_TRUE(recovered.ok()) << recovered.status();
      });
      const std::map<std::string, std::string> now = NodeFiles(fs);
      EXPECT_TRUE(now == old_files || now == new_files)
          << "after a crash at call " << k << " the node is neither the old nor the new one";
      const NodeState state = StateOf(fs);
      EXPECT_TRUE(state == transition.from || state == transition.to) << NodeStateName(state);
      ExpectBackupsMatch(fs, old_files);
    }
  }
  // Every injection point was reached: a run that skipped some could not prove anything.
  EXPECT_EQ(failures_reached, calls);
  EXPECT_EQ(crashes_reached, calls);
}

INSTANTIATE_TEST_SUITE_P(Transitions, FaultInjectionTest,
                         ::testing::Values(Transition{NodeState::kInTree, NodeState::kPrepared},
                                           Transition{NodeState::kPrepared, NodeState::kMigrated},
                                           Transition{NodeState::kMigrated, NodeState::kFinalized},
                                           Transition{NodeState::kFinalized, NodeState::kMigrated},
                                           Transition{NodeState::kMigrated, NodeState::kPrepared},
                                           Transition{NodeState::kPrepared, NodeState::kInTree},
                                           // The downtime path: the parked manifest (in a
                                           // directory the first park creates) is one more file.
                                           Transition{NodeState::kInTree, NodeState::kStopped},
                                           Transition{NodeState::kStopped, NodeState::kExternal},
                                           Transition{NodeState::kExternal, NodeState::kFinalized},
                                           Transition{NodeState::kFinalized, NodeState::kExternal},
                                           Transition{NodeState::kExternal, NodeState::kStopped},
                                           Transition{NodeState::kStopped, NodeState::kInTree},
                                           // Between the paths: the cloud-controller-manager
                                           // with Leader Migration and its file.
                                           Transition{NodeState::kExternal, NodeState::kMigrated},
                                           Transition{NodeState::kMigrated, NodeState::kExternal}),
                         Name);

}  // namespace
}  // namespace handoff
