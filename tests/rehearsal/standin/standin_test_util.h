// Helpers shared by the stand-in's tests: API clients like the stand-in's, and reading leases
// straight from the fake API server's store.
#ifndef HANDOFF_TESTS_REHEARSAL_STANDIN_STANDIN_TEST_UTIL_H_
#define HANDOFF_TESTS_REHEARSAL_STANDIN_STANDIN_TEST_UTIL_H_

#include <memory>
#include <optional>
#include <string>

#include "common/kube/client.h"
#include "common/kube/http_transport.h"
#include "coordinator/kube/lease.h"
#include "gtest/gtest.h"
#include "tests/coordinator/fake_cluster.h"

namespace handoff::standin::testing {

// A client like the stand-in's: one request per attempt, no retries (which would wait on the
// fake clock and shift every time in these tests).
inline std::unique_ptr<kube::KubeClient> ElectionClient(handoff::testing::FakeCluster& cluster) {
  absl::StatusOr<std::unique_ptr<kube::HttpTransport>> transport =
      kube::NewCurlTransport(cluster.Credentials());
  EXPECT_TRUE(transport.ok()) << transport.status();
  kube::ClientOptions options = kube::ClientOptionsFor(cluster.Credentials());
  options.max_retries = 0;
  return std::make_unique<kube::KubeClient>(*std::move(transport), cluster.clock(), options);
}

// The lease kube-system/`name` as stored; nullopt when it does not exist.
inline std::optional<kube::LeaseInfo> StoredLease(handoff::testing::FakeCluster& cluster,
                                                  const std::string& name) {
  std::optional<kube::Json> object = cluster.store().Get(kube::kLeases, "kube-system", name);
  if (!object) return std::nullopt;
  absl::StatusOr<kube::LeaseInfo> lease = kube::ParseLease(*object);
  EXPECT_TRUE(lease.ok()) << lease.status();
  if (!lease.ok()) return std::nullopt;
  return *lease;
}

// Writes kube-system/`name` as another candidate would: held by `holder`, renewed at `now`.
inline void WriteLease(handoff::testing::FakeCluster& cluster, const std::string& name,
                       const std::string& holder, absl::Time now) {
  kube::Json lease = {{"apiVersion", "coordination.k8s.io/v1"},
                      {"kind", "Lease"},
                      {"metadata", {{"name", name}, {"namespace", "kube-system"}}},
                      {"spec",
                       {{"holderIdentity", holder},
                        {"leaseDurationSeconds", 15},
                        {"acquireTime", kube::FormatTimestamp(now)},
                        {"renewTime", kube::FormatTimestamp(now)},
                        {"leaseTransitions", 0}}}};
  if (std::optional<kube::Json> existing =
          cluster.store().Get(kube::kLeases, "kube-system", name)) {
    lease["metadata"] = (*existing)["metadata"];
  }
  absl::Status written = cluster.store().Put(lease);
  EXPECT_TRUE(written.ok()) << written;
}

}  // namespace handoff::standin::testing

#endif  // HANDOFF_TESTS_REHEARSAL_STANDIN_STANDIN_TEST_UTIL_H_
