// Who runs the cloud controllers: the holder of the migration lease. Reading leases, deciding
// (purely) which manager on which node holds the migration lease, and watching that over time.
//
// client-go's leader election writes holderIdentity "<hostname>_<uuid>" and renews renewTime;
// a lease is held while renewTime + leaseDurationSeconds is in the future. A manager uses one
// identity for its main lease (kube-system/kube-controller-manager or
// kube-system/cloud-controller-manager) and for the migration lease, so comparing identities
// tells which manager holds the migration lease (kubernetes cmd/kube-controller-manager/app/
// controllermanager.go, k8s.io/cloud-provider app/controllermanager.go).
#ifndef HANDOFF_COORDINATOR_KUBE_LEASE_H_
#define HANDOFF_COORDINATOR_KUBE_LEASE_H_

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/system/clock.h"
#include "common/kube/client.h"
#include "common/kube/resource.h"

namespace handoff::kube {

inline constexpr std::string_view kMigrationLeaseName = "cloud-provider-extraction-migration";

struct LeaseInfo {
  std::string ns;
  std::string name;
  std::string holder_identity;  // "" when nobody holds it (released)
  std::optional<absl::Time> acquire_time;
  std::optional<absl::Time> renew_time;
  std::optional<int64_t> lease_duration_seconds;
  int64_t lease_transitions = 0;
  std::string resource_version;

  // renewTime + leaseDurationSeconds, when both are set.
  std::optional<absl::Time> Expiry() const;
  // Someone holds it at `now`: a holder, and an expiry after `now`.
  bool HeldAt(absl::Time now) const;
};

// The fields of a coordination.k8s.io/v1 Lease. Times are RFC 3339 (MicroTime).
absl::StatusOr<LeaseInfo> ParseLease(const Json& lease);
// Reads one lease; NotFound when it does not exist.
absl::StatusOr<LeaseInfo> GetLease(KubeClient& client, std::string_view ns, std::string_view name);

// "ip-10-0-1-5.ec2.internal" from "ip-10-0-1-5.ec2.internal_6d3f...": everything before the last
// '_' (the whole identity when there is none).
std::string HostnameOfIdentity(std::string_view identity);

// RFC 3339 in UTC, seconds with fractions only when there are some: "2026-01-02T03:04:05Z".
std::string FormatTimestamp(absl::Time time);
// A duration for people: milliseconds under a minute ("17.6s"), whole seconds above ("1h2m3s").
std::string FormatElapsed(absl::Duration duration);

enum class Holder {
  kNobody,                  // no valid holder: the lease is missing, released or expired
  kKubeControllerManager,   // the holder of kube-system/kube-controller-manager
  kCloudControllerManager,  // the holder of kube-system/cloud-controller-manager
  kUnknown,                 // held, by an identity that holds neither main lease
};
std::string_view HolderName(Holder holder);

struct Ownership {
  Holder holder = Holder::kNobody;
  std::string identity;  // the migration lease's holderIdentity (also when expired)
  std::string node;      // the hostname in `identity`
  std::optional<absl::Time> acquired;
  std::optional<absl::Time> expiry;
  // Why nobody holds it, or why the holder is unknown; "" otherwise.
  std::string reason;

  // "kube-controller-manager on ip-10-0-1-5", "nobody (expired at ...)".
  std::string Describe() const;
};

// The names of the leases involved, all in one namespace.
struct LeaseNames {
  std::string ns = "kube-system";
  std::string migration = std::string(kMigrationLeaseName);
  std::string kube_controller_manager = "kube-controller-manager";
  std::string cloud_controller_manager = "cloud-controller-manager";
};

// The three leases as read at one moment; std::nullopt for one that does not exist.
struct LeaseSet {
  std::optional<LeaseInfo> migration;
  std::optional<LeaseInfo> kube_controller_manager;
  std::optional<LeaseInfo> cloud_controller_manager;
};

// Who holds the migration lease at `now`. Pure.
Ownership ClassifyMigrationLease(const LeaseSet& leases, absl::Time now);

// Reads the three leases (a missing one is std::nullopt, not an error).
absl::StatusOr<LeaseSet> ReadLeases(KubeClient& client, const LeaseNames& names);

// One thing a watch saw.
struct LeaseEvent {
  enum class Kind {
    kHeld,        // a (new) holder: the first observation, or a change of holder
    kGapStarted,  // nobody holds the migration lease any more (or at the first observation)
  };
  Kind kind = Kind::kHeld;
  absl::Time observed;  // the poll that saw it
  // When it happened, as best known: a gap starts when the last holder's lease expired; a new
  // holder starts at its acquireTime.
  absl::Time at;
  Ownership ownership;
  // For kHeld: the time nobody held the lease before this holder, if any (also a gap that fell
  // between two polls, found from the old expiry and the new acquireTime).
  std::optional<absl::Time> gap_start;
  std::optional<absl::Duration> gap;
};

struct WatchSummary {
  absl::Time start;
  absl::Time end;
  int polls = 0;
  int errors = 0;          // polls that failed to read the leases
  int holder_changes = 0;  // kHeld events after the first observation
  int gaps = 0;            // including one still open, and those that fell between two polls
  absl::Duration gap_total = absl::ZeroDuration();
  absl::Duration longest_gap = absl::ZeroDuration();
  bool in_gap_at_end = false;
  // Time observed per holder ("kube-controller-manager on ip-...", "nobody").
  std::map<std::string, absl::Duration> held_for;
};

// Polls the leases and turns successive observations into events. Thread-compatible.
class LeaseWatcher {
 public:
  // Borrows `client` and `clock`, which must outlive it.
  LeaseWatcher(KubeClient& client, Clock& clock, LeaseNames names);

  // Reads the leases once at clock.Now() and returns what changed since the previous poll (the
  // first poll always reports the current holder or the gap). A read error is returned as is;
  // the state stays as it was.
  absl::StatusOr<std::vector<LeaseEvent>> Poll();

  // Feeds an observation made at `now` without reading: Poll's pure core.
  std::vector<LeaseEvent> Observe(const LeaseSet& leases, absl::Time now);
  void RecordError() { ++summary_.errors; }

  // What was seen so far; a gap still open counts until the last poll.
  WatchSummary summary() const;

 private:
  KubeClient& client_;
  Clock& clock_;
  LeaseNames names_;
  std::optional<Ownership> last_;
  std::optional<absl::Time> last_poll_;
  std::optional<absl::Time> gap_start_;  // set while nobody holds the lease
  WatchSummary summary_;
};

struct WatchOptions {
  absl::Duration duration = absl::ZeroDuration();  // zero: until `stop` says so
  absl::Duration interval = absl::Seconds(1);
};

// Polls every `options.interval` (waiting on `clock`) until `options.duration` has passed or
// `stop()` returns true, passing each event to `on_event`. A read that fails for a reason that
// may pass (the API server restarting during a move, a timeout) goes to `on_error` and the watch
// goes on; one that cannot pass (credentials, permissions, TLS, a bad request) ends it with that
// error.
absl::Status RunLeaseWatch(LeaseWatcher& watcher, Clock& clock, const WatchOptions& options,
                           const std::function<void(const LeaseEvent&)>& on_event,
                           const std::function<void(const absl::Status&)>& on_error,
                           const std::function<bool()>& stop);

}  // namespace handoff::kube

#endif  // HANDOFF_COORDINATOR_KUBE_LEASE_H_
