// The leases as the API server records them, beside what the real managers log: each change of
// holder of the main leases and the migration lease, noted in the monitor's report (a
// monitor-note record in <records dir>/leases.jsonl) and kept for the timeline. For the clusters
// whose managers are the real ones (real, kubeadm). Thread-compatible.
#ifndef HANDOFF_REHEARSAL_SANDBOX_LEASE_OBSERVER_H_
#define HANDOFF_REHEARSAL_SANDBOX_LEASE_OBSERVER_H_

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "common/kube/client.h"
#include "rehearsal/sandbox/lease_holders.h"

namespace handoff::sandbox {

class LeaseObserver {
 public:
  explicit LeaseObserver(std::string records_dir) : records_dir_(std::move(records_dir)) {}

  // The admin client to read the leases with (owned); nullptr stops the reads (the API server
  // is going away).
  void SetClient(std::unique_ptr<kube::KubeClient> client) { client_ = std::move(client); }
  kube::KubeClient* client() const { return client_.get(); }

  // Reads the leases, at most every 250 ms, and notes each change of holder. A failed read is
  // tried again at the next call.
  void Observe(absl::Time now);

  // The changes noted so far, in time order.
  const std::vector<LeaseHolderChange>& observed() const { return observed_; }

 private:
  const std::string records_dir_;
  std::unique_ptr<kube::KubeClient> client_;
  absl::Time next_read_ = absl::InfinitePast();
  std::map<std::string, std::string> holders_;  // lease name → holder identity last noted
  std::vector<LeaseHolderChange> observed_;
};

}  // namespace handoff::sandbox

#endif  // HANDOFF_REHEARSAL_SANDBOX_LEASE_OBSERVER_H_
