#include "rehearsal/kubelet/pod_sync.h"

#include "gtest/gtest.h"

namespace handoff::sandbox {
namespace {

using Action = PodDecision::Action;
using std::chrono::seconds;

const SteadyTime kT0 = SteadyTime() + std::chrono::hours(1);

PodSpec Spec(const std::string& hash) {
  PodSpec spec;
  spec.name = "kcm";
  spec.hash = hash;
  return spec;
}

PodStatus RunningFrom(const std::string& hash) {
  PodStatus status;
  status.running = true;
  status.running_hash = hash;
  return status;
}

TEST(PodSyncTest, WantedAndNotRunningStarts) {
  const PodSpec spec = Spec("h1");
  EXPECT_EQ(DecidePod(&spec, PodStatus(), kT0).action, Action::kStart);
  EXPECT_EQ(DecidePod(nullptr, PodStatus(), kT0).action, Action::kNothing);
}

TEST(PodSyncTest, RunningAsWantedIsLeftAlone) {
  const PodSpec spec = Spec("h1");
  const PodDecision decision = DecidePod(&spec, RunningFrom("h1"), kT0);
  EXPECT_EQ(decision.action, Action::kNothing);
  EXPECT_FALSE(decision.wake_at);
}

TEST(PodSyncTest, ChangedOrRemovedManifestTerminatesThenKillsAfterGrace) {
  const PodSpec spec = Spec("h2");
  for (const PodSpec* desired : {&spec, static_cast<const PodSpec*>(nullptr)}) {
    PodStatus status = RunningFrom("h1");
    PodDecision decision = DecidePod(desired, status, kT0);
    EXPECT_EQ(decision.action, Action::kTerminate);
    EXPECT_EQ(decision.wake_at, kT0 + kStopGracePeriod);

    status.terminate_sent = kT0;
    decision = DecidePod(desired, status, kT0 + seconds(1));
    EXPECT_EQ(decision.action, Action::kNothing);
    EXPECT_EQ(decision.wake_at, kT0 + kStopGracePeriod);

    decision = DecidePod(desired, status, kT0 + kStopGracePeriod);
    EXPECT_EQ(decision.action, Action::kKill);

    status.kill_sent = true;
    decision = DecidePod(desired, status, kT0 + seconds(5));
    EXPECT_EQ(decision.action, Action::kNothing);
    EXPECT_FALSE(decision.wake_at);
  }
}

TEST(PodSyncTest, StopOnceBegunIsFinishedEvenIfTheManifestComesBack) {
  const PodSpec spec = Spec("h1");
  PodStatus status = RunningFrom("h1");
  status.terminate_sent = kT0;
  EXPECT_EQ(DecidePod(&spec, status, kT0 + kStopGracePeriod).action, Action::kKill);
}

TEST(PodSyncTest, CrashedPodRestartsAtOnceThenUnderDoublingBackOff) {
  const PodSpec spec = Spec("h1");
  PodStatus status;
  status.crashed = true;
  // First crash: no back-off yet.
  EXPECT_EQ(DecidePod(&spec, status, kT0).action, Action::kStart);
  status.back_off = NextBackOff(status.back_off, "h1", kT0);
  EXPECT_EQ(status.back_off->period, SteadyDuration(kInitialBackOff));

  // Crashes again 3s later: held until 10s after the last restart.
  PodDecision decision = DecidePod(&spec, status, kT0 + seconds(3));
  EXPECT_EQ(decision.action, Action::kNothing);
  EXPECT_EQ(decision.wake_at, kT0 + seconds(10));
  EXPECT_EQ(DecidePod(&spec, status, kT0 + seconds(10)).action, Action::kStart);
  status.back_off = NextBackOff(status.back_off, "h1", kT0 + seconds(10));
  EXPECT_EQ(status.back_off->period, seconds(20));

  // Doubling stops at the maximum.
  for (int i = 0; i < 10; ++i)
    status.back_off = NextBackOff(status.back_off, "h1", kT0 + seconds(11));
  EXPECT_EQ(status.back_off->period, SteadyDuration(kMaxBackOff));

  // A new manifest is not held back by the old one's back-off, and starts its own afresh.
  const PodSpec changed = Spec("h2");
  EXPECT_EQ(DecidePod(&changed, status, kT0 + seconds(12)).action, Action::kStart);
  EXPECT_EQ(NextBackOff(status.back_off, "h2", kT0 + seconds(12)).period,
            SteadyDuration(kInitialBackOff));
  // Quiet for more than twice the maximum: afresh too.
  EXPECT_EQ(
      NextBackOff(status.back_off, "h1", kT0 + seconds(11) + 2 * kMaxBackOff + seconds(1)).period,
      SteadyDuration(kInitialBackOff));
}

TEST(PodSyncTest, PodStoppedOnPurposeIsNotHeldBack) {
  const PodSpec spec = Spec("h1");
  PodStatus status;
  status.crashed = false;
  status.back_off = CrashBackOff{"h1", kMaxBackOff, kT0};
  EXPECT_EQ(DecidePod(&spec, status, kT0 + seconds(1)).action, Action::kStart);
}

// A real v1.26 kubelet starts a changed static pod's new process only on its pod worker's retry,
// 10 s (jittered) after the old one stopped: the new manifest waits out `restart_not_before`.
TEST(PodSyncTest, AChangedPodStartsOnlyOnceTheRestartDelayHasPassed) {
  const PodSpec changed = Spec("h2");
  PodStatus status;
  status.stopped_hash = "h1";
  status.restart_not_before = kT0 + seconds(12);
  PodDecision decision = DecidePod(&changed, status, kT0 + seconds(1));
  EXPECT_EQ(decision.action, Action::kNothing);
  ASSERT_TRUE(decision.wake_at);
  EXPECT_EQ(*decision.wake_at, kT0 + seconds(12));
  EXPECT_EQ(DecidePod(&changed, status, kT0 + seconds(12)).action, Action::kStart);
}

// The delay holds back a replacing manifest only: the same manifest back (a move undone before
// the new pod started) starts at once. That is the simulated kubelet's rule; the real kubelet's
// timing for it was not measured.
TEST(PodSyncTest, TheSameManifestBackIsNotHeldByTheRestartDelay) {
  const PodSpec same = Spec("h1");
  PodStatus status;
  status.stopped_hash = "h1";
  status.restart_not_before = kT0 + seconds(12);
  EXPECT_EQ(DecidePod(&same, status, kT0 + seconds(1)).action, Action::kStart);
}

}  // namespace
}  // namespace handoff::sandbox
