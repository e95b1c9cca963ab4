// Shared helpers for the daemon tests: commands as the coordinator sends them, and a fixture
// node (the kubeadm one) with its fake kubelet, a fake clock and a NodeAgent on top.
#ifndef HANDOFF_TESTS_AGENT_DAEMON_DAEMON_FIXTURE_H_
#define HANDOFF_TESTS_AGENT_DAEMON_DAEMON_FIXTURE_H_

#include <condition_variable>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

#include "agent/daemon/node_agent.h"
#include "common/system/clock.h"
#include "gtest/gtest.h"
#include "handoff/v1/handoff.pb.h"
#include "tests/agent/apply/fake_kubelet.h"
#include "tests/agent/engine/node_fixture.h"
#include "tests/support/fake_clock.h"
#include "tests/support/fault_injection_file_system.h"

namespace handoff::testing {

inline std::string KubeadmSettingsYaml() { return ReadTestdata("nodes/kubeadm.settings.yaml"); }

inline v1::Command MoveCommand(const std::string& id, v1::NodeState from, v1::NodeState to,
                               const std::string& settings_yaml = KubeadmSettingsYaml()) {
  v1::Command command;
  command.set_id(id);
  command.mutable_move()->set_from(from);
  command.mutable_move()->set_to(to);
  command.mutable_move()->set_settings_yaml(settings_yaml);
  return command;
}

inline v1::Command PlanCommand(const std::string& id, const std::vector<v1::NodeState>& chain,
                               const std::string& settings_yaml = KubeadmSettingsYaml()) {
  v1::Command command;
  command.set_id(id);
  for (v1::NodeState state : chain) command.mutable_plan()->add_chain(state);
  command.mutable_plan()->set_settings_yaml(settings_yaml);
  return command;
}

inline v1::Command ReportCommand(const std::string& id) {
  v1::Command command;
  command.set_id(id);
  command.mutable_report();
  return command;
}

// Fails the first `failures` commands it is asked to run, then hands them to `next`.
class FailingCommandRunner : public CommandRunner {
 public:
  FailingCommandRunner(CommandRunner& next, int failures) : next_(next), failures_(failures) {}
  absl::Status Run(const std::vector<std::string>& argv, absl::Duration timeout) override {
    if (failures_ > 0) {
      --failures_;
      return absl::InternalError("Job for kubelet.service failed (injected)");
    }
    return next_.Run(argv, timeout);
  }

 private:
  CommandRunner& next_;
  int failures_;
};

// A health checker that, once armed, holds the first check made until the test releases it:
// a move is then in progress, mid-transaction, for as long as the test needs.
class GatedHealthChecker : public HealthChecker {
 public:
  explicit GatedHealthChecker(HealthChecker& next) : next_(next) {}

  absl::Status Check(const HealthEndpoint& endpoint, absl::Duration timeout) override {
    {
      std::unique_lock<std::mutex> lock(mutex_);
      if (armed_ && !released_) {
        reached_ = true;
        changed_.notify_all();
        changed_.wait(lock, [this] { return released_; });
      }
    }
    return next_.Check(endpoint, timeout);
  }

  void Arm() {
    std::lock_guard<std::mutex> lock(mutex_);
    armed_ = true;
  }
  // True once a check is held (false after the timeout).
  bool WaitUntilReached() {
    std::unique_lock<std::mutex> lock(mutex_);
    return changed_.wait_for(lock, std::chrono::seconds(30), [this] { return reached_; });
  }
  void Release() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      released_ = true;
    }
    changed_.notify_all();
  }

 private:
  HealthChecker& next_;
  std::mutex mutex_;
  std::condition_variable changed_;
  bool armed_ = false;
  bool reached_ = false;
  bool released_ = false;
};

// The kubeadm fixture node in a fault-injecting file system, its kubelet, and the pieces a
// NodeAgent needs. Health checks pass through a gate the test can close.
class DaemonNodeTest : public ::testing::Test {
 protected:
  DaemonNodeTest()
      : fs_(LoadNode("kubeadm")), kubelet_(fs_, KubeadmSettings().paths), health_(kubelet_) {}

  NodeAgentOptions Options() const {
    NodeAgentOptions options;
    options.node_name = "cp-1";
    options.apply.verify_options.timeout = absl::Minutes(1);
    return options;
  }

  Host MakeHost(CommandRunner* commands = nullptr) {
    return Host{fs_, kubelet_, health_, clock_, commands ? *commands : kubelet_, kubelet_};
  }

  std::unique_ptr<NodeAgent> OpenAgent(NodeAgentOptions options, CommandRunner* commands) {
    absl::StatusOr<std::unique_ptr<NodeAgent>> agent =
        NodeAgent::Open(MakeHost(commands), std::move(options), log_);
    EXPECT_TRUE(agent.ok()) << agent.status();
    return agent.ok() ? *std::move(agent) : nullptr;
  }
  std::unique_ptr<NodeAgent> OpenAgent() { return OpenAgent(Options(), nullptr); }

  FaultInjectionFileSystem fs_;
  FakeKubelet kubelet_;
  GatedHealthChecker health_;
  FakeClock clock_;
  std::ostringstream log_;
};

}  // namespace handoff::testing

#endif  // HANDOFF_TESTS_AGENT_DAEMON_DAEMON_FIXTURE_H_
