#include "coordinator/server/cluster_facts.h"

#include <algorithm>
#include <utility>

#include "common/base/strings.h"
#include "coordinator/kube/etcd_members.h"

namespace handoff::server {

KubeFactsSource::KubeFactsSource(std::unique_ptr<kube::KubeClient> client, Clock& clock,
                                 kube::RbacOptions rbac, kube::LeaseNames leases,
                                 std::unique_ptr<kube::EtcdMemberLister> etcd)
    : client_(std::move(client)),
      clock_(clock),
      rbac_(std::move(rbac)),
      leases_(std::move(leases)),
      etcd_(std::move(etcd)) {}

void KubeFactsSource::ReadClusterChecks(preflight::ClusterCheckOptions options,
                                        absl::Duration interval) {
  std::lock_guard<std::mutex> lock(mu_);
  preflight_ = std::move(options);
  preflight_interval_ = interval;
}

std::shared_ptr<const preflight::ClusterView> KubeFactsSource::ReadViewLocked() {
  cluster_view_read_ = clock_.Now();
  cluster_view_ = std::make_shared<const preflight::ClusterView>(
      preflight::ReadClusterView(*client_, *preflight_));
  return cluster_view_;
}

std::shared_ptr<const preflight::ClusterView> KubeFactsSource::ReadClusterViewNow() {
  std::lock_guard<std::mutex> lock(mu_);
  if (!preflight_) return nullptr;
  return ReadViewLocked();
}

FactsReport KubeFactsSource::Check(const std::vector<std::string>& leaving) {
  std::lock_guard<std::mutex> lock(mu_);
  if (preflight_) {
    // A view a check fails on is read again sooner: what the operator fixes (RBAC applied a
    // moment ago, which the API server's authorizer sees after its informer) shows at once.
    const absl::Duration interval =
        cluster_view_ &&
                preflight::AnyFailed(preflight::RunClusterChecks(*cluster_view_, *preflight_))
            ? std::min(preflight_interval_, absl::Seconds(3))
            : preflight_interval_;
    if (clock_.Now() - cluster_view_read_ >= interval) ReadViewLocked();
  }
  FactsReport report;
  report.cluster_view = cluster_view_;
  report.source = "kubernetes";
  report.read_unix_ms = absl::ToUnixMillis(clock_.Now());
  std::vector<std::string> details;
  absl::StatusOr<kube::RbacState> rbac = kube::ReadRbac(*client_, rbac_);
  if (!rbac.ok()) {
    details.push_back(StrCat("RBAC not read: ", rbac.status().message()));
  } else {
    kube::RbacPlan plan = kube::PlanRbac(*rbac, rbac_);
    report.rbac_ready = plan.empty() && plan.problems.empty();
    if (!report.rbac_ready) {
      details.push_back(StrCat("migration-lease RBAC not in place (", plan.changes.size(),
                               " change(s) pending: handoffctl rbac apply)"));
    }
  }
  absl::StatusOr<kube::LeaseSet> leases = kube::ReadLeases(*client_, leases_);
  if (!leases.ok()) {
    details.push_back(StrCat("leases not read: ", leases.status().message()));
  } else {
    kube::Ownership ownership = kube::ClassifyMigrationLease(*leases, clock_.Now());
    report.lease_held = ownership.holder == kube::Holder::kKubeControllerManager ||
                        ownership.holder == kube::Holder::kCloudControllerManager;
    report.lease_holder_node = ownership.node;
    const absl::Time now = clock_.Now();
    auto holder_node = [&](const std::optional<kube::LeaseInfo>& lease) {
      return lease && lease->HeldAt(now) ? kube::HostnameOfIdentity(lease->holder_identity)
                                         : std::string();
    };
    report.kube_controller_manager_holder_node = holder_node(leases->kube_controller_manager);
    report.cloud_controller_manager_holder_node = holder_node(leases->cloud_controller_manager);
    report.held = HeldLeases(*leases, now);
    details.push_back(StrCat("migration lease: ", ownership.Describe()));
  }
  for (const std::string& node : leaving) {
    absl::StatusOr<kube::Json> object = client_->Get(kube::ObjectRef{&kube::kNodes, "", node});
    if (object.ok()) {
      report.node_objects[node] = true;
    } else if (absl::IsNotFound(object.status())) {
      report.node_objects[node] = false;
    } else {
      report.node_objects_detail = StrCat("Node ", node, " not read: ", object.status().message());
    }
  }
  if (!leaving.empty() && etcd_ == nullptr) {
    report.etcd_members_detail = "the coordinator has no --etcd-endpoint";
  } else if (!leaving.empty()) {
    // Not from the leaving node's own etcd while another member answers (EtcdMemberLister::List).
    absl::StatusOr<std::vector<kube::EtcdMember>> members = etcd_->List(leaving.front());
    if (members.ok()) {
      report.etcd_members.emplace();
      for (const kube::EtcdMember& member : *members) report.etcd_members->push_back(member.name);
      report.etcd_members_source = etcd_->LastAnswered();
    } else {
      report.etcd_members_detail = StrCat("not read: ", members.status().message());
    }
  }
  report.detail = StrJoin(details, "; ");
  return report;
}

std::vector<FactsReport::HeldLease> HeldLeases(const kube::LeaseSet& leases, absl::Time now) {
  std::vector<FactsReport::HeldLease> held;
  auto add_held = [&](const std::optional<kube::LeaseInfo>& lease, std::string component) {
    if (!lease || !lease->HeldAt(now)) return;
    held.push_back(FactsReport::HeldLease{lease->name, lease->holder_identity,
                                          kube::HostnameOfIdentity(lease->holder_identity),
                                          std::move(component)});
  };
  add_held(leases.kube_controller_manager, "kube-controller-manager");
  add_held(leases.cloud_controller_manager, "cloud-controller-manager");
  // The migration lease's holder is the manager holding the main lease with the same identity.
  const kube::Ownership ownership = kube::ClassifyMigrationLease(leases, now);
  if (ownership.holder == kube::Holder::kKubeControllerManager) {
    add_held(leases.migration, "kube-controller-manager");
  } else if (ownership.holder == kube::Holder::kCloudControllerManager) {
    add_held(leases.migration, "cloud-controller-manager");
  }
  return held;
}

FactsReport AssumedFactsSource::Check(const std::vector<std::string>& leaving) {
  FactsReport report;
  for (const std::string& node : leaving) report.node_objects[node] = false;
  report.etcd_members.emplace();
  report.rbac_ready = true;
  report.lease_held = true;
  report.source = "assumed";
  report.detail = "--no-cluster-checks: RBAC and the migration lease are not checked";
  return report;
}

}  // namespace handoff::server
