#include "agent/verify/verifier.h"

#include <atomic>
#include <cctype>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/common/system/fake_proc_tree.h"
#include "tests/common/system/local_http_server.h"
#include "tests/support/fake_clock.h"

namespace handoff {
namespace {

using ::handoff::testing::FakeProcTree;
using ::handoff::testing::LocalHttpServer;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

std::string Message(const absl::Status& status) { return std::string(status.message()); }

ProcessInfo Process(int pid, std::vector<std::string> argv, std::uint64_t start_time) {
  ProcessInfo info;
  info.pid = pid;
  info.argv = std::move(argv);
  info.start_time = start_time;
  return info;
}

// The process list the test sets; it may change it between polls.
class FakeProcessTable : public ProcessTable {
 public:
  absl::StatusOr<std::vector<ProcessInfo>> List() const override {
    ++lists_;
    if (!error_.ok()) return error_;
    return processes_;
  }
  std::vector<ProcessInfo> processes_;
  absl::Status error_;
  mutable int lists_ = 0;
};

// Answers from a script, then `then_` for every further call; records what it was asked.
class FakeHealthChecker : public HealthChecker {
 public:
  absl::Status Check(const HealthEndpoint& endpoint, absl::Duration timeout) override {
    urls_.push_back(endpoint.Url());
    timeouts_.push_back(timeout);
    if (script_.empty()) return then_;
    absl::Status next = script_.front();
    script_.pop_front();
    return next;
  }
  std::deque<absl::Status> script_;
  absl::Status then_;
  std::vector<std::string> urls_;
  std::vector<absl::Duration> timeouts_;
};

// A fake clock that counts its sleeps and lets the test change the world at each one, as the
// kubelet would between two looks.
class PollingClock : public FakeClock {
 public:
  void SleepFor(absl::Duration duration) override {
    FakeClock::SleepFor(duration);
    ++sleeps_;
    if (on_sleep_) on_sleep_(sleeps_);
  }
  int sleeps_ = 0;
  std::function<void(int)> on_sleep_;
};

StaticPod ParsePod(const std::string& yaml) {
  absl::StatusOr<StaticPod> pod = StaticPod::Parse(yaml, "test.yaml");
  EXPECT_TRUE(pod.ok()) << pod.status();
  return *std::move(pod);
}

constexpr char kKcmManifest[] = R"(apiVersion: v1
kind: Pod
metadata:
  name: kube-controller-manager
  namespace: kube-system
spec:
  containers:
  - command:
    - kube-controller-manager
    - --bind-address=127.0.0.1
    - --cloud-provider=aws
    - --leader-elect=true
    image: registry.k8s.io/kube-controller-manager:v1.26.9
    name: kube-controller-manager
  hostNetwork: true
)";

const std::vector<std::string> kKcmArgv = {"kube-controller-manager", "--bind-address=127.0.0.1",
                                           "--cloud-provider=aws", "--leader-elect=true"};

class VerifierTest : public ::testing::Test {
 protected:
  VerifierTest() {
    options_.timeout = absl::Seconds(30);
    options_.poll_interval = absl::Seconds(2);
    options_.health_timeout = absl::Seconds(3);
  }

  ComponentCheck KcmCheck() {
    pod_ = ParsePod(kKcmManifest);
    ComponentCheck check = CheckForManifest("kube-controller-manager", &*pod_, 0);
    check.before = {Process(100, kKcmArgv, 1000)};
    return check;
  }

  absl::Status Wait(const ComponentCheck& check) {
    start_ = clock_.Now();
    Verifier verifier(processes_, health_, clock_, options_);
    return verifier.Wait(check);
  }
  absl::Duration Elapsed() { return clock_.Now() - start_; }

  FakeProcessTable processes_;
  FakeHealthChecker health_;
  PollingClock clock_;
  VerifyOptions options_;
  std::optional<StaticPod> pod_;
  absl::Time start_;
};

TEST_F(VerifierTest, HoldsAtOnceWhenANewProcessRunsTheManifestAndIsHealthy) {
  ComponentCheck check = KcmCheck();
  processes_.processes_ = {Process(1, {"/sbin/init"}, 1), Process(200, kKcmArgv, 5000)};
  EXPECT_TRUE(Wait(check).ok());
  EXPECT_EQ(clock_.sleeps_, 0);
  EXPECT_THAT(health_.urls_, ElementsAre("https://127.0.0.1:10257/healthz"));
  EXPECT_THAT(health_.timeouts_, ElementsAre(absl::Seconds(3)));
}

TEST_F(VerifierTest, WrongArgvNamesPositionExpectedAndFound) {
  ComponentCheck check = KcmCheck();
  processes_.processes_ = {Process(200,
                                   {"kube-controller-manager", "--bind-address=127.0.0.1",
                                    "--cloud-provider=external", "--leader-elect=true"},
                                   5000)};
  absl::Status status = Wait(check);
  EXPECT_EQ(status.code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_THAT(Message(status),
              AllOf(HasSubstr("kube-controller-manager not verified after 30s"),
                    HasSubstr("process 200: argv differs at position 2: expected "
                              "\"--cloud-provider=aws\", found \"--cloud-provider=external\"")));
  EXPECT_THAT(health_.urls_, IsEmpty());
}

TEST_F(VerifierTest, ArgvLengthDifferencesAreReported) {
  ComponentCheck check = KcmCheck();
  options_.timeout = absl::ZeroDuration();
  std::vector<std::string> shorter(kKcmArgv.begin(), kKcmArgv.end() - 1);
  processes_.processes_ = {Process(200, shorter, 5000)};
  EXPECT_THAT(Message(Wait(check)), HasSubstr("argv has 3 items, expected 4 (position 3 should be "
                                              "\"--leader-elect=true\")"));

  std::vector<std::string> longer = kKcmArgv;
  longer.emplace_back("--v=2");
  processes_.processes_ = {Process(200, longer, 5000)};
  EXPECT_THAT(Message(Wait(check)),
              HasSubstr("argv has 5 items, expected 4 (unexpected \"--v=2\" at position 4)"));
}

TEST_F(VerifierTest, OldProcessStillRunningUntilTheTimeout) {
  ComponentCheck check = KcmCheck();
  processes_.processes_ = {Process(100, kKcmArgv, 1000)};
  absl::Status status = Wait(check);
  EXPECT_EQ(status.code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_THAT(Message(status), AllOf(HasSubstr("kube-controller-manager not verified after 30s"),
                                     HasSubstr("old process 100 still running")));
  // A look at 0s, 2s, ... 30s: the last one falls on the deadline.
  EXPECT_EQ(clock_.sleeps_, 15);
  EXPECT_EQ(processes_.lists_, 16);
  EXPECT_EQ(Elapsed(), absl::Seconds(30));
}

TEST_F(VerifierTest, TheLastLookFallsOnTheDeadline) {
  ComponentCheck check = KcmCheck();
  options_.timeout = absl::Seconds(5);
  processes_.processes_ = {Process(100, kKcmArgv, 1000)};
  EXPECT_EQ(Wait(check).code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_EQ(processes_.lists_, 4);  // 0s, 2s, 4s, 5s
  EXPECT_EQ(Elapsed(), absl::Seconds(5));
}

TEST_F(VerifierTest, OldProcessIsIdentifiedByPidAndStartTime) {
  ComponentCheck check = KcmCheck();
  // Same pid, later start time: the pid was reused by the new process.
  processes_.processes_ = {Process(100, kKcmArgv, 9000)};
  EXPECT_TRUE(Wait(check).ok());
}

TEST_F(VerifierTest, OldProcessExitsAndTheNewOneStarts) {
  ComponentCheck check = KcmCheck();
  processes_.processes_ = {Process(100, kKcmArgv, 1000)};
  clock_.on_sleep_ = [&](int sleeps) {
    if (sleeps == 1) processes_.processes_.clear();
    if (sleeps == 2) processes_.processes_ = {Process(300, kKcmArgv, 7000)};
  };
  EXPECT_TRUE(Wait(check).ok());
  EXPECT_EQ(clock_.sleeps_, 2);
  EXPECT_EQ(Elapsed(), absl::Seconds(4));
  EXPECT_EQ(health_.urls_.size(), 1u);
}

TEST_F(VerifierTest, TellsOnceWhenTheOldProcessIsGoneBeforeTheNewOneIsProven) {
  ComponentCheck check = KcmCheck();
  processes_.processes_ = {Process(100, kKcmArgv, 1000)};
  // While someone waits for the proof, the looks come every gone_poll_interval: gone at the look
  // after the third sleep (300ms); then every poll_interval: the new one runs at 2.3s, healthy at
  // 4.3s.
  options_.gone_poll_interval = absl::Milliseconds(100);
  clock_.on_sleep_ = [&](int sleeps) {
    if (sleeps == 3) processes_.processes_.clear();
    if (sleeps == 4) processes_.processes_ = {Process(300, kKcmArgv, 7000)};
  };
  health_.script_ = {absl::UnavailableError("connection refused")};
  std::vector<absl::Duration> told;
  const absl::Time start = clock_.Now();
  Verifier verifier(processes_, health_, clock_, options_);
  EXPECT_TRUE(verifier.Wait(check, [&](absl::Time at) { told.push_back(at - start); }).ok());
  EXPECT_THAT(told, ElementsAre(absl::Milliseconds(300)));
  EXPECT_EQ(clock_.Now() - start, absl::Milliseconds(4300));
}

TEST_F(VerifierTest, NeverTellsWhileTheOldProcessRunsOrWhenThereWasNone) {
  ComponentCheck check = KcmCheck();
  options_.timeout = absl::Seconds(6);
  processes_.processes_ = {Process(100, kKcmArgv, 1000)};
  int told = 0;
  Verifier verifier(processes_, health_, clock_, options_);
  EXPECT_FALSE(verifier.Wait(check, [&](absl::Time) { ++told; }).ok());
  // The process table cannot be read: nothing is proven.
  processes_.error_ = absl::PermissionDeniedError("cannot read /proc");
  EXPECT_FALSE(verifier.Wait(check, [&](absl::Time) { ++told; }).ok());
  // A component that ran no process before has no old process to prove gone.
  processes_.error_ = absl::OkStatus();
  processes_.processes_ = {Process(300, kKcmArgv, 7000)};
  check.before.clear();
  EXPECT_TRUE(verifier.Wait(check, [&](absl::Time) { ++told; }).ok());
  EXPECT_EQ(told, 0);
}

TEST_F(VerifierTest, AnOldProcessPastStopWithinIsHandedOverOnceAndTheWaitGoesOn) {
  ComponentCheck check = KcmCheck();
  check.stop_within = absl::Seconds(5);
  processes_.processes_ = {Process(100, kKcmArgv, 1000), Process(300, kKcmArgv, 7000)};
  std::vector<absl::Duration> called_at;
  std::vector<std::vector<int>> handed;
  const absl::Time start = clock_.Now();
  Verifier verifier(processes_, health_, clock_, options_);
  const absl::Status status =
      verifier.Wait(check, nullptr, [&](const std::vector<ProcessInfo>& left) {
        called_at.push_back(clock_.Now() - start);
        std::vector<int> pids;
        for (const ProcessInfo& process : left) pids.push_back(process.pid);
        handed.push_back(pids);
        processes_.processes_ = {Process(300, kKcmArgv, 7000)};  // what it did ended the old one
        return absl::OkStatus();
      });
  EXPECT_TRUE(status.ok()) << status;
  // Looks at 0, 2 and 4 s found it running within the 5 s; the one at 6 s handed it over, and the
  // look right after found the check holding.
  EXPECT_THAT(called_at, ElementsAre(absl::Seconds(6)));
  EXPECT_THAT(handed, ElementsAre(ElementsAre(100)));
  EXPECT_EQ(clock_.Now() - start, absl::Seconds(6));
}

TEST_F(VerifierTest, AnErrorFromOutlivedEndsTheWaitAndItIsNeverCalledTwice) {
  ComponentCheck check = KcmCheck();
  check.stop_within = absl::Seconds(3);
  processes_.processes_ = {Process(100, kKcmArgv, 1000)};
  Verifier verifier(processes_, health_, clock_, options_);
  int calls = 0;
  // Counts its calls and answers `answer`.
  const auto counted = [&calls](absl::Status answer) {
    return [&calls, answer](const std::vector<ProcessInfo>&) {
      ++calls;
      return answer;
    };
  };
  absl::Status status =
      verifier.Wait(check, nullptr, counted(absl::PermissionDeniedError("cannot be stopped")));
  EXPECT_EQ(status.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(calls, 1);
  // Returning OK without ending it: the wait goes on to its deadline, without a second call.
  status = verifier.Wait(check, nullptr, counted(absl::OkStatus()));
  EXPECT_EQ(status.code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_EQ(calls, 2);
  // Never when the process table cannot be read (nothing is known to run), nor with no
  // stop_within.
  processes_.error_ = absl::PermissionDeniedError("cannot read /proc");
  EXPECT_EQ(verifier.Wait(check, nullptr, counted(absl::OkStatus())).code(),
            absl::StatusCode::kDeadlineExceeded);
  processes_.error_ = absl::OkStatus();
  check.stop_within = absl::ZeroDuration();
  EXPECT_EQ(verifier.Wait(check, nullptr, counted(absl::OkStatus())).code(),
            absl::StatusCode::kDeadlineExceeded);
  EXPECT_EQ(calls, 2);
}

TEST_F(VerifierTest, NoProcess) {
  ComponentCheck check = KcmCheck();
  processes_.processes_ = {Process(1, {"/sbin/init"}, 1)};
  absl::Status status = Wait(check);
  EXPECT_EQ(status.code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_THAT(Message(status), HasSubstr("no kube-controller-manager process running"));
}

TEST_F(VerifierTest, UnhealthyUntilTheTimeout) {
  ComponentCheck check = KcmCheck();
  processes_.processes_ = {Process(200, kKcmArgv, 5000)};
  health_.then_ = absl::UnavailableError("GET https://127.0.0.1:10257/healthz: HTTP 500: [-]ping");
  absl::Status status = Wait(check);
  EXPECT_EQ(status.code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_THAT(Message(status),
              AllOf(HasSubstr("not verified after 30s"),
                    HasSubstr("kube-controller-manager process 200 is not healthy: GET "
                              "https://127.0.0.1:10257/healthz: HTTP 500: [-]ping")));
  EXPECT_EQ(health_.urls_.size(), 16u);
}

TEST_F(VerifierTest, BecomesHealthyAfterSomePolls) {
  ComponentCheck check = KcmCheck();
  processes_.processes_ = {Process(200, kKcmArgv, 5000)};
  health_.script_ = {absl::UnavailableError("refused"), absl::UnavailableError("refused"),
                     absl::UnavailableError("HTTP 500")};
  EXPECT_TRUE(Wait(check).ok());
  EXPECT_EQ(health_.urls_.size(), 4u);
  EXPECT_EQ(processes_.lists_, 4);
  EXPECT_EQ(clock_.sleeps_, 3);
  EXPECT_EQ(Elapsed(), absl::Seconds(6));
}

TEST_F(VerifierTest, ProcessListErrorsAreRetriedAndReported) {
  ComponentCheck check = KcmCheck();
  processes_.error_ = absl::PermissionDeniedError("opendir /proc: Permission denied");
  absl::Status status = Wait(check);
  EXPECT_EQ(status.code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_THAT(Message(status),
              HasSubstr("cannot list processes: opendir /proc: Permission denied"));
  EXPECT_EQ(processes_.lists_, 16);
}

TEST_F(VerifierTest, RemovedComponentHoldsOnceItsProcessIsGone) {
  ComponentCheck check = CheckForManifest("cloud-controller-manager", nullptr, 0);
  EXPECT_FALSE(check.present);
  EXPECT_FALSE(check.health.has_value());
  EXPECT_THAT(check.binaries,
              ElementsAre("aws-cloud-controller-manager", "cloud-controller-manager"));
  const ProcessInfo ccm = Process(400, {"/bin/aws-cloud-controller-manager", "--v=2"}, 3000);
  check.before = {ccm};
  processes_.processes_ = {ccm};
  clock_.on_sleep_ = [&](int sleeps) {
    if (sleeps == 3) processes_.processes_.clear();
  };
  EXPECT_TRUE(Wait(check).ok());
  EXPECT_EQ(clock_.sleeps_, 3);
  EXPECT_THAT(health_.urls_, IsEmpty());
}

TEST_F(VerifierTest, RemovedComponentStillRunningTimesOut) {
  ComponentCheck check = CheckForManifest("cloud-controller-manager", nullptr, 0);
  // Not in `before` (say it restarted meanwhile): still a process of the removed component.
  processes_.processes_ = {Process(401, {"cloud-controller-manager"}, 3000)};
  absl::Status status = Wait(check);
  EXPECT_EQ(status.code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_THAT(Message(status), HasSubstr("cloud-controller-manager process 401 still running"));
}

TEST_F(VerifierTest, KubeletNeedsEachFlagSomewhereInItsArgv) {
  ComponentCheck check = CheckForKubelet({"--cloud-provider=external", "--node-ip=10.0.0.5"});
  EXPECT_EQ(check.component, "kubelet");
  EXPECT_THAT(check.binaries, ElementsAre("kubelet"));
  EXPECT_TRUE(check.args_subset);
  ASSERT_TRUE(check.health.has_value());
  EXPECT_EQ(check.health->Url(), "http://127.0.0.1:10248/healthz");

  check.before = {Process(50, {"/usr/bin/kubelet", "--cloud-provider=aws"}, 10)};
  // The unit adds flags of its own, in any order.
  processes_.processes_ = {Process(
      60,
      {"/usr/bin/kubelet", "--bootstrap-kubeconfig=/etc/kubernetes/bootstrap-kubelet.conf",
       "--node-ip=10.0.0.5", "--config=/var/lib/kubelet/config.yaml", "--cloud-provider=external"},
      20)};
  EXPECT_TRUE(Wait(check).ok());
  EXPECT_THAT(health_.urls_, ElementsAre("http://127.0.0.1:10248/healthz"));

  processes_.processes_ = {Process(60, {"/usr/bin/kubelet", "--node-ip=10.0.0.5"}, 20)};
  options_.timeout = absl::ZeroDuration();
  EXPECT_THAT(Message(Wait(check)),
              HasSubstr("kubelet process 60: argv lacks \"--cloud-provider=external\""));
}

TEST_F(VerifierTest, RunningListsOnlyTheComponentsProcesses) {
  processes_.processes_ = {
      Process(1, {"/sbin/init"}, 1), Process(10, {"/bin/aws-cloud-controller-manager", "--v=2"}, 2),
      Process(11, {"kube-controller-manager"}, 3), Process(12, {"cloud-controller-manager"}, 4),
      Process(13, {"/usr/bin/cloud-controller-manager-helper"}, 5)};
  Verifier verifier(processes_, health_, clock_, options_);
  absl::StatusOr<std::vector<ProcessInfo>> running =
      verifier.Running(CheckForManifest("cloud-controller-manager", nullptr, 0));
  ASSERT_TRUE(running.ok()) << running.status();
  ASSERT_EQ(running->size(), 2u);
  EXPECT_EQ((*running)[0].pid, 10);
  EXPECT_EQ((*running)[1].pid, 12);
}

// --- CheckForManifest: argv, binaries and the health endpoint per component.

std::string Manifest(const std::string& name, const std::string& container_fields) {
  return "apiVersion: v1\nkind: Pod\nmetadata:\n  name: " + name +
         "\n  namespace: kube-system\nspec:\n  containers:\n  - name: " + name +
         "\n    image: example/" + name + ":v1\n" + container_fields;
}

struct HealthCase {
  std::string component;
  std::string container_fields;
  std::string url;
};

class CheckForManifestHealthTest : public ::testing::TestWithParam<HealthCase> {};

TEST_P(CheckForManifestHealthTest, Endpoint) {
  const HealthCase& c = GetParam();
  StaticPod pod = ParsePod(Manifest(c.component, c.container_fields));
  ComponentCheck check = CheckForManifest(c.component, &pod, 0);
  EXPECT_EQ(check.component, c.component);
  EXPECT_TRUE(check.present);
  if (c.url.empty()) {
    EXPECT_FALSE(check.health.has_value());
  } else {
    ASSERT_TRUE(check.health.has_value());
    EXPECT_EQ(check.health->Url(), c.url);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Components, CheckForManifestHealthTest,
    ::testing::Values(
        // Defaults.
        HealthCase{"kube-controller-manager", "    command: [kube-controller-manager]\n",
                   "https://127.0.0.1:10257/healthz"},
        HealthCase{"cloud-controller-manager", "    args: [--cloud-provider=aws]\n",
                   "https://127.0.0.1:10258/healthz"},
        HealthCase{"kube-scheduler", "    command: [kube-scheduler]\n",
                   "https://127.0.0.1:10259/healthz"},
        HealthCase{"kube-apiserver", "    command: [kube-apiserver]\n",
                   "https://127.0.0.1:6443/livez"},
        // Wildcard bind addresses are reached on loopback.
        HealthCase{"kube-controller-manager",
                   "    command: [kube-controller-manager, --bind-address=0.0.0.0]\n",
                   "https://127.0.0.1:10257/healthz"},
        HealthCase{"kube-scheduler", "    command: [kube-scheduler, '--bind-address=::']\n",
                   "https://127.0.0.1:10259/healthz"},
        // Overrides, in every flag form, in command or args.
        HealthCase{"kube-controller-manager",
                   "    command: [kube-controller-manager, --secure-port=11257, "
                   "--bind-address=10.0.0.5]\n",
                   "https://10.0.0.5:11257/healthz"},
        HealthCase{"cloud-controller-manager",
                   "    args: [--secure-port, '10300', --bind-address, 'fd00::5']\n",
                   "https://[fd00::5]:10300/healthz"},
        HealthCase{"kube-apiserver",
                   "    command: [kube-apiserver]\n    args: [--secure-port=8443, "
                   "--advertise-address=10.0.0.5, --bind-address=127.0.0.2]\n",
                   "https://127.0.0.2:8443/livez"},
        // --secure-port=0 serves nothing; etcd has no endpoint known here.
        HealthCase{"kube-scheduler", "    command: [kube-scheduler, --secure-port=0]\n", ""},
        HealthCase{"etcd", "    command: [etcd, --listen-metrics-urls=http://127.0.0.1:2381]\n",
                   ""}),
    [](const ::testing::TestParamInfo<HealthCase>& param) {
      std::string name = std::to_string(param.index) + "_" + param.param.component;
      for (char& ch : name) {
        if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
      }
      return name;
    });

TEST(CheckForManifestTest, CommandGivesArgvAndTheBinaryByBasename) {
  StaticPod pod = ParsePod(Manifest("kube-controller-manager",
                                    "    command:\n    - /usr/local/bin/kube-controller-manager\n"
                                    "    - --v=2\n    args:\n    - --leader-elect=true\n"));
  ComponentCheck check = CheckForManifest("kube-controller-manager", &pod, 0);
  EXPECT_THAT(check.binaries, ElementsAre("kube-controller-manager"));
  EXPECT_THAT(check.command, ElementsAre("/usr/local/bin/kube-controller-manager", "--v=2"));
  EXPECT_THAT(check.args, ElementsAre("--leader-elect=true"));
  EXPECT_FALSE(check.args_subset);
  EXPECT_TRUE(check.before.empty());
}

TEST(CheckForManifestTest, PicksTheNamedContainer) {
  StaticPod pod = ParsePod(
      "apiVersion: v1\nkind: Pod\nmetadata: {name: kube-apiserver}\nspec:\n  containers:\n"
      "  - {name: sidecar, image: busybox, command: [sleep, infinity]}\n"
      "  - {name: kube-apiserver, image: k8s/kube-apiserver, command: [kube-apiserver, "
      "--secure-port=7443]}\n");
  ComponentCheck check = CheckForManifest("kube-apiserver", &pod, 1);
  EXPECT_THAT(check.command, ElementsAre("kube-apiserver", "--secure-port=7443"));
  EXPECT_THAT(check.binaries, ElementsAre("kube-apiserver"));
  ASSERT_TRUE(check.health.has_value());
  EXPECT_EQ(check.health->Url(), "https://127.0.0.1:7443/livez");
}

TEST(CheckForManifestTest, MissingContainerGivesAnEmptyArgvAndNoHealth) {
  StaticPod pod = ParsePod("apiVersion: v1\nkind: Pod\nmetadata: {name: x}\n");
  ComponentCheck check = CheckForManifest("kube-scheduler", &pod, 3);
  EXPECT_TRUE(check.present);
  EXPECT_THAT(check.command, IsEmpty());
  EXPECT_THAT(check.binaries, ElementsAre("kube-scheduler"));
  EXPECT_FALSE(check.health.has_value());
}

TEST(CheckForManifestTest, RemovedComponentIsIdentifiedByItsName) {
  ComponentCheck check = CheckForManifest("kube-scheduler", nullptr, 0);
  EXPECT_FALSE(check.present);
  EXPECT_THAT(check.binaries, ElementsAre("kube-scheduler"));
  EXPECT_THAT(check.args, IsEmpty());
}

// The cloud-controller-manager template sets only `args`; the AWS image's entrypoint
// (/bin/aws-cloud-controller-manager) is argv[0].
TEST_F(VerifierTest, CloudControllerManagerWithArgsOnly) {
  StaticPod pod = ParsePod(
      Manifest("cloud-controller-manager",
               "    args:\n    - --cloud-provider=aws\n    - --leader-elect=true\n    - --v=2\n"));
  ComponentCheck check = CheckForManifest("cloud-controller-manager", &pod, 0);
  EXPECT_THAT(check.command, IsEmpty());
  EXPECT_THAT(check.args, ElementsAre("--cloud-provider=aws", "--leader-elect=true", "--v=2"));
  EXPECT_THAT(check.binaries,
              ElementsAre("aws-cloud-controller-manager", "cloud-controller-manager"));

  processes_.processes_ = {Process(
      500,
      {"/bin/aws-cloud-controller-manager", "--cloud-provider=aws", "--leader-elect=true", "--v=2"},
      8000)};
  EXPECT_TRUE(Wait(check).ok());
  EXPECT_THAT(health_.urls_, ElementsAre("https://127.0.0.1:10258/healthz"));

  processes_.processes_ = {Process(500,
                                   {"/bin/aws-cloud-controller-manager", "--cloud-provider=aws",
                                    "--leader-elect=false", "--v=2"},
                                   8000)};
  options_.timeout = absl::ZeroDuration();
  EXPECT_THAT(Message(Wait(check)),
              HasSubstr("argv differs at position 2: expected \"--leader-elect=true\", found "
                        "\"--leader-elect=false\""));
}

// End to end: the real /proc reader on a fake /proc tree, the real libcurl checker and a local
// HTTPS server; only time is fake.
TEST(VerifierEndToEndTest, RestartedControllerManagerIsVerified) {
  LocalHttpServer server(LocalHttpServer::Scheme::kHttps);
  std::atomic<int> healthz_requests{0};
  server.server().Get("/healthz", [&](const httplib::Request&, httplib::Response& response) {
    ++healthz_requests;
    response.set_content("ok", "text/plain");
  });
  server.Start();

  StaticPod pod = ParsePod(
      Manifest("kube-controller-manager",
               "    command:\n    - kube-controller-manager\n    - --bind-address=127.0.0.1\n"
               "    - --secure-port=" +
                   std::to_string(server.port()) + "\n    - --cloud-provider=external\n"));
  ComponentCheck check = CheckForManifest("kube-controller-manager", &pod, 0);

  FakeProcTree proc;
  proc.AddProcess(1, {"/sbin/init"}, 1, "systemd");
  proc.AddProcess(2, {}, 1, "kthreadd");
  proc.AddProcess(4000,
                  {"kube-controller-manager", "--bind-address=127.0.0.1", "--cloud-provider=aws"},
                  1000, "kube-controller");
  std::unique_ptr<ProcessTable> processes = NewProcfsProcessTable(proc.root());
  std::unique_ptr<HealthChecker> health = NewCurlHealthChecker();
  PollingClock clock;
  VerifyOptions options;
  options.timeout = absl::Minutes(5);
  options.poll_interval = absl::Seconds(1);
  options.health_timeout = absl::Seconds(10);
  Verifier verifier(*processes, *health, clock, options);

  absl::StatusOr<std::vector<ProcessInfo>> before = verifier.Running(check);
  ASSERT_TRUE(before.ok()) << before.status();
  ASSERT_EQ(before->size(), 1u);
  check.before = *before;

  // The kubelet stops the old container, then starts the new one with the manifest's argv.
  clock.on_sleep_ = [&](int sleeps) {
    if (sleeps == 1) proc.RemoveProcess(4000);
    if (sleeps == 2) proc.AddProcess(4100, pod.Argv(0), 2000, "kube-controller");
  };
  absl::Status status = verifier.Wait(check);
  EXPECT_TRUE(status.ok()) << status;
  EXPECT_EQ(clock.sleeps_, 2);
  EXPECT_EQ(healthz_requests, 1);
}

// The same, with a wrong argv on the real table: the message says where.
TEST(VerifierEndToEndTest, WrongFlagOnTheRealTableIsReported) {
  FakeProcTree proc;
  proc.AddProcess(4100, {"kube-scheduler", "--secure-port=0", "--v=4"}, 2000);
  StaticPod pod = ParsePod(
      Manifest("kube-scheduler", "    command: [kube-scheduler, --secure-port=0, --v=2]\n"));
  ComponentCheck check = CheckForManifest("kube-scheduler", &pod, 0);
  std::unique_ptr<ProcessTable> processes = NewProcfsProcessTable(proc.root());
  FakeHealthChecker health;
  FakeClock clock;
  VerifyOptions options;
  options.timeout = absl::Seconds(10);
  Verifier verifier(*processes, health, clock, options);
  absl::Status status = verifier.Wait(check);
  EXPECT_EQ(status.code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_THAT(Message(status),
              HasSubstr("argv differs at position 2: expected \"--v=2\", found \"--v=4\""));
}

}  // namespace
}  // namespace handoff
