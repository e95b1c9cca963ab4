#include "coordinator/sandbox/sandbox.h"

#include <signal.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <ostream>
#include <set>
#include <thread>
#include <vector>

#include "agent/base/strings.h"
#include "agent/fs/atomic_file.h"
#include "agent/fs/file_system.h"
#include "agent/system/clock.h"
#include "coordinator/fakeapi/api_store.h"
#include "coordinator/fakeapi/fake_api_server.h"
#include "coordinator/kube/client.h"
#include "coordinator/kube/http_transport.h"
#include "coordinator/kube/kubeconfig.h"
#include "coordinator/kube/nodes.h"
#include "coordinator/kube/rbac.h"
#include "coordinator/pki/pki.h"
#include "coordinator/sandbox/monitor/monitor.h"
#include "coordinator/sandbox/monitor/run_record.h"
#include "coordinator/sandbox/node_layout.h"
#include "coordinator/sandbox/process.h"
#include "grpcpp/client_context.h"
#include "handoff/v1/handoff.grpc.pb.h"
#include "proto/rpc/channel.h"

namespace handoff::sandbox {
namespace {

namespace pb = ::handoff::v1;

constexpr char kOperator[] = "sandbox-operator";
constexpr char kKubeletHealthzPort[] = "10248";

std::string Seconds(absl::Duration duration) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.1fs", absl::ToDoubleSeconds(duration));
  return text;
}

std::string StateName(pb::NodeState state) {
  switch (state) {
    case pb::NODE_STATE_IN_TREE:
      return "in-tree";
    case pb::NODE_STATE_PREPARED:
      return "prepared";
    case pb::NODE_STATE_MIGRATED:
      return "migrated";
    case pb::NODE_STATE_FINALIZED:
      return "finalized";
    case pb::NODE_STATE_INCONSISTENT:
      return "inconsistent";
    default:
      return "unknown";
  }
}

bool AllAt(const pb::RolloutStatus& status, pb::NodeState state) {
  if (status.nodes_size() == 0) return false;
  for (const pb::NodeProgress& node : status.nodes()) {
    if (node.state() != state) return false;
  }
  return true;
}

bool AllConnected(const pb::RolloutStatus& status) {
  if (status.nodes_size() == 0) return false;
  for (const pb::NodeProgress& node : status.nodes()) {
    if (!node.connected()) return false;
  }
  return true;
}

// The coordinator's status, kept current by a watch on a thread of its own (reconnecting across
// coordinator restarts), and waited on with a condition variable.
class StatusFeed {
 public:
  explicit StatusFeed(std::function<std::unique_ptr<pb::OperatorService::Stub>()> connect)
      : connect_(std::move(connect)), thread_([this] { Loop(); }) {}
  ~StatusFeed() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stopping_ = true;
      if (context_ != nullptr) context_->TryCancel();
    }
    cv_.notify_all();
    thread_.join();
  }

  // Waits until `done` holds for a status, `deadline` passes, or `interrupted`; calls `each` (if
  // set) with every new status. The last status seen.
  std::optional<pb::RolloutStatus> WaitFor(
      const std::function<bool(const pb::RolloutStatus&)>& done, absl::Time deadline,
      const std::function<bool()>& interrupted,
      const std::function<void(const pb::RolloutStatus&)>& each) {
    std::unique_lock<std::mutex> lock(mu_);
    int64_t seen = -1;
    while (true) {
      if (latest_ && latest_generation_ != seen) {
        seen = latest_generation_;
        pb::RolloutStatus status = *latest_;
        lock.unlock();
        if (each) each(status);
        bool finished = done(status);
        lock.lock();
        if (finished) return status;
      }
      if (absl::Now() >= deadline || interrupted()) return latest_;
      // Woken by every new status; the bounded wait only lets `interrupted` be noticed.
      cv_.wait_for(lock, std::chrono::milliseconds(200));
    }
  }

 private:
  void Loop() {
    while (true) {
      std::unique_ptr<pb::OperatorService::Stub> stub = connect_();
      grpc::ClientContext context;
      context.set_deadline(std::chrono::system_clock::now() + std::chrono::hours(1));
      context.set_wait_for_ready(true);
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (stopping_) return;
        context_ = &context;
      }
      pb::StatusRequest request;
      request.set_watch(true);
      std::unique_ptr<grpc::ClientReader<pb::RolloutStatus>> reader =
          stub->Status(&context, request);
      pb::RolloutStatus status;
      while (reader->Read(&status)) {
        std::lock_guard<std::mutex> lock(mu_);
        latest_ = status;
        ++latest_generation_;
        cv_.notify_all();
      }
      reader->Finish();
      std::unique_lock<std::mutex> lock(mu_);
      context_ = nullptr;
      if (stopping_) return;
      // The coordinator went away (a restart): try again shortly.
      cv_.wait_for(lock, std::chrono::milliseconds(100), [this] { return stopping_; });
      if (stopping_) return;
    }
  }

  std::function<std::unique_ptr<pb::OperatorService::Stub>()> connect_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::optional<pb::RolloutStatus> latest_;
  int64_t latest_generation_ = 0;
  grpc::ClientContext* context_ = nullptr;
  bool stopping_ = false;
  std::thread thread_;
};

class Sandbox {
 public:
  Sandbox(const SandboxOptions& options, std::ostream& out, std::ostream& err,
          const std::function<bool()>& interrupted)
      : options_(options), out_(out), err_(err), interrupted_(interrupted) {}

  ~Sandbox() { TearDown(); }

  int Run();

 private:
  struct NodeRun {
    SandboxNode spec;
    std::string root;
    std::unique_ptr<Process> agent;
  };

  std::string Path(const std::string& relative) const { return StrCat(dir_, "/", relative); }
  std::string Bin(const std::string& name) const { return StrCat(bin_dir_, "/", name); }
  absl::Status WriteFile(const std::string& path, const std::string& content, unsigned mode = 0644);
  absl::Status Setup();
  absl::Status MakeCertificates();
  absl::Status StartApiServer();
  absl::Status StartKubelets();
  absl::Status StartCoordinator();
  absl::Status StartAgent(NodeRun& node);
  absl::Status ApplyRbac();
  std::unique_ptr<pb::OperatorService::Stub> Operator() const;
  void Say(const std::string& line);
  void ShowProgress(const pb::RolloutStatus& status);
  // Waits for `done`, printing progress; an error naming what it waited for on timeout.
  absl::StatusOr<pb::RolloutStatus> Await(const std::string& what,
                                          const std::function<bool(const pb::RolloutStatus&)>& done,
                                          absl::Duration timeout);
  absl::Status WaitForCloudControllers(absl::Duration timeout);
  absl::Status CheckProviderIds();
  int RunUnsafeOrder();
  int RunRollout();
  // An operator call with a deadline; its error names `what`.
  absl::Status Call(
      const std::string& what,
      const std::function<grpc::Status(pb::OperatorService::Stub&, grpc::ClientContext&)>& call);
  absl::Status RestartAgent(NodeRun& node, bool kill);
  absl::Status KillAgentMidMove(NodeRun& node);
  int Summarise(bool completed, const std::string& outcome);
  void TearDown();
  // Process::Spawn, remembering the pid so that the reaper leaves it to its Process.
  absl::StatusOr<std::unique_ptr<Process>> SpawnOwned(const std::vector<std::string>& argv,
                                                      const std::string& log);
  // The sandbox is the subreaper of everything it starts (pods outlive the kubelet that started
  // them): this reaps the orphans that become its children, leaving its own to their Process.
  void ReapOrphans();

  const SandboxOptions& options_;
  std::ostream& out_;
  std::ostream& err_;
  std::function<bool()> interrupted_;

  std::string dir_;
  std::string bin_dir_;
  std::unique_ptr<FileSystem> fs_;  // rooted at "/"
  absl::Time started_;
  LeaseTiming timing_;
  std::vector<NodeRun> nodes_;

  pki::KeyPair kube_ca_, handoff_ca_, admin_;
  std::unique_ptr<Clock> clock_;
  std::unique_ptr<fakeapi::ApiStore> store_;
  std::unique_ptr<fakeapi::FakeApiServer> api_server_;
  std::unique_ptr<Process> coordinator_;
  int coordinator_port_ = 0;
  std::unique_ptr<StatusFeed> feed_;
  std::unique_ptr<LiveMonitor> monitor_;
  std::string last_progress_;
  bool torn_down_ = false;
  std::mutex owned_mu_;
  std::set<pid_t> owned_;
  std::atomic<bool> reaping_{false};
  std::thread reaper_;
};

absl::StatusOr<std::unique_ptr<Process>> Sandbox::SpawnOwned(const std::vector<std::string>& argv,
                                                             const std::string& log) {
  std::lock_guard<std::mutex> lock(owned_mu_);
  absl::StatusOr<std::unique_ptr<Process>> process = Process::Spawn(argv, log);
  if (process.ok()) owned_.insert((*process)->pid());
  return process;
}

void Sandbox::ReapOrphans() {
  const pid_t self = getpid();
  while (reaping_) {
    std::error_code error;
    for (const auto& entry : std::filesystem::directory_iterator("/proc", error)) {
      const std::string name = entry.path().filename();
      if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
      absl::StatusOr<std::string> stat = fs_->ReadFile(StrCat("/proc/", name, "/stat"));
      if (!stat.ok()) continue;
      // "pid (comm) S ppid ...": the command may hold spaces and parentheses, so read after
      // the last ')'.
      size_t close = stat->rfind(')');
      if (close == std::string::npos || close + 4 >= stat->size()) continue;
      char state = (*stat)[close + 2];
      long ppid = std::strtol(stat->c_str() + close + 4, nullptr, 10);
      if (state != 'Z' || ppid != self) continue;
      pid_t pid = static_cast<pid_t>(std::stol(name));
      {
        std::lock_guard<std::mutex> lock(owned_mu_);
        if (owned_.count(pid) > 0) continue;
      }
      waitpid(pid, nullptr, WNOHANG);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
  }
}

void Sandbox::Say(const std::string& line) {
  out_ << "[" << Seconds(absl::Now() - started_) << "] " << line << "\n" << std::flush;
}

absl::Status Sandbox::WriteFile(const std::string& path, const std::string& content,
                                unsigned mode) {
  absl::Status made = EnsureDirectory(*fs_, std::filesystem::path(path).parent_path(), 0755);
  if (!made.ok()) return made;
  FileInfo info;
  info.mode = mode;
  return AtomicReplace(*fs_, path, content, info);
}

absl::Status Sandbox::Setup() {
  started_ = absl::Now();
  fs_ = NewPosixFileSystem("/");
  // Pods run in sessions of their own and outlive a kubelet restart; as their subreaper the
  // sandbox reaps them (this machine's init may not), and finds them all at teardown.
  prctl(PR_SET_CHILD_SUBREAPER, 1);
  reaping_ = true;
  reaper_ = std::thread([this] { ReapOrphans(); });
  clock_ = NewRealClock();
  if (options_.bin_dir.empty()) {
    bin_dir_ = std::filesystem::read_symlink("/proc/self/exe").parent_path();
  } else {
    bin_dir_ = std::filesystem::absolute(options_.bin_dir);
  }
  for (const char* binary :
       {"handoff-coordinator", "handoff-agent", "handoff-standin", "handoff-sandbox-kubelet"}) {
    if (access(Bin(binary).c_str(), X_OK) != 0) {
      return absl::FailedPreconditionError(
          StrCat(Bin(binary), " is missing: build it (packaging/build.sh) or pass --bin-dir"));
    }
  }
  if (options_.dir.empty()) {
    const char* tmp = getenv("TMPDIR");
    std::string pattern =
        StrCat(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp", "/handoff-sandbox-XXXXXX");
    if (mkdtemp(pattern.data()) == nullptr) {
      return absl::InternalError(StrCat("cannot create a directory like ", pattern));
    }
    dir_ = pattern;
  } else {
    dir_ = std::filesystem::absolute(options_.dir).lexically_normal();
    std::error_code error;
    if (std::filesystem::exists(dir_) && !std::filesystem::is_empty(dir_, error)) {
      return absl::FailedPreconditionError(
          StrCat("--dir ", dir_, " is not empty: give a new or empty directory"));
    }
  }
  for (const char* sub : {"logs", "records", "pki", "nodes"}) {
    absl::Status made = EnsureDirectory(*fs_, Path(sub), 0700);
    if (!made.ok()) return made;
  }
  for (int i = 1; i <= options_.nodes; ++i) {
    NodeRun node;
    node.spec = MakeSandboxNode(i);
    node.root = Path(StrCat("nodes/", node.spec.name));
    absl::Status made = EnsureDirectory(*fs_, node.root, 0755);
    if (!made.ok()) return made;
    nodes_.push_back(std::move(node));
  }
  MonitorOptions monitor_options;
  monitor_options.lease_duration = timing_.lease_duration;
  monitor_options.retry_period = timing_.retry_period;
  // The cloud controllers the sandbox's managers run (routes are off, as kubeadm on AWS has
  // them); node-ipam is reported as soon as a record names it.
  monitor_options.controllers = {"service", "cloud-node-lifecycle"};
  monitor_ = std::make_unique<LiveMonitor>(*fs_, Path("records"), monitor_options);
  Say(StrCat("sandbox in ", dir_, ": ", options_.nodes, " kubeadm 1.26 control-plane nodes"));
  return absl::OkStatus();
}

absl::Status Sandbox::MakeCertificates() {
  const absl::Time now = absl::Now();
  const absl::Duration day = absl::Hours(24);
  absl::StatusOr<pki::KeyPair> kube_ca =
      pki::CreateCertificateAuthority("sandbox-kubernetes-ca", now, day);
  if (!kube_ca.ok()) return kube_ca.status();
  kube_ca_ = *kube_ca;
  absl::StatusOr<pki::KeyPair> handoff_ca =
      pki::CreateCertificateAuthority("sandbox-handoff-ca", now, day);
  if (!handoff_ca.ok()) return handoff_ca.status();
  handoff_ca_ = *handoff_ca;

  struct Issue {
    const pki::KeyPair* ca;
    std::string file;
    pki::CertificateRequest request;
  };
  std::vector<Issue> issues;
  auto request = [](std::string cn, std::vector<std::string> o, bool server) {
    pki::CertificateRequest r;
    r.common_name = std::move(cn);
    r.organizations = std::move(o);
    r.server = server;
    r.client = !server;
    r.validity = absl::Hours(24);
    if (server) {
      r.dns_names = {"localhost"};
      r.ip_addresses = {"127.0.0.1"};
    }
    return r;
  };
  issues.push_back({&kube_ca_, "apiserver", request("kube-apiserver", {}, true)});
  issues.push_back({&kube_ca_, "admin", request("kubernetes-admin", {"system:masters"}, false)});
  issues.push_back(
      {&kube_ca_, "controller-manager", request("system:kube-controller-manager", {}, false)});
  issues.push_back({&handoff_ca_, "coordinator", request("handoff-coordinator", {}, true)});
  issues.push_back({&handoff_ca_, "operator", request(kOperator, {"handoff:operators"}, false)});
  for (const NodeRun& node : nodes_) {
    issues.push_back({&handoff_ca_, StrCat("agent-", node.spec.name),
                      request(node.spec.name, {"handoff:agents"}, false)});
  }
  absl::Status written = WriteFile(Path("pki/kube-ca.crt"), kube_ca_.certificate_pem);
  if (written.ok()) written = WriteFile(Path("pki/handoff-ca.crt"), handoff_ca_.certificate_pem);
  if (!written.ok()) return written;
  for (const Issue& issue : issues) {
    absl::StatusOr<pki::KeyPair> pair = pki::IssueCertificate(*issue.ca, issue.request, now);
    if (!pair.ok()) return pair.status();
    if (issue.file == "admin") admin_ = *pair;
    if (issue.file == "controller-manager") {
      for (NodeRun& node : nodes_) (void)node;  // written into each node's kubeconfig below
    }
    written = WriteFile(Path(StrCat("pki/", issue.file, ".crt")), pair->certificate_pem);
    if (written.ok()) {
      written = WriteFile(Path(StrCat("pki/", issue.file, ".key")), pair->private_key_pem, 0600);
    }
    if (!written.ok()) return written;
  }
  return absl::OkStatus();
}

absl::Status Sandbox::StartApiServer() {
  store_ = std::make_unique<fakeapi::ApiStore>();
  std::vector<SandboxNode> specs;
  for (const NodeRun& node : nodes_) specs.push_back(node.spec);
  absl::Status seeded = store_->Seed(ClusterSeedYaml(specs), "the sandbox's cluster");
  if (!seeded.ok()) return seeded;
  fakeapi::FakeApiServerOptions server_options;
  server_options.cert_file = Path("pki/apiserver.crt");
  server_options.key_file = Path("pki/apiserver.key");
  server_options.client_ca_file = Path("pki/kube-ca.crt");
  absl::StatusOr<std::unique_ptr<fakeapi::FakeApiServer>> server =
      fakeapi::FakeApiServer::Start(*store_, server_options);
  if (!server.ok()) return server.status();
  api_server_ = *std::move(server);
  absl::Status written = WriteFile(
      Path("admin.conf"),
      KubeconfigYaml(api_server_->url(), kube_ca_.certificate_pem, admin_, "kubernetes-admin"),
      0600);
  if (!written.ok()) return written;

  absl::StatusOr<std::string> kcm_cert = fs_->ReadFile(Path("pki/controller-manager.crt"));
  absl::StatusOr<std::string> kcm_key = fs_->ReadFile(Path("pki/controller-manager.key"));
  if (!kcm_cert.ok()) return kcm_cert.status();
  if (!kcm_key.ok()) return kcm_key.status();
  LayoutInputs inputs;
  inputs.api_server_url = api_server_->url();
  inputs.kube_ca_pem = kube_ca_.certificate_pem;
  inputs.controller_manager_client = pki::KeyPair{*kcm_cert, *kcm_key};
  inputs.timing = timing_;
  for (const NodeRun& node : nodes_) {
    std::unique_ptr<FileSystem> node_fs = NewPosixFileSystem(node.root);
    absl::Status laid = WriteNodeLayout(*node_fs, node.spec, inputs);
    if (!laid.ok()) return laid;
  }
  absl::Status settings = WriteFile(Path("settings.yaml"), RolloutSettingsYaml(timing_));
  if (!settings.ok()) return settings;
  Say(StrCat("API server on ", api_server_->url(), " (Leases, Roles, Nodes with providerIDs)"));
  return absl::OkStatus();
}

absl::Status Sandbox::StartKubelets() {
  for (const NodeRun& node : nodes_) {
    std::vector<std::string> argv = {Bin("handoff-sandbox-kubelet"),
                                     "start",
                                     "--root",
                                     node.root,
                                     "--node-name",
                                     node.spec.name,
                                     "--healthz-bind-address",
                                     node.spec.ip,
                                     "--healthz-port",
                                     kKubeletHealthzPort,
                                     "--standin",
                                     Bin("handoff-standin"),
                                     "--records",
                                     Path(StrCat("records/", node.spec.name, ".jsonl"))};
    absl::StatusOr<std::unique_ptr<Process>> start =
        SpawnOwned(argv, Path(StrCat("logs/kubelet-", node.spec.name, ".log")));
    if (!start.ok()) return start.status();
    int status = 0;
    if (!(*start)->WaitFor(absl::Seconds(30), &status) || !WIFEXITED(status) ||
        WEXITSTATUS(status) != 0) {
      return absl::UnavailableError(StrCat(
          "the simulated kubelet of ", node.spec.name, " did not start (",
          DescribeWaitStatus(status), "); see ", Path("logs/kubelet-" + node.spec.name + ".log")));
    }
  }
  Say(StrCat(
      "kubelets running the static pods of ", options_.nodes,
      " nodes: kube-apiserver, kube-controller-manager --cloud-provider=aws, kube-scheduler"));
  return absl::OkStatus();
}

absl::Status Sandbox::WaitForCloudControllers(absl::Duration timeout) {
  absl::Time deadline = absl::Now() + timeout;
  while (absl::Now() < deadline && !interrupted_()) {
    (void)monitor_->Poll(absl::ToUnixNanos(absl::Now()));
    const MonitorReport& report = monitor_->report();
    // route does not run: the managers keep kubeadm's --configure-cloud-routes=false.
    bool all = !report.controllers.empty();
    for (const ControllerStats& stats : report.controllers) {
      if (stats.runs.empty() || stats.runs.back().end != RunEnd::kStillRunning) all = false;
    }
    if (all) return absl::OkStatus();
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return absl::DeadlineExceededError(
      StrCat("no kube-controller-manager took the lease and ran the cloud controllers within ",
             Seconds(timeout), "; see ", Path("logs")));
}

absl::Status Sandbox::StartCoordinator() {
  std::string nodes;
  for (const NodeRun& node : nodes_) nodes += (nodes.empty() ? "" : ",") + node.spec.name;
  std::string port_file = Path("coordinator.port");
  (void)fs_->RemoveFile(port_file);
  std::vector<std::string> argv = {Bin("handoff-coordinator"),
                                   "--listen",
                                   StrCat("127.0.0.1:", coordinator_port_),
                                   "--port-file",
                                   port_file,
                                   "--state-dir",
                                   Path("coordinator"),
                                   "--ca",
                                   Path("pki/handoff-ca.crt"),
                                   "--cert",
                                   Path("pki/coordinator.crt"),
                                   "--key",
                                   Path("pki/coordinator.key"),
                                   "--nodes",
                                   nodes,
                                   "--settings",
                                   Path("settings.yaml"),
                                   "--kubeconfig",
                                   Path("admin.conf"),
                                   "--facts-interval",
                                   "300ms",
                                   "--shutdown-grace",
                                   "2s"};
  absl::StatusOr<std::unique_ptr<Process>> started = SpawnOwned(argv, Path("logs/coordinator.log"));
  if (!started.ok()) return started.status();
  coordinator_ = *std::move(started);
  absl::Time deadline = absl::Now() + absl::Seconds(30);
  while (absl::Now() < deadline) {
    absl::StatusOr<std::string> port = fs_->ReadFile(port_file);
    if (port.ok()) {
      coordinator_port_ = std::stoi(*port);
      return absl::OkStatus();
    }
    int status = 0;
    if (coordinator_->WaitFor(absl::Milliseconds(50), &status)) {
      return absl::UnavailableError(StrCat("handoff-coordinator exited (",
                                           DescribeWaitStatus(status), "); see ",
                                           Path("logs/coordinator.log")));
    }
  }
  return absl::DeadlineExceededError("handoff-coordinator did not start serving within 30s");
}

absl::Status Sandbox::StartAgent(NodeRun& node) {
  std::string settings = StrCat(node.root, "/etc/handoff/agent-settings.yaml");
  absl::Status written =
      WriteFile(settings, StrCat("# This node's own settings for handoff-agent run: its kubelet "
                                 "answers on\n# the node's address (each simulated node has "
                                 "its own).\nkubelet:\n  healthzUrl: http://",
                                 node.spec.ip, ":", kKubeletHealthzPort, "/healthz\n"));
  if (!written.ok()) return written;
  std::vector<std::string> argv = {
      Bin("handoff-agent"),
      "run",
      "--coordinator",
      StrCat("127.0.0.1:", coordinator_port_),
      "--server-name",
      "localhost",
      "--ca",
      Path("pki/handoff-ca.crt"),
      "--cert",
      Path(StrCat("pki/agent-", node.spec.name, ".crt")),
      "--key",
      Path(StrCat("pki/agent-", node.spec.name, ".key")),
      "--root",
      node.root,
      "--settings",
      settings,
      "--proc-root",
      StrCat(node.root, "/run/sandbox-proc"),
      "--timeout",
      "15s",
      "--reconnect-max",
      "500ms",
      "--kubelet-restart-command",
      StrCat(Bin("handoff-sandbox-kubelet"), " restart --root ", node.root)};
  absl::StatusOr<std::unique_ptr<Process>> started =
      SpawnOwned(argv, Path(StrCat("logs/agent-", node.spec.name, ".log")));
  if (!started.ok()) return started.status();
  node.agent = *std::move(started);
  return absl::OkStatus();
}

absl::Status Sandbox::ApplyRbac() {
  absl::StatusOr<kube::ClusterCredentials> credentials =
      kube::LoadKubeconfig(*fs_, Path("admin.conf"), "");
  if (!credentials.ok()) return credentials.status();
  absl::StatusOr<std::unique_ptr<kube::HttpTransport>> transport =
      kube::NewCurlTransport(*credentials);
  if (!transport.ok()) return transport.status();
  kube::KubeClient client(*std::move(transport), *clock_, kube::ClientOptionsFor(*credentials));
  absl::StatusOr<kube::RbacApplyResult> applied = kube::ApplyRbac(client, kube::RbacOptions{});
  if (!applied.ok()) return applied.status();
  Say(StrCat("handoffctl rbac apply: ", applied->applied.size(),
             " change(s) for the migration lease"));
  return absl::OkStatus();
}

absl::Status Sandbox::CheckProviderIds() {
  absl::StatusOr<kube::ClusterCredentials> credentials =
      kube::LoadKubeconfig(*fs_, Path("admin.conf"), "");
  if (!credentials.ok()) return credentials.status();
  absl::StatusOr<std::unique_ptr<kube::HttpTransport>> transport =
      kube::NewCurlTransport(*credentials);
  if (!transport.ok()) return transport.status();
  kube::KubeClient client(*std::move(transport), *clock_, kube::ClientOptionsFor(*credentials));
  absl::StatusOr<std::vector<kube::Json>> nodes = kube::ListNodes(client, true);
  if (!nodes.ok()) return nodes.status();
  std::vector<std::string> bad;
  for (const kube::NodeCheck& check : kube::CheckNodes(*nodes)) {
    if (!check.problems.empty())
      bad.push_back(StrCat(check.name, ": ", StrJoin(check.problems, "; ")));
  }
  if (!bad.empty()) return absl::FailedPreconditionError(StrJoin(bad, "\n"));
  Say(StrCat("node providerIDs: all ", nodes->size(),
             " control-plane nodes carry aws:///<zone>/<instance>"));
  return absl::OkStatus();
}

std::unique_ptr<pb::OperatorService::Stub> Sandbox::Operator() const {
  auto read = [this](const std::string& path) {
    absl::StatusOr<std::string> text = fs_->ReadFile(path);
    return text.ok() ? *text : std::string();
  };
  rpc::ClientTls tls{read(Path("pki/handoff-ca.crt")), read(Path("pki/operator.crt")),
                     read(Path("pki/operator.key")), "localhost"};
  rpc::ChannelOptions channel_options;
  channel_options.max_reconnect_backoff = std::chrono::milliseconds(300);
  return pb::OperatorService::NewStub(
      rpc::CreateSecureChannel(StrCat("127.0.0.1:", coordinator_port_), tls, channel_options));
}

void Sandbox::ShowProgress(const pb::RolloutStatus& status) {
  std::string line = StrCat(pb::RolloutStatus::Phase_Name(status.phase()), ":");
  for (const pb::NodeProgress& node : status.nodes()) {
    StrAppend(&line, "  ", node.name(), " ", StateName(node.state()));
    if (node.moving_to() != pb::NODE_STATE_UNSPECIFIED) {
      StrAppend(&line, "→", StateName(node.moving_to()));
    }
    if (!node.connected()) StrAppend(&line, " (agent away)");
  }
  if (line == last_progress_) return;
  last_progress_ = line;
  (void)monitor_->Poll(absl::ToUnixNanos(absl::Now()));
  Say(StrCat(line, monitor_->report().invariant_held ? "" : "  [INVARIANT BROKEN]"));
}

absl::StatusOr<pb::RolloutStatus> Sandbox::Await(
    const std::string& what, const std::function<bool(const pb::RolloutStatus&)>& done,
    absl::Duration timeout) {
  std::optional<pb::RolloutStatus> status =
      feed_->WaitFor(done, absl::Now() + timeout, interrupted_,
                     [this](const pb::RolloutStatus& s) { ShowProgress(s); });
  if (status && done(*status)) return *status;
  if (interrupted_()) return absl::CancelledError("interrupted");
  return absl::DeadlineExceededError(StrCat(
      "timed out after ", Seconds(timeout), " waiting for ", what,
      status ? StrCat("; the rollout is ", pb::RolloutStatus::Phase_Name(status->phase()), ": ",
                      status->next(), status->halted() ? " — " + status->halt_reason() : "")
             : "; the coordinator never answered"));
}

void Sandbox::TearDown() {
  if (torn_down_) return;
  torn_down_ = true;
  feed_.reset();
  for (NodeRun& node : nodes_) {
    if (node.agent) node.agent->Stop(SIGTERM, absl::Seconds(5));
  }
  if (coordinator_) coordinator_->Stop(SIGTERM, absl::Seconds(5));
  for (const NodeRun& node : nodes_) {
    absl::StatusOr<std::unique_ptr<Process>> stop =
        SpawnOwned({Bin("handoff-sandbox-kubelet"), "stop", "--root", node.root, "--pods"},
                   Path(StrCat("logs/kubelet-", node.spec.name, ".log")));
    if (stop.ok()) (*stop)->WaitFor(absl::Seconds(15), nullptr);
  }
  if (api_server_) api_server_->Stop();
  reaping_ = false;
  if (reaper_.joinable()) reaper_.join();
  if (!options_.keep && !dir_.empty()) {
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  } else if (!dir_.empty()) {
    out_ << "kept " << dir_ << " (logs/, records/, nodes/, coordinator/)\n";
  }
}

int Sandbox::Summarise(bool completed, const std::string& outcome) {
  (void)monitor_->Poll(absl::ToUnixNanos(absl::Now()));
  const MonitorReport& report = monitor_->report();
  out_ << "\n== summary ==\n" << outcome << "\n";
  // Steps and time per node, from the coordinator's audit history.
  pb::HistoryResponse history;
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  if (coordinator_ && coordinator_->running() &&
      Operator()->History(&context, pb::HistoryRequest(), &history).ok()) {
    std::map<std::string, int64_t> sent;
    std::map<std::string, std::pair<int, int64_t>> per_node;  // moves, milliseconds
    int steps = 0;
    for (const pb::HistoryEntry& entry : history.entries()) {
      if (entry.kind() == "command") sent[entry.command_id()] = entry.unix_ms();
      if (entry.kind() == "result" && sent.count(entry.command_id()) > 0) {
        ++steps;
        per_node[entry.node()].first++;
        per_node[entry.node()].second += entry.unix_ms() - sent[entry.command_id()];
      }
    }
    out_ << "steps: " << steps << " moves carried out by the agents\n";
    for (const auto& [node, totals] : per_node) {
      out_ << "  " << node << ": " << totals.first << " moves, "
           << Seconds(absl::Milliseconds(totals.second)) << " in all\n";
    }
  }
  out_ << "handovers (lease duration " << Seconds(timing_.lease_duration) << ", long when over "
       << Seconds(absl::Nanoseconds(report.long_gap_bound_ns)) << "):\n";
  for (const ControllerStats& stats : report.controllers) {
    out_ << "  " << stats.controller << ": " << stats.runs.size() << " runs, longest gap "
         << Seconds(absl::Nanoseconds(stats.longest_gap_ns)) << ", no runner for "
         << Seconds(absl::Nanoseconds(stats.no_runner_ns)) << ", " << stats.long_gaps
         << " long gap(s)\n";
  }
  out_ << (report.invariant_held
               ? "invariant held: no cloud controller ran in two processes at once\n"
               : "INVARIANT BROKEN:\n" + report.Summary());
  return completed && report.invariant_held ? kSandboxHeld : kSandboxBroken;
}

int Sandbox::RunUnsafeOrder() {
  // The order the coordinator forbids: cp-1 goes straight to a cloud-controller-manager with
  // Leader Migration while the other kube-controller-managers run the cloud controllers without
  // it. Done with the agent's own command line, around the coordinator.
  // Not the node whose kube-controller-manager holds the main lease: that one, gone external,
  // would keep the lease and no in-tree manager would run the controllers beside the CCM.
  (void)monitor_->Poll(absl::ToUnixNanos(absl::Now()));
  std::string holder;
  for (const ControllerStats& stats : monitor_->report().controllers) {
    if (!stats.runs.empty() && stats.runs.back().end == RunEnd::kStillRunning) {
      holder = stats.runs.back().process.node;
    }
  }
  const NodeRun* chosen = &nodes_.front();
  for (const NodeRun& candidate : nodes_) {
    if (candidate.spec.name != holder) {
      chosen = &candidate;
      break;
    }
  }
  const NodeRun& node = *chosen;
  for (const char* to : {"prepared", "migrated"}) {
    absl::StatusOr<std::unique_ptr<Process>> apply =
        SpawnOwned({Bin("handoff-agent"), "apply", "--to", to, "--root", node.root, "--settings",
                    Path("settings.yaml"), "--no-verify", "--kubelet-restart-command",
                    StrCat(Bin("handoff-sandbox-kubelet"), " restart --root ", node.root)},
                   Path("logs/unsafe-order.log"));
    if (!apply.ok()) return kSandboxSetupFailed;
    (*apply)->WaitFor(absl::Seconds(60), nullptr);
  }
  Say(StrCat("unsafe order forced: ", node.spec.name,
             " runs a cloud-controller-manager while the others run the in-tree controllers "
             "without Leader Migration"));
  absl::Time deadline = absl::Now() + absl::Seconds(20);
  while (absl::Now() < deadline && !interrupted_()) {
    (void)monitor_->Poll(absl::ToUnixNanos(absl::Now()));
    if (!monitor_->report().invariant_held) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return Summarise(false, "unsafe order (test-only): the monitor must report the broken invariant");
}

int Sandbox::Run() {
  absl::Status status = Setup();
  if (status.ok()) status = MakeCertificates();
  if (status.ok()) status = StartApiServer();
  if (status.ok()) status = StartKubelets();
  if (status.ok()) status = WaitForCloudControllers(absl::Seconds(30));
  if (!status.ok()) {
    err_ << "handoffctl sandbox: " << status.message() << "\n";
    return kSandboxSetupFailed;
  }
  Say("in-tree: one kube-controller-manager holds its lease and runs the cloud controllers");
  if (options_.unsafe_order) return RunUnsafeOrder();

  status = ApplyRbac();
  if (status.ok()) status = StartCoordinator();
  for (NodeRun& node : nodes_) {
    if (status.ok()) status = StartAgent(node);
  }
  if (!status.ok()) {
    err_ << "handoffctl sandbox: " << status.message() << "\n";
    return kSandboxSetupFailed;
  }
  feed_ = std::make_unique<StatusFeed>([this] { return Operator(); });
  absl::StatusOr<pb::RolloutStatus> ready = Await(
      "every agent to connect",
      [](const pb::RolloutStatus& s) {
        return AllConnected(s) && AllAt(s, pb::NODE_STATE_IN_TREE);
      },
      absl::Seconds(30));
  if (!ready.ok()) {
    err_ << "handoffctl sandbox: " << ready.status().message() << "\n";
    return kSandboxSetupFailed;
  }
  Say(StrCat("coordinator on 127.0.0.1:", coordinator_port_, ", ", options_.nodes,
             " agents connected (mutual TLS, one certificate each)"));
  return RunRollout();
}

absl::Status Sandbox::Call(
    const std::string& what,
    const std::function<grpc::Status(pb::OperatorService::Stub&, grpc::ClientContext&)>& call) {
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
  context.set_wait_for_ready(true);
  std::unique_ptr<pb::OperatorService::Stub> stub = Operator();
  grpc::Status status = call(*stub, context);
  if (!status.ok()) {
    return absl::UnavailableError(StrCat("handoffctl ", what, ": ", status.error_message()));
  }
  Say(StrCat("handoffctl ", what));
  return absl::OkStatus();
}

absl::Status Sandbox::RestartAgent(NodeRun& node, bool kill) {
  if (node.agent) node.agent->Stop(kill ? SIGKILL : SIGTERM, absl::Seconds(10));
  return StartAgent(node);
}

absl::Status Sandbox::KillAgentMidMove(NodeRun& node) {
  absl::StatusOr<pb::RolloutStatus> moving = Await(
      StrCat("a move of ", node.spec.name),
      [&](const pb::RolloutStatus& s) {
        return s.has_in_flight() && s.in_flight().node() == node.spec.name &&
               s.in_flight().to() == pb::NODE_STATE_MIGRATED;
      },
      absl::Seconds(60));
  if (!moving.ok()) return moving.status();
  // Once the agent has recorded the move as started, it is under way on the node.
  std::string record =
      StrCat(node.root, "/var/lib/handoff/commands/", moving->in_flight().command_id(), ".json");
  absl::Time deadline = absl::Now() + absl::Seconds(20);
  while (!fs_->ReadFile(record).ok() && absl::Now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  Say(StrCat("fault: kill -9 the agent of ", node.spec.name, " during move ",
             moving->in_flight().command_id()));
  return RestartAgent(node, /*kill=*/true);
}

int Sandbox::RunRollout() {
  NodeRun& target = nodes_.size() > 1 ? nodes_[1] : nodes_[0];
  const std::string manifests = StrCat(target.root, "/etc/kubernetes/manifests/");
  absl::Status status;
  if (options_.fault == Fault::kStrayBackup) {
    absl::StatusOr<std::string> kcm = fs_->ReadFile(manifests + "kube-controller-manager.yaml");
    status =
        kcm.ok() ? WriteFile(manifests + "kube-controller-manager.yaml.bak", *kcm) : kcm.status();
    if (status.ok()) status = RestartAgent(target, /*kill=*/false);
    if (status.ok()) {
      Say(StrCat("fault: a stray kube-controller-manager.yaml.bak in ", target.spec.name,
                 "'s manifest dir"));
    }
  }
  if (status.ok() && options_.fault == Fault::kUnhealthy) {
    status =
        WriteFile(StrCat(target.root, "/etc/handoff-sandbox/unhealthy/cloud-controller-manager"),
                  "the sandbox's cloud-controller-manager on this node never gets healthy\n");
    Say(StrCat("fault: ", target.spec.name, "'s cloud-controller-manager will never be healthy"));
  }
  if (status.ok()) {
    status = Call("start", [](pb::OperatorService::Stub& stub, grpc::ClientContext& context) {
      pb::RolloutStatus ignored;
      return stub.Start(&context, pb::StartRequest(), &ignored);
    });
  }
  if (status.ok() && options_.fault == Fault::kStrayBackup) {
    absl::StatusOr<pb::RolloutStatus> stuck = Await(
        "the coordinator to refuse the inconsistent node",
        [](const pb::RolloutStatus& s) { return s.phase() == pb::RolloutStatus::STUCK; },
        absl::Seconds(60));
    status = stuck.status();
    if (status.ok()) {
      Say(StrCat("stuck as it must be: ", stuck->next()));
      status = DurableRemove(*fs_, manifests + "kube-controller-manager.yaml.bak");
      if (status.ok()) status = RestartAgent(target, /*kill=*/false);
      if (status.ok())
        Say(StrCat("operator: removed the stray file, restarted ", target.spec.name, "'s agent"));
    }
  }
  if (status.ok() && options_.fault == Fault::kAgentKill) status = KillAgentMidMove(target);
  if (status.ok() && options_.fault == Fault::kCoordinatorKill) {
    absl::StatusOr<pb::RolloutStatus> moving = Await(
        "the third move",
        [](const pb::RolloutStatus& s) {
          return s.has_in_flight() && EndsWith(s.in_flight().command_id(), "-3");
        },
        absl::Seconds(60));
    status = moving.status();
    if (status.ok()) {
      coordinator_->Stop(SIGKILL, absl::ZeroDuration());
      Say(StrCat("fault: kill -9 the coordinator during move ", moving->in_flight().command_id()));
      status = StartCoordinator();
      if (status.ok())
        Say("coordinator restarted: it resumes from its database once every agent has reported");
    }
  }
  if (status.ok() && options_.fault == Fault::kUnhealthy) {
    absl::StatusOr<pb::RolloutStatus> halted = Await(
        "the rollout to halt",
        [](const pb::RolloutStatus& s) { return s.phase() == pb::RolloutStatus::HALTED; },
        absl::Seconds(90));
    status = halted.status();
    if (status.ok()) {
      Say(StrCat("halted as it must be: ", halted->halt_reason()));
      (void)fs_->RemoveFile(
          StrCat(target.root, "/etc/handoff-sandbox/unhealthy/cloud-controller-manager"));
    }
  } else if (status.ok()) {
    status = Await(
                 "every node to be migrated",
                 [](const pb::RolloutStatus& s) {
                   return s.phase() == pb::RolloutStatus::DONE && AllAt(s, pb::NODE_STATE_MIGRATED);
                 },
                 absl::Seconds(120))
                 .status();
    if (status.ok()) Say("rollout done: every node runs the cloud-controller-manager (1.27)");
    if (status.ok()) status = CheckProviderIds();
  }
  if (status.ok()) {
    status = Call("rollback --to in-tree",
                  [](pb::OperatorService::Stub& stub, grpc::ClientContext& context) {
                    pb::RollbackRequest request;
                    request.set_to(pb::NODE_STATE_IN_TREE);
                    pb::RolloutStatus ignored;
                    return stub.Rollback(&context, request, &ignored);
                  });
  }
  if (status.ok()) {
    status = Await(
                 "every node to be back in-tree",
                 [](const pb::RolloutStatus& s) {
                   return s.phase() == pb::RolloutStatus::DONE && AllAt(s, pb::NODE_STATE_IN_TREE);
                 },
                 absl::Seconds(120))
                 .status();
  }
  if (status.ok()) Say("rollback done: every node runs the in-tree cloud provider (1.26) again");
  if (!status.ok()) {
    err_ << "handoffctl sandbox: " << status.message() << "\n";
    return Summarise(false, StrCat("did not complete: ", status.message()));
  }
  return Summarise(true, "rollout to 1.27 and rollback to 1.26 completed");
}

}  // namespace

bool ParseFault(const std::string& name, Fault* fault) {
  static const std::map<std::string, Fault> kFaults = {
      {"", Fault::kNone},
      {"agent-kill", Fault::kAgentKill},
      {"coordinator-kill", Fault::kCoordinatorKill},
      {"unhealthy", Fault::kUnhealthy},
      {"stray-backup", Fault::kStrayBackup}};
  auto found = kFaults.find(name);
  if (found == kFaults.end()) return false;
  *fault = found->second;
  return true;
}

int RunSandbox(const SandboxOptions& options, std::ostream& out, std::ostream& err,
               const std::function<bool()>& interrupted) {
  if (options.nodes < 1 || options.nodes > 9) {
    err << "handoffctl sandbox: --nodes must be between 1 and 9\n";
    return kSandboxSetupFailed;
  }
  Sandbox sandbox(options, out, err, interrupted);
  return sandbox.Run();
}
}  // namespace handoff::sandbox
