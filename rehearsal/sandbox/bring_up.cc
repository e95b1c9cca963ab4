// Bring-up and teardown of a sandbox run (sandbox_run.h): its directory and nodes, the
// certificates, the cluster's API server and each node's files, the kubelets, the coordinator
// and the agents; the orphan reaper that keeps the pods' processes from lingering as zombies.
#include <signal.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "common/base/strings.h"
#include "common/fs/atomic_file.h"
#include "common/kube/client.h"
#include "common/kube/http_transport.h"
#include "common/kube/kubeconfig.h"
#include "coordinator/kube/rbac.h"
#include "rehearsal/real/control_plane.h"
#include "rehearsal/sandbox/kubeadm/kubeadm_cluster.h"
#include "rehearsal/sandbox/real_cluster.h"
#include "rehearsal/sandbox/report.h"
#include "rehearsal/sandbox/sandbox_binaries.h"
#include "rehearsal/sandbox/sandbox_run.h"
#include "yaml-cpp/yaml.h"

namespace handoff::sandbox {
namespace {

constexpr char kOperator[] = "sandbox-operator";

// A daemon's configuration file (common/base/config_file.h): one key per long option, in order,
// each value a quoted YAML string.
std::string DaemonConfig(const std::string& comment,
                         const std::vector<std::pair<std::string, std::string>>& keys) {
  YAML::Emitter out;
  out << YAML::Comment(comment) << YAML::BeginMap;
  for (const auto& [key, value] : keys) {
    out << YAML::Key << key << YAML::Value << YAML::DoubleQuoted << value;
  }
  out << YAML::EndMap;
  return StrCat(out.c_str(), "\n");
}

}  // namespace

std::string SandboxRun::Path(const std::string& relative) const {
  return StrCat(dir_, "/", relative);
}

bool IsSandboxHelper(const std::string& name) {
  return name == "handoff-standin" || name == "handoff-sandbox-kubelet" ||
         name == "handoff-sandbox-node";
}

std::string SandboxDaemonsDir(const std::string& bin_dir, const std::string& exe_dir) {
  return bin_dir.empty() ? exe_dir : bin_dir;
}

absl::StatusOr<SandboxBinaries> LocateSandboxBinaries(
    const std::string& bin_dir, const std::string& exe_dir,
    const std::function<bool(const std::string& path)>& executable) {
  constexpr const char* kHelpers[] = {"handoff-standin", "handoff-sandbox-kubelet",
                                      "handoff-sandbox-node"};
  const char* const advice =
      bin_dir.empty()
          ? "build it (packaging/build.sh), install the handoff package or pass --bin-dir"
          : "build it (packaging/build.sh) or pass another --bin-dir";
  SandboxBinaries found;
  found.daemons_dir = SandboxDaemonsDir(bin_dir, exe_dir);
  for (const char* daemon : {"handoff-coordinator", "handoff-agent"}) {
    const std::string path = StrCat(found.daemons_dir, "/", daemon);
    if (!executable(path)) {
      return absl::FailedPreconditionError(StrCat(path, " is missing: ", advice));
    }
  }
  std::vector<std::string> candidates = {found.daemons_dir};
  if (bin_dir.empty()) {
    candidates.push_back(
        (std::filesystem::path(exe_dir) / kInstalledHelpersDir).lexically_normal().string());
  }
  for (const std::string& dir : candidates) {
    bool all = true;
    for (const char* helper : kHelpers) all = all && executable(StrCat(dir, "/", helper));
    if (all) {
      found.helpers_dir = dir;
      return found;
    }
  }
  // Name a helper that no directory holds; when each is somewhere, they are split between two.
  for (const char* helper : kHelpers) {
    bool anywhere = false;
    for (const std::string& dir : candidates) {
      anywhere = anywhere || executable(StrCat(dir, "/", helper));
    }
    if (!anywhere) {
      return absl::FailedPreconditionError(StrCat(
          helper, " is missing: looked in ", StrJoin(candidates, " and "), "; ", advice));
    }
  }
  return absl::FailedPreconditionError(
      StrCat("handoff-standin, handoff-sandbox-kubelet and handoff-sandbox-node are not all in ",
             StrJoin(candidates, " or "), ": install or build them into one of them"));
}

namespace {

// --bin-dir made absolute, or "".
std::string AbsoluteBinDir(const std::string& bin_dir) {
  return bin_dir.empty() ? "" : std::filesystem::absolute(bin_dir).string();
}

}  // namespace

std::string SandboxRun::Bin(const std::string& name) const {
  // Setup found every program: bin_dir_ is the helpers' directory (the cluster is given it too),
  // and the daemons' follows from the same inputs.
  if (IsSandboxHelper(name)) return StrCat(bin_dir_, "/", name);
  const std::string exe_dir = std::filesystem::path(Handoffctl()).parent_path();
  return StrCat(SandboxDaemonsDir(AbsoluteBinDir(options_.bin_dir), exe_dir), "/", name);
}

std::string SandboxRun::Handoffctl() const {
  // This program: the sandbox is a handoffctl command.
  return std::filesystem::read_symlink("/proc/self/exe").string();
}

absl::StatusOr<std::unique_ptr<Process>> SandboxRun::SpawnOwned(
    const std::vector<std::string>& argv, const std::string& log) {
  std::lock_guard<std::mutex> lock(owned_mu_);
  absl::StatusOr<std::unique_ptr<Process>> process = Process::Spawn(argv, log);
  if (process.ok()) {
    owned_.insert((*process)->pid());
    if (cluster_) cluster_->StartedOnHost((*process)->pid());
  }
  return process;
}

void SandboxRun::ReapOrphans() {
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
    // Orphans announce themselves by no event this process can wait on (SIGCHLD would be taken
    // from the Process objects' own waitpid), so the reaper looks now and then.
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
  }
}

absl::Status SandboxRun::WriteFile(const std::string& path, const std::string& content,
                                   unsigned mode) {
  return AtomicReplaceCreatingParents(*fs_, path, content, mode);
}

absl::Status SandboxRun::WriteNodeFile(const AgentHost& host, const std::string& path,
                                       const std::string& content, unsigned mode) {
  std::unique_ptr<FileSystem> node_fs = NewPosixFileSystem(host.files);
  return AtomicReplaceCreatingParents(*node_fs, path, content, mode);
}

absl::Status SandboxRun::Setup() {
  started_ = absl::Now();
  fs_ = NewPosixFileSystem("/");
  // Pods run in sessions of their own and outlive a kubelet restart; as their subreaper the
  // sandbox reaps them (this machine's init may not), and finds them all at teardown.
  prctl(PR_SET_CHILD_SUBREAPER, 1);
  reaping_ = true;
  reaper_ = std::thread([this] { ReapOrphans(); });
  clock_ = NewRealClock();
  absl::StatusOr<SandboxBinaries> binaries = LocateSandboxBinaries(
      AbsoluteBinDir(options_.bin_dir), std::filesystem::path(Handoffctl()).parent_path(),
      [](const std::string& path) { return access(path.c_str(), X_OK) == 0; });
  if (!binaries.ok()) return binaries.status();
  bin_dir_ = binaries->helpers_dir;
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
  if (options_.cluster == ClusterKind::kReal) timing_ = RealManagerTiming();
  if (options_.cluster == ClusterKind::kKubeadm) timing_ = KubeadmManagerTiming();
  ClusterSetup setup;
  setup.dir = dir_;
  setup.bin_dir = bin_dir_;
  setup.timing = timing_;
  setup.keep = options_.keep;
  setup.say = [this](const std::string& line) { Say(line); };
  setup.spawn = [this](const std::vector<std::string>& argv, const std::string& log) {
    return SpawnOwned(argv, log);
  };
  setup.interrupted = interrupted_;
  if (!options_.network.empty() && options_.cluster != ClusterKind::kKubeadm) {
    return absl::InvalidArgumentError("--network needs --cluster kubeadm");
  }
  absl::StatusOr<KubeadmNetwork> network = ParseKubeadmNetwork(options_.network);
  if (!network.ok()) return network.status();
  setup.network = options_.network;
  for (int i = 1; i <= options_.nodes; ++i) {
    NodeRun node;
    node.node.spec = options_.cluster == ClusterKind::kKubeadm ? MakeKubeadmNode(*network, i)
                                                               : MakeSandboxNode(i);
    node.node.root = Path(StrCat("nodes/", node.spec().name));
    absl::Status made = EnsureDirectory(*fs_, node.root(), 0755);
    if (!made.ok()) return made;
    setup.nodes.push_back(node.node);
    nodes_.push_back(std::move(node));
  }
  for (int i = 1; i <= options_.workers; ++i) {
    NodeRun worker;
    worker.node.worker = true;
    if (options_.cluster == ClusterKind::kKubeadm) {
      // Named, as kubeadm's nodes are, by the instance's private DNS name, its host name too.
      worker.node.spec = MakeKubeadmWorker(*network, i);
      worker.node.root = Path(StrCat("nodes/", worker.node.spec.name));
    } else {
      worker.node.spec = MakeSandboxWorker(i);
      worker.node.host_name = SandboxWorkerHostName(i);
      worker.node.root = Path(StrCat("nodes/", worker.node.host_name));
    }
    absl::Status made = EnsureDirectory(*fs_, worker.root(), 0755);
    if (!made.ok()) return made;
    setup.workers.push_back(worker.node);
    workers_.push_back(std::move(worker));
  }
  // Machines to join later: one for a join after the move; for a replacement one per node each
  // way.
  const int spares = options_.kubeadm_upgrade ? 1 : options_.replace ? 2 * options_.nodes : 0;
  if (spares > 0 && options_.cluster != ClusterKind::kKubeadm) {
    return absl::InvalidArgumentError(
        "--kubeadm-upgrade and --strategy replace need --cluster kubeadm");
  }
  for (int i = 1; i <= spares; ++i) {
    NodeRun spare;
    spare.node.spec = MakeKubeadmNode(*network, options_.nodes + i);
    spare.node.root = Path(StrCat("nodes/", spare.spec().name));
    absl::Status made = EnsureDirectory(*fs_, spare.root(), 0755);
    if (!made.ok()) return made;
    setup.spares.push_back(spare.node);
    spares_.push_back(std::move(spare));
  }
  absl::StatusOr<std::unique_ptr<SandboxCluster>> cluster =
      NewSandboxCluster(options_.cluster, setup);
  if (!cluster.ok()) return cluster.status();
  cluster_ = *std::move(cluster);
  Say(StrCat("sandbox in ", dir_, ": ", options_.nodes, " kubeadm 1.26 control-plane nodes",
             workers_.empty() ? std::string() : StrCat(" and ", workers_.size(), " workers")));
  return absl::OkStatus();
}

absl::Status SandboxRun::MakeCertificates() {
  // The cluster's own CA and certificates, as kubeadm would have made them.
  const absl::Time now = absl::Now();
  absl::StatusOr<pki::KeyPair> kube_ca =
      pki::CreateCertificateAuthority("sandbox-kubernetes-ca", now, absl::Hours(24));
  if (!kube_ca.ok()) return kube_ca.status();
  const pki::KeyPair& kube_ca_ = *kube_ca;
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
  absl::Status written = WriteFile(Path("pki/kube-ca.crt"), kube_ca_.certificate_pem);
  if (!written.ok()) return written;
  certificates_.kube_ca = kube_ca_;
  certificates_.client_ca_file = Path("pki/kube-ca.crt");
  certificates_.serving_cert_file = Path("pki/apiserver.crt");
  certificates_.serving_key_file = Path("pki/apiserver.key");
  const std::pair<std::string, pki::CertificateRequest> kube_issues[] = {
      {"apiserver", request("kube-apiserver", {}, true)},
      {"admin", request("kubernetes-admin", {"system:masters"}, false)},
      {"controller-manager", request("system:kube-controller-manager", {}, false)}};
  for (const auto& [file, cert_request] : kube_issues) {
    absl::StatusOr<pki::KeyPair> pair = pki::IssueCertificate(kube_ca_, cert_request, now);
    if (!pair.ok()) return pair.status();
    if (file == "admin") certificates_.admin = *pair;
    if (file == "controller-manager") certificates_.controller_manager = *pair;
    written = WriteFile(Path(StrCat("pki/", file, ".crt")), pair->certificate_pem);
    if (written.ok()) {
      written = WriteFile(Path(StrCat("pki/", file, ".key")), pair->private_key_pem, 0600);
    }
    if (!written.ok()) return written;
  }

  // handoff's CA and identities, made as an operator makes them: with `handoffctl certs`.
  std::vector<std::string> coordinator = {"issue", "--coordinator", "--dns", kCoordinatorServerName,
                                          "--ip",  "127.0.0.1"};
  if (!cluster_->CoordinatorAltIp().empty()) {
    coordinator.insert(coordinator.end(), {"--ip", cluster_->CoordinatorAltIp()});
  }
  coordinator.insert(coordinator.end(), {"--out", Path("pki/coordinator")});
  std::vector<std::vector<std::string>> commands = {
      {"init", "--validity", "24h"},
      coordinator,
      {"issue", "--operator", kOperator, "--out", Path("pki/operator")}};
  for (const std::vector<NodeRun>* group : {&nodes_, &spares_, &workers_}) {
    for (const NodeRun& node : *group) {
      commands.push_back({"issue", "--node", node.spec().name, "--out",
                          Path(StrCat("pki/agent-", node.spec().name))});
    }
  }
  const std::string log = Path("logs/handoffctl-certs.log");
  for (std::vector<std::string>& command : commands) {
    command.insert(command.begin(), {Handoffctl(), "certs"});
    command.insert(command.begin() + 3, {"--dir", Path("pki/handoff")});
    if (command[2] == "issue") command.insert(command.end(), {"--validity", "24h"});
    absl::StatusOr<std::unique_ptr<Process>> issued = SpawnOwned(command, log);
    if (!issued.ok()) return issued.status();
    int status = 0;
    if (!(*issued)->WaitFor(absl::Seconds(30), &status) || status != 0) {
      return absl::InternalError(StrCat("handoffctl certs ", command[2], " failed (",
                                        DescribeWaitStatus(status), "); see ", log));
    }
  }
  return absl::OkStatus();
}

absl::Status SandboxRun::StartCluster() { return cluster_->Start(certificates_); }

absl::Status SandboxRun::WaitForCloudControllers(absl::Duration timeout) {
  absl::Time deadline = absl::Now() + timeout;
  while (absl::Now() < deadline && !interrupted_()) {
    const MonitorReport& report = cluster_->Poll(absl::Now());
    // route does not run: the managers keep kubeadm's --configure-cloud-routes=false.
    bool all = !report.controllers.empty();
    for (const ControllerStats& stats : report.controllers) {
      if (stats.runs.empty() || stats.runs.back().end != RunEnd::kStillRunning) all = false;
    }
    if (all) return absl::OkStatus();
    // The managers' records are files they append to; nothing signals a new line.
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return absl::DeadlineExceededError(
      StrCat("no kube-controller-manager took the lease and ran the cloud controllers within ",
             FormatSeconds(timeout), "; see ", Path("logs")));
}

absl::StatusOr<std::unique_ptr<kube::KubeClient>> SandboxRun::AdminClient() {
  absl::StatusOr<kube::ClusterCredentials> credentials =
      kube::LoadKubeconfig(*fs_, Path("admin.conf"), "");
  if (!credentials.ok()) return credentials.status();
  absl::StatusOr<std::unique_ptr<kube::HttpTransport>> transport =
      kube::NewCurlTransport(*credentials);
  if (!transport.ok()) return transport.status();
  return std::make_unique<kube::KubeClient>(*std::move(transport), *clock_,
                                            kube::ClientOptionsFor(*credentials));
}

absl::Status SandboxRun::ApplyRbac() {
  absl::StatusOr<std::unique_ptr<kube::KubeClient>> client = AdminClient();
  if (!client.ok()) return client.status();
  absl::StatusOr<kube::RbacApplyResult> applied = kube::ApplyRbac(**client, kube::RbacOptions{});
  if (!applied.ok()) return applied.status();
  Say(StrCat("handoffctl rbac apply: ", applied->applied.size(),
             " change(s) for the migration lease"));
  return absl::OkStatus();
}

absl::Status SandboxRun::StartCoordinator() {
  if (coordinator_metrics_port_ == 0) {
    absl::StatusOr<int> port = real::PickFreePort();
    if (!port.ok()) return port.status();
    coordinator_metrics_port_ = *port;
  }
  std::string nodes;
  for (const NodeRun& node : nodes_) nodes += (nodes.empty() ? "" : ",") + node.spec().name;
  std::string port_file = Path("coordinator.port");
  (void)fs_->RemoveFile(port_file);
  // Started as the package starts it: every option from its configuration file.
  const std::string config = Path("coordinator.yaml");
  std::vector<std::pair<std::string, std::string>> etcd;
  if (std::optional<EtcdAccess> access = cluster_->Etcd()) {
    // What the replace strategy reads etcd's member list with, as the README sets it up.
    etcd = {{"etcd-endpoint", StrJoin(access->endpoints, ",")},
            {"etcd-ca", access->ca_file},
            {"etcd-cert", access->cert_file},
            {"etcd-key", access->key_file}};
  }
  std::vector<std::pair<std::string, std::string>> keys = {
      {"listen", StrCat(cluster_->CoordinatorHost(), ":", coordinator_port_)},
      {"port-file", port_file},
      {"state-dir", Path("coordinator")},
      {"ca", Path("pki/handoff/ca.crt")},
      {"cert", Path("pki/coordinator.crt")},
      {"key", Path("pki/coordinator.key")},
      {"nodes", nodes},
      {"settings", Path("settings.yaml")},
      {"kubeconfig", Path("admin.conf")},
      {"facts-interval", "300ms"},
      {"shutdown-grace", "2s"},
      {"lease-release", options_.lease_release ? "on" : "off"},
      {"metrics-listen", StrCat("127.0.0.1:", coordinator_metrics_port_)},
      {"log-format", "text"}};
  keys.insert(keys.end(), etcd.begin(), etcd.end());
  absl::Status written = WriteFile(
      config, DaemonConfig("handoff-coordinator for this sandbox, started with --config", keys));
  if (!written.ok()) return written;
  std::vector<std::string> argv = {Bin("handoff-coordinator"), "--config", config};
  absl::StatusOr<std::unique_ptr<Process>> started = SpawnOwned(argv, Path("logs/coordinator.log"));
  if (!started.ok()) return started.status();
  coordinator_ = *std::move(started);
  absl::Time deadline = absl::Now() + absl::Seconds(30);
  while (absl::Now() < deadline) {
    absl::StatusOr<std::string> port = fs_->ReadFile(port_file);
    if (port.ok()) {
      coordinator_port_ = std::stoi(*port);
      return ResolveOperatorEndpoint();
    }
    // Waiting on the process both paces the polling of the port file and notices an exit.
    int status = 0;
    if (coordinator_->WaitFor(absl::Milliseconds(50), &status)) {
      return absl::UnavailableError(StrCat("handoff-coordinator exited (",
                                           DescribeWaitStatus(status), "); see ",
                                           Path("logs/coordinator.log")));
    }
  }
  return absl::DeadlineExceededError("handoff-coordinator did not start serving within 30s");
}

absl::Status SandboxRun::StartAgent(NodeRun& node) {
  if (node.metrics_port == 0) {
    absl::StatusOr<int> port = real::PickFreePort();
    if (!port.ok()) return port.status();
    node.metrics_port = *port;
  }
  const AgentHost host = cluster_->AgentHostOf(node.node);
  // Where the agent finds a file of its node.
  auto in = [&host](const std::string& path) { return StrCat(host.agent_prefix, path); };
  // Its certificate and the CA's, where the package's configuration looks for them.
  const std::string name = node.spec().name;
  for (const auto& [from, to, mode] :
       {std::tuple{Path("pki/handoff/ca.crt"), "/etc/handoff/pki/ca.crt", 0644u},
        std::tuple{Path(StrCat("pki/agent-", name, ".crt")), "/etc/handoff/pki/agent.crt", 0644u},
        std::tuple{Path(StrCat("pki/agent-", name, ".key")), "/etc/handoff/pki/agent.key",
                   0600u}}) {
    absl::StatusOr<std::string> content = fs_->ReadFile(from);
    if (!content.ok()) return content.status();
    absl::Status copied = WriteNodeFile(host, to, *content, mode);
    if (!copied.ok()) return copied;
  }
  std::vector<std::pair<std::string, std::string>> keys = {
      {"coordinator", StrCat(cluster_->CoordinatorHost(), ":", coordinator_port_)},
      {"server-name", kCoordinatorServerName},
      {"ca", in("/etc/handoff/pki/ca.crt")},
      {"cert", in("/etc/handoff/pki/agent.crt")},
      {"key", in("/etc/handoff/pki/agent.key")}};
  if (!host.root.empty()) keys.emplace_back("root", host.root);
  if (!host.local_settings.empty()) {
    absl::Status written = WriteNodeFile(
        host, "/etc/handoff/agent-settings.yaml",
        StrCat("# This node's own settings for handoff-agent run.\n", host.local_settings));
    if (!written.ok()) return written;
    keys.emplace_back("settings", in("/etc/handoff/agent-settings.yaml"));
  }
  if (!host.proc_root.empty()) keys.emplace_back("proc-root", host.proc_root);
  keys.insert(keys.end(), {{"timeout", host.timeout},
                           {"reconnect-max", "500ms"},
                           // The cluster tag removed in the fake AWS shows within seconds.
                           {"cloud-refresh", "2s"},
                           {"kubelet-restart-command", host.kubelet_restart_command},
                           {"metrics-listen", StrCat(host.metrics_host, ":", node.metrics_port)},
                           {"log-format", "text"}});
  absl::Status written = WriteNodeFile(
      host, "/etc/handoff/agent.yaml",
      DaemonConfig(StrCat("handoff-agent run on ", name, " in this sandbox, started with --config"),
                   keys));
  if (!written.ok()) return written;
  std::vector<std::string> argv = host.prefix;
  argv.insert(argv.end(), {Bin("handoff-agent"), "run", "--config", in("/etc/handoff/agent.yaml")});
  absl::StatusOr<std::unique_ptr<Process>> started =
      SpawnOwned(argv, Path(StrCat("logs/agent-", name, ".log")));
  if (!started.ok()) return started.status();
  node.agent = *std::move(started);
  return absl::OkStatus();
}

absl::Status SandboxRun::RestartAgent(NodeRun& node, bool kill) {
  if (node.agent) node.agent->Stop(kill ? SIGKILL : SIGTERM, absl::Seconds(10));
  return StartAgent(node);
}

absl::Status SandboxRun::ResolveOperatorEndpoint() {
  ctl::CoordinatorOptions options;
  options.address = StrCat(cluster_->CoordinatorHost(), ":", coordinator_port_);
  options.ca = Path("pki/handoff/ca.crt");
  options.cert = Path("pki/operator.crt");
  options.key = Path("pki/operator.key");
  options.server_name = kCoordinatorServerName;
  options.timeout = "20s";
  options.watch_timeout = "1h";
  absl::StatusOr<ctl::CoordinatorEndpoint> endpoint =
      ctl::ResolveCoordinatorEndpoint(options, nullptr, *fs_);
  if (!endpoint.ok()) return endpoint.status();
  operator_endpoint_ = *std::move(endpoint);
  return absl::OkStatus();
}

std::unique_ptr<ctl::OperatorClient> SandboxRun::ConnectOperator() const {
  return ctl::NewGrpcOperatorClient(operator_endpoint_);
}

void SandboxRun::TearDown() {
  if (torn_down_) return;
  torn_down_ = true;
  feed_.reset();
  for (std::vector<NodeRun>* group : {&nodes_, &spares_, &workers_}) {
    for (NodeRun& node : *group) {
      if (node.agent) node.agent->Stop(SIGTERM, absl::Seconds(5));
    }
  }
  if (coordinator_) coordinator_->Stop(SIGTERM, absl::Seconds(5));
  if (cluster_) cluster_->Stop();
  reaping_ = false;
  if (reaper_.joinable()) reaper_.join();
  if (!options_.keep && !dir_.empty()) {
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  } else if (!dir_.empty()) {
    out_ << "kept " << dir_ << " (logs/, records/, nodes/, coordinator/)\n";
  }
}

}  // namespace handoff::sandbox
