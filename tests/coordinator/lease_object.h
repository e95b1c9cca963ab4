// Test helper: a coordination.k8s.io/v1 Lease in kube-system as a manager's leader election
// writes it, for the fake API server's store and for the real kube-apiserver alike.
#ifndef HANDOFF_TESTS_COORDINATOR_LEASE_OBJECT_H_
#define HANDOFF_TESTS_COORDINATOR_LEASE_OBJECT_H_

#include <cstdint>
#include <map>
#include <string>

#include "absl/time/time.h"
#include "common/kube/resource.h"

namespace handoff::testing {

// MicroTime with exactly six fractional digits, the only form kube-apiserver accepts.
inline std::string MicroTime(absl::Time time) {
  return absl::FormatTime("%Y-%m-%dT%H:%M:%E6SZ", time, absl::UTCTimeZone());
}

struct LeaseFields {
  std::string name;
  std::string holder;  // holderIdentity
  absl::Time renewed;
  absl::Duration held_for = absl::Hours(1);  // acquireTime is renewed - held_for
  int64_t duration_seconds = 15;
  int64_t transitions = 0;
  std::map<std::string, std::string> labels;
};

inline kube::Json LeaseObject(const LeaseFields& fields) {
  kube::Json lease = kube::Json::object();
  lease["apiVersion"] = "coordination.k8s.io/v1";
  lease["kind"] = "Lease";
  lease["metadata"] = {{"name", fields.name}, {"namespace", "kube-system"}};
  if (!fields.labels.empty()) lease["metadata"]["labels"] = fields.labels;
  lease["spec"] = {{"holderIdentity", fields.holder},
                   {"leaseDurationSeconds", fields.duration_seconds},
                   {"acquireTime", MicroTime(fields.renewed - fields.held_for)},
                   {"renewTime", MicroTime(fields.renewed)},
                   {"leaseTransitions", fields.transitions}};
  return lease;
}

}  // namespace handoff::testing

#endif  // HANDOFF_TESTS_COORDINATOR_LEASE_OBJECT_H_
