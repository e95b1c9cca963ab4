#include "rehearsal/sandbox/kubeadm/kubeadm_cluster.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/time/clock.h"
#include "common/base/strings.h"
#include "common/fs/atomic_file.h"
#include "common/fs/file_system.h"
#include "common/pki/pki.h"
#include "common/system/clock.h"
#include "common/system/process_table.h"
#include "common/kube/client.h"
#include "common/kube/http_transport.h"
#include "common/kube/kubeconfig.h"
#include "common/kube/resource.h"
#include "rehearsal/monitor/klog_scanner.h"
#include "rehearsal/monitor/monitor.h"
#include "rehearsal/monitor/process_watcher.h"
#include "rehearsal/monitor/run_record.h"
#include "rehearsal/node/node_enter.h"
#include "rehearsal/node/kubelet_unit.h"
#include "rehearsal/node/node_init.h"
#include "rehearsal/node/node_spec.h"
#include "rehearsal/node/text_file.h"
#include "rehearsal/real/components.h"
#include "rehearsal/real/control_plane.h"
#include "rehearsal/real/fake_aws.h"
#include "rehearsal/sandbox/kubeadm/host_changes.h"
#include "rehearsal/sandbox/kubeadm/kubeadm_cluster_internal.h"
#include "rehearsal/sandbox/kubeadm/node_files.h"
#include "rehearsal/sandbox/manager_monitor.h"

namespace handoff::sandbox {
namespace {

using node::ReadText;

// What a kubelet v1.26 logs as its main sync loop starts, its manifests read.
constexpr char kSyncLoopStarted[] = "Starting kubelet main sync loop";
constexpr int kPrefixLength = 24;
constexpr char kZones[] = "abc";
constexpr char kRegion[] = "us-east-1";
constexpr char kImdsIp[] = "169.254.169.254";
// Debian's CA bundle: the host's, and a worker's with the fake AWS's CA added.
constexpr char kCaBundle[] = "/etc/ssl/certs/ca-certificates.crt";
// Where the fake AWS serves its API over HTTPS, on the bridge: AWS's own port.
constexpr int kAwsHttpsPort = 443;
// The images, as the components' archive names them (tests/real/components.sh).
constexpr char kPauseImage[] = "registry.k8s.io/pause:3.9";
// kubeadm v1.26.13's etcd, pinned in the ClusterConfiguration (kubeadm v1.27.16 would move to
// 3.5.12-0, which the components do not build).
constexpr char kEtcdImageTag[] = "3.5.10-0";
// The checks of `kubeadm upgrade apply` this cluster fails by design: kubeadm v1.27.16 checks
// CoreDNS's Corefile even where CoreDNS was skipped at init ("start version '' not supported").
// (Its nodes are Ready and run pods on their bridge network, so ControlPlaneNodesReady and
// CreateJob are made.)
constexpr char kUpgradeIgnoredChecks[] = "CoreDNSUnsupportedPlugins,CoreDNSMigration";
constexpr char kCcmImage[] = "registry.k8s.io/provider-aws/cloud-controller-manager:v1.27.2";
// Where the unhealthy fault keeps the node's cloud-controller-manager image meanwhile: a name
// nothing asks for, so the kubelet finds no image to run and cannot pull one.
constexpr char kHeldCcmImage[] = "handoff-sandbox.invalid/held/cloud-controller-manager:v1.27.2";

// An interface of this machine other than `except` with an address in `network` (another
// kubeadm sandbox runs on it, or the network is someone else's): "name (address)".
std::optional<std::string> SubnetInUse(const KubeadmNetwork& network, const std::string& except) {
  ifaddrs* addresses = nullptr;
  if (::getifaddrs(&addresses) != 0) return std::nullopt;
  std::optional<std::string> user;
  for (ifaddrs* it = addresses; it != nullptr; it = it->ifa_next) {
    if (it->ifa_addr == nullptr || it->ifa_addr->sa_family != AF_INET) continue;
    char text[INET_ADDRSTRLEN] = {};
    const auto* in = reinterpret_cast<const sockaddr_in*>(it->ifa_addr);
    ::inet_ntop(AF_INET, &in->sin_addr, text, sizeof(text));
    if (StartsWith(text, network.prefix) && except != it->ifa_name) {
      user = StrCat(it->ifa_name, " (", text, ")");
    }
  }
  ::freeifaddrs(addresses);
  return user;
}

// `count` characters drawn from `alphabet` with the kernel's randomness.
std::string RandomText(size_t count, std::string_view alphabet) {
  std::random_device random;
  std::uniform_int_distribution<size_t> pick(0, alphabet.size() - 1);
  std::string text;
  for (size_t i = 0; i < count; ++i) text.push_back(alphabet[pick(random)]);
  return text;
}

// The first line a program prints for `flag`, e.g. "containerd github.com/... 1.6.20~ds1".
std::string FirstLineOf(const std::vector<std::string>& argv, const std::string& scratch) {
  absl::StatusOr<std::unique_ptr<Process>> run = Process::Spawn(argv, scratch);
  if (!run.ok()) return "";
  (*run)->WaitFor(absl::Seconds(10), nullptr);
  std::optional<std::string> text = ReadText(scratch);
  std::filesystem::remove(scratch);
  if (!text) return "";
  return std::string(StripWhitespace(text->substr(0, text->find('\n'))));
}

// "/usr/bin/containerd" for "containerd": the first executable on $PATH (or the usual sbin
// directories, which a root shell has and a test runner may not).
std::string OnPath(const std::string& name) {
  const char* path = ::getenv("PATH");
  std::string dirs = StrCat(path != nullptr ? path : "", ":/usr/local/sbin:/usr/sbin:/sbin");
  for (std::string_view dir : StrSplit(dirs, ":", true)) {
    const std::string candidate = StrCat(dir, "/", name);
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return "";
}

}  // namespace

namespace kubeadm {

bool ConditionTrue(const kube::Json& object, std::string_view type) {
  const kube::Json* conditions = nullptr;
  if (object.contains("status") && object["status"].contains("conditions")) {
    conditions = &object["status"]["conditions"];
  }
  if (conditions == nullptr || !conditions->is_array()) return false;
  for (const kube::Json& condition : *conditions) {
    if (condition.value("type", "") == type) return condition.value("status", "") == "True";
  }
  return false;
}

KubeadmCluster::KubeadmCluster(const ClusterSetup& setup, real::Components components)
    : setup_(setup),
      components_(std::move(components)),
      fs_(NewPosixFileSystem("/")),
      clock_(NewRealClock()),
      monitor_(*fs_, StrCat(setup.dir, "/records"), setup.timing) {
  // The sandbox parsed --network before it made the nodes.
  network_ = ParseKubeadmNetwork(setup.network).value_or(KubeadmNetwork{"172.31.250."});
  plan_.kubernetes_version = kVersionN;
  plan_.endpoint_ip = network_.EndpointIp();
  plan_.pause_image = kPauseImage;
  plan_.etcd_image_tag = kEtcdImageTag;
  // kubeadm's formats: a bootstrap token [a-z0-9]{6}.[a-z0-9]{16}, a certificate key of 32
  // random bytes in hex (it encrypts the uploaded certificates for the joining nodes).
  constexpr std::string_view kTokenAlphabet = "abcdefghijklmnopqrstuvwxyz0123456789";
  plan_.bootstrap_token =
      StrCat(RandomText(6, kTokenAlphabet), ".", RandomText(16, kTokenAlphabet));
  plan_.certificate_key = RandomText(64, "0123456789abcdef");
  run_id_ = std::to_string(::getpid());
  // The spares are machines like the others (instances, addresses, the load balancer's
  // backends), only not joined yet.
  // The workers come last: machines_[first_worker_] on.
  machines_ = setup.nodes;
  machines_.insert(machines_.end(), setup.spares.begin(), setup.spares.end());
  first_worker_ = machines_.size();
  machines_.insert(machines_.end(), setup.workers.begin(), setup.workers.end());
  for (size_t i = 0; i < machines_.size(); ++i) {
    kubeadm::PlannedNode planned;
    planned.name = machines_[i].spec.name;
    planned.ip = machines_[i].spec.ip;
    planned.zone = machines_[i].spec.zone;
    planned.cgroup_root = StrCat("/handoff-sandbox-", run_id_, "-", i + 1);
    planned.pod_cidr = StrCat("10.244.", i + 1, ".0/24");
    planned.worker = machines_[i].worker;
    plan_.nodes.push_back(planned);
  }
  if (!setup.workers.empty()) {
    plan_.aws_https_ip = network_.BridgeIp();
    plan_.aws_region = kRegion;
  }
}

absl::Status KubeadmCluster::SetCloudControllerManagerUnhealthy(const ClusterNode& cluster_node,
                                                                bool unhealthy) {
  const Node* node = Find(cluster_node.spec.name);
  if (node == nullptr) return absl::NotFoundError(cluster_node.spec.name);
  // The image kept under another name while it is away, so that it comes back at once.
  const std::vector<std::vector<std::string>> steps =
      unhealthy ? std::vector<std::vector<std::string>>{{"ctr", "-n", "k8s.io", "images", "tag",
                                                         kCcmImage, kHeldCcmImage},
                                                        {"ctr", "-n", "k8s.io", "images", "rm",
                                                         kCcmImage}}
                : std::vector<std::vector<std::string>>{
                      {"ctr", "-n", "k8s.io", "images", "tag", kHeldCcmImage, kCcmImage}};
  for (const std::vector<std::string>& step : steps) {
    absl::Status ran = RunOnNode(*node, step, StrCat("ctr-", node->name), absl::Seconds(30));
    if (!ran.ok()) return ran;
  }
  return absl::OkStatus();
}

absl::Status KubeadmCluster::CutKubeletOff(const ClusterNode& cluster_node, bool cut) {
  const Node* node = Find(cluster_node.spec.name);
  if (node == nullptr) return absl::NotFoundError(cluster_node.spec.name);
  // Only the kubelet opens connections to the endpoint (kubelet.conf); the node's managers use
  // its own API server (controller-manager.conf, scheduler.conf), its agent the bridge. A rule
  // for the endpoint's port alone, not a route to its address: the load balancer's own
  // connections to this node's API server come from that address, and their replies must
  // still reach it.
  absl::Status routed = RunOnNode(
      *node,
      {"ip", "rule", cut ? "add" : "del", "to", StrCat(network_.EndpointIp(), "/32"), "ipproto",
       "tcp", "dport", std::to_string(kubeadm::kApiServerPort), "unreachable"},
      StrCat("route-", node->name), absl::Seconds(30));
  if (!routed.ok()) return routed;
  // Restarted either way: cut off, it reads its manifests at once and then waits for the API
  // server for good; given its route back, it syncs at once rather than after its reflectors'
  // back-off (up to 30 s). Its main sync loop starting says it has read its manifests.
  const std::string log = Log(StrCat("kubelet-", node->name));
  const auto loops = [&log] {
    std::optional<std::string> text = ReadText(log);
    size_t count = 0;
    for (size_t at = 0; text && (at = text->find(kSyncLoopStarted, at)) != std::string::npos;
         at += sizeof(kSyncLoopStarted) - 1) {
      ++count;
    }
    return count;
  };
  const size_t before = loops();
  absl::Status restarted = ControlNode(*node, "restart-kubelet", absl::Seconds(30));
  if (!restarted.ok()) return restarted;
  const absl::Time deadline = absl::Now() + absl::Seconds(30);
  while (loops() == before) {
    if (absl::Now() >= deadline) {
      return absl::DeadlineExceededError(StrCat(node->name,
                                                "'s kubelet did not start its sync "
                                                "loop within 30 s; its log is ",
                                                log));
    }
    // The kubelet's log is the only sign, and a file says nothing when it grows.
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return absl::OkStatus();
}


absl::Status KubeadmCluster::RunOnNode(const Node& node, const std::vector<std::string>& argv,
                                       const std::string& log_name, absl::Duration timeout) {
  absl::StatusOr<std::unique_ptr<Process>> run = StartOnNode(node, argv, log_name);
  if (!run.ok()) return run.status();
  return AwaitOnNode(**run, node, argv, log_name, timeout);
}

absl::StatusOr<std::unique_ptr<Process>> KubeadmCluster::StartOnNode(
    const Node& node, const std::vector<std::string>& argv, const std::string& log_name) {
  std::vector<std::string> full = EnterPrefix(node.init_pid);
  full.insert(full.end(), argv.begin(), argv.end());
  return setup_.spawn(full, Log(log_name));
}

absl::Status KubeadmCluster::AwaitOnNode(Process& run, const Node& node,
                                         const std::vector<std::string>& argv,
                                         const std::string& log_name, absl::Duration timeout) {
  const std::string log = Log(log_name);
  int status = 0;
  // In slices, so that an interrupt stops a command that waits minutes (kubeadm join waits up to
  // 4 minutes for its node's static pods) at once.
  const absl::Time deadline = absl::Now() + timeout;
  bool exited = false;
  while (!exited && absl::Now() < deadline) {
    exited = run.WaitFor(std::min(absl::Milliseconds(200), deadline - absl::Now()), &status);
    if (!exited && setup_.interrupted()) {
      run.Stop(SIGTERM, absl::Seconds(5));
      return absl::CancelledError(StrCat("interrupted while ", StrJoin(argv, " "), " ran on ",
                                         node.name, "; its log is ", log));
    }
  }
  if (!exited) {
    run.Stop(SIGTERM, absl::Seconds(5));
    return absl::DeadlineExceededError(StrCat(StrJoin(argv, " "), " on ", node.name,
                                              " did not finish within ",
                                              absl::FormatDuration(timeout), "; its log is ", log,
                                              ", which ends with:\n", real::LogTail(log)));
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return absl::UnavailableError(StrCat(StrJoin(argv, " "), " on ", node.name, " failed (",
                                         DescribeWaitStatus(status), "); its log is ", log,
                                         ", which ends with:\n", real::LogTail(log)));
  }
  return absl::OkStatus();
}

absl::Status KubeadmCluster::RunOnHost(const std::vector<std::string>& argv) {
  std::vector<std::string> full = argv;
  full[0] = OnPath(argv[0]);
  if (full[0].empty()) return absl::FailedPreconditionError(StrCat(argv[0], " is not on PATH"));
  const std::string log = Log("host-commands");
  absl::StatusOr<std::unique_ptr<Process>> run = setup_.spawn(full, log);
  if (!run.ok()) return run.status();
  int status = 0;
  if (!(*run)->WaitFor(absl::Seconds(30), &status) || !WIFEXITED(status) ||
      WEXITSTATUS(status) != 0) {
    return absl::UnavailableError(StrCat(StrJoin(argv, " "), " failed (",
                                         DescribeWaitStatus(status), "); see ", log, ":\n",
                                         real::LogTail(log, 600)));
  }
  return absl::OkStatus();
}

absl::Status KubeadmCluster::WriteNodeFile(const Node& node, const std::string& path,
                                           const std::string& text, unsigned mode) {
  // Through the node's own mounts (its /etc is an overlay): /proc/<pid>/root is its "/", and
  // paths are resolved inside it as the node resolves them.
  std::unique_ptr<FileSystem> node_fs =
      NewPosixFileSystem(StrCat("/proc/", node.init_pid, "/root"));
  return AtomicReplaceCreatingParents(*node_fs, path, text, mode);
}

absl::Status KubeadmCluster::CheckHost() {
  for (const char* program :
       {"containerd", "containerd-shim-runc-v2", "runc", "ctr", "haproxy", "ip"}) {
    if (OnPath(program).empty()) {
      return absl::FailedPreconditionError(
          StrCat("--cluster kubeadm needs ", program,
                 " (Debian's containerd, runc, haproxy and iproute2: packaging/install-deps.sh)"));
    }
  }
  for (const char* plugin : {"bridge", "host-local", "loopback"}) {
    const std::string path = StrCat(kubeadm::kCniBinDir, "/", plugin);
    if (!std::filesystem::exists(path)) {
      return absl::FailedPreconditionError(StrCat(
          "--cluster kubeadm gives each node a pod network with the reference CNI plugins, "
          "and ",
          path, " is missing (Debian's containernetworking-plugins: packaging/install-deps.sh)"));
    }
  }
  if (!std::filesystem::exists("/sys/fs/cgroup/memory") ||
      !std::filesystem::exists("/sys/fs/cgroup/cpu")) {
    return absl::FailedPreconditionError(
        "--cluster kubeadm runs the kubelet with the cgroupfs driver on cgroup v1 controllers, "
        "and this machine has no /sys/fs/cgroup/memory and /sys/fs/cgroup/cpu");
  }
  // A node overlays these host paths: its own directory must not be under one of them, or the
  // node would see (and write) its files through its own overlay.
  for (std::string_view overlaid : node::kOverlaidPaths) {
    if (StartsWith(setup_.dir, StrCat(overlaid, "/"))) {
      return absl::FailedPreconditionError(
          StrCat("--dir ", setup_.dir, " is under ", overlaid,
                 ", which every node overlays: give a directory elsewhere (e.g. under /tmp)"));
    }
  }
  if (std::optional<std::string> user = SubnetInUse(network_, "")) return NetworkInUse(*user);
  return absl::OkStatus();
}

absl::Status KubeadmCluster::MakeBridge() {
  bridge_ = StrCat("hsb", run_id_);
  absl::Status recorded = changes_->WillCreateLink(bridge_);
  if (!recorded.ok()) return recorded;
  for (const std::vector<std::string>& step :
       {std::vector<std::string>{"ip", "link", "add", bridge_, "type", "bridge"},
        std::vector<std::string>{"ip", "addr", "add",
                                 StrCat(network_.BridgeIp(), "/", kPrefixLength), "dev", bridge_},
        std::vector<std::string>{"ip", "link", "set", bridge_, "up"}}) {
    absl::Status ran = RunOnHost(step);
    if (!ran.ok()) return ran;
  }
  // Looked at again with the bridge up: two runs that started on one network at the same moment
  // both see the other's bridge now, and both stop.
  if (std::optional<std::string> user = SubnetInUse(network_, bridge_)) return NetworkInUse(*user);
  return absl::OkStatus();
}

absl::StatusOr<Node> KubeadmCluster::BootNode(const std::string& name, const std::string& dir,
                                              bool services) {
  Node node;
  node.name = name;
  node.dir = dir;
  node.spec.name = name;
  node.spec.dir = dir;
  node.spec.log_dir = StrCat(setup_.dir, "/logs");
  node.spec.services = services;
  if (services) {
    node.spec.containerd = OnPath("containerd");
    node.spec.kubelet = components_.Binary(real::kKubelet);
    node.spec.path = NodePath();
  }
  std::vector<std::string> argv = {NodeBinary(), "boot"};
  for (std::string& arg : node::BootArgs(node.spec)) argv.push_back(std::move(arg));
  const std::string log = Log(StrCat("node-", name));
  absl::StatusOr<std::unique_ptr<Process>> boot = setup_.spawn(argv, log);
  if (!boot.ok()) return boot.status();
  node.boot = *std::move(boot);
  const absl::Time deadline = absl::Now() + absl::Seconds(30);
  while (true) {
    std::optional<std::string> pid = ReadText(node::PidFile(node.spec));
    if (pid && std::filesystem::exists(node::ReadyFile(node.spec))) {
      node.init_pid = std::strtoll(pid->c_str(), nullptr, 10);
      break;
    }
    int status = 0;
    if (node.boot->WaitFor(absl::Milliseconds(50), &status)) {
      return absl::UnavailableError(StrCat("node ", name, " did not boot (",
                                           DescribeWaitStatus(status), "); its log is ", log, ":\n",
                                           real::LogTail(log)));
    }
    if (absl::Now() > deadline) {
      return absl::DeadlineExceededError(
          StrCat("node ", name, " did not boot within 30s; see ", log));
    }
  }
  absl::Status recorded = changes_->Started(kubeadm::CurrentProcess(node.init_pid));
  if (!recorded.ok()) return recorded;
  std::error_code error;
  node.netns = std::filesystem::read_symlink(StrCat("/proc/", node.init_pid, "/ns/net"), error);
  return node;
}

absl::Status KubeadmCluster::Connect(Node& node, const std::string& ip, int index) {
  const std::string host_side = StrCat("hsv", run_id_, "n", index);
  const std::string node_side = StrCat("hsp", run_id_, "n", index);
  absl::Status recorded = changes_->WillCreateLink(host_side);
  if (!recorded.ok()) return recorded;
  for (const std::vector<std::string>& step :
       {std::vector<std::string>{"ip", "link", "add", host_side, "type", "veth", "peer", "name",
                                 node_side},
        std::vector<std::string>{"ip", "link", "set", host_side, "master", bridge_, "up"},
        std::vector<std::string>{"ip", "link", "set", node_side, "netns",
                                 std::to_string(node.init_pid)}}) {
    absl::Status ran = RunOnHost(step);
    if (!ran.ok()) return ran;
  }
  // Inside: eth0 with the node's address, no default route; the instance metadata address on
  // lo, where the fake AWS serves this node's metadata.
  for (const std::vector<std::string>& step :
       {std::vector<std::string>{"ip", "link", "set", node_side, "name", "eth0"},
        std::vector<std::string>{"ip", "addr", "add", StrCat(ip, "/", kPrefixLength), "dev",
                                 "eth0"},
        std::vector<std::string>{"ip", "link", "set", "eth0", "up"},
        std::vector<std::string>{"ip", "addr", "add", StrCat(kImdsIp, "/32"), "dev", "lo"}}) {
    absl::Status ran = RunOnNode(node, step, "host-commands", absl::Seconds(30));
    if (!ran.ok()) return ran;
  }
  return absl::OkStatus();
}

absl::Status KubeadmCluster::StartFakeAws() {
  absl::StatusOr<int> port = real::PickFreePort();
  if (!port.ok()) return port.status();
  const std::string ready = StrCat(setup_.dir, "/fake-aws.json");
  std::vector<std::string> argv = {components_.Binary(real::kFakeAws),
                                   "--cluster-id",
                                   real::kSandboxClusterId,
                                   "--region",
                                   kRegion,
                                   "--ec2-host",
                                   network_.BridgeIp(),
                                   "--ec2-port",
                                   std::to_string(*port),
                                   "--imds-port",
                                   "80",
                                   "--imds-host",
                                   kImdsIp,
                                   "--ready-file",
                                   ready,
                                   "--request-log",
                                   StrCat(setup_.dir, "/logs/fake-aws-requests.jsonl")};
  if (!plan_.aws_https_ip.empty()) {
    argv.insert(argv.end(), {"--tls-host", plan_.aws_https_ip, "--tls-port",
                             std::to_string(kAwsHttpsPort), "--tls-cert",
                             StrCat(setup_.dir, "/pki/aws-https.crt"), "--tls-key",
                             StrCat(setup_.dir, "/pki/aws-https.key")});
  }
  for (size_t i = 0; i < nodes_.size(); ++i) {
    argv.insert(argv.end(),
                {"--node", StrCat(nodes_[i].name, "=", nodes_[i].ip, "@", plan_.nodes[i].zone),
                 "--imds-netns", StrCat(nodes_[i].name, "=/proc/", nodes_[i].init_pid, "/ns/net")});
  }
  // The sandbox's spawn records the process in the host-change record at once.
  absl::StatusOr<real::RunningFakeAws> started =
      real::StartFakeAws(argv, ready, Log("fake-aws"), setup_.spawn);
  if (!started.ok()) return started.status();
  fake_aws_ = std::move(started->process);
  aws_ = std::move(started->aws);
  const std::string cloud_config =
      kubeadm::CloudConfig(real::kSandboxClusterId, aws_.region, aws_.ec2_url);
  for (const Node& node : nodes_) {
    absl::Status written = WriteNodeFile(node, kubeadm::kCloudConfigPath, cloud_config);
    if (!written.ok()) return written;
  }
  return absl::OkStatus();
}

absl::Status KubeadmCluster::StartLoadBalancer() {
  const std::string config = StrCat(lb_.dir, "/haproxy.cfg");
  FileInfo info;
  info.mode = 0644;
  absl::Status written = AtomicReplace(*fs_, config, kubeadm::HaproxyConfig(plan_), info);
  if (!written.ok()) return written;
  std::vector<std::string> argv = EnterPrefix(lb_.init_pid);
  argv.insert(argv.end(), {OnPath("haproxy"), "-db", "-f", config});
  absl::StatusOr<std::unique_ptr<Process>> started = setup_.spawn(argv, Log("haproxy"));
  if (!started.ok()) return started.status();
  haproxy_ = *std::move(started);
  return absl::OkStatus();
}

absl::Status KubeadmCluster::ImportImages() {
  // Every node at once: the import is mostly the disk's work.
  std::vector<std::pair<const Node*, std::unique_ptr<Process>>> imports;
  for (size_t i = 0; i < nodes_.size(); ++i) {
    const Node& node = nodes_[i];
    const std::string archive = components_.File(
        machines_[i].worker ? real::kWorkerImagesArchive : real::kImagesArchive);
    std::vector<std::string> argv = EnterPrefix(node.init_pid);
    argv.insert(argv.end(), {"ctr", "-n", "k8s.io", "images", "import", archive});
    absl::StatusOr<std::unique_ptr<Process>> started =
        setup_.spawn(argv, Log(StrCat("images-", node.name)));
    if (!started.ok()) return started.status();
    imports.emplace_back(&node, *std::move(started));
  }
  for (auto& [node, process] : imports) {
    int status = 0;
    const std::string log = Log(StrCat("images-", node->name));
    if (!process->WaitFor(absl::Minutes(5), &status) || !WIFEXITED(status) ||
        WEXITSTATUS(status) != 0) {
      return absl::UnavailableError(StrCat("importing the images on ", node->name, " failed (",
                                           DescribeWaitStatus(status), "); see ", log, ":\n",
                                           real::LogTail(log)));
    }
  }
  return absl::OkStatus();
}

absl::Status KubeadmCluster::RunKubeadm() {
  const Node& first = nodes_.front();
  absl::Status written =
      WriteNodeFile(first, kubeadm::kKubeadmConfigPath, kubeadm::InitConfiguration(plan_), 0600);
  if (!written.ok()) return written;
  const absl::Time init_started = absl::Now();
  absl::Status ran = RunOnNode(first,
                               {components_.Binary(real::kKubeadm), "init", "--config",
                                kubeadm::kKubeadmConfigPath, "--upload-certs"},
                               StrCat("kubeadm-", first.name), absl::Minutes(5));
  if (!ran.ok()) return ran;
  setup_.say(StrCat(
      "kubeadm init on ", first.name, ": ",
      absl::FormatDuration(absl::Trunc(absl::Now() - init_started, absl::Milliseconds(100)))));
  // The admin's kubeconfig names the load balancer, which the host reaches on the bridge.
  absl::StatusOr<std::string> admin =
      fs_->ReadFile(StrCat("/proc/", first.init_pid, "/root/etc/kubernetes/admin.conf"));
  if (!admin.ok()) return admin.status();
  FileInfo info;
  info.mode = 0600;
  written = AtomicReplace(*fs_, StrCat(setup_.dir, "/admin.conf"), *admin, info);
  if (!written.ok()) return written;
  absl::StatusOr<std::string> ca =
      fs_->ReadFile(StrCat("/proc/", first.init_pid, "/root/etc/kubernetes/pki/ca.crt"));
  if (!ca.ok()) return ca.status();
  absl::StatusOr<std::string> pin = pki::PublicKeyPin(*ca);
  if (!pin.ok()) return pin.status();
  ca_pin_ = *pin;
  joined_ = {first.name};
  joined_next_[first.name] = false;
  if (absl::Status kept = KeepEtcdAccess(); !kept.ok()) return kept;
  absl::StatusOr<std::unique_ptr<kube::KubeClient>> admin_client = AdminClient();
  if (!admin_client.ok()) return admin_client.status();
  // One at a time: a stacked etcd grows by one member per join.
  for (size_t i = 1; i < setup_.nodes.size(); ++i) {
    if (absl::Status interrupted = Interrupted(); !interrupted.ok()) return interrupted;
    // kubeadm join finds the etcd members through their mirror pods' annotation
    // (kubeadm.kubernetes.io/etcd.advertise-client-urls) and gives up after about 40 s; on a
    // loaded machine a kubelet creates them later than that after kubeadm init returns.
    if (absl::Status mirrored = AwaitEtcdMirrorPods(**admin_client, joined_); !mirrored.ok()) {
      return mirrored;
    }
    const Node& node = nodes_[i];
    // The second node's kubelet has its cloud provider where an operator adds it beside kubeadm
    // (/etc/default/kubelet, read after kubeadm-flags.env): the move must write it there.
    const kubeadm::KubeletCloud cloud =
        i == 1 ? kubeadm::KubeletCloud::kInTreeExtraArgs : kubeadm::KubeletCloud::kInTree;
    if (cloud == kubeadm::KubeletCloud::kInTreeExtraArgs) {
      written = WriteNodeFile(node, kubeadm::kKubeletDefaultsPath, kubeadm::KubeletDefaults(), 0644);
      if (!written.ok()) return written;
      setup_.say(StrCat(node.name, ": the kubelet's --cloud-provider=aws is in ",
                        kubeadm::kKubeletDefaultsPath, " (KUBELET_EXTRA_ARGS), not in kubeadm's "
                        "kubeletExtraArgs"));
    }
    written = WriteNodeFile(node, kubeadm::kKubeadmConfigPath,
                            kubeadm::JoinConfiguration(plan_, i, *pin, cloud), 0600);
    if (!written.ok()) return written;
    const absl::Time join_started = absl::Now();
    ran = RunOnNode(
        node, {components_.Binary(real::kKubeadm), "join", "--config", kubeadm::kKubeadmConfigPath},
        StrCat("kubeadm-", node.name), absl::Minutes(5));
    if (!ran.ok()) return ran;
    setup_.say(StrCat(
        "kubeadm join --control-plane on ", node.name, ": ",
        absl::FormatDuration(absl::Trunc(absl::Now() - join_started, absl::Milliseconds(100)))));
    joined_.push_back(node.name);
    joined_next_[node.name] = false;
  }
  return JoinWorkers(**admin_client);
}

absl::Status KubeadmCluster::KeepEtcdAccess() {
  // The client certificate kubeadm makes for etcd's health checks, as the README tells an operator
  // to give the coordinator; copied, since the first node may be replaced.
  const Node& first = nodes_.front();
  EtcdAccess access;
  for (const auto& [file, into] : std::vector<std::pair<std::string, std::string*>>{
           {"ca.crt", &access.ca_file},
           {"healthcheck-client.crt", &access.cert_file},
           {"healthcheck-client.key", &access.key_file}}) {
    absl::StatusOr<std::string> text =
        fs_->ReadFile(StrCat("/proc/", first.init_pid, "/root/etc/kubernetes/pki/etcd/", file));
    if (!text.ok()) return text.status();
    *into = StrCat(setup_.dir, "/etcd-", file);
    FileInfo info;
    info.mode = 0600;
    if (absl::Status written = AtomicReplace(*fs_, *into, *text, info); !written.ok()) {
      return written;
    }
  }
  // The members the cluster begins with; a client learns the others from their answers.
  for (const ClusterNode& node : setup_.nodes) {
    access.endpoints.push_back(StrCat("https://", node.spec.ip, ":2379"));
  }
  etcd_ = std::move(access);
  return absl::OkStatus();
}

absl::Status KubeadmCluster::RunKubeadmOn(const std::string& name, bool next,
                                          const std::vector<std::string>& args,
                                          absl::Duration timeout) {
  const Node* node = Find(name);
  if (node == nullptr) return absl::NotFoundError(StrCat("no node ", name, " in this cluster"));
  std::vector<std::string> argv = {next ? components_.File(real::kNextKubeadm)
                                        : components_.Binary(real::kKubeadm)};
  argv.insert(argv.end(), args.begin(), args.end());
  const absl::Time started = absl::Now();
  absl::Status ran = RunOnNode(*node, argv, StrCat("kubeadm-", args.front(), "-", name), timeout);
  if (!ran.ok()) return ran;
  std::string what = StrJoin(args, " ");
  if (args.front() == "join") what = "join --control-plane";  // the rest is the config file
  setup_.say(
      StrCat("kubeadm ", what, " (", next ? kVersionNext : kVersionN, ") on ", name, ": ",
             absl::FormatDuration(absl::Trunc(absl::Now() - started, absl::Milliseconds(100)))));
  return absl::OkStatus();
}

absl::Status KubeadmCluster::UpgradeWithKubeadm(const std::vector<ClusterNode>& members) {
  // As kubeadm's upgrade guide runs it: `apply` on one control-plane node, `node` on each other.
  // Each rewrites the node's control-plane manifests from kube-system/kubeadm-config (a manifest
  // it finds equal to its own it leaves alone) and waits for the kubelet to restart what changed.
  for (size_t i = 0; i < members.size(); ++i) {
    if (absl::Status interrupted = Interrupted(); !interrupted.ok()) return interrupted;
    const std::vector<std::string> args =
        i == 0
            ? std::vector<std::string>{"upgrade", "apply", kVersionNext, "--yes",
                                       StrCat("--ignore-preflight-errors=", kUpgradeIgnoredChecks)}
            : std::vector<std::string>{"upgrade", "node"};
    absl::Status ran = RunKubeadmOn(members[i].spec.name, /*next=*/true, args, absl::Minutes(10));
    if (!ran.ok()) return ran;
  }
  return absl::OkStatus();
}

absl::Status KubeadmCluster::JoinWithKubeadm(const ClusterNode& spare, KubeadmJoin join) {
  size_t index = 0;
  while (index < machines_.size() && machines_[index].spec.name != spare.spec.name) ++index;
  if (index < setup_.nodes.size() || index >= first_worker_ || ca_pin_.empty() ||
      joined_next_.count(spare.spec.name) > 0) {
    return absl::FailedPreconditionError(
        StrCat(spare.spec.name,
               " is not a spare machine of this cluster that has not joined yet, or kubeadm init "
               "has not run"));
  }
  absl::StatusOr<std::unique_ptr<kube::KubeClient>> client = AdminClient();
  if (!client.ok()) return client.status();
  // kubeadm join reads the etcd members from their mirror pods (RunKubeadm).
  if (absl::Status mirrored = AwaitEtcdMirrorPods(**client, joined_); !mirrored.ok()) {
    return mirrored;
  }
  const Node& node = nodes_[index];
  const bool next = join == KubeadmJoin::kNextExternal;
  absl::Status written =
      WriteNodeFile(node, kubeadm::kKubeadmConfigPath,
                    kubeadm::JoinConfiguration(
                        plan_, index, ca_pin_,
                        next ? kubeadm::KubeletCloud::kExternal : kubeadm::KubeletCloud::kInTree),
                    0600);
  if (!written.ok()) return written;
  absl::Status ran = RunKubeadmOn(
      node.name, next, {"join", "--config", kubeadm::kKubeadmConfigPath}, absl::Minutes(5));
  if (!ran.ok()) return ran;
  joined_.push_back(node.name);
  joined_next_[node.name] = next;
  return AwaitControlPlaneReady(**client, {node.name});
}

absl::Status KubeadmCluster::ResetWithKubeadm(const ClusterNode& member) {
  const auto joined = std::find(joined_.begin(), joined_.end(), member.spec.name);
  if (joined == joined_.end()) {
    return absl::FailedPreconditionError(StrCat(member.spec.name, " has not joined the cluster"));
  }
  // kubeadm reset removes the node's etcd member through the cluster first, then stops its
  // static pods and removes what kubeadm wrote.
  absl::Status ran =
      RunKubeadmOn(member.spec.name, joined_next_[member.spec.name],
                   {"reset", "--force", "--cri-socket", kubeadm::kCriSocket}, absl::Minutes(3));
  if (ran.ok()) joined_.erase(joined);
  return ran;
}

absl::Status KubeadmCluster::WriteSettings() {
  FileInfo info;
  info.mode = 0644;
  return AtomicReplace(
      *fs_, StrCat(setup_.dir, "/settings.yaml"),
      StrCat(
          "# handoffctl sandbox --cluster kubeadm: the rollout's settings, sent with every "
          "move.\n"
          "kubernetesVersion: ",
          kVersionNext,
          "\n"
          "# The downtime path checks each instance's kubernetes.io/cluster/<clusterId> tag.\n"
          "clusterId: ",
          real::kSandboxClusterId,
          "\n"
          "cloudControllerManager:\n"
          "  image: ",
          kCcmImage,
          "\n"
          "  # A node kubeadm joins external has no in-tree --cloud-config for its agent to take\n"
          "  # over: every cloud-controller-manager gets the file from here.\n"
          "  extraArgs:\n"
          "    cloud-config: ",
          kubeadm::kCloudConfigPath, "\n"),
      info);
}

absl::StatusOr<std::unique_ptr<kube::KubeClient>> KubeadmCluster::AdminClient() const {
  absl::StatusOr<kube::ClusterCredentials> credentials =
      kube::LoadKubeconfig(*fs_, StrCat(setup_.dir, "/admin.conf"), "");
  if (!credentials.ok()) return credentials.status();
  absl::StatusOr<std::unique_ptr<kube::HttpTransport>> transport =
      kube::NewCurlTransport(*credentials);
  if (!transport.ok()) return transport.status();
  return std::make_unique<kube::KubeClient>(*std::move(transport), *clock_,
                                            kube::ClientOptionsFor(*credentials));
}

absl::Status KubeadmCluster::AwaitEtcdMirrorPods(kube::KubeClient& client,
                                                 const std::vector<std::string>& nodes) const {
  const absl::Time deadline = absl::Now() + absl::Minutes(3);
  std::string missing;
  while (true) {
    missing.clear();
    for (const std::string& node : nodes) {
      absl::StatusOr<kube::Json> pod =
          client.Get(kube::ObjectRef{&kube::kPods, "kube-system", StrCat("etcd-", node)});
      const bool annotated =
          pod.ok() && !kube::StringAt(*pod, {"metadata", "annotations",
                                             "kubeadm.kubernetes.io/etcd.advertise-client-urls"})
                           .empty();
      if (!annotated) StrAppend(&missing, missing.empty() ? "" : ", ", "etcd-", node);
    }
    if (missing.empty()) return absl::OkStatus();
    if (absl::Status interrupted = Interrupted(); !interrupted.ok()) return interrupted;
    if (absl::Now() >= deadline) {
      return absl::DeadlineExceededError(
          StrCat("the etcd mirror pods ", missing,
                 " did not appear in kube-system within 3 minutes; kubeadm join reads the etcd "
                 "members from them (see the kubelets' logs under ",
                 setup_.dir, "/logs/)"));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
}


absl::Status KubeadmCluster::AwaitNothingWaiting(
    const std::string& what, const std::function<std::vector<std::string>()>& waiting) const {
  const absl::Time deadline = absl::Now() + absl::Minutes(3);
  while (true) {
    const std::vector<std::string> names = waiting();
    if (names.empty()) return absl::OkStatus();
    if (absl::Status interrupted = Interrupted(); !interrupted.ok()) return interrupted;
    if (absl::Now() >= deadline) {
      return absl::DeadlineExceededError(StrCat(what, " within 3 minutes: ", StrJoin(names, ", "),
                                                " (see the kubelets' logs under ", setup_.dir,
                                                "/logs/)"));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
}

absl::Status KubeadmCluster::AwaitControlPlaneReady(kube::KubeClient& client,
                                                    const std::vector<std::string>& nodes) const {
  return AwaitNothingWaiting("not Ready", [&] {
    std::vector<std::string> waiting;
    for (const std::string& node : nodes) {
      absl::StatusOr<kube::Json> object = client.Get(kube::ObjectRef{&kube::kNodes, "", node});
      if (!object.ok() || !ConditionTrue(*object, "Ready"))
        waiting.push_back(StrCat("Node ", node));
      for (const char* component :
           {"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler"}) {
        absl::StatusOr<kube::Json> pod =
            client.Get(kube::ObjectRef{&kube::kPods, "kube-system", StrCat(component, "-", node)});
        if (!pod.ok() || kube::StringAt(*pod, {"status", "phase"}) != "Running" ||
            !ConditionTrue(*pod, "Ready")) {
          waiting.push_back(StrCat(component, "-", node));
        }
      }
    }
    return waiting;
  });
}

absl::Status KubeadmCluster::Interrupted() const {
  return setup_.interrupted() ? absl::CancelledError("interrupted") : absl::OkStatus();
}

absl::Status KubeadmCluster::Start(const ApiServerCertificates& /*certificates*/) {
  absl::Status status = CheckHost();
  if (!status.ok()) return status;
  for (const std::string& line : kubeadm::CleanStaleRuns(setup_.say)) setup_.say(line);
  absl::StatusOr<kubeadm::HostChanges> changes =
      kubeadm::HostChanges::Begin(setup_.dir, setup_.keep);
  if (!changes.ok()) return changes.status();
  changes_ = *std::move(changes);
  const std::string scratch = Log("versions");
  for (const std::vector<std::string>& argv :
       {std::vector<std::string>{OnPath("containerd"), "--version"},
        std::vector<std::string>{OnPath("runc"), "--version"},
        std::vector<std::string>{OnPath("haproxy"), "-v"}}) {
    versions_.push_back(FirstLineOf(argv, scratch));
  }

  status = MakeBridge();
  if (!status.ok()) return status;
  absl::StatusOr<Node> lb = BootNode("api-lb", StrCat(setup_.dir, "/lb"), /*services=*/false);
  if (!lb.ok()) return lb.status();
  lb_ = *std::move(lb);
  status = Connect(lb_, network_.EndpointIp(), 0);
  if (!status.ok()) return status;

  status = changes_->WillStartKubelets();
  if (!status.ok()) return status;
  // A worker trusts the fake AWS's HTTPS endpoint as it trusts AWS's: its CA in the node's
  // bundle (Debian's path, which Go's TLS and aws-sdk-go read), beside the host's own.
  std::string trusted;
  if (first_worker_ < machines_.size()) {
    status = MakeAwsHttpsCertificate();
    if (!status.ok()) return status;
    absl::StatusOr<std::string> host_bundle = fs_->ReadFile(kCaBundle);
    absl::StatusOr<std::string> ca = fs_->ReadFile(StrCat(setup_.dir, "/pki/aws-https-ca.crt"));
    if (!ca.ok()) return ca.status();
    trusted = StrCat(host_bundle.ok() ? *host_bundle : "", *ca);
  }
  for (size_t i = 0; i < machines_.size(); ++i) {
    const ClusterNode& cluster_node = machines_[i];
    std::vector<std::pair<std::string, std::string>> more;
    if (cluster_node.worker) more.emplace_back(kCaBundle, trusted);
    // What the node's first process finds in its /etc (the overlay's upper directory, written
    // before the overlay is mounted).
    for (const auto& [path, text] : std::vector<std::pair<std::string, std::string>>{
             {"/etc/hostname", StrCat(cluster_node.spec.name, "\n")},
             {"/etc/hosts", kubeadm::HostsFile(plan_)},
             // Nothing the node looks up leaves it.
             {"/etc/resolv.conf", "nameserver 127.0.0.1\n"},
             // crictl's configuration, as operators write it: without it crictl warns on each
             // call, and kubeadm reset (which reads crictl's output with the warning in it) takes
             // the warning's words for pod IDs and removes no container.
             {"/etc/crictl.yaml", StrCat("runtime-endpoint: ", kubeadm::kCriSocket,
                                         "\nimage-endpoint: ", kubeadm::kCriSocket, "\n")},
             {"/etc/containerd/config.toml", kubeadm::ContainerdConfig(plan_)},
             {kubeadm::kCniConfigPath, kubeadm::CniConfig(plan_.nodes[i])}}) {
      absl::Status made = AtomicReplaceCreatingParents(*fs_, cluster_node.root + path, text, 0644);
      if (!made.ok()) return made;
    }
    for (const auto& [path, text] : more) {
      absl::Status made = AtomicReplaceCreatingParents(*fs_, cluster_node.root + path, text, 0644);
      if (!made.ok()) return made;
    }
    const std::string& cgroup_root = plan_.nodes[i].cgroup_root;
    status = changes_->WillFillCgroupRoot(cgroup_root);
    if (!status.ok()) return status;
    for (const std::string& dir : kubeadm::CgroupRootDirs("/sys/fs/cgroup", cgroup_root)) {
      std::error_code error;
      std::filesystem::create_directories(dir, error);
      if (error) return absl::InternalError(StrCat("cannot create ", dir, ": ", error.message()));
    }
    absl::StatusOr<Node> node =
        BootNode(cluster_node.spec.name, cluster_node.root, /*services=*/true);
    if (!node.ok()) return node.status();
    node->ip = cluster_node.spec.ip;
    nodes_.push_back(*std::move(node));
    status = Connect(nodes_.back(), cluster_node.spec.ip, static_cast<int>(i) + 1);
    if (!status.ok()) return status;
  }
  setup_.say(StrCat(setup_.nodes.size(), " nodes up",
                    setup_.workers.empty() ? "" : StrCat(", ", setup_.workers.size(), " workers"),
                    setup_.spares.empty()
                        ? ""
                        : StrCat(" and ", setup_.spares.size(), " spare machine(s) to join later"),
                    " (namespaces, containerd, a bridge ", bridge_,
                    " with no route out), the API endpoint ", network_.EndpointIp(), ":",
                    kubeadm::kApiServerPort, " (haproxy)"));

  // From now on every manager process of a node is seen, from its start to its exit.
  std::vector<WatchedNode> watched;
  for (const Node& node : nodes_) watched.push_back({node.name, node.netns});
  watcher_ = std::make_unique<ManagerProcessWatcher>(
      StrCat(setup_.dir, "/records"), std::move(watched), NewProcfsProcessTable("/proc"));

  if (status.ok()) status = Interrupted();
  if (!status.ok()) return status;
  status = StartFakeAws();
  if (!status.ok()) return status;
  if (status.ok()) status = Interrupted();
  if (!status.ok()) return status;
  status = StartLoadBalancer();
  if (!status.ok()) return status;
  if (status.ok()) status = Interrupted();
  if (!status.ok()) return status;
  status = ImportImages();
  if (!status.ok()) return status;
  setup_.say("every image imported on every node from the components' archive (nothing pulled)");

  if (status.ok()) status = Interrupted();
  if (!status.ok()) return status;
  status = RunKubeadm();
  if (!status.ok()) return status;
  {
    absl::StatusOr<std::unique_ptr<kube::KubeClient>> admin = AdminClient();
    if (!admin.ok()) return admin.status();
    const absl::Time awaited = absl::Now();
    status = AwaitControlPlaneReady(**admin, joined_);
    if (!status.ok()) return status;
    setup_.say(
        StrCat("every Node Ready and its static pods Running and Ready (",
               absl::FormatDuration(absl::Trunc(absl::Now() - awaited, absl::Milliseconds(100))),
               " after the last join)"));
  }
  status = WriteSettings();
  if (!status.ok()) return status;
  absl::StatusOr<std::unique_ptr<kube::KubeClient>> client = AdminClient();
  if (!client.ok()) return client.status();
  monitor_.leases().SetClient(*std::move(client));
  setup_.say(StrCat("API server on https://", network_.EndpointIp(), ":", kubeadm::kApiServerPort,
                    " (kubeadm's kube-system objects, Nodes registered by their kubelets with "
                    "the in-tree AWS provider)"));
  return absl::OkStatus();
}

void KubeadmCluster::FollowNewPodLogs(absl::Time /*now*/) {
  for (const Node& node : nodes_) {
    const std::string pods = StrCat(node.dir, "/var/log/pods");
    std::error_code error;
    for (const auto& pod : std::filesystem::directory_iterator(pods, error)) {
      const std::string name = pod.path().filename();
      for (const char* component : {"kube-controller-manager", "cloud-controller-manager"}) {
        // kube-system_<component>-<node>_<uid>: the static pod's mirror name and UID.
        if (!StartsWith(name, StrCat("kube-system_", component, "-", node.name, "_"))) continue;
        std::error_code inner;
        for (const auto& file :
             std::filesystem::directory_iterator(pod.path() / component, inner)) {
          const std::string path = file.path();
          if (!EndsWith(path, ".log") || !followed_logs_.insert(path).second) continue;
          const bool kcm = std::string_view(component) == "kube-controller-manager";
          ManagerLogSource source;
          source.node = node.name;
          source.component = kcm ? leadermigration::Component::kKubeControllerManager
                                 : leadermigration::Component::kCloudControllerManager;
          source.version = kcm ? KubeVersion{1, 26, 13} : KubeVersion{1, 27, 2};
          source.path = path;
          source.cri = true;
          // The host pid of the process that logged its start then; one the watcher never saw
          // (gone within its poll interval) gets a pid of its own, so that its records are no
          // other process's.
          source.pid_at = [this, node_name = node.name, component](int64_t t_ns) {
            std::optional<int64_t> pid = watcher_->ProcessAt(node_name, component, t_ns);
            return pid ? *pid : 1000000000 + ++unknown_pids_;
          };
          monitor_.FollowLog(std::move(source));
        }
      }
    }
  }
}

std::vector<std::string> KubeadmCluster::ComponentLines() const {
  std::vector<std::string> lines;
  for (const real::ComponentVersion& component : components_.versions) {
    lines.push_back(StrCat(component.name, " ", component.version, " (", component.source, ")"));
  }
  for (const std::string& version : versions_) {
    if (!version.empty()) lines.push_back(StrCat(version, " (Debian)"));
  }
  lines.push_back(StrCat("nodes: real kubelets ", kVersionN, " on containerd, built by kubeadm ",
                         kVersionN, "; control plane ", kVersionN, " → ", kVersionNext,
                         "; kube-proxy and CoreDNS skipped (their images hold the pause "
                         "program, never run)"));
  return lines;
}

std::vector<std::string> KubeadmCluster::SummaryLines() const {
  if (!watcher_) return {};
  // Per node and component: each time one process ended and the next had not started yet.
  std::map<std::pair<std::string, std::string>, std::vector<WatchedProcess>> by_component;
  for (WatchedProcess& process : watcher_->History()) {
    by_component[{process.node, process.component}].push_back(std::move(process));
  }
  std::vector<std::string> lines = {
      "down while the kubelet restarted it (from each process's exit to the next one's start, "
      "as /proc shows them):"};
  std::string node_line;
  std::string current;
  for (const auto& [key, processes] : by_component) {
    std::vector<std::string> gaps;
    for (size_t i = 0; i + 1 < processes.size(); ++i) {
      if (!processes[i].exited_ns) continue;
      const int64_t gap = processes[i + 1].started_ns - *processes[i].exited_ns;
      gaps.push_back(absl::FormatDuration(
          absl::Trunc(absl::Nanoseconds(std::max<int64_t>(gap, 0)), absl::Milliseconds(100))));
    }
    if (gaps.empty()) continue;
    if (key.first != current) {
      if (!node_line.empty()) lines.push_back(node_line);
      current = key.first;
      node_line = StrCat("  ", current, ":");
    } else {
      node_line += ";";
    }
    StrAppend(&node_line, " ", key.second, " ", StrJoin(gaps, ", "));
  }
  if (!node_line.empty()) lines.push_back(node_line);
  if (lines.size() == 1) lines.push_back("  no component was restarted");
  return lines;
}

void KubeadmCluster::Stop() {
  if (stopped_) return;
  stopped_ = true;
  monitor_.leases().SetClient(nullptr);
  watcher_.reset();
  if (haproxy_) haproxy_->Stop(SIGTERM, absl::Seconds(5));
  if (fake_aws_) fake_aws_->Stop(SIGTERM, absl::Seconds(5));
  if (changes_) {
    std::vector<std::string> failures =
        changes_->Undo([this](const std::string& line) { setup_.say(StrCat("cleanup: ", line)); });
    for (const std::string& failure : failures) setup_.say(StrCat("cleanup FAILED: ", failure));
  }
  // The boot processes exit with their nodes.
  for (Node* node : {&lb_}) {
    if (node->boot) node->boot->WaitFor(absl::Seconds(10), nullptr);
  }
  for (Node& node : nodes_) {
    if (node.boot) node.boot->WaitFor(absl::Seconds(10), nullptr);
  }
}

}  // namespace kubeadm

absl::StatusOr<KubeadmNetwork> ParseKubeadmNetwork(std::string_view cidr) {
  if (cidr.empty()) cidr = kDefaultKubeadmNetwork;
  const auto invalid = [&] {
    return absl::InvalidArgumentError(
        StrCat("--network ", cidr, ": give a /24 as A.B.C.0/24, e.g. ", kDefaultKubeadmNetwork));
  };
  if (!EndsWith(cidr, ".0/24")) return invalid();
  const std::string_view prefix = cidr.substr(0, cidr.size() - 4);  // "A.B.C."
  std::vector<std::string_view> octets = StrSplit(prefix.substr(0, prefix.size() - 1), ".");
  if (octets.size() != 3) return invalid();
  for (std::string_view octet : octets) {
    if (octet.empty() || octet.size() > 3 || octet.find_first_not_of("0123456789") != octet.npos ||
        (octet.size() > 1 && octet[0] == '0') || std::stoi(std::string(octet)) > 255) {
      return invalid();
    }
  }
  return KubeadmNetwork{std::string(prefix)};
}

namespace {

// The in-tree provider's name for the instance at `ip`: its private DNS name in us-east-1.
std::string PrivateDnsName(const std::string& ip) {
  std::string dashed = ip;
  std::replace(dashed.begin(), dashed.end(), '.', '-');
  return StrCat("ip-", dashed, ".ec2.internal");
}

}  // namespace

SandboxNode MakeKubeadmWorker(const KubeadmNetwork& network, int index) {
  SandboxNode worker = MakeKubeadmNode(network, index);
  // The workers' block of each zone begins at .40, past the nodes' and the spares'.
  const int zone = (index - 1) % 3;
  worker.ip = network.Address(64 * zone + 40 + (index - 1) / 3);
  worker.name = PrivateDnsName(worker.ip);
  return worker;
}

SandboxNode MakeKubeadmNode(const KubeadmNetwork& network, int index) {
  const int zone = (index - 1) % 3;
  const int in_zone = (index - 1) / 3;
  SandboxNode node;
  // Each zone's nodes in a /28 of their own: .10+, .74+, .138+.
  const int last = 64 * zone + 10 + in_zone;
  node.ip = network.Address(last);
  node.name = PrivateDnsName(node.ip);
  node.zone = StrCat(kRegion, std::string(1, kZones[zone]));
  return node;
}

LeaseTiming KubeadmManagerTiming() {
  LeaseTiming timing;
  timing.lease_duration = absl::Seconds(15);
  timing.renew_deadline = absl::Seconds(10);
  timing.retry_period = absl::Seconds(2);
  return timing;
}

absl::StatusOr<std::unique_ptr<SandboxCluster>> NewKubeadmCluster(const ClusterSetup& setup) {
  if (::geteuid() != 0) {
    return absl::FailedPreconditionError(
        "--cluster kubeadm makes each node a set of namespaces with its own containerd and "
        "kubelet, and a bridge between them: run it as root (or use --cluster model)");
  }
  std::vector<std::string_view> required = {real::kKubelet, real::kKubeadm, real::kNextKubeadm,
                                            real::kCrictl, real::kFakeAws, real::kImagesArchive};
  if (!setup.workers.empty()) {
    required.insert(required.end(), {real::kNextKubelet, real::kEcrCredentialProvider,
                                     real::kWorkerImagesArchive});
  }
  absl::StatusOr<real::Components> components =
      real::FindComponents(real::ProcessEnvironment(), required);
  if (!components.ok()) return components.status();
  return std::unique_ptr<SandboxCluster>(
      std::make_unique<kubeadm::KubeadmCluster>(setup, *std::move(components)));
}

}  // namespace handoff::sandbox
