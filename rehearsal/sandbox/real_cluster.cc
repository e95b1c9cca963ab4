#include "rehearsal/sandbox/real_cluster.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/base/kube_version.h"
#include "common/base/strings.h"
#include "common/fs/file_system.h"
#include "common/system/clock.h"
#include "common/kube/client.h"
#include "coordinator/kube/lease.h"
#include "common/kube/resource.h"
#include "rehearsal/monitor/klog_scanner.h"
#include "rehearsal/real/components.h"
#include "rehearsal/real/control_plane.h"
#include "rehearsal/real/fake_aws.h"
#include "rehearsal/real/kubeadm_objects.h"
#include "rehearsal/sandbox/manager_monitor.h"
#include "rehearsal/sandbox/process.h"
#include "rehearsal/sandbox/simulated_cluster.h"

namespace handoff::sandbox {
namespace {

using real::FakeAws;
using real::kSandboxClusterId;

// The in-tree provider's --cloud-config (the cloud-controller-manager is given the same file):
// the EC2 and ELB endpoints overridden the way an operator points them at VPC endpoints. The
// zone and region come from each instance's metadata, as on a real instance.
std::string CloudConfig(const FakeAws& aws) {
  std::string text = StrCat("[Global]\nKubernetesClusterID = ", kSandboxClusterId, "\n");
  int index = 1;
  for (const char* service : {"ec2", "elasticloadbalancing"}) {
    StrAppend(&text, "\n[ServiceOverride \"", index++, "\"]\nService = ", service,
              "\nRegion = ", aws.region, "\nURL = ", aws.ec2_url, "\nSigningRegion = ", aws.region,
              "\n");
  }
  return text;
}

class RealCluster : public SimulatedCluster {
 public:
  RealCluster(const ClusterSetup& setup, real::Components components)
      : SimulatedCluster(setup),
        components_(std::move(components)),
        clock_(NewRealClock()),
        monitor_(*fs_, StrCat(setup.dir, "/records"), setup.timing) {
    for (const ClusterNode& node : setup.nodes) {
      const std::string logs = StrCat(node.root, "/var/log/pods/");
      ManagerLogSource kcm;
      kcm.node = node.spec.name;
      kcm.component = leadermigration::Component::kKubeControllerManager;
      kcm.version = KubeVersion{1, 26, 13};
      kcm.path = logs + "kube-controller-manager.log";
      monitor_.FollowLog(kcm);
      ManagerLogSource ccm = kcm;
      ccm.component = leadermigration::Component::kCloudControllerManager;
      ccm.version = KubeVersion{1, 27, 2};
      ccm.path = logs + "cloud-controller-manager.log";
      monitor_.FollowLog(ccm);
    }
  }
  ~RealCluster() override { Stop(); }

 protected:
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
    monitor_.leases().SetClient(*std::move(admin));
    absl::Status created = real::CreateKubeadmObjects(*monitor_.leases().client(), objects);
    if (!created.ok()) return created;
    return control_plane_->url();
  }

  // The fake AWS's metadata of the node's instance (the Node's providerID names it), as its
  // managers see it: moto's private DNS name (the sandbox names its Nodes cp-N, not after their
  // instances) and the instance profile's credentials, with which the agent asks EC2 for the
  // instance's cluster tag.
  absl::Status SetInstanceTagged(const ClusterNode& node, bool tagged) override {
    return real::TagInstance(aws_, node.spec.name, tagged);
  }

  std::optional<std::string> InstanceMetadataOf(const ClusterNode& node) const override {
    return StrCat("http://", node.spec.ip, ":", aws_.imds_port);
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

  // Real managers on a loaded machine take longer to start than the stand-ins.
  std::string AgentTimeout() const override { return "60s"; }

 public:
  const MonitorReport& Poll(absl::Time now) override {
    // The managers' own logs become run records beside the kubelets' process records; a log
    // that cannot be read yet is read on the next poll.
    return monitor_.Poll(now);
  }

  void CountGapsFrom(absl::Time t) override { monitor_.CountGapsFrom(t); }
  absl::Duration MoveBudget() const override { return absl::Seconds(60); }
  std::vector<LeaseHolderChange> LeaseHolders() const override { return monitor_.LeaseHolders(); }

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
    StopKubelets();
    // No more lease reads once the API server is going away.
    monitor_.leases().SetClient(nullptr);
    if (control_plane_) control_plane_->Stop();
    if (fake_aws_) fake_aws_->Stop(SIGTERM, absl::Seconds(5));
  }

 private:
  absl::Status StartFakeAws() {
    absl::StatusOr<int> imds_port = real::PickFreePort();
    if (!imds_port.ok()) return imds_port.status();
    const std::string ready = StrCat(setup_.dir, "/fake-aws.json");
    std::vector<std::string> argv = {components_.Binary(real::kFakeAws),
                                     "--cluster-id",
                                     kSandboxClusterId,
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
    absl::StatusOr<real::RunningFakeAws> started =
        real::StartFakeAws(argv, ready, StrCat(setup_.dir, "/logs/fake-aws.log"));
    if (!started.ok()) return started.status();
    fake_aws_ = std::move(started->process);
    aws_ = std::move(started->aws);
    return absl::OkStatus();
  }

  const real::Components components_;
  std::unique_ptr<Clock> clock_;
  ManagerMonitor monitor_;
  std::unique_ptr<Process> fake_aws_;
  FakeAws aws_;
  std::unique_ptr<real::RealControlPlane> control_plane_;
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
