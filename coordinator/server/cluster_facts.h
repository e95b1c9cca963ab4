// Where the coordinator learns what the rollout engine needs to know of the cluster besides the
// nodes: whether the migration-lease RBAC is in place (R1) and who holds the migration lease (R4).
#ifndef HANDOFF_COORDINATOR_SERVER_CLUSTER_FACTS_H_
#define HANDOFF_COORDINATOR_SERVER_CLUSTER_FACTS_H_

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "common/system/clock.h"
#include "common/kube/client.h"
#include "coordinator/kube/etcd_members.h"
#include "common/kube/http_transport.h"
#include "coordinator/kube/lease.h"
#include "coordinator/kube/rbac.h"
#include "coordinator/server/rollout_controller.h"

namespace handoff::server {

// Check is called from one thread (the coordinator's ticker).
class FactsSource {
 public:
  virtual ~FactsSource() = default;
  // `leaving`: the nodes whose Node objects to look up (FactsReport::node_objects).
  virtual FactsReport Check(const std::vector<std::string>& leaving) = 0;
};

// From the API server: RBAC ready when `handoffctl rbac plan` would change nothing and sees no
// problem; the lease as ClassifyMigrationLease reads it. An API error reports not ready (and says
// why): the engine waits rather than guess.
class KubeFactsSource : public FactsSource {
 public:
  // Owns `client` and `etcd` (null: etcd's member list is not read); borrows `clock`.
  KubeFactsSource(std::unique_ptr<kube::KubeClient> client, Clock& clock,
                  kube::RbacOptions rbac = {}, kube::LeaseNames leases = {},
                  std::unique_ptr<kube::EtcdMemberLister> etcd = nullptr);
  FactsReport Check(const std::vector<std::string>& leaving) override;

  // Also reads what the preflight's cluster checks need (preflight::ReadClusterView with
  // `options`: every pod, the storage objects, a SubjectAccessReview per manager identity) at
  // the first Check and then at most every `interval` (every 3 s while a check fails on it): the
  // other facts are read every few seconds, this is read for a `start`, which may use a view
  // `interval` old.
  void ReadClusterChecks(preflight::ClusterCheckOptions options, absl::Duration interval);
  // Reads that view now (null when ReadClusterChecks was not called): the next Check reports it.
  // For a `start` the last view refuses (ControllerOptions::read_cluster_view); safe to call from
  // another thread than Check's.
  std::shared_ptr<const preflight::ClusterView> ReadClusterViewNow();

 private:
  std::shared_ptr<const preflight::ClusterView> ReadViewLocked();

  // Held through Check and ReadClusterViewNow: the client is thread-compatible.
  std::mutex mu_;
  std::unique_ptr<kube::KubeClient> client_;
  Clock& clock_;
  kube::RbacOptions rbac_;
  kube::LeaseNames leases_;
  std::unique_ptr<kube::EtcdMemberLister> etcd_;
  std::optional<preflight::ClusterCheckOptions> preflight_;  // nullopt: not read
  absl::Duration preflight_interval_ = absl::Seconds(30);
  std::shared_ptr<const preflight::ClusterView> cluster_view_;
  absl::Time cluster_view_read_ = absl::InfinitePast();
};

// Each lease of `leases` validly held at `now`, with its holder's identity, host and manager
// (the migration lease's is the manager holding the main lease with the same identity).
std::vector<FactsReport::HeldLease> HeldLeases(const kube::LeaseSet& leases, absl::Time now);

// --no-cluster-checks (rehearsals on temp roots, with no cluster): both facts taken as true, and
// a leaving node's Node object and etcd member taken as gone (its agent gone is all a
// replacement then waits for).
class AssumedFactsSource : public FactsSource {
 public:
  FactsReport Check(const std::vector<std::string>& leaving) override;
};

}  // namespace handoff::server

#endif  // HANDOFF_COORDINATOR_SERVER_CLUSTER_FACTS_H_
