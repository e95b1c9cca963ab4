#include "coordinator/sandbox/real_cluster.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "agent/base/kube_version.h"
#include "agent/base/strings.h"
#include "agent/fs/file_system.h"
#include "agent/system/clock.h"
#include "coordinator/kube/client.h"
#include "coordinator/kube/lease.h"
#include "coordinator/kube/resource.h"
#include "coordinator/sandbox/monitor/klog_scanner.h"
#include "coordinator/sandbox/monitor/monitor.h"
#include "coordinator/sandbox/monitor/run_record.h"
#include "coordinator/sandbox/process.h"
#include "coordinator/sandbox/real/components.h"
#include "coordinator/sandbox/real/control_plane.h"
#include "coordinator/sandbox/real/kubeadm_objects.h"

namespace handoff::sandbox {
namespace {

// The cluster's id in the instances' tag kubernetes.io/cluster/<id> and the cloud config.
constexpr char kClusterId[] = "handoff-sandbox";

// What the fake AWS wrote in its ready file.
struct FakeAws {
  std::string ec2_url;
  std::string region;
  int imds_port = 0;
  struct Instance {
    std::string name, ip, instance_id, zone, private_dns_name, provider_id;
  };
  std::vector<Instance> instances;

  const Instance* Find(const std::string& name) const {
    for (const Instance& instance : instances) {
      if (instance.name == name) return &instance;
    }
    return nullptr;
  }
};

absl::StatusOr<FakeAws> ParseReadyFile(const std::string& text, const std::string& path) {
  kube::Json json = kube::Json::parse(text, nullptr, /*allow_exceptions=*/false);
  auto text_field = [](const kube::Json& object, const char* key) {
    auto found = object.find(key);
    return found != object.end() && found->is_string() ? found->get<std::string>() : "";
  };
  if (!json.is_object() || !json.contains("nodes") || !json["nodes"].is_array()) {
    return absl::InvalidArgumentError(StrCat(path, ": not the fake AWS's ready file (no nodes)"));
  }
  FakeAws aws;
  aws.ec2_url = text_field(json, "ec2_url");
  aws.region = text_field(json, "region");
  if (json.contains("imds_port") && json["imds_port"].is_number_integer()) {
    aws.imds_port = json["imds_port"].get<int>();
  }
  for (const kube::Json& node : json["nodes"]) {
    FakeAws::Instance instance{text_field(node, "name"),        text_field(node, "ip"),
                               text_field(node, "instance_id"), text_field(node, "zone"),
                               text_field(node, "private_dns_name"),
                               text_field(node, "provider_id")};
    if (instance.name.empty() || instance.instance_id.empty() || instance.provider_id.empty()) {
      return absl::InvalidArgumentError(
          StrCat(path, ": a node without name, instance_id or provider_id"));
    }
    aws.instances.push_back(std::move(instance));
  }
  if (aws.ec2_url.empty() || aws.region.empty() || aws.imds_port <= 0) {
    return absl::InvalidArgumentError(StrCat(path, ": ec2_url, region or imds_port missing"));
  }
  return aws;
}

// The in-tree provider's --cloud-config (the cloud-controller-manager is given the same file):
// the EC2 and ELB endpoints overridden the way an operator points them at VPC endpoints. The
// zone and region come from each instance's metadata, as on a real instance.
std::string CloudConfig(const FakeAws& aws) {
  std::string text = StrCat("[Global]\nKubernetesClusterID = ", kClusterId, "\n");
  int index = 1;
  for (const char* service : {"ec2", "elasticloadbalancing"}) {
    StrAppend(&text, "\n[ServiceOverride \"", index++, "\"]\nService = ", service,
              "\nRegion = ", aws.region, "\nURL = ", aws.ec2_url, "\nSigningRegion = ", aws.region,
              "\n");
  }
  return text;
}

class RealCluster : public SandboxCluster {
 public:
  RealCluster(const ClusterSetup& setup, real::Components components)
      : setup_(setup),
        components_(std::move(components)),
        fs_(NewPosixFileSystem("/")),
        clock_(NewRealClock()),
        pump_(*fs_, StrCat(setup.dir, "/records")) {
    MonitorOptions options;
    options.lease_duration = setup.timing.lease_duration;
    options.retry_period = setup.timing.retry_period;
    // kubeadm on AWS keeps --configure-cloud-routes=false, so route never runs.
    options.controllers = {"service", "cloud-node-lifecycle"};
    monitor_ = std::make_unique<LiveMonitor>(*fs_, StrCat(setup.dir, "/records"), options);
    for (const ClusterNode& node : setup.nodes) {
      const std::string logs = StrCat(node.root, "/var/log/pods/");
      ManagerLogSource kcm;
      kcm.node = node.spec.name;
      kcm.component = leadermigration::Component::kKubeControllerManager;
      kcm.version = KubeVersion{1, 26, 13};
      kcm.path = logs + "kube-controller-manager.log";
      pump_.AddSource(kcm);
      ManagerLogSource ccm = kcm;
      ccm.component = leadermigration::Component::kCloudControllerManager;
      ccm.version = KubeVersion{1, 27, 2};
      ccm.path = logs + "cloud-controller-manager.log";
      pump_.AddSource(ccm);
    }
  }
  ~RealCluster() override { Stop(); }

  absl::StatusOr<std::string> StartApiServer(const ApiServerCertificates& certificates) override {
    absl::Status aws = StartFakeAws();
    if (!aws.ok()) return aws;

    real::ControlPlaneOptions options;
    options.dir = StrCat(setup_.dir, "/control-plane");
    options.components = components_;
    options.ca = certificates.kube_ca;
    options.serving_cert_file = certificates.serving_cert_file;
    options.serving_key_file = certificates.serving_key_file;
    absl::StatusOr<std::unique_ptr<real::RealControlPlane>> plane =
        real::RealControlPlane::Start(options);
    if (!plane.ok()) return plane.status();
    control_plane_ = *std::move(plane);

    real::KubeadmObjectsOptions objects;
    objects.kubernetes_version = components_.VersionOf(real::kKubeApiserver);
    for (const ClusterNode& node : setup_.nodes) {
      const FakeAws::Instance* instance = aws_.Find(node.spec.name);
      if (instance == nullptr) {
        return absl::InternalError(StrCat("the fake AWS has no instance for ", node.spec.name));
      }
      objects.nodes.push_back({node.spec.name, instance->zone, instance->instance_id, node.spec.ip});
    }
    absl::StatusOr<std::unique_ptr<kube::KubeClient>> admin =
        control_plane_->Client(control_plane_->AdminCredentials(), *clock_);
    if (!admin.ok()) return admin.status();
    admin_ = *std::move(admin);
    absl::Status created = real::CreateKubeadmObjects(*admin_, objects);
    if (!created.ok()) return created;
    return control_plane_->url();
  }

  absl::Status AddLayoutInputs(const ClusterNode& node, LayoutInputs& inputs) override {
    inputs.cloud_config = CloudConfig(aws_);
    // Each node's pods reach their own instance's metadata, as at 169.254.169.254 on EC2; the
    // credentials come from its instance profile, so no key is in any manifest.
    inputs.controller_manager_env = {
        {"AWS_EC2_METADATA_SERVICE_ENDPOINT",
         StrCat("http://", node.spec.ip, ":", aws_.imds_port, "/")}};
    // What kubeadm puts in every control-plane node's pki/ and the real kube-controller-manager
    // reads at start (the model's stand-ins read none of it): the CA's key for
    // --cluster-signing-key-file, the service-account keys, the front-proxy CA for
    // --requestheader-client-ca-file.
    for (const char* name : {"ca.key", "sa.key", "sa.pub", "front-proxy-ca.crt"}) {
      absl::StatusOr<std::string> content =
          fs_->ReadFile(StrCat(control_plane_->dir(), "/pki/", name));
      if (!content.ok()) return content.status();
      inputs.secret_files.emplace_back(StrCat("/etc/kubernetes/pki/", name), *content);
    }
    return absl::OkStatus();
  }

  std::vector<std::string> KubeletArgs(const ClusterNode& node) const override {
    // kube-controller-manager and the cloud-controller-manager run as the real binaries;
    // kube-apiserver and kube-scheduler stay stand-ins (the real API server is shared).
    return {"--standin",
            StrCat(setup_.bin_dir, "/handoff-standin"),
            "--records",
            StrCat(setup_.dir, "/records/", node.spec.name, ".jsonl"),
            "--real-bin-dir",
            StrCat(components_.dir, "/bin")};
  }

  const MonitorReport& Poll(absl::Time now) override {
    // The managers' own logs become run records beside the kubelets' process records; a log
    // that cannot be read yet is read on the next poll.
    (void)pump_.Poll(now);
    NoteLeaseHolders(now);
    (void)monitor_->Poll(absl::ToUnixNanos(now));
    return monitor_->report();
  }

  std::vector<LeaseHolderChange> LeaseHolders() const override {
    absl::StatusOr<std::vector<RunRecord>> records =
        ReadRunRecords(*fs_, StrCat(setup_.dir, "/records"));
    std::vector<LeaseHolderChange> changes;
    if (records.ok()) changes = LeaseHolderChangesFromRecords(*std::move(records));
    changes.insert(changes.end(), observed_.begin(), observed_.end());
    std::stable_sort(changes.begin(), changes.end(),
                     [](const LeaseHolderChange& a, const LeaseHolderChange& b) {
                       return a.t_ns < b.t_ns;
                     });
    return changes;
  }

  std::vector<std::string> ComponentLines() const override {
    std::vector<std::string> lines;
    for (const real::ComponentVersion& component : components_.versions) {
      lines.push_back(StrCat(component.name, " ", component.version, " (", component.source, ")"));
    }
    lines.push_back(StrCat(
        "kube-controller-manager v1.27 image (N+1, --cloud-provider=external): runs the ",
        components_.VersionOf(real::kKubeControllerManager),
        " binary, as no 1.27 kube-controller-manager is built"));
    lines.push_back("kube-apiserver and kube-scheduler static pods: stand-ins");
    return lines;
  }

  void Stop() override {
    admin_.reset();  // no more lease reads once the API server is going away
    if (control_plane_) control_plane_->Stop();
    if (fake_aws_) fake_aws_->Stop(SIGTERM, absl::Seconds(5));
  }

 private:
  absl::Status StartFakeAws() {
    absl::StatusOr<int> imds_port = real::PickFreePort();
    if (!imds_port.ok()) return imds_port.status();
    const std::string ready = StrCat(setup_.dir, "/fake-aws.json");
    const std::string log = StrCat(setup_.dir, "/logs/fake-aws.log");
    std::vector<std::string> argv = {components_.Binary(real::kFakeAws),
                                     "--cluster-id",
                                     kClusterId,
                                     "--imds-port",
                                     StrCat(*imds_port),
                                     "--ready-file",
                                     ready,
                                     "--request-log",
                                     StrCat(setup_.dir, "/logs/fake-aws-requests.jsonl")};
    for (const ClusterNode& node : setup_.nodes) {
      argv.push_back("--node");
      argv.push_back(StrCat(node.spec.name, "=", node.spec.ip));
    }
    absl::StatusOr<std::unique_ptr<Process>> started = Process::Spawn(argv, log);
    if (!started.ok()) return started.status();
    fake_aws_ = *std::move(started);
    // moto takes a few seconds to import; the ready file appears once every endpoint serves.
    const absl::Time deadline = absl::Now() + absl::Seconds(90);
    while (true) {
      absl::StatusOr<std::string> text = fs_->ReadFile(ready);
      if (text.ok()) {
        absl::StatusOr<FakeAws> aws = ParseReadyFile(*text, ready);
        if (!aws.ok()) return aws.status();
        aws_ = *std::move(aws);
        return absl::OkStatus();
      }
      int status = 0;
      if (fake_aws_->WaitFor(absl::Milliseconds(100), &status)) {
        return absl::UnavailableError(StrCat("the fake AWS exited (", DescribeWaitStatus(status),
                                             "); its log is ", log, ", which ends with:\n",
                                             real::LogTail(log)));
      }
      if (absl::Now() >= deadline) {
        return absl::DeadlineExceededError(
            StrCat("the fake AWS did not get ready within 90s; see ", log));
      }
    }
  }

  // The leases as the API server records them, beside what the managers log: each change of
  // holder of the main leases and the migration lease becomes a note in the monitor's report
  // (records/leases.jsonl), at most every 250 ms. A failed read is tried again at the next poll.
  void NoteLeaseHolders(absl::Time now) {
    if (admin_ == nullptr || now < next_lease_read_) return;
    next_lease_read_ = now + absl::Milliseconds(250);
    absl::StatusOr<kube::LeaseSet> leases = kube::ReadLeases(*admin_, kube::LeaseNames{});
    if (!leases.ok()) return;
    for (const std::optional<kube::LeaseInfo>* lease :
         {&leases->kube_controller_manager, &leases->cloud_controller_manager,
          &leases->migration}) {
      if (!lease->has_value()) continue;
      const kube::LeaseInfo& info = **lease;
      std::string& seen = lease_holders_[info.name];
      if (info.holder_identity == seen) continue;
      RunRecord note;
      note.t_ns = absl::ToUnixNanos(now);
      note.event = kMonitorNote;
      note.node = kube::HostnameOfIdentity(info.holder_identity);
      note.message = StrCat("API server: lease ", info.ns, "/", info.name, " held by ",
                            info.holder_identity.empty() ? "nobody" : info.holder_identity,
                            " (was ", seen.empty() ? "nobody" : seen, ")");
      if (AppendRunRecord(StrCat(setup_.dir, "/records/leases.jsonl"), note).ok()) {
        seen = info.holder_identity;
        LeaseHolderChange observed;
        observed.t_ns = note.t_ns;
        observed.lease = StrCat(info.ns, "/", info.name);
        observed.kind = LeaseHolderChange::Kind::kObserved;
        observed.node = note.node;
        observed.identity = info.holder_identity;
        observed_.push_back(std::move(observed));
      }
    }
  }

  const ClusterSetup setup_;
  const real::Components components_;
  std::unique_ptr<FileSystem> fs_;  // rooted at "/"
  std::unique_ptr<Clock> clock_;
  LogRecordsPump pump_;
  std::unique_ptr<LiveMonitor> monitor_;
  std::unique_ptr<Process> fake_aws_;
  FakeAws aws_;
  std::unique_ptr<real::RealControlPlane> control_plane_;
  std::unique_ptr<kube::KubeClient> admin_;
  absl::Time next_lease_read_ = absl::InfinitePast();
  std::map<std::string, std::string> lease_holders_;  // lease name → holder identity last noted
  std::vector<LeaseHolderChange> observed_;           // the API server's view, as noted
};

}  // namespace

LeaseTiming RealManagerTiming() {
  LeaseTiming timing;
  timing.lease_duration = absl::Seconds(4);
  timing.renew_deadline = absl::Seconds(2);
  timing.retry_period = absl::Milliseconds(500);
  return timing;
}

absl::StatusOr<std::unique_ptr<SandboxCluster>> NewRealCluster(const ClusterSetup& setup) {
  if (geteuid() != 0) {
    return absl::FailedPreconditionError(
        "--cluster real runs each real manager as a container runtime would, in mount and UTS "
        "namespaces of its own: run it as root (or use --cluster model)");
  }
  absl::StatusOr<real::Components> components = real::FindComponents(
      real::ProcessEnvironment(),
      {real::kEtcd, real::kKubeApiserver, real::kKubeControllerManager,
       real::kAwsCloudControllerManager, real::kFakeAws});
  if (!components.ok()) return components.status();
  return std::unique_ptr<SandboxCluster>(
      std::make_unique<RealCluster>(setup, *std::move(components)));
}

}  // namespace handoff::sandbox
