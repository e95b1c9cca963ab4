#include "coordinator/server/lease_releaser.h"

#include <algorithm>
#include <utility>

#include "common/base/strings.h"
#include "coordinator/kube/lease.h"
#include "common/kube/resource.h"
#include "coordinator/server/cluster_facts.h"
#include "spdlog/spdlog.h"

namespace handoff::server {
namespace {

// The migration lease first: a cloud-controller-manager already holding its main lease takes it
// at its next retry, while a successor for a main lease still has the migration lease to win.
bool MigrationFirst(const kube::RecordedHolder& a, const kube::RecordedHolder& b) {
  const bool a_migration = a.lease == kube::kMigrationLeaseName;
  const bool b_migration = b.lease == kube::kMigrationLeaseName;
  if (a_migration != b_migration) return a_migration;
  return a.lease < b.lease;
}

kube::Json LeaseJson(const kube::LeaseInfo& lease) {
  kube::Json json;
  json["holderIdentity"] = lease.holder_identity;
  if (lease.renew_time) json["renewTime"] = kube::FormatTimestamp(*lease.renew_time);
  if (lease.lease_duration_seconds) json["leaseDurationSeconds"] = *lease.lease_duration_seconds;
  json["leaseTransitions"] = lease.lease_transitions;
  json["resourceVersion"] = lease.resource_version;
  return json;
}

// The `result` label of a decision (coordinator_events.h).
std::string ResultLabel(const absl::StatusOr<kube::ReleaseOutcome>& outcome) {
  if (!outcome.ok()) return "error";
  switch (outcome->kind) {
    case kube::ReleaseOutcome::Kind::kReleased:
      return "released";
    case kube::ReleaseOutcome::Kind::kNotTouched:
      return "not_touched";
    case kube::ReleaseOutcome::Kind::kLostRace:
      return "lost_race";
  }
  return "error";
}

std::string PidList(const std::vector<int64_t>& pids) {
  std::vector<std::string> out;
  for (int64_t pid : pids) out.push_back(std::to_string(pid));
  return StrJoin(out, ", ");
}

}  // namespace

LeaseReleaser::LeaseReleaser(std::unique_ptr<kube::KubeClient> client, Clock& clock,
                             CoordinatorEvents* events)
    : client_(std::move(client)), clock_(clock), events_(events), worker_([this] { Run(); }) {}

LeaseReleaser::~LeaseReleaser() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  changed_.notify_all();
  worker_.join();
}

void LeaseReleaser::SetAudit(Audit audit) {
  std::lock_guard<std::mutex> lock(mu_);
  audit_ = std::move(audit);
}

void LeaseReleaser::MoveSent(const std::string& node, const std::string& command_id,
                             const FactsReport& facts) {
  Job job;
  job.kind = Job::Kind::kRecord;
  job.command_id = command_id;
  job.node = node;
  job.facts_held = facts.held;
  {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.push_back(std::move(job));
  }
  changed_.notify_all();
}

void LeaseReleaser::ProcessesGone(const std::string& node, const pb::ProcessesGone& proof) {
  Job job;
  job.kind = Job::Kind::kRelease;
  job.command_id = proof.command_id();
  job.node = node;
  job.proof.node = node;
  job.proof.component = proof.component();
  job.proof.old_pids.assign(proof.old_pids().begin(), proof.old_pids().end());
  job.proof.gone_at = absl::FromUnixMillis(proof.gone_unix_ms());
  {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.push_back(std::move(job));
  }
  changed_.notify_all();
}

void LeaseReleaser::Record(const Job& job) {
  // Read now, right after the move was sent: the facts are up to --facts-interval old, and a
  // lease may have changed hands since (a holder on this node that took it moments ago would be
  // missing, and its successor would wait the lease out). The move's old processes still run:
  // the agent has yet to write the manifest and the kubelet to stop them, so what is held now is
  // what they hold. The facts serve only when the read fails.
  std::vector<FactsReport::HeldLease> held = job.facts_held;
  absl::StatusOr<kube::LeaseSet> leases = kube::ReadLeases(*client_, kube::LeaseNames{});
  if (leases.ok()) {
    held = HeldLeases(*leases, clock_.Now());
  } else {
    spdlog::warn("{}: leases not read when move {} was sent ({}); using the last facts",
                 job.node, job.command_id, std::string(leases.status().message()));
  }
  std::vector<kube::RecordedHolder> holders;
  for (const FactsReport::HeldLease& lease : held) {
    if (!HostnameMatchesNode(lease.host, job.node)) continue;
    kube::RecordedHolder holder;
    holder.lease = lease.lease;
    holder.identity = lease.identity;
    holder.node = job.node;
    holder.component = lease.component;
    holders.push_back(std::move(holder));
  }
  std::lock_guard<std::mutex> lock(mu_);
  // One move in flight per node: an older record of this node is done with.
  for (auto it = recorded_.begin(); it != recorded_.end();) {
    const bool same_node = !it->second.empty() ? it->second.front().node == job.node : false;
    it = same_node ? recorded_.erase(it) : std::next(it);
  }
  if (!holders.empty()) recorded_[job.command_id] = std::move(holders);
}

void LeaseReleaser::Drain() {
  std::unique_lock<std::mutex> lock(mu_);
  changed_.wait(lock, [this] { return queue_.empty() && !busy_; });
}

void LeaseReleaser::Run() {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    changed_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopping, with nothing left
    Job job = std::move(queue_.front());
    queue_.pop_front();
    busy_ = true;
    lock.unlock();
    if (job.kind == Job::Kind::kRecord) {
      Record(job);
    } else {
      Release(job);
    }
    lock.lock();
    busy_ = false;
    changed_.notify_all();
  }
}

void LeaseReleaser::Release(const Job& job) {
  // The holders recorded when the move was sent (an earlier job: the queue keeps their order)
  // that ran as this component; none when its node held no lease before the move.
  Audit audit;
  std::vector<kube::RecordedHolder> holders;
  {
    std::lock_guard<std::mutex> lock(mu_);
    audit = audit_;
    auto found = recorded_.find(job.command_id);
    if (found != recorded_.end()) {
      for (const kube::RecordedHolder& holder : found->second) {
        if (holder.component == job.proof.component) holders.push_back(holder);
      }
    }
  }
  std::sort(holders.begin(), holders.end(), MigrationFirst);
  for (const kube::RecordedHolder& holder : holders) {
    absl::StatusOr<kube::ReleaseOutcome> outcome =
        kube::ReleaseIfDead(*client_, clock_, holder, job.proof);
    kube::Json detail;
    detail["lease"] = StrCat(holder.ns, "/", holder.lease);
    detail["recorded"] = {{"identity", holder.identity},
                          {"node", holder.node},
                          {"component", holder.component},
                          {"commandId", job.command_id}};
    detail["proof"] = {{"component", job.proof.component},
                       {"oldPids", job.proof.old_pids},
                       {"goneAt", kube::FormatTimestamp(job.proof.gone_at)}};
    std::string message;
    if (!outcome.ok()) {
      detail["outcome"] = "error";
      detail["error"] = std::string(outcome.status().message());
      message = StrCat("lease ", holder.lease, " not released: ", outcome.status().message());
    } else {
      detail["outcome"] = std::string(kube::ReleaseOutcomeKindName(outcome->kind));
      if (outcome->before) detail["before"] = LeaseJson(*outcome->before);
      if (outcome->after) detail["after"] = LeaseJson(*outcome->after);
      detail["conflicts"] = outcome->conflicts;
      message = outcome->kind == kube::ReleaseOutcome::Kind::kReleased
                    ? StrCat("released lease ", holder.lease, " of ", holder.identity, " (",
                             holder.component, "): its old processes ",
                             PidList(job.proof.old_pids), " exited by ",
                             kube::FormatTimestamp(job.proof.gone_at))
                    : StrCat("lease ", holder.lease, " not released (",
                             kube::ReleaseOutcomeKindName(outcome->kind), "): ", outcome->detail);
    }
    spdlog::info("{}: {}", job.proof.node, message);
    if (events_ != nullptr) events_->LeaseReleaseDecided(ResultLabel(outcome));
    if (audit) audit("lease-release", job.proof.node, message, detail.dump());
  }
}

}  // namespace handoff::server
