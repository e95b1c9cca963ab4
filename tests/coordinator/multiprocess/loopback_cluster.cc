#include "tests/coordinator/multiprocess/loopback_cluster.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/inotify.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "agent/apply/journal.h"
#include "common/fs/file_system.h"
#include "grpcpp/client_context.h"
#include "gtest/gtest.h"
#include "proto/rpc/channel.h"
#include "proto/vocabulary/node_state.h"

namespace handoff::testing {
namespace {

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// Waits until `path` exists (it is created by rename, so it is whole when it appears), watching
// its directory with inotify rather than polling on a timer.
}  // namespace

bool WaitForFile(const std::string& path, absl::Duration timeout) {
  absl::Time deadline = absl::Now() + timeout;
  int watch = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
  if (watch < 0) {
    // EMFILE: the user's inotify instances (fs.inotify.max_user_instances, 128 by default) are
    // all taken, as by the kubelets and containerd of the kubeadm runs beside: look again and
    // again instead.
    while (!std::filesystem::exists(path) && absl::Now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return std::filesystem::exists(path);
  }
  bool found = false;
  while (!(found = std::filesystem::exists(path)) && absl::Now() < deadline) {
    // Watch the deepest directory on the way that exists: the file's own directory may not have
    // been created yet; its creation wakes the poll and the next round watches one level deeper.
    std::filesystem::path dir = std::filesystem::path(path).parent_path();
    while (!std::filesystem::exists(dir) && dir.has_parent_path() && dir != dir.parent_path()) {
      dir = dir.parent_path();
    }
    inotify_add_watch(watch, dir.c_str(), IN_MOVED_TO | IN_CREATE | IN_CLOSE_WRITE);
    if (std::filesystem::exists(path)) continue;
    pollfd event{watch, POLLIN, 0};
    poll(&event, 1, static_cast<int>(absl::ToInt64Milliseconds(deadline - absl::Now())));
    char buffer[4096];
    while (read(watch, buffer, sizeof(buffer)) > 0) {
    }
  }
  close(watch);
  return found;
}

ChildProcess::ChildProcess(const std::vector<std::string>& argv, const std::string& log) {
  std::vector<char*> args;
  for (const std::string& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
  args.push_back(nullptr);
  pid_ = fork();
  if (pid_ == 0) {
    int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd >= 0) {
      dup2(fd, STDOUT_FILENO);
      dup2(fd, STDERR_FILENO);
    }
    // The test process may block signals on its threads; the child starts clean.
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    execv(args[0], args.data());
    _exit(127);
  }
}

ChildProcess::~ChildProcess() {
  if (pid_ > 0) Kill(SIGKILL);
}

int ChildProcess::Kill(int signal) {
  if (pid_ <= 0) return -1;
  kill(pid_, signal);
  return Wait();
}

int ChildProcess::Wait() {
  int status = 0;
  if (pid_ > 0) waitpid(pid_, &status, 0);
  pid_ = -1;
  return status;
}

LoopbackCluster::LoopbackCluster(int nodes) {
  std::string pattern = std::filesystem::path(::testing::TempDir()) / "cluster-XXXXXX";
  if (mkdtemp(pattern.data()) == nullptr) ADD_FAILURE() << "mkdtemp failed";
  dir_ = pattern;
  std::filesystem::create_directories(dir_ + "/logs");
  for (int i = 1; i <= nodes; ++i) {
    std::string node = "cp-" + std::to_string(i);
    nodes_.push_back(node);
    std::filesystem::create_directories(root(node));
    std::filesystem::copy(std::string(HANDOFF_TESTDATA_DIR) + "/nodes/kubeadm", root(node),
                          std::filesystem::copy_options::recursive);
  }
}

LoopbackCluster::~LoopbackCluster() {
  agents_.clear();
  coordinator_.reset();
  if (::testing::Test::HasFailure()) {
    std::cerr << Logs();
  }
  std::filesystem::remove_all(dir_);
}

void LoopbackCluster::StartCoordinator(const std::vector<std::string>& extra) {
  std::string port_file = dir_ + "/coordinator.port";
  std::filesystem::remove(port_file);
  std::string nodes;
  for (const std::string& node : nodes_) nodes += (nodes.empty() ? "" : ",") + node;
  std::vector<std::string> argv = {
      HANDOFF_COORDINATOR_BIN,
      "--listen",
      "127.0.0.1:" + std::to_string(port_),
      "--port-file",
      port_file,
      "--state-dir",
      dir_ + "/coordinator",
      "--ca",
      TlsFile("ca.crt"),
      "--cert",
      TlsFile("coordinator.crt"),
      "--key",
      TlsFile("coordinator.key"),
      "--nodes",
      nodes,
      "--settings",
      std::string(HANDOFF_TESTDATA_DIR) + "/nodes/kubeadm.settings.yaml",
      "--no-cluster-checks",
      "--shutdown-grace",
      "2s",
      // Not the default 127.0.0.1:7451: tests run side by side.
      "--metrics-listen",
      "127.0.0.1:0"};
  argv.insert(argv.end(), extra.begin(), extra.end());
  ++coordinator_starts_;
  coordinator_ = std::make_unique<ChildProcess>(
      argv, dir_ + "/logs/coordinator-" + std::to_string(coordinator_starts_) + ".log");
  ASSERT_TRUE(WaitForFile(port_file, absl::Seconds(30))) << "the coordinator did not start\n"
                                                         << Logs();
  port_ = std::stoi(ReadFile(port_file));
}

void LoopbackCluster::KillCoordinator() {
  if (coordinator_) coordinator_->Kill(SIGKILL);
}

int LoopbackCluster::StopCoordinator() { return coordinator_ ? coordinator_->Kill(SIGTERM) : -1; }

void LoopbackCluster::StartAgent(const std::string& node, const std::vector<std::string>& extra) {
  std::vector<std::string> argv = {
      HANDOFF_AGENT_BIN,
      "run",
      "--coordinator",
      "127.0.0.1:" + std::to_string(port_),
      "--server-name",
      "localhost",
      "--ca",
      TlsFile("ca.crt"),
      "--cert",
      TlsFile(node + ".crt"),
      "--key",
      TlsFile(node + ".key"),
      "--root",
      root(node),
      "--settings",
      std::string(HANDOFF_TESTDATA_DIR) + "/nodes/kubeadm.settings.yaml",
      "--no-verify",
      "--kubelet-restart-command",
      "true",
      "--reconnect-max",
      "500ms"};
  // A flag in `extra` that is already above replaces its value (CLI11 refuses a repeated option).
  for (size_t i = 0; i < extra.size(); ++i) {
    auto existing = std::find(argv.begin(), argv.end(), extra[i]);
    if (existing != argv.end() && i + 1 < extra.size() && existing + 1 != argv.end() &&
        extra[i] != "--no-verify") {
      *(existing + 1) = extra[++i];
    } else {
      argv.push_back(extra[i]);
    }
  }
  agents_[node] = std::make_unique<ChildProcess>(argv, dir_ + "/logs/agent-" + node + ".log");
}

void LoopbackCluster::KillAgent(const std::string& node) {
  auto found = agents_.find(node);
  if (found != agents_.end()) found->second->Kill(SIGKILL);
}

std::unique_ptr<pb::OperatorService::Stub> LoopbackCluster::Operator(const std::string& identity) {
  rpc::ClientTls tls{ReadFile(TlsFile("ca.crt")), ReadFile(TlsFile(identity + ".crt")),
                     ReadFile(TlsFile(identity + ".key")), "localhost"};
  rpc::ChannelOptions options;
  options.max_reconnect_backoff = std::chrono::milliseconds(200);
  return pb::OperatorService::NewStub(
      rpc::CreateSecureChannel("127.0.0.1:" + std::to_string(port_), tls, options));
}

pb::RolloutStatus LoopbackCluster::WaitFor(
    const std::function<bool(const pb::RolloutStatus&)>& done, absl::Duration timeout) {
  absl::Time deadline = absl::Now() + timeout;
  pb::RolloutStatus last;
  while (absl::Now() < deadline) {
    std::unique_ptr<pb::OperatorService::Stub> stub = Operator();
    grpc::ClientContext context;
    context.set_deadline(absl::ToChronoTime(deadline));
    // A coordinator being restarted is waited for, not failed on.
    context.set_wait_for_ready(true);
    pb::StatusRequest request;
    request.set_watch(true);
    std::unique_ptr<grpc::ClientReader<pb::RolloutStatus>> reader = stub->Status(&context, request);
    pb::RolloutStatus status;
    while (reader->Read(&status)) {
      last = status;
      if (done(status)) {
        context.TryCancel();
        while (reader->Read(&status)) {
        }
        reader->Finish();
        return last;
      }
    }
    reader->Finish();
  }
  ADD_FAILURE() << "timed out; last status:\n" << Describe(last) << Logs();
  return last;
}

int LoopbackCluster::Transactions(const std::string& node) const {
  std::unique_ptr<FileSystem> fs = NewPosixFileSystem(root(node));
  absl::StatusOr<std::vector<Journal>> journals = ListTransactions(*fs, "/var/lib/handoff");
  if (!journals.ok()) return -1;
  int committed = 0;
  for (const Journal& journal : *journals) {
    if (journal.phase == kPhaseCommitted) ++committed;
  }
  return committed;
}

std::string LoopbackCluster::ReadNodeFile(const std::string& node, const std::string& path) const {
  return ReadFile(root(node) + path);
}

std::string LoopbackCluster::Logs() const {
  std::string logs;
  for (const auto& entry : std::filesystem::directory_iterator(dir_ + "/logs")) {
    logs += "==== " + entry.path().filename().string() + "\n" + ReadFile(entry.path());
  }
  return logs;
}

bool AllNodesAt(const pb::RolloutStatus& status, pb::NodeState state) {
  if (status.nodes_size() == 0) return false;
  for (const pb::NodeProgress& node : status.nodes()) {
    if (node.state() != state) return false;
  }
  return true;
}

std::string Describe(const pb::RolloutStatus& status) {
  std::string out = "phase " + pb::RolloutStatus::Phase_Name(status.phase()) +
                    " next: " + status.next() +
                    (status.halted() ? " halted: " + status.halt_reason() : "") + "\n";
  for (const pb::NodeProgress& node : status.nodes()) {
    out += "  " + node.name() + " " + std::string(WireStateName(node.state(), "unknown")) +
           (node.connected() ? " connected" : " disconnected") + " " + node.last_result() + "\n";
  }
  return out;
}

std::string TlsFile(const std::string& name) {
  return std::string(HANDOFF_TESTDATA_DIR) + "/handoff-tls/" + name;
}

}  // namespace handoff::testing
