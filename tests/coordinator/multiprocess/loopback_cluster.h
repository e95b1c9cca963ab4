// A control plane on loopback for end-to-end tests: one handoff-coordinator process and one
// handoff-agent process per node, each node a temp root holding a copy of the kubeadm fixture,
// every connection mutual TLS with the test CA (tests/testdata/handoff-tls). The agents write
// files without waiting for a kubelet (--no-verify); everything else is the real binaries.
//
// Waiting is on the coordinator's own status stream (a watch), never on sleeps.
#ifndef HANDOFF_TESTS_COORDINATOR_MULTIPROCESS_LOOPBACK_CLUSTER_H_
#define HANDOFF_TESTS_COORDINATOR_MULTIPROCESS_LOOPBACK_CLUSTER_H_

#include <sys/types.h>

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "handoff/v1/handoff.grpc.pb.h"

namespace handoff::testing {

namespace pb = ::handoff::v1;

// A child process; killed (SIGKILL) when destroyed if still running. stderr goes to `log`.
class ChildProcess {
 public:
  ChildProcess(const std::vector<std::string>& argv, const std::string& log);
  ~ChildProcess();
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  pid_t pid() const { return pid_; }
  // kill(2) with `signal`, then waitpid; returns the wait status.
  int Kill(int signal);
  // waitpid without signalling: the exit status once it ends on its own.
  int Wait();
  bool running() const { return pid_ > 0; }

 private:
  pid_t pid_ = -1;
};

class LoopbackCluster {
 public:
  // Node names cp-1 … cp-<nodes>; a fresh temp dir for everything, removed by the destructor.
  explicit LoopbackCluster(int nodes);
  ~LoopbackCluster();

  const std::vector<std::string>& nodes() const { return nodes_; }
  std::string root(const std::string& node) const { return dir_ + "/nodes/" + node; }
  std::string dir() const { return dir_; }
  // The coordinator's address, "127.0.0.1:<port>" (the same across restarts); its certificate
  // is for the name "localhost".
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }

  // Starts the coordinator (on the port it had before, after a restart) and waits until it
  // serves. Extra flags are appended.
  void StartCoordinator(const std::vector<std::string>& extra = {});
  // kill -9 of the coordinator (it gets no chance to clean up).
  void KillCoordinator();
  // SIGTERM, and the exit status.
  int StopCoordinator();

  void StartAgent(const std::string& node, const std::vector<std::string>& extra = {});
  void KillAgent(const std::string& node);

  // An OperatorService stub with the operator certificate (or `identity`).
  std::unique_ptr<pb::OperatorService::Stub> Operator(const std::string& identity = "operator");

  // Watches the rollout until `done` holds for a status (reconnecting across coordinator
  // restarts), or `timeout` passes (then the last status seen, and the test fails). The timeout
  // only ends a wait that would never end: a loaded CI machine (both cores busy, the sanitizers
  // on) has taken 14 s for one agent's move and over a minute for five nodes' moves.
  pb::RolloutStatus WaitFor(const std::function<bool(const pb::RolloutStatus&)>& done,
                            absl::Duration timeout = absl::Minutes(5));

  // Transactions the node's agent committed, read from its state dir (one per applied move).
  int Transactions(const std::string& node) const;
  // A file of the node, read.
  std::string ReadNodeFile(const std::string& node, const std::string& path) const;
  std::string Logs() const;

 private:
  std::string dir_;
  std::vector<std::string> nodes_;
  int port_ = 0;
  std::unique_ptr<ChildProcess> coordinator_;
  std::map<std::string, std::unique_ptr<ChildProcess>> agents_;
  int coordinator_starts_ = 0;
};

// A file of the test CA's set (tests/testdata/handoff-tls): "ca.crt", "operator.key", ...
std::string TlsFile(const std::string& name);

// Waits (inotify on its directory, no timer) until `path` exists; false after `timeout`.
bool WaitForFile(const std::string& path, absl::Duration timeout);

// Status predicates.
bool AllNodesAt(const pb::RolloutStatus& status, pb::NodeState state);
std::string Describe(const pb::RolloutStatus& status);

}  // namespace handoff::testing

#endif  // HANDOFF_TESTS_COORDINATOR_MULTIPROCESS_LOOPBACK_CLUSTER_H_
