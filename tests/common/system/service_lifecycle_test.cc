#include "common/system/service_lifecycle.h"

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <thread>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/common/system/fake_service_notifier.h"

namespace handoff {
namespace {

using ::handoff::testing::FakeServiceNotifier;
using ::handoff::testing::RecordingSink;
using ::testing::ElementsAre;

struct Started {
  std::shared_ptr<RecordingSink> sink = std::make_shared<RecordingSink>();
  std::unique_ptr<ServiceLifecycle> lifecycle;
};

Started StartLifecycle(ServiceNotifier& notifier, const std::string& stop_means = "the test ends") {
  Started started;
  ServiceLifecycleOptions options;
  options.logger = std::make_shared<spdlog::logger>("test", started.sink);
  options.stop_means = stop_means;
  absl::StatusOr<std::unique_ptr<ServiceLifecycle>> lifecycle =
      ServiceLifecycle::Start(std::move(options), notifier);
  EXPECT_TRUE(lifecycle.ok()) << lifecycle.status();
  if (lifecycle.ok()) started.lifecycle = *std::move(lifecycle);
  return started;
}

// The body of the death test below, in a process of its own (signals are process-wide): exits 0
// when everything held, else with the number of the check that failed.
[[noreturn]] void SignalTwice() {
  FakeServiceNotifier notifier;
  Started started = StartLifecycle(notifier);
  ServiceLifecycle& lifecycle = *started.lifecycle;
  std::atomic<int> stops{0};
  lifecycle.SetOnStop([&stops] { ++stops; });
  kill(getpid(), SIGTERM);
  if (!lifecycle.shutdown().WaitTimeoutOrShutdown(absl::Seconds(30))) std::exit(10);
  if (!started.sink->WaitFor("SIGTERM: stopping; the test ends")) std::exit(11);
  kill(getpid(), SIGINT);
  if (!started.sink->WaitFor("SIGINT: already stopping; the test ends")) std::exit(12);
  if (stops.load() != 1) std::exit(13);
  if (notifier.sent() != std::vector<std::string>{"STOPPING=1\nSTATUS=stopping; the test ends"}) {
    std::exit(14);
  }
  started.lifecycle.reset();  // restores the mask: a signal it had left pending would end this
  for (const std::string& line : started.sink->lines()) std::cerr << line << "\n";
  std::exit(0);
}

TEST(ServiceLifecycleDeathTest, TheFirstSignalStopsAndTellsSystemdAFurtherOneIsOnlyLogged) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(SignalTwice(), ::testing::ExitedWithCode(0),
              "SIGTERM: stopping; the test ends\nSIGINT: already stopping; the test ends");
}

TEST(ServiceLifecycleTest, ARequestedShutdownIsLoggedAndToldLikeASignal) {
  FakeServiceNotifier notifier;
  Started started = StartLifecycle(notifier, "the pods keep running");
  ServiceLifecycle& lifecycle = *started.lifecycle;
  int stops = 0;
  lifecycle.SetOnStop([&stops] { ++stops; });
  EXPECT_FALSE(lifecycle.shutdown().Requested());
  lifecycle.RequestShutdown("the coordinator asked");
  lifecycle.RequestShutdown("again");
  EXPECT_TRUE(lifecycle.shutdown().Requested());
  EXPECT_EQ(stops, 1);
  EXPECT_THAT(started.sink->lines(),
              ElementsAre("the coordinator asked: stopping; the pods keep running",
                          "again: already stopping; the pods keep running"));
  EXPECT_THAT(notifier.sent(), ElementsAre("STOPPING=1\nSTATUS=stopping; the pods keep running"));
}

TEST(ServiceLifecycleTest, AStopHookSetAfterTheStopRunsAtOnce) {
  FakeServiceNotifier notifier;
  Started started = StartLifecycle(notifier);
  started.lifecycle->RequestShutdown("test");
  int stops = 0;
  started.lifecycle->SetOnStop([&stops] { ++stops; });
  EXPECT_EQ(stops, 1);
  started.lifecycle->SetOnStop(nullptr);
}

TEST(ServiceLifecycleTest, ReadyIsSentOnceThenOnlyTheStatusOnOneLine) {
  FakeServiceNotifier notifier;
  Started started = StartLifecycle(notifier);
  started.lifecycle->Status("reading the command log");
  started.lifecycle->Ready("connected to the coordinator");
  started.lifecycle->Ready("not connected\nretrying");
  started.lifecycle->Status("serving on port 7450");
  EXPECT_THAT(notifier.sent(), ElementsAre("STATUS=reading the command log",
                                           "READY=1\nSTATUS=connected to the coordinator",
                                           "STATUS=not connected retrying",
                                           "STATUS=serving on port 7450"));
}

TEST(ServiceLifecycleTest, WithoutAWatchdogNothingIsSentForIt) {
  FakeServiceNotifier notifier;
  Started started = StartLifecycle(notifier);
  EXPECT_EQ(started.lifecycle->watchdog_interval(), absl::InfiniteDuration());
  started.lifecycle->Alive();
  EXPECT_FALSE(started.lifecycle->WaitTimeoutOrShutdown(absl::Milliseconds(1)));
  EXPECT_TRUE(notifier.sent().empty());
}

TEST(ServiceLifecycleTest, TheMainLoopsWaitFeedsTheWatchdogUntilTheStop) {
  // A wait with no end returns only on a stop, and the stop comes only from the third
  // WATCHDOG=1: the wait must have sent them.
  FakeServiceNotifier notifier(absl::Milliseconds(1));
  Started started = StartLifecycle(notifier);
  ServiceLifecycle& lifecycle = *started.lifecycle;
  std::atomic<int> watchdogs{0};
  notifier.set_on_notify([&](const std::string& sent) {
    if (sent == "WATCHDOG=1" && ++watchdogs == 3) lifecycle.RequestShutdown("test");
  });
  EXPECT_TRUE(lifecycle.WaitTimeoutOrShutdown(absl::InfiniteDuration()));
  EXPECT_EQ(watchdogs.load(), 3);
  EXPECT_THAT(notifier.sent(), ElementsAre("WATCHDOG=1", "WATCHDOG=1", "WATCHDOG=1",
                                           "STOPPING=1\nSTATUS=stopping; the test ends"));
  notifier.set_on_notify(nullptr);
}

TEST(ServiceLifecycleTest, TheSignalMaskIsRestoredWhenItEnds) {
  sigset_t before;
  pthread_sigmask(SIG_SETMASK, nullptr, &before);
  ASSERT_FALSE(sigismember(&before, SIGTERM));
  FakeServiceNotifier notifier;
  {
    Started started = StartLifecycle(notifier);
    sigset_t during;
    pthread_sigmask(SIG_SETMASK, nullptr, &during);
    EXPECT_TRUE(sigismember(&during, SIGTERM));
    EXPECT_TRUE(sigismember(&during, SIGINT));
  }
  sigset_t after;
  pthread_sigmask(SIG_SETMASK, nullptr, &after);
  EXPECT_FALSE(sigismember(&after, SIGTERM));
}

}  // namespace
}  // namespace handoff
